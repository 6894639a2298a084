//! The event streams a `tools/call` answers with, kept so a client can resume them (SEP-1699):
//! each stream opens with a priming event (an id, a `retry`, no data), every message has an id
//! (`<stream>-<n>`), and a client that lost the stream, or whose stream the server closed
//! (`ctx.closeStream()`), GETs `/mcp` with `Last-Event-ID` and gets what followed that event,
//! then the rest as it comes. A stream is found only by the client that opened it (the same
//! address, credentials and session), and is forgotten a while after its call ended.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::serve::mcp_wire::plain;

/// A response body (the same type as `serve::Body`).
type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// How long a client waits before it reconnects (the priming event's `retry`).
pub const RETRY_MS: u64 = 1000;
/// How long a stream is kept after its call ended, for a client to resume it.
pub const KEEP_AFTER_END: Duration = Duration::from_secs(300);
/// The most streams kept at once; beyond it the oldest ended ones go first.
pub const MAX_STREAMS: usize = 4096;

/// What a stream has carried so far.
#[derive(Default)]
struct State {
    /// The messages' JSON, in order: event `n` (from 1) is `events[n - 1]`.
    events: Vec<String>,
    /// Where the server closed the stream: the readers that started before such a point end
    /// there.
    closes: Vec<usize>,
    /// Whether the call has ended (its answer is the last event).
    done: bool,
}

/// One call's event stream.
pub struct Log {
    id: String,
    owner: String,
    state: Mutex<State>,
    /// Bumped at each change, for the readers to wake up.
    changed: watch::Sender<u64>,
}

impl Log {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Add a message (`last`: the call's answer).
    pub fn push(&self, message: &Value, last: bool) {
        {
            let mut s = self.lock();
            s.events.push(message.to_string());
            s.done |= last;
        }
        self.bump();
    }

    /// Close the stream now: its readers end after what was sent so far.
    pub fn close(&self) {
        {
            let mut s = self.lock();
            let at = s.events.len();
            s.closes.push(at);
        }
        self.bump();
    }

    /// End it without an answer (the call was dropped).
    pub fn abandon(&self) {
        self.lock().done = true;
        self.bump();
    }

    /// Whether its call has ended.
    pub fn is_done(&self) -> bool {
        self.lock().done
    }
}

/// The streams kept, by id.
#[derive(Default)]
pub struct Streams {
    logs: Mutex<HashMap<String, Arc<Log>>>,
}

impl Streams {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Log>>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new stream of client `owner`'s.
    pub fn open(self: &Arc<Self>, owner: &str) -> Arc<Log> {
        let mut bytes = [0u8; 16];
        rand::Rng::fill(&mut rand::rng(), &mut bytes);
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let log = Arc::new(Log {
            id: id.clone(),
            owner: owner.to_string(),
            state: Mutex::default(),
            changed: watch::Sender::new(0),
        });
        let mut logs = self.lock();
        if logs.len() >= MAX_STREAMS {
            // The ended ones go first; a server this busy keeps the live ones.
            let ended: Vec<String> = logs.iter().filter(|(_, l)| l.is_done()).map(|(k, _)| k.clone()).collect();
            for k in ended.iter().take(logs.len() + 1 - MAX_STREAMS) {
                logs.remove(k);
            }
        }
        logs.insert(id, log.clone());
        log
    }

    /// Forget stream `log` a while after its call ended.
    pub fn retire(self: &Arc<Self>, log: &Arc<Log>) {
        let streams = Arc::downgrade(self);
        let id = log.id.clone();
        tokio::spawn(async move {
            tokio::time::sleep(KEEP_AFTER_END).await;
            if let Some(streams) = streams.upgrade() {
                streams.lock().remove(&id);
            }
        });
    }

    /// The stream `last_event_id` (`<stream>-<n>`) names, if client `owner` opened it, and the
    /// index of the first event after that one.
    pub fn resume(&self, last_event_id: &str, owner: &str) -> Option<(Arc<Log>, usize)> {
        let (id, n) = last_event_id.rsplit_once('-')?;
        let n: usize = n.parse().ok()?;
        let log = self.lock().get(id).cloned()?;
        (log.owner == owner).then_some((log, n))
    }

    /// How many streams are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An SSE response reading `log` from event index `from` (0: from the start), after a priming
/// event when `priming`: it ends with the call's answer, where the server closes the stream,
/// or when `stop` fires. `gone` is fired when the client leaves before either.
pub fn reader(
    log: Arc<Log>,
    from: usize,
    priming: bool,
    stop: CancellationToken,
    gone: Option<CancellationToken>,
) -> http::Response<Body> {
    let (frames, mut body) = mpsc::channel::<std::result::Result<hyper::body::Frame<Bytes>, Infallible>>(16);
    let mut changed = log.changed.subscribe();
    // The server closing the stream ends the readers open then, not those that come after.
    let epoch = log.lock().closes.len();
    tokio::spawn(async move {
        let data = |text: String| Ok(hyper::body::Frame::data(Bytes::from(text)));
        if priming && frames.send(data(format!("id: {}-0\nretry: {RETRY_MS}\ndata: \n\n", log.id))).await.is_err() {
            if let Some(gone) = gone {
                gone.cancel();
            }
            return;
        }
        let mut at = from;
        loop {
            // What to send now, and whether the stream ends after it.
            let (batch, end) = {
                let s = log.lock();
                let close = s.closes.get(epoch).copied();
                let upto = close.map_or(s.events.len(), |c| c.min(s.events.len()));
                let batch: Vec<(usize, String)> =
                    (at..upto).filter_map(|i| s.events.get(i).map(|e| (i + 1, e.clone()))).collect();
                let end = close.is_some_and(|c| upto >= c) || (s.done && upto == s.events.len());
                (batch, end)
            };
            for (n, event) in batch {
                at = n;
                if frames.send(data(format!("id: {}-{n}\ndata: {event}\n\n", log.id))).await.is_err() {
                    // The client left mid-stream: the call is given up unless the server had
                    // closed the stream for it to come back.
                    if let Some(gone) = &gone {
                        gone.cancel();
                    }
                    return;
                }
            }
            if end {
                return;
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { return },
                _ = frames.closed() => {
                    if let Some(gone) = &gone {
                        gone.cancel();
                    }
                    return;
                }
                _ = stop.cancelled() => return,
            }
        }
    });
    sse_response(futures::stream::poll_fn(move |cx| body.poll_recv(cx)))
}

/// A 200 event-stream response whose body is `events`.
pub fn sse_response<S>(events: S) -> http::Response<Body>
where
    S: futures::Stream<Item = std::result::Result<hyper::body::Frame<Bytes>, Infallible>> + Send + Sync + 'static,
{
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/event-stream")
        .header(http::header::CACHE_CONTROL, "no-cache, no-transform")
        .header("x-accel-buffering", "no")
        .body(BodyExt::boxed(StreamBody::new(events)))
        .unwrap_or_else(|_| plain(500))
}
