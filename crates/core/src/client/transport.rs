//! The LLM transport seam: one POST, answered with status, headers and the whole body.

use std::pin::Pin;

use async_trait::async_trait;
use futures::{Stream, StreamExt};

use crate::error::{Error, Result};

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

/// A response body arriving in pieces.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Vec<u8>>> + Send>>;

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

/// The default transport: one pooled reqwest client (rustls).
pub struct ReqwestTransport {
    client: reqwest::Client,
    /// The last URL posted to, parsed: a client talks to one endpoint, so parsing (and IDNA
    /// processing) is done once rather than per request.
    last_url: std::sync::Mutex<Option<(String, reqwest::Url)>>,
}

impl ReqwestTransport {
    pub fn new() -> Result<Self> {
        let client = crate::net::client_builder()
            .build()
            .map_err(|e| Error::Invalid(format!("could not build the HTTP client: {e}")))?;
        Ok(ReqwestTransport { client, last_url: std::sync::Mutex::new(None) })
    }
}

impl ReqwestTransport {
    /// `raw` parsed, from the one-entry cache when it is the same URL as last time. A URL that
    /// does not parse is left to reqwest, so its error reads as it always has.
    fn request(&self, raw: &str) -> reqwest::RequestBuilder {
        let mut last = self.last_url.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, url)) = last.as_ref().filter(|(text, _)| text == raw) {
            return self.client.post(url.clone());
        }
        match reqwest::Url::parse(raw) {
            Ok(url) => {
                *last = Some((raw.to_string(), url.clone()));
                self.client.post(url)
            }
            Err(_) => self.client.post(raw),
        }
    }

    async fn send(&self, req: HttpRequest) -> Result<(u16, Vec<(String, String)>, reqwest::Response)> {
        let mut rb = self.request(&req.url);
        for (k, v) in &req.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let res = rb.body(req.body).send().await.map_err(fetch_failed)?;
        let status = res.status().as_u16();
        let headers = res
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        Ok((status, headers, res))
    }
}

#[async_trait]
impl Transport for ReqwestTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let (status, headers, res) = self.send(req).await?;
        let body = res.text().await.map_err(fetch_failed)?;
        Ok(HttpResponse { status, headers, body })
    }

    /// The body as it arrives, chunk by chunk.
    async fn post_stream(&self, req: HttpRequest) -> Result<StreamResponse> {
        let (status, headers, res) = self.send(req).await?;
        let body = res.bytes_stream().map(|chunk| chunk.map(|b| b.to_vec()).map_err(fetch_failed));
        Ok(StreamResponse { status, headers, body: Box::pin(body) })
    }
}

fn fetch_failed(e: reqwest::Error) -> Error {
    let mut cause = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        cause = format!("{cause}: {s}");
        src = s.source();
    }
    Error::Transport(format!("fetch failed ({cause})"))
}
