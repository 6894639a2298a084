//! `serve`: a toolkit as a server (SPEC §7B, §7C). The top level of the core, above the
//! toolkit and the client: it lists and calls the toolkit's tools itself, and a Task's run goes
//! through the host's `runTask` (a served run's reports come back through `client::RunReports`).
//!
//! Parts, each using only those listed before it:
//!
//! - `options`: the option types (`A2AConfig`, the server's guards).
//! - `store`: where served Tasks live (`TaskStore`, in memory, on disk, the selector).
//! - `a2a`: the Agent Card and the A2A JSON-RPC methods, with the fulfilment of a Task.
//! - `mcp_catalog`: the prompts, resources and templates an MCP profile serves besides tools.
//! - `mcp_wire`: a POST on `/mcp` before rmcp sees it (parse errors, batches, cancellation).
//! - `mcp`: the MCP profile: the tools as an MCP server, over one HTTP request to `/mcp`.
//! - `mcp_stream`: the resumable event streams of the calls `mcp_call` answers.
//! - `mcp_call`: a `tools/call` over stateless HTTP answered with its requests to the client.
//! - `mcp_http`: the MCP profile of an HTTP server (POST, GET and DELETE on `/mcp`).
//! - `mcp_handler`: `Served` as rmcp's server handler.
//! - `mcp_mrtr`: a `tools/call` of protocol 2026-07-28 asking its client through its result.
//! - `mcp_session`: that MCP server over a host's message transport (an SDK transport).
//! - `http`: the HTTP server: binding, routing, the guards, stopping.
//! - `start`: a server from a host's options (`startA2AServer`, `toolkit.serve`).

pub mod a2a;
pub mod a2a_reports;
pub mod dialect;
pub mod http;
pub mod lease;
pub mod mcp;
pub mod mcp_call;
pub mod mcp_catalog;
pub mod mcp_handler;
pub mod mcp_http;
pub mod mcp_mrtr;
pub mod mcp_session;
pub mod mcp_stream;
pub mod mcp_wire;
pub mod options;
pub mod start;
pub mod store;
pub mod task;

pub use mcp::{exposed_tools, McpServeConfig};
pub use mcp_http::McpProfile;
pub use mcp_session::McpSession;

/// A response body of the server: bytes that arrive whole or as a stream, never failing.
pub type Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;
