//! What `new AgentRuntime(opts)` accepts, read whole (functions and host objects as `fn_markers`
//! markers), with the reference's defaults and leniency: the registry of definitions, the
//! LLM endpoint, the seams (`fetch`, `clock`, `store`), the gates' sizes, the hooks.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::clock::Clock;
use super::types::{AgentDef, Budget, Llm, RuntimeOptions, Spawner};
use crate::agents::gate::Completion;
use crate::callback_tool::HostTool;
use crate::client::hooks::HooksJson;
use crate::client::seams::{HostTransport, StoreOption};
use crate::client::{InMemoryStore, Style, Transport};
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::json::js_string;
use crate::options::{self, parse_object};

const OWNER: &str = "AgentRuntime";

/// What the host supplies that options cannot carry: where turns run, and the defaults of the
/// two seams it owns (a clock whose timers it can fire, its built-in HTTP).
pub struct RuntimeHost {
    pub spawner: Spawner,
    pub clock: Arc<dyn Clock>,
    pub transport: Arc<dyn Transport>,
}

/// A clock the host supplies, as a host object (see `fn_markers`).
pub struct HostClock(pub Arc<dyn Clock>);

/// A budget as the reference reads one: each cap a number (or a numeric string, which its
/// comparisons read as one); anything else, `null` included, is no cap.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BudgetJson {
    #[serde(default, deserialize_with = "options::number")]
    max_turns: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_tokens: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_tool_calls: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_wall_ms: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_children: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_concurrent: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_depth: Option<f64>,
}

impl From<BudgetJson> for Budget {
    fn from(b: BudgetJson) -> Budget {
        Budget {
            max_turns: b.max_turns,
            max_tokens: b.max_tokens,
            max_tool_calls: b.max_tool_calls,
            max_wall_ms: b.max_wall_ms,
            max_children: b.max_children,
            max_concurrent: b.max_concurrent,
            max_depth: b.max_depth,
        }
    }
}

impl Budget {
    /// A budget from its JSON; any value but an object is no budget.
    pub fn from_json(text: &str) -> Result<Budget> {
        Ok(parse_object::<BudgetJson>(text, "budget")?.unwrap_or_default().into())
    }

    fn from_value(v: &Value) -> Budget {
        match v {
            Value::Object(_) => BudgetJson::deserialize(v).unwrap_or_default().into(),
            _ => Budget::default(),
        }
    }
}

/// The runtime's LLM endpoint (`llm`): texts as a client reads them.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LlmJson {
    #[serde(default, deserialize_with = "options::text")]
    base_url: Option<String>,
    #[serde(default, deserialize_with = "options::string")]
    style: Option<String>,
    #[serde(default, deserialize_with = "options::text")]
    api_key: Option<String>,
    #[serde(default, deserialize_with = "options::text")]
    model: Option<String>,
    /// Other endpoints to fall back to (an addition; the reference ignores the key).
    #[serde(default)]
    fallback: Value,
}

/// An object whose members hold host functions, kept with its markers; nothing for any other value.
fn hosted_object<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Map<String, Value>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(m) => Some(m),
        other => {
            crate::json::release(other);
            None
        }
    })
}

/// Anything but an object reads as no endpoint settings.
fn llm<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<LlmJson, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(if v.is_object() { LlmJson::deserialize(v).unwrap_or_default() } else { LlmJson::default() })
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RuntimeJson {
    /// Read as it came: its entries hold host functions, which each entry's reader resolves.
    #[serde(default, deserialize_with = "hosted_object")]
    registry: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "llm")]
    llm: LlmJson,
    /// The host's `fetch`, speaking [`HostTransport`]'s protocol.
    #[serde(default)]
    fetch: HostFn,
    /// A [`HostClock`].
    #[serde(default)]
    clock: HostFn,
    #[serde(default)]
    store: StoreOption,
    #[serde(default, deserialize_with = "options::number")]
    inbox_cap: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    max_concurrent_turns: Option<f64>,
    #[serde(default, deserialize_with = "options::number")]
    shutdown_ms: Option<f64>,
    #[serde(default)]
    hooks: HooksJson,
    #[serde(default)]
    on_metric: HostFn,
    #[serde(default)]
    on_budget: HostFn,
    /// The host's logger: a function told each warning's text.
    #[serde(default)]
    logger: HostFn,
    /// The host's span recorder (see `trace`), when `telemetry` is on.
    #[serde(default)]
    telemetry: HostFn,
    /// Not the reference's: the name of this runtime's state on a durable store.
    #[serde(default)]
    runtime_id: Value,
}

