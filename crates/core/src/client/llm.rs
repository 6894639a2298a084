//! One LLM call: the request body's last steps (`requestParams`, `bodyTransform`), the
//! endpoint and headers, the POST through the transport with retries, and the reply read whole
//! or streamed.

use std::time::Instant;

use serde_json::{Map, Value};

use super::fallback::Route;
use super::metrics::{elapsed_ms, MetricEvent};
use super::result::Usage;
use super::run::Client;
use super::streamed::{Assembler, Streamed};
use super::transport::{HttpRequest, Reply};
use super::wire::{self, Style};
use crate::body::Lines;
use crate::callback::Callback;
use crate::error::{Error, Result};
use crate::json::obj;

impl Client {
    /// requestParams merge (forbidden keys refused with a warning), then bodyTransform.
    pub(super) async fn finalize_body(&self, mut body: Map<String, Value>) -> Result<Value> {
        if let Some(rp) = &self.opts.request_params {
            for (k, v) in rp {
                if k == "messages" || k == "tools" || k == "stream" {
                    crate::warn::warn(&format!(
                        "[toolnexus] requestParams key \"{k}\" is not allowed — ignored (use bodyTransform)"
                    ));
                    continue;
                }
                body.insert(k.clone(), v.clone());
            }
        }
        let body = Value::Object(body);
        match &self.opts.body_transform {
            // Its truthy answer replaces the body; else the body as it left it.
            Some(bt) => bt.call_in_place(body).await,
            None => Ok(body),
        }
    }

    /// The loop's request body as JSON text: written straight from its parts when neither
    /// `requestParams` nor `bodyTransform` reshapes it, else built, reshaped, then written.
    pub(super) async fn body_text(&self, parts: &wire::Parts<'_>) -> Result<String> {
        if self.opts.request_params.is_none() && self.opts.body_transform.is_none() {
            return parts.to_text();
        }
        // Written by the project's compact writer, which any depth is safe with.
        Ok(crate::json::to_string(&self.finalize_body(parts.to_map()).await?))
    }

