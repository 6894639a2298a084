//! The Client class (`NativeClient`): the options document in, the core loop behind its run
//! verbs (`run`, `stream`, `ask`, the `…WithAnswer` resumes, `translate`), and the helpers that
//! read what those verbs are given. The transport it may go through is `fetch_seam`'s.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
use toolnexus_core::client::one_call::{self, TranslateRequest};
use toolnexus_core::client::{CallOptions, Client, ClientOptions, RunOptions};

use crate::bridge::{JsCallback, JsonFn};
use crate::cancel::CancelToken;
use crate::dispatch::Crossed;
use crate::fetch_seam::{event_loop_transport, global_fetch};
use crate::options_doc::Shared;
use crate::toolkit::NativeToolkit;
use crate::{core_err, parse_json, with_json};
use toolnexus_core::json;

#[napi]
pub struct NativeClient {
    inner: Arc<Client>,
    /// Whether its LLM requests go through the built-in HTTP (no `fetch`, no `generate`): only
    /// then may a run be sent through `globalThis.fetch` instead.
    builtin: bool,
}

impl NativeClient {
    /// `work` as a run of this client: through `globalThis.fetch` when `seam` asks for it and
    /// the client would otherwise use the built-in HTTP.
    fn with_seam<F: std::future::Future>(
        &self,
        seam: Option<bool>,
        work: F,
    ) -> impl std::future::Future<Output = F::Output> {
        let through = if seam == Some(true) && self.builtin { global_fetch() } else { None };
        async move {
            match through {
                Some(t) => toolnexus_core::client::through(t, work).await,
                None => work.await,
            }
        }
    }
}

impl NativeClient {
    /// A run of this client's as the Promise JavaScript gets: `run`, given the client and the
    /// toolkit, traced under the caller's context (`trace`) and through the user's seam when
    /// `seam` asks; it resolves with the RunResult's JSON.
    fn run_promise<F, Fut>(
        &self,
        env: &Env,
        toolkit: &NativeToolkit,
        seam: Option<bool>,
        trace: Option<u32>,
        run: F,
    ) -> Result<crate::dispatch::JsPromise>
    where
        F: FnOnce(Arc<Client>, Arc<toolnexus_core::Toolkit>) -> Fut + 'static,
        Fut: std::future::Future<Output = toolnexus_core::error::Result<toolnexus_core::client::RunResult>> + 'static,
    {
        let client = self.inner.clone();
        let tk = toolkit.inner.clone();
        let root = trace.map(u64::from);
        let work = self.with_seam(seam, async move { client.traced(root, run(client.clone(), tk)).await });
        crate::dispatch::local_promise(env, async move {
            let r = work.await.map_err(core_err)?;
            Ok(Crossed::of(r.into_value()))
        })
    }
}

fn bad(msg: impl Into<String>) -> Error {
    crate::dispatch::error::plain(msg)
}

/// The options a client call refused, with the status the binding gives a bad argument.
fn bad_option(e: toolnexus_core::Error) -> Error {
    bad(e.to_string())
}

#[napi]
impl NativeClient {
    /// `options` is the whole options document (see `options_doc`): its JSON, the functions and the
    /// addon objects its markers name. `inProcess`: `createInProcessClient`'s options.
    #[napi(constructor)]
    pub fn new(
        env: &Env,
        options: String,
        fns: Vec<JsonFn>,
        objects: Vec<ExternalRef<Shared>>,
        in_process: Option<bool>,
    ) -> Result<Self> {
        let read =
            if in_process == Some(true) { ClientOptions::in_process_from_json } else { ClientOptions::from_json };
        let mut opts = crate::options_doc::read(fns, objects, || read(&options)).map_err(core_err)?;
        let builtin = opts.builtin_transport();
        if builtin {
            opts.transport = event_loop_transport(env);
        }
        let inner = Client::new(opts).map_err(core_err)?;
        Ok(NativeClient { inner: Arc::new(inner), builtin })
    }

    /// The Prometheus text of the metrics so far.
    #[napi]
    pub fn metrics(&self) -> String {
        self.inner.metrics()
    }

