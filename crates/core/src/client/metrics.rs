//! Observability (SPEC §8): semantic metric events, and the Prometheus text they add up to.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};

use crate::tool::ToolEvent;

/// One semantic event, as `onMetric` receives it.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricEvent {
    /// `attempts` counts the HTTP attempts behind this one call (retries included).
    Llm {
        model: String,
        ok: bool,
        ms: u64,
        prompt_tokens: i64,
        completion_tokens: i64,
        attempts: u32,
        /// Which `fallback` entry the call went to (none: the primary).
        fallback: Option<usize>,
    },
    Tool {
        tool: String,
        source: String,
        is_error: bool,
        ms: u64,
        pending: bool,
    },
    /// What a tool reports while it runs, `ctx.progress(...)` or `ctx.log(...)` (an addition):
    /// `tool_progress` or `tool_log`.
    ToolReport {
        tool: String,
        source: String,
        report: ToolEvent,
    },
    Run {
        model: String,
        turns: u32,
        tool_calls: usize,
        total_tokens: i64,
        ms: u64,
        error: Option<String>,
    },
}

impl MetricEvent {
    /// The event object with the reference's keys, in its order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(7);
        match self {
            MetricEvent::Llm { model, ok, ms, prompt_tokens, completion_tokens, attempts, fallback } => {
                m.insert("event".into(), "llm".into());
                m.insert("model".into(), model.as_str().into());
                m.insert("status".into(), if *ok { "ok" } else { "error" }.into());
                m.insert("ms".into(), (*ms).into());
                m.insert("promptTokens".into(), (*prompt_tokens).into());
                m.insert("completionTokens".into(), (*completion_tokens).into());
                // Only a retried call says how many attempts it took; the common shape is unchanged.
                if *attempts > 1 {
                    m.insert("attempts".into(), (*attempts).into());
                }
                // Only a call sent to a fallback entry names it (its index in `fallback`).
                if let Some(i) = fallback {
                    m.insert("fallback".into(), (*i).into());
                }
            }
            MetricEvent::Tool { tool, source, is_error, ms, pending } => {
                m.insert("event".into(), "tool".into());
                m.insert("tool".into(), tool.as_str().into());
                m.insert("source".into(), source.as_str().into());
                m.insert("isError".into(), (*is_error).into());
                m.insert("ms".into(), (*ms).into());
                if *pending {
                    m.insert("pending".into(), true.into());
                }
            }
            MetricEvent::ToolReport { tool, source, report } => {
                let event = if matches!(report, ToolEvent::Progress { .. }) { "tool_progress" } else { "tool_log" };
                m.insert("event".into(), event.into());
                m.insert("tool".into(), tool.as_str().into());
                m.insert("source".into(), source.as_str().into());
                report.fields_into(&mut m);
            }
            MetricEvent::Run { model, turns, tool_calls, total_tokens, ms, error } => {
                m.insert("event".into(), "run".into());
                m.insert("model".into(), model.as_str().into());
                m.insert("turns".into(), (*turns).into());
                m.insert("toolCalls".into(), (*tool_calls).into());
                m.insert("totalTokens".into(), (*total_tokens).into());
                m.insert("ms".into(), (*ms).into());
                if let Some(e) = error {
                    m.insert("error".into(), e.as_str().into());
                }
            }
        }
        Value::Object(m)
    }
}

/// Histogram buckets in seconds, fixed across every port of the library.
const BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
const BUCKET_LABELS: [&str; 10] = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"];

#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; 10],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.sum += seconds;
        self.count += 1;
        for (slot, bound) in self.counts.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *slot += 1;
            }
        }
    }
}

/// Series keyed by their rendered label string; a BTreeMap keeps them sorted for rendering.
#[derive(Debug, Default)]
struct Series {
    llm_requests: BTreeMap<String, f64>,
    llm_tokens: BTreeMap<String, f64>,
    llm_duration: BTreeMap<String, Histogram>,
    tool_calls: BTreeMap<String, f64>,
    tool_duration: BTreeMap<String, Histogram>,
    run_errors: BTreeMap<String, f64>,
}

/// The cumulative registry behind `client.metrics()`.
#[derive(Debug, Default)]
pub struct Registry {
    series: Mutex<Series>,
}

/// The series key `k="v",…` for `pairs` (values escaped as Prometheus reads them), written
/// over `out`: one buffer serves every key of an event, so recording allocates only the first
/// time a series appears.
fn labels<'a>(out: &'a mut String, pairs: &[(&str, &str)]) -> &'a str {
    out.clear();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

