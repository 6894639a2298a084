//! The LLM transport seam: one POST, answered with status, headers and the whole body.

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
