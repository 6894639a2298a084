//! The agent layer (SPEC §7D-§7F), built over the client.
//!
//! Parts, in order: `compaction` (the `beforeLLM` compactor and its token estimate), `home`
//! (a persona's directory: the composed soul and the file-backed `memory` tool), `gate` (the
//! completion gate over a run, its built-in verdict, and the guardrails' `before_tool`).

pub mod compaction;
pub mod gate;
pub mod home;
pub mod runtime;

pub use compaction::{estimate_tokens, Compactor, CompactorOptions};
pub use gate::{all_todos_done, guarded_hooks, run_gated, Completion};
pub use home::{compose_soul, memory_tool, Soul};
