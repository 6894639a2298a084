//! Remote A2A agents: `agentTools`, `parseAgentsConfig` (the core's, behind JSON).

// napi-derive registers these functions only outside `cfg(test)`, so a test build sees them unused.
#![cfg_attr(test, allow(dead_code))]

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::a2a::{self, Agent};

use crate::coretool::NativeTool;
use crate::{core_err, parse_json};

/// `agentTools(agent)`: the descriptor as JSON in, one tool handle per card skill out.
#[napi(js_name = "agentTools", ts_return_type = "Promise<NativeTool[]>")]
pub fn agent_tools(env: &Env, agent: String) -> Result<crate::dispatch::JsPromise> {
    let agent = Agent::from_value(&parse_json(&agent, "agentTools")?);
    crate::dispatch::promise(env, async move {
        let tools = a2a::agent_tools(&agent).await.map_err(core_err)?;
        Ok(tools.into_iter().map(NativeTool::new).collect::<Vec<_>>())
    })
}

/// `parseAgentsConfig(block)`: the block as JSON (absent for `undefined`) in, the descriptors
/// (`{ card, headers?, timeout?, pollEvery? }`) as a JSON array out.
#[napi(js_name = "parseAgentsConfig")]
pub fn parse_agents_config(block: Option<String>) -> Result<String> {
    let block = block.map(|b| parse_json(&b, "parseAgentsConfig")).transpose()?;
    let agents = a2a::parse_agents_config(block.as_ref());
    Ok(Value::Array(agents.iter().map(Agent::to_value).collect()).to_string())
}
