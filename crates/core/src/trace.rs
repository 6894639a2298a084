//! Tracing: spans a host records (OpenTelemetry, in the Node binding), and the W3C trace
//! context carried on the requests made inside them.
//!
//! A host that wants spans runs a piece of work [`within`] a tracer: a callback told
//! `{ op: "start", id, parent, name, kind, attributes }` when a span begins (it answers the
//! headers that carry the span to a peer, e.g. `{ traceparent }`, or `null`) and
//! `{ op: "end", id, attributes, error }` when it ends (told, never awaited). Ids are this
//! tracer's own; `parent: null` is the host's context where the work was started.
//! Without a tracer nothing is built and nothing crosses.
//!
//! Shared vocabulary: it imports nothing of the client, the toolkit or the tool sources.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::callback::SharedCallback;

/// The host's span recorder, and the ids it has handed out.
struct Tracer {
    sink: SharedCallback,
    next: AtomicU64,
}

/// What the work being done now belongs to: the tracer, the innermost span, and that span's
/// propagation headers.
#[derive(Clone)]
struct Scope {
    tracer: Arc<Tracer>,
    span: Option<u64>,
    headers: Arc<[(String, String)]>,
    /// The host's token for the context a piece of work was started in (see [`Tracing::run`]).
    root: Option<u64>,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// What a span stands for, as OpenTelemetry names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Client,
    Server,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Internal => "internal",
            Kind::Client => "client",
            Kind::Server => "server",
        }
    }
}

/// A recorder kept across many pieces of work (an agent runtime's turns): their spans share
/// one id space, so a span of one can be the parent of another's.
#[derive(Clone)]
pub struct Tracing(Arc<Tracer>);

impl Tracing {
    pub fn new(sink: SharedCallback) -> Tracing {
        Tracing(Arc::new(Tracer { sink, next: AtomicU64::new(1) }))
    }

    /// `work` recording its spans here, under the span `parent` (one of this recorder's, as
    /// [`current_span`] named it), or the host's context when `None`.
    pub fn within<F: Future>(&self, parent: Option<u64>, work: F) -> impl Future<Output = F::Output> {
        SCOPE.scope(Scope { tracer: self.0.clone(), span: parent, headers: Arc::from(Vec::new()), root: None }, work)
    }

    /// `work` recording its spans here, its outermost ones under the host's context named by
    /// `root` (a token the host gave when the work was started, told with each such span).
    pub fn run<F: Future>(&self, root: u64, work: F) -> impl Future<Output = F::Output> {
        SCOPE
            .scope(Scope { tracer: self.0.clone(), span: None, headers: Arc::from(Vec::new()), root: Some(root) }, work)
    }
}

/// The innermost span here, by its recorder's id.
pub fn current_span() -> Option<u64> {
    SCOPE.try_with(|s| s.span).ok().flatten()
}

/// Run `work` recording its spans through `sink` (none: no spans, nothing crosses).
pub async fn within<F: Future>(sink: Option<SharedCallback>, work: F) -> F::Output {
    match sink {
        None => work.await,
        Some(sink) => {
            let tracer = Arc::new(Tracer { sink, next: AtomicU64::new(1) });
            SCOPE.scope(Scope { tracer, span: None, headers: Arc::from(Vec::new()), root: None }, work).await
        }
    }
}

fn current() -> Option<Scope> {
    SCOPE.try_with(Clone::clone).ok()
}

/// `work`, keeping the caller's tracer and span when it runs elsewhere (another task, the
/// runtime).
pub fn carry<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let scope = current();
    async move {
        match scope {
            Some(s) => SCOPE.scope(s, work).await,
            None => work.await,
        }
    }
}

/// Whether spans are being recorded here.
pub fn active() -> bool {
    SCOPE.try_with(|_| ()).is_ok()
}

/// The headers that carry the innermost span to a peer (empty when none).
pub fn headers() -> Vec<(String, String)> {
    SCOPE.try_with(|s| s.headers.to_vec()).unwrap_or_default()
}

