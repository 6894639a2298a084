//! The built-in transport against servers on 127.0.0.1 that answer byte for byte as each test
//! scripts, and, case by case, against Node's own `fetch` on the same server: what goes on the
//! wire, framings, keep-alive reuse, redirects, content codings, timeouts and the errors.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::{HttpRequest, Transport};
use toolnexus_core::fetch::{BoxIo, Connect, FetchError, Fetcher, Options, Request, TokioConnect};

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// Names lower-cased, in wire order.
    headers: Vec<(String, String)>,
    body: String,
}

/// Read one request from `s` (httparse for the head, `content-length` for the body); `None`
/// at the end of the stream.
async fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Seen> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut slots);
        if let Ok(httparse::Status::Complete(at)) = req.parse(buf) {
            let headers: Vec<(String, String)> = req
                .headers
                .iter()
                .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
                .collect();
            let len = headers.iter().find(|(k, _)| k == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
            let (method, path) = (req.method.unwrap().to_string(), req.path.unwrap().to_string());
            while buf.len() < at + len {
                let mut tmp = [0u8; 4096];
                let n = s.read(&mut tmp).await.ok()?;
                if n == 0 {
                    return None;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            let body = String::from_utf8_lossy(&buf[at..at + len]).into_owned();
            buf.drain(..at + len);
            return Some(Seen { method, path, headers, body });
        }
        let mut tmp = [0u8; 4096];
        let n = s.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
}

type Reply = Arc<dyn Fn(usize, &Seen) -> Vec<u8> + Send + Sync>;

/// A server answering every request with `reply(n, request)` (n counts requests across
/// connections), closing after it when `close_after(n)`. Reports requests, counts connections.
struct Server {
    port: u16,
    seen: mpsc::UnboundedReceiver<Seen>,
    conns: Arc<AtomicUsize>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

async fn serve(
    reply: impl Fn(usize, &Seen) -> Vec<u8> + Send + Sync + 'static,
    close_after: fn(usize) -> bool,
) -> Server {
    let reply: Reply = Arc::new(reply);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, seen) = mpsc::unbounded_channel();
    let conns = Arc::new(AtomicUsize::new(0));
    let count = Arc::new(AtomicUsize::new(0));
    let c2 = conns.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            c2.fetch_add(1, Ordering::SeqCst);
            let (tx, count, reply) = (tx.clone(), count.clone(), reply.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some(req) = read_request(&mut s, &mut buf).await {
                    let n = count.fetch_add(1, Ordering::SeqCst);
                    let bytes = reply(n, &req);
                    let _ = tx.send(req);
                    if s.write_all(&bytes).await.is_err() || close_after(n) {
                        return;
                    }
                }
            });
        }
    });
    Server { port, seen, conns }
}

fn never(_: usize) -> bool {
    false
}

fn always(_: usize) -> bool {
    true
}

fn ok_json(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        .into_bytes()
}

pub(crate) fn post(url: &str, body: &str) -> HttpRequest {
    HttpRequest {
        url: url.to_string(),
        headers: vec![("Content-Type".into(), "application/json".into()), ("Authorization".into(), "Bearer k".into())],
        body: body.to_string(),
    }
}

pub(crate) fn fresh() -> FetchTransport {
    FetchTransport::new(Fetcher::new(TokioConnect))
}

/// Run `script` (an ES module body) in Node and parse what it prints as JSON.
async fn node(script: &str) -> Value {
    let out = tokio::process::Command::new("node")
        .args(["--input-type=module", "-e", script])
        .output()
        .await
        .expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|_| panic!("node printed {text:?} ({:?})", out.stderr))
}

/// What Node's fetch rejects with for `url` (`init` a JS object literal), as JSON.
async fn node_error(url: &str, init: &str) -> Value {
    node(&format!(
        "try {{ const r = await fetch({url:?}, {init}); await r.text(); console.log('null') }} catch (e) {{ \
           const c = e.cause; console.log(JSON.stringify({{ name: e.name, message: e.message, \
           cause: c && {{ name: c.name, message: c.message, code: c.code, errno: c.errno, syscall: c.syscall, \
           address: c.address, port: c.port, hostname: c.hostname }} }})) }}"
    ))
    .await
}

