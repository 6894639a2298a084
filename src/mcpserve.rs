//! The MCP profile (SPEC §7C) for JavaScript: `exposedMcpTools`' name rule, and the server
//! `buildMcpServer` returns, connected to any MCP SDK transport by `index.js`.
// The exported functions are reached from JavaScript only.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolnexus_core::callback::SharedCallback;
use toolnexus_core::serve::mcp::is_exposed;
use toolnexus_core::serve::{McpServeConfig, McpSession};
use toolnexus_core::tool::SharedTool;

use crate::bridge::{JsCallback, JsonFn};
use crate::core_err;
use crate::coretool::NativeTool;
use crate::options_doc::Shared;

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
    /// `options` is the document `{ profile, onCall }` (see `options_doc`): its JSON, the
    /// functions and the addon objects its markers name.
    #[napi(constructor)]
    pub fn new(options: String, fns: Vec<JsonFn>, objects: Vec<ExternalRef<Shared>>) -> Result<Self> {
        let (cfg, on_call) =
            crate::options_doc::read(fns, objects, || toolnexus_core::serve::mcp::built_from_json(&options))
                .map_err(core_err)?;
        Ok(NativeMcpServer { tools: Vec::new(), cfg, on_call })
    }

    /// Serve a JavaScript tool: its declaration as JSON, and the bridged call.
    #[napi(js_name = "addJs")]
    pub fn add_js(&mut self, decl: String, call: JsonFn) -> Result<()> {
        let slot = self.tools.len() as u32;
        self.tools.push(crate::bridge::js_tool(&decl, call, slot).map_err(core_err)?);
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
            toolnexus_core::host_thread::polling_on_host(|| self.inner.receive(message));
            Ok(())
        })
    }

    /// Tell the client that `uri` changed, if it subscribed to it; whether it did.
    #[napi(js_name = "resourceUpdated")]
    pub fn resource_updated(&self, uri: String) -> bool {
        self.inner.resource_updated(&uri)
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }
}