/// Add the innermost span's propagation headers to `headers`, replacing any of the same name.
pub fn inject(headers: &mut Vec<(String, String)>) {
    let _ = SCOPE.try_with(|s| {
        for (k, v) in s.headers.iter() {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
    });
}

/// A span begun with [`start`]: ended by [`Span::end`], or as abandoned when dropped.
pub struct Span {
    tracer: Arc<Tracer>,
    id: u64,
    headers: Arc<[(String, String)]>,
    attributes: Map<String, Value>,
    ended: bool,
}

/// Begin a span under the innermost one here; `None` when no tracer records spans.
pub async fn start(name: String, kind: Kind, attributes: Map<String, Value>) -> Option<Span> {
    begin(name, kind, attributes, None).await
}

/// Begin a span continuing a peer's trace: `carrier` holds the headers its request came with
/// (`traceparent`, `tracestate`), which the host reads as the span's parent.
pub async fn start_remote(
    name: String,
    kind: Kind,
    attributes: Map<String, Value>,
    carrier: Map<String, Value>,
) -> Option<Span> {
    begin(name, kind, attributes, Some(carrier)).await
}

async fn begin(
    name: String,
    kind: Kind,
    attributes: Map<String, Value>,
    carrier: Option<Map<String, Value>>,
) -> Option<Span> {
    let scope = current()?;
    let id = scope.tracer.next.fetch_add(1, Ordering::Relaxed);
    let mut ev = crate::json::obj([
        ("op", "start".into()),
        ("id", id.into()),
        ("parent", scope.span.map_or(Value::Null, Value::from)),
        ("name", name.into()),
        ("kind", kind.name().into()),
        ("attributes", Value::Object(attributes)),
    ]);
    if let Value::Object(m) = &mut ev {
        if let Some(carrier) = carrier {
            m.insert("carrier".into(), Value::Object(carrier));
        }
        if let (None, Some(root)) = (scope.span, scope.root) {
            m.insert("root".into(), root.into());
        }
    }
    // A recorder that fails loses its span's context, never the work.
    let answer = scope.tracer.sink.call(ev).await.unwrap_or(Value::Null);
    Some(Span { tracer: scope.tracer, id, headers: header_list(&answer), attributes: Map::new(), ended: false })
}

/// The string fields of the recorder's answer, as headers.
fn header_list(answer: &Value) -> Arc<[(String, String)]> {
    match answer {
        Value::Object(m) => {
            m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect::<Vec<_>>().into()
        }
        _ => Arc::from(Vec::new()),
    }
}

impl Span {
    /// The headers that carry this span to a peer.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Add this span's propagation headers to `headers`, replacing any of the same name.
    pub fn inject(&self, headers: &mut Vec<(String, String)>) {
        for (k, v) in self.headers.iter() {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
    }

    /// Record an attribute, sent when the span ends.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.attributes.insert(key.to_string(), value.into());
    }

    /// `work` with this span as the innermost one (the parent of spans begun inside it, and
    /// the context its requests carry).
    pub fn enter<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        let scope =
            Scope { tracer: self.tracer.clone(), span: Some(self.id), headers: self.headers.clone(), root: None };
        SCOPE.scope(scope, work)
    }

    /// End the span; `error` marks it failed with that description.
    pub fn end(mut self, error: Option<&str>) {
        self.finish(error);
    }

    fn finish(&mut self, error: Option<&str>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let ev = crate::json::obj([
            ("op", "end".into()),
            ("id", self.id.into()),
            ("attributes", Value::Object(std::mem::take(&mut self.attributes))),
            ("error", error.map_or(Value::Null, Value::from)),
        ]);
        self.tracer.sink.notify_now(ev);
    }
}

impl Drop for Span {
    /// Work dropped midway (an abort, a consumer that stopped) still closes its span.
    fn drop(&mut self) {
        self.finish(Some("cancelled"));
    }
}

/// A span that ends with the outcome of `work`: the error's text when it fails.
pub async fn around<T, E: std::fmt::Display, F: Future<Output = Result<T, E>>>(
    span: Option<Span>,
    work: F,
) -> Result<T, E> {
    match span {
        None => work.await,
        Some(span) => {
            let out = span.enter(work).await;
            match &out {
                Ok(_) => span.end(None),
                Err(e) => span.end(Some(&e.to_string())),
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{around, headers, inject, start, within, Kind};
    use crate::callback::{callback, Callback};
    use serde_json::{json, Map, Value};
    use std::sync::{Arc, Mutex};

    /// A recorder that keeps every event (told or asked) and answers a start with a
    /// traceparent naming the span's id.
    struct Recorder(Arc<Mutex<Vec<Value>>>);

    #[async_trait::async_trait]
    impl Callback for Recorder {
        async fn call(&self, ev: Value) -> crate::error::Result<Value> {
            let answer = json!({ "traceparent": format!("00-t-{}-01", ev["id"]) });
            self.0.lock().unwrap().push(ev);
            Ok(answer)
        }
        fn notify(&self, ev: Value) {
            self.0.lock().unwrap().push(ev);
        }
    }

    fn recorder() -> (crate::callback::SharedCallback, Arc<Mutex<Vec<Value>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (Arc::new(Recorder(seen.clone())), seen)
    }

    #[tokio::test]
    async fn nothing_is_recorded_without_a_tracer() {
        assert!(start("x".into(), Kind::Internal, Map::new()).await.is_none());
        assert!(headers().is_empty());
    }

    #[tokio::test]
    async fn spans_nest_and_carry_their_headers() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            let outer = start("outer".into(), Kind::Internal, Map::new()).await.unwrap();
            outer
                .enter(async {
                    assert_eq!(headers(), vec![("traceparent".to_string(), "00-t-1-01".to_string())]);
                    let mut inner = start("inner".into(), Kind::Client, Map::new()).await.unwrap();
                    let mut h = vec![("TraceParent".to_string(), "old".to_string()), ("a".into(), "b".into())];
                    inner.inject(&mut h);
                    assert_eq!(h[1], ("traceparent".to_string(), "00-t-2-01".to_string()));
                    assert_eq!(h.len(), 2);
                    inner.set("k", 3);
                    inner.end(Some("boom"));
                })
                .await;
            outer.end(None);
        })
        .await;
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0]["parent"], Value::Null);
        assert_eq!(seen[1]["parent"], json!(1));
        assert_eq!(seen[1]["kind"], "client");
        assert_eq!(seen[2], json!({"op": "end", "id": 2, "attributes": {"k": 3}, "error": "boom"}));
        assert_eq!(seen[3]["error"], Value::Null);
    }

    #[tokio::test]
    async fn a_dropped_span_ends_as_cancelled_and_a_failing_recorder_is_ignored() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            drop(start("gone".into(), Kind::Internal, Map::new()).await);
        })
        .await;
        assert_eq!(seen.lock().unwrap()[1]["error"], "cancelled");
        let failing = callback(|_| async { Err(crate::error::Error::Invalid("recorder broke".into())) });
        let out: Result<u8, String> = within(Some(failing), async {
            let span = start("s".into(), Kind::Internal, Map::new()).await;
            assert!(span.as_ref().is_some_and(|s| s.headers().is_empty()));
            around(span, async { Ok(7) }).await
        })
        .await;
        assert_eq!(out, Ok(7));
        let mut h = Vec::new();
        inject(&mut h);
        assert!(h.is_empty());
    }
}
