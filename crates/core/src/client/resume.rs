//! The ways back into a parked run (SPEC §10, "Durable resume"): `runWithAnswer` over a
//! transcript the caller kept, `askWithAnswer` over a conversation in the store, and the agent
//! runtime's own (its resume already checked the Answer and claimed the Request).
//!
//! A run parks on the first suspended call of a turn, in call order: the transcript then ends
//! with that turn's assistant message, the results of the calls before the parked one, and the
//! parked call's placeholder (its Request's prompt). Taking it up again replaces the
//! placeholder with the call's real result (run again with the Answer), runs the calls that
//! never reached the transcript (each of those that suspends parks the run again, on its own
//! Request), and goes on with no new user turn, so the transcript the provider sees always
//! has one result per call.

use serde_json::{Map, Value};

use super::parked::{Resumed, Start};
use super::result::{HaltSite, Resolution, RunOptions, RunResult};
use super::run::Client;
use super::wire::{calls_of, Style};
use crate::error::Result;
use crate::json::js_string;
use crate::suspension::{check, claim_key, now_ms, refused, request_label, taken, TOOL_GONE, UNKNOWN};
use crate::toolkit::Toolkit;
use crate::types::request_prompt;

impl Client {
    /// `runWithAnswer(toolkit, history, pending, answer)`: the run that parked with `pending`
    /// (its transcript is `history`) goes on with `answer`, which must echo `pending.id`. The
    /// Request is claimed in this client's store first, so an Answer is applied once (across
    /// processes when the store is durable).
    pub async fn run_with_answer(
        &self,
        toolkit: &Toolkit,
        history: Vec<Value>,
        pending: &Value,
        answer: Value,
        ro: RunOptions,
    ) -> Result<RunResult> {
        const VERB: &str = "runWithAnswer";
        let request = parked_request(VERB, pending)?;
        check(VERB, &request, &answer, now_ms(), true)?;
        self.answered(VERB, "run", toolkit, history, request, answer, None, ro).await
    }

    /// `askWithAnswer(toolkit, conversationId, pending, answer)`: as `run_with_answer`, over the
    /// conversation the store keeps under `id`, which is saved as the run goes: once the parked
    /// turn's calls have their results (so a failure later loses none of them), and at the end.
    pub async fn ask_with_answer(
        &self,
        toolkit: &Toolkit,
        id: &str,
        pending: &Value,
        answer: Value,
        ro: RunOptions,
    ) -> Result<RunResult> {
        const VERB: &str = "askWithAnswer";
        let request = parked_request(VERB, pending)?;
        check(VERB, &request, &answer, now_ms(), true)?;
        let history = self.parked_conversation(VERB, id, &request).await?;
        self.answered(VERB, &format!("ask:{id}"), toolkit, history, request, answer, Some(id), ro).await
    }

    /// A checked Answer taken to the turn parked at the end of `history` (in `scope`): nothing
    /// runs until the transcript is found parked on `request`, its parked call's tool is there,
    /// and the Request is claimed in the store.
    #[allow(clippy::too_many_arguments)] // the two entry points' parts, passed on once
    async fn answered(
        &self,
        verb: &str,
        scope: &str,
        toolkit: &Toolkit,
        history: Vec<Value>,
        request: Map<String, Value>,
        answer: Value,
        keep: Option<&str>,
        ro: RunOptions,
    ) -> Result<RunResult> {
        let key = claim_key(scope, &js_string(&request["id"]), &history);
        let resumed = halted_turn(self.opts.style, history, request, HaltSite::Tool, Resolution::Answer(answer), verb)?;
        self.tool_present(toolkit, &resumed, verb)?;
        if !self.store.claim(&key).await? {
            return Err(taken(verb, &resumed.request));
        }
        self.take_up(toolkit, resumed, keep, ro).await
    }

