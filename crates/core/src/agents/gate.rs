//! The completion gate and the guardrails (SPEC §7D-§7E): what keeps an agent from calling a
//! run finished before its work checks out, and what may refuse a tool call before it runs.
//!
//! `run_gated` wraps any way of running a prompt (`ask`): it runs, has the host's `verify`
//! judge every tool call made so far, and on a failed verdict asks again with the reason,
//! up to `max_attempts` times. A run that stops for its own reason (a suspension, a limit) is
//! handed back as it is, never judged. `all_todos_done` is the built-in verdict, read off the
//! `todowrite` builtin's metadata. `guarded_hooks` compiles a list of guardrails into one
//! `before_tool` hook where the first refusal wins.

use std::future::Future;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::callback::{Callback, SharedCallback};
use crate::client::{Hooks, RunResult, RunStatus, ToolCallRecord, Usage};
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::json::{count, js_string, truthy};
use crate::types::ToolResult;

/// The error for a `maxAttempts` that is not a whole number of at least one.
pub const MAX_ATTEMPTS_INVALID: &str = "toolnexus: completion.maxAttempts must be an integer >= 1";

/// The error for a completion without a `verify` function.
pub const VERIFY_REQUIRED: &str = "toolnexus: completion.verify is required";

/// The `limit` a run stopped by the gate reports.
pub const COMPLETION_LIMIT: &str = "completion";

/// The gate: who judges a run, and how many runs it gets.
#[derive(Clone)]
pub struct Completion {
    /// The RunResult's JSON in; `{ ok, reason? }` out.
    pub verify: SharedCallback,
    /// As the host gave it: checked when the gate runs, not when it is built.
    pub max_attempts: Value,
}

/// Check a completion's parts, in the order the errors are reported: `maxAttempts` first,
/// then the presence of `verify`. Answers the number of attempts.
pub fn check_completion(max_attempts: &Value, has_verify: bool) -> Result<f64> {
    let n = match max_attempts {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite() && f.fract() == 0.0 && *f >= 1.0),
        _ => None,
    };
    let n = n.ok_or_else(|| Error::Invalid(MAX_ATTEMPTS_INVALID.into()))?;
    if !has_verify {
        return Err(Error::Invalid(VERIFY_REQUIRED.into()));
    }
    Ok(n)
}

/// `runGated(ask, prompt, completion)`'s host half as one document (`fn_markers` markers):
/// `{ ask, completion }`.
#[derive(Deserialize, Default)]
struct GatedJson {
    #[serde(default)]
    ask: HostFn,
    #[serde(default)]
    completion: Value,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct CompletionJson {
    #[serde(default)]
    max_attempts: Value,
    #[serde(default)]
    verify: HostFn,
}

/// The host's `ask` and the gate from `runGated`'s document, checked as the reference checks
/// them when the gate runs: `maxAttempts` first, then `verify` (which must be a function; a
/// completion that is not an object has neither). An `ask` that is not a function fails when
/// it is called, naming its type.
pub fn gated_from_json(text: &str) -> Result<(SharedCallback, Completion)> {
    let o: GatedJson = crate::options::parse_object(text, "runGated")?.unwrap_or_default();
    let c = match o.completion {
        v @ Value::Object(_) => {
            CompletionJson::deserialize(v).map_err(|e| Error::Invalid(format!("completion: {e}")))?
        }
        _ => CompletionJson::default(),
    };
    check_completion(&c.max_attempts, matches!(c.verify, HostFn::Fn(_)))?;
    let HostFn::Fn(verify) = c.verify else { return Err(Error::Invalid(VERIFY_REQUIRED.into())) };
    Ok((o.ask.required("runGated", "ask"), Completion { verify, max_attempts: c.max_attempts }))
}

/// `guardedHooks(guardrails, hooks)`'s host half as one document: `{ guardrails, beforeTool }`
/// (the list, and the hooks' own `beforeTool`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GuardsJson {
    #[serde(default)]
    guardrails: Vec<HostFn>,
    #[serde(default)]
    before_tool: HostFn,
}

