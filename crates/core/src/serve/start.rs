//! Starting a server from a host's options: `startA2AServer`'s and `toolkit.serve`'s rules
//! (which profiles are on, where Tasks are stored, what the card advertises, which tools the
//! MCP profile exposes).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::host_thread::Hold;
use crate::json::truthy;
use crate::serve::a2a::{A2AService, CardSkill};
use crate::serve::http::{OwnerGone, ServeConfig, Server};
use crate::serve::mcp::{exposed_tools, McpServeConfig};
use crate::serve::mcp_http::McpProfile;
use crate::serve::options::{A2AConfig, ServeSecurity};
use crate::serve::store::{resolve_store, CallbackTaskStore, SharedTaskStore};
use crate::tool::SharedTool;
use crate::toolkit::Toolkit;

/// Everything a server is started with.
pub struct StartOptions {
    pub addr: String,
    /// The A2A profile's value (`a2a`): on when truthy.
    pub a2a: Option<Value>,
    /// A host's own store, used instead of what `a2a.store` selects.
    pub store: Option<SharedTaskStore>,
    /// The skills the card advertises.
    pub skills: Vec<CardSkill>,
    /// Runs a Task: `{ text, contextId? }` in, a `RunResult` out.
    pub run_task: SharedCallback,
    pub on_task: Option<SharedCallback>,
    /// Takes a Task parked for input up again (`{ contextId, pending, answer, call }` in, a
    /// `RunResult` out); without it a message continuing a parked Task is refused.
    pub resume_task: Option<SharedCallback>,
    /// The MCP profile's value (`mcp`): on when truthy.
    pub mcp: Option<Value>,
    /// That profile as read from an options document, its functions included; `None`: read
    /// from `mcp` when the server starts.
    pub mcp_profile: Option<McpServeConfig>,
    /// The tools the MCP profile may expose.
    pub mcp_tools: Vec<SharedTool>,
    /// A served toolkit's skills, for the MCP profile to offer as prompts and resources.
    pub mcp_skills: Vec<crate::skills::SkillOffer>,
    pub on_call: Option<SharedCallback>,
    /// `auth`, `allowedOrigins`, `maxBodyBytes`.
    pub security: ServeSecurity,
    /// Tools a remote caller can reach besides the MCP ones (a served toolkit's, through the
    /// client loop), for the warning on open addresses.
    pub reachable_tools: Vec<String>,
    pub hold: Option<Hold>,
    /// Ends the server at once when its owner goes away (see [`OwnerGone`]).
    pub owner: Option<OwnerGone>,
    /// How long a request's body may take once its headers are in; `None`: the default
    /// (`http::body_timeout`).
    pub body_timeout: Option<std::time::Duration>,
    /// Where the server's warnings go (its start, its requests, the Tasks and tool calls it
    /// runs); `None`: a served toolkit's logger (see [`StartOptions::serving`]), else wherever
    /// the caller's go.
    pub logger: Option<crate::warn::Sink>,
    /// The span recorder of the `telemetry` option, if on (see `trace`).
    pub telemetry: Option<crate::callback::SharedCallback>,
}

