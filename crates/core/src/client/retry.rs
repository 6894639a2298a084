//! Retrying an LLM call: 429/5xx and network failures, with exponential back-off and
//! `Retry-After`, as `onError` allows and never past `retries`.

use std::time::Duration;

use serde_json::Value;

use super::fallback::Route;
use super::run::Client;
use super::transport::{HttpRequest, Reply};
use crate::error::Result;
use crate::json::obj;

impl Client {
    /// Ask `onError` (or the default: retryable ⇒ retry) whether to try again.
    /// With fallback entries configured, `onError` is also told where the call went: the
    /// model, and which entry (`fallback`, its index; absent for the primary).
    async fn should_retry(&self, mut info: Value, retryable: bool, route: &Route<'_>) -> Result<bool> {
        let Some(cb) = &self.opts.on_error else {
            return Ok(retryable);
        };
        if !self.opts.fallback.is_empty() {
            if let Value::Object(m) = &mut info {
                m.insert("model".into(), route.model.into());
                if let Some(i) = route.entry {
                    m.insert("fallback".into(), i.into());
                }
            }
        }
        Ok(cb.call(info).await?.as_str() != Some("fail"))
    }

    /// Retry 429/5xx and network failures with exponential backoff (Retry-After honoured in
    /// its delay-seconds form), as `onError` allows and never past `retries`.
    pub(super) async fn send_with_retries<R, F, Fut>(
        &self,
        req: HttpRequest,
        send: F,
        attempts: &mut u32,
        route: &Route<'_>,
    ) -> Result<R>
    where
        R: Reply,
        F: Fn(HttpRequest) -> Fut,
        Fut: std::future::Future<Output = Result<R>>,
    {
        let retries = self.opts.retries;
        let base = self.opts.retry_base_ms;
        let mut attempt = 0u32;
        loop {
            *attempts = attempt + 1;
            match send(req.clone()).await {
                Ok(res) if res.ok() => return Ok(res),
                Ok(res) => {
                    let retryable = matches!(res.status(), 429 | 500 | 502 | 503 | 504);
                    let info = obj([
                        ("status", res.status().into()),
                        ("attempt", attempt.into()),
                        ("retryable", retryable.into()),
                    ]);
                    if !self.should_retry(info, retryable, route).await? || attempt >= retries {
                        return Ok(res);
                    }
                    let wait = retry_after_ms(res.header("retry-after")).unwrap_or_else(|| backoff_ms(base, attempt));
                    crate::host_thread::sleep(Duration::from_secs_f64(wait / 1000.0)).await;
                }
                Err(e) => {
                    let error = e.js_shape();
                    let info = obj([("error", error), ("attempt", attempt.into()), ("retryable", true.into())]);
                    if !self.should_retry(info, true, route).await? || attempt >= retries {
                        return Err(e);
                    }
                    crate::host_thread::sleep(Duration::from_secs_f64(backoff_ms(base, attempt) / 1000.0)).await;
                }
            }
            attempt += 1;
        }
    }
}

fn backoff_ms(base: f64, attempt: u32) -> f64 {
    let jitter: f64 = rand::random::<f64>() * 100.0;
    (base * 2f64.powi(attempt as i32) + jitter).max(0.0)
}

/// `Retry-After` in its delay-seconds form only: ASCII digits, at most 2147483647.
pub fn retry_after_ms(raw: Option<&str>) -> Option<f64> {
    let s = raw?.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = s.parse().ok()?;
    (secs <= 2_147_483_647).then_some(secs as f64 * 1000.0)
}
