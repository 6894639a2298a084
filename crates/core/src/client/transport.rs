//! The LLM transport seam: one POST, answered with status, headers and the whole body.

use async_trait::async_trait;

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
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends one LLM request. An `Err` is a failure to get any response at all.
#[async_trait]
pub trait Transport: Send + Sync {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse>;
}

/// The default transport: one pooled reqwest client (rustls).
pub struct ReqwestTransport {
    client: reqwest::Client,
}

impl ReqwestTransport {
    pub fn new() -> Result<Self> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| Error::Invalid(format!("could not build the HTTP client: {e}")))?;
        Ok(ReqwestTransport { client })
    }
}

#[async_trait]
impl Transport for ReqwestTransport {
    async fn post(&self, req: HttpRequest) -> Result<HttpResponse> {
        let mut rb = self.client.post(&req.url);
        for (k, v) in &req.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let res = rb.body(req.body).send().await.map_err(fetch_failed)?;
        let status = res.status().as_u16();
        let headers = res
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = res.text().await.map_err(fetch_failed)?;
        Ok(HttpResponse { status, headers, body })
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