/// Ours in the same shape.
fn our_error(e: &FetchError) -> Value {
    let c = e.cause.as_ref().unwrap();
    let f = |k: &str| c.field(k).cloned().unwrap_or(Value::Null);
    json!({ "name": "TypeError", "message": e.message, "cause": { "name": c.name, "message": c.message,
        "code": f("code"), "errno": f("errno"), "syscall": f("syscall"), "address": f("address"),
        "port": f("port"), "hostname": f("hostname") } })
}

fn strip_nulls(mut v: Value) -> Value {
    if let Some(c) = v.get_mut("cause").and_then(Value::as_object_mut) {
        c.retain(|_, x| !x.is_null());
    }
    v
}

async fn fetch_err(url: &str) -> FetchError {
    let req = Request { method: http::Method::GET, url: url.into(), headers: vec![], body: None };
    match Fetcher::new(TokioConnect).fetch(req).await {
        Ok(res) => res.bytes().await.unwrap_err(),
        Err(e) => e,
    }
}

// ---- what goes on the wire ----

#[tokio::test]
async fn the_request_head_is_the_one_node_fetch_sends() {
    let mut s = serve(|_, _| ok_json("{\"ok\":true}"), never).await;
    let r = fresh().post(post(&s.url("/v1/chat/completions"), "{\"a\":1}")).await.unwrap();
    assert_eq!((r.status, r.body.as_str()), (200, "{\"ok\":true}"));
    let ours = s.seen.recv().await.unwrap();
    assert_eq!(
        (ours.method.as_str(), ours.path.as_str(), ours.body.as_str()),
        ("POST", "/v1/chat/completions", "{\"a\":1}")
    );
    let url = s.url("/v1/chat/completions");
    node(&format!(
        "await fetch({url:?}, {{ method: 'POST', headers: {{ 'Content-Type': 'application/json', Authorization: 'Bearer k' }}, body: '{{\"a\":1}}' }}); console.log('1')"
    ))
    .await;
    let theirs = s.seen.recv().await.unwrap();
    assert_eq!(ours.headers, theirs.headers, "ours, then Node's");
    assert_eq!(theirs.body, ours.body);
}

#[tokio::test]
async fn response_header_names_are_lower_cased_and_many_are_fine() {
    let many: String = (0..200).map(|i| format!("X-Extra-{i}: v{i}\r\n")).collect();
    let reply =
        move |_: usize, _: &Seen| format!("HTTP/1.1 200 OK\r\n{many}Content-Length: 2\r\n\r\n{{}}").into_bytes();
    let s = serve(reply, never).await;
    let r = fresh().post(post(&s.url("/"), "{}")).await.unwrap();
    assert_eq!(r.body, "{}");
    assert_eq!(r.header("x-extra-199"), Some("v199"));
    assert!(r.headers.iter().all(|(k, _)| k == &k.to_ascii_lowercase()));
    let url = s.url("/");
    let n = node(&format!("const r = await fetch({url:?}); await r.text(); console.log([...r.headers.keys()].filter(k => k.startsWith('x-extra-')).length)")).await;
    assert_eq!(n, json!(200));
}

#[tokio::test]
async fn a_folded_header_is_read_as_node_20_reads_it() {
    // Node 20's parser joins an obs-fold continuation; Node 24's refuses the reply. The lenient
    // reading is kept on every version: never fail a reply the reference accepted.
    let reply = |_: usize, _: &Seen| b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let s = serve(reply, never).await;
    let r = fresh().post(post(&s.url("/"), "{}")).await.unwrap();
    assert_eq!((r.body.as_str(), r.header("x-a")), ("ok", Some("one two")));
}

