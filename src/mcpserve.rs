//! The MCP profile (SPEC §7C) for JavaScript: `exposedMcpTools`' name rule, and the server
//! `buildMcpServer` returns, connected to any MCP SDK transport by `index.js`.
// The exported functions are reached from JavaScript only.
#![cfg_attr(test, allow(dead_code))]

use std::any::Any;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};
use toolnexus_core::callback::SharedCallback;
use toolnexus_core::serve::mcp::is_exposed;
use toolnexus_core::serve::{McpServeConfig, McpSession};
use toolnexus_core::tool::SharedTool;
use toolnexus_core::toolkit::ToolDecl;
use toolnexus_core::{Error, Tool, ToolContext, ToolResult};

use crate::bridge::{call_json, JsCallback, JsonFn};
use crate::core_err;
use crate::nativetool::NativeTool;

fn profile(cfg: Option<String>) -> Result<McpServeConfig> {
    match cfg {
        Some(text) => McpServeConfig::from_json(&text).map_err(core_err),
        None => Ok(McpServeConfig::default()),
    }
}

/// `exposedMcpTools`: the positions, in order, of the names the profile (JSON) exposes;
/// `null` when it has no filter (every tool is exposed).
#[napi(js_name = "mcpExposed")]
pub fn mcp_exposed(names: Vec<String>, cfg: Option<String>) -> Result<Option<Vec<u32>>> {
    let cfg = profile(cfg)?;
    if cfg.tools.is_none() {
        return Ok(None);
    }
    Ok(Some(names.iter().enumerate().filter(|(_, n)| is_exposed(n, &cfg)).map(|(i, _)| i as u32).collect()))
}

/// A JavaScript tool served over MCP. `index.js` calls its `execute` with the arguments and a
/// fresh `AbortSignal` (`{ args, call }`), and aborts that signal on `{ abort: call }`; a
/// throw comes back as the error result the reference makes of it.
struct ServedJsTool {
    decl: ToolDecl,
    call: JsonFn,
    next: AtomicU64,
}

#[async_trait]
impl Tool for ServedJsTool {
    fn name(&self) -> &str {
        &self.decl.name
    }
    fn description(&self) -> &str {
        &self.decl.description
    }
    fn input_schema(&self) -> &Value {
        &self.decl.input_schema
    }
    fn source(&self) -> &str {
        &self.decl.source
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> std::result::Result<ToolResult, Error> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut m = Map::with_capacity(2);
        m.insert("args".into(), args);
        m.insert("call".into(), id.into());
        let mut answer = pin!(call_json(&self.call, crate::dispatch::Arg::of(Value::Object(m))));
        let out = match ctx.cancel {
            Some(cancel) => {
                tokio::select! {
                    out = &mut answer => out,
                    () = cancel.cancelled() => {
                        self.call.notify(serde_json::json!({ "abort": id }).to_string());
                        answer.await
                    }
                }
            }
            None => answer.await,
        };
        Ok(ToolResult::from_value(out?))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What `buildMcpServer` made: the tools to serve, the profile and `onCall`; each `connect`
/// starts a session of its own.
#[napi]
pub struct NativeMcpServer {
    tools: Vec<SharedTool>,
    cfg: McpServeConfig,
    on_call: Option<SharedCallback>,
}

#[napi]
impl NativeMcpServer {
    /// `cfg` is the JSON of the profile; `onCall` is bridged.
    #[napi(constructor)]
    pub fn new(cfg: Option<String>, on_call: Option<JsonFn>) -> Result<Self> {
        Ok(NativeMcpServer {
            tools: Vec::new(),
            cfg: profile(cfg)?,
            on_call: on_call.map(|f| Arc::new(JsCallback(f)) as SharedCallback),
        })
    }

    /// Serve a JavaScript tool: its declaration as JSON, and the bridged call.
    #[napi(js_name = "addJs")]
    pub fn add_js(&mut self, decl: String, call: JsonFn) -> Result<()> {
        let slot = self.tools.len() as u32;
        let decl = ToolDecl::from_json(&decl, slot).map_err(core_err)?;
        self.tools.push(Arc::new(ServedJsTool { decl, call, next: AtomicU64::new(0) }));
        Ok(())
    }

    /// Serve a tool the core owns, run natively.
    #[napi(js_name = "addNative")]
    pub fn add_native(&mut self, tool: &NativeTool) {
        self.tools.push(tool.inner.clone());
    }

    /// Start a session; every message for the client goes to `outbound` (awaited, in order).
    #[napi(ts_return_type = "Promise<NativeMcpSession>")]
    pub fn connect(&self, env: &Env, outbound: JsonFn) -> Result<crate::dispatch::JsPromise> {
        let tools = self.tools.clone();
        let cfg = self.cfg.clone();
        let on_call = self.on_call.clone();
        let outbound = Arc::new(JsCallback(outbound)) as SharedCallback;
        crate::dispatch::promise(env, async move {
            let inner = McpSession::start(tools, cfg, on_call, outbound).map_err(core_err)?;
            Ok(NativeMcpSession { inner })
        })
    }
}

/// One connection to a transport.
#[napi]
pub struct NativeMcpSession {
    inner: McpSession,
}

#[napi]
impl NativeMcpSession {
    /// One message from the client, as JSON.
    #[napi]
    pub fn receive(&self, message: String) -> Result<()> {
        // Read with stack for a deep message. Called from JavaScript, on the host's own
        // thread: a request may hold the process until it is answered.
        crate::with_json(&message, "message", |message| {
            toolnexus_core::host::polling_on_host(|| self.inner.receive(message));
            Ok(())
        })
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}
