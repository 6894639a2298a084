//! The agent runtime (SPEC §7D): a tree of handles driven by six verbs (`spawn`, `post`,
//! `wake`, `wait`, `interrupt`, `close`), read through `list` / `inspect`, with three
//! backpressure gates, hierarchical budgets enforced while a turn runs, suspension escalation
//! and durable resume.
//!
//! Parts: `clock` (the injectable time source), `tree` (the handle table and its rules),
//! `verbs` (the host verbs), `turn` (one turn: the client run, the turn gate, the budget
//! ledger), `task` (the model's delegation tool), `stored` (the state as one document: written, read, merged), `durable` (the state kept on a durable store), `fields` (a handle as its host shows it).
//!
//! Every handle lives in one table behind one lock, never held across an await; the verbs
//! that the reference makes synchronous are synchronous here too. Turns run on the host's
//! spawner (the Node binding polls them on the JS thread).

mod clock;
mod core;
mod durable;
mod fields;
mod heartbeat;
mod options;
mod stored;
mod task;
mod tree;
mod turn;
mod turngate;
mod types;
mod verbs;

pub use self::core::AgentRuntime;
pub use clock::{Clock, SystemClock, TimerCancel, TimerFn, VirtualClock};
pub use fields::{AbortSeam, Checkpoint, DefRef, HandleFields, Limits, OwnDef, Pools, Wake};
pub use heartbeat::{Heartbeat, HeartbeatStop};
pub use options::{HostClock, RuntimeHost};
pub use types::{
    AgentDef, Budget, HandleId, HandleSnapshot, HandleState, HandleView, InboxItem, Inspection, Llm, RuntimeOptions,
    Spawner, TaskResult, TaskStatus, ROOT,
};
pub use verbs::VerbError;
