//! The MCP source (SPEC §2): connect to every configured server concurrently (local ones as
//! child processes over stdio, remote ones over streamable HTTP with an SSE fallback), list
//! their tools and expose each as a uniform Tool. A server that fails is isolated: it is
//! reported `failed` and the others are unaffected.

mod config;
mod conn;
mod elicit;
mod http;
mod keep;
mod oauth;
mod procs;
mod sse;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, RequestOptionalParam};
use serde_json::{Map, Value};

pub use config::{expand_env_headers, parse_mcp_config, DEFAULT_TIMEOUT_MS, MAX_LIST_PAGES};
pub use elicit::{answer_to_elicit_result, elicitation_to_request};
pub use tool::McpTool;

use crate::callback::SharedCallback;
use crate::cancel::Abort;
use crate::error::{Error, Result};
use crate::redact::redact_urls;
use crate::tool::SharedTool;
use config::{apply_tools_filter, def_name, is_enabled, server_entries, server_timeout};
use conn::Connection;
use elicit::Handler;

/// Where a configured server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpStatus {
    Connected,
    Disabled,
    Failed,
}

impl McpStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            McpStatus::Connected => "connected",
            McpStatus::Disabled => "disabled",
            McpStatus::Failed => "failed",
        }
    }
}

/// Per-server statuses as a JSON object, in config order.
pub fn status_value(status: &[(String, McpStatus)]) -> Value {
    Value::Object(status.iter().map(|(k, s)| (k.clone(), Value::String(s.as_str().into()))).collect())
}

/// What a load may be given besides the config.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// The host's resolver (§10). With it, servers may elicit input mid-call; without it the
    /// elicitation capability is not advertised.
    pub wait_for: Option<SharedCallback>,
    /// Aborts the whole load: it fails with the abort's reason and nothing is left running.
    pub cancel: Option<Abort>,
    /// Where remote servers' sign-ins (client registrations, tokens, logins waiting for a
    /// person) are kept: a store URL (`sqlite:`, `postgres://`, `redis://`), or memory.
    pub store: Option<String>,
    /// The host's own tokens (`mcpToken`): asked for a server's token before its first request
    /// and again when it answers with a challenge, before any OAuth.
    pub token: Option<SharedCallback>,
}

/// The host-borne part of `loadMcp`'s options, as one document (`fn_markers` markers).
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LoadJson {
    #[serde(default)]
    wait_for: crate::fn_markers::HostFn,
    #[serde(default)]
    store: Option<Value>,
    #[serde(default)]
    mcp_token: crate::fn_markers::HostFn,
}

impl LoadOptions {
    /// `loadMcp`'s options: anything but an object (`null`, `undefined`) is none, as the
    /// reference reads them with `opts?.`; `waitFor` set to something that is not a function
    /// fails when a server asks for input. The cancel handle is the host's to attach.
    pub fn from_json(text: &str) -> Result<LoadOptions> {
        let o: LoadJson = crate::options::parse_object(text, "loadMcp options")?.unwrap_or_default();
        Ok(LoadOptions {
            wait_for: o.wait_for.named("loadMcp", "waitFor"),
            cancel: None,
            store: store_option(o.store, "loadMcp"),
            token: o.mcp_token.named("loadMcp", "mcpToken"),
        })
    }
}

/// A `store` option for sign-ins: absent, `null` or `"memory"` is memory; a store URL names a
/// durable engine. Anything else (the reference ignored the option: a custom conversation store
/// shared with a client's options, a `file:` task store) is warned about and kept in memory.
pub fn store_option(v: Option<Value>, owner: &str) -> Option<String> {
    let given = match v {
        None | Some(Value::Null) => return None,
        Some(Value::String(s)) if s == "memory" => return None,
        Some(Value::String(s)) if crate::store::StoreUrl::is_store_url(&s) => return Some(s),
        Some(Value::String(s)) => crate::json::js_stringify(&Value::String(crate::store::redacted(&s))),
        Some(other) => format!("a value of type {}", crate::fn_markers::js_typeof(&other)),
    };
    crate::warn::warn(&format!(
        "[toolnexus] {owner}: `store` is {given}, not \"memory\", a store URL (sqlite:, postgres://, redis://) or a SqliteStore, PostgresStore or RedisStore: MCP sign-ins are kept in memory"
    ));
    None
}

/// The loaded source: the tools of every connected server, each server's status, and the
/// sessions behind them until [`McpSource::close`].
pub struct McpSource {
    pub tools: Vec<SharedTool>,
    /// Config order.
    pub status: Vec<(String, McpStatus)>,
    connections: Vec<Arc<Connection>>,
}

