//! The benchmark's `limit` runner: the scenario of `bench/lib/scenario.mjs` on the toolnexus
//! core, driven from Rust with no JavaScript at all. It is what this design costs when nothing
//! but the core runs: the `toolnexus` runner's figures divided by these are what the JS layer,
//! the binding and Node add (the "JS cost" row of `bench/results.md`).
//!
//!   toolnexus-bench-limit measure|leak
//!
//! Started by `bench/run.mjs` in place of `node bench/worker.mjs limit <mode>`, with the same
//! environment (BENCH_BASE_URL, BENCH_SPAWN_NS, BENCH_WARMUP, BENCH_RUNS, BENCH_TPUT_RUNS,
//! BENCH_CONCURRENCY, BENCH_LEAK_RUNS, BENCH_LEAK_EVERY; BENCH_NODE_MAJOR says which Node the
//! other runners use). It prints one `BENCH_RESULT <json>` line of the shape worker.mjs prints.
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
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{FuturesUnordered, TryStreamExt};
use serde_json::{json, Value};
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::{Client, ClientOptions, RunOptions, Style, Transport};
use toolnexus_core::fetch::{self, Fetcher, TokioConnect};
use toolnexus_core::{Tool, ToolContext, ToolResult, Toolkit, ToolkitOptions};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// ---- the scenario (bench/lib/scenario.mjs) ----

const RUNNER: &str = "limit";
const PROMPT: &str = "What's the weather in Paris and what is 2+2?";
const MODEL: &str = "bench-model";
const API_KEY: &str = "bench-not-a-key";
const WEATHER_TEXT: &str = "Sunny, 21 C, light wind";
const FINAL_TEXT: &str = "In Paris it is sunny, 21 C with a light wind, and 2 + 2 = 4.";
const WEATHER_DESCRIPTION: &str = "Get the current weather for a city";
const ADD_DESCRIPTION: &str = "Add two numbers";

/// Tool executions in this process; checked against 2 × runs.
static TOOL_CALLS: AtomicU64 = AtomicU64::new(0);

/// `get_weather`: a fixed string, whatever the city.
struct GetWeather {
    schema: Value,
}

/// `add`: a + b, as JavaScript adds two numbers and `JSON.stringify` writes the sum.
struct Add {
    schema: Value,
}

#[async_trait]
impl Tool for GetWeather {
    fn name(&self) -> &str {
        "get_weather"
    }
    fn description(&self) -> &str {
        WEATHER_DESCRIPTION
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn source(&self) -> &str {
        "native" // defineTool's default source
    }
    async fn execute(&self, _args: Value, _ctx: ToolContext) -> toolnexus_core::error::Result<ToolResult> {
        TOOL_CALLS.fetch_add(1, Ordering::Relaxed);
        Ok(ToolResult::ok(WEATHER_TEXT))
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
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> &str {
        ADD_DESCRIPTION
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn source(&self) -> &str {
        "native"
    }
    async fn execute(&self, args: Value, _ctx: ToolContext) -> toolnexus_core::error::Result<ToolResult> {
        TOOL_CALLS.fetch_add(1, Ordering::Relaxed);
        let num = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        Ok(ToolResult::ok(js_number(num("a") + num("b"))))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `JSON.stringify` of a number: integers without a fraction, NaN and infinities as `null`.
/// (Non-integers use Rust's shortest round-trip form, which matches JavaScript's below 1e21.)
fn js_number(x: f64) -> String {
    if !x.is_finite() {
        "null".into()
    } else if x == x.trunc() && x.abs() < 1e21 {
        format!("{}", x as i128)
    } else {
        format!("{x}")
    }
}

// ---- the environment (worker.mjs's `cfg`) ----

struct Config {
    base_url: String,
    spawn_ns: Option<u64>,
    warmup: u64,
    runs: u64,
    tput_runs: u64,
    concurrency: u64,
    leak_runs: u64,
    leak_every: u64,
    node_major: Option<u64>,
}

/// A non-negative count as worker.mjs reads one (`Number(v)`, floored); anything else is `fallback`.
fn int(name: &str, fallback: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => fallback,
        Ok(v) if v.trim().is_empty() => 0, // Number("") is 0
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(n) if n.is_finite() && n >= 0.0 => n.floor() as u64,
            _ => fallback,
        },
    }
}

impl Config {
    fn from_env() -> Config {
        Config {
            base_url: std::env::var("BENCH_BASE_URL").unwrap_or_default(),
            spawn_ns: std::env::var("BENCH_SPAWN_NS").ok().and_then(|v| v.trim().parse().ok()),
            warmup: int("BENCH_WARMUP", 1000),
            runs: int("BENCH_RUNS", 2000),
            tput_runs: int("BENCH_TPUT_RUNS", 2000),
            concurrency: int("BENCH_CONCURRENCY", 32).max(1),
            leak_runs: int("BENCH_LEAK_RUNS", 20000),
            leak_every: int("BENCH_LEAK_EVERY", 1000).max(1),
            node_major: std::env::var("BENCH_NODE_MAJOR").ok().and_then(|v| v.trim().parse().ok()),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "warmup": self.warmup,
            "runs": self.runs,
            "tputRuns": self.tput_runs,
            "concurrency": self.concurrency,
            "leakRuns": self.leak_runs,
            "leakEvery": self.leak_every,
        })
    }
}

// ---- clocks and /proc ----

/// CLOCK_MONOTONIC in ns: the clock of Node's `process.hrtime.bigint()` (libuv's `uv_hrtime`),
/// so the parent's reading before spawn compares with ours.
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

fn ms(a: u64, b: u64) -> f64 {
    b.saturating_sub(a) as f64 / 1e6
}

/// User + system CPU of the whole process (all threads) in µs, as `process.cpuUsage()` reads it.
fn cpu_now_us() -> f64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is always accepted.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// A `/proc/self/status` field in bytes (VmHWM, VmRSS), or None.
fn status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb * 1024)
}