    /// Run the loop; resolves with the RunResult as JSON.
    #[napi(ts_return_type = "Promise<string | string[]>")]
    #[allow(clippy::too_many_arguments)] // each a value JavaScript passes; napi takes them one by one
    pub fn run(
        &self,
        env: &Env,
        prompt: String,
        toolkit: &NativeToolkit,
        history: Option<String>,
        options: Option<String>,
        fns: Option<Vec<JsonFn>>,
        cancel: Option<&CancelToken>,
        seam: Option<bool>,
        trace: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let mut ro = run_options(history, cancel)?;
        ro.output = call_options("run", options, fns)?.output;
        self.run_promise(env, toolkit, seam, trace, |client, tk| async move { client.run(&prompt, &tk, ro).await })
    }

    /// Stream the loop: every event is handed to `onEvent` (awaited); resolves when done.
    #[napi(ts_return_type = "Promise<string>")]
    #[allow(clippy::too_many_arguments)] // each a value JavaScript passes; napi takes them one by one
    pub fn stream(
        &self,
        env: &Env,
        prompt: String,
        toolkit: &NativeToolkit,
        id: Option<String>,
        options: Option<String>,
        fns: Option<Vec<JsonFn>>,
        cancel: Option<&CancelToken>,
        on_event: JsonFn,
        seam: Option<bool>,
        trace: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let mut ro = run_options(None, cancel)?;
        ro.output = call_options("stream", options, fns)?.output;
        let client = self.inner.clone();
        let tk = toolkit.inner.clone();
        let root = trace.map(u64::from);
        let work = self.with_seam(seam, async move {
            let sink = JsCallback(on_event);
            client.traced(root, client.stream(&prompt, &tk, id.as_deref(), ro, &sink)).await.map(|_| ())
        });
        crate::dispatch::local_promise(env, async move {
            // The result already reached JavaScript in the `done` event.
            work.await.map_err(core_err)?;
            Ok("null".to_string())
        })
    }

    /// `ask`: memory by `id` through the store, text deltas to `onText` when given.
    #[napi(ts_return_type = "Promise<string | string[]>")]
    #[allow(clippy::too_many_arguments)] // each a value JavaScript passes; napi takes them one by one
    pub fn ask(
        &self,
        env: &Env,
        prompt: String,
        toolkit: &NativeToolkit,
        id: Option<String>,
        options: Option<String>,
        fns: Option<Vec<JsonFn>>,
        cancel: Option<&CancelToken>,
        seam: Option<bool>,
        trace: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let mut ro = run_options(None, cancel)?;
        let call = call_options("ask", options, fns)?;
        ro.output = call.output;
        let on_text = call.on_text;
        self.run_promise(env, toolkit, seam, trace, |client, tk| async move {
            client.ask(&prompt, &tk, id.as_deref(), on_text.as_deref(), ro).await
        })
    }

    /// `runWithAnswer`: the run that parked with `pending` (its transcript is `history`) goes
    /// on with `answer` (SPEC §10 durable resume). Each argument is the caller's JSON.
    #[napi(ts_return_type = "Promise<string | string[]>")]
    #[allow(clippy::too_many_arguments)] // each a value JavaScript passes; napi takes them one by one
    pub fn run_with_answer(
        &self,
        env: &Env,
        toolkit: &NativeToolkit,
        history: String,
        pending: String,
        answer: String,
        options: Option<String>,
        fns: Option<Vec<JsonFn>>,
        cancel: Option<&CancelToken>,
        seam: Option<bool>,
        trace: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let history = match parse_json(&history, "runWithAnswer")? {
            Value::Array(items) => items,
            _ => {
                return Err(core_err(toolnexus_core::Error::Type(
                    "runWithAnswer: `history` must be the transcript (an array of messages) the run parked with".into(),
                )))
            }
        };
        let (pending, answer) = (parse_json(&pending, "runWithAnswer")?, parse_json(&answer, "runWithAnswer")?);
        let mut ro = run_options(None, cancel)?;
        ro.output = call_options("runWithAnswer", options, fns)?.output;
        self.run_promise(env, toolkit, seam, trace, |client, tk| async move {
            client.run_with_answer(&tk, history, &pending, answer, ro).await
        })
    }

