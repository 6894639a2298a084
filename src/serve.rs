//! `serve`: `startA2AServer`, `toolkit.serve`, `buildAgentCard`, the Task stores. The core
//! decides everything; this converts the options and bridges the callbacks.

// napi's exports are its only users; a test build registers none.
#![cfg_attr(test, allow(dead_code))]

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolnexus_core::json;
use toolnexus_core::serve::a2a::{build_agent_card, CardSkill};
use toolnexus_core::serve::http::{OwnerGone, Server};
use toolnexus_core::serve::options::A2AConfig;
use toolnexus_core::serve::start::{start_server, StartOptions};
use toolnexus_core::serve::store::{store_choice, FileTaskStore, InMemoryTaskStore, SharedTaskStore, StoreChoice};

use crate::bridge::JsonFn;
use crate::toolkit::{js_tools, JsToolSpec, NativeToolkit};
use crate::{core_err, parse_json, with_json};

/// The store behind `InMemoryTaskStore` and `FileTaskStore`: used natively when one of them is
/// handed to `serve`.
#[napi]
pub struct NativeTaskStore {
    inner: SharedTaskStore,
}

#[napi]
impl NativeTaskStore {
    /// In memory, by its options' JSON (`maxEntries`: the core's default when absent).
    #[napi(constructor)]
    pub fn new(options: Option<String>) -> Result<Self> {
        let cap = toolnexus_core::options::max_entries(options.as_deref(), "InMemoryTaskStore").map_err(core_err)?;
        let store = cap.map_or_else(InMemoryTaskStore::new, InMemoryTaskStore::with_cap);
        Ok(NativeTaskStore { inner: Arc::new(store) })
    }

    /// One file per Task under `dir` (created now).
    #[napi]
    pub fn file(dir: String) -> Result<NativeTaskStore> {
        let store = FileTaskStore::new(dir).map_err(core_err)?;
        Ok(NativeTaskStore { inner: Arc::new(store) })
    }

    /// On the durable engine `url` names (reached on first use).
    #[napi]
    pub fn url(url: String) -> NativeTaskStore {
        NativeTaskStore { inner: Arc::new(toolnexus_core::serve::store::DurableTaskStore::new(&url)) }
    }

    /// This store as an options document names it (`serve`'s `store`): the core's store itself.
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn shared(&self) -> External<crate::options_doc::Shared> {
        External::new(crate::options_doc::Shared(Arc::new(self.inner.clone())))
    }

    /// The Task's JSON, or null.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn get(&self, env: &Env, id: String) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            let task = inner.get(&id).await.map_err(core_err)?;
            Ok(task.map(|t| json::to_string(&t)))
        })
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn save(&self, env: &Env, task: String) -> Result<crate::dispatch::JsPromise> {
        let task = parse_json(&task, "task")?;
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move { inner.save(task).await.map_err(core_err) })
    }
}

/// What `resolveStore` makes of a selector: `"memory"`, or the directory of a file store.
/// Throws the reference's error for any other text.
#[napi(js_name = "storeChoice")]
pub fn store_choice_js(selector: Option<String>) -> Result<Option<StoreSelector>> {
    match store_choice(selector.as_deref()).map_err(core_err)? {
        StoreChoice::Memory => Ok(None),
        StoreChoice::File(dir) => Ok(Some(StoreSelector { file: Some(dir), url: None })),
        StoreChoice::Url(url) => Ok(Some(StoreSelector { file: None, url: Some(url) })),
    }
}

/// What a store selector names besides memory: a directory or an engine's URL.
#[napi(object)]
pub struct StoreSelector {
    pub file: Option<String>,
    pub url: Option<String>,
}

/// `buildAgentCard(cfg, skills, url)`: the two values as JSON, the card as JSON.
#[napi(js_name = "buildAgentCard")]
pub fn build_agent_card_js(cfg: String, skills: String, url: String) -> Result<String> {
    let cfg = parse_json(&cfg, "cfg")?;
    let cfg = A2AConfig::from_value(&cfg).map_err(core_err)?.unwrap_or_default();
    with_json(&skills, "skills", |skills| {
        let skills: Vec<CardSkill> =
            skills.as_array().map(|a| a.iter().map(CardSkill::of_value).collect()).unwrap_or_default();
        Ok(json::to_string(&build_agent_card(&cfg, &skills, &url)))
    })
}

/// A running server.
#[napi]
pub struct NativeServer {
    inner: Arc<Server>,
}