/// The `beforeTool` that `guardedHooks`' document compiles to (see [`guarded_hooks`]): each
/// guardrail that is not a function fails when it is consulted, naming its place; the hooks'
/// `beforeTool` runs after them when it is set.
pub fn guards_from_json(text: &str) -> Result<Option<SharedCallback>> {
    const OWNER: &str = "guardedHooks";
    let o: GuardsJson = crate::options::parse_object(text, OWNER)?.unwrap_or_default();
    let rails = o.guardrails.into_iter().enumerate().map(|(i, g)| g.required(OWNER, &format!("guardrails[{i}]")));
    let hooks = Hooks { before_tool: o.before_tool.named(OWNER, "hooks.beforeTool"), ..Default::default() };
    Ok(guarded_hooks(rails.collect(), hooks).before_tool)
}

/// The text of the prompt that asks for another attempt.
pub fn retry_prompt(reason: &str) -> String {
    format!("Your work did not verify: {reason}. Fix it and finish.")
}

/// Run `prompt` through `ask` behind the gate. Without a completion this is one plain `ask`.
///
/// The verdict is given on every tool call of every attempt so far, so a retry that leaves
/// its plan out cannot slip past an earlier open one. The result handed back carries those
/// accumulated calls, and its `turns` and `usage` are the sums over all attempts.
pub async fn run_gated<F, Fut>(mut ask: F, prompt: &str, completion: Option<&Completion>) -> Result<RunResult>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<RunResult>>,
{
    let Some(completion) = completion else {
        return ask(prompt.to_string()).await;
    };
    let max = check_completion(&completion.max_attempts, true)?;

    let mut calls: Vec<ToolCallRecord> = Vec::new();
    let mut turns: u32 = 0;
    let mut usage = Usage::default();
    let mut reason = String::new();
    let mut attempt: u64 = 1;
    let mut last = loop {
        let p = if attempt == 1 { prompt.to_string() } else { retry_prompt(&reason) };
        let mut r = ask(p).await?;
        calls.append(&mut r.tool_calls);
        turns = turns.saturating_add(r.turns);
        usage = add_usage(usage, r.usage);
        r.tool_calls = calls.clone();
        r.turns = turns;
        r.usage = usage;

        if r.status != RunStatus::Done {
            // Stopped for its own reason. Mid-retry, the reason the gate was retrying is
            // added, unless the run waits on a human (the caller then owes an answer).
            if !reason.is_empty() && r.status != RunStatus::Pending {
                r.text = format!("{} [while verifying: attempt {attempt} last failed: {reason}]", r.text);
            }
            return Ok(r);
        }

        let verdict = completion.verify.call(r.to_value()).await?;
        if verdict.is_null() {
            return Err(Error::BadShape("Cannot read properties of undefined (reading 'ok')".into()));
        }
        if verdict.get("ok").is_some_and(truthy) {
            return Ok(r);
        }
        reason = match verdict.get("reason") {
            None | Some(Value::Null) => "unspecified".to_string(),
            Some(v) => js_string(v),
        };
        if attempt as f64 >= max {
            break r;
        }
        attempt += 1;
    };

    last.status = RunStatus::Incomplete;
    last.limit = Some(COMPLETION_LIMIT.into());
    last.text = format!("completion.verify failed {}×: {reason}", js_string(&completion.max_attempts));
    Ok(last)
}

fn add_usage(a: Usage, b: Usage) -> Usage {
    Usage {
        prompt_tokens: a.prompt_tokens.saturating_add(b.prompt_tokens),
        completion_tokens: a.completion_tokens.saturating_add(b.completion_tokens),
        total_tokens: a.total_tokens.saturating_add(b.total_tokens),
    }
}