    /// Where this client's own calls go: the primary connection.
    pub(super) fn primary(&self) -> Route<'_> {
        Route {
            base_url: &self.opts.base_url,
            style: self.opts.style,
            model: &self.opts.model,
            headers: &self.opts.headers,
            api_key: None,
            entry: None,
            beta: None,
            watch: None,
        }
    }

    /// Where a call goes when the primary failed it: fallback entry `i`, each field it leaves
    /// out the primary's.
    pub(super) fn fallback_route(&self, i: usize) -> Option<Route<'_>> {
        let f = self.opts.fallback.get(i)?;
        Some(Route {
            base_url: f.base_url.as_deref().unwrap_or(&self.opts.base_url),
            style: f.style.unwrap_or(self.opts.style),
            model: f.model.as_deref().unwrap_or(&self.opts.model),
            headers: f.headers.as_deref().unwrap_or(&self.opts.headers),
            api_key: f.api_key.as_deref(),
            entry: Some(i),
            beta: None,
            watch: None,
        })
    }

    fn endpoint(route: &Route) -> String {
        let base = route.base_url.strip_suffix('/').unwrap_or(route.base_url);
        match route.style {
            Style::OpenAI => format!("{base}/chat/completions"),
            Style::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Style::Anthropic => format!("{base}/v1/messages"),
        }
    }

    /// The request headers; `translate` spells them in lower case, as the reference does there.
    fn headers(route: &Route, key: &str, translate: bool) -> Vec<(String, String)> {
        let key = route.api_key.unwrap_or(key);
        let mut h: Vec<(String, String)> = match (route.style, translate) {
            (Style::OpenAI, false) => vec![
                ("Authorization".into(), format!("Bearer {key}")),
                ("Content-Type".into(), "application/json".into()),
            ],
            (Style::OpenAI, true) => vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), format!("Bearer {key}")),
            ],
            (Style::Anthropic, false) => vec![
                ("x-api-key".into(), key.into()),
                ("anthropic-version".into(), "2023-06-01".into()),
                ("Content-Type".into(), "application/json".into()),
            ],
            (Style::Anthropic, true) => vec![
                ("content-type".into(), "application/json".into()),
                ("x-api-key".into(), key.into()),
                ("anthropic-version".into(), "2023-06-01".into()),
            ],
        };
        if let Some((k, v)) = route.beta {
            h.push((k.into(), v.into()));
        }
        for (k, v) in route.headers {
            match h.iter_mut().find(|(hk, _)| hk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => h.push((k.clone(), v.clone())),
            }
        }
        h
    }

    /// An error that quotes the endpoint's reply, with the request's secrets (the key, the
    /// header values, the base URL's credentials) cut out: endpoints echo the request back.
    fn scrubbed(&self, route: &Route, key: &str, e: Error) -> Error {
        let secrets = || {
            let mut s = crate::redact::Secrets::new();
            s.add(key);
            s.add_headers(self.opts.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            s.add_url(&self.opts.base_url);
            if route.entry.is_some() {
                if let Some(k) = route.api_key {
                    s.add(k);
                }
                s.add_headers(route.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                s.add_url(route.base_url);
            }
            s
        };
        match e {
            Error::Http { status, body } => Error::Http { status, body: secrets().scrub(&body).into_owned() },
            Error::NotJson(m) => Error::NotJson(secrets().scrub(&m).into_owned()),
            other => other,
        }
    }

    fn request(route: &Route, key: &str, body: &str, translate: bool) -> HttpRequest {
        HttpRequest {
            url: Self::endpoint(route),
            headers: Self::headers(route, key, translate),
            body: body.to_string(),
        }
    }

    pub(super) async fn llm_metric(
        &self,
        route: &Route<'_>,
        ok: bool,
        t0: Instant,
        tokens: (i64, i64),
        attempts: u32,
    ) -> Result<()> {
        let model = route.model.to_string();
        let (prompt_tokens, completion_tokens) = tokens;
        let ms = elapsed_ms(t0);
        let fallback = route.entry;
        self.emit(MetricEvent::Llm { model, ok, ms, prompt_tokens, completion_tokens, attempts, fallback }).await
    }

    /// One non-streaming call: POST with retries; a non-2xx is `LLM <status>: <body>`.
    pub(super) async fn llm_json_with(&self, key: &str, body: &str, translate: bool) -> Result<Value> {
        self.llm_json_at(&self.primary(), key, body, translate).await
    }

    /// One non-streaming call to `route`.
    pub(super) async fn llm_json_at(&self, route: &Route<'_>, key: &str, body: &str, translate: bool) -> Result<Value> {
        let t0 = Instant::now();
        let mut req = Self::request(route, key, body, translate);
        let mut span = self.chat_span(route, &mut req).await;
        let mut attempts = 0;
        let outcome = async {
            let transport = super::transport::current(&self.transport);
            let res = self.send_with_retries(req, |r| transport.post(r), &mut attempts, route).await?;
            if !res.ok() {
                return Err(Error::Http { status: res.status, body: res.body });
            }
            crate::json::parse_reply(&res.body)
                .await
                .map_err(|e| Error::NotJson(format!("LLM response is not valid JSON ({e}): {}", snippet(&res.body))))
        }
        .await;
        match outcome {
            Ok(data) => {
                let mut one = Usage::default();
                wire::add_usage(&mut one, data.get("usage"), route.style);
                if let Some(s) = span.take() {
                    end_chat(s, Some(&data), one, route.style);
                }
                self.llm_metric(route, true, t0, (one.prompt_tokens, one.completion_tokens), attempts).await?;
                Ok(data)
            }
            Err(e) => {
                let e = self.scrubbed(route, key, e);
                if let Some(s) = span.take() {
                    fail_chat(s, &e);
                }
                self.llm_metric(route, false, t0, (0, 0), attempts).await?;
                Err(e)
            }
        }
    }

    /// The `chat <model>` span of one LLM call, when spans are recorded; the request carries it.
    async fn chat_span(&self, route: &Route<'_>, req: &mut HttpRequest) -> Option<crate::trace::Span> {
        if !crate::trace::active() {
            return None;
        }
        let mut attrs = self.gen_ai("chat");
        if let Ok(url) = url::Url::parse(&req.url) {
            if let Some(host) = url.host_str() {
                attrs.insert("server.address".into(), host.into());
            }
            if let Some(port) = url.port_or_known_default() {
                attrs.insert("server.port".into(), port.into());
            }
        }
        let name = if route.model.is_empty() { "chat".to_string() } else { format!("chat {}", route.model) };
        let span = crate::trace::start(name, crate::trace::Kind::Client, attrs).await?;
        span.ready().await;
        span.inject(&mut req.headers);
        Some(span)
    }

    /// One streaming call: text deltas go to the sink as they arrive; the turn is assembled.
    pub(super) async fn llm_stream_at(
        &self,
        route: &Route<'_>,
        key: &str,
        body: &str,
        sink: &dyn Callback,
        usage: &mut Usage,
    ) -> Result<Streamed> {
        let t0 = Instant::now();
        let before = *usage;
        let mut req = Self::request(route, key, body, false);
        let mut span = self.chat_span(route, &mut req).await;
        let style = route.style;
        let mut attempts = 0;
        let outcome = async {
            let transport = super::transport::current(&self.transport);
            let res = self.send_with_retries(req, |r| transport.post_stream(r), &mut attempts, route).await?;
            if !res.ok() {
                let status = res.status;
                return Err(Error::Http { status, body: res.text().await? });
            }
            let mut lines = Lines::new(res.body);
            let mut asm = Assembler::new(style);
            let mut watched = 0;
            while let Some(line) = lines.next_line().await? {
                let Some(rest) = line.strip_prefix("data:") else {
                    continue;
                };
                let (delta, done) = asm.feed(rest.trim(), usage);
                if let Some(d) = delta {
                    sink.call(obj([("type", "text".into()), ("delta", d.into())])).await?;
                }
                // The final tool's arguments so far, for the partial object (see `output`).
                if let Some(json) = route.watch.and_then(|name| asm.args_of(name)).filter(|j| j.len() != watched) {
                    watched = json.len();
                    sink.call(obj([("type", "output_args".into()), ("json", json.into())])).await?;
                }
                if done {
                    break;
                }
            }
            Ok(asm.finish())
        }
        .await;
        match outcome {
            Ok(s) => {
                let (p, c) =
                    (usage.prompt_tokens - before.prompt_tokens, usage.completion_tokens - before.completion_tokens);
                if let Some(sp) = span.take() {
                    let one = Usage { prompt_tokens: p, completion_tokens: c, total_tokens: p + c };
                    end_chat(sp, None, one, style);
                }
                self.llm_metric(route, true, t0, (p, c), attempts).await?;
                Ok(s)
            }
            Err(e) => {
                let e = self.scrubbed(route, key, e);
                if let Some(sp) = span.take() {
                    fail_chat(sp, &e);
                }
                self.llm_metric(route, false, t0, (0, 0), attempts).await?;
                Err(e)
            }
        }
    }
}

fn snippet(body: &str) -> String {
    let mut s: String = body.chars().take(200).collect();
    if s.len() < body.len() {
        s.push('…');
    }
    s
}

/// End a chat span with what the reply says of itself (a streamed reply: its usage only).
fn end_chat(mut span: crate::trace::Span, data: Option<&Value>, usage: Usage, style: Style) {
    if let Some(data) = data {
        if let Some(m) = data.get("model").and_then(Value::as_str) {
            span.set("gen_ai.response.model", m);
        }
        if let Some(id) = data.get("id").and_then(Value::as_str) {
            span.set("gen_ai.response.id", id);
        }
        let reasons: Vec<Value> = match style {
            Style::OpenAI => data
                .get("choices")
                .and_then(Value::as_array)
                .map(|cs| cs.iter().filter_map(|c| c.get("finish_reason").filter(|r| r.is_string()).cloned()).collect())
                .unwrap_or_default(),
            Style::Anthropic => data.get("stop_reason").filter(|r| r.is_string()).cloned().into_iter().collect(),
        };
        if !reasons.is_empty() {
            span.set("gen_ai.response.finish_reasons", reasons);
        }
    }
    span.set("gen_ai.usage.input_tokens", usage.prompt_tokens);
    span.set("gen_ai.usage.output_tokens", usage.completion_tokens);
    span.end(None);
}

fn fail_chat(mut span: crate::trace::Span, e: &Error) {
    span.set("error.type", e.kind());
    span.end(Some(&e.to_string()));
}