#[napi]
impl NativeServer {
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.inner.url().to_string()
    }

    /// Tell the MCP clients subscribed to `uri` that it changed; how many were told.
    #[napi(js_name = "resourceUpdated")]
    pub fn resource_updated(&self, uri: String) -> u32 {
        self.inner.resource_updated(&uri) as u32
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn stop(&self, env: &Env) -> Result<crate::dispatch::JsPromise> {
        let inner = self.inner.clone();
        crate::dispatch::promise(env, async move {
            inner.stop().await;
            Ok(())
        })
    }
}

thread_local! {
    /// The servers this thread's environment started and that may still run: each ends with
    /// the environment (a worker terminated or ending, `process.exit`), as a Node server does.
    static OWNED: std::cell::RefCell<Vec<OwnerGone>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The environment whose cleanup hook is in place on this thread.
    static HOOKED: std::cell::Cell<napi::sys::napi_env> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// The environment cleanup hook: every server this environment started ends now.
///
/// # Safety
/// Node calls it on the environment's own thread while that environment is torn down; it
/// touches only this thread's slots (nothing of napi) and ignores `_arg`.
unsafe extern "C" fn end_owned(_arg: *mut std::ffi::c_void) {
    let owned = OWNED.try_with(|o| std::mem::take(&mut *o.borrow_mut())).unwrap_or_default();
    for server in owned {
        server.fire();
    }
    let _ = HOOKED.try_with(|h| h.set(std::ptr::null_mut()));
}

/// A server about to start here ends with this environment.
fn owned_by(env: &Env) -> Result<OwnerGone> {
    let raw = env.raw();
    if HOOKED.try_with(|h| h.get()).ok() != Some(raw) {
        // SAFETY: on the environment's thread, with a hook that only touches this thread's slots.
        let status = unsafe { napi::sys::napi_add_env_cleanup_hook(raw, Some(end_owned), std::ptr::null_mut()) };
        if status != napi::sys::Status::napi_ok {
            return Err(crate::dispatch::error::plain("toolnexus: could not register the environment's cleanup"));
        }
        let _ = HOOKED.try_with(|h| h.set(raw));
    }
    let owner = OwnerGone::new();
    let _ = OWNED.try_with(|o| {
        let mut o = o.borrow_mut();
        // Servers stopped since are no longer the environment's to end.
        o.retain(|s| !s.is_fired());
        o.push(owner.clone());
    });
    Ok(owner)
}

/// Start a server: `startA2AServer` (no toolkit) or `toolkit.serve` (its skills, its tools for
/// the MCP profile, its `a2a` / `mcpServer` config blocks as fallbacks). `options` is the whole
/// options document (see `options_doc`); `mcpTools` are `startA2AServer`'s tools for the MCP profile.
#[napi(js_name = "startServer", ts_return_type = "Promise<NativeServer>")]
pub fn start_server_js(
    env: &Env,
    options: String,
    fns: Vec<JsonFn>,
    objects: Vec<ExternalRef<crate::options_doc::Shared>>,
    mcp_tools: Option<Vec<JsToolSpec>>,
    toolkit: Option<&NativeToolkit>,
) -> Result<crate::dispatch::JsPromise> {
    let mut o = crate::options_doc::read(fns, objects, || StartOptions::from_document(&options)).map_err(core_err)?;
    if let Some(specs) = mcp_tools {
        o.mcp_tools = js_tools(specs, 0)?;
    }
    // The environment's dispatcher exists before the hold on the process is taken.
    crate::dispatch::Home::of(env)?;
    o.hold = crate::dispatch::KeepAlive::here().map(|k| Box::new(k) as toolnexus_core::host_thread::Hold);
    o.owner = Some(owned_by(env)?);
    if let Some(tk) = toolkit {
        o = o.serving(&tk.inner);
    }
    crate::dispatch::promise(env, async move {
        let server = start_server(o).await.map_err(core_err)?;
        Ok(NativeServer { inner: Arc::new(server) })
    })
}

/// The engine a store URL names (`sqlite`, `postgres`, `redis`; the scheme in any case), undefined
/// for any other text: the one place the store classes and `store` options learn it.
#[napi(js_name = "storeEngine")]
pub fn store_engine(text: String) -> Option<&'static str> {
    toolnexus_core::store::Backend::of(&text).map(|b| b.name())
}

/// What a store class says of a value that is not one of its engine's URLs.
#[napi(js_name = "storeRefusal")]
pub fn store_refusal(engine: String, owner: String, what: String) -> String {
    match toolnexus_core::store::Backend::named(&engine) {
        Some(b) => b.refusal(&owner, &what),
        None => format!("{owner}: unknown store engine {engine:?}"),
    }
}

/// A store URL with its password hidden (what the store classes show of their URL).
#[napi(js_name = "redactStoreUrl")]
pub fn redact_store_url(url: String) -> String {
    toolnexus_core::store::redacted(&url)
}
