//! Tracing: spans a host records (OpenTelemetry, in the Node binding), and the W3C trace
//! context carried on the requests made inside them.
//!
//! A host that wants spans runs a piece of work [`within`] a tracer. Spans are told to it in
//! batches, `{ op: "batch", events, want }`: each event is `{ op: "start", id, parent, name,
//! kind, attributes, at }` or `{ op: "end", id, attributes, error, at }`, in the order they
//! happened, `at` being the moment as `[seconds, nanoseconds]` since the Unix epoch. Ids are
//! this tracer's own; `parent: null` is the host's context where the work was started. A batch
//! goes to the host when a request is about to leave inside a span (it then names that span as
//! `want` and the host answers its propagation headers, e.g. `{ traceparent }`), when the
//! outermost span of a piece of work ends, or when many events wait; so a run crosses to the
//! host a few times, not twice per span. Without a tracer nothing is built and nothing crosses.
//!
//! Shared vocabulary: it imports nothing of the client, the toolkit or the tool sources.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::callback::SharedCallback;

/// Events waiting past this many are sent without waiting for a reason to.
const BATCH: usize = 256;

/// The host's span recorder, the ids it has handed out, and the events not told yet.
struct Tracer {
    sink: SharedCallback,
    next: AtomicU64,
    queue: Mutex<Vec<Value>>,
    /// Held while a batch is handed over, so batches reach the host in the order they were
    /// taken (a span's start always before its children's). Never held while waiting for the
    /// host's answer.
    lane: tokio::sync::Mutex<()>,
    /// A sender found the lane busy: whoever holds it sends again when done.
    again: AtomicBool,
}

impl Tracer {
    fn new(sink: SharedCallback) -> Arc<Tracer> {
        Arc::new(Tracer {
            sink,
            next: AtomicU64::new(1),
            queue: Mutex::new(Vec::new()),
            lane: tokio::sync::Mutex::new(()),
            again: AtomicBool::new(false),
        })
    }

    /// Queue an event; `true` when enough wait to be sent now.
    fn push(&self, ev: Value) -> bool {
        let mut q = self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        q.push(ev);
        q.len() >= BATCH
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Tell the host what waits, without waiting for it: now if the lane is free, else by
    /// whoever holds it, when it is done.
    fn send(&self) {
        self.again.store(true, Ordering::SeqCst);
        while self.again.load(Ordering::SeqCst) {
            let Ok(lane) = self.lane.try_lock() else { return };
            self.again.store(false, Ordering::SeqCst);
            let events = self.take();
            if !events.is_empty() {
                self.sink.notify_now(batch(events, None));
            }
            drop(lane);
        }
    }

    /// The propagation headers of span `open`, asking the host for them (with what waits)
    /// the first time.
    async fn headers_of(&self, open: &Open) -> Arc<[(String, String)]> {
        if let Some(h) = open.headers.get() {
            return h.clone();
        }
        let lane = self.lane.lock().await;
        let mut call = self.sink.call(batch(self.take(), Some(open.id)));
        // Started (handed to the host) while the lane is held; answered after it is let go.
        let first = futures::poll!(&mut call);
        drop(lane);
        if self.again.load(Ordering::SeqCst) {
            self.send();
        }
        let answer = match first {
            std::task::Poll::Ready(a) => a,
            std::task::Poll::Pending => call.await,
        };
        // A recorder that fails loses its span's context, never the work.
        let headers = header_list(&answer.unwrap_or(Value::Null));
        open.headers.get_or_init(|| headers).clone()
    }
}

fn batch(events: Vec<Value>, want: Option<u64>) -> Value {
    crate::json::obj([
        ("op", "batch".into()),
        ("events", Value::Array(events)),
        ("want", want.map_or(Value::Null, Value::from)),
    ])
}

/// Now, as `[seconds, nanoseconds]` since the Unix epoch (OpenTelemetry's HrTime).
fn now() -> Value {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Value::Array(vec![d.as_secs().into(), d.subsec_nanos().into()])
}

/// A span as the work inside it sees it: its id, and its headers once asked for.
struct Open {
    id: u64,
    headers: OnceLock<Arc<[(String, String)]>>,
}

impl Open {
    fn new(id: u64) -> Arc<Open> {
        Arc::new(Open { id, headers: OnceLock::new() })
    }
}

/// What the work being done now belongs to: the tracer, the innermost span, and where the
/// piece of work began.
#[derive(Clone)]
struct Scope {
    tracer: Arc<Tracer>,
    span: Option<Arc<Open>>,
    /// The span the piece of work was started under (its spans under it are its outermost).
    base: Option<u64>,
    /// The host's token for the context a piece of work was started in (see [`Tracing::run`]).
    root: Option<u64>,
}

impl Scope {
    fn of(tracer: Arc<Tracer>, parent: Option<u64>, root: Option<u64>) -> Scope {
        Scope { tracer, span: parent.map(Open::new), base: parent, root }
    }
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
        Tracing(Tracer::new(sink))
    }

