//! Runs polled on a host's own thread: tools that only call back into the host run in place,
//! the core's other tools are moved to the runtime so the host's thread is never held up.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use serde_json::{json, Value};
use toolnexus_core::error::Result;
use toolnexus_core::host_thread as host;
use toolnexus_core::tool::{Tool, ToolContext, ToolDecl};
use toolnexus_core::types::ToolResult;
use toolnexus_core::{Toolkit, ToolkitOptions};

/// Per call: the tool's name and the name of the thread it ran on.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Records the thread it ran on.
struct Where {
    decl: ToolDecl,
    light: bool,
    seen: Seen,
}

#[async_trait]
impl Tool for Where {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> Result<ToolResult> {
        let thread = std::thread::current().name().map(str::to_string);
        self.seen.lock().unwrap().push((self.decl.name.to_string(), thread));
        Ok(ToolResult::ok("ok"))
    }
    fn light(&self) -> bool {
        self.light
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Polls its future with the thread marked as the host's, as the Node binding does.
struct OnHost<F>(Pin<Box<F>>);

impl<F: Future> Future for OnHost<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        host::polling_on_host(|| self.0.as_mut().poll(cx))
    }
}

#[test]
fn heavy_tools_leave_the_host_thread_and_light_ones_stay() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("core-runtime")
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tool = |name, light| {
        Arc::new(Where {
            decl: ToolDecl::new(name, "", json!({"type": "object"}), "custom"),
            light,
            seen: seen.clone(),
        }) as Arc<dyn Tool>
    };
    let opts = ToolkitOptions {
        extra_tools: vec![tool("heavy", false), tool("light", true)],
        builtins: Some(false.into()),
        ..Default::default()
    };
    let tk = rt.block_on(Toolkit::create(opts)).unwrap();
    let _enter = rt.enter();
    // This test's own thread plays the host.
    let host_name = std::thread::current().name().map(str::to_string);
    futures::executor::block_on(OnHost(Box::pin(async {
        tk.execute("heavy", json!({}), ToolContext::default()).await.unwrap();
        tk.execute("light", json!({}), ToolContext::default()).await.unwrap();
    })));
    // Not polled on a host thread: everything runs in place.
    futures::executor::block_on(tk.execute("heavy", json!({}), ToolContext::default())).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], ("heavy".to_string(), Some("core-runtime".to_string())));
    assert_eq!(seen[1], ("light".to_string(), host_name.clone()));
    assert_eq!(seen[2], ("heavy".to_string(), host_name));
    assert!(!host::on_host_thread(), "the mark is lifted after each poll");
}

/// A toolkit that asks for no skills, MCP servers or agents waits on nothing: it is made in
/// the first poll, with no thread to hand work to and wait for (so a host can make it in place).
#[test]
fn a_toolkit_of_plain_tools_is_made_in_one_poll() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let _enter = rt.enter();
    let opts = ToolkitOptions { builtins: Some(json!({ "bash": true })), ..Default::default() };
    assert!(opts.waits_on_nothing());
    let made = futures::FutureExt::now_or_never(Toolkit::create(opts)).expect("the toolkit waited on something");
    assert!(made.unwrap().get("bash").is_some());
    // Asking for skills (an empty list of them) reads no files here, but discovery may: it is
    // handed to the blocking pool, so the first poll waits.
    let opts = ToolkitOptions { skills: Some(Vec::new()), ..Default::default() };
    assert!(!opts.waits_on_nothing());
    assert!(futures::FutureExt::now_or_never(Toolkit::create(opts)).is_none());
    let mcp = ToolkitOptions { mcp_config: Some(json!({ "mcpServers": {} })), ..Default::default() };
    let agents = ToolkitOptions {
        agents: vec![toolnexus_core::a2a::Agent::from_value(&json!("http://127.0.0.1:9"))],
        ..Default::default()
    };
    assert!(!mcp.waits_on_nothing() && !agents.waits_on_nothing());
}