fn bump(m: &mut BTreeMap<String, f64>, key: &str, by: f64) {
    match m.get_mut(key) {
        Some(v) => *v += by,
        None => {
            m.insert(key.to_string(), by);
        }
    }
}

fn observe(m: &mut BTreeMap<String, Histogram>, key: &str, seconds: f64) {
    match m.get_mut(key) {
        Some(h) => h.observe(seconds),
        None => m.entry(key.to_string()).or_default().observe(seconds),
    }
}

impl Registry {
    pub fn record(&self, ev: &MetricEvent) {
        let mut key = String::with_capacity(96);
        let mut s = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        match ev {
            MetricEvent::Llm { model, ok, ms, prompt_tokens, completion_tokens, .. } => {
                let status = if *ok { "ok" } else { "error" };
                bump(&mut s.llm_requests, labels(&mut key, &[("model", model), ("status", status)]), 1.0);
                if *ok {
                    bump(&mut s.llm_tokens, labels(&mut key, &[("type", "prompt")]), *prompt_tokens as f64);
                    bump(&mut s.llm_tokens, labels(&mut key, &[("type", "completion")]), *completion_tokens as f64);
                }
                observe(&mut s.llm_duration, labels(&mut key, &[("model", model)]), *ms as f64 / 1000.0);
            }
            MetricEvent::Tool { tool, source, is_error, ms, pending } => {
                let pairs = [
                    ("tool", tool.as_str()),
                    ("source", source.as_str()),
                    ("is_error", if *is_error { "true" } else { "false" }),
                    ("pending", if *pending { "true" } else { "false" }),
                ];
                bump(&mut s.tool_calls, labels(&mut key, &pairs), 1.0);
                observe(&mut s.tool_duration, labels(&mut key, &[("tool", tool)]), *ms as f64 / 1000.0);
            }
            // What a tool reports while it runs adds to no series (the exposition stays the
            // other ports').
            MetricEvent::ToolReport { .. } => {}
            MetricEvent::Run { model, error, .. } => {
                if error.is_some() {
                    bump(&mut s.run_errors, labels(&mut key, &[("model", model)]), 1.0);
                }
            }
        }
    }

    /// The Prometheus text exposition, byte-identical to the other ports.
    pub fn render(&self) -> String {
        let s = self.series.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<String> = Vec::new();
        counter(&mut out, "toolnexus_llm_requests_total", "Total LLM requests.", &s.llm_requests);
        counter(&mut out, "toolnexus_llm_tokens_total", "Total tokens, by type.", &s.llm_tokens);
        histogram(
            &mut out,
            "toolnexus_llm_request_duration_seconds",
            "LLM request duration in seconds.",
            &s.llm_duration,
        );
        counter(&mut out, "toolnexus_tool_calls_total", "Total tool calls.", &s.tool_calls);
        histogram(&mut out, "toolnexus_tool_duration_seconds", "Tool execution duration in seconds.", &s.tool_duration);
        counter(&mut out, "toolnexus_run_errors_total", "Total run errors.", &s.run_errors);
        let mut text = out.join("\n");
        text.push('\n');
        text
    }
}

fn series_name(name: &str, key: &str) -> String {
    if key.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{key}}}")
    }
}

fn counter(out: &mut Vec<String>, name: &str, help: &str, m: &BTreeMap<String, f64>) {
    out.push(format!("# HELP {name} {help}"));
    out.push(format!("# TYPE {name} counter"));
    for (key, v) in m {
        out.push(format!("{} {}", series_name(name, key), crate::json::js_double_text(*v)));
    }
}

fn histogram(out: &mut Vec<String>, name: &str, help: &str, m: &BTreeMap<String, Histogram>) {
    out.push(format!("# HELP {name} {help}"));
    out.push(format!("# TYPE {name} histogram"));
    for (key, h) in m {
        let with_le = |le: &str| {
            if key.is_empty() {
                format!("le=\"{le}\"")
            } else {
                format!("{key},le=\"{le}\"")
            }
        };
        for (count, le) in h.counts.iter().zip(BUCKET_LABELS) {
            out.push(format!("{name}_bucket{{{}}} {count}", with_le(le)));
        }
        out.push(format!("{name}_bucket{{{}}} {}", with_le("+Inf"), h.count));
        out.push(format!("{} {}", series_name(&format!("{name}_sum"), key), crate::json::js_double_text(h.sum)));
        out.push(format!("{} {}", series_name(&format!("{name}_count"), key), h.count));
    }
}