#[tokio::test]
async fn a_body_starting_with_a_byte_order_mark_reads_as_its_json() {
    let s = serve(|_, _| ok_json("\u{feff}{\"a\":1}"), never).await;
    let r = fresh().post(post(&s.url("/"), "{}")).await.unwrap();
    assert_eq!(r.body, "{\"a\":1}");
    let url = s.url("/");
    assert_eq!(
        node(&format!("console.log(JSON.stringify(await (await fetch({url:?})).json()))")).await,
        json!({"a": 1})
    );
}

// ---- framing and the pool ----

#[tokio::test]
async fn keeps_the_connection_for_the_next_request() {
    let s = serve(|_, _| ok_json("{}"), never).await;
    let t = fresh();
    for _ in 0..5 {
        assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{}");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn tls_is_set_up_by_the_first_https_connection_and_not_before() {
    let s = serve(|_, _| ok_json("{}"), never).await;
    let fetcher = Fetcher::new(TokioConnect);
    let t = FetchTransport::new(fetcher.clone());
    assert!(!fetcher.tls_ready());
    assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{}");
    assert!(!fetcher.tls_ready(), "a plain http request built the TLS connector");
    // The same server spoken to in TLS: the handshake fails, but only after the connector was made.
    let https = format!("https://127.0.0.1:{}/", s.port);
    let e = t.post(post(&https, "{}")).await.unwrap_err();
    assert!(matches!(e, toolnexus_core::Error::Fetch(_)), "{e:?}");
    assert!(fetcher.tls_ready());
}

#[tokio::test]
async fn every_transport_over_one_fetcher_shares_its_pool() {
    let s = serve(|_, _| ok_json("{}"), never).await;
    let fetcher = Fetcher::new(TokioConnect);
    for _ in 0..300 {
        let t = FetchTransport::new(fetcher.clone());
        assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{}");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 1);
    assert_eq!(fetcher.idle_count(), 1);
}

#[tokio::test]
async fn chunked_bodies_with_trailers_are_read_and_the_connection_reused() {
    let reply = |_: usize, _: &Seen| {
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: x-sum\r\n\r\n3\r\n{\"a\r\n5;ext=1\r\n\":1}\n\r\n0\r\nx-sum: 9\r\n\r\n"
            .to_vec()
    };
    let s = serve(reply, never).await;
    let t = fresh();
    for _ in 0..3 {
        assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{\"a\":1}\n");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unframed_body_is_read_to_the_close_and_not_reused() {
    let s = serve(|_, _| b"HTTP/1.1 200 OK\r\n\r\nuntil close".to_vec(), always).await;
    let t = fresh();
    for _ in 0..2 {
        assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "until close");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let reply = |_: usize, _: &Seen| b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec();
    let s = serve(reply, never).await;
    let t = fresh();
    for _ in 0..2 {
        assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "ok");
    }
    assert_eq!(s.conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_pooled_connection_the_server_dropped_is_replaced() {
    let s = serve(|_, _| ok_json("{}"), |n| n == 0).await;
    let t = fresh();
    assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(t.post(post(&s.url("/"), "{}")).await.unwrap().body, "{}");
    assert_eq!(s.conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_connection_dropped_just_as_it_is_reused_is_retried_once() {
    // The first connection answers one request, then takes the second and closes silently.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/x", listener.local_addr().unwrap());
    let conns = Arc::new(AtomicUsize::new(0));
    let c2 = conns.clone();
    tokio::spawn(async move {
        let mut first = true;
        while let Ok((mut s, _)) = listener.accept().await {
            c2.fetch_add(1, Ordering::SeqCst);
            let drop_second = std::mem::replace(&mut first, false);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut n = 0;
                while read_request(&mut s, &mut buf).await.is_some() {
                    if drop_second && n == 1 {
                        return;
                    }
                    n += 1;
                    if s.write_all(&ok_json("{}")).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let t = fresh();
    assert_eq!(t.post(post(&url, "{}")).await.unwrap().status, 200);
    assert_eq!(t.post(post(&url, "{}")).await.unwrap().status, 200);
    assert_eq!(conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn one_transport_alternating_between_endpoints_reaches_each_in_turn() {
    use crate::common::{oa_text, MockLlm, Reply};
    let a = MockLlm::script(vec![Reply::json(oa_text("from a")), Reply::json(oa_text("a again"))]).await;
    let b = MockLlm::script(vec![Reply::json(oa_text("from b"))]).await;
    let t = FetchTransport::new(toolnexus_core::fetch::Fetcher::new(toolnexus_core::fetch::TokioConnect));
    let post = |url: String| HttpRequest { url, headers: vec![], body: "{}".into() };
    let mut seen = vec![];
    for url in [a.url(), b.url(), a.url()] {
        let res = t.post(post(format!("{url}/chat/completions"))).await.unwrap();
        seen.push(
            res.body.contains("from a") as u8
                + 2 * res.body.contains("from b") as u8
                + 4 * res.body.contains("a again") as u8,
        );
    }
    assert_eq!(seen, vec![1, 2, 4]);
    assert_eq!((a.count(), b.count()), (2, 1));
    // The fetcher remembers the last URL it parsed; a bad one after it is still refused as such.
    let e = t.post(post("not a url/chat".into())).await.unwrap_err();
    assert!(e.to_string().contains("Failed to parse URL from not a url/chat"), "{e}");
}

#[tokio::test]
async fn interim_responses_are_skipped() {
    let reply = |_: usize, _: &Seen| {
        let mut b = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".to_vec();
        b.extend(ok_json("{\"late\":1}"));
        b
    };
    let s = serve(reply, never).await;
    assert_eq!(fresh().post(post(&s.url("/"), "{}")).await.unwrap().body, "{\"late\":1}");
}

#[tokio::test]
async fn error_statuses_come_back_as_responses() {
    let reply = |_: usize, _: &Seen| b"HTTP/1.1 503 Busy\r\nRetry-After: 2\r\nContent-Length: 4\r\n\r\nbusy".to_vec();
    let s = serve(reply, never).await;
    let r = fresh().post(post(&s.url("/"), "{}")).await.unwrap();
    assert_eq!((r.status, r.body.as_str(), r.header("retry-after")), (503, "busy", Some("2")));
}

#[tokio::test]
async fn a_streamed_body_arrives_as_the_server_sends_it() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/s", listener.local_addr().unwrap());
    let (go, mut wait) = mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s, &mut Vec::new()).await.unwrap();
        s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata:1\r\n").await.unwrap();
        wait.recv().await;
        s.write_all(b"6\r\ndata:2\r\n0\r\n\r\n").await.unwrap();
    });
    let res = fresh().post_stream(post(&url, "{}")).await.unwrap();
    let mut body = res.body;
    assert_eq!(body.next().await.unwrap().unwrap(), b"data:1");
    go.send(()).unwrap();
    assert_eq!(body.next().await.unwrap().unwrap(), b"data:2");
    assert!(body.next().await.is_none());
}

#[tokio::test]
async fn reading_stops_once_a_body_passes_the_limit_sized_or_not() {
    let sized = serve(|_, _| ok_json(&"x".repeat(100)), never).await;
    let chunked = serve(
        |_, _| {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n"
                .iter()
                .copied()
                .chain([b'y'; 64])
                .chain(*b"\r\n40\r\n")
                .chain([b'y'; 64])
                .chain(*b"\r\n0\r\n\r\n")
                .collect()
        },
        never,
    )
    .await;
    for url in [sized.url("/"), chunked.url("/")] {
        let get = || Request { method: http::Method::GET, url: url.clone(), headers: vec![], body: None };
        let f = Fetcher::new(TokioConnect);
        assert_eq!(f.fetch(get()).await.unwrap().bytes_up_to(99).await.unwrap(), None, "{url}");
        assert_eq!(
            f.fetch(get()).await.unwrap().bytes_up_to(200).await.unwrap().map(|b| b.len()),
            Some(if url == sized.url("/") { 100 } else { 128 })
        );
    }
}

// ---- content codings ----

fn encoded(coding: &str, body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "raw-deflate" => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "zstd" => zstd::encode_all(body, 3).unwrap(),
        "br" => {
            // Node encodes it for us: the crate here only decodes.
            unreachable!()
        }
        _ => body.to_vec(),
    }
}

#[tokio::test]
async fn compressed_replies_are_decoded_as_node_fetch_decodes_them() {
    let body = br#"{"choices":[{"message":{"content":"squeezed"}}]}"#;
    let br = node("import zlib from 'node:zlib'; console.log(JSON.stringify([...zlib.brotliCompressSync('{\"choices\":[{\"message\":{\"content\":\"squeezed\"}}]}')]))").await;
    let br: Vec<u8> = serde_json::from_value(br).unwrap();
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("gzip", "gzip", encoded("gzip", body)),
        ("x-gzip", "x-gzip", encoded("gzip", body)),
        ("GZIP", "GZIP", encoded("gzip", body)),
        ("deflate", "deflate", encoded("deflate", body)),
        ("raw-deflate", "deflate", encoded("raw-deflate", body)),
        ("br", "br", br.clone()),
        ("gzip-then-br", "gzip, br", {
            // br over gzip: Node compresses the outer layer.
            let gz = encoded("gzip", body);
            let arr = serde_json::to_string(&gz).unwrap();
            let v = node(&format!("import zlib from 'node:zlib'; console.log(JSON.stringify([...zlib.brotliCompressSync(Buffer.from({arr}))]))")).await;
            serde_json::from_value(v).unwrap()
        }),
        ("unknown", "bogus", body.to_vec()),
    ];
    for (label, coding, bytes) in cases {
        let payload = bytes.clone();
        let coding_owned = coding.to_string();
        let reply = move |_: usize, _: &Seen| {
            let mut head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: {coding_owned}\r\nContent-Length: {}\r\n\r\n",
                payload.len()
            )
            .into_bytes();
            head.extend(&payload);
            head
        };
        let s = serve(reply, never).await;
        let ours = fresh().post(post(&s.url("/"), "{}")).await.unwrap().body;
        let url = s.url("/");
        let theirs = node(&format!("console.log(JSON.stringify(await (await fetch({url:?})).text()))")).await;
        assert_eq!(json!(ours), theirs, "{label}");
        assert_eq!(ours.as_bytes(), body, "{label}");
    }
}

#[tokio::test]
async fn zstd_is_decoded_only_where_the_node_version_does() {
    let body = br#"{"z":1}"#;
    let z = encoded("zstd", body);
    let payload = z.clone();
    let reply = move |_: usize, _: &Seen| {
        let mut head =
            format!("HTTP/1.1 200 OK\r\nContent-Encoding: zstd\r\nContent-Length: {}\r\n\r\n", payload.len())
                .into_bytes();
        head.extend(&payload);
        head
    };
    let s = serve(reply, never).await;
    let with = |zstd| FetchTransport::new(Fetcher::with_options(TokioConnect, Options { zstd, ..Options::default() }));
    assert_eq!(with(true).post(post(&s.url("/"), "{}")).await.unwrap().body.as_bytes(), body);
    let raw = with(false).post(post(&s.url("/"), "{}")).await.unwrap().body;
    assert_eq!(raw, String::from_utf8_lossy(&z));
}

// ---- redirects ----

/// `/r/<code>` redirects to `/echo`; `/cross/<code>` to `/echo` on `localhost`; `/loop`
/// to itself; `/echo` answers with what it saw.
async fn redirecting() -> Server {
    let port = Arc::new(std::sync::OnceLock::<u16>::new());
    let p2 = port.clone();
    let reply = move |_: usize, req: &Seen| {
        let port = p2.get().copied().unwrap_or(0);
        let redirect = |code: &str, to: String| {
            format!("HTTP/1.1 {code} Moved\r\nLocation: {to}\r\nContent-Length: 5\r\n\r\nmoved").into_bytes()
        };
        if let Some(code) = req.path.strip_prefix("/r/") {
            return redirect(code, "/echo".into());
        }
        if let Some(code) = req.path.strip_prefix("/cross/") {
            return redirect(code, format!("http://localhost:{port}/echo"));
        }
        if req.path == "/loop" {
            return redirect("302", "/loop".into());
        }
        let names: Vec<&str> = req.headers.iter().map(|(k, _)| k.as_str()).collect();
        ok_json(&json!({ "method": req.method, "body": req.body, "headers": names }).to_string())
    };
    let s = serve(reply, never).await;
    let _ = port.set(s.port);
    s
}

#[tokio::test]
async fn each_redirect_code_treats_method_and_body_as_node_fetch_does() {
    let s = redirecting().await;
    for code in ["301", "302", "303", "307", "308"] {
        for base in ["/r/", "/cross/"] {
            let url = s.url(&format!("{base}{code}"));
            let ours = fresh()
                .post(HttpRequest {
                    url: url.clone(),
                    headers: vec![
                        ("content-type".into(), "application/json".into()),
                        ("authorization".into(), "Bearer k".into()),
                        ("cookie".into(), "c=1".into()),
                    ],
                    body: "{\"a\":1}".into(),
                })
                .await
                .unwrap();
            let ours: Value = serde_json::from_str(&ours.body).unwrap();
            let theirs = node(&format!(
                "const r = await fetch({url:?}, {{ method: 'POST', headers: {{ 'content-type': 'application/json', authorization: 'Bearer k', cookie: 'c=1' }}, body: '{{\"a\":1}}' }}); console.log(await r.text())"
            ))
            .await;
            assert_eq!(ours, theirs, "{base}{code}");
        }
    }
}

#[tokio::test]
async fn an_api_key_header_is_not_sent_to_another_origin() {
    let s = redirecting().await;
    let req = |path: &str| HttpRequest {
        url: s.url(path),
        headers: vec![("x-api-key".into(), "secret".into()), ("content-type".into(), "application/json".into())],
        body: "{}".into(),
    };
    let same: Value = serde_json::from_str(&fresh().post(req("/r/307")).await.unwrap().body).unwrap();
    assert!(same["headers"].as_array().unwrap().contains(&json!("x-api-key")));
    let cross: Value = serde_json::from_str(&fresh().post(req("/cross/307")).await.unwrap().body).unwrap();
    assert!(!cross["headers"].as_array().unwrap().contains(&json!("x-api-key")));
}

#[tokio::test]
async fn a_redirect_loop_fails_as_node_fetch_fails() {
    let s = redirecting().await;
    let ours = our_error(&fetch_err(&s.url("/loop")).await);
    let theirs = node_error(&s.url("/loop"), "{}").await;
    assert_eq!(strip_nulls(ours), strip_nulls(theirs));
}

#[tokio::test]
async fn the_final_url_and_redirected_flag_are_reported() {
    let s = redirecting().await;
    let req = Request { method: http::Method::GET, url: s.url("/r/302"), headers: vec![], body: None };
    let res = Fetcher::new(TokioConnect).fetch(req).await.unwrap();
    assert_eq!((res.url.as_str(), res.redirected), (s.url("/echo").as_str(), true));
}

// ---- failures, compared with Node's ----

async fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_refused_connection_fails_with_nodes_cause() {
    let port = closed_port().await;
    let url = format!("http://127.0.0.1:{port}/v1");
    let ours = our_error(&fetch_err(&url).await);
    assert_eq!(ours["cause"]["code"], "ECONNREFUSED");
    assert_eq!(strip_nulls(ours), strip_nulls(node_error(&url, "{}").await));
}

#[tokio::test]
async fn an_unknown_host_fails_with_nodes_cause() {
    let url = "http://no-such-host.invalid/v1";
    let ours = our_error(&fetch_err(url).await);
    assert_eq!(ours["cause"]["code"], "ENOTFOUND");
    assert_eq!(strip_nulls(ours), strip_nulls(node_error(url, "{}").await));
}

#[tokio::test]
async fn a_reset_connection_fails_with_nodes_cause() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                read_request(&mut s, &mut Vec::new()).await;
                // An abortive close: the peer sees a reset, not an end of stream.
                let s = socket2::Socket::from(s.into_std().unwrap());
                let _ = s.set_linger(Some(Duration::ZERO));
                drop(s);
            });
        }
    });
    let ours = our_error(&fetch_err(&url).await);
    assert_eq!(ours["cause"]["code"], "ECONNRESET");
    assert_eq!(strip_nulls(ours), strip_nulls(node_error(&url, "{}").await));
}

#[tokio::test]
async fn a_response_cut_short_fails_as_node_fetch_fails() {
    let s = serve(|_, _| b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\":".to_vec(), always).await;
    let ours = our_error(&fetch_err(&s.url("/")).await);
    let theirs = node_error(&s.url("/"), "{}").await;
    assert_eq!(ours["message"], "terminated");
    assert_eq!(strip_nulls(ours), strip_nulls(theirs));
}

#[tokio::test]
async fn a_connection_closed_without_a_response_fails_as_node_fetch_fails() {
    let s = serve(|_, _| Vec::new(), always).await;
    let ours = our_error(&fetch_err(&s.url("/")).await);
    assert_eq!(strip_nulls(ours), strip_nulls(node_error(&s.url("/"), "{}").await));
}

#[tokio::test]
async fn chunked_with_a_content_length_is_refused_as_node_refuses_it() {
    let reply = |_: usize, _: &Seen| {
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec()
    };
    let s = serve(reply, always).await;
    let ours = our_error(&fetch_err(&s.url("/")).await);
    let theirs = node_error(&s.url("/"), "{}").await;
    assert_eq!(ours["message"], theirs["message"]);
    assert_eq!(ours["cause"]["code"], theirs["cause"]["code"]);
}

#[tokio::test]
async fn an_unparseable_url_fails_as_node_fetch_fails() {
    let e = fetch_err("undefined/chat/completions").await;
    let theirs = node(
        "try { await fetch('undefined/chat/completions') } catch (e) { console.log(JSON.stringify({ name: e.name, message: e.message, cause: { name: e.cause.name, message: e.cause.message, code: e.cause.code } })) }",
    )
    .await;
    let c = e.cause.as_ref().unwrap();
    assert_eq!(
        json!({ "name": "TypeError", "message": e.message, "cause": { "name": c.name, "message": c.message, "code": c.code() } }),
        theirs
    );
}

// ---- connecting ----

/// Connections through tokio, except to `stall`, which never completes.
struct Stalling {
    stall: SocketAddr,
    resolved: Vec<SocketAddr>,
    tried: Arc<std::sync::Mutex<Vec<(SocketAddr, Instant)>>>,
}

#[async_trait::async_trait]
impl Connect for Stalling {
    async fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok(self.resolved.clone())
    }

    async fn connect(&self, addr: SocketAddr) -> std::io::Result<BoxIo> {
        self.tried.lock().unwrap().push((addr, Instant::now()));
        if addr == self.stall {
            std::future::pending::<()>().await;
        }
        TokioConnect.connect(addr).await
    }
}