fn rss() -> u64 {
    status_bytes("VmRSS").unwrap_or(0)
}

/// Linear interpolation between closest ranks, as worker.mjs computes its percentiles.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

// ---- the runner ----

struct Bench {
    client: Client,
    toolkit: Toolkit,
    wrong: Cell<u64>,
    wrong_example: RefCell<Option<String>>,
}

type Res<T> = Result<T, String>;

impl Bench {
    async fn setup(cfg: &Config) -> Res<Bench> {
        let weather_schema = json!({
            "type": "object",
            "properties": { "city": { "type": "string", "description": "City name" } },
            "required": ["city"],
        });
        let add_schema = json!({
            "type": "object",
            "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"],
        });
        let toolkit = Toolkit::create(ToolkitOptions {
            extra_tools: vec![Arc::new(GetWeather { schema: weather_schema }), Arc::new(Add { schema: add_schema })],
            builtins: Some(Value::Bool(false)),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("createToolkit: {e}"))?;
        // As the binding sets its fetcher up: zstd is decoded (and so accepted) from Node 24 on.
        let zstd = cfg.node_major.is_some_and(|m| m >= 24);
        let fetcher = Fetcher::with_options(TokioConnect, fetch::Options { zstd, ..Default::default() });
        let mut opts = ClientOptions::new(cfg.base_url.clone(), Style::OpenAI, MODEL);
        opts.api_key = Some(API_KEY.into());
        opts.transport = Some(Arc::new(FetchTransport::new(fetcher)) as Arc<dyn Transport>);
        let client = Client::new(opts).map_err(|e| format!("createClient: {e}"))?;
        Ok(Bench { client, toolkit, wrong: Cell::new(0), wrong_example: RefCell::new(None) })
    }

    /// One run, its answer checked (a wrong answer fails the worker at the next check).
    async fn run(&self) -> Res<()> {
        let r = self.client.run(PROMPT, &self.toolkit, RunOptions::default()).await.map_err(|e| e.to_string())?;
        if r.text != FINAL_TEXT {
            self.wrong.set(self.wrong.get() + 1);
            self.wrong_example.borrow_mut().get_or_insert(r.text);
        }
        Ok(())
    }

    fn check(&self, runs_so_far: u64) -> Res<()> {
        if self.wrong.get() > 0 {
            let example = self.wrong_example.borrow().clone().unwrap_or_default();
            return Err(format!("{} run(s) returned a wrong answer, e.g. {}", self.wrong.get(), json!(example)));
        }
        let count = TOOL_CALLS.load(Ordering::Relaxed);
        if count != 2 * runs_so_far {
            return Err(format!("expected {} tool executions, counted {count}", 2 * runs_so_far));
        }
        Ok(())
    }
}

