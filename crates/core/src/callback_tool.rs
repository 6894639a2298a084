//! A host's own tool (a JavaScript `Tool` object): its declaration, and its `execute` as a host
//! function. The host is called with `{ args, ctx? }`; when the caller can give up (a served
//! MCP request whose client left), also with `call`, a number, and later told `{ abort: call }`.
//! A call whose caller takes progress and log events gets a `call` number too: the host reports
//! the tool's events under it ([`report`]) while the call runs.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::fn_markers::HostFn;
use crate::tool::{EventSink, SharedTool, Tool, ToolContext, ToolDecl, ToolEvent};
use crate::types::ToolResult;

/// Names the signal a host tool's call gets when its caller can give up.
static NEXT_SIGNAL: AtomicU64 = AtomicU64::new(1);

/// The calls in flight whose caller takes their events, by call number.
static SINKS: LazyLock<Mutex<HashMap<u64, EventSink>>> = LazyLock::new(Default::default);

/// Removes a call's sink when the call ends, however it ends.
struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        SINKS.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.0);
    }
}

/// An event the host's tool reported during call `call` (its JSON: see [`ToolEvent::from_json`]).
/// An event of a call that has ended, or whose caller takes none, goes nowhere; one that is
/// malformed is a `TypeError` for the tool that sent it.
pub fn report(call: u64, event: &str) -> Result<()> {
    let event = ToolEvent::from_json(event)?;
    let sink = SINKS.lock().unwrap_or_else(PoisonError::into_inner).get(&call).cloned();
    if let Some(sink) = sink {
        sink.event(event);
    }
    Ok(())
}

/// `ctx.sample`'s argument as `sampling/createMessage` params: a message may be a text (the
/// user's), a message's content a text; `maxTokens` defaults to 1000.
pub fn sampling_params(params: Value) -> Result<Value> {
    let Value::Object(mut p) = params else {
        return Err(Error::Type("ctx.sample takes { messages, maxTokens?, systemPrompt?, ... }".into()));
    };
    let Some(Value::Array(messages)) = p.remove("messages") else {
        return Err(Error::Type("ctx.sample: `messages` must be a list".into()));
    };
    let text = |t: String| json!({ "type": "text", "text": t });
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|m| match m {
            Value::String(t) => json!({ "role": "user", "content": text(t) }),
            Value::Object(mut o) => {
                if let Some(Value::String(t)) = o.remove("content") {
                    o.insert("content".into(), text(t));
                }
                o.entry("role").or_insert_with(|| json!("user"));
                Value::Object(o)
            }
            other => other,
        })
        .collect();
    p.insert("messages".into(), Value::Array(messages));
    p.entry("maxTokens").or_insert_with(|| json!(1000));
    Ok(Value::Object(p))
}

/// A request the host's tool makes of its caller during call `call` (`ctx.sample`): the
/// caller's answer, or an error saying why there is none.
pub async fn ask(call: u64, method: &str, params: Value) -> Result<Value> {
    let sink = SINKS.lock().unwrap_or_else(PoisonError::into_inner).get(&call).cloned();
    let params = if method == "sampling/createMessage" { sampling_params(params)? } else { params };
    match sink {
        Some(caller) if method == "sampling/createMessage" && !caller.offers("sampling") => {
            Err(Error::Invalid(format!("{method}: the caller does not offer sampling")))
        }
        Some(caller) => caller.request(method, params).await,
        None => Err(Error::Invalid(format!(
            "{method}: the caller of this tool cannot be asked (the call is not served over MCP, or it has ended)"
        ))),
    }
}

pub struct HostTool {
    pub decl: ToolDecl,
    /// The tool's place in the list the host handed over.
    pub slot: u32,
    pub call: SharedCallback,
}

impl HostTool {
    /// The host's tools in a list option (`owner` names it in errors): each
    /// `{ name, description, inputSchema, source, execute }`, `execute` a host function,
    /// numbered from `first_slot`. Anything else in the list is refused with a `TypeError`.
    pub fn list_from_value(list: &[Value], first_slot: u32, owner: &str) -> Result<Vec<SharedTool>> {
        list.iter()
            .enumerate()
            .map(|(i, t)| {
                let slot = first_slot + i as u32;
                let not_a_tool = || {
                    Error::Type(format!(
                        "{owner}[{i}] is not a Tool: it needs a string `name` and an `execute` function"
                    ))
                };
                let (Some(name), Some(HostFn::Fn(call))) =
                    (t.get("name").and_then(Value::as_str), t.get("execute").map(HostFn::from_value))
                else {
                    return Err(not_a_tool());
                };
                let text = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_owned);
                let mut input_schema = match t.get("inputSchema") {
                    Some(s @ Value::Object(_)) => s.clone(),
                    _ => crate::fn_tool::empty_schema(),
                };
                crate::fn_markers::strip(&mut input_schema);
                Ok(Arc::new(HostTool {
                    decl: ToolDecl::new(
                        name.to_owned(),
                        text("description").unwrap_or_default(),
                        input_schema,
                        text("source").unwrap_or_else(|| "custom".into()),
                    ),
                    slot,
                    call,
                }) as SharedTool)
            })
            .collect()
    }
}

#[async_trait]
impl Tool for HostTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }
    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let mut m = Map::with_capacity(2);
        m.insert("args".into(), args);
        if let Some(answer) = ctx.answer {
            let mut c = Map::with_capacity(2);
            c.insert("answer".into(), answer);
            if let Some(t) = ctx.timeout {
                c.insert("timeout".into(), t.into());
            }
            m.insert("ctx".into(), Value::Object(c));
        }
        if ctx.cancel.is_none() && ctx.events.is_none() {
            return Ok(ToolResult::from_value(self.call.call(Value::Object(m)).await?));
        }
        // The caller can give up: the tool gets a signal of its own (`ctx.signal`), aborted when
        // that happens; its answer is still awaited. A caller that takes events gets them under
        // the same number.
        let id = NEXT_SIGNAL.fetch_add(1, Ordering::Relaxed);
        m.insert("call".into(), id.into());
        let _registered = ctx.events.map(|sink| {
            SINKS.lock().unwrap_or_else(PoisonError::into_inner).insert(id, sink);
            Registered(id)
        });
        let cancel = ctx.cancel.unwrap_or_default();
        let out = self.call.call(Value::Object(m));
        tokio::pin!(out);
        let out = tokio::select! {
            biased;
            out = &mut out => out,
            _ = cancel.cancelled() => {
                self.call.notify(json!({ "abort": id }));
                out.await
            }
        }?;
        Ok(ToolResult::from_value(out))
    }
    fn light(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
