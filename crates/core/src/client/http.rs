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
    /// Whether a request holds the host while it is out (see `shared`).
    holds: bool,
}

impl FetchTransport {
    /// Over `fetcher`, whose sockets the host is taken to see (the binding's event-loop sockets):
    /// a request takes no hold of its own.
    pub fn new(fetcher: Fetcher) -> Self {
        FetchTransport { fetcher, holds: false }
    }

    /// Over the process's shared fetcher (tokio's sockets, one pool per origin). A host that
    /// polls a run on its own thread cannot see those sockets, so each request holds the host
    /// (`host_thread::hold`) until its reply has been read to the end: without it, a host whose only
    /// pending work is the run could end its process mid-request.
    pub fn shared() -> Self {
        FetchTransport { fetcher: Fetcher::shared(), holds: true }
    }

    fn hold(&self) -> Option<crate::host_thread::Hold> {
        if self.holds {
            crate::host_thread::hold()
        } else {
            None
        }
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
        let _hold = self.hold();
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
        let hold = self.hold();
        let res = self.send(req).await?;
        // The hold goes with the body: it ends when the body is dropped, read to the end or not.
        let body = res.body.map(move |piece| {
            let _held = &hold;
            piece.map(Vec::from).map_err(Error::Fetch)
        });
        Ok(StreamResponse { status: res.status, headers: res.headers, body: body.boxed() })
    }
}
