//! The core's integration tests, as one test binary, grouped by behaviour.
//!
//! One binary is one process: a test that needs the environment, the working directory or the
//! TLS trust set its own way runs in a process of its own (`util::alone`).

mod common;
mod util;

mod a2a;
mod agent_loop;
mod agents_runtime;
mod approval;
mod bounds;
mod builtins;
mod cancel;
mod compaction;
mod concurrency;
mod declared;
mod deep;
mod errors;
mod fallback;
mod fetch;
mod gate;
mod hooks;
mod host_thread;
mod http_tool;
mod inprocess;
mod mcp;
mod mcp_serve;
mod memory;
mod metrics;
mod output;
mod persona;
mod resume;
mod retry;
mod runtime_resume;
mod serve;
mod stores;
mod stream;
mod suspension;
mod through;
mod tls;
mod translate;
