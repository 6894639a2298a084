//! The agent runtime class (SPEC §7D): definitions and callbacks in, the core's runtime
//! behind every verb. Handles cross as their index in the runtime's table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::agents::gate::Completion;
use toolnexus_core::agents::runtime::{
    AgentDef, AgentRuntime, Budget, Clock, HandleId, Heartbeat, HeartbeatStop, InboxItem, Llm, RuntimeOptions,
    SystemClock, TimerCancel, TimerFn,
};
use toolnexus_core::client::{ConversationStore, Hooks, InMemoryStore, Style, Transport};

use crate::bridge::{JsCallback, JsStore, JsTransport, JsonFn};
use crate::client::{cb, NativeMemoryStore};
use crate::dispatch::{Crossed, Home};
use crate::toolkit::{js_tools, JsToolSpec};
use crate::{core_err, parse_json};

/// An agent's four §8 hooks, each already bridged.
#[napi(object, object_to_js = false)]
pub struct JsHooks {
    pub before_llm: Option<JsonFn>,
    pub after_llm: Option<JsonFn>,
    pub before_tool: Option<JsonFn>,
    pub after_tool: Option<JsonFn>,
}

fn hooks(h: JsHooks) -> Hooks {
    Hooks {
        before_llm: cb(h.before_llm),
        after_llm: cb(h.after_llm),
        before_tool: cb(h.before_tool),
        after_tool: cb(h.after_tool),
    }
}

/// One registry entry as `index.js` hands it over.
#[napi(object, object_to_js = false)]
pub struct JsAgentDef {
    pub name: String,
    pub does: String,
    pub soul: Option<String>,
    pub model: Option<String>,
    pub tools: Vec<JsToolSpec>,
    pub team: Vec<String>,
    /// The budget as JSON.
    pub budget: Option<String>,
    pub wait_for: Option<JsonFn>,
    pub on_spawn: Option<JsonFn>,
    pub on_close: Option<JsonFn>,
    pub hooks: Option<JsHooks>,
    pub on_metric: Option<JsonFn>,
    /// The completion gate: `verify`, and `maxAttempts` as JSON.
    pub verify: Option<JsonFn>,
    pub max_attempts: Option<String>,
}

/// The runtime-wide callbacks.
#[napi(object, object_to_js = false)]
pub struct RuntimeCallbacks {
    pub fetch: Option<JsonFn>,
    pub hooks: Option<JsHooks>,
    pub on_metric: Option<JsonFn>,
    /// Asked when a budget stops a running turn.
    pub on_budget: Option<JsonFn>,
    pub store_get: Option<JsonFn>,
    pub store_save: Option<JsonFn>,
    /// A host clock: `now()` answering synchronously, `set([id, ms])`, `clear(id)`.
    pub clock_now: Option<JsonFn>,
    pub clock_set: Option<JsonFn>,
    pub clock_clear: Option<JsonFn>,
}

fn budget_of(text: &str) -> Result<Budget> {
    let v = parse_json(text, "budget")?;
    let n = |k: &str| v.get(k).and_then(Value::as_f64);
    Ok(Budget {
        max_turns: n("maxTurns"),
        max_tokens: n("maxTokens"),
        max_tool_calls: n("maxToolCalls"),
        max_wall_ms: n("maxWallMs"),
        max_children: n("maxChildren"),
        max_concurrent: n("maxConcurrent"),
        max_depth: n("maxDepth"),
    })
}

fn def_of(d: JsAgentDef) -> Result<AgentDef> {
    let completion = match (d.verify, d.max_attempts) {
        (Some(v), attempts) => Some(Arc::new(Completion {
            verify: Arc::new(JsCallback(v)),
            max_attempts: attempts
                .map(|a| parse_json(&a, "completion.maxAttempts"))
                .transpose()?
                .unwrap_or(Value::Null),
        })),
        (None, _) => None,
    };
    Ok(AgentDef {
        name: d.name,
        does: d.does,
        soul: d.soul,
        model: d.model,
        tools: js_tools(d.tools, 0)?,
        team: d.team,
        budget: d.budget.as_deref().map(budget_of).transpose()?.unwrap_or_default(),
        wait_for: cb(d.wait_for),
        on_spawn: cb(d.on_spawn),
        on_close: cb(d.on_close),
        hooks: d.hooks.map(hooks),
        on_metric: cb(d.on_metric),
        completion,
    })
}

