//! The Client class: the options document in, the core loop behind `run`.

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::Value;
#[cfg(unix)]
use toolnexus_core::client::http::FetchTransport;
use toolnexus_core::client::one_call::{self, TranslateRequest};
use toolnexus_core::client::seams::HostTransport;
use toolnexus_core::client::{
    CallOptions, Client, ClientOptions, HttpRequest, HttpResponse, InMemoryStore, RunOptions, StreamResponse, Transport,
};
#[cfg(unix)]
use toolnexus_core::fetch::Fetcher;

use crate::bridge::{JsCallback, JsonFn};
use crate::cancel::CancelToken;
use crate::dispatch::Crossed;
use crate::options_doc::Shared;
use crate::toolkit::NativeToolkit;
use crate::{core_err, deep, parse_json, with_json};
use toolnexus_core::json;

#[cfg(unix)]
thread_local! {
    /// This environment's fetcher: one connection pool per origin for every client made here,
    /// as Node's global dispatcher is one per environment. The environment's cleanup hook
    /// drops it; the thread's own end never does (by then its handles are gone).
    static FETCHER: std::cell::RefCell<std::mem::ManuallyDrop<Option<Fetcher>>> =
        const { std::cell::RefCell::new(std::mem::ManuallyDrop::new(None)) };
}

#[cfg(unix)]
/// The environment cleanup hook that drops this thread's fetcher.
///
/// # Safety
/// Node calls it on the environment's own thread while that environment is torn down; it
/// touches only this thread's slot and ignores `_arg`.
unsafe extern "C" fn drop_fetcher(_arg: *mut std::ffi::c_void) {
    let old = FETCHER.try_with(|f| f.borrow_mut().take());
    drop(old);
}

thread_local! {
    /// This environment's bridge to `globalThis.fetch` (see `setGlobalFetch`), read at the time
    /// of each request. Dropped by the environment's cleanup hook, never by the thread's end.
    static GLOBAL_FETCH: std::cell::RefCell<std::mem::ManuallyDrop<Option<Arc<dyn Transport>>>> =
        const { std::cell::RefCell::new(std::mem::ManuallyDrop::new(None)) };
}

/// The environment cleanup hook that drops this thread's bridge to `globalThis.fetch`.
///
/// # Safety
/// Node calls it on the environment's own thread while that environment is torn down; it
/// touches only this thread's slot and ignores `_arg`.
#[cfg_attr(test, allow(dead_code))]
unsafe extern "C" fn drop_global_fetch(_arg: *mut std::ffi::c_void) {
    let old = GLOBAL_FETCH.try_with(|f| f.borrow_mut().take());
    drop(old);
}

/// `setGlobalFetch(fn)`: how this environment reaches `globalThis.fetch` (a `fetch`-option
/// bridge over it). A run whose caller found the user's own seam in place (a replaced
/// `globalThis.fetch`, an undici global dispatcher, Node's env proxy) sends its LLM requests
/// through it instead of the built-in HTTP.
#[napi(js_name = "setGlobalFetch")]
#[cfg_attr(test, allow(dead_code))]
pub fn set_global_fetch(env: &Env, f: JsonFn) -> Result<()> {
    let transport = Arc::new(HostTransport::new(Arc::new(JsCallback(f)))) as Arc<dyn Transport>;
    let first = GLOBAL_FETCH.try_with(|g| g.borrow().is_none()).unwrap_or(false);
    if first {
        // SAFETY: on the environment's thread, with a hook that only touches this thread's slot.
        let status =
            unsafe { napi::sys::napi_add_env_cleanup_hook(env.raw(), Some(drop_global_fetch), std::ptr::null_mut()) };
        if status != napi::sys::Status::napi_ok {
            return Err(crate::dispatch::error::plain("toolnexus: could not register the environment's cleanup"));
        }
    }
    let _ = GLOBAL_FETCH.try_with(|g| **g.borrow_mut() = Some(transport));
    Ok(())
}

/// The transport a run goes through when its caller asks for the user's seam, if set.
fn global_fetch() -> Option<Arc<dyn Transport>> {
    GLOBAL_FETCH.try_with(|g| (**g.borrow()).clone()).ok().flatten()
}

/// The built-in HTTP of something that runs many turns over time (the agent runtime): its
/// owner says, whenever JavaScript calls it, whether the user's seam is in place; each
/// request then goes through `globalThis.fetch` or the built-in HTTP accordingly.
pub(crate) struct SeamTransport {
    own: Arc<dyn Transport>,
    pub(crate) seam: Arc<std::sync::atomic::AtomicBool>,
}

impl SeamTransport {
    pub(crate) fn new(own: Arc<dyn Transport>) -> Self {
        SeamTransport { own, seam: Arc::default() }
    }

    fn pick(&self) -> Arc<dyn Transport> {
        if self.seam.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(t) = global_fetch() {
                return t;
            }
        }
        self.own.clone()
    }
}

