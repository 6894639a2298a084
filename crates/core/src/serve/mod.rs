//! Serving a toolkit to peers (SPEC §7B, §7C).
//!
//! Parts, in order: `mcp` (the MCP profile: the tools as an MCP server, over one HTTP request
//! or a message channel), `mcp_session` (that server over a host's message transport).

pub mod mcp;
pub mod mcp_session;

pub use mcp::{exposed_tools, McpProfile, McpServeConfig};
pub use mcp_session::McpSession;

/// A response body: bytes that arrive whole or as a stream, never failing.
pub type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;
