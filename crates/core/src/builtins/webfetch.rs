//! `webfetch`: one HTTP GET; the body as it came (`html`) or with its markup stripped
//! (`text` and `markdown` alike).

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{json, Value};

use super::{arg, arg_number, arg_text, err_with, node_rules, ok_with, BoxFut, Builtin};
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

/// What the runtime's fetch says when the request could not be made.
const FETCH_FAILED: &str = "fetch failed";
/// What it says when the request was aborted (the timeout, or the caller).
const ABORTED: &str = "This operation was aborted";

pub fn tool() -> SharedTool {
    Builtin::shared(
        "webfetch",
        "HTTP GET a URL and return its body as text, markdown, or html.",
        json!({
            "type": "object",
            "properties": {
                "url": { "type": "string", "description": "URL to fetch" },
                "format": {
                    "type": "string",
                    "enum": ["text", "markdown", "html"],
                    "description": "Response format (default markdown)"
                },
                "timeout": { "type": "number", "description": "Timeout in seconds (default 30)" }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
        run,
    )
}

fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            crate::net::fetch_like_builder()
                // No idle connection outlives its call: a pooled one would be tied to the
                // runtime that opened it, and a host may run more than one.
                .pool_max_idle_per_host(0)
                .build()
                .ok()
        })
        .as_ref()
}

fn run(args: Value, ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let url = arg_text(&args, "url");
        if url.is_empty() {
            return Ok(ToolResult::error("webfetch: url is required"));
        }
        let format = match arg(&args, "format").and_then(Value::as_str) {
            Some(f @ ("text" | "html")) => f.to_string(),
            _ => "markdown".to_string(),
        };
        let seconds = arg_number(&args, "timeout").unwrap_or(30.0);
        let fetched = async {
            tokio::select! {
                r = fetch(&url) => r,
                _ = tokio::time::sleep(node_rules::timer_delay(seconds * 1000.0)) => Err(ABORTED.to_string()),
                _ = async {
                    match &ctx.cancel {
                        Some(t) => t.cancelled().await,
                        None => std::future::pending().await,
                    }
                } => Err(ABORTED.to_string()),
            }
        };
        let (status, body) = match fetched.await {
            Ok(x) => x,
            Err(e) => return Ok(ToolResult::error(format!("webfetch: {e}"))),
        };
        if !(200..300).contains(&status) {
            return Ok(err_with(format!("HTTP {status}"), json!({ "status": status })));
        }
        let output = if format == "html" { body } else { strip_html(&body) };
        Ok(ok_with(output, json!({ "status": status, "format": format })))
    })
}

/// GET the URL: its status and its body decoded as UTF-8 (a leading BOM dropped), failing
/// once the body passes what one string can be built from.
async fn fetch(url: &str) -> Result<(u16, String), String> {
    let parsed = reqwest::Url::parse(url).map_err(|_| format!("Failed to parse URL from {url}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(FETCH_FAILED.into());
    }
    let client = client().ok_or_else(|| FETCH_FAILED.to_string())?;
    let res = client
        .get(parsed)
        .header("accept", "*/*")
        .header("accept-language", "*")
        .header("sec-fetch-mode", "cors")
        .send()
        .await
        .map_err(|_| FETCH_FAILED.to_string())?;
    let status = res.status().as_u16();
    Ok((status, crate::http_tool::body_text(res).await?))
}

struct Strippers {
    script: Regex,
    style: Regex,
    tag: Regex,
    trailing_space: Regex,
    blank_runs: Regex,
}

fn strippers() -> Option<&'static Strippers> {
    static S: OnceLock<Option<Strippers>> = OnceLock::new();
    S.get_or_init(|| {
        Some(Strippers {
            script: Regex::new(r"<[sS][cC][rR][iI][pP][tT](?s:.)*?</[sS][cC][rR][iI][pP][tT]>").ok()?,
            style: Regex::new(r"<[sS][tT][yY][lL][eE](?s:.)*?</[sS][tT][yY][lL][eE]>").ok()?,
            tag: Regex::new(r"<[^>]+>").ok()?,
            trailing_space: Regex::new(r"[ \t]+\n").ok()?,
            blank_runs: Regex::new(r"\n{3,}").ok()?,
        })
    })
    .as_ref()
}

/// A light HTML-to-text pass: drop scripts, styles and tags, trim spaces before line ends,
/// squeeze runs of blank lines, trim the ends.
pub(crate) fn strip_html(html: &str) -> String {
    let Some(s) = strippers() else { return node_rules::trim(html).to_string() };
    let t = s.script.replace_all(html, "");
    let t = s.style.replace_all(&t, "");
    let t = s.tag.replace_all(&t, "");
    let t = s.trailing_space.replace_all(&t, "\n");
    let t = s.blank_runs.replace_all(&t, "\n\n");
    node_rules::trim(&t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_stripped_to_text() {
        let html = "<html><head><STYLE>b{}</style><script type=x>if (a<b) {}</Script></head>\n<body><h1>Title</h1>  \n\n\n\n<p>One &amp; two</p>\t\n</body></html>\n";
        assert_eq!(strip_html(html), "Title\n\nOne &amp; two");
        assert_eq!(strip_html("\u{FEFF} plain \u{A0}"), "plain");
        assert_eq!(strip_html("a <b\nc> d"), "a  d");
    }
}
