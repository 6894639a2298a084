//! The core's integration tests, as one test binary.

mod common;
mod util;

mod bounds;
mod builtins;
mod builtins_cwd;
mod builtins_loop;
mod concurrency;
mod deep;
mod errors;
mod fetch;
mod hooks;
mod host;
mod http_tool;
mod inprocess;
mod loop_anthropic;
mod loop_openai;
mod mcp;
mod memory;
mod metrics;
mod no_api_key;
mod resilience;
mod stream;
mod suspension;
mod tls_trust;
mod translate_call;
