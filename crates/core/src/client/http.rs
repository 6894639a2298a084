//! The built-in LLM transport: each POST through a [`Fetcher`], as the TypeScript library
//! sends it through Node's `fetch`.

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use super::transport::{HttpRequest, HttpResponse, StreamResponse, Transport};
use crate::error::{Error, Result};
use crate::fetch::{Fetcher, Request};

pub struct FetchTransport {
    fetcher: Fetcher,
}

impl FetchTransport {
    pub fn new(fetcher: Fetcher) -> Self {
        FetchTransport { fetcher }
    }

    /// Over the process's shared fetcher (tokio's sockets, one pool per origin).
    pub fn shared() -> Self {
        FetchTransport { fetcher: Fetcher::shared() }
    }

    async fn send(&self, req: HttpRequest) -> Result<crate::fetch::Response> {
        let request = Request {
            method: http::Method::POST,
            url: req.url,
            headers: req.headers,
            body: Some(Bytes::from(req.body)),
        };
        self.fetcher.fetch(request).await.map_err(Error::Fetch)
    }
}

/// A body as `res.text()` reads it: UTF-8, a leading byte-order mark dropped, each invalid
/// sequence one U+FFFD.
pub fn text_of(bytes: Vec<u8>) -> String {
    let bytes = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[async_trait]
impl Transport for FetchTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let res = self.send(req).await?;
        let (status, headers) = (res.status, res.headers.clone());
        // `res.text()` cannot make a string of more bytes than V8's limit; stop reading there
        // with Node's error rather than holding an endless body in memory.
        let bytes = res.bytes_up_to(crate::jsstr::MAX_LENGTH).await.map_err(Error::Fetch)?;
        let Some(bytes) = bytes else {
            return Err(Error::Invalid(crate::jsstr::TOO_LONG.into()));
        };
        Ok(HttpResponse { status, headers, body: text_of(bytes) })
    }

    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let res = self.send(req).await?;
        let body = res.body.map(|piece| piece.map(Vec::from).map_err(Error::Fetch));
        Ok(StreamResponse { status: res.status, headers: res.headers, body: body.boxed() })
    }
}
