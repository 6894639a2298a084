//! The HTTP client behind the streamable-HTTP transport: reqwest, with every request and
//! response stream tied to the connection's lifetime, so a server that never answers cannot
//! keep a request (and its socket) alive after the connection is given up or closed.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio_util::sync::CancellationToken;

type HttpError = StreamableHttpError<reqwest::Error>;

const MAX_REDIRECTS: usize = 10;

/// A tool call's W3C trace context (its request's `_meta`, see the MCP tool) as headers too.
fn with_trace(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let ClientJsonRpcMessage::Request(r) = message else { return headers };
    let ClientRequest::CallToolRequest(call) = &r.request else { return headers };
    let Some(meta) = &call.params.meta else { return headers };
    for key in ["traceparent", "tracestate"] {
        let value = meta.0 .0.get(key).and_then(serde_json::Value::as_str).and_then(|v| HeaderValue::from_str(v).ok());
        if let Some(value) = value {
            headers.insert(HeaderName::from_static(key), value);
        }
    }
    headers
}

/// A reqwest client whose requests end when `lifetime` is cancelled.
#[derive(Clone)]
pub(crate) struct BoundedHttp {
    inner: reqwest::Client,
    lifetime: CancellationToken,
}

impl BoundedHttp {
    pub(crate) fn new(lifetime: CancellationToken) -> Result<Self, String> {
        // Follow only same-origin redirects that keep the method and body, so configured
        // headers (tokens) never travel to another origin.
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        let inner = crate::net::client_builder()
            .pool_max_idle_per_host(0)
            .redirect(policy)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(BoundedHttp { inner, lifetime })
    }

    async fn bounded<T>(&self, work: impl std::future::Future<Output = Result<T, HttpError>>) -> Result<T, HttpError> {
        tokio::select! {
            r = work => r,
            _ = self.lifetime.cancelled() => Err(StreamableHttpError::TransportChannelClosed),
        }
    }

    fn bounded_stream(
        &self,
        s: BoxStream<'static, Result<Sse, SseError>>,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        s.take_until(self.lifetime.clone().cancelled_owned()).boxed()
    }

    fn bounded_response(&self, r: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match r {
            StreamableHttpPostResponse::Sse(s, id) => StreamableHttpPostResponse::Sse(self.bounded_stream(s), id),
            other => other,
        }
    }
}

impl StreamableHttpClient for BoundedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace(&message, custom_headers);
        let r = self.bounded(self.inner.post_message(uri, message, session_id, auth_header, custom_headers)).await?;
        Ok(self.bounded_response(r))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace(&message, custom_headers);
        let work = self.inner.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        let r = self.bounded(work).await?;
        Ok(self.bounded_response(r))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let custom_headers = with_trace(&message, custom_headers);
        let work =
            self.inner.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits);
        let r = self.bounded(work).await?;
        Ok(self.bounded_response(r))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.bounded(self.inner.delete_session(uri, session_id, auth_header, custom_headers)).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let s =
            self.bounded(self.inner.get_stream(uri, session_id, last_event_id, auth_header, custom_headers)).await?;
        Ok(self.bounded_stream(s))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let work = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        let s = self.bounded(work).await?;
        Ok(self.bounded_stream(s))
    }
}
