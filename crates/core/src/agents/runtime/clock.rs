//! Time for the runtime: every timer, timeout and deadline goes through a `Clock`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Cancels a timer that has not fired yet; a no-op after it fired.
pub type TimerCancel = Box<dyn FnOnce() + Send>;

/// What fires when a timer is due.
pub type TimerFn = Box<dyn FnOnce() + Send>;

/// An injectable time source.
pub trait Clock: Send + Sync {
    /// Milliseconds (since the epoch, or virtual).
    fn now(&self) -> f64;
    /// Run `fire` after `ms`; the returned function cancels it.
    fn set_timeout(&self, ms: f64, fire: TimerFn) -> TimerCancel;
}

/// The real clock: timers on a tokio runtime, so they never hold the host's process up.
pub struct SystemClock {
    rt: Option<tokio::runtime::Handle>,
}

impl SystemClock {
    /// Timers run on `rt`, or on the runtime current at construction.
    pub fn new(rt: Option<tokio::runtime::Handle>) -> Self {
        SystemClock { rt: rt.or_else(|| tokio::runtime::Handle::try_current().ok()) }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as f64).unwrap_or(0.0)
    }

    fn set_timeout(&self, ms: f64, fire: TimerFn) -> TimerCancel {
        let Some(rt) = &self.rt else {
            return Box::new(|| {});
        };
        let wait = Duration::from_millis(if ms.is_finite() && ms > 0.0 { ms as u64 } else { 0 });
        let task = rt.spawn(async move {
            tokio::time::sleep(wait).await;
            fire();
        });
        Box::new(move || task.abort())
    }
}

#[derive(Default)]
struct Timers {
    seq: u64,
    /// (due, sequence) → what fires; the sequence keeps timers due together in order.
    due: BTreeMap<(u64, u64), TimerFn>,
}

/// A clock that moves only when told to: deterministic tests and fixture replays.
#[derive(Clone, Default)]
pub struct VirtualClock {
    now: Arc<Mutex<f64>>,
    timers: Arc<Mutex<Timers>>,
}

fn key_of(t: f64) -> u64 {
    if t.is_finite() && t > 0.0 {
        t as u64
    } else {
        0
    }
}

impl VirtualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Move time forward by `ms`, firing every timer that falls due, in order.
    pub fn advance(&self, ms: f64) {
        let target = self.now() + ms;
        loop {
            let next = {
                let mut t = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
                match t.due.keys().next().copied() {
                    Some(k) if k.0 <= key_of(target) => t.due.remove(&k).map(|f| (k.0, f)),
                    _ => None,
                }
            };
            let Some((due, fire)) = next else { break };
            *self.now.lock().unwrap_or_else(PoisonError::into_inner) = due as f64;
            fire();
        }
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = target;
    }

    /// Timers not yet fired.
    pub fn pending(&self) -> usize {
        self.timers.lock().unwrap_or_else(PoisonError::into_inner).due.len()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> f64 {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_timeout(&self, ms: f64, fire: TimerFn) -> TimerCancel {
        let due = key_of(self.now() + ms.max(0.0));
        let key = {
            let mut t = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
            t.seq += 1;
            let key = (due, t.seq);
            t.due.insert(key, fire);
            key
        };
        let timers = self.timers.clone();
        Box::new(move || {
            timers.lock().unwrap_or_else(PoisonError::into_inner).due.remove(&key);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn a_virtual_clock_fires_in_order_and_cancels() {
        let c = VirtualClock::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        for (ms, name) in [(30.0, "c"), (10.0, "a"), (20.0, "b")] {
            let log = log.clone();
            let _keep = c.set_timeout(ms, Box::new(move || log.lock().unwrap().push(name)));
        }
        let fired = Arc::new(AtomicU32::new(0));
        let f = fired.clone();
        let cancel = c.set_timeout(
            15.0,
            Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
            }),
        );
        cancel();
        c.advance(25.0);
        assert_eq!(*log.lock().unwrap(), vec!["a", "b"]);
        assert_eq!(c.now(), 25.0);
        c.advance(10.0);
        assert_eq!(*log.lock().unwrap(), vec!["a", "b", "c"]);
        assert_eq!(fired.load(Ordering::SeqCst), 0);
        assert_eq!(c.pending(), 0);
    }
}