impl RuntimeOptions {
    /// The option names `new AgentRuntime(opts)` reads, and those of its `llm` (index.d.ts's
    /// `RuntimeOptions` must name them).
    pub fn option_names() -> (&'static [&'static str], &'static [&'static str]) {
        (options::fields_of::<RuntimeJson>(), options::fields_of::<LlmJson>())
    }

    /// `new AgentRuntime(opts)`'s options, with `host`'s spawner and, where the options name
    /// none, its clock and transport. Only a value that is not an object is refused.
    pub fn from_json(text: &str, host: RuntimeHost) -> Result<RuntimeOptions> {
        let o: RuntimeJson = parse_object(text, "AgentRuntime options")?
            .ok_or_else(|| Error::Type("AgentRuntime: options must be an object".into()))?;
        let style = Style::of_option(o.llm.style.as_deref());
        let registry = match o.registry {
            Some(defs) => defs.into_iter().map(|(name, d)| def_from(name, &d, style)).collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        let mut opts = RuntimeOptions::new(registry);
        opts.llm = Llm {
            base_url: o.llm.base_url,
            style: Some(style),
            api_key: o.llm.api_key,
            model: o.llm.model,
            fallback: crate::client::Fallback::list_of(&o.llm.fallback),
        };
        opts.transport = Some(match o.fetch.named(OWNER, "fetch") {
            Some(f) => Arc::new(HostTransport::new(f)),
            None => host.transport,
        });
        opts.clock = o.clock.object::<HostClock>().map_or(host.clock, |c| c.0.clone());
        opts.store = o.store.0.unwrap_or_else(|| Arc::new(InMemoryStore::default()));
        opts.inbox_cap = o.inbox_cap.unwrap_or(opts.inbox_cap);
        opts.max_concurrent_turns = o.max_concurrent_turns.unwrap_or(opts.max_concurrent_turns);
        opts.shutdown_ms = o.shutdown_ms.unwrap_or(opts.shutdown_ms);
        opts.hooks = o.hooks.finish(OWNER, style);
        opts.on_metric = o.on_metric.named(OWNER, "onMetric");
        opts.on_budget = o.on_budget.named(OWNER, "onBudget");
        opts.logger = o.logger.named(OWNER, "logger").map(crate::warn::callback_sink);
        opts.telemetry = o.telemetry.named(OWNER, "telemetry");
        opts.spawner = host.spawner;
        if let Value::String(id) = o.runtime_id {
            if !id.is_empty() {
                opts.runtime_id = id;
            }
        }
        Ok(opts)
    }
}

