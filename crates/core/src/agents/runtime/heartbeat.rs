//! A persona's own clock (§7E): every `every_ms` a tick lands in its inbox (ticks coalesce
//! there) and, when it is idle, a heartbeat turn runs; a reply carrying the silent marker is
//! dropped, a substantive one goes to `on_beat`.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use futures::FutureExt;
use serde_json::Value;

use super::clock::TimerCancel;
use super::core::{AgentRuntime, Inner};
use super::types::{HandleId, HandleState, InboxItem};
use crate::callback::SharedCallback;

/// What a heartbeat needs besides its handle.
pub struct Heartbeat {
    pub every_ms: f64,
    /// The turn's prompt.
    pub prompt: String,
    /// A reply containing this is silent.
    pub silent: String,
    /// Called with each substantive reply's text.
    pub on_beat: Option<SharedCallback>,
}

struct Beating {
    inner: Weak<Inner>,
    h: HandleId,
    hb: Heartbeat,
    /// The live timer; `None` once stopped.
    cancel: Mutex<Option<TimerCancel>>,
    stopped: std::sync::atomic::AtomicBool,
}

/// Stops a heartbeat: no tick after it, the pending timer cancelled.
#[derive(Clone)]
pub struct HeartbeatStop(Arc<Beating>);

impl HeartbeatStop {
    pub fn stop(&self) {
        self.0.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        let cancel = self.0.cancel.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(c) = cancel {
            c();
        }
    }
}

impl AgentRuntime {
    /// Give handle `h` its own clock.
    pub fn start_heartbeat(&self, h: HandleId, hb: Heartbeat) -> HeartbeatStop {
        let beating = Arc::new(Beating {
            inner: Arc::downgrade(&self.inner),
            h,
            hb,
            cancel: Mutex::new(None),
            stopped: std::sync::atomic::AtomicBool::new(false),
        });
        schedule(&beating);
        HeartbeatStop(beating)
    }
}

fn schedule(b: &Arc<Beating>) {
    let Some(inner) = b.inner.upgrade() else { return };
    if b.stopped.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let next = b.clone();
    let cancel = inner.clock.set_timeout(b.hb.every_ms, Box::new(move || beat(&next)));
    *b.cancel.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel);
}

fn beat(b: &Arc<Beating>) {
    let Some(inner) = b.inner.upgrade() else { return };
    if b.stopped.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let rt = AgentRuntime { inner: inner.clone() };
    let tick = InboxItem { from: "clock".into(), channel: "timer".into(), text: "tick".into() };
    let _ = rt.post(b.h, tick);
    let idle = rt.snapshot(b.h).is_some_and(|s| s.state == HandleState::Idle);
    if idle && rt.wake(b.h, Some(b.hb.prompt.clone())).is_ok() {
        let waiting = rt.wait(b.h, None, None);
        let (silent, on_beat) = (b.hb.silent.clone(), b.hb.on_beat.clone());
        (inner.spawner)(
            async move {
                let r = waiting.await;
                if !r.is_error && !r.text.contains(&silent) {
                    if let Some(cb) = on_beat {
                        let _ = cb.call(Value::String(r.text)).await;
                    }
                }
            }
            .boxed(),
        );
    }
    schedule(b);
}
