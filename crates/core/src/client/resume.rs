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

use super::park::{locate, Found, Parks, Scope};
use super::parked::{Resumed, Start};
use super::result::{HaltSite, Resolution, RunOptions, RunResult, RunStatus};
use super::run::Client;
use super::wire::Style;
use crate::error::Result;
use crate::suspension::{answer_shape, check, echoes, now_ms, refused, request_label, TOOL_GONE, UNKNOWN};
use crate::toolkit::Toolkit;
use crate::types::request_prompt;

impl Client {
    /// This client's park records: on its store when that is durable, else in this process,
    /// sealed with its `resumeKey`.
    pub(super) fn parks(&self) -> Parks<'_> {
        Parks {
            durable: self.store.parks(),
            key: self.opts.resume_key.as_deref(),
            retention_ms: self.opts.park_retention_ms,
        }
    }

    /// Record what `result` parked on, in `scope` (nothing when it did not park, or when the
    /// caller keeps its own record): its Request then carries its seal, when there is a key.
    pub(super) async fn record_park(&self, scope: &Scope, result: &mut RunResult, own_parks: bool) -> Result<()> {
        if own_parks || result.status != RunStatus::Pending {
            return Ok(());
        }
        let (Some(request), Some(site)) = (result.pending.as_ref(), result.halt) else { return Ok(()) };
        // Boxed: the runtime's turns nest this deep inside their own futures.
        let parks = self.parks();
        let recorded = Box::pin(parks.record(scope, self.opts.style, request, site, &result.messages));
        if let Some(seal) = recorded.await? {
            if let Some(p) = result.pending.as_mut() {
                p.insert(super::park::SEAL_KEY.into(), Value::String(seal));
            }
        }
        Ok(())
    }

    /// `deleteConversation(id)`: conversation `id` goes from the store, with what it parked on
    /// (a later `askWithAnswer` for it is refused as unknown). `true` when the store had it.
    pub async fn delete_conversation(&self, id: &str) -> Result<bool> {
        let had = self.store.delete(id).await?;
        self.parks().forget(id);
        Ok(had)
    }

    /// `runWithAnswer(toolkit, history, pending, answer)`: the run that parked with `pending`
    /// (its transcript is `history`) goes on with `answer`, which must echo `pending.id`. What
    /// goes on is what the library recorded at the park (see `park`): the caller's `pending` and
    /// `history` must be what it handed out, and the Request is claimed before anything runs,
    /// so an Answer is applied once (across processes when the store is durable).
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
        answer_shape(VERB, &answer)?;
        echoes(VERB, &request, &answer, true)?;
        let found = self.parks().find(VERB, &Scope::Run, self.opts.style, &request, &history).await?;
        self.answered(VERB, &Scope::Run, toolkit, history, found, answer, ro).await
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
        answer_shape(VERB, &answer)?;
        echoes(VERB, &request, &answer, true)?;
        let scope = Scope::Conversation(id.to_string());
        let history = self.store.get(id).await?.unwrap_or_default();
        let found = self.parks().find(VERB, &scope, self.opts.style, &request, &history).await?;
        self.answered(VERB, &scope, toolkit, history, found, answer, ro).await
    }

    /// An Answer taken to the parking `found` (the record's, checked against the caller's
    /// copy): nothing runs until the Request is found unexpired on the record, the parked
    /// call's tool is there, and the parking is claimed.
    #[allow(clippy::too_many_arguments)] // the two entry points' parts, passed on once
    async fn answered(
        &self,
        verb: &str,
        scope: &Scope,
        toolkit: &Toolkit,
        history: Vec<Value>,
        found: Found,
        answer: Value,
        ro: RunOptions,
    ) -> Result<RunResult> {
        // Expiry is the record's.
        check(verb, &found.parking.request, &answer, now_ms(), true)?;
        let resumed = halted_turn(
            self.opts.style,
            history,
            found.parking.request.clone(),
            found.parking.site,
            Resolution::Answer(answer),
            verb,
        )?;
        self.tool_present(toolkit, &resumed, verb)?;
        self.parks().claim(verb, scope, &found).await?;
        let keep = match scope {
            Scope::Conversation(id) => Some(id.as_str()),
            Scope::Run => None,
        };
        let own = ro.own_parks;
        let mut result = self.take_up(toolkit, resumed, keep, ro).await?;
        self.record_park(scope, &mut result, own).await?;
        if let Some(id) = keep {
            self.store.save(id, result.messages.clone()).await?;
        }
        Ok(result)
    }

    /// The agent runtime's way in: conversation `id` parked at `site` on `request` goes on
    /// with `resolution`. The runtime keeps its own record of the park: it has checked the
    /// Answer and claimed the Request.
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
        let result = self.take_up(toolkit, resumed, Some(id), ro).await?;
        self.store.save(id, result.messages.clone()).await?;
        Ok(result)
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

    /// Run the parked turn on: the conversation `keep` names is saved once its calls have
    /// their results (the caller saves it at the end).
    async fn take_up(
        &self,
        toolkit: &Toolkit,
        mut r: Resumed,
        keep: Option<&str>,
        ro: RunOptions,
    ) -> Result<RunResult> {
        r.keep = keep.map(str::to_string);
        let run = self.execute(Start::Resume(Box::new(r)), toolkit, ro, None);
        crate::warn::scope_with(self.opts.logger.as_ref(), run).await
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
    let Some(at) = locate(style, &history, &request_prompt(&request)) else {
        return Err(refused(
            UNKNOWN,
            format!(
                "{verb}: the transcript does not end with a turn parked on request {}; nothing was resumed",
                request_label(&request)
            ),
        ));
    };
    let mut calls = super::wire::calls_of(style, &history[at.assistant_at]);
    let n = history.len();
    let blocks = match style {
        Style::OpenAI => {
            history.truncate(n - 1);
            Vec::new()
        }
        Style::Anthropic => {
            let last = history.pop().unwrap_or_default();
            let mut blocks = last.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
            blocks.truncate(at.answered - 1);
            blocks
        }
    };
    let calls = calls.split_off(at.answered - 1);
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