/// A RunResult from its JSON (as `RunResult::to_value` writes it): what a host's `ask`
/// answers. A missing `status` reads as `done`; one outside the three is refused.
pub fn result_from_value(v: Value) -> Result<RunResult> {
    let Value::Object(mut m) = v else {
        return Err(Error::Invalid("toolnexus: a gated run must answer a RunResult object".into()));
    };
    let status = match m.get("status") {
        Some(s) if !truthy(s) => RunStatus::Done,
        None => RunStatus::Done,
        Some(Value::String(s)) if s == "done" => RunStatus::Done,
        Some(Value::String(s)) if s == "pending" => RunStatus::Pending,
        Some(Value::String(s)) if s == "incomplete" => RunStatus::Incomplete,
        Some(other) => {
            return Err(Error::Invalid(format!(
                "toolnexus: a gated run answered an unknown status {}",
                js_string(other)
            )))
        }
    };
    let text = match m.remove("text") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => js_string(&other),
    };
    let messages = match m.remove("messages") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let tool_calls = match m.remove("toolCalls") {
        Some(Value::Array(a)) => a.into_iter().map(record_from_value).collect(),
        _ => Vec::new(),
    };
    let turns = count(m.get("turns")).clamp(0, i64::from(u32::MAX)) as u32;
    let usage = m.get("usage").map_or_else(Usage::default, |u| Usage {
        prompt_tokens: count(u.get("promptTokens")),
        completion_tokens: count(u.get("completionTokens")),
        total_tokens: count(u.get("totalTokens")),
    });
    let model = match m.remove("model") {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let pending = match m.remove("pending") {
        Some(Value::Object(p)) => Some(p),
        _ => None,
    };
    let limit = match m.remove("limit") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let output = m.remove("output");
    Ok(RunResult { text, messages, tool_calls, turns, usage, model, status, pending, limit, halt: None, output })
}

fn record_from_value(v: Value) -> ToolCallRecord {
    let (name, args, rest) = match v {
        Value::Object(mut m) => {
            let name = match m.remove("name") {
                Some(Value::String(s)) => s,
                _ => String::new(),
            };
            let args = m.remove("args").unwrap_or(Value::Null);
            (name, args, Value::Object(m))
        }
        _ => (String::new(), Value::Null, Value::Object(Map::new())),
    };
    ToolCallRecord { name, args, result: ToolResult::from_value(rest) }
}

/// The built-in verdict over a RunResult's JSON: the latest `todowrite` call's list must have
/// every item completed. No such call, or one without a list, passes.
pub fn all_todos_done(result: &Value) -> Value {
    let calls = result.get("toolCalls").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let Some(call) = calls.iter().rev().find(|c| c.get("name").and_then(Value::as_str) == Some("todowrite")) else {
        return json!({ "ok": true });
    };
    let Some(todos) = call.get("metadata").and_then(|m| m.get("todos")).and_then(Value::as_array) else {
        return json!({ "ok": true });
    };
    let open: Vec<String> = todos
        .iter()
        .filter(|t| !t.get("completed").is_some_and(truthy))
        .map(|t| match t.get("text") {
            None | Some(Value::Null) => String::new(),
            Some(v) => js_string(v),
        })
        .collect();
    if open.is_empty() {
        json!({ "ok": true })
    } else {
        json!({ "ok": false, "reason": format!("{} item(s) still open: {}", open.len(), open.join("; ")) })
    }
}

/// `hooks` with `guardrails` compiled into its `before_tool`: each guardrail sees the tool
/// event in order, and the first that answers anything but `"allow"` (or nothing) refuses the
/// call, with `denied: <verdict>` as its error result. The earlier `before_tool` runs only
/// when every guardrail allows. No guardrails: `hooks` as they were.
pub fn guarded_hooks(guardrails: Vec<SharedCallback>, hooks: Hooks) -> Hooks {
    if guardrails.is_empty() {
        return hooks;
    }
    let prior = hooks.before_tool.clone();
    Hooks { before_tool: Some(std::sync::Arc::new(Guarded { guardrails, prior })), ..hooks }
}

struct Guarded {
    guardrails: Vec<SharedCallback>,
    prior: Option<SharedCallback>,
}

/// A guardrail's answer as a refusal reason; `None` when it allows.
fn refusal(verdict: &Value) -> Option<String> {
    match verdict {
        v if !truthy(v) => None,
        Value::String(s) if s == "allow" => None,
        v => Some(js_string(v)),
    }
}

