//! The MCP inbound profile (SPEC §7C). Placeholder with the agreed interface: the real profile
//! replaces this file.

use serde::Deserialize;

use crate::callback::SharedCallback;
use crate::serve::Body;
use crate::tool::SharedTool;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServeConfig {
    pub name: Option<String>,
    pub version: Option<String>,
    pub tools: Option<Vec<String>>,
}

/// The tools the profile exposes: all of them, or those `cfg.tools` names.
pub fn exposed_tools(tools: &[SharedTool], cfg: &McpServeConfig) -> Vec<SharedTool> {
    match &cfg.tools {
        Some(names) => tools.iter().filter(|t| names.iter().any(|n| n == t.name())).cloned().collect(),
        None => tools.to_vec(),
    }
}

#[derive(Clone)]
pub struct McpProfile;

impl McpProfile {
    pub fn new(_tools: Vec<SharedTool>, _cfg: McpServeConfig, _on_call: Option<SharedCallback>) -> McpProfile {
        McpProfile
    }

    pub async fn handle(&self, _req: http::Request<bytes::Bytes>) -> http::Response<Body> {
        use http_body_util::BodyExt;
        let body = http_body_util::Full::new(bytes::Bytes::from_static(b"mcp profile not built")).boxed();
        let mut res = http::Response::new(body);
        *res.status_mut() = http::StatusCode::NOT_IMPLEMENTED;
        res
    }
}
