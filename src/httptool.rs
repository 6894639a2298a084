//! `httpTool(opts)`: the core's HTTP tool behind JSON options.

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolnexus_core::http_tool::{http_tool, HttpToolOptions};

use crate::core_err;
use crate::coretool::NativeTool;

#[napi(js_name = "httpTool")]
pub fn http_tool_json(options: String) -> Result<NativeTool> {
    let opts = HttpToolOptions::from_json(&options).map_err(core_err)?;
    Ok(NativeTool::new(http_tool(opts)))
}