    /// `askWithAnswer`: as `runWithAnswer`, over the conversation the store keeps under `id`.
    #[napi(ts_return_type = "Promise<string | string[]>")]
    #[allow(clippy::too_many_arguments)] // each a value JavaScript passes; napi takes them one by one
    pub fn ask_with_answer(
        &self,
        env: &Env,
        toolkit: &NativeToolkit,
        id: String,
        pending: String,
        answer: String,
        options: Option<String>,
        fns: Option<Vec<JsonFn>>,
        cancel: Option<&CancelToken>,
        seam: Option<bool>,
        trace: Option<u32>,
    ) -> Result<crate::dispatch::JsPromise> {
        let (pending, answer) = (parse_json(&pending, "askWithAnswer")?, parse_json(&answer, "askWithAnswer")?);
        let mut ro = run_options(None, cancel)?;
        ro.output = call_options("askWithAnswer", options, fns)?.output;
        self.run_promise(env, toolkit, seam, trace, |client, tk| async move {
            client.ask_with_answer(&tk, &id, &pending, answer, ro).await
        })
    }

    /// `deleteConversation`: the conversation goes from the store, with what it parked on.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn delete_conversation(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let client = self.inner.clone();
        crate::dispatch::local_promise(env, async move { client.delete_conversation(&id).await.map_err(core_err) })
    }

    /// One provider call, OpenAI shapes in and out (§11). `request` is the JSON of the
    /// caller's request minus `toolkit` and `signal`.
    #[napi(ts_return_type = "Promise<string | string[]>")]
    pub fn translate(
        &self,
        env: &Env,
        request: String,
        toolkit: Option<&NativeToolkit>,
        cancel: Option<&CancelToken>,
        seam: Option<bool>,
    ) -> Result<crate::dispatch::JsPromise> {
        let mut req = TranslateRequest::from_json(&request).map_err(bad_option)?;
        req.abort = cancel.map(|c| c.abort.clone());
        let client = self.inner.clone();
        let tk = toolkit.map(|t| t.inner.clone());
        let work = self.with_seam(seam, async move { client.translate(req, tk.as_deref()).await });
        crate::dispatch::local_promise(env, async move {
            let res = work.await.map_err(core_err)?;
            Ok(Crossed::of(res.to_value()))
        })
    }
}

/// `Client.toolCallsJSON(result)`: a translate result's calls as an OpenAI `tool_calls` array.
#[napi(js_name = "toolCallsJson")]
#[cfg_attr(test, allow(dead_code))]
pub fn tool_calls_json(result: String) -> Result<String> {
    with_json(&result, "toolCallsJSON", |r| {
        let calls = r.get("toolCalls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        Ok(json::to_string(&Value::Array(one_call::tool_calls_json(calls))))
    })
}

/// What a run verb is given besides its prompt as JavaScript hands it over: the document
/// `{ output?, onText? }` and the functions its markers name; nothing when neither was given.
fn call_options(owner: &str, doc: Option<String>, fns: Option<Vec<JsonFn>>) -> Result<CallOptions> {
    let Some(doc) = doc else { return Ok(CallOptions::default()) };
    crate::options_doc::read(fns.unwrap_or_default(), Vec::new(), || CallOptions::from_json(owner, &doc))
        .map_err(core_err)
}

fn run_options(history: Option<String>, cancel: Option<&CancelToken>) -> Result<RunOptions> {
    let mut ro = match history {
        Some(h) => RunOptions::from_history_json(&h).map_err(bad_option)?,
        None => RunOptions::default(),
    };
    ro.abort = cancel.map(|c| c.abort.clone());
    ro.reports = cancel.and_then(|c| c.task.as_deref()).and_then(toolnexus_core::serve::a2a_reports::ear_of);
    Ok(ro)
}
