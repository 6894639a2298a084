//! Runs polled on a host's own thread: tools that only call back into the host run in place,
//! the core's other tools are moved to the runtime so the host's thread is never held up.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use serde_json::{json, Value};
use toolnexus_core::error::Result;
use toolnexus_core::host;
use toolnexus_core::tool::{Tool, ToolContext};
use toolnexus_core::types::ToolResult;
use toolnexus_core::{Toolkit, ToolkitOptions};

/// Per call: the tool's name and the name of the thread it ran on.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Records the thread it ran on.
struct Where {
    name: &'static str,
    light: bool,
    seen: Seen,
    schema: Value,
}

#[async_trait]
impl Tool for Where {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        ""
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn source(&self) -> &str {
        "custom"
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> Result<ToolResult> {
        let thread = std::thread::current().name().map(str::to_string);
        self.seen.lock().unwrap().push((self.name.to_string(), thread));
        Ok(ToolResult::ok("ok"))
    }
    fn light(&self) -> bool {
        self.light
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Polls its future with the thread marked as the host's, as the Node binding does.
struct OnHost<F>(Pin<Box<F>>);

impl<F: Future> Future for OnHost<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        host::polling_on_host(|| self.0.as_mut().poll(cx))
    }
}

#[test]
fn heavy_tools_leave_the_host_thread_and_light_ones_stay() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("core-runtime")
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tool = |name, light| {
        Arc::new(Where { name, light, seen: seen.clone(), schema: json!({"type": "object"}) }) as Arc<dyn Tool>
    };
    let opts = ToolkitOptions {
        extra_tools: vec![tool("heavy", false), tool("light", true)],
        builtins: Some(false.into()),
        ..Default::default()
    };
    let tk = rt.block_on(Toolkit::create(opts)).unwrap();
    let _enter = rt.enter();
    // This test's own thread plays the host.
    let host_name = std::thread::current().name().map(str::to_string);
    futures::executor::block_on(OnHost(Box::pin(async {
        tk.execute("heavy", json!({}), ToolContext::default()).await.unwrap();
        tk.execute("light", json!({}), ToolContext::default()).await.unwrap();
    })));
    // Not polled on a host thread: everything runs in place.
    futures::executor::block_on(tk.execute("heavy", json!({}), ToolContext::default())).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], ("heavy".to_string(), Some("core-runtime".to_string())));
    assert_eq!(seen[1], ("light".to_string(), host_name.clone()));
    assert_eq!(seen[2], ("heavy".to_string(), host_name));
    assert!(!host::on_host_thread(), "the mark is lifted after each poll");
}

/// A toolkit that asks for no skills, MCP servers or agents waits on nothing: it is made in
/// the first poll, with no thread to hand work to and wait for (so a host can make it in place).
#[test]
fn a_toolkit_of_plain_tools_is_made_in_one_poll() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let _enter = rt.enter();
    let opts = ToolkitOptions { builtins: Some(json!({ "bash": true })), ..Default::default() };
    assert!(opts.waits_on_nothing());
    let made = futures::FutureExt::now_or_never(Toolkit::create(opts)).expect("the toolkit waited on something");
    assert!(made.unwrap().get("bash").is_some());
    // Asking for skills (an empty list of them) reads no files here, but discovery may: it is
    // handed to the blocking pool, so the first poll waits.
    let opts = ToolkitOptions { skills: Some(Vec::new()), ..Default::default() };
    assert!(!opts.waits_on_nothing());
    assert!(futures::FutureExt::now_or_never(Toolkit::create(opts)).is_none());
    let mcp = ToolkitOptions { mcp_config: Some(json!({ "mcpServers": {} })), ..Default::default() };
    let agents = ToolkitOptions {
        agents: vec![toolnexus_core::a2a::Agent::from_value(&json!("http://127.0.0.1:9"))],
        ..Default::default()
    };
    assert!(!mcp.waits_on_nothing() && !agents.waits_on_nothing());
}
