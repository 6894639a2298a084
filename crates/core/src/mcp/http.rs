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

use super::oauth::{ServerAuth, MAX_AUTHORIZATIONS};

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

/// The `WWW-Authenticate` challenge of a 401 or 403 answer, when it asks for a bearer token.
fn bearer_challenge(e: &HttpError) -> Option<&str> {
    let header = match e {
        StreamableHttpError::AuthRequired(a) => a.www_authenticate_header.as_str(),
        StreamableHttpError::InsufficientScope(s) => s.www_authenticate_header.as_str(),
        _ => return None,
    };
    header.trim_start().get(..6).filter(|scheme| scheme.eq_ignore_ascii_case("bearer")).map(|_| header)
}

/// A reqwest client whose requests end when `lifetime` is cancelled, signed in to the server
/// when it asks for OAuth and `auth` can.
#[derive(Clone)]
pub(crate) struct BoundedHttp {
    inner: reqwest::Client,
    lifetime: CancellationToken,
    auth: Option<Arc<ServerAuth>>,
}

impl BoundedHttp {
    pub(crate) fn new(lifetime: CancellationToken, auth: Option<Arc<ServerAuth>>) -> Result<Self, String> {
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
        Ok(BoundedHttp { inner, lifetime, auth })
    }

    /// The token to send: the signed-in one, else what the transport was given.
    async fn token(&self, given: Option<String>) -> Option<String> {
        match &self.auth {
            Some(auth) => auth.bearer().await.or(given),
            None => given,
        }
    }

    /// Send with the current token; a bearer challenge in answer is met by signing in (at most
    /// [`MAX_AUTHORIZATIONS`] times for one message) and the message sent again.
    async fn post_signed_in<F, Fut>(
        &self,
        message: &ClientJsonRpcMessage,
        given: Option<String>,
        send: F,
    ) -> Result<StreamableHttpPostResponse, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<StreamableHttpPostResponse, HttpError>>,
    {
        // A tool call can park on a login (handed out under its JSON-RPC id); anything else
        // fails without a way to ask.
        let parkable = match message {
            ClientJsonRpcMessage::Request(r) if matches!(r.request, ClientRequest::CallToolRequest(_)) => {
                Some(r.id.to_string())
            }
            _ => None,
        };
        let mut signed_in = 0;
        loop {
            let token = self.token(given.clone()).await;
            let answer = self.bounded(send(token.clone())).await;
            let (Some(auth), Err(e)) = (&self.auth, &answer) else { return answer.map(|r| self.bounded_response(r)) };
            let Some(challenge) = bearer_challenge(e).filter(|_| signed_in < MAX_AUTHORIZATIONS) else {
                return answer.map(|r| self.bounded_response(r));
            };
            let recovered = tokio::select! {
                r = auth.recover(challenge, token.as_deref(), parkable.as_deref()) => r,
                _ = self.lifetime.cancelled() => return Err(StreamableHttpError::TransportChannelClosed),
            };
            if recovered.is_err() {
                return answer.map(|r| self.bounded_response(r));
            }
            signed_in += 1;
        }
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
        self.post_signed_in(&message, auth_header, |token| {
            self.inner.post_message(uri.clone(), message.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
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
        self.post_signed_in(&message, auth_header, |token| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
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
        self.post_signed_in(&message, auth_header, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let token = self.token(auth_header).await;
        self.bounded(self.inner.delete_session(uri, session_id, token, custom_headers)).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let token = self.token(auth_header).await;
        let s = self.bounded(self.inner.get_stream(uri, session_id, last_event_id, token, custom_headers)).await?;
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
        let token = self.token(auth_header).await;
        let work = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            token,
            custom_headers,
            max_sse_event_size,
        );
        let s = self.bounded(work).await?;
        Ok(self.bounded_stream(s))
    }
}
