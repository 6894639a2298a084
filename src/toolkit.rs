//! The Toolkit class: the core toolkit plus the JS tools handed to it.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::tool::SharedTool;
use toolnexus_core::{Tool, ToolkitOptions};

use crate::bridge::JsonFn;
use crate::cancel::CancelToken;
use crate::coretool::NativeTool;
use crate::options_doc::Shared;
use crate::{core_err, deep, parse_json};
use toolnexus_core::callback_tool::HostTool;

/// A JS tool as `index.js` hands it over: declaration as JSON plus the bridged call.
#[napi(object, object_to_js = false)]
pub struct JsToolSpec {
    /// `{ name, description, inputSchema, source }` as JSON.
    pub decl: String,
    pub call: JsonFn,
}

pub(crate) fn js_tools(specs: Vec<JsToolSpec>, first_slot: u32) -> Result<Vec<SharedTool>> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, spec)| crate::bridge::js_tool(&spec.decl, spec.call, first_slot + i as u32).map_err(core_err))
        .collect()
}

#[napi]
pub struct NativeToolkit {
    pub(crate) inner: Arc<toolnexus_core::Toolkit>,
    next_slot: u32,
}

/// One entry of the assembled list: a JS tool's slot, or -1 for a tool of the core's own.
#[napi(object)]
pub struct ToolEntry {
    pub name: String,
    pub slot: i32,
}

#[napi]
impl NativeToolkit {
    /// `options` is the whole options document (see `options_doc`): its JSON, the functions and
    /// the addon objects its markers name; the caller's tools come apart (`tools`), and the
    /// signal as `cancel`, which bounds the MCP load.
    #[napi(ts_return_type = "Promise<NativeToolkit>")]
    pub fn create(
        env: &Env,
        options: String,
        fns: Vec<JsonFn>,
        objects: Vec<ExternalRef<Shared>>,
        tools: Vec<JsToolSpec>,
        cancel: Option<&CancelToken>,
    ) -> Result<crate::dispatch::JsPromise> {
        let count = tools.len() as u32;
        let extra_tools = js_tools(tools, 0)?;
        let mut core_opts =
            crate::options_doc::read(fns, objects, || ToolkitOptions::from_json(&options)).map_err(core_err)?;
        core_opts.extra_tools = extra_tools;
        let waits_on_nothing = core_opts.waits_on_nothing();
        core_opts.cancel = cancel.map(|c| c.abort.clone());
        let work = async move {
            let inner = toolnexus_core::Toolkit::create(core_opts).await.map_err(core_err)?;
            Ok(NativeToolkit { inner: Arc::new(inner), next_slot: count })
        };
        // Made in place when there is nothing to wait on; MCP servers, skills and agents load
        // on the runtime.
        if waits_on_nothing {
            crate::dispatch::local_promise(env, work)
        } else {
            crate::dispatch::promise(env, work)
        }
    }

    /// The assembled tools, in order.
    #[napi]
    pub fn entries(&self) -> Vec<ToolEntry> {
        self.inner.tools().iter().map(|t| entry(t.as_ref())).collect()
    }

    /// Register more JS tools; returns the entries that were added (first name wins).
    #[napi]
    pub fn register(&mut self, tools: Vec<JsToolSpec>) -> Result<Vec<ToolEntry>> {
        let first = self.next_slot;
        self.next_slot += tools.len() as u32;
        let list = js_tools(tools, first)?;
        let added = self.inner.register(list.clone());
        Ok(list.iter().zip(added).filter(|(_, a)| *a).map(|(t, _)| entry(t.as_ref())).collect())
    }

    /// `addAgent`: resolve the descriptor (JSON) and register its tools; resolves with the
    /// entries that were added (first name wins), rejects when the card cannot be resolved.
    #[napi(js_name = "addAgent", ts_return_type = "Promise<ToolEntry[]>")]
    pub fn add_agent(&self, env: &Env, agent: String) -> Result<crate::dispatch::JsPromise> {
        let agent = toolnexus_core::a2a::Agent::from_value(&parse_json(&agent, "addAgent")?);
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let added = inner.add_agent(&agent).await.map_err(core_err)?;
            Ok(added.into_iter().filter(|(_, a)| *a).map(|(t, _)| entry(t.as_ref())).collect::<Vec<_>>())
        })
    }

    /// Route a call through the core (used for tools that are not JS objects).
    #[napi(ts_return_type = "Promise<string | [string, string]>")]
    pub fn execute(
        &self,
        env: &Env,
        name: String,
        args: String,
        ctx: Option<String>,
        cancel: Option<&CancelToken>,
    ) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::coretool::call(env, name.clone(), &args, ctx, cancel, move |args, ctx| async move {
            inner.execute(&name, args, ctx).await
        })
    }

    /// A tool of the core's own (an entry with slot -1), as a handle JS can wrap.
    #[napi(js_name = "nativeTool")]
    pub fn native_tool(&self, name: String) -> Option<NativeTool> {
        self.inner.get(&name).filter(|t| t.as_any().downcast_ref::<HostTool>().is_none()).map(NativeTool::new)
    }

    /// Each configured MCP server's status as a JSON object, in config order.
    #[napi(js_name = "mcpStatus")]
    pub fn mcp_status(&self) -> String {
        toolnexus_core::mcp::status_value(&self.inner.mcp_status()).to_string()
    }

    #[napi]
    pub fn adapt(&self, style: String) -> Result<String> {
        let out = deep(|| self.inner.adapt(&style)).map_err(core_err)?;
        Ok(deep(|| toolnexus_core::json::to_string(&Value::Array(out))))
    }

    #[napi(js_name = "skillsPrompt")]
    pub fn skills_prompt(&self) -> String {
        self.inner.skills_prompt()
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self, env: &Env) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            inner.close().await;
            Ok(())
        })
    }
}

fn entry(t: &dyn Tool) -> ToolEntry {
    let slot = t.as_any().downcast_ref::<HostTool>().map_or(-1, |j| j.slot as i32);
    ToolEntry { name: t.name().to_string(), slot }
}
