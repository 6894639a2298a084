//! The four lifecycle hooks (§8), each a host callback.

use serde::Deserialize;

use super::wire::Style;
use crate::callback::SharedCallback;
use crate::fn_markers::HostFn;

/// The four lifecycle hooks (§8), and `duringTool` (an addition). An unset hook costs nothing.
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
    /// `{ type: "progress" | "log", name, id?, turn, ... }`: what a tool reports while it runs
    /// (`ctx.progress`, `ctx.log`); its answer is not read.
    pub during_tool: Option<SharedCallback>,
}

/// A `beforeLLM` hook that speaks its client's dialect (a compactor): the client hands it its
/// style when it takes it on. A host passes one as its own object in the `hooks.beforeLLM`
/// option.
pub trait DialectHook: Send + Sync {
    fn for_style(&self, style: Style) -> SharedCallback;
}

/// A [`DialectHook`] as a host object (see `fn_markers`).
pub struct HostDialectHook(pub std::sync::Arc<dyn DialectHook>);

/// The `hooks` option: each of the four a host function, read through `fn_markers`. A value that
/// is not an object has no hooks (`hooks?.beforeLLM` reads nothing off it).
#[derive(Default, Clone)]
pub struct HooksJson {
    pub before_llm: HostFn,
    pub after_llm: HostFn,
    pub before_tool: HostFn,
    pub after_tool: HostFn,
    pub during_tool: HostFn,
}

impl<'de> Deserialize<'de> for HooksJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let hook = |name: &str| v.get(name).map(HostFn::from_value).unwrap_or_default();
        let hooks = if v.is_object() {
            HooksJson {
                before_llm: hook("beforeLLM"),
                after_llm: hook("afterLLM"),
                before_tool: hook("beforeTool"),
                after_tool: hook("afterTool"),
                during_tool: hook("duringTool"),
            }
        } else {
            HooksJson::default()
        };
        crate::json::release(v);
        Ok(hooks)
    }
}

impl HooksJson {
    /// The hooks of `owner` (for the messages of a set hook that is not a function), a
    /// dialect hook (a compactor) told `style`.
    pub fn finish(self, owner: &str, style: Style) -> Hooks {
        let before_llm = match self.before_llm.object::<HostDialectHook>() {
            Some(d) => Some(d.0.for_style(style)),
            None => self.before_llm.named(owner, "hooks.beforeLLM"),
        };
        Hooks {
            before_llm,
            after_llm: self.after_llm.named(owner, "hooks.afterLLM"),
            before_tool: self.before_tool.named(owner, "hooks.beforeTool"),
            after_tool: self.after_tool.named(owner, "hooks.afterTool"),
            during_tool: self.during_tool.named(owner, "hooks.duringTool"),
        }
    }
}
