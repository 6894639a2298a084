//! toolnexus core: every behaviour of the toolnexus package, in plain Rust.
//!
//! Nothing here knows about JavaScript. Everything a host supplies (tools, the LLM
//! transport, hooks, the suspension resolver) is an async trait or a callback type;
//! the Node binding implements those seams once, a Rust program can implement them too.

pub mod a2a;
pub mod adapters;
pub mod agents;
pub mod body;
pub mod builtins;
pub mod callback;
pub mod callback_tool;
pub mod cancel;
pub mod client;
pub mod error;
pub mod fetch;
pub mod fn_markers;
pub mod fn_tool;
pub mod host_thread;
pub mod http_tool;
pub mod json;
pub mod jsstr;
pub mod lru;
pub mod mcp;
pub mod net;
pub mod nodepath;
pub mod options;
pub mod proc;
pub mod redact;
pub mod serve;
pub mod skills;
pub mod store;
pub mod suspension;
pub mod syserr;
pub mod tool;
pub mod toolkit;
pub mod trace;
pub mod translate;
pub mod types;
pub mod warn;

pub use error::{Error, HostError};
pub use tool::{Tool, ToolContext};
pub use toolkit::{Toolkit, ToolkitOptions};
pub use types::{auth_required, pending, pending_of, sanitize, ToolResult};