/// Holds taken through the test holder, per thread that took them (other tests of this binary
/// may take some on their own threads once it is installed).
static HOLDS: Mutex<Vec<std::thread::ThreadId>> = Mutex::new(Vec::new());

struct CountedHold(std::thread::ThreadId);

impl Drop for CountedHold {
    fn drop(&mut self) {
        let mut holds = HOLDS.lock().unwrap();
        if let Some(i) = holds.iter().position(|t| *t == self.0) {
            holds.remove(i);
        }
    }
}

fn counted_hold() -> Option<host::Hold> {
    let me = std::thread::current().id();
    HOLDS.lock().unwrap().push(me);
    Some(Box::new(CountedHold(me)))
}

fn holds_here() -> usize {
    let me = std::thread::current().id();
    HOLDS.lock().unwrap().iter().filter(|t| **t == me).count()
}

/// Polls `fut` until the server has its request (the socket's progress needs polls; the waker
/// is not watched here), then leaves it pending.
fn until_sent<F: Future + Unpin>(fut: &mut F, got: &std::sync::mpsc::Receiver<()>) {
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        assert!(Pin::new(&mut *fut).poll(&mut cx).is_pending(), "answered before the server was told to");
        if got.recv_timeout(std::time::Duration::from_millis(2)).is_ok() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the request never reached the server");
    }
}

/// The built-in transport over the runtime's own sockets (the fallback where the host's event
/// loop cannot watch them): a request polled on the host's thread holds the host until its reply
/// has been read, so a host with nothing else pending does not end mid-request.
#[test]
fn the_shared_transport_holds_the_host_while_a_request_is_out() {
    use futures::StreamExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use toolnexus_core::client::http::FetchTransport;
    use toolnexus_core::client::{HttpRequest, Transport};

    host::set_holder(counted_hold);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let _enter = rt.enter();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    // Each request is answered once the test says so; the streamed reply's body in two pieces.
    let (got_tx, got_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    rt.spawn(async move {
        let mut go_rx = go_rx;
        for streamed in [false, true] {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
            got_tx.send(()).unwrap();
            go_rx.recv().await.unwrap();
            if streamed {
                socket.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n").await.unwrap();
                go_rx.recv().await.unwrap();
                socket.write_all(b"3\r\ndef\r\n0\r\n\r\n").await.unwrap();
            } else {
                socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}").await.unwrap();
            }
        }
    });
    let request = || HttpRequest { url: url.clone(), headers: vec![], body: "{}".into() };
    let transport = FetchTransport::shared();

    // A whole-body request: held from its first poll until the reply is in.
    let mut post = OnHost(Box::pin(transport.post(request())));
    until_sent(&mut post, &got_rx);
    assert_eq!(holds_here(), 1, "held while the request is out");
    go_tx.send(()).unwrap();
    let res = futures::executor::block_on(post).unwrap();
    assert_eq!((res.status, res.body.as_str()), (200, "{}"));
    assert_eq!(holds_here(), 0, "released with the reply");

    // A streamed reply: still held after the head has come, until the body has ended.
    let mut head = OnHost(Box::pin(transport.post_stream(request())));
    until_sent(&mut head, &got_rx);
    go_tx.send(()).unwrap();
    let mut res = futures::executor::block_on(head).unwrap();
    assert_eq!(res.status, 200);
    assert_eq!(futures::executor::block_on(res.body.next()).unwrap().unwrap(), b"abc");
    assert_eq!(holds_here(), 1, "held while the body is still coming");
    go_tx.send(()).unwrap();
    let mut rest = Vec::new();
    while let Some(piece) = futures::executor::block_on(res.body.next()) {
        rest.extend(piece.unwrap());
    }
    assert_eq!(rest, b"def");
    drop(res);
    assert_eq!(holds_here(), 0, "released with the body");
}
