//! What the benchmark's Rust runners share: the scenario of `bench/lib/scenario.mjs` (its strings,
//! schemas and the two tools), and the measurements `bench/lib/worker.mjs` makes, printed as the
//! same `BENCH_RESULT <json>` line, so `bench/run.mjs` starts a Rust runner in place of
//! `node bench/worker.mjs <runner> <mode>` and reads it as it reads any other.
//!
//! A runner is a [`Runner`]: one run of the scenario, returning the model's final text. [`main`]
//! reads the environment (BENCH_BASE_URL, BENCH_SPAWN_NS, BENCH_WARMUP, BENCH_RUNS,
//! BENCH_TPUT_RUNS, BENCH_CONCURRENCY, BENCH_LEAK_RUNS, BENCH_LEAK_EVERY, BENCH_NODE_MAJOR), sets
//! the runner up on a current-thread tokio runtime, and measures: cold start, sequential runs,
//! throughput with `concurrency` runs in flight, memory; or, in `leak` mode, RSS every
//! `leak_every` runs. Every run's answer is checked against the scenario's, and the tool
//! executions counted against 2 per run, as the worker does.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::stream::{FuturesUnordered, TryStreamExt};
use serde_json::{json, Map, Value};

// ---- the scenario (bench/lib/scenario.mjs) ----

pub const PROMPT: &str = "What's the weather in Paris and what is 2+2?";
pub const MODEL: &str = "bench-model";
pub const API_KEY: &str = "bench-not-a-key";
pub const WEATHER_TEXT: &str = "Sunny, 21 C, light wind";
pub const FINAL_TEXT: &str = "In Paris it is sunny, 21 C with a light wind, and 2 + 2 = 4.";
pub const WEATHER_DESCRIPTION: &str = "Get the current weather for a city";
pub const ADD_DESCRIPTION: &str = "Add two numbers";

/// `get_weather`'s JSON Schema, as the scenario declares it.
pub fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "city": { "type": "string", "description": "City name" } },
        "required": ["city"],
    })
}

/// `add`'s JSON Schema, as the scenario declares it.
pub fn add_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
        "required": ["a", "b"],
    })
}

/// Tool executions in this process; checked against 2 × runs.
static TOOL_CALLS: AtomicU64 = AtomicU64::new(0);

/// `get_weather`: a fixed string, whatever the city.
pub fn get_weather() -> &'static str {
    TOOL_CALLS.fetch_add(1, Ordering::Relaxed);
    WEATHER_TEXT
}

/// `add`: a + b, as JavaScript adds two numbers and `JSON.stringify` writes the sum.
pub fn add(args: &Value) -> String {
    TOOL_CALLS.fetch_add(1, Ordering::Relaxed);
    let num = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    js_number(num("a") + num("b"))
}

/// `JSON.stringify` of a number: integers without a fraction, NaN and infinities as `null`.
/// (Non-integers use Rust's shortest round-trip form, which matches JavaScript's below 1e21.)
pub fn js_number(x: f64) -> String {
    if !x.is_finite() {
        "null".into()
    } else if x == x.trunc() && x.abs() < 1e21 {
        format!("{}", x as i128)
    } else {
        format!("{x}")
    }
}

// ---- the environment (worker.mjs's `cfg`) ----

