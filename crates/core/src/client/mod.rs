//! The unified LLM client (SPEC §8) and its tool-calling loop with suspension (§10).
//!
//! This file only declares the parts and names what the crate's users see. Within the folder
//! the parts depend downwards in this order, never back up:
//! `run` (the client and its entry points) → `resume` (the ways back into a parked run) →
//! `park` (the library's record of what a run parked on) → `turns` (the loop) → `parked` (where a run starts) → `llm` (one LLM call) →
//! `retry` → `streamed` / `wire` (the two wire styles) → `result`, `options`, `hooks`,
//! `transport`, `store`, `metrics`. `one_call` (translate, §11) and `inprocess` (a model in the
//! host's process) stand beside the loop and use the same lower parts.

mod answer;
mod calls;
mod fallback;
mod fallback_entry;
mod heard;
pub mod hooks;
pub mod http;
pub mod inprocess;
mod llm;
pub mod metrics;
pub mod one_call;
mod options;
pub mod output;
pub mod park;
mod parked;
mod result;
mod resume;
mod retry;
mod run;
pub mod seams;
pub mod store;
mod streamed;
mod style;
pub mod transport;
mod turns;
mod wire;

pub use fallback_entry::Fallback;
pub use hooks::{DialectHook, Hooks};
pub use metrics::{MetricEvent, Registry};
pub use options::{CallOptions, ClientOptions};
pub use result::{
    HaltSite, LimitCheck, Resolution, RunLimits, RunOptions, RunReports, RunResult, RunStatus, ToolCallRecord, Usage,
};
pub use retry::retry_after_ms;
pub use run::Client;
pub use store::{ConversationStore, InMemoryStore};
pub use transport::{through, HttpRequest, HttpResponse, Reply, StreamResponse, Transport};
pub use wire::Style;