#[tokio::test]
async fn a_name_with_a_dead_address_and_a_live_one_connects_to_the_live_one() {
    let s = serve(|_, _| ok_json("{}"), never).await;
    let dead = SocketAddr::from(([127, 0, 0, 1], closed_port().await));
    let live = SocketAddr::from(([127, 0, 0, 1], s.port));
    let tried = Arc::default();
    let c = Stalling { stall: SocketAddr::from(([0, 0, 0, 0], 9)), resolved: vec![dead, live], tried };
    let t = FetchTransport::new(Fetcher::new(c));
    let r = t.post(post(&format!("http://example.test:{}/", s.port), "{}")).await.unwrap();
    assert_eq!(r.body, "{}");
}

#[tokio::test]
async fn a_stalled_address_gets_a_quarter_second_before_the_next_is_raced() {
    let s = serve(|_, _| ok_json("{}"), never).await;
    let stall = SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], s.port));
    let live = SocketAddr::from(([127, 0, 0, 1], s.port));
    let tried = Arc::new(std::sync::Mutex::new(Vec::new()));
    let c = Stalling { stall, resolved: vec![stall, live], tried: tried.clone() };
    let t0 = Instant::now();
    let t = FetchTransport::new(Fetcher::new(c));
    assert_eq!(t.post(post(&format!("http://example.test:{}/", s.port), "{}")).await.unwrap().body, "{}");
    let tried = tried.lock().unwrap().clone();
    assert_eq!(tried.iter().map(|(a, _)| *a).collect::<Vec<_>>(), vec![stall, live]);
    let gap = tried[1].1.duration_since(t0);
    assert!(gap >= Duration::from_millis(240) && gap < Duration::from_secs(2), "{gap:?}");
}

