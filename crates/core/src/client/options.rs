//! What `createClient` accepts.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Hooks, SharedCallback, Style, Transport};

/// Everything `createClient` accepts that the core acts on.
#[derive(Clone)]
pub struct ClientOptions {
    pub base_url: String,
    pub style: Style,
    pub model: String,
    pub api_key: Option<String>,
    /// Extra headers, in the caller's order; they override the client's own on the same name.
    pub headers: Vec<(String, String)>,
    pub system_prompt: Option<String>,
    pub max_turns: u32,
    pub retries: u32,
    pub retry_base_ms: f64,
    pub timeout_ms: Option<u64>,
    pub hooks: Hooks,
    pub wait_for: Option<SharedCallback>,
    /// Shallow-merged into every request body (`messages`, `tools`, `stream` are refused).
    pub request_params: Option<Map<String, Value>>,
    /// Receives the assembled body last and may return a replacement.
    pub body_transform: Option<SharedCallback>,
    /// `None` ⇒ the built-in HTTP/1.1 transport over tokio's sockets.
    pub transport: Option<Arc<dyn Transport>>,
    /// Receives every metric event (awaited, in order).
    pub on_metric: Option<SharedCallback>,
    /// Classifies a failed LLM attempt: `{ status?, error?, attempt, retryable }` → "retry" | "fail".
    pub on_error: Option<SharedCallback>,
}

impl ClientOptions {
    pub fn new(base_url: impl Into<String>, style: Style, model: impl Into<String>) -> Self {
        ClientOptions {
            base_url: base_url.into(),
            style,
            model: model.into(),
            api_key: None,
            headers: vec![],
            system_prompt: None,
            max_turns: 10,
            retries: 2,
            retry_base_ms: 500.0,
            timeout_ms: None,
            hooks: Hooks::default(),
            wait_for: None,
            request_params: None,
            body_transform: None,
            transport: None,
            on_metric: None,
            on_error: None,
        }
    }
}