/// A clock the host supplies: `now` is read synchronously on the JS thread (the last value
/// read stands in elsewhere); timers are the host's, and fire back through `fireTimer`.
struct JsClock {
    now: JsonFn,
    set: Arc<JsonFn>,
    clear: Arc<JsonFn>,
    last: Mutex<f64>,
    timers: Arc<Mutex<HashMap<u32, TimerFn>>>,
    seq: AtomicU32,
}

impl Clock for JsClock {
    fn now(&self) -> f64 {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(Ok(text)) = self.now.call_sync("null".into()) {
            if let Ok(n) = text.trim().parse::<f64>() {
                *last = n;
            }
        }
        *last
    }

    fn set_timeout(&self, ms: f64, fire: TimerFn) -> TimerCancel {
        let id = self.seq.fetch_add(1, Ordering::Relaxed);
        self.timers.lock().unwrap_or_else(PoisonError::into_inner).insert(id, fire);
        let ms = if ms.is_finite() { ms } else { 0.0 };
        self.set.notify_now(format!("[{id},{ms}]"));
        let (timers, clear) = (self.timers.clone(), self.clear.clone());
        Box::new(move || {
            if timers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id).is_some() {
                clear.notify_now(id.to_string());
            }
        })
    }
}

/// A running heartbeat.
#[napi]
pub struct NativeHeartbeat {
    stop: HeartbeatStop,
}

#[napi]
impl NativeHeartbeat {
    #[napi]
    pub fn stop(&self) {
        self.stop.stop()
    }
}

#[napi]
pub struct NativeRuntime {
    inner: AgentRuntime,
    timers: Option<Arc<Mutex<HashMap<u32, TimerFn>>>>,
    /// Set when the runtime uses the built-in HTTP: whether the user's seam is in place.
    seam: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// `spawn`'s answer: the child's index, or the refusal.
#[napi(object)]
pub struct Spawned {
    pub handle: Option<u32>,
    pub error: Option<String>,
}

#[napi(object)]
pub struct NativeHandleView {
    pub handle: u32,
    pub id: String,
    pub state: String,
    pub tokens: f64,
    pub inbox: u32,
}

#[napi(object)]
pub struct NativeInspection {
    pub id: String,
    pub state: String,
    pub tokens: f64,
    pub inbox: u32,
    pub turns: f64,
    pub pool_tokens: f64,
    /// The pending request as JSON.
    pub pending: Option<String>,
}

#[napi(object)]
pub struct NativeHandleInfo {
    pub id: String,
    pub def: String,
    pub parent: Option<u32>,
    pub depth: u32,
    pub children: Vec<u32>,
    /// The inbox as JSON.
    pub inbox: String,
    pub state: String,
    pub usage_total: f64,
    pub tool_calls_total: f64,
    pub turns_total: f64,
    pub pending_request: Option<String>,
    pub last_result: Option<String>,
    /// `[tokens, toolCalls, children]`.
    pub pool: Vec<f64>,
    /// `[maxTurns, maxConcurrent, maxDepth]`.
    pub eff: Vec<f64>,
    pub deadline: Option<f64>,
    /// Which turn's abort the handle holds (a count; none before its first turn), and whether
    /// it was aborted.
    pub abort_turn: Option<f64>,
    pub aborted: bool,
    pub checkpoint: Option<String>,
    /// The drained items as JSON.
    pub drained: String,
    /// The deferred wakes: the children's indexes, and their prompts in the same order.
    pub wake_queue: Vec<u32>,
    pub wake_prompts: Vec<Option<String>>,
    pub task_key: Option<String>,
    pub running_children: f64,
    pub seq: f64,
}

fn view(v: toolnexus_core::agents::runtime::HandleView) -> NativeHandleView {
    NativeHandleView {
        handle: v.handle as u32,
        id: v.id,
        state: v.state.as_str().into(),
        tokens: v.tokens,
        inbox: v.inbox as u32,
    }
}

#[napi]
impl NativeRuntime {
    /// `options` is the JSON of `{ llm, inboxCap, maxConcurrentTurns, shutdownMs }`.
    #[napi(constructor)]
    pub fn new(
        env: &Env,
        options: String,
        callbacks: RuntimeCallbacks,
        registry: Vec<JsAgentDef>,
        store: Option<&NativeMemoryStore>,
    ) -> Result<Self> {
        let o = parse_json(&options, "AgentRuntime options")?;
        let registry = registry.into_iter().map(def_of).collect::<Result<Vec<_>>>()?;
        let mut opts = RuntimeOptions::new(registry);
        let llm = o.get("llm").cloned().unwrap_or(Value::Null);
        let text = |k: &str| llm.get(k).and_then(Value::as_str).map(str::to_string);
        opts.llm = Llm {
            base_url: text("baseUrl"),
            style: match text("style").as_deref() {
                Some("anthropic") => Some(Style::Anthropic),
                _ => Some(Style::OpenAI),
            },
            api_key: text("apiKey"),
            model: text("model"),
        };
        let num = |k: &str, d: f64| o.get(k).and_then(Value::as_f64).unwrap_or(d);
        opts.inbox_cap = num("inboxCap", 8.0);
        opts.max_concurrent_turns = num("maxConcurrentTurns", 8.0);
        opts.shutdown_ms = num("shutdownMs", 200.0);
        let mut seam = None;
        opts.transport = match callbacks.fetch {
            Some(f) => Some(Arc::new(JsTransport::new(f)) as Arc<dyn Transport>),
            None => {
                let own = crate::client::event_loop_transport(env)
                    .unwrap_or_else(|| Arc::new(toolnexus_core::client::http::FetchTransport::shared()));
                let t = crate::client::SeamTransport::new(own);
                seam = Some(t.seam.clone());
                Some(Arc::new(t) as Arc<dyn Transport>)
            }
        };
        opts.hooks = callbacks.hooks.map(hooks).unwrap_or_default();
        opts.on_metric = cb(callbacks.on_metric);
        opts.on_budget = cb(callbacks.on_budget);
        opts.store = match (store, callbacks.store_get, callbacks.store_save) {
            (_, Some(get), Some(save)) => Arc::new(JsStore { get, save }),
            (Some(native), _, _) => native.inner.clone() as Arc<dyn ConversationStore>,
            _ => Arc::new(InMemoryStore::default()),
        };
        let mut timers = None;
        opts.clock = match (callbacks.clock_now, callbacks.clock_set, callbacks.clock_clear) {
            (Some(now), Some(set), Some(clear)) => {
                let table = Arc::new(Mutex::new(HashMap::new()));
                timers = Some(table.clone());
                Arc::new(JsClock {
                    now,
                    set: Arc::new(set),
                    clear: Arc::new(clear),
                    last: Mutex::new(0.0),
                    timers: table,
                    seq: AtomicU32::new(1),
                })
            }
            _ => Arc::new(SystemClock::new(crate::dispatch::runtime_handle())),
        };
        let home = Home::of(env)?;
        opts.spawner = Arc::new(move |f| {
            if home.here() {
                let _ = crate::dispatch::spawn_detached(home.env(), f);
            } else {
                let there = home.clone();
                home.run_there(Box::new(move || {
                    let _ = crate::dispatch::spawn_detached(there.env(), f);
                }));
            }
        });
        Ok(NativeRuntime { inner: AgentRuntime::new(opts), timers, seam })
    }