#[tokio::test]
async fn a_connect_that_never_completes_times_out_as_undici_does() {
    let stall = SocketAddr::from(([127, 0, 0, 1], 4321));
    let c = Stalling { stall, resolved: vec![stall], tried: Arc::default() };
    let o = Options { connect_timeout: Duration::from_millis(300), ..Options::default() };
    let f = Fetcher::with_options(c, o);
    let req = Request { method: http::Method::GET, url: "http://127.0.0.1:4321/".into(), headers: vec![], body: None };
    let e = f.fetch(req).await.err().unwrap();
    let c = e.cause.unwrap();
    assert_eq!(
        (e.message.as_str(), c.name.as_str(), c.code()),
        ("fetch failed", "ConnectTimeoutError", Some("UND_ERR_CONNECT_TIMEOUT"))
    );
    assert_eq!(c.message, "Connect Timeout Error (attempted address: 127.0.0.1:4321, timeout: 300ms)");
}

/// A listener whose accept queue is full: further connects are never answered.
fn full_backlog() -> (socket2::Socket, std::net::TcpStream, u16) {
    use socket2::{Domain, Socket, Type};
    let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).unwrap();
    l.listen(0).unwrap();
    let port = l.local_addr().unwrap().as_socket().unwrap().port();
    let filler = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    (l, filler, port)
}

