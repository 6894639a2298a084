//! The one error type of the core.

use std::fmt;

/// An error raised by something the host supplied (a JS callback that threw, a
/// user transport that failed). The binding keeps the original value inside so it
/// can hand the very same error back to its caller.
pub struct HostError(pub Box<dyn std::error::Error + Send + Sync>);

impl fmt::Debug for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostError({})", self.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A host callback failed; the message is the callback's own.
    #[error("{}", .0 .0)]
    Host(HostError),
    /// The endpoint answered with a non-2xx status (after retries).
    #[error("LLM {status}: {body}")]
    Http { status: u16, body: String },
    /// The request never produced a response (connection refused, reset, DNS...).
    #[error("{0}")]
    Transport(String),
    /// The built-in transport got no usable response: Node's `TypeError: fetch failed` (or
    /// `terminated`), with its `cause`.
    #[error("{0}")]
    Fetch(crate::fetch::FetchError),
    /// Text that had to be JSON and is not (a 2xx reply, a config file): a `SyntaxError` in
    /// JavaScript, as `res.json()` and `JSON.parse` throw.
    #[error("{0}")]
    NotJson(String),
    /// A system call failed (a file, a directory): Node's message, with its `errno`, `code`,
    /// `syscall` and `path`.
    #[error("{0}")]
    System(crate::syserr::SystemError),
    /// A reply without the shape the wire style promises: a `TypeError` in JavaScript, as
    /// reading a property of `undefined` throws.
    #[error("{0}")]
    BadShape(String),
    /// The endpoint answered 2xx but the body is not what the wire style promises.
    #[error("{0}")]
    InvalidResponse(String),
    /// The caller's signal fired; the message is the abort reason's.
    #[error("{0}")]
    Aborted(String),
    /// The client's whole-run deadline passed.
    #[error("run timeout after {0}ms")]
    Timeout(u64),
    /// No API key in the options nor in the environment.
    #[error("No API key: set apiKey or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY")]
    NoApiKey,
    /// Bad input from the caller, named precisely.
    #[error("{0}")]
    Invalid(String),
    /// A value of the wrong type used where JavaScript would throw a `TypeError` (a set
    /// option that is not a function, called).
    #[error("{0}")]
    Type(String),
    /// A durable store could not do what was asked (its engine unreachable, a write that lost
    /// a race, a schema it does not know). `code` names the case; the message never holds a
    /// password.
    #[error("{message}")]
    Store { code: &'static str, message: String },
    /// An Answer that may not be applied (SPEC §10): it echoes no parked Request, its Request
    /// expired, or its parked call cannot run here. `code` names the case; nothing was changed.
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    /// A run's answer did not match its `output` schema, after the answers that went back to
    /// the model: the issues (`[{ path, message }]`) and the last answer's raw text.
    #[error("{message}")]
    Output { message: String, issues: serde_json::Value, text: String },
}

impl Error {
    pub fn host<E: std::error::Error + Send + Sync + 'static>(e: E) -> Self {
        Error::Host(HostError(Box::new(e)))
    }

    /// A host error with only a message (for hosts that have nothing richer).
    pub fn host_message(msg: impl Into<String>) -> Self {
        Error::Host(HostError(Box::new(Message(msg.into()))))
    }

    /// A short, stable name of what went wrong, for a trace's `error.type` (an HTTP failure
    /// is its status code, as OpenTelemetry's conventions name it).
    pub fn kind(&self) -> String {
        let name = match self {
            Error::Http { status, .. } => return status.to_string(),
            Error::Host(_) => "host_error",
            Error::Transport(_) | Error::Fetch(_) | Error::System(_) => "transport_error",
            Error::NotJson(_) | Error::BadShape(_) | Error::InvalidResponse(_) => "invalid_response",
            Error::Aborted(_) => "aborted",
            Error::Timeout(_) => "timeout",
            Error::NoApiKey => "no_api_key",
            Error::Invalid(_) | Error::Type(_) => "invalid",
            Error::Store { .. } => "store_error",
            Error::Refused { .. } => "refused",
            Error::Output { .. } => "output_invalid",
        };
        name.to_string()
    }
}

#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

impl Error {
    /// The JavaScript class this error is thrown as (`Error` when nothing more specific).
    pub fn js_class(&self) -> &'static str {
        match self {
            Error::Fetch(_) | Error::BadShape(_) | Error::Type(_) => "TypeError",
            Error::NotJson(_) => "SyntaxError",
            _ => "Error",
        }
    }

    /// The error as JavaScript is to see it: `{ name, message, fields?, cause? }`, where
    /// `name` is its class, `fields` its own properties (an LLM reply's `status`, a system
    /// error's `code`...) and `cause` has the same shape. (A host's own error is the host's.)
    pub fn js_shape(&self) -> serde_json::Value {
        match self {
            Error::Fetch(f) => f.to_value(),
            Error::System(s) => s.to_value(),
            Error::Http { status, .. } => {
                serde_json::json!({ "name": "Error", "message": self.to_string(), "fields": { "status": status } })
            }
            Error::Store { code, message } | Error::Refused { code, message } => {
                serde_json::json!({ "name": "Error", "message": message, "fields": { "code": code } })
            }
            Error::Output { message, issues, text } => serde_json::json!({
                "name": "Error",
                "message": message,
                "fields": { "code": "EOUTPUT", "issues": issues, "text": text },
            }),
            _ => serde_json::json!({ "name": self.js_class(), "message": self.to_string() }),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error and what caused it, as one line ("invalid connection string: invalid value for option
/// `port`"): each cause's text added unless the text so far already holds it.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = c.source();
    }
    text
}