/// Milliseconds since `t0`, as the metric events carry them.
pub(crate) fn elapsed_ms(t0: std::time::Instant) -> u64 {
    u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_newline_and_the_buffer_is_reused() {
        let mut buf = String::from("left over");
        assert_eq!(labels(&mut buf, &[("tool", "a\\b\"c\nd"), ("x", "é")]), r#"tool="a\\b\"c\nd",x="é""#);
        assert_eq!(labels(&mut buf, &[]), "");
        let r = Registry::default();
        for _ in 0..2 {
            r.record(&MetricEvent::Tool {
                tool: "t\n".into(),
                source: "s".into(),
                is_error: true,
                ms: 0,
                pending: false,
            });
        }
        assert!(r.render().contains(
            "toolnexus_tool_calls_total{tool=\"t\\n\",source=\"s\",is_error=\"true\",pending=\"false\"} 2\n"
        ));
    }

    #[test]
    fn an_empty_registry_renders_only_help_and_type() {
        let text = Registry::default().render();
        assert_eq!(text.lines().count(), 12);
        assert!(text.starts_with(
            "# HELP toolnexus_llm_requests_total Total LLM requests.\n# TYPE toolnexus_llm_requests_total counter\n"
        ));
        assert!(text.ends_with("# TYPE toolnexus_run_errors_total counter\n"));
    }

    #[test]
    fn events_render_sorted_with_cumulative_buckets() {
        let r = Registry::default();
        r.record(&MetricEvent::Llm {
            model: "m".into(),
            ok: true,
            ms: 120,
            prompt_tokens: 4,
            completion_tokens: 2,
            attempts: 1,
            fallback: None,
        });
        r.record(&MetricEvent::Llm {
            model: "m".into(),
            ok: false,
            ms: 3,
            prompt_tokens: 0,
            completion_tokens: 0,
            attempts: 3,
            fallback: None,
        });
        r.record(&MetricEvent::Tool {
            tool: "a\"b".into(),
            source: "native".into(),
            is_error: false,
            ms: 0,
            pending: true,
        });
        r.record(&MetricEvent::Run {
            model: "m".into(),
            turns: 1,
            tool_calls: 0,
            total_tokens: 6,
            ms: 5,
            error: Some("x".into()),
        });
        let text = r.render();
        let expected = [
            "toolnexus_llm_requests_total{model=\"m\",status=\"error\"} 1",
            "toolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 1",
            "toolnexus_llm_tokens_total{type=\"completion\"} 2",
            "toolnexus_llm_tokens_total{type=\"prompt\"} 4",
            "toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"0.05\"} 1",
            "toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"0.25\"} 2",
            "toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} 2",
            "toolnexus_llm_request_duration_seconds_sum{model=\"m\"} 0.123",
            "toolnexus_llm_request_duration_seconds_count{model=\"m\"} 2",
            "toolnexus_tool_calls_total{tool=\"a\\\"b\",source=\"native\",is_error=\"false\",pending=\"true\"} 1",
            "toolnexus_tool_duration_seconds_sum{tool=\"a\\\"b\"} 0",
            "toolnexus_run_errors_total{model=\"m\"} 1",
        ];
        for line in expected {
            assert!(text.lines().any(|l| l == line), "missing line {line}\n{text}");
        }
    }

    #[test]
    fn numbers_print_as_javascript_does() {
        assert_eq!(crate::json::js_double_text(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(crate::json::js_double_text(60.0), "60");
        assert_eq!(crate::json::js_double_text(1e-7), "1e-7");
        assert_eq!(crate::json::js_double_text(2e21), "2e+21");
        assert_eq!(crate::json::js_double_text(0.001), "0.001");
    }

    #[test]
    fn event_shapes() {
        let ev = MetricEvent::Tool { tool: "t".into(), source: "s".into(), is_error: false, ms: 1, pending: false };
        assert_eq!(ev.to_value().to_string(), r#"{"event":"tool","tool":"t","source":"s","isError":false,"ms":1}"#);
        let ev = MetricEvent::Run { model: "m".into(), turns: 2, tool_calls: 1, total_tokens: 9, ms: 3, error: None };
        assert_eq!(
            ev.to_value().to_string(),
            r#"{"event":"run","model":"m","turns":2,"toolCalls":1,"totalTokens":9,"ms":3}"#
        );
    }
}