async fn measure(bench: &Bench, cfg: &Config) -> Res<serde_json::Map<String, Value>> {
    let mut total_runs = 1;
    for _ in 0..cfg.warmup {
        bench.run().await?;
    }
    total_runs += cfg.warmup;
    bench.check(total_runs)?;

    let sampled_max = Cell::new(rss());
    let sample = || sampled_max.set(sampled_max.get().max(rss()));

    // ---- sequential runs, each timed ----
    let mut durations = Vec::with_capacity(cfg.runs as usize);
    let seq_cpu0 = cpu_now_us();
    let seq_t0 = now_ns();
    for i in 0..cfg.runs {
        let t0 = now_ns();
        bench.run().await?;
        durations.push(ms(t0, now_ns()));
        if i % 100 == 99 {
            sample();
        }
    }
    let seq_wall = ms(seq_t0, now_ns());
    let seq_cpu = cpu_now_us() - seq_cpu0;
    total_runs += cfg.runs;
    bench.check(total_runs)?;

    // ---- throughput: `concurrency` runs in flight until `tput_runs` are done ----
    let started_cell = Cell::new(0u64);
    let started = &started_cell;
    let lane = || async move {
        while started.get() < cfg.tput_runs {
            started.set(started.get() + 1);
            bench.run().await?;
        }
        Ok::<(), String>(())
    };
    let lanes: FuturesUnordered<_> = (0..cfg.concurrency.min(cfg.tput_runs)).map(|_| lane()).collect();
    let sampler = async {
        let mut every = tokio::time::interval(Duration::from_millis(50));
        loop {
            every.tick().await;
            sample();
        }
    };
    let tput_cpu0 = cpu_now_us();
    let tput_t0 = now_ns();
    tokio::select! {
        done = lanes.try_collect::<Vec<()>>() => { done?; }
        () = sampler => unreachable!("the sampler never ends"),
    }
    let tput_wall = ms(tput_t0, now_ns());
    let tput_cpu = cpu_now_us() - tput_cpu0;
    sample();
    total_runs += cfg.tput_runs;
    bench.check(total_runs)?;

    let vm_hwm = status_bytes("VmHWM");
    bench.toolkit.close().await;

    let mut sorted = durations.clone();
    sorted.sort_by(f64::total_cmp);
    let n = cfg.runs as f64;
    let per = |x: f64, count: u64| if count > 0 { Some(x / count as f64) } else { None };
    let out = json!({
        "seq": {
            "runs": cfg.runs,
            "p50Ms": percentile(&sorted, 50.0),
            "p95Ms": percentile(&sorted, 95.0),
            "p99Ms": percentile(&sorted, 99.0),
            "meanMs": if cfg.runs > 0 { Some(durations.iter().sum::<f64>() / n) } else { None },
            "minMs": sorted.first(),
            "maxMs": sorted.last(),
            "wallMs": seq_wall,
            "cpuPerRunUs": per(seq_cpu, cfg.runs),
            "childCpuPerRunUs": 0,
        },
        "tput": {
            "runs": cfg.tput_runs,
            "concurrency": cfg.concurrency,
            "wallMs": tput_wall,
            "runsPerSec": if tput_wall > 0.0 { Some(cfg.tput_runs as f64 / (tput_wall / 1000.0)) } else { None },
            "cpuPerRunUs": per(tput_cpu, cfg.tput_runs),
            "childCpuPerRunUs": 0,
        },
        "mem": {
            "vmHwm": vm_hwm,
            "sampledMaxRss": sampled_max.get(),
            "childPids": 0,
            "childVmHwm": 0,
            "peakRss": vm_hwm.unwrap_or(sampled_max.get()),
        },
        "totalRuns": total_runs,
        "toolExecutionsInProcess": TOOL_CALLS.load(Ordering::Relaxed),
    });
    Ok(into_map(out))
}

