//! Remote A2A agents, outbound (SPEC §7A): an Agent Card's skills as tools (`source: "a2a"`).
//!
//! A descriptor (`agent`) names a card URL; resolving it (`tool::agent_tools`) fetches the card
//! and makes one tool per advertised skill. Calling such a tool sends one JSON-RPC
//! `SendMessage` to the agent's endpoint and polls `GetTask` until the task ends (`wire`
//! carries the requests). `${ENV}` header values are expanded at call time and never appear
//! in any message.
//!
//! Parts, bottom to top: `agent` (descriptors and the config block), `wire` (HTTP and
//! JSON-RPC under a deadline and a cancel token), `speak` (which A2A wire a card offers: SPEC's,
//! v0.3 or v1.0, and their answers read as SPEC's), `tool` (card resolution and the skill tool).

mod agent;
mod speak;
mod tool;
mod wire;

pub use agent::{parse_agents_config, Agent, DEFAULT_POLL_EVERY_MS, DEFAULT_TIMEOUT_MS};
pub use tool::{agent_tools, A2aTool, TASK_DESCRIPTION};
