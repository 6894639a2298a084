//! The benchmark's `limit` runner: the scenario of `bench/lib/scenario.mjs` on the toolnexus
//! core, driven from Rust with no JavaScript at all. It is what this design costs when nothing
//! but the core runs: the `toolnexus` runner's figures divided by these are what the JS layer,
//! the binding and Node add (the "JS cost" row of `bench/results.md`).
//!
//!   toolnexus-bench-limit measure|leak
//!
//! Started by `bench/run.mjs` in place of `node bench/worker.mjs limit <mode>`; the measuring and
//! the `BENCH_RESULT` line are the harness's (`bench/harness`), shared with the `floor-hyper`
//! runner (`bench/floor`), which does the same work with no toolnexus at all.
//!
//! The same run as the `toolnexus` runner: `Toolkit::create` with `builtins: false` and the two
//! tools as host tools (names, descriptions and schemas as `bench/runners/toolnexus.mjs` gives
//! them, outputs as `getWeather` / `add` return them after `defineTool`'s stringification), a
//! client on the OpenAI wire with the same base URL, model and key, and `Client::run(PROMPT)`.
//! The request bodies are built by the same core code, so they are the same bytes.
//!
//! Transport: the core's own HTTP/1.1 client (`toolnexus_core::fetch::Fetcher`: hyper's client
//! connection, one keep-alive pool per origin) over tokio's sockets (`TokioConnect`), through
//! `FetchTransport`, the client's built-in transport. It is the path the Node binding takes too,
//! minus libuv: there the same `Fetcher` opens its sockets through `src/uvio.rs` so Node's
//! event loop watches them. Everything here is polled by one current-thread tokio runtime on the
//! main thread: the run's future, its socket readiness (tokio's epoll driver) and the tools, so
//! a run crosses no thread at all, which is the least any host can do. (The core's reqwest path
//! is for HTTP tools, webfetch and MCP, not for the LLM.)
//!
//! The allocator is mimalloc, as the binding installs it, so the comparison is not one of
//! allocators.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolnexus_bench_harness::{self as harness, Config, Res, Runner};
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::{Client, ClientOptions, RunOptions, Style, Transport};
use toolnexus_core::fetch::{self, Fetcher, TokioConnect};
use toolnexus_core::tool::ToolDecl;
use toolnexus_core::{Tool, ToolContext, ToolResult, Toolkit, ToolkitOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `get_weather` as a core tool: the scenario's, whatever the city.
struct GetWeather {
    decl: ToolDecl,
}

/// `add` as a core tool: a + b, written as `JSON.stringify` writes it.
struct Add {
    decl: ToolDecl,
}

impl GetWeather {
    fn new(schema: Value) -> Self {
        // "native": defineTool's default source.
        GetWeather { decl: ToolDecl::new("get_weather", harness::WEATHER_DESCRIPTION, schema, "native") }
    }
}

impl Add {
    fn new(schema: Value) -> Self {
        Add { decl: ToolDecl::new("add", harness::ADD_DESCRIPTION, schema, "native") }
    }
}

#[async_trait]
impl Tool for GetWeather {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> toolnexus_core::error::Result<ToolResult> {
        Ok(ToolResult::ok(harness::get_weather()))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[async_trait]
impl Tool for Add {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, _ctx: ToolContext) -> toolnexus_core::error::Result<ToolResult> {
        Ok(ToolResult::ok(harness::add(&args)))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct Limit {
    client: Client,
    toolkit: Toolkit,
}

impl Limit {
    async fn setup(cfg: Config) -> Res<Limit> {
        let toolkit = Toolkit::create(ToolkitOptions {
            extra_tools: vec![
                Arc::new(GetWeather::new(harness::weather_schema())),
                Arc::new(Add::new(harness::add_schema())),
            ],
            builtins: Some(Value::Bool(false)),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("createToolkit: {e}"))?;
        // As the binding sets its fetcher up: zstd is decoded (and so accepted) from Node 24 on.
        let zstd = cfg.node_major.is_some_and(|m| m >= 24);
        let fetcher = Fetcher::with_options(TokioConnect, fetch::Options { zstd, ..Default::default() });
        let mut opts = ClientOptions::new(cfg.base_url, Style::OpenAI, harness::MODEL);
        opts.api_key = Some(harness::API_KEY.into());
        opts.transport = Some(Arc::new(FetchTransport::new(fetcher)) as Arc<dyn Transport>);
        let client = Client::new(opts).map_err(|e| format!("createClient: {e}"))?;
        Ok(Limit { client, toolkit })
    }
}

impl Runner for Limit {
    async fn run(&self) -> Res<String> {
        let r =
            self.client.run(harness::PROMPT, &self.toolkit, RunOptions::default()).await.map_err(|e| e.to_string())?;
        Ok(r.text)
    }

    async fn close(&self) {
        self.toolkit.close().await;
    }
}

fn main() {
    harness::main(
        "limit",
        "core fetch::Fetcher (hyper HTTP/1.1) over tokio sockets, current-thread runtime",
        Limit::setup,
    )
}

#[cfg(test)]
mod tests {
    use super::{Add, GetWeather};
    use serde_json::json;
    use toolnexus_bench_harness::WEATHER_TEXT;
    use toolnexus_core::{Tool, ToolContext};

    #[tokio::test(flavor = "current_thread")]
    async fn the_core_tools_answer_as_the_scenario_does() {
        let add = Add::new(json!({}));
        let r = add.execute(json!({"a": 2, "b": 2}), ToolContext::default()).await.unwrap();
        assert_eq!((r.output.as_str(), r.is_error), ("4", false));
        let w = GetWeather::new(json!({}));
        assert_eq!(w.execute(json!({"city": "Paris"}), ToolContext::default()).await.unwrap().output, WEATHER_TEXT);
    }
}
