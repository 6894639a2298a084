//! The four lifecycle hooks (§8), each a host callback.

use crate::callback::SharedCallback;

/// The four lifecycle hooks (§8). An unset hook costs nothing.
#[derive(Clone, Default)]
pub struct Hooks {
    /// `{ messages, tools, model, turn }` → `{ messages?, tools? }`
    pub before_llm: Option<SharedCallback>,
    /// `{ response, model, turn }`
    pub after_llm: Option<SharedCallback>,
    /// `{ name, args, id, turn }` → `{ result? , args? }`
    pub before_tool: Option<SharedCallback>,
    /// `{ name, args, result, id, turn }` → `{ result? }`
    pub after_tool: Option<SharedCallback>,
}