    /// The agent runtime's way in: conversation `id` parked at `site` on `request` goes on
    /// with `resolution`. The caller has checked the Answer and claimed the Request.
    pub async fn resume_conversation(
        &self,
        toolkit: &Toolkit,
        id: &str,
        request: Map<String, Value>,
        site: HaltSite,
        resolution: Resolution,
        ro: RunOptions,
    ) -> Result<RunResult> {
        const VERB: &str = "resume";
        let history = self.parked_conversation(VERB, id, &request).await?;
        let resumed = halted_turn(self.opts.style, history, request, site, resolution, VERB)?;
        self.tool_present(toolkit, &resumed, VERB)?;
        self.take_up(toolkit, resumed, Some(id), ro).await
    }

    /// Whether conversation `id` could be taken up on `request` at `site` by `toolkit`: the
    /// refusal `resume_conversation` would give before running anything, if any.
    pub async fn check_parked(
        &self,
        toolkit: &Toolkit,
        id: &str,
        request: &Map<String, Value>,
        site: HaltSite,
    ) -> Result<()> {
        const VERB: &str = "resume";
        let history = self.parked_conversation(VERB, id, request).await?;
        let resumed = halted_turn(self.opts.style, history, request.clone(), site, Resolution::Retry, VERB)?;
        self.tool_present(toolkit, &resumed, VERB)
    }

    async fn parked_conversation(&self, verb: &str, id: &str, request: &Map<String, Value>) -> Result<Vec<Value>> {
        match self.store.get(id).await? {
            Some(history) => Ok(history),
            None => Err(refused(
                UNKNOWN,
                format!(
                    "{verb}: no conversation {id:?} in the store, so nothing parked on request {}",
                    request_label(request)
                ),
            )),
        }
    }

    /// A parked call whose tool is gone is refused, leaving the Request parked.
    fn tool_present(&self, toolkit: &Toolkit, r: &Resumed, verb: &str) -> Result<()> {
        let Some(parked) = r.calls.first() else { return Ok(()) };
        if toolkit.get(&parked.name).is_some() {
            return Ok(());
        }
        Err(refused(
            TOOL_GONE,
            format!(
                "{verb}: the call parked on request {} is to the tool {:?}, which is not among the tools given; the request stays parked",
                request_label(&r.request),
                parked.name
            ),
        ))
    }

    async fn take_up(
        &self,
        toolkit: &Toolkit,
        mut r: Resumed,
        keep: Option<&str>,
        ro: RunOptions,
    ) -> Result<RunResult> {
        r.keep = keep.map(str::to_string);
        let run = self.execute(Start::Resume(Box::new(r)), toolkit, ro, None);
        let result = crate::warn::scope_with(self.opts.logger.as_ref(), run).await?;
        if let Some(id) = keep {
            self.store.save(id, result.messages.clone()).await?;
        }
        Ok(result)
    }
}

/// The `pending` a resume is given: a Request with an id.
fn parked_request(verb: &str, pending: &Value) -> Result<Map<String, Value>> {
    match pending {
        Value::Object(m) if m.get("id").is_some_and(|id| !id.is_null()) => Ok(m.clone()),
        _ => Err(crate::Error::Type(format!(
            "{verb}: `pending` must be the Request the run parked on (its RunResult's `pending`, with its id)"
        ))),
    }
}

