//! The LLM transport seam: one POST, answered with status, headers and the whole body.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;

use crate::body::ByteStream;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub url: String,
    /// In insertion order, exactly as the client assembled them.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A response whose body is read as it arrives (SSE).
pub struct StreamResponse {
    pub status: u16,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: ByteStream,
}

impl StreamResponse {
    /// Read the rest of the body as text (for an error message).
    pub async fn text(mut self) -> Result<String> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.body.next().await {
            bytes.extend(chunk?);
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// What the retry logic needs to know of a response, whichever kind it is.
pub trait Reply {
    fn status(&self) -> u16;
    fn header(&self, name: &str) -> Option<&str>;
    fn ok(&self) -> bool {
        (200..300).contains(&self.status())
    }
}

fn find<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

impl Reply for HttpResponse {
    fn status(&self) -> u16 {
        self.status
    }
    fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }
}

impl Reply for StreamResponse {
    fn status(&self) -> u16 {
        self.status
    }
    fn header(&self, name: &str) -> Option<&str> {
        find(&self.headers, name)
    }
}

/// Sends one LLM request. An `Err` is a failure to get any response at all.
#[async_trait]
pub trait Transport: Send + Sync {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse>;

    /// The same request with the body read incrementally. By default the whole body
    /// arrives as one piece.
    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let res = self.post(req).await?;
        let body = futures::stream::once(async move { Ok(res.body.into_bytes()) });
        Ok(StreamResponse { status: res.status, headers: res.headers, body: Box::pin(body) })
    }
}

tokio::task_local! {
    /// The transport a host chose for one run in place of the client's built-in one.
    static THROUGH: Arc<dyn Transport>;
}

/// Run `work` with every LLM request it makes going through `transport` instead of the
/// client's own. A host uses it when the user's own seam must see the requests (a replaced
/// `globalThis.fetch`, a global HTTP dispatcher): it decides per run, the client stays the same.
pub async fn through<F: Future>(transport: Arc<dyn Transport>, work: F) -> F::Output {
    THROUGH.scope(transport, work).await
}

/// The transport for a request made now: the one [`through`] set for this run, else `own`.
pub(super) fn current(own: &Arc<dyn Transport>) -> Arc<dyn Transport> {
    THROUGH.try_with(Arc::clone).unwrap_or_else(|_| own.clone())
}
