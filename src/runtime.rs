//! The agent runtime class (SPEC §7D): definitions and callbacks in, the core's runtime
//! behind every verb. Handles cross as their index in the runtime's table.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolnexus_core::agents::runtime::{
    AgentRuntime, Budget, Clock, HandleId, Heartbeat, HeartbeatStop, HostClock, InboxItem, RuntimeHost, RuntimeOptions,
    Spawner, SystemClock, TimerCancel, TimerFn,
};
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::Transport;

use crate::bridge::{JsCallback, JsonFn};
use crate::dispatch::{Crossed, Home};
use crate::fetch_seam::SeamTransport;
use crate::options_doc::Shared;
use crate::{core_err, parse_json};

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

/// A host clock (`clock` option): `now()` answering synchronously, `set([id, ms])` and
/// `clear(id)`; the host calls `fireTimer(id)` when a timer it set fires.
#[napi]
pub struct NativeClock {
    inner: Arc<JsClock>,
}

#[napi]
impl NativeClock {
    #[napi(constructor)]
    pub fn new(now: JsonFn, set: JsonFn, clear: JsonFn) -> Self {
        NativeClock {
            inner: Arc::new(JsClock {
                now,
                set: Arc::new(set),
                clear: Arc::new(clear),
                last: Mutex::new(0.0),
                timers: Arc::new(Mutex::new(HashMap::new())),
                seq: AtomicU32::new(1),
            }),
        }
    }

    /// A timer this clock set has fired.
    #[napi(js_name = "fireTimer")]
    pub fn fire_timer(&self, id: u32) {
        let fire = self.inner.timers.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        if let Some(f) = fire {
            f();
        }
    }

    /// This clock as an options document names it.
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn shared(&self) -> External<Shared> {
        External::new(Shared(Arc::new(HostClock(self.inner.clone() as Arc<dyn Clock>))))
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
    /// `options` is the whole options document (see `options_doc`): its JSON, the functions and the
    /// addon objects (a store, a clock, compactors) its markers name.
    #[napi(constructor)]
    pub fn new(env: &Env, options: String, fns: Vec<JsonFn>, objects: Vec<ExternalRef<Shared>>) -> Result<Self> {
        let home = Home::of(env)?;
        let spawner: Spawner = Arc::new(move |f| {
            if home.here() {
                let _ = crate::dispatch::spawn_detached(home.env(), f);
            } else {
                let there = home.clone();
                home.run_there(Box::new(move || {
                    let _ = crate::dispatch::spawn_detached(there.env(), f);
                }));
            }
        });
        // The built-in HTTP, sent through the user's seam when it is in place.
        let own = crate::fetch_seam::event_loop_transport(env).unwrap_or_else(|| Arc::new(FetchTransport::shared()));
        let seam = SeamTransport::new(own);
        let seam_flag = seam.seam.clone();
        let seam: Arc<dyn Transport> = Arc::new(seam);
        let host = RuntimeHost {
            spawner,
            clock: Arc::new(SystemClock::new(crate::dispatch::runtime_handle())),
            transport: seam.clone(),
        };
        let opts =
            crate::options_doc::read(fns, objects, || RuntimeOptions::from_json(&options, host)).map_err(core_err)?;
        // Only a runtime on the built-in HTTP follows the seam.
        let follows = opts.transport.as_ref().is_some_and(|t| Arc::ptr_eq(t, &seam));
        let inner = AgentRuntime::new(opts);
        // On a durable store: the state a previous runtime left there, read before any verb.
        if let Some(rt) = crate::dispatch::runtime_handle() {
            inner.open_durable_on(&rt).map_err(core_err)?;
        }
        Ok(NativeRuntime { inner, seam: follows.then_some(seam_flag) })
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
        let budget = budget.as_deref().map(Budget::from_json).transpose().map_err(core_err)?;
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
        timeout_ms: Option<String>,
        by: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        // The JSON of `timeoutMs`, read as the client reads its own.
        let timeout = timeout_ms.as_deref().and_then(toolnexus_core::options::timeout_ms).map(|ms| ms as f64);
        let fut = self.inner.wait(h as HandleId, timeout, by.map(|b| b as HandleId));
        let rt = self.inner.clone();
        crate::dispatch::local_promise(env, async move {
            let r = fut.await;
            rt.saved().await;
            Ok(toolnexus_core::json::to_string(&r.to_value()))
        })
    }

    #[napi]
    pub fn interrupt(&self, h: u32) {
        self.inner.interrupt(h as HandleId)
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self, env: &Env, h: u32, force: bool, reason: Option<String>) -> Result<crate::dispatch::JsPromise> {
        let fut = self.inner.close(h as HandleId, force, reason);
        let rt = self.inner.clone();
        crate::dispatch::local_promise(env, async move {
            fut.await;
            rt.saved().await;
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

    /// Handle `h`'s fields (the core's `HandleFields`: the reference Handle's, in its order,
    /// handles as indexes), or `null` for an index never handed out.
    #[napi(ts_return_type = "Record<string, unknown> | null")]
    pub fn info<'env>(&self, env: &'env Env, h: u32) -> Result<Unknown<'env>> {
        env.to_js_value(&self.inner.fields(h as HandleId))
    }

    #[napi]
    pub fn state(&self, h: u32) -> Option<String> {
        self.inner.snapshot(h as HandleId).map(|s| s.state.as_str().to_string())
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn resume(&self, env: &Env, answer: String) -> Result<crate::dispatch::JsPromise> {
        let answer = parse_json(&answer, "resume")?;
        let rt = self.inner.clone();
        crate::dispatch::local_promise(env, async move {
            let r = rt.resume(answer).await.map_err(core_err);
            rt.saved().await;
            r
        })
    }

    /// One-shot run of `name` (spawn, wake, wait, close unless pending): the TaskResult as JSON.
    #[napi(js_name = "runAgent", ts_return_type = "Promise<string>")]
    pub fn run_agent(&self, env: &Env, name: String, prompt: String) -> Result<crate::dispatch::JsPromise> {
        let rt = self.inner.clone();
        crate::dispatch::local_promise(env, async move {
            let r = rt.run_agent(&name, &prompt).await;
            rt.saved().await;
            Ok(Crossed::of(r.to_value()))
        })
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
        let hb = Heartbeat { every_ms, prompt, silent, on_beat: Some(Arc::new(JsCallback(on_beat))) };
        NativeHeartbeat { stop: self.inner.start_heartbeat(h as HandleId, hb) }
    }
}
