//! `webfetch` against a local server: formats, failures, cancellation.

use std::time::{Duration, Instant};

use hyper::Response;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolnexus_core::{ToolContext, ToolResult};

use super::*;
use crate::util::serve::{full, serve};

/// A one-route-per-path HTTP/1.1 server on 127.0.0.1.
async fn web_server() -> String {
    let addr = serve(|req| async move {
        let path = req.uri().path().to_string();
        let (status, extra, body): (u16, Option<(&str, &str)>, Vec<u8>) = match path.as_str() {
            "/html" => (
                200,
                Some(("content-type", "text/html; charset=iso-8859-1")),
                "\u{FEFF}<html><head><style>x{}</style><SCRIPT>a<b</script></head><body><h1>Hi</h1>  \n\n\n\n<p>café &amp;</p>\n</body></html>\n".into(),
            ),
            "/404" => (404, None, b"nope".to_vec()),
            "/redirect" => (302, Some(("location", "/html")), Vec::new()),
            "/slow" => {
                tokio::time::sleep(Duration::from_millis(1500)).await;
                (200, None, b"late".to_vec())
            }
            "/bytes" => (200, None, vec![b'a', 0xFF, b'b']),
            // The request head as it arrived (names as hyper gives them: lower-case).
            "/headers" => {
                let mut head = format!("{} {} {:?}\r\n", req.method(), req.uri(), req.version());
                for (k, v) in req.headers() {
                    head.push_str(&format!("{k}: {}\r\n", String::from_utf8_lossy(v.as_bytes())));
                }
                (200, None, head.into_bytes())
            }
            _ => (200, None, b"plain <b>text</b>".to_vec()),
        };
        let mut res = Response::builder().status(status).header("connection", "close");
        if let Some((k, v)) = extra {
            res = res.header(k, v);
        }
        Some(res.body(full(body)).unwrap())
    })
    .await;
    format!("http://{addr}")
}

#[tokio::test]
async fn webfetch_strips_markup_unless_html_is_asked_for() {
    let base = web_server().await;
    let url = format!("{base}/html");
    let md = call("webfetch", json!({"url": url})).await;
    assert_eq!(md, ok("Hi\n\ncafé &amp;", json!({"status": 200, "format": "markdown"})));
    let t = call("webfetch", json!({"url": url, "format": "text"})).await;
    assert_eq!(t, ok("Hi\n\ncafé &amp;", json!({"status": 200, "format": "text"})));
    let h = call("webfetch", json!({"url": url, "format": "html"})).await;
    assert!(h.output.starts_with("<html><head><style>"), "the BOM is dropped: {:?}", h.output);
    assert_eq!(h.metadata, Some(json!({"status": 200, "format": "html"})));
    let odd = call("webfetch", json!({"url": url, "format": "pdf"})).await;
    assert_eq!(odd.metadata, Some(json!({"status": 200, "format": "markdown"})));
    let r = call("webfetch", json!({"url": format!("{base}/redirect")})).await;
    assert_eq!(r.output, "Hi\n\ncafé &amp;");
    let r = call("webfetch", json!({"url": format!("{base}/bytes")})).await;
    assert_eq!(r.output, "a\u{FFFD}b");
    let r = call("webfetch", json!({"url": format!("{base}/headers"), "format": "html"})).await;
    assert!(r.output.starts_with("GET /headers HTTP/1.1\r\n"), "{}", r.output);
    assert!(r.output.contains("user-agent: node\r\n"), "{}", r.output);
}

#[tokio::test]
async fn webfetch_failures() {
    let base = web_server().await;
    assert_eq!(
        call("webfetch", json!({"url": format!("{base}/404")})).await,
        err_meta("HTTP 404", json!({"status": 404}))
    );
    assert_eq!(call("webfetch", json!({})).await, ToolResult::error("webfetch: url is required"));
    assert_eq!(
        call("webfetch", json!({"url": "not a url"})).await,
        ToolResult::error("webfetch: Failed to parse URL from not a url")
    );
    assert_eq!(
        call("webfetch", json!({"url": "http://127.0.0.1:1/"})).await,
        ToolResult::error("webfetch: fetch failed")
    );
    assert_eq!(call("webfetch", json!({"url": "ftp://127.0.0.1/"})).await, ToolResult::error("webfetch: fetch failed"));
    let t0 = Instant::now();
    assert_eq!(
        call("webfetch", json!({"url": format!("{base}/slow"), "timeout": 0.2})).await,
        ToolResult::error("webfetch: This operation was aborted")
    );
    assert!(t0.elapsed() < Duration::from_millis(1200));
}

#[tokio::test]
async fn webfetch_stops_when_the_caller_cancels() {
    let base = web_server().await;
    let token = CancellationToken::new();
    let ctx = ToolContext { cancel: Some(token.clone()), ..Default::default() };
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let r = call_ctx("webfetch", json!({"url": format!("{base}/slow")}), ctx).await;
    assert_eq!(r, ToolResult::error("webfetch: This operation was aborted"));
}
