//! The legacy HTTP+SSE client transport, the fallback for a remote server that does not speak
//! streamable HTTP: a long-lived GET event stream names the endpoint to POST messages to, and
//! the server's messages arrive as `message` events on that stream.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE};
use reqwest::Url;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::body::Lines;
use crate::error::Error;

/// The most one event (or one line of it) may buffer before the stream is dropped.
const MAX_EVENT_BYTES: usize = 128 * 1024 * 1024;

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Vec<u8>>> + Send>>;

/// One server-sent event: its `event` name and joined `data`.
struct Event {
    name: String,
    data: String,
}

/// Splits an event-stream body into events, bounded in memory.
struct EventReader {
    lines: Lines,
}

impl EventReader {
    fn new(body: Body) -> Self {
        let body = body.map(|r| r.map_err(|e| Error::Transport(format!("SSE error: {e}"))));
        EventReader { lines: Lines::capped(Box::pin(body), MAX_EVENT_BYTES) }
    }

    async fn next_line(&mut self) -> Result<Option<String>, String> {
        self.lines.next_line().await.map_err(|e| e.to_string())
    }

    async fn next_event(&mut self) -> Result<Option<Event>, String> {
        let mut name = String::new();
        let mut data: Option<String> = None;
        loop {
            let Some(line) = self.next_line().await? else { return Ok(None) };
            if line.is_empty() {
                match data.take() {
                    Some(data) => {
                        let name = if name.is_empty() { "message".to_string() } else { name };
                        return Ok(Some(Event { name, data }));
                    }
                    None => {
                        name.clear();
                        continue;
                    }
                }
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => name = value.to_string(),
                "data" => match data.as_mut() {
                    None => data = Some(value.to_string()),
                    Some(d) => {
                        if d.len() + value.len() > MAX_EVENT_BYTES {
                            return Err("SSE event too large".into());
                        }
                        d.push('\n');
                        d.push_str(value);
                    }
                },
                _ => {}
            }
        }
    }
}

fn origin(u: &Url) -> (String, Option<String>, Option<u16>) {
    (u.scheme().to_string(), u.host_str().map(str::to_string), u.port_or_known_default())
}

/// A connected legacy SSE session.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    rx: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

impl SseTransport {
    /// Open the event stream and wait for the server to name its message endpoint.
    pub(crate) async fn connect(url: Url, headers: HeaderMap) -> Result<Self, String> {
        let client = crate::net::client_builder().build().map_err(|e| e.to_string())?;
        let resp = client
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("SSE error: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("SSE error: Non-200 status code ({})", resp.status().as_u16()));
        }
        let mut events = EventReader::new(Box::pin(resp.bytes_stream().map(|r| r.map(|b| b.to_vec()))));
        let endpoint = loop {
            match events.next_event().await? {
                None => return Err("SSE stream ended before the endpoint event".into()),
                Some(ev) if ev.name == "endpoint" => {
                    let endpoint = url.join(ev.data.trim()).map_err(|e| format!("SSE error: bad endpoint ({e})"))?;
                    if origin(&endpoint) != origin(&url) {
                        return Err(format!(
                            "Endpoint origin does not match connection origin: {}",
                            endpoint.origin().ascii_serialization()
                        ));
                    }
                    break endpoint;
                }
                Some(_) => continue,
            }
        };
        let (tx, rx) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            // Messages that do not parse are skipped; the stream ending ends the session.
            while let Ok(Some(ev)) = events.next_event().await {
                if ev.name != "message" {
                    continue;
                }
                if let Ok(msg) = crate::json::parse_str::<RxJsonRpcMessage<RoleClient>>(&ev.data) {
                    if tx.send(msg).await.is_err() {
                        break;
                    }
                }
            }
        });
        Ok(SseTransport { client, endpoint, headers, rx, reader })
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let req = self.client.post(self.endpoint.clone()).headers(self.headers.clone());
        // The server's reply may echo the request: the header values are cut out of it.
        let mut secrets = crate::redact::Secrets::new();
        secrets.add_headers(self.headers.iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))));
        async move {
            let body = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            let resp =
                req.header(CONTENT_TYPE, "application/json").body(body).send().await.map_err(std::io::Error::other)?;
            let status = resp.status();
            if !status.is_success() {
                let text = resp.text().await.unwrap_or_default();
                let text = secrets.scrub(&text).into_owned();
                return Err(std::io::Error::other(format!(
                    "Error POSTing to endpoint (HTTP {}): {text}",
                    status.as_u16()
                )));
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.rx.close();
        Ok(())
    }
}
