//! Warnings for the user: the `[toolnexus] …` lines the reference prints with `console.warn`.
//!
//! A host routes them where its users expect them (the Node binding hands them to
//! `console.warn`, so they can be silenced, captured or redirected like any other warning).
//! The sink is found from where the warning is raised: the task doing the work (set with
//! `scope`, carried across `spawn_blocking` and the runtime by `carry` / `carry_blocking`), else
//! the thread's own sink (the host's event-loop thread), else standard error.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

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
}
