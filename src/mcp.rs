//! The MCP source: config parsing, loading, list-only inventory and the elicitation mappings.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::cancel::Abort;
use toolnexus_core::mcp::{self, LoadOptions, McpSource};

use crate::bridge::JsonFn;
use crate::cancel::CancelToken;
use crate::coretool::NativeTool;
use crate::options_doc::Shared;
use crate::{core_err, parse_json};

/// `parseMcpConfig(input)`: a path (JSON string) or a config value in, the server map out.
#[napi(js_name = "parseMcpConfig")]
pub fn parse_mcp_config(input: String) -> Result<String> {
    let v = mcp::parse_mcp_config(&parse_json(&input, "parseMcpConfig")?).map_err(core_err)?;
    Ok(v.to_string())
}

/// `expandEnvHeaders(headers)`: `undefined` (None) for a falsy input.
#[napi(js_name = "expandEnvHeaders")]
pub fn expand_env_headers(headers: String) -> Result<Option<String>> {
    let h = parse_json(&headers, "expandEnvHeaders")?;
    let out = mcp::expand_env_headers(Some(&h)).map_err(core_err)?;
    Ok(out.map(|m| Value::Object(m).to_string()))
}

#[napi(js_name = "elicitationToRequest")]
pub fn elicitation_to_request(params: String) -> Result<String> {
    let v = mcp::elicitation_to_request(&parse_json(&params, "elicitationToRequest")?).map_err(core_err)?;
    Ok(v.to_string())
}

#[napi(js_name = "answerToElicitResult")]
pub fn answer_to_elicit_result(answer: String) -> Result<String> {
    let v = mcp::answer_to_elicit_result(&parse_json(&answer, "answerToElicitResult")?).map_err(core_err)?;
    Ok(v.to_string())
}

fn abort_of(cancel: Option<&CancelToken>) -> Option<Abort> {
    cancel.map(|c| c.abort.clone())
}

/// A loaded MCP source: its tools, each server's status, and `close()`.
#[napi]
pub struct NativeMcp {
    inner: Arc<McpSource>,
}

#[napi]
impl NativeMcp {
    /// `loadMcp(input, opts)`: `input` is JSON (a path string or a config), `options` the
    /// options document (see `options_doc`) without its signal, which comes as `cancel`.
    #[napi(ts_return_type = "Promise<NativeMcp>")]
    pub fn load(
        env: &Env,
        input: String,
        options: String,
        fns: Vec<JsonFn>,
        objects: Vec<ExternalRef<Shared>>,
        cancel: Option<&CancelToken>,
    ) -> Result<crate::dispatch::JsPromise> {
        let input = parse_json(&input, "loadMcp")?;
        let mut opts = crate::options_doc::read(fns, objects, || LoadOptions::from_json(&options)).map_err(core_err)?;
        opts.cancel = abort_of(cancel);
        crate::dispatch::promise(env, async move {
            let source = mcp::load_mcp(&input, opts).await.map_err(core_err)?;
            Ok(NativeMcp { inner: Arc::new(source) })
        })
    }

    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.inner.tools.iter().cloned().map(NativeTool::new).collect()
    }

    /// `{ server: status }` as JSON, in config order.
    #[napi]
    pub fn status(&self) -> String {
        self.inner.status_value().to_string()
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

/// `listMcpTools(input, { signal })`: the inventory as JSON.
#[napi(js_name = "listMcpTools", ts_return_type = "Promise<string>")]
pub fn list_mcp_tools(env: &Env, input: String, cancel: Option<&CancelToken>) -> Result<crate::dispatch::JsPromise> {
    let input = parse_json(&input, "listMcpTools")?;
    let cancel = abort_of(cancel);
    crate::dispatch::promise(env, async move {
        let inv = mcp::list_mcp_tools(&input, cancel).await.map_err(core_err)?;
        Ok(inv.to_value().to_string())
    })
}