/// The parked turn at the end of `history`, ready to be taken up (see the module).
fn halted_turn(
    style: Style,
    mut history: Vec<Value>,
    request: Map<String, Value>,
    site: HaltSite,
    resolution: Resolution,
    verb: &str,
) -> Result<Resumed> {
    if site == HaltSite::BudgetLlm {
        return Ok(Resumed {
            messages: history,
            blocks: Vec::new(),
            calls: Vec::new(),
            site,
            request,
            resolution,
            keep: None,
        });
    }
    let unparked = || {
        refused(
            UNKNOWN,
            format!(
                "{verb}: the transcript does not end with a turn parked on request {}; nothing was resumed",
                request_label(&request)
            ),
        )
    };
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_string);
    let prompt = request_prompt(&request);
    let n = history.len();
    // The results written for the turn, and the assistant message that asked for its calls.
    let (answered, assistant_at, ids): (usize, usize, Vec<Option<Value>>) = match style {
        Style::OpenAI => {
            let k = history.iter().rev().take_while(|m| role(m).as_deref() == Some("tool")).count();
            if k == 0 || k >= n {
                return Err(unparked());
            }
            let ids = history[n - k..].iter().map(|m| m.get("tool_call_id").cloned()).collect();
            if history[n - 1].get("content").map(js_string) != Some(prompt) {
                return Err(unparked());
            }
            (k, n - k - 1, ids)
        }
        Style::Anthropic => {
            if n < 2 || role(&history[n - 1]).as_deref() != Some("user") {
                return Err(unparked());
            }
            let blocks = history[n - 1].get("content").and_then(Value::as_array).cloned().unwrap_or_default();
            let all_results = blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            let last_is_placeholder = blocks.last().and_then(|b| b.get("content")).map(js_string) == Some(prompt);
            if blocks.is_empty() || !all_results || !last_is_placeholder {
                return Err(unparked());
            }
            (blocks.len(), n - 2, blocks.iter().map(|b| b.get("tool_use_id").cloned()).collect())
        }
    };
    // The model's message as it came (an OpenAI-style reply may leave its role out).
    if !matches!(role(&history[assistant_at]).as_deref(), Some("assistant") | None) {
        return Err(unparked());
    }
    let mut calls = calls_of(style, &history[assistant_at]);
    if calls.len() < answered || calls.iter().zip(&ids).any(|(c, id)| id.is_some() && c.id.is_some() && &c.id != id) {
        return Err(unparked());
    }
    let blocks = match style {
        Style::OpenAI => {
            history.truncate(n - 1);
            Vec::new()
        }
        Style::Anthropic => {
            let last = history.pop().unwrap_or_default();
            let mut blocks = last.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
            blocks.truncate(answered - 1);
            blocks
        }
    };
    let calls = calls.split_off(answered - 1);
    Ok(Resumed { messages: history, blocks, calls, site, request, resolution, keep: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req() -> Map<String, Value> {
        json!({"id": "p1", "kind": "approval", "prompt": "approve a"}).as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_openai_parked_turn_is_found_with_the_calls_after_it() {
        let history = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "plain", "arguments": "{}"}},
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
                {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c0", "content": "fine"}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "approve a"}),
        ];
        let r = halted_turn(Style::OpenAI, history.clone(), req(), HaltSite::Tool, Resolution::Retry, "t").unwrap();
        assert_eq!(r.messages.len(), 3, "the placeholder is left out");
        assert_eq!(r.calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(r.calls[0].args, json!({"x": 1}));
        // Another prompt: not this request's parking.
        let mut other = req();
        other.insert("prompt".into(), "approve b".into());
        let e = halted_turn(Style::OpenAI, history.clone(), other, HaltSite::Tool, Resolution::Retry, "t");
        assert!(e.is_err());
        // A finished transcript parks nothing.
        let done = vec![json!({"role": "user", "content": "go"}), json!({"role": "assistant", "content": "hi"})];
        assert!(halted_turn(Style::OpenAI, done, req(), HaltSite::Tool, Resolution::Retry, "t").is_err());
    }

    #[test]
    fn an_anthropic_parked_turn_keeps_the_results_before_it() {
        let history = vec![
            json!({"role": "user", "content": "go"}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "on it"},
                {"type": "tool_use", "id": "t0", "name": "plain", "input": {}},
                {"type": "tool_use", "id": "t1", "name": "a", "input": {"x": 1}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": "fine", "is_error": false},
                {"type": "tool_result", "tool_use_id": "t1", "content": "approve a", "is_error": true}]}),
        ];
        let r = halted_turn(Style::Anthropic, history, req(), HaltSite::Tool, Resolution::Retry, "t").unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(
            r.blocks,
            vec![json!({"type": "tool_result", "tool_use_id": "t0", "content": "fine", "is_error": false})]
        );
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.calls[0].name, "a");
    }
}