/// The leak check's loop: RSS every `leak_every` runs. There is no JS heap here, so its two
/// figures are 0 and nothing is collected before a sample.
async fn leak(bench: &Bench, cfg: &Config) -> Res<serde_json::Map<String, Value>> {
    for _ in 0..cfg.warmup {
        bench.run().await?;
    }
    bench.check(1 + cfg.warmup)?;
    let take = |runs: u64| json!({ "runs": runs, "rss": rss(), "heapUsed": 0, "external": 0, "arrayBuffers": 0 });
    let mut samples = vec![take(0)];
    let t0 = now_ns();
    for i in 1..=cfg.leak_runs {
        bench.run().await?;
        if i % cfg.leak_every == 0 {
            samples.push(take(i));
        }
    }
    let wall = ms(t0, now_ns());
    bench.check(1 + cfg.warmup + cfg.leak_runs)?;
    bench.toolkit.close().await;
    let out = json!({
        "totalRuns": 1 + cfg.warmup + cfg.leak_runs,
        "leak": { "runs": cfg.leak_runs, "every": cfg.leak_every, "gcBeforeSample": false, "wallMs": wall, "samples": samples },
    });
    Ok(into_map(out))
}

fn into_map(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("built as an object"),
    }
}

fn emit(mode: &str, fields: serde_json::Map<String, Value>) {
    let mut out = serde_json::Map::new();
    out.insert("runner".into(), RUNNER.into());
    out.insert("mode".into(), mode.into());
    out.insert("pid".into(), std::process::id().into());
    out.extend(fields);
    println!("BENCH_RESULT {}", Value::Object(out));
}

fn main() {
    let t_main = now_ns();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "measure".into());
    let cfg = Config::from_env();
    let outcome = (|| -> Res<serde_json::Map<String, Value>> {
        if cfg.base_url.is_empty() {
            return Err("BENCH_BASE_URL is not set".into());
        }
        if mode != "measure" && mode != "leak" {
            return Err(format!("unknown mode {mode:?} (measure | leak)"));
        }
        let t_setup0 = now_ns();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        rt.block_on(async {
            let bench = Bench::setup(&cfg).await?;
            let t_setup = now_ns();
            bench.run().await?;
            let t_first = now_ns();
            bench.check(1)?;
            // No Node and nothing to import: the binary is loaded by exec (in spawn→main).
            let cold = json!({
                "coldInitMs": cfg.spawn_ns.map(|s| ms(s, t_first)),
                "spawnToScriptMs": cfg.spawn_ns.map(|s| ms(s, t_main)),
                "nodeBootMs": null,
                "importMs": 0.0,
                "setupMs": ms(t_setup0, t_setup),
                "firstRunMs": ms(t_setup, t_first),
            });
            let body = if mode == "leak" { leak(&bench, &cfg).await? } else { measure(&bench, &cfg).await? };
            let mut out = serde_json::Map::new();
            out.insert("ok".into(), true.into());
            out.insert("config".into(), cfg.to_json());
            out.insert("cold".into(), cold);
            out.insert(
                "transport".into(),
                "core fetch::Fetcher (hyper HTTP/1.1) over tokio sockets, current-thread runtime".into(),
            );
            out.extend(body);
            Ok(out)
        })
    })();
    match outcome {
        Ok(fields) => {
            emit(&mode, fields);
            std::process::exit(0);
        }
        Err(e) => {
            let mut fields = serde_json::Map::new();
            fields.insert("ok".into(), false.into());
            fields.insert("error".into(), e.into());
            emit(&mode, fields);
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_json_stringify_does() {
        assert_eq!(js_number(4.0), "4");
        assert_eq!(js_number(-0.0), "0");
        assert_eq!(js_number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(js_number(2.5), "2.5");
        assert_eq!(js_number(f64::NAN), "null");
        assert_eq!(js_number(f64::INFINITY), "null");
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_tools_answer_as_the_scenario_does() {
        let add = Add { schema: json!({}) };
        let r = add.execute(json!({"a": 2, "b": 2}), ToolContext::default()).await.unwrap();
        assert_eq!((r.output.as_str(), r.is_error), ("4", false));
        let w = GetWeather { schema: json!({}) };
        assert_eq!(w.execute(json!({"city": "Paris"}), ToolContext::default()).await.unwrap().output, WEATHER_TEXT);
    }
}
