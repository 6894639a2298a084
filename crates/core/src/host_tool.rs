//! A host's own tool (a JavaScript `Tool` object): its declaration, and its `execute` as a host
//! function. The host is called with `{ args, ctx? }`; when the caller can give up (a served
//! MCP request whose client left), also with `call`, a number, and later told `{ abort: call }`.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::callback::SharedCallback;
use crate::error::{Error, Result};
use crate::hostfn::HostFn;
use crate::tool::{SharedTool, Tool, ToolContext, ToolDecl};
use crate::types::ToolResult;

/// Names the signal a host tool's call gets when its caller can give up.
static NEXT_SIGNAL: AtomicU64 = AtomicU64::new(1);

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
                crate::hostfn::strip(&mut input_schema);
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
        let Some(cancel) = ctx.cancel else {
            return Ok(ToolResult::from_value(self.call.call(Value::Object(m)).await?));
        };
        // The caller can give up: the tool gets a signal of its own (`ctx.signal`), aborted when
        // that happens; its answer is still awaited.
        let id = NEXT_SIGNAL.fetch_add(1, Ordering::Relaxed);
        m.insert("call".into(), id.into());
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