#[tokio::test]
async fn a_listener_with_a_full_backlog_fails_within_fifteen_seconds_as_node_does() {
    let (_l, _filler, port) = full_backlog();
    // Fill the queue's last slot too, with a connect that is never accepted.
    let _second = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    _second.set_nonblocking(true).unwrap();
    let _ = _second.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into());
    let url = format!("http://127.0.0.1:{port}/");
    let t0 = Instant::now();
    let (ours, theirs) = tokio::join!(fetch_err(&url), node_error(&url, "{}"));
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(strip_nulls(our_error(&ours)), strip_nulls(theirs));
}

// ---- timeouts after connecting ----

#[tokio::test]
async fn no_response_head_in_time_is_a_headers_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s, &mut Vec::new()).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let o = Options { headers_timeout: Duration::from_millis(200), ..Options::default() };
    let req = Request { method: http::Method::GET, url, headers: vec![], body: None };
    let e = Fetcher::with_options(TokioConnect, o).fetch(req).await.err().unwrap();
    assert_eq!((e.message.as_str(), e.cause.unwrap().code()), ("fetch failed", Some("UND_ERR_HEADERS_TIMEOUT")));
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_a_body_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        read_request(&mut s, &mut Vec::new()).await;
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let o = Options { body_timeout: Duration::from_millis(200), ..Options::default() };
    let req = Request { method: http::Method::GET, url, headers: vec![], body: None };
    let res = Fetcher::with_options(TokioConnect, o).fetch(req).await.unwrap();
    let e = res.bytes().await.unwrap_err();
    assert_eq!((e.message.as_str(), e.cause.unwrap().code()), ("terminated", Some("UND_ERR_BODY_TIMEOUT")));
}