    /// Whether the user's seam is in place (see `SeamTransport`), as the caller found it now.
    #[napi]
    pub fn seam(&self, on: bool) {
        if let Some(s) = &self.seam {
            s.store(on, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[napi]
    pub fn spawn(&self, parent: u32, def: String, budget: Option<String>) -> Result<Spawned> {
        let budget = budget.as_deref().map(budget_of).transpose()?;
        Ok(match self.inner.spawn(parent as HandleId, &def, budget.as_ref()) {
            Ok(h) => Spawned { handle: Some(h as u32), error: None },
            Err(e) => Spawned { handle: None, error: Some(e) },
        })
    }

    /// `post`: the refusal, or nothing.
    #[napi]
    pub fn post(&self, h: u32, from: String, channel: String, text: String) -> Option<String> {
        self.inner.post(h as HandleId, InboxItem { from, channel, text }).err()
    }

    /// `wake`: the refusal, or nothing.
    #[napi]
    pub fn wake(&self, h: u32, prompt: Option<String>) -> Option<String> {
        self.inner.wake(h as HandleId, prompt).err()
    }

    /// Resolves with the TaskResult as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn wait(
        &self,
        env: &Env,
        h: u32,
        timeout_ms: Option<f64>,
        by: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let fut = self.inner.wait(h as HandleId, timeout_ms, by.map(|b| b as HandleId));
        crate::dispatch::local_promise(env, async move { Ok(toolnexus_core::json::to_string(&fut.await.to_value())) })
    }

    #[napi]
    pub fn interrupt(&self, h: u32) {
        self.inner.interrupt(h as HandleId)
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self, env: &Env, h: u32, force: bool, reason: Option<String>) -> Result<crate::dispatch::JsPromise> {
        let fut = self.inner.close(h as HandleId, force, reason);
        crate::dispatch::local_promise(env, async move {
            fut.await;
            Ok(())
        })
    }

    #[napi]
    pub fn list(&self, h: u32) -> Vec<NativeHandleView> {
        self.inner.list(h as HandleId).into_iter().map(view).collect()
    }

    #[napi]
    pub fn inspect(&self, h: u32) -> Option<NativeInspection> {
        let i = self.inner.inspect(h as HandleId)?;
        Some(NativeInspection {
            id: i.view.id,
            state: i.view.state.as_str().into(),
            tokens: i.view.tokens,
            inbox: i.view.inbox as u32,
            turns: i.turns,
            pool_tokens: i.pool_tokens,
            pending: i.pending.map(|p| toolnexus_core::json::to_string(&p)),
        })
    }

    #[napi]
    pub fn info(&self, h: u32) -> Option<NativeHandleInfo> {
        let s = self.inner.snapshot(h as HandleId)?;
        let inbox = Value::Array(s.inbox.iter().map(InboxItem::to_value).collect());
        Some(NativeHandleInfo {
            id: s.id,
            def: s.def,
            parent: s.parent.map(|p| p as u32),
            depth: s.depth,
            children: s.children.into_iter().map(|c| c as u32).collect(),
            inbox: toolnexus_core::json::to_string(&inbox),
            state: s.state.as_str().into(),
            usage_total: s.usage_total,
            tool_calls_total: s.tool_calls_total,
            turns_total: s.turns_total,
            pending_request: s.pending_request.map(|p| toolnexus_core::json::to_string(&p)),
            last_result: s.last_result.map(|r| toolnexus_core::json::to_string(&r.to_value())),
            pool: vec![s.pool.0, s.pool.1, s.pool.2],
            eff: vec![s.eff.0, s.eff.1, s.eff.2],
            deadline: s.deadline,
            abort_turn: s.abort.map(|(n, _)| n as f64),
            aborted: s.abort.is_some_and(|(_, a)| a),
            checkpoint: s.checkpoint,
            drained: toolnexus_core::json::to_string(&Value::Array(
                s.drained.iter().map(InboxItem::to_value).collect(),
            )),
            wake_queue: s.wake_queue.iter().map(|(h, _)| *h as u32).collect(),
            wake_prompts: s.wake_queue.into_iter().map(|(_, p)| p).collect(),
            task_key: s.task_key,
            running_children: s.running_children,
            seq: s.seq as f64,
        })
    }

    #[napi]
    pub fn state(&self, h: u32) -> Option<String> {
        self.inner.snapshot(h as HandleId).map(|s| s.state.as_str().to_string())
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn resume(&self, env: &Env, answer: String) -> Result<crate::dispatch::JsPromise> {
        let answer = parse_json(&answer, "resume")?;
        let rt = self.inner.clone();
        crate::dispatch::local_promise(env, async move { rt.resume(answer).await.map_err(core_err) })
    }

    /// One-shot run of `name` (spawn, wake, wait, close unless pending): the TaskResult as JSON.
    #[napi(js_name = "runAgent", ts_return_type = "Promise<string>")]
    pub fn run_agent(&self, env: &Env, name: String, prompt: String) -> Result<crate::dispatch::JsPromise> {
        let rt = self.inner.clone();
        crate::dispatch::local_promise(
            env,
            async move { Ok(Crossed::of(rt.run_agent(&name, &prompt).await.to_value())) },
        )
    }

    #[napi]
    pub fn trace(&self) -> Vec<String> {
        self.inner.trace()
    }

    #[napi(js_name = "concurrentTurns")]
    pub fn concurrent_turns(&self) -> u32 {
        self.inner.concurrent_turns() as u32
    }

    #[napi(js_name = "maxObservedConcurrentTurns")]
    pub fn max_observed_concurrent_turns(&self) -> u32 {
        self.inner.max_observed_concurrent_turns() as u32
    }

    /// Give handle `h` its own clock (a persona's heartbeat).
    #[napi]
    pub fn heartbeat(&self, h: u32, every_ms: f64, prompt: String, silent: String, on_beat: JsonFn) -> NativeHeartbeat {
        let hb = Heartbeat { every_ms, prompt, silent, on_beat: cb(Some(on_beat)) };
        NativeHeartbeat { stop: self.inner.start_heartbeat(h as HandleId, hb) }
    }

    /// A host clock's timer fired.
    #[napi(js_name = "fireTimer")]
    pub fn fire_timer(&self, id: u32) {
        let fire = self.timers.as_ref().and_then(|t| t.lock().unwrap_or_else(PoisonError::into_inner).remove(&id));
        if let Some(f) = fire {
            f();
        }
    }
}