impl McpSource {
    /// An empty source (no servers).
    pub fn empty() -> Self {
        McpSource { tools: Vec::new(), status: Vec::new(), connections: Vec::new() }
    }

    pub fn status_value(&self) -> Value {
        status_value(&self.status)
    }

    /// End every session and child process. Idempotent; the tools answer with an error after.
    pub async fn close(&self) {
        futures::future::join_all(self.connections.iter().map(|c| c.close())).await;
    }
}

/// One listed tool definition, under its original name.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

impl ToolInfo {
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(3);
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("description".into(), Value::String(self.description.clone()));
        m.insert("inputSchema".into(), self.input_schema.clone());
        Value::Object(m)
    }
}

/// The result of a list-only pass: every connected server's full, unfiltered tool list and
/// every server's status, both in config order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpInventory {
    pub tools: Vec<(String, Vec<ToolInfo>)>,
    pub status: Vec<(String, McpStatus)>,
}

impl McpInventory {
    /// `{ tools: { server: ToolInfo[] }, status: { server: status } }`
    pub fn to_value(&self) -> Value {
        let tools = self
            .tools
            .iter()
            .map(|(k, list)| (k.clone(), Value::Array(list.iter().map(ToolInfo::to_value).collect())))
            .collect();
        let mut m = Map::with_capacity(2);
        m.insert("tools".into(), Value::Object(tools));
        m.insert("status".into(), status_value(&self.status));
        Value::Object(m)
    }
}

const TIMEOUT_MESSAGE: &str = "mcp connect/list timeout";

fn warn_failed(name: &str, message: &str) {
    let message = redact_urls(message);
    crate::warn::warn(&format!("[toolnexus] MCP server \"{name}\" failed: {message}"));
}

/// A load's own failure, with any URL in its message redacted. A host's error and an abort
/// reason are the caller's own values and pass through unchanged.
fn redact_error(e: Error) -> Error {
    match e {
        Error::Invalid(m) => Error::Invalid(redact_urls(&m).into_owned()),
        Error::Transport(m) => Error::Transport(redact_urls(&m).into_owned()),
        Error::InvalidResponse(m) => Error::InvalidResponse(redact_urls(&m).into_owned()),
        other => other,
    }
}

/// Connect within `timeout`, then list every page within a fresh `timeout`. A failure drops
/// the session, which ends the server.
async fn open(
    name: &str,
    cfg: &Value,
    handler: Handler,
    timeout: Duration,
) -> std::result::Result<(Arc<Connection>, Vec<Value>), String> {
    let (session, child) = tokio::time::timeout(timeout, conn::connect(name, cfg, handler))
        .await
        .map_err(|_| TIMEOUT_MESSAGE.to_string())??;
    let connection = Arc::new(Connection::new(session, child));
    let defs = tokio::time::timeout(timeout, list_all(&connection, timeout))
        .await
        .map_err(|_| TIMEOUT_MESSAGE.to_string())??;
    Ok((connection, defs))
}

/// Follow `nextCursor` until the last page; a repeated cursor or too many pages is an error.
async fn list_all(connection: &Connection, timeout: Duration) -> std::result::Result<Vec<Value>, String> {
    let mut defs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let req: ListToolsRequest = match cursor.take() {
            None => RequestOptionalParam::default(),
            Some(c) => RequestOptionalParam::with_param(PaginatedRequestParams::default().with_cursor(Some(c))),
        };
        let page = connection.request(ClientRequest::ListToolsRequest(req), timeout, None).await?;
        match page.get("tools") {
            Some(Value::Array(tools)) => defs.extend(tools.iter().cloned()),
            _ => return Err("MCP list returned no tools array".into()),
        }
        let next = match page.get("nextCursor") {
            None | Some(Value::Null) => return Ok(defs),
            Some(Value::String(s)) => s.clone(),
            Some(other) => crate::json::js_string(other),
        };
        if !seen.insert(next.clone()) {
            return Err(format!("MCP list returned duplicate cursor: {next}"));
        }
        cursor = Some(next);
    }
    Err(format!("MCP list exceeded {MAX_LIST_PAGES} pages"))
}

/// Run `work` unless the load is aborted first.
async fn unless_aborted<T>(abort: &Option<Abort>, work: impl std::future::Future<Output = T>) -> Result<T> {
    match abort {
        None => Ok(work.await),
        Some(a) => {
            if a.is_aborted() {
                return Err(Error::Aborted(a.reason()));
            }
            let token = a.token();
            tokio::select! {
                biased;
                _ = token.cancelled() => Err(Error::Aborted(a.reason())),
                r = work => Ok(r),
            }
        }
    }
}

enum Outcome<T> {
    Disabled,
    Failed,
    Ok(T),
}