/// One registry entry: `registry[name]` (`null` or a non-object reads as an empty one).
fn def_from(name: String, d: &Value, style: Style) -> Result<AgentDef> {
    let get = |k: &str| d.get(k).filter(|v| !v.is_null());
    let text = |k: &str| get(k).map(js_string);
    let owner = format!("{OWNER}: registry.{name}");
    let tools = match d.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => HostTool::list_from_value(list, 0, &format!("{owner}.tools"))?,
        Some(_) => return Err(Error::Type(format!("{owner}.tools must be an array of Tool objects"))),
    };
    let hook = |k: &str| d.get(k).map(HostFn::from_value).unwrap_or_default();
    // A completion's `verify` is called whatever it is: one that is no function fails then.
    let completion = get("completion").filter(|c| crate::json::truthy(c)).map(|c| {
        Arc::new(Completion {
            verify: c.get("verify").map(HostFn::from_value).unwrap_or_default().required(&owner, "completion.verify"),
            max_attempts: c.get("maxAttempts").cloned().unwrap_or(Value::Null),
        })
    });
    let output = match get("output") {
        Some(o) => Some(Arc::new(crate::client::output::Output::from_value(&owner, o)?)),
        None => None,
    };
    Ok(AgentDef {
        output,
        // `does` reads as text when present at all (`String(d.does)`), else empty.
        does: d.get("does").map(js_string).unwrap_or_default(),
        soul: text("soul"),
        model: text("model"),
        tools,
        team: match get("team") {
            Some(Value::Array(items)) => items.iter().map(js_string).collect(),
            _ => Vec::new(),
        },
        budget: get("budget").map(Budget::from_value).unwrap_or_default(),
        wait_for: hook("waitFor").named(&owner, "waitFor"),
        on_spawn: hook("onSpawn").named(&owner, "onSpawn"),
        on_close: hook("onClose").named(&owner, "onClose"),
        hooks: get("hooks").map(|h| HooksJson::deserialize(h).unwrap_or_default().finish(&owner, style)),
        on_metric: hook("onMetric").named(&owner, "onMetric"),
        completion,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::runtime::SystemClock;
    use crate::client::http::FetchTransport;
    use crate::fn_markers::{read_with, HostObject, Table, FN};
    use serde_json::json;

    struct Host;

    impl Table for Host {
        fn callback(&self, n: usize) -> Option<crate::callback::SharedCallback> {
            Some(crate::callback::callback(move |_| async move { Ok(json!(n)) }))
        }
        fn object(&self, _: usize) -> Option<HostObject> {
            None
        }
    }

    fn read(v: Value) -> Result<RuntimeOptions> {
        let host = RuntimeHost {
            spawner: Arc::new(|_| {}),
            clock: Arc::new(SystemClock::new(None)),
            transport: Arc::new(FetchTransport::shared()),
        };
        read_with(std::rc::Rc::new(Host), || RuntimeOptions::from_json(&v.to_string(), host))
    }

    #[test]
    fn the_gates_default_as_the_reference_and_read_numbers_leniently() {
        let o = read(json!({})).unwrap();
        assert_eq!((o.inbox_cap, o.max_concurrent_turns, o.shutdown_ms), (8.0, 8.0, 200.0));
        assert!(o.registry.is_empty() && o.transport.is_some());
        let o = read(json!({"inboxCap": "3", "maxConcurrentTurns": 1, "shutdownMs": null})).unwrap();
        assert_eq!((o.inbox_cap, o.max_concurrent_turns, o.shutdown_ms), (3.0, 1.0, 200.0));
        assert_eq!(
            read(json!([1])).err().map(|e| e.to_string()).as_deref(),
            Some("AgentRuntime: options must be an object")
        );
    }

    #[test]
    fn llm_fallback_entries_are_read_as_a_clients_are() {
        let o =
            read(json!({"llm": {"model": "m", "fallback": [{"model": "m2", "style": "anthropic"}, null]}})).unwrap();
        assert_eq!(o.llm.fallback.len(), 1);
        assert_eq!(o.llm.fallback[0].model.as_deref(), Some("m2"));
        assert_eq!(o.llm.fallback[0].style, Some(Style::Anthropic));
    }

    #[tokio::test]
    async fn a_registry_entry_is_read_as_the_reference_reads_it() {
        let o = read(json!({
            "llm": {"style": "anthropic", "baseUrl": 5},
            "registry": {
                "a": {"does": null, "soul": 7, "model": "m", "team": ["b", 3], "budget": {"maxTurns": "2", "maxTokens": null},
                      "waitFor": {FN: 0}, "onMetric": "x", "hooks": {"afterLLM": {FN: 1}}, "completion": {"maxAttempts": 2}},
                "b": null,
            }
        }))
        .unwrap();
        assert_eq!(o.llm.style, Some(Style::Anthropic));
        assert_eq!(o.llm.base_url.as_deref(), Some("5"));
        assert!(o.llm.fallback.is_empty());
        let a = &o.registry[0];
        assert_eq!(
            (a.name.as_str(), a.does.as_str(), a.soul.as_deref(), a.model.as_deref()),
            ("a", "null", Some("7"), Some("m"))
        );
        assert_eq!(a.team, ["b", "3"]);
        assert_eq!((a.budget.max_turns, a.budget.max_tokens), (Some(2.0), None));
        assert_eq!(a.wait_for.as_ref().unwrap().call(Value::Null).await.unwrap(), json!(0));
        let e = a.on_metric.as_ref().unwrap().call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "AgentRuntime: registry.a: `onMetric` is not a function (got string)");
        let hooks = a.hooks.as_ref().unwrap();
        assert!(hooks.before_llm.is_none() && hooks.after_llm.is_some());
        let c = a.completion.as_ref().unwrap();
        assert_eq!(c.max_attempts, json!(2));
        let e = c.verify.call(Value::Null).await.unwrap_err();
        assert_eq!(e.to_string(), "AgentRuntime: registry.a: `completion.verify` is not a function (got undefined)");
        let b = &o.registry[1];
        assert_eq!((b.does.as_str(), b.tools.len(), b.hooks.is_none()), ("", 0, true));
    }

    #[test]
    fn tools_must_be_tool_objects() {
        let e = read(json!({"registry": {"a": {"tools": [{"name": "t"}]}}})).err().unwrap();
        assert_eq!(
            e.to_string(),
            "AgentRuntime: registry.a.tools[0] is not a Tool: it needs a string `name` and an `execute` function"
        );
        assert_eq!(e.js_class(), "TypeError");
        let o =
            read(json!({"registry": {"a": {"tools": [{"name": "t", "execute": {FN: 0}, "inputSchema": 1}]}}})).unwrap();
        assert_eq!(o.registry[0].tools[0].input_schema(), &crate::fn_tool::empty_schema());
    }

    #[test]
    fn a_budget_reads_numbers_and_numeric_strings() {
        let b = Budget::from_json(r#"{"maxTurns": "3", "maxWallMs": 10, "maxDepth": true}"#).unwrap();
        assert_eq!((b.max_turns, b.max_wall_ms, b.max_depth), (Some(3.0), Some(10.0), None));
        assert_eq!(Budget::from_json("null").unwrap(), Budget::default());
    }
}