#[async_trait::async_trait]
impl Transport for SeamTransport {
    async fn post(&self, req: HttpRequest) -> std::result::Result<HttpResponse, toolnexus_core::Error> {
        self.pick().post(req).await
    }

    async fn post_stream(&self, req: HttpRequest) -> std::result::Result<StreamResponse, toolnexus_core::Error> {
        self.pick().post_stream(req).await
    }
}

#[cfg(unix)]
/// The environment's fetcher over sockets its event loop watches; `None` where libuv cannot
/// be reached (the client then uses the core's own, on its runtime).
fn env_fetcher(env: &Env) -> Option<Fetcher> {
    if let Some(f) = FETCHER.try_with(|f| (**f.borrow()).clone()).ok().flatten() {
        return Some(f);
    }
    let connect = crate::uvio::UvConnect::new(env)?;
    // Node's fetch decodes zstd from Node 24 on.
    let zstd = env.get_node_version().map(|v| v.major >= 24).unwrap_or(false);
    let options = toolnexus_core::fetch::Options { zstd, ..Default::default() };
    let fetcher = Fetcher::with_options(connect, options);
    // SAFETY: on the environment's thread, with a hook that only touches this thread's slot.
    let status = unsafe { napi::sys::napi_add_env_cleanup_hook(env.raw(), Some(drop_fetcher), std::ptr::null_mut()) };
    if status == napi::sys::Status::napi_ok {
        let _ = FETCHER.try_with(|f| **f.borrow_mut() = Some(fetcher.clone()));
    }
    Some(fetcher)
}

/// The default conversation store, shared by reference between JS and the core.
#[napi]
pub struct NativeMemoryStore {
    pub(crate) inner: Arc<InMemoryStore>,
}

#[napi]
impl NativeMemoryStore {
    /// A store by its options' JSON (`maxEntries`: the core's default when absent).
    #[napi(constructor)]
    pub fn new(options: Option<String>) -> Result<Self> {
        let cap =
            toolnexus_core::options::max_entries(options.as_deref(), "InMemoryConversationStore").map_err(core_err)?;
        let store = cap.map_or_else(InMemoryStore::default, InMemoryStore::with_cap);
        Ok(NativeMemoryStore { inner: Arc::new(store) })
    }

    /// The thread as JSON (in pieces when it holds long strings), or null.
    #[napi(ts_return_type = "string | string[] | null")]
    pub fn get(&self, id: String) -> Option<Crossed> {
        deep(|| self.inner.get_now(&id).map(|m| Crossed::of(Value::Array(m))))
    }

    #[napi]
    pub fn save(&self, id: String, messages: String) -> Result<()> {
        with_json(&messages, "save", |v| self.inner.save_value(&id, v).map_err(core_err))
    }

    /// Let the conversation go: whether there was one.
    #[napi]
    pub fn delete(&self, id: String) -> bool {
        self.inner.delete_now(&id)
    }

    /// This store as an options document names it.
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn shared(&self) -> External<Shared> {
        External::new(Shared(self.inner.clone()))
    }
}

/// Conversations on the durable engine a store URL names (the JS store classes' side).
#[napi]
pub struct NativeUrlConversations {
    inner: Arc<toolnexus_core::client::store::DurableConversationStore>,
}

#[napi]
impl NativeUrlConversations {
    #[napi(constructor)]
    pub fn new(url: String) -> Self {
        NativeUrlConversations { inner: Arc::new(toolnexus_core::client::store::DurableConversationStore::new(&url)) }
    }

    /// The conversation's JSON, or null.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn get(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let found = toolnexus_core::client::ConversationStore::get(&*inner, &id).await.map_err(core_err)?;
            Ok(found.map(|m| toolnexus_core::json::to_string(&Value::Array(m))))
        })
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn save(&self, env: &Env, id: String, messages: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        let value = parse_json(&messages, "save")?;
        crate::dispatch::promise(env, async move {
            let Value::Array(items) = value else {
                return Err(napi::Error::new(napi::Status::InvalidArg, "save: messages must be an array"));
            };
            toolnexus_core::client::ConversationStore::save(&*inner, &id, items).await.map_err(core_err)
        })
    }

    /// Delete the conversation and what its runs parked on: whether there was one.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn delete(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            toolnexus_core::client::ConversationStore::delete(&*inner, &id).await.map_err(core_err)
        })
    }
}

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

/// The built-in HTTP transport: on Unix, over sockets the environment's event loop watches
/// (`uvio`), when libuv can be reached. `None` (elsewhere, or without libuv) leaves the core's
/// own client, on its runtime.
#[cfg(unix)]
pub(crate) fn event_loop_transport(env: &Env) -> Option<Arc<dyn Transport>> {
    env_fetcher(env).map(|f| Arc::new(FetchTransport::new(f)) as Arc<dyn Transport>)
}

/// No event-loop sockets off Unix: the core's own client, on its runtime.
#[cfg(not(unix))]
pub(crate) fn event_loop_transport(_env: &Env) -> Option<Arc<dyn Transport>> {
    None
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