#[derive(Clone, Debug)]
pub struct Config {
    pub base_url: String,
    pub spawn_ns: Option<u64>,
    pub warmup: u64,
    pub runs: u64,
    pub tput_runs: u64,
    pub concurrency: u64,
    pub leak_runs: u64,
    pub leak_every: u64,
    /// Which Node the JavaScript runners use (the limit runner sets its HTTP client up as the binding does under it).
    pub node_major: Option<u64>,
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
    pub fn from_env() -> Config {
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

// ---- clocks and memory ----

/// CLOCK_MONOTONIC in ns: the clock of Node's `process.hrtime.bigint()` (libuv's `uv_hrtime`),
/// so the parent's reading before spawn compares with ours.
#[cfg(unix)]
fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC always exists on the Unixes we build for.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Elsewhere a monotonic clock of this process only: the spawn-relative figures are left out.
#[cfg(not(unix))]
fn now_ns() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// Whether [`now_ns`] reads the clock the parent's BENCH_SPAWN_NS was taken on.
const SHARED_CLOCK: bool = cfg!(unix);

fn ms(a: u64, b: u64) -> f64 {
    b.saturating_sub(a) as f64 / 1e6
}

/// User + system CPU of the whole process (all threads) in µs, as `process.cpuUsage()` reads it.
#[cfg(unix)]
fn cpu_now_us() -> Option<f64> {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is always accepted.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    Some(us(ru.ru_utime) + us(ru.ru_stime))
}

#[cfg(not(unix))]
fn cpu_now_us() -> Option<f64> {
    None
}

/// A `/proc/self/status` field in bytes (VmHWM, VmRSS), or None (no /proc).
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
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

// ---- the runner ----

pub type Res<T> = Result<T, String>;

/// One way of doing the scenario's run.
#[allow(async_fn_in_trait)] // polled on one current-thread runtime: nothing needs the futures to be Send
pub trait Runner {
    /// One run: the prompt, the two tool calls, their results sent back; the model's final text.
    async fn run(&self) -> Res<String>;
    /// Called once the measurements are taken.
    async fn close(&self) {}
}

/// A runner with its answers checked: a wrong one fails the worker at the next check.
struct Checked<R> {
    runner: R,
    wrong: Cell<u64>,
    wrong_example: RefCell<Option<String>>,
}

impl<R: Runner> Checked<R> {
    async fn run(&self) -> Res<()> {
        let text = self.runner.run().await?;
        if text != FINAL_TEXT {
            self.wrong.set(self.wrong.get() + 1);
            self.wrong_example.borrow_mut().get_or_insert(text);
        }
        Ok(())
    }

    fn check(&self, runs_so_far: u64) -> Res<()> {
        self.verdict(runs_so_far, TOOL_CALLS.load(Ordering::Relaxed))
    }

    /// The answers so far, and `count` tool executions after `runs_so_far` runs.
    fn verdict(&self, runs_so_far: u64, count: u64) -> Res<()> {
        if self.wrong.get() > 0 {
            let example = self.wrong_example.borrow().clone().unwrap_or_default();
            return Err(format!("{} run(s) returned a wrong answer, e.g. {}", self.wrong.get(), json!(example)));
        }
        if count != 2 * runs_so_far {
            return Err(format!("expected {} tool executions, counted {count}", 2 * runs_so_far));
        }
        Ok(())
    }
}

async fn measure<R: Runner>(bench: &Checked<R>, cfg: &Config) -> Res<Map<String, Value>> {
    let mut total_runs = 1;
    for _ in 0..cfg.warmup {
        bench.run().await?;
    }
    total_runs += cfg.warmup;
    bench.check(total_runs)?;

    let sampled_max = Cell::new(rss());
    let sample = || sampled_max.set(sampled_max.get().max(rss()));
    let cpu_since = |c0: Option<f64>| Some(cpu_now_us()? - c0?);

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
    let seq_cpu = cpu_since(seq_cpu0);
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
    let tput_cpu = cpu_since(tput_cpu0);
    sample();
    total_runs += cfg.tput_runs;
    bench.check(total_runs)?;

    let vm_hwm = status_bytes("VmHWM");
    bench.runner.close().await;

    let mut sorted = durations.clone();
    sorted.sort_by(f64::total_cmp);
    let n = cfg.runs as f64;
    let per = |x: Option<f64>, count: u64| if count > 0 { x.map(|x| x / count as f64) } else { None };
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
async fn leak<R: Runner>(bench: &Checked<R>, cfg: &Config) -> Res<Map<String, Value>> {
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
    bench.runner.close().await;
    let out = json!({
        "totalRuns": 1 + cfg.warmup + cfg.leak_runs,
        "leak": { "runs": cfg.leak_runs, "every": cfg.leak_every, "gcBeforeSample": false, "wallMs": wall, "samples": samples },
    });
    Ok(into_map(out))
}

fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("built as an object"),
    }
}

fn emit(runner: &str, mode: &str, fields: Map<String, Value>) {
    let mut out = Map::new();
    out.insert("runner".into(), runner.into());
    out.insert("mode".into(), mode.into());
    out.insert("pid".into(), std::process::id().into());
    out.extend(fields);
    println!("BENCH_RESULT {}", Value::Object(out));
}

/// A Rust runner's `main`: `<binary> measure|leak`, the runner made by `setup` (on the runtime,
/// timed as the worker times its setup), one `BENCH_RESULT` line, exit 0 or 1.
pub fn main<R, F, Fut>(runner: &str, transport: &str, setup: F) -> !
where
    R: Runner,
    F: FnOnce(Config) -> Fut,
    Fut: Future<Output = Res<R>>,
{
    let t_main = now_ns();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "measure".into());
    let cfg = Config::from_env();
    let outcome = (|| -> Res<Map<String, Value>> {
        if cfg.base_url.is_empty() {
            return Err("BENCH_BASE_URL is not set".into());
        }
        if mode != "measure" && mode != "leak" {
            return Err(format!("unknown mode {mode:?} (measure | leak)"));
        }
        let t_setup0 = now_ns();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        rt.block_on(async {
            let bench =
                Checked { runner: setup(cfg.clone()).await?, wrong: Cell::new(0), wrong_example: RefCell::new(None) };
            let t_setup = now_ns();
            bench.run().await?;
            let t_first = now_ns();
            bench.check(1)?;
            let spawn_ns = cfg.spawn_ns.filter(|_| SHARED_CLOCK);
            // No Node and nothing to import: the binary is loaded by exec (in spawn→main).
            let cold = json!({
                "coldInitMs": spawn_ns.map(|s| ms(s, t_first)),
                "spawnToScriptMs": spawn_ns.map(|s| ms(s, t_main)),
                "nodeBootMs": null,
                "importMs": 0.0,
                "setupMs": ms(t_setup0, t_setup),
                "firstRunMs": ms(t_setup, t_first),
            });
            let body = if mode == "leak" { leak(&bench, &cfg).await? } else { measure(&bench, &cfg).await? };
            let mut out = Map::new();
            out.insert("ok".into(), true.into());
            out.insert("config".into(), cfg.to_json());
            out.insert("cold".into(), cold);
            out.insert("transport".into(), transport.into());
            out.extend(body);
            Ok(out)
        })
    })();
    match outcome {
        Ok(fields) => {
            emit(runner, &mode, fields);
            std::process::exit(0);
        }
        Err(e) => {
            let mut fields = Map::new();
            fields.insert("ok".into(), false.into());
            fields.insert("error".into(), e.into());
            emit(runner, &mode, fields);
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{add, get_weather, js_number, percentile, Checked, Res, Runner, FINAL_TEXT, WEATHER_TEXT};
    use serde_json::json;
    use std::cell::{Cell, RefCell};

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

    #[test]
    fn the_tools_answer_as_the_scenario_does() {
        assert_eq!(add(&json!({"a": 2, "b": 2})), "4");
        assert_eq!(add(&json!({"a": 2})), "null");
        assert_eq!(get_weather(), WEATHER_TEXT);
    }

    /// Answers `text`.
    struct Scripted(&'static str);

    impl Runner for Scripted {
        async fn run(&self) -> Res<String> {
            Ok(self.0.into())
        }
    }

    fn checked(text: &'static str) -> Checked<Scripted> {
        Checked { runner: Scripted(text), wrong: Cell::new(0), wrong_example: RefCell::new(None) }
    }

    #[test]
    fn checks_fail_on_a_wrong_answer_or_a_missing_tool_call() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let right = checked(FINAL_TEXT);
            right.run().await.unwrap();
            assert_eq!(right.verdict(1, 2), Ok(()));
            assert_eq!(right.verdict(1, 1), Err("expected 2 tool executions, counted 1".into()));
            let wrong = checked("no");
            wrong.run().await.unwrap();
            wrong.run().await.unwrap();
            assert_eq!(wrong.verdict(2, 4), Err("2 run(s) returned a wrong answer, e.g. \"no\"".into()));
        });
    }
}
