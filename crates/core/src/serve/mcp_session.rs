//! The MCP profile's server over a host's message transport (an in-memory pair, stdio...):
//! JSON-RPC messages in through [`McpSession::receive`], out through a callback, rmcp's
//! server in between over a channel.
//!
//! The session holds the host's process (`host_thread::hold`) only while a request it received is
//! being answered: an idle session lets the host end, as an idle transport would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::channel::mpsc;
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::host_thread::Hold;
use crate::serve::mcp::{McpServeConfig, Served};
use crate::tool::SharedTool;

/// One connection of the MCP profile to a message transport.
pub struct McpSession {
    inbound: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    outbound: SharedCallback,
    /// Holds on the host, by the JSON text of the id of the request they wait for.
    holds: Arc<Mutex<HashMap<String, Hold>>>,
    stop: CancellationToken,
    runtime: tokio::runtime::Handle,
    /// The server behind the session (its subscriptions).
    served: Served,
}

fn id_key(id: &Value) -> String {
    id.to_string()
}

impl McpSession {
    /// Start serving `tools` (already filtered) under `cfg`; every message for the client is
    /// handed to `outbound`, one at a time, in order. Must be called on the tokio runtime.
    pub fn start(
        tools: Vec<SharedTool>,
        cfg: McpServeConfig,
        on_call: Option<SharedCallback>,
        outbound: SharedCallback,
    ) -> Result<McpSession> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::Invalid("an MCP session needs the async runtime".into()))?;
        let served = Served::new(tools, &cfg, on_call);
        let catalog = served.clone();
        let (in_tx, in_rx) = mpsc::unbounded::<ClientJsonRpcMessage>();
        let (out_tx, mut out_rx) = mpsc::unbounded::<ServerJsonRpcMessage>();
        let holds: Arc<Mutex<HashMap<String, Hold>>> = Arc::default();
        let stop = CancellationToken::new();
        let guard = runtime.enter();
        // Like the reference's `Server`, no `initialize` is required before other requests.
        let running = rmcp::service::serve_directly_with_ct(served, (out_tx, in_rx), None, stop.clone());
        drop(guard);
        runtime.spawn(async move {
            let _ = running.waiting().await;
        });
        let pump_holds = holds.clone();
        let pump_out = outbound.clone();
        let pump_stop = stop.clone();
        runtime.spawn(async move {
            loop {
                let message = tokio::select! {
                    m = out_rx.next() => m,
                    () = pump_stop.cancelled() => None,
                };
                let Some(message) = message else { break };
                let Ok(value) = serde_json::to_value(&message) else { continue };
                let answered = match &value {
                    Value::Object(m) if m.contains_key("result") || m.contains_key("error") => m.get("id").map(id_key),
                    _ => None,
                };
                // A transport that fails to send reports it through its own error channel.
                let _ = pump_out.call(value).await;
                if let Some(key) = answered {
                    let hold = pump_holds.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
                    drop(hold);
                }
            }
        });
        Ok(McpSession { inbound: in_tx, outbound, holds, stop, runtime, served: catalog })
    }

    /// One message from the client. A request holds the host until it is answered (or
    /// cancelled); a message that is not MCP JSON-RPC gets an "Invalid Request" error when it
    /// has an id, and is dropped otherwise.
    pub fn receive(&self, message: Value) {
        if self.stop.is_cancelled() {
            return;
        }
        let id = message.get("id").filter(|id| id.is_string() || id.is_number()).cloned();
        let is_request = id.is_some() && message.get("method").is_some_and(Value::is_string);
        if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
            if let Some(request) = message.pointer("/params/requestId") {
                let hold = self.holds.lock().unwrap_or_else(PoisonError::into_inner).remove(&id_key(request));
                drop(hold);
            }
        }
        if let Some(answer) = crate::serve::mcp_wire::pong(&message) {
            self.answer_now(answer);
            return;
        }
        let parsed = serde_json::from_value::<ClientJsonRpcMessage>(message);
        match parsed {
            Ok(m) => {
                if let (true, Some(id)) = (is_request, &id) {
                    if let Some(hold) = crate::host_thread::hold() {
                        self.holds.lock().unwrap_or_else(PoisonError::into_inner).insert(id_key(id), hold);
                    }
                }
                let _ = self.inbound.unbounded_send(m);
            }
            Err(_) => {
                if let Some(id) = id {
                    self.answer_now(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32600, "message": "Invalid Request" } }));
                }
            }
        }
    }

    /// Send an answer the session gives itself (not rmcp's), holding the host until it is out.
    fn answer_now(&self, answer: Value) {
        let outbound = self.outbound.clone();
        let hold = crate::host_thread::hold();
        self.runtime.spawn(async move {
            let _ = outbound.call(answer).await;
            drop(hold);
        });
    }

    /// Tell the client that `uri` changed (`notifications/resources/updated`) if it subscribed
    /// to it; whether it did.
    pub fn resource_updated(&self, uri: &str) -> bool {
        if self.stop.is_cancelled() || self.served.subscribers(uri).is_empty() {
            return false;
        }
        self.answer_now(
            json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } }),
        );
        true
    }

    /// Stop serving: requests still running are cancelled, nothing more is sent.
    pub fn close(&self) {
        self.stop.cancel();
        self.inbound.close_channel();
        let holds = std::mem::take(&mut *self.holds.lock().unwrap_or_else(PoisonError::into_inner));
        drop(holds);
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        self.close();
    }
}