impl StartOptions {
    /// A server's options from the JSON of its plain ones (`{ addr, a2a?, mcp?, skills?, auth?,
    /// allowedOrigins?, maxBodyBytes? }`), read as the reference reads them: `addr` as text
    /// (`"undefined"` when missing), the profiles kept as given, each skill read leniently.
    /// The host attaches what JSON cannot carry: `runTask`, `onTask`, `onCall`, a store, tools.
    pub fn from_json(text: &str, run_task: SharedCallback) -> Result<StartOptions> {
        let opts = crate::json::parse_str::<Value>(text)
            .map_err(|e| Error::Invalid(format!("serve options: invalid JSON ({e})")))?;
        let security = ServeSecurity::from_value(&opts)?;
        let field = |k: &str| opts.get(k).cloned();
        Ok(StartOptions {
            addr: opts.get("addr").map(crate::json::js_string).unwrap_or_else(|| "undefined".into()),
            a2a: field("a2a"),
            store: None,
            skills: opts
                .get("skills")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(CardSkill::of_value).collect())
                .unwrap_or_default(),
            run_task,
            on_task: None,
            resume_task: None,
            mcp: field("mcp"),
            mcp_profile: None,
            mcp_tools: Vec::new(),
            mcp_skills: Vec::new(),
            on_call: None,
            security,
            reachable_tools: Vec::new(),
            hold: None,
            owner: None,
            body_timeout: None,
            logger: None,
            telemetry: None,
        })
    }

    /// A server's options as one document (`fn_markers` markers): the plain ones as
    /// [`StartOptions::from_json`] reads them, and `runTask` (always called), `resumeTask`,
    /// `onTask`, `onCall`, `logger` (told each warning's text), `telemetry` (the span recorder)
    /// and `store`: one of the host's own native stores, or `{ get, save }` callbacks. The
    /// MCP profile's tools, a hold and an owner are the host's to attach.
    pub fn from_document(text: &str) -> Result<StartOptions> {
        const OWNER: &str = "serve";
        let mut opts = crate::json::parse_str::<Value>(text)
            .map_err(|e| Error::Invalid(format!("serve options: invalid JSON ({e})")))?;
        let mut take = |k: &str| opts.as_object_mut().and_then(|m| m.remove(k));
        // An absent member is unset; a present one is read as `HostFn` reads it.
        let fun = |v: Option<Value>| v.map_or(HostFn::Unset, |v| HostFn::from_value(&v));
        let run_task = fun(take("runTask")).required(OWNER, "runTask");
        let resume_task = fun(take("resumeTask")).named(OWNER, "resumeTask");
        let on_task = fun(take("onTask")).named(OWNER, "onTask");
        let on_call = fun(take("onCall")).named(OWNER, "onCall");
        let logger = fun(take("logger")).named(OWNER, "logger").map(crate::warn::callback_sink);
        let telemetry = fun(take("telemetry")).named(OWNER, "telemetry");
        let store = match take("store") {
            Some(ours) if crate::fn_markers::is_marker(&ours) => {
                fun(Some(ours)).object::<SharedTaskStore>().map(|s| (*s).clone())
            }
            Some(Value::Object(mut m)) => {
                let mut part = |k: &str| fun(m.remove(k)).required(OWNER, k);
                let (get, save) = (part("get"), part("save"));
                Some(Arc::new(CallbackTaskStore { get, save }) as SharedTaskStore)
            }
            _ => None,
        };
        // The MCP profile's functions (its prompts' and resources') are read now, while the
        // markers stand for them.
        let mcp_profile = match opts.get("mcp") {
            Some(v) if truthy(v) => mcp_config(Some(v))?,
            _ => None,
        };
        // What is left is data: a function inside it is left out, as JSON.stringify leaves it.
        crate::fn_markers::strip(&mut opts);
        let mut o = StartOptions::from_json(&opts.to_string(), run_task)?;
        o.resume_task = resume_task;
        o.on_task = on_task;
        o.on_call = on_call;
        o.logger = logger;
        o.telemetry = telemetry;
        o.store = store;
        o.mcp_profile = mcp_profile;
        Ok(o)
    }

    /// These options serving `tk` (`toolkit.serve`): its config blocks where the options have
    /// none, its skills on the card, its tools for the MCP profile, and its logger where the
    /// options have none.
    pub fn serving(mut self, tk: &Toolkit) -> StartOptions {
        self.a2a = or_block(self.a2a.take(), tk.a2a_block());
        self.mcp = or_block(self.mcp.take(), tk.mcp_server_block());
        self.skills = toolkit_skills(tk);
        self.mcp_skills = match &self.mcp {
            Some(v) if truthy(v) => {
                tk.skill_source().map(|s| crate::skills::offers(s.skills(), MCP_SKILL_FILES)).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        self.mcp_tools = tk.tools();
        self.reachable_tools = self.mcp_tools.iter().map(|t| t.name().to_string()).collect();
        if self.logger.is_none() {
            self.logger = tk.logger().cloned();
        }
        self
    }
}

/// The most files of one skill a served toolkit offers as MCP resources.
pub const MCP_SKILL_FILES: usize = 100;

/// The MCP profile a value turns on: any truthy value (a non-object one with defaults).
pub fn mcp_config(v: Option<&Value>) -> Result<Option<McpServeConfig>> {
    match v {
        Some(v) if truthy(v) => {
            if !v.is_object() {
                return Ok(Some(McpServeConfig::default()));
            }
            McpServeConfig::deserialize(v).map(Some).map_err(|e| Error::Invalid(format!("serve: `mcp`: {e}")))
        }
        _ => Ok(None),
    }
}

/// `given ?? fallback`: an absent or `null` option takes the toolkit's config block.
pub fn or_block(given: Option<Value>, block: Option<&Value>) -> Option<Value> {
    match given {
        Some(v) if !v.is_null() => Some(v),
        _ => block.cloned(),
    }
}

/// The skills a toolkit's card advertises: its skill source's, in order.
pub fn toolkit_skills(tk: &Toolkit) -> Vec<CardSkill> {
    tk.skill_source().map(|s| s.skills().iter().map(CardSkill::of_info).collect()).unwrap_or_default()
}

/// Start the server (the store is resolved before anything is bound, as the reference does).
pub async fn start_server(o: StartOptions) -> Result<Server> {
    let logger = o.logger.clone();
    crate::warn::scope_with(logger.as_ref(), start(o)).await
}

async fn start(o: StartOptions) -> Result<Server> {
    let a2a_cfg = match &o.a2a {
        Some(v) => A2AConfig::from_value(v)?,
        None => None,
    };
    let a2a = match a2a_cfg {
        Some(config) => {
            let store = match o.store {
                Some(s) => s,
                None => resolve_store(config.store.as_ref())?,
            };
            Some(Arc::new(A2AService::new(config, o.skills, store, o.run_task, o.on_task).resuming(o.resume_task)))
        }
        None => None,
    };
    let mut reachable = if a2a.is_some() { o.reachable_tools } else { Vec::new() };
    let profile = match o.mcp_profile {
        Some(p) => Some(p),
        None => mcp_config(o.mcp.as_ref())?,
    };
    let mcp = match profile {
        Some(mut cfg) => {
            cfg.skill_offers = o.mcp_skills;
            let tools = exposed_tools(&o.mcp_tools, &cfg);
            reachable.extend(tools.iter().map(|t| t.name().to_string()));
            Some(McpProfile::new(tools, cfg, o.on_call))
        }
        None => None,
    };
    Server::start(ServeConfig {
        addr: o.addr,
        a2a,
        mcp,
        security: o.security,
        reachable_tools: reachable,
        hold: o.hold,
        owner: o.owner,
        body_timeout: o.body_timeout,
        telemetry: o.telemetry,
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> StartOptions {
        let run = crate::callback::callback(|_| async { Ok(Value::Null) });
        StartOptions::from_json(&v.to_string(), run).unwrap()
    }

    #[test]
    fn the_plain_options_are_read_as_the_reference_reads_them() {
        let o = read(json!({"addr": 8080, "a2a": {"name": "x"}, "skills": [{"id": "s"}, 3], "maxBodyBytes": 10}));
        assert_eq!(o.addr, "8080");
        assert_eq!(o.a2a, Some(json!({"name": "x"})));
        assert_eq!((o.skills.len(), o.mcp.is_none()), (2, true));
        assert_eq!(read(json!({})).addr, "undefined");
        let e = StartOptions::from_json("{", crate::callback::callback(|_| async { Ok(Value::Null) })).err().unwrap();
        assert!(e.to_string().starts_with("serve options: invalid JSON"));
    }

    /// A host table whose function at place n answers `[n, its argument]`, and whose object 0
    /// is a store in memory.
    struct Host(SharedTaskStore);

    impl crate::fn_markers::Table for Host {
        fn callback(&self, n: usize) -> Option<SharedCallback> {
            Some(crate::callback::callback(move |v| async move { Ok(json!([n, v])) }))
        }
        fn object(&self, n: usize) -> Option<crate::fn_markers::HostObject> {
            (n == 0).then(|| Arc::new(self.0.clone()) as crate::fn_markers::HostObject)
        }
    }

    fn document(v: Value) -> Result<StartOptions> {
        let memory: SharedTaskStore = Arc::new(crate::serve::store::InMemoryTaskStore::new());
        crate::fn_markers::read_with(std::rc::Rc::new(Host(memory)), || StartOptions::from_document(&v.to_string()))
    }

    #[tokio::test]
    async fn the_document_carries_the_callbacks_and_the_store() {
        let f = crate::fn_markers::FN;
        let o = document(json!({"addr": "h:1", "a2a": {"name": "x", "hook": {f: 9}}, "runTask": {f: 0},
            "onTask": {f: 1}, "store": {"get": {f: 2}, "save": {f: 3}}}))
        .unwrap();
        assert_eq!(o.a2a, Some(json!({"name": "x"})), "a function inside data is left out");
        assert_eq!(o.run_task.call(json!("t")).await.unwrap(), json!([0, "t"]));
        assert_eq!(o.on_task.expect("onTask").call(json!(1)).await.unwrap(), json!([1, 1]));
        assert!(o.resume_task.is_none() && o.on_call.is_none() && o.logger.is_none());
        let store = o.store.expect("the host's store");
        assert_eq!(store.get("id").await.unwrap(), Some(json!([2, "id"])));
        // One of the host's own stores is the core's store itself.
        let o = document(json!({"runTask": {f: 0}, "store": {crate::fn_markers::OBJ: 0}})).unwrap();
        let store = o.store.expect("ours");
        store.save(json!({"id": "t1", "status": {"state": "completed"}})).await.unwrap();
        assert_eq!(store.get("t1").await.unwrap().unwrap()["id"], "t1");
        // Without a runTask, a Task fails when it runs, naming it.
        let o = document(json!({"addr": "h:1"})).unwrap();
        let e = o.run_task.call(json!({})).await.unwrap_err();
        assert_eq!(e.to_string(), "serve: `runTask` is not a function (got undefined)");
        assert!(o.store.is_none());
    }
}