#[async_trait]
impl Callback for Guarded {
    async fn call(&self, event: Value) -> Result<Value> {
        for g in &self.guardrails {
            let verdict = g.call(event.clone()).await?;
            if let Some(reason) = refusal(&verdict) {
                return Ok(json!({ "result": { "output": format!("denied: {reason}"), "isError": true } }));
            }
        }
        match &self.prior {
            Some(p) => p.call(event).await,
            None => Ok(Value::Null),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::callback::callback;

    fn run(text: &str, status: RunStatus, calls: Vec<ToolCallRecord>) -> RunResult {
        RunResult {
            text: text.into(),
            messages: vec![json!({ "role": "assistant", "content": text })],
            tool_calls: calls,
            turns: 2,
            usage: Usage { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
            model: "m".into(),
            status,
            pending: None,
            limit: None,
            halt: None,
            output: None,
        }
    }

    fn todo_call(items: Value) -> ToolCallRecord {
        ToolCallRecord {
            name: "todowrite".into(),
            args: json!({ "todos": items }),
            result: ToolResult {
                output: String::new(),
                is_error: false,
                metadata: Some(json!({ "todos": items })),
                rich: None,
            },
        }
    }

    fn verdict(v: Value) -> SharedCallback {
        callback(move |_| {
            let v = v.clone();
            async move { Ok(v) }
        })
    }

    /// An `ask` answering `runs` in order and logging the prompts it got.
    fn scripted(
        runs: Vec<RunResult>,
        prompts: Arc<Mutex<Vec<String>>>,
    ) -> impl FnMut(String) -> std::future::Ready<Result<RunResult>> {
        let mut runs = runs.into_iter();
        move |p| {
            prompts.lock().unwrap().push(p);
            std::future::ready(runs.next().ok_or_else(|| Error::Invalid("script exhausted".into())))
        }
    }

    #[tokio::test]
    async fn without_a_completion_the_run_is_the_asks() {
        let prompts = Arc::new(Mutex::new(vec![]));
        let r =
            run_gated(scripted(vec![run("hi", RunStatus::Done, vec![])], prompts.clone()), "go", None).await.unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.turns, 2);
        assert_eq!(*prompts.lock().unwrap(), vec!["go".to_string()]);
    }

    #[tokio::test]
    async fn max_attempts_is_checked_before_verify_and_before_any_run() {
        for bad in [json!(0), json!(-1), json!(1.5), json!("2"), Value::Null, json!(true)] {
            let e = check_completion(&bad, false).unwrap_err();
            assert_eq!(e.to_string(), MAX_ATTEMPTS_INVALID);
            let prompts = Arc::new(Mutex::new(vec![]));
            let c = Completion { verify: verdict(json!({ "ok": true })), max_attempts: bad };
            let e = run_gated(scripted(vec![], prompts.clone()), "go", Some(&c)).await.unwrap_err();
            assert_eq!(e.to_string(), MAX_ATTEMPTS_INVALID);
            assert!(prompts.lock().unwrap().is_empty());
        }
        assert_eq!(check_completion(&json!(2), false).unwrap_err().to_string(), VERIFY_REQUIRED);
        assert_eq!(check_completion(&json!(2.0), true).unwrap(), 2.0);
    }

    #[tokio::test]
    async fn a_failed_verdict_retries_with_the_reason_then_stops_loudly() {
        let prompts = Arc::new(Mutex::new(vec![]));
        let c = Completion { verify: verdict(json!({ "ok": false, "reason": "red" })), max_attempts: json!(2) };
        let runs = vec![run("one", RunStatus::Done, vec![]), run("two", RunStatus::Done, vec![])];
        let r = run_gated(scripted(runs, prompts.clone()), "go", Some(&c)).await.unwrap();
        assert_eq!(*prompts.lock().unwrap(), vec!["go".to_string(), retry_prompt("red")]);
        assert_eq!(retry_prompt("red"), "Your work did not verify: red. Fix it and finish.");
        assert_eq!(r.status, RunStatus::Incomplete);
        assert_eq!(r.limit.as_deref(), Some("completion"));
        assert_eq!(r.text, "completion.verify failed 2×: red");
        // Summed over the two attempts; the transcript is the last one's.
        assert_eq!(r.turns, 4);
        assert_eq!(r.usage, Usage { prompt_tokens: 6, completion_tokens: 8, total_tokens: 14 });
        assert_eq!(r.messages[0]["content"], "two");
    }

    #[tokio::test]
    async fn a_verdict_without_a_reason_is_unspecified() {
        let c = Completion { verify: verdict(json!({ "ok": false })), max_attempts: json!(1) };
        let prompts = Arc::new(Mutex::new(vec![]));
        let r = run_gated(scripted(vec![run("x", RunStatus::Done, vec![])], prompts), "go", Some(&c)).await.unwrap();
        assert_eq!(r.text, "completion.verify failed 1×: unspecified");
    }

    #[tokio::test]
    async fn a_verify_answering_nothing_fails_as_javascript_would() {
        let c = Completion { verify: verdict(Value::Null), max_attempts: json!(1) };
        let prompts = Arc::new(Mutex::new(vec![]));
        let e =
            run_gated(scripted(vec![run("x", RunStatus::Done, vec![])], prompts), "go", Some(&c)).await.unwrap_err();
        assert_eq!(e.js_class(), "TypeError");
    }

    #[tokio::test]
    async fn verify_sees_every_attempts_calls() {
        let prompts = Arc::new(Mutex::new(vec![]));
        let seen = Arc::new(Mutex::new(vec![]));
        let log = seen.clone();
        let verify = callback(move |r: Value| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(r["toolCalls"].as_array().map_or(0, Vec::len));
                Ok(all_todos_done(&r))
            }
        });
        let c = Completion { verify, max_attempts: json!(2) };
        let open = todo_call(json!([{ "text": "ship it", "completed": false }]));
        let runs = vec![run("a", RunStatus::Done, vec![open]), run("b", RunStatus::Done, vec![])];
        let r = run_gated(scripted(runs, prompts), "go", Some(&c)).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![1, 1]);
        assert_eq!(r.status, RunStatus::Incomplete);
        assert_eq!(r.text, "completion.verify failed 2×: 1 item(s) still open: ship it");
        assert_eq!(r.tool_calls.len(), 1);
    }

    #[tokio::test]
    async fn a_run_that_stops_by_itself_is_returned_with_the_retry_reason() {
        let c = Completion { verify: verdict(json!({ "ok": false, "reason": "red" })), max_attempts: json!(5) };
        let mut capped = run("partial", RunStatus::Incomplete, vec![]);
        capped.limit = Some("maxTurns".into());
        let prompts = Arc::new(Mutex::new(vec![]));
        let runs = vec![run("a", RunStatus::Done, vec![]), capped];
        let r = run_gated(scripted(runs, prompts.clone()), "go", Some(&c)).await.unwrap();
        assert_eq!(prompts.lock().unwrap().len(), 2);
        assert_eq!(r.status, RunStatus::Incomplete);
        assert_eq!(r.limit.as_deref(), Some("maxTurns"));
        assert_eq!(r.text, "partial [while verifying: attempt 2 last failed: red]");
        assert_eq!(r.turns, 4);
    }

    #[tokio::test]
    async fn a_pending_run_is_never_judged_nor_annotated() {
        let calls = Arc::new(Mutex::new(0));
        let n = calls.clone();
        let verify = callback(move |_| {
            let n = n.clone();
            async move {
                *n.lock().unwrap() += 1;
                Ok(json!({ "ok": false, "reason": "red" }))
            }
        });
        let c = Completion { verify, max_attempts: json!(3) };
        let prompts = Arc::new(Mutex::new(vec![]));
        // First attempt pending: returned at once, verify never called.
        let r = run_gated(scripted(vec![run("q", RunStatus::Pending, vec![])], prompts.clone()), "go", Some(&c))
            .await
            .unwrap();
        assert_eq!((r.status, r.text.as_str()), (RunStatus::Pending, "q"));
        assert_eq!(*calls.lock().unwrap(), 0);
        // Pending mid-retry: no annotation either.
        let runs = vec![run("a", RunStatus::Done, vec![]), run("q", RunStatus::Pending, vec![])];
        let r = run_gated(scripted(runs, prompts), "go", Some(&c)).await.unwrap();
        assert_eq!((r.status, r.text.as_str()), (RunStatus::Pending, "q"));
        assert_eq!(*calls.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn a_failing_ask_fails_the_gate() {
        let c = Completion { verify: verdict(json!({ "ok": true })), max_attempts: json!(2) };
        let prompts = Arc::new(Mutex::new(vec![]));
        let e = run_gated(scripted(vec![], prompts), "go", Some(&c)).await.unwrap_err();
        assert_eq!(e.to_string(), "script exhausted");
    }

    #[test]
    fn all_todos_done_reads_the_latest_list() {
        assert_eq!(all_todos_done(&json!({ "toolCalls": [] })), json!({ "ok": true }));
        let call = |items: Value| json!({ "name": "todowrite", "metadata": { "todos": items } });
        let open =
            call(json!([{ "text": "a", "completed": true }, { "text": "b" }, { "text": 3, "completed": 0 }, null]));
        let closed = call(json!([{ "text": "a", "completed": true }]));
        assert_eq!(
            all_todos_done(&json!({ "toolCalls": [open] })),
            json!({ "ok": false, "reason": "3 item(s) still open: b; 3; " })
        );
        assert_eq!(all_todos_done(&json!({ "toolCalls": [open, closed] })), json!({ "ok": true }));
        assert_eq!(all_todos_done(&json!({ "toolCalls": [closed, open, { "name": "other" }] }))["ok"], json!(false));
        // The latest todowrite without a list: nothing to check.
        let bare = json!({ "name": "todowrite", "output": "x" });
        assert_eq!(all_todos_done(&json!({ "toolCalls": [open, bare] })), json!({ "ok": true }));
    }

    #[test]
    fn a_result_reads_back_from_its_json() {
        let mut r = run("t", RunStatus::Incomplete, vec![todo_call(json!([{ "text": "a" }]))]);
        r.limit = Some("maxTurns".into());
        let back = result_from_value(r.to_value()).unwrap();
        assert_eq!(back.to_value(), r.to_value());
        let bare = result_from_value(json!({ "text": "x" })).unwrap();
        assert_eq!(bare.status, RunStatus::Done);
        assert!(result_from_value(json!({ "status": "error" })).is_err());
        assert!(result_from_value(json!("nope")).is_err());
    }

    fn event(name: &str) -> Value {
        json!({ "name": name, "args": {}, "turn": 1 })
    }

    #[tokio::test]
    async fn guardrails_first_refusal_wins_and_the_prior_hook_runs_only_when_all_allow() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
        let first = callback(move |ev: Value| {
            let l = l1.clone();
            async move {
                l.lock().unwrap().push("first".into());
                Ok(if ev["name"] == "danger" { json!("policy: no") } else { json!("allow") })
            }
        });
        let second = callback(move |_| {
            let l = l2.clone();
            async move {
                l.lock().unwrap().push("second".into());
                Ok(Value::Null)
            }
        });
        let prior = callback(move |_| {
            let l = l3.clone();
            async move {
                l.lock().unwrap().push("prior".into());
                Ok(json!({ "args": { "x": 1 } }))
            }
        });
        let after = verdict(Value::Null);
        let hooks = Hooks { before_tool: Some(prior), after_tool: Some(after.clone()), ..Default::default() };
        let guarded = guarded_hooks(vec![first, second], hooks);
        assert!(guarded.after_tool.as_ref().is_some_and(|a| Arc::ptr_eq(a, &after)));
        let bt = guarded.before_tool.unwrap();

        let out = bt.call(event("danger")).await.unwrap();
        assert_eq!(out, json!({ "result": { "output": "denied: policy: no", "isError": true } }));
        assert_eq!(*log.lock().unwrap(), vec!["first"]);

        log.lock().unwrap().clear();
        let out = bt.call(event("safe")).await.unwrap();
        assert_eq!(out, json!({ "args": { "x": 1 } }));
        assert_eq!(*log.lock().unwrap(), vec!["first", "second", "prior"]);
    }

    #[tokio::test]
    async fn any_other_answer_refuses_and_nothing_allows() {
        for (answer, out) in [
            (json!("allow"), None),
            (Value::Null, None),
            (json!(""), None),
            (json!(false), None),
            (json!("nope"), Some("denied: nope")),
            (json!({ "why": 1 }), Some("denied: [object Object]")),
            (json!(7), Some("denied: 7")),
        ] {
            let bt = guarded_hooks(vec![verdict(answer)], Hooks::default()).before_tool.unwrap();
            let got = bt.call(event("t")).await.unwrap();
            match out {
                None => assert_eq!(got, Value::Null),
                Some(text) => assert_eq!(got["result"]["output"], text),
            }
        }
    }

    #[test]
    fn no_guardrails_leaves_the_hooks_untouched() {
        let prior = verdict(Value::Null);
        let hooks = Hooks { before_tool: Some(prior.clone()), ..Default::default() };
        let out = guarded_hooks(vec![], hooks);
        assert!(out.before_tool.as_ref().is_some_and(|b| Arc::ptr_eq(b, &prior)));
        assert!(guarded_hooks(vec![], Hooks::default()).before_tool.is_none());
    }
}