/// Visit every server concurrently: disabled ones are skipped, the others opened (and, on
/// failure, reported). Results come back in config order.
async fn visit<T, F, Fut>(entries: &[(String, Value)], abort: &Option<Abort>, each: F) -> Result<Vec<Outcome<T>>>
where
    F: Fn(String, Value, Duration) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, String>>,
{
    // Reading `disabled` off a null entry throws before anything connects, as in the reference.
    let enabled: Vec<bool> = entries.iter().map(|(_, cfg)| is_enabled(cfg)).collect::<Result<_>>()?;
    let work = entries.iter().zip(enabled).map(|((name, cfg), on)| {
        let fut = on.then(|| each(name.clone(), cfg.clone(), server_timeout(cfg)));
        async move {
            let Some(fut) = fut else { return Ok(Outcome::Disabled) };
            match unless_aborted(abort, fut).await? {
                Ok(v) => Ok(Outcome::Ok(v)),
                Err(message) => {
                    warn_failed(name, &message);
                    Ok(Outcome::Failed)
                }
            }
        }
    });
    // The first abort fails the whole load; everything opened so far is dropped, which ends it.
    futures::future::try_join_all(work).await
}

/// Connect to every enabled server, list and convert its tools (through its `tools`
/// allowlist), and keep the sessions open for the tools to call.
pub async fn load_mcp(input: &Value, opts: LoadOptions) -> Result<McpSource> {
    load(input, opts).await.map_err(redact_error)
}

async fn load(input: &Value, opts: LoadOptions) -> Result<McpSource> {
    let config = parse_mcp_config(input)?;
    let entries = server_entries(&config)?;
    let handler = Handler {
        wait_for: opts.wait_for.clone(),
        store: opts.store.clone(),
        token: opts.token.clone(),
        modern: false,
    };
    let outcomes = visit(&entries, &opts.cancel, |name, cfg, timeout| {
        let handler = handler.clone();
        async move { open(&name, &cfg, handler, timeout).await.map(|(c, defs)| (c, defs, cfg, timeout)) }
    })
    .await?;
    let mut source = McpSource::empty();
    for ((name, _), outcome) in entries.iter().zip(outcomes) {
        let status = match outcome {
            Outcome::Disabled => McpStatus::Disabled,
            Outcome::Failed => McpStatus::Failed,
            Outcome::Ok((connection, defs, cfg, timeout)) => {
                for def in apply_tools_filter(name, defs, cfg.get("tools")) {
                    source.tools.push(Arc::new(McpTool::new(name, &def, connection.clone(), timeout)));
                }
                source.connections.push(connection);
                McpStatus::Connected
            }
        };
        source.status.push((name.clone(), status));
    }
    Ok(source)
}

/// Connect to every enabled server, list its tools (unfiltered, original names) and
/// disconnect: nothing is left running.
pub async fn list_mcp_tools(input: &Value, cancel: Option<Abort>) -> Result<McpInventory> {
    list(input, cancel).await.map_err(redact_error)
}

async fn list(input: &Value, cancel: Option<Abort>) -> Result<McpInventory> {
    let config = parse_mcp_config(input)?;
    let entries = server_entries(&config)?;
    let outcomes = visit(&entries, &cancel, |name, cfg, timeout| async move {
        let (connection, defs) =
            open(&name, &cfg, Handler { wait_for: None, store: None, token: None, modern: false }, timeout).await?;
        connection.close().await;
        Ok(defs)
    })
    .await?;
    let mut inventory = McpInventory::default();
    for ((name, _), outcome) in entries.iter().zip(outcomes) {
        let status = match outcome {
            Outcome::Disabled => McpStatus::Disabled,
            Outcome::Failed => McpStatus::Failed,
            Outcome::Ok(defs) => {
                let infos = defs
                    .iter()
                    .map(|d| ToolInfo {
                        name: def_name(d),
                        description: tool::def_description(d),
                        input_schema: tool::map_schema(d, false),
                    })
                    .collect();
                inventory.tools.push((name.clone(), infos));
                McpStatus::Connected
            }
        };
        inventory.status.push((name.clone(), status));
    }
    Ok(inventory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn load_options_read_wait_for_as_the_reference_calls_it() {
        for text in ["null", "3", "{}", r#"{"waitFor": false}"#] {
            assert!(LoadOptions::from_json(text).unwrap().wait_for.is_none(), "{text}");
        }
        let o = LoadOptions::from_json(r#"{"waitFor": "later"}"#).unwrap();
        let e = o.wait_for.expect("a failing callback").call(json!({})).await.unwrap_err();
        assert_eq!(e.to_string(), "loadMcp: `waitFor` is not a function (got string)");
    }
}
