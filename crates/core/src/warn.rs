//! Warnings for the user: the `[toolnexus] …` lines the reference prints with `console.warn`.
//!
//! A host routes them where its users expect them (the Node binding hands them to
//! `console.warn`, so they can be silenced, captured or redirected like any other warning).
//! The sink is found from where the warning is raised: the task doing the work (set with
//! `scope`, carried across `spawn_blocking` and the runtime by `carry` / `carry_blocking`), else
//! the thread's own sink (the host's event-loop thread), else standard error.
//!
//! A client, toolkit, server or agent runtime given a `logger` carries its own sink and scopes
//! the work it does with it ([`scope_with`], [`within`]): the innermost owner with a sink wins,
//! so a toolkit's tools warn to the toolkit's logger even inside another client's run, and an
//! owner without one leaves its caller's sink in place.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::callback::SharedCallback;

/// Where warnings go.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

tokio::task_local! {
    static TASK: Option<Sink>;
}

thread_local! {
    static THREAD: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Print one warning line.
pub fn warn(text: &str) {
    match current() {
        Some(sink) => sink(text),
        None => eprintln!("{text}"),
    }
}

/// The sink a warning raised here would go to.
pub fn current() -> Option<Sink> {
    if let Ok(task) = TASK.try_with(Clone::clone) {
        if task.is_some() {
            return task;
        }
    }
    THREAD.try_with(|t| t.borrow().clone()).ok().flatten()
}

/// The sink of warnings raised on this thread outside any `scope` (for a host's own thread).
pub fn set_thread_sink(sink: Option<Sink>) {
    let _ = THREAD.try_with(|t| *t.borrow_mut() = sink);
}

/// Run `work` with its warnings going to `sink`.
pub fn scope<F: Future>(sink: Option<Sink>, work: F) -> impl Future<Output = F::Output> {
    TASK.scope(sink, work)
}

/// Run `work` with its warnings going to `sink` when there is one, else to the caller's sink
/// (read now, so it holds wherever `work` is polled): an owner's `logger`, if it has one.
pub fn scope_with<F: Future>(sink: Option<&Sink>, work: F) -> impl Future<Output = F::Output> {
    scope(sink.cloned().or_else(current), work)
}

/// Run `f` (synchronously) with its warnings going to `sink` when there is one.
pub fn within<R>(sink: Option<&Sink>, f: impl FnOnce() -> R) -> R {
    match sink {
        Some(sink) => TASK.sync_scope(Some(sink.clone()), f),
        None => f(),
    }
}

/// A host's logger (a callback told each warning's text, as a JSON string) as a sink: told
/// without waiting (`Callback::notify_now`), so a warning never blocks or fails the work that
/// raised it, and whatever the callback does with it (a throw included) stays the host's.
pub fn callback_sink(logger: SharedCallback) -> Sink {
    Arc::new(move |text: &str| logger.notify_now(Value::String(text.to_string())))
}

/// `work`, keeping the caller's sink when it runs elsewhere (another task, the runtime).
pub fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    scope(current(), work)
}

/// `f`, keeping the caller's sink when it runs on another thread (the blocking pool).
pub fn carry_blocking<R>(f: impl FnOnce() -> R) -> impl FnOnce() -> R {
    let sink = current();
    move || {
        let previous = THREAD.try_with(|t| std::mem::replace(&mut *t.borrow_mut(), sink)).ok().flatten();
        let out = f();
        let _ = THREAD.try_with(|t| *t.borrow_mut() = previous);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn collector() -> (Sink, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let sink: Sink = Arc::new(move |t: &str| into.lock().unwrap_or_else(|p| p.into_inner()).push(t.to_string()));
        (sink, seen)
    }

    fn taken(seen: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()))
    }

    #[tokio::test]
    async fn a_task_scope_wins_over_the_thread_sink_and_is_carried_to_the_blocking_pool_and_the_runtime() {
        let (thread_sink, on_thread) = collector();
        let (task_sink, in_task) = collector();
        set_thread_sink(Some(thread_sink));
        warn("on the thread");
        scope(Some(task_sink), async {
            warn("in the task");
            tokio::task::spawn_blocking(carry_blocking(|| warn("in the blocking pool"))).await.ok();
            tokio::spawn(carry(async { warn("in another task") })).await.ok();
        })
        .await;
        set_thread_sink(None);
        assert_eq!(taken(&on_thread), ["on the thread"]);
        assert_eq!(taken(&in_task), ["in the task", "in the blocking pool", "in another task"]);
    }

    #[tokio::test]
    async fn an_owners_sink_wins_and_an_owner_without_one_keeps_its_callers() {
        let (client, by_client) = collector();
        let (toolkit, by_toolkit) = collector();
        scope_with(Some(&client), async {
            warn("the run");
            // A toolkit with its own logger: its work warns there, even inside the run.
            scope_with(Some(&toolkit), async { warn("the toolkit's tool") }).await;
            within(Some(&toolkit), || warn("a duplicate the toolkit registered"));
            // A toolkit without one: its work warns to the run's.
            scope_with(None, async { warn("a plain toolkit's tool") }).await;
            within(None, || warn("a plain register"));
            // Work the toolkit sends to the runtime keeps the toolkit's sink.
            scope_with(Some(&toolkit), async {
                tokio::spawn(carry(async { warn("carried") })).await.ok();
            })
            .await;
        })
        .await;
        assert_eq!(taken(&by_client), ["the run", "a plain toolkit's tool", "a plain register"]);
        assert_eq!(taken(&by_toolkit), ["the toolkit's tool", "a duplicate the toolkit registered", "carried"]);
    }

    #[tokio::test]
    async fn two_owners_at_once_do_not_cross() {
        let (a, by_a) = collector();
        let (b, by_b) = collector();
        let run = |sink: Sink, name: &'static str| {
            tokio::spawn(scope_with(Some(&sink), async move {
                for i in 0..20 {
                    warn(&format!("{name} {i}"));
                    tokio::task::yield_now().await;
                }
            }))
        };
        let (ra, rb) = (run(a, "a"), run(b, "b"));
        ra.await.ok();
        rb.await.ok();
        let (seen_a, seen_b) = (taken(&by_a), taken(&by_b));
        assert_eq!(seen_a.len(), 20);
        assert_eq!(seen_b.len(), 20);
        assert!(seen_a.iter().all(|t| t.starts_with("a ")) && seen_b.iter().all(|t| t.starts_with("b ")));
    }

    #[test]
    fn a_callback_logger_is_told_the_text_without_being_awaited() {
        use crate::callback::Callback;
        struct Told(Mutex<Vec<Value>>);
        #[async_trait::async_trait]
        impl Callback for Told {
            async fn call(&self, _: Value) -> crate::error::Result<Value> {
                Err(crate::error::Error::Invalid("a logger is never awaited".into()))
            }
            fn notify(&self, arg: Value) {
                self.0.lock().unwrap_or_else(|p| p.into_inner()).push(arg);
            }
        }
        let told = Arc::new(Told(Mutex::new(Vec::new())));
        let sink = callback_sink(told.clone());
        within(Some(&sink), || warn("[toolnexus] something"));
        assert_eq!(*told.0.lock().unwrap_or_else(|p| p.into_inner()), [Value::String("[toolnexus] something".into())]);
    }
}
