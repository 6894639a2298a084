//! A bare HTTP/1.1 test server on 127.0.0.1, on hyper's server side: each request goes to
//! `answer`, which returns the response to send, or `None` to drop the connection without
//! any answer. Used by the built-in tools' tests, the MCP tests and the scripted LLM
//! endpoint (`common/mod.rs`).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// A response body: whole, or streamed frame by frame.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A body sent whole, with its `content-length`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A body sent chunk by chunk (`transfer-encoding: chunked`) as the stream yields; hyper
/// flushes whenever the stream has nothing ready.
pub fn streamed<S>(chunks: S) -> Body
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    use futures::StreamExt;
    StreamBody::new(chunks.map(|b| Ok::<_, Infallible>(Frame::data(b)))).boxed_unsync()
}

/// The error that makes hyper drop a connection without writing anything.
#[derive(Debug)]
struct NoAnswer;

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the test server drops this connection without an answer")
    }
}

impl std::error::Error for NoAnswer {}

pub async fn serve<F, Fut>(answer: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Response<Body>>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let _ = sock.set_nodelay(true);
            let answer = answer.clone();
            let service = service_fn(move |req| {
                let reply = answer(req);
                async move { reply.await.ok_or(NoAnswer) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(sock), service).await;
            });
        }
    });
    addr
}
