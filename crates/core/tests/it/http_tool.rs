//! HTTP tools against a real HTTP/1.1 server on 127.0.0.1.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolnexus_core::http_tool::{http_tool, HttpToolOptions, ResultMode, ABORTED};
use toolnexus_core::tool::ToolContext;

use crate::common::{Action, MockLlm, Reply};

fn opts(method: &str, url: String) -> HttpToolOptions {
    HttpToolOptions::new("t", "a test endpoint", method, url)
}

#[tokio::test]
async fn get_puts_arguments_in_the_query_and_reports_the_status() {
    let server = MockLlm::script(vec![Reply::raw(200, r#"{"ok":true}"#)]).await;
    let t = http_tool(opts("get", format!("{}/search", server.url())));
    assert_eq!(t.source(), "http");
    let r = t.execute(json!({"q": "adapters & more", "page": 2}), ToolContext::default()).await.unwrap();
    assert!(!r.is_error);
    assert_eq!(r.output, r#"{"ok":true}"#);
    assert_eq!(r.metadata, Some(json!({"status": 200})));
    let seen = server.request(0);
    assert_eq!(seen.method, "GET");
    assert_eq!(seen.path, "/search?q=adapters+%26+more&page=2");
    assert_eq!(seen.raw, "");
}

#[tokio::test]
async fn post_fills_the_path_the_query_and_a_json_body_with_env_headers() {
    // The header's variable is read from the process environment: run in a process that has it.
    crate::alone!(post_fills_the_path_the_query_and_a_json_body_with_env_headers, |cmd| {
        cmd.env("TOOLNEXUS_IT_DOCS_TOKEN", "YOUR_KEY_HERE");
    });
    let server = MockLlm::script(vec![Reply::raw(201, r#"{"created":true}"#)]).await;
    let mut o = opts("POST", format!("{}/issues/{{issue}}/comments", server.url()));
    o.headers = vec![("Authorization".into(), "Bearer ${TOOLNEXUS_IT_DOCS_TOKEN}".into())];
    o.query = vec!["notify".into()];
    let t = http_tool(o);
    let r =
        t.execute(json!({"issue": "4 2", "notify": true, "text": "looks good"}), ToolContext::default()).await.unwrap();
    assert_eq!((r.is_error, r.metadata), (false, Some(json!({"status": 201}))));
    let seen = server.request(0);
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/issues/4%202/comments?notify=true");
    assert_eq!(seen.raw, r#"{"text":"looks good"}"#);
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.header("authorization"), Some("Bearer YOUR_KEY_HERE"));
}

#[tokio::test]
async fn form_bodies_and_head_requests() {
    let server = MockLlm::script(vec![Reply::raw(200, "ok"), Reply::raw(200, "")]).await;
    let mut o = opts("put", format!("{}/f", server.url()));
    o.body = toolnexus_core::http_tool::BodyMode::Form;
    http_tool(o).execute(json!({"a": "x y", "b": 1}), ToolContext::default()).await.unwrap();
    let seen = server.request(0);
    assert_eq!((seen.method.as_str(), seen.raw.as_str()), ("PUT", "a=x+y&b=1"));
    assert_eq!(seen.header("content-type"), Some("application/x-www-form-urlencoded"));
    let r = http_tool(opts("head", format!("{}/h", server.url())))
        .execute(json!({"x": 1}), ToolContext::default())
        .await
        .unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("", false));
    let seen = server.request(1);
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("HEAD", "/h"));
}

#[tokio::test]
async fn headers_merge_case_insensitively_and_text_bodies_get_a_type() {
    let server = MockLlm::script(vec![Reply::raw(200, "1"), Reply::raw(200, "2"), Reply::raw(200, "3")]).await;
    let mut o = opts("POST", format!("{}/j", server.url()));
    o.headers = vec![("content-type".into(), "text/x".into()), ("X-A".into(), "1".into()), ("x-a".into(), "2".into())];
    http_tool(o).execute(json!({"a": 1}), ToolContext::default()).await.unwrap();
    let seen = server.request(0);
    assert_eq!(seen.header("content-type"), Some("text/x, application/json"));
    assert_eq!(seen.header("x-a"), Some("1, 2"));
    let mut o = opts("PATCH", format!("{}/r", server.url()));
    o.body = toolnexus_core::http_tool::BodyMode::Raw;
    let t = http_tool(o);
    t.execute(json!({"body": "<x/>"}), ToolContext::default()).await.unwrap();
    t.execute(json!({"other": 1}), ToolContext::default()).await.unwrap();
    let (raw, empty) = (server.request(1), server.request(2));
    assert_eq!((raw.raw.as_str(), raw.header("content-type")), ("<x/>", Some("text/plain;charset=UTF-8")));
    assert_eq!((empty.raw.as_str(), empty.header("content-length")), ("", Some("0")));
}

#[tokio::test]
async fn non_2xx_is_an_error_result_with_the_status() {
    let server = MockLlm::script(vec![Reply::raw(422, "invalid payload")]).await;
    let t = http_tool(opts("GET", format!("{}/boom", server.url())));
    let r = t.execute(json!({}), ToolContext::default()).await.unwrap();
    assert!(r.is_error);
    assert_eq!(r.output, "HTTP 422: invalid payload");
    assert_eq!(r.metadata, Some(json!({"status": 422})));
}

#[tokio::test]
async fn result_modes() {
    let server = MockLlm::script(vec![
        Reply::raw(200, r#"{"ok":true}"#),
        Reply::raw(200, "{ \"b\" : 1.0, \"a\": [1, 2e0], \"1\": null }"),
        Reply::raw(200, "not json"),
    ])
    .await;
    let with = |mode| {
        let mut o = opts("GET", format!("{}/ok", server.url()));
        o.result_mode = mode;
        http_tool(o)
    };
    let r = with(ResultMode::StatusText).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, "200\n{\"ok\":true}");
    let r = with(ResultMode::Json).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, r#"{"1":null,"b":1,"a":[1,2]}"#);
    let r = with(ResultMode::Json).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, r#""not json""#);
}

#[tokio::test]
async fn a_timeout_aborts_and_the_call_budget_wins() {
    let server = MockLlm::hanging().await;
    let mut o = opts("GET", format!("{}/slow", server.url()));
    o.timeout = Some(60_000.0);
    let t = http_tool(o);
    let started = Instant::now();
    let ctx = ToolContext { timeout: Some(100.0), ..Default::default() };
    let r = t.execute(json!({}), ctx).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!((r.output.as_str(), r.is_error, r.metadata), (ABORTED, true, None));
    // The declared timeout applies when the call gives none.
    let mut o = opts("GET", format!("{}/slow", server.url()));
    o.timeout = Some(50.0);
    let r = http_tool(o).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, ABORTED);
}

#[tokio::test]
async fn cancellation_aborts_an_inflight_request() {
    let server = MockLlm::hanging().await;
    let t = http_tool(opts("GET", format!("{}/slow", server.url())));
    let token = CancellationToken::new();
    let ctx = ToolContext { cancel: Some(token.clone()), ..Default::default() };
    let call = tokio::spawn(async move { t.execute(json!({}), ctx).await });
    server.wait_for_requests(1).await;
    token.cancel();
    let r = tokio::time::timeout(Duration::from_secs(5), call).await.unwrap().unwrap().unwrap();
    assert_eq!((r.output.as_str(), r.is_error), (ABORTED, true));
}

#[tokio::test]
async fn transport_failures_are_error_results() {
    // A port nobody listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let r = http_tool(opts("GET", format!("http://127.0.0.1:{port}/x?token=abc")))
        .execute(json!({}), ToolContext::default())
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(r.output.starts_with("fetch failed"), "{}", r.output);
    assert!(!r.output.contains("token=abc"), "the URL stays out of the message: {}", r.output);
    assert_eq!(r.metadata, None);
    // A server that hangs up without answering.
    let server = MockLlm::start(|_, _| Action::Close).await;
    let r = http_tool(opts("GET", server.url())).execute(json!({}), ToolContext::default()).await.unwrap();
    assert!(r.is_error && r.output.starts_with("fetch failed"), "{}", r.output);
    // Not a URL at all.
    let r = http_tool(opts("GET", "not a url".into())).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!((r.output.as_str(), r.is_error), ("Failed to parse URL from not a url", true));
    // A header name fetch would refuse.
    let mut o = opts("GET", "http://127.0.0.1:1/".into());
    o.headers = vec![("X Y".into(), "v".into())];
    let r = http_tool(o).execute(json!({}), ToolContext::default()).await.unwrap();
    assert_eq!(r.output, "Headers.append: \"X Y\" is an invalid header name.");
}