    /// `work` recording its spans here, under the span `parent` (one of this recorder's, as
    /// [`current_span`] named it), or the host's context when `None`.
    pub fn within<F: Future>(&self, parent: Option<u64>, work: F) -> impl Future<Output = F::Output> {
        SCOPE.scope(Scope::of(self.0.clone(), parent, None), work)
    }

    /// `work` recording its spans here, its outermost ones under the host's context named by
    /// `root` (a token the host gave when the work was started, told with each such span).
    pub fn run<F: Future>(&self, root: u64, work: F) -> impl Future<Output = F::Output> {
        SCOPE.scope(Scope::of(self.0.clone(), None, Some(root)), work)
    }
}

/// The innermost span here, by its recorder's id.
pub fn current_span() -> Option<u64> {
    SCOPE.try_with(|s| s.span.as_ref().map(|o| o.id)).ok().flatten()
}

/// Run `work` recording its spans through `sink` (none: no spans, nothing crosses).
pub async fn within<F: Future>(sink: Option<SharedCallback>, work: F) -> F::Output {
    match sink {
        None => work.await,
        Some(sink) => SCOPE.scope(Scope::of(Tracer::new(sink), None, None), work).await,
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

/// Make the innermost span's propagation headers known here (asking the host, once), before
/// a request leaves: [`headers`] and [`inject`] read what this found.
pub async fn ready() {
    if let Some(s) = current() {
        if let Some(open) = &s.span {
            s.tracer.headers_of(open).await;
        }
    }
}

/// The headers that carry the innermost span to a peer (empty when none, or not [`ready`]).
pub fn headers() -> Vec<(String, String)> {
    SCOPE
        .try_with(|s| s.span.as_ref().and_then(|o| o.headers.get()).map(|h| h.to_vec()).unwrap_or_default())
        .unwrap_or_default()
}

/// Add the innermost span's propagation headers ([`ready`]) to `headers`, replacing any of
/// the same name.
pub fn inject(headers: &mut Vec<(String, String)>) {
    let _ = SCOPE.try_with(|s| {
        if let Some(h) = s.span.as_ref().and_then(|o| o.headers.get()) {
            put(h, headers);
        }
    });
}

fn put(from: &[(String, String)], headers: &mut Vec<(String, String)>) {
    for (k, v) in from {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
}

/// A span begun with [`start`]: ended by [`Span::end`], or as abandoned when dropped.
pub struct Span {
    tracer: Arc<Tracer>,
    open: Arc<Open>,
    base: Option<u64>,
    /// The outermost span of its piece of work: its end sends what waits.
    outermost: bool,
    attributes: Map<String, Value>,
    ended: bool,
}

/// Begin a span under the innermost one here; `None` when no tracer records spans.
pub async fn start(name: String, kind: Kind, attributes: Map<String, Value>) -> Option<Span> {
    begin(name, kind, attributes, None)
}

/// Begin a span continuing a peer's trace: `carrier` holds the headers its request came with
/// (`traceparent`, `tracestate`), which the host reads as the span's parent.
pub async fn start_remote(
    name: String,
    kind: Kind,
    attributes: Map<String, Value>,
    carrier: Map<String, Value>,
) -> Option<Span> {
    begin(name, kind, attributes, Some(carrier))
}

fn begin(
    name: String,
    kind: Kind,
    attributes: Map<String, Value>,
    carrier: Option<Map<String, Value>>,
) -> Option<Span> {
    let scope = current()?;
    let id = scope.tracer.next.fetch_add(1, Ordering::Relaxed);
    let parent = scope.span.as_ref().map(|o| o.id);
    let mut ev = Map::with_capacity(9);
    ev.insert("op".into(), "start".into());
    ev.insert("id".into(), id.into());
    ev.insert("parent".into(), parent.map_or(Value::Null, Value::from));
    ev.insert("name".into(), name.into());
    ev.insert("kind".into(), kind.name().into());
    ev.insert("attributes".into(), Value::Object(attributes));
    ev.insert("at".into(), now());
    if let Some(carrier) = carrier {
        ev.insert("carrier".into(), Value::Object(carrier));
    }
    if let (None, Some(root)) = (parent, scope.root) {
        ev.insert("root".into(), root.into());
    }
    if scope.tracer.push(Value::Object(ev)) {
        scope.tracer.send();
    }
    Some(Span {
        tracer: scope.tracer,
        open: Open::new(id),
        base: scope.base,
        outermost: parent == scope.base,
        attributes: Map::new(),
        ended: false,
    })
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
    /// Make this span's propagation headers known (asking the host, once), before a request
    /// leaves inside it.
    pub async fn ready(&self) {
        self.tracer.headers_of(&self.open).await;
    }

    /// The headers that carry this span to a peer (once [`Span::ready`]).
    pub fn headers(&self) -> &[(String, String)] {
        self.open.headers.get().map_or(&[], |h| h)
    }

    /// Add this span's propagation headers ([`Span::ready`]) to `headers`, replacing any of
    /// the same name.
    pub fn inject(&self, headers: &mut Vec<(String, String)>) {
        put(self.headers(), headers);
    }

    /// Record an attribute, sent when the span ends.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.attributes.insert(key.to_string(), value.into());
    }

    /// `work` with this span as the innermost one (the parent of spans begun inside it, and
    /// the context its requests carry).
    pub fn enter<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        let scope = Scope { tracer: self.tracer.clone(), span: Some(self.open.clone()), base: self.base, root: None };
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
            ("id", self.open.id.into()),
            ("attributes", Value::Object(std::mem::take(&mut self.attributes))),
            ("error", error.map_or(Value::Null, Value::from)),
            ("at", now()),
        ]);
        if self.tracer.push(ev) || self.outermost {
            self.tracer.send();
        }
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
    use super::{around, current_span, headers, inject, ready, start, within, Kind, Tracing, BATCH};
    use crate::callback::{callback, Callback};
    use serde_json::{json, Map, Value};
    use std::sync::{Arc, Mutex};

    /// A recorder that keeps every batch it is told or asked, and answers a wanted span with
    /// a traceparent naming its id.
    struct Recorder(Arc<Mutex<Vec<Value>>>);

    #[async_trait::async_trait]
    impl Callback for Recorder {
        async fn call(&self, batch: Value) -> crate::error::Result<Value> {
            let answer = json!({ "traceparent": format!("00-t-{}-01", batch["want"]) });
            self.0.lock().unwrap().push(batch);
            Ok(answer)
        }
        fn notify(&self, batch: Value) {
            self.0.lock().unwrap().push(batch);
        }
    }

    fn recorder() -> (crate::callback::SharedCallback, Arc<Mutex<Vec<Value>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (Arc::new(Recorder(seen.clone())), seen)
    }

    /// Every event told so far, in order.
    fn events(seen: &Arc<Mutex<Vec<Value>>>) -> Vec<Value> {
        seen.lock().unwrap().iter().flat_map(|b| b["events"].as_array().cloned().unwrap_or_default()).collect()
    }

    #[tokio::test]
    async fn nothing_is_recorded_without_a_tracer() {
        assert!(start("x".into(), Kind::Internal, Map::new()).await.is_none());
        ready().await;
        assert!(headers().is_empty());
    }

    #[tokio::test]
    async fn spans_nest_and_carry_their_headers_once_asked_for() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            let outer = start("outer".into(), Kind::Internal, Map::new()).await.unwrap();
            outer
                .enter(async {
                    assert!(headers().is_empty(), "nothing asked yet");
                    ready().await;
                    assert_eq!(headers(), vec![("traceparent".to_string(), "00-t-1-01".to_string())]);
                    let mut inner = start("inner".into(), Kind::Client, Map::new()).await.unwrap();
                    inner.ready().await;
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
        let batches = seen.lock().unwrap().clone();
        // Asked for the outer span (with its start), then the inner one, then told the ends.
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[0]["want"], 1);
        assert_eq!(batches[1]["want"], 2);
        assert_eq!(batches[2]["want"], Value::Null);
        let ev = events(&seen);
        assert_eq!(ev.iter().map(|e| e["op"].as_str().unwrap()).collect::<Vec<_>>(), ["start", "start", "end", "end"]);
        assert_eq!(ev[0]["parent"], Value::Null);
        assert_eq!(ev[1]["parent"], json!(1));
        assert_eq!(ev[1]["kind"], "client");
        assert_eq!(ev[2]["id"], 2);
        assert_eq!(ev[2]["attributes"], json!({"k": 3}));
        assert_eq!(ev[2]["error"], "boom");
        assert_eq!(ev[3]["error"], Value::Null);
        // Times are [seconds, nanoseconds] since the epoch, in order.
        let at = |e: &Value| (e["at"][0].as_u64().unwrap(), e["at"][1].as_u64().unwrap());
        assert!(at(&ev[0]).0 > 1_600_000_000);
        assert!(at(&ev[0]) <= at(&ev[1]) && at(&ev[1]) <= at(&ev[2]) && at(&ev[2]) <= at(&ev[3]));
    }

    #[tokio::test]
    async fn spans_wait_until_the_outermost_one_ends() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            let outer = start("outer".into(), Kind::Internal, Map::new()).await.unwrap();
            outer
                .enter(async {
                    for _ in 0..3 {
                        start("step".into(), Kind::Internal, Map::new()).await.unwrap().end(None);
                    }
                })
                .await;
            assert!(seen.lock().unwrap().is_empty(), "nothing crosses while the work goes on");
            outer.end(None);
            assert_eq!(seen.lock().unwrap().len(), 1, "one batch at the end");
        })
        .await;
        assert_eq!(events(&seen).len(), 8);
    }

    #[tokio::test]
    async fn many_waiting_events_are_sent_without_waiting_for_the_end() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            let outer = start("outer".into(), Kind::Internal, Map::new()).await.unwrap();
            outer
                .enter(async {
                    for _ in 0..BATCH {
                        start("step".into(), Kind::Internal, Map::new()).await.unwrap().end(None);
                    }
                })
                .await;
            assert!(!seen.lock().unwrap().is_empty());
            outer.end(None);
        })
        .await;
        assert_eq!(events(&seen).len(), 2 * BATCH + 2);
    }

    #[tokio::test]
    async fn a_runtime_turn_under_a_span_of_another_sends_at_its_own_end() {
        let (cb, seen) = recorder();
        let tracing = Tracing::new(cb);
        let parent = tracing
            .within(None, async {
                let s = start("task".into(), Kind::Internal, Map::new()).await.unwrap();
                let id = s.enter(async { current_span() }).await;
                s.end(None);
                id
            })
            .await;
        let before = seen.lock().unwrap().len();
        tracing
            .within(parent, async {
                start("turn".into(), Kind::Internal, Map::new()).await.unwrap().end(None);
            })
            .await;
        assert_eq!(seen.lock().unwrap().len(), before + 1);
        assert_eq!(events(&seen).last().unwrap()["op"], "end");
        assert_eq!(events(&seen)[2]["parent"], json!(1));
    }

    #[tokio::test]
    async fn parallel_askers_get_their_own_headers_after_their_starts() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            let outer = start("outer".into(), Kind::Internal, Map::new()).await.unwrap();
            outer
                .enter(async {
                    let a = start("a".into(), Kind::Internal, Map::new()).await.unwrap();
                    let b = start("b".into(), Kind::Internal, Map::new()).await.unwrap();
                    let (ha, hb) = futures::join!(
                        a.enter(async {
                            ready().await;
                            headers()
                        }),
                        b.enter(async {
                            ready().await;
                            headers()
                        })
                    );
                    assert_eq!(ha[0].1, "00-t-2-01");
                    assert_eq!(hb[0].1, "00-t-3-01");
                })
                .await;
        })
        .await;
        // Every span was told (started) before or with the batch that asked for it.
        let batches = seen.lock().unwrap().clone();
        let mut started = Vec::new();
        for b in &batches {
            for e in b["events"].as_array().unwrap() {
                if e["op"] == "start" {
                    started.push(e["id"].clone());
                }
            }
            if !b["want"].is_null() {
                assert!(started.contains(&b["want"]), "{b}");
            }
        }
    }

    #[tokio::test]
    async fn a_dropped_span_ends_as_cancelled_and_a_failing_recorder_is_ignored() {
        let (cb, seen) = recorder();
        within(Some(cb), async {
            drop(start("gone".into(), Kind::Internal, Map::new()).await);
        })
        .await;
        assert_eq!(events(&seen)[1]["error"], "cancelled");
        let failing = callback(|_| async { Err(crate::error::Error::Invalid("recorder broke".into())) });
        let out: Result<u8, String> = within(Some(failing), async {
            let span = start("s".into(), Kind::Internal, Map::new()).await;
            if let Some(s) = &span {
                s.ready().await;
                assert!(s.headers().is_empty());
            }
            around(span, async { Ok(7) }).await
        })
        .await;
        assert_eq!(out, Ok(7));
        let mut h = Vec::new();
        inject(&mut h);
        assert!(h.is_empty());
    }
}
