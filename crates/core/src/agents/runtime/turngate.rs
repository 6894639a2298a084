//! The global turn gate (gate 3): a cap on LLM calls in flight across the whole tree.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

// ---- the turn gate (gate 3) ------------------------------------------------------------

#[derive(Default)]
struct GateState {
    free: f64,
    queue: VecDeque<oneshot::Sender<Permit>>,
}

/// The global cap on LLM calls in flight. A permit is released when dropped, so a turn that
/// dies (aborted, closed) gives its slot back; a released slot goes to the next waiter.
#[derive(Clone)]
pub(crate) struct TurnGate(Arc<Mutex<GateState>>);

pub(super) struct Permit {
    gate: Option<TurnGate>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(g) = self.gate.take() {
            g.release();
        }
    }
}

impl TurnGate {
    pub fn new(slots: f64) -> Self {
        TurnGate(Arc::new(Mutex::new(GateState { free: slots, queue: VecDeque::new() })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) async fn acquire(&self) -> Permit {
        let rx = {
            let mut s = self.state();
            if s.free >= 1.0 {
                s.free -= 1.0;
                return Permit { gate: Some(self.clone()) };
            }
            let (tx, rx) = oneshot::channel();
            s.queue.push_back(tx);
            rx
        };
        match rx.await {
            Ok(p) => p,
            // The gate went away with the runtime: nothing left to bound.
            Err(_) => Permit { gate: None },
        }
    }

    /// Hand the slot to the next live waiter, or free it.
    fn release(&self) {
        loop {
            let next = {
                let mut s = self.state();
                match s.queue.pop_front() {
                    Some(tx) => tx,
                    None => {
                        s.free += 1.0;
                        return;
                    }
                }
            };
            match next.send(Permit { gate: Some(self.clone()) }) {
                Ok(()) => return,
                // That waiter is gone: take the permit back without releasing it again.
                Err(mut p) => p.gate = None,
            }
        }
    }
}
