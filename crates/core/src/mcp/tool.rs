//! A server's tool as a uniform Tool, and the mapping of `tools/call` results (SPEC §2).

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use serde_json::{Map, Value};

use super::config::{def_name, timer_delay_ms};
use super::conn::{CallOutcome, Connection};
use crate::error::Result;
use crate::json::{js_stringify, truthy};
use crate::tool::{Tool, ToolContext, ToolDecl};
use crate::types::{sanitize, ToolResult};

const ERROR_FALLBACK: &str = "MCP tool returned an error";

/// A listed definition's schema as the reference exposes it: the keys in the order the MCP
/// SDK's schema parse leaves them (`type`, `properties`, `required` first when present, then the
/// server's others in its order), with `type` forced to `"object"` and `properties` defaulted
/// to `{}` (and, for a callable tool, `additionalProperties: false`).
pub(crate) fn map_schema(def: &Value, closed: bool) -> Value {
    let mut schema = Map::new();
    if let Some(Value::Object(given)) = def.get("inputSchema") {
        for key in ["type", "properties", "required"] {
            if let Some(v) = given.get(key) {
                schema.insert(key.into(), v.clone());
            }
        }
        for (k, v) in given {
            if !schema.contains_key(k) {
                schema.insert(k.clone(), v.clone());
            }
        }
    }
    let properties =
        schema.get("properties").filter(|p| !p.is_null()).cloned().unwrap_or_else(|| Value::Object(Map::new()));
    schema.insert("type".into(), Value::String("object".into()));
    schema.insert("properties".into(), properties);
    if closed {
        schema.insert("additionalProperties".into(), Value::Bool(false));
    }
    Value::Object(schema)
}

/// `def.description ?? ""`
pub(crate) fn def_description(def: &Value) -> String {
    match def.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => crate::json::js_string(v),
    }
}

/// The text items of a content list, in order.
fn text_items(content: Option<&Value>) -> Option<Vec<&str>> {
    let Value::Array(items) = content? else { return None };
    Some(
        items
            .iter()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect(),
    )
}

/// JavaScript's `String.prototype.trim` whitespace (WhiteSpace and LineTerminator).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Map a raw `tools/call` result: an error joins its non-blank text parts with a blank line
/// (or says the tool returned an error); structured content is the output as JSON; otherwise
/// the text parts joined by newlines. Every result carries `{ server }`.
pub(crate) fn map_call_result(server: &str, result: &Value) -> ToolResult {
    let content = result.get("content");
    let (output, is_error) = if result.get("isError").is_some_and(truthy) {
        let text = text_items(content)
            .map(|t| t.into_iter().filter(|s| !s.chars().all(is_js_space)).collect::<Vec<_>>().join("\n\n"))
            .unwrap_or_default();
        (if text.is_empty() { ERROR_FALLBACK.to_string() } else { text }, true)
    } else {
        match result.get("structuredContent").filter(|s| !s.is_null()) {
            Some(s) => (js_stringify(s), false),
            None => (text_items(content).map(|t| t.join("\n")).unwrap_or_default(), false),
        }
    };
    ToolResult { output, is_error, metadata: Some(server_meta(server)), rich: None }
}

/// Inside a traced tool call, the W3C trace context in the request's `_meta` (as MCP's SEP-414
/// places it; the HTTP transport also sends it as headers).
fn trace_meta() -> Option<RequestMetaObject> {
    let context: Map<String, Value> = crate::trace::headers()
        .into_iter()
        .filter(|(k, _)| k == "traceparent" || k == "tracestate")
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    (!context.is_empty()).then(|| RequestMetaObject(MetaObject(context)))
}

fn server_meta(server: &str) -> Value {
    let mut m = Map::with_capacity(1);
    m.insert("server".into(), Value::String(server.to_string()));
    Value::Object(m)
}

/// One tool of a connected server, named `sanitize(server)_sanitize(tool)`.
pub struct McpTool {
    decl: ToolDecl,
    server: String,
    tool: String,
    timeout: Duration,
    conn: Arc<Connection>,
}

impl McpTool {
    pub(crate) fn new(server: &str, def: &Value, conn: Arc<Connection>, timeout: Duration) -> Self {
        let tool = def_name(def);
        McpTool {
            decl: ToolDecl::new(
                format!("{}_{}", sanitize(server), sanitize(&tool)),
                def_description(def),
                map_schema(def, true),
                "mcp",
            ),
            server: server.to_string(),
            tool,
            timeout,
            conn,
        }
    }

    /// The server this tool belongs to, as configured.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's name on its server.
    pub fn original_name(&self) -> &str {
        &self.tool
    }

    /// The process id of the local server behind this tool (none for a remote one).
    pub fn server_pid(&self) -> Option<u32> {
        self.conn.pid()
    }
}

#[async_trait]
impl Tool for McpTool {
    fn decl(&self) -> &ToolDecl {
        &self.decl
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult> {
        let arguments = match args {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            _ => {
                let mut r = ToolResult::error("MCP tool arguments must be an object");
                r.metadata = Some(server_meta(&self.server));
                return Ok(r);
            }
        };
        let mut params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        crate::trace::ready().await;
        params.meta = trace_meta();
        let timeout = ctx.timeout.map_or(self.timeout, timer_delay_ms);
        let failed = |output: String| ToolResult {
            output,
            is_error: true,
            metadata: Some(server_meta(&self.server)),
            rich: None,
        };
        if let Some(answer) = &ctx.answer {
            // A call resumed with the answer to a login this server handed out finishes it first.
            if let Some(auth) = self.conn.auth() {
                if let Some(Err(e)) = auth.resume(answer).await {
                    return Ok(failed(format!("authorization failed: {e}")));
                }
            }
            // One resumed with the answer to a question the server asked goes again with it.
            match self.conn.resume_input(&self.server, answer).await {
                Ok(Some((responses, state))) => {
                    params.input_responses = Some(responses);
                    params.request_state = state;
                }
                Ok(None) => {}
                Err(e) => return Ok(failed(e)),
            }
        }
        Ok(match self.conn.call_tool(&self.server, params, timeout, ctx.cancel.as_ref()).await {
            CallOutcome::Done(result) => map_call_result(&self.server, &result),
            // A person must sign in, or answer the server: the call parks on it.
            CallOutcome::Park(request) => crate::types::pending_value(request)?,
            CallOutcome::Failed(message) => failed(message),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_keep_the_keys_in_the_order_the_sdks_parse_leaves_them() {
        let def = json!({"name": "t", "inputSchema": {"$schema": "x", "type": "object", "title": "T", "additionalProperties": true}});
        let s = map_schema(&def, true);
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"type":"object","$schema":"x","title":"T","additionalProperties":false,"properties":{}}"#
        );
        let def = json!({"name": "t", "inputSchema": {"$schema": "x", "required": ["a"], "title": "T", "properties": {"b": {}, "a": {}}, "type": "object"}});
        assert_eq!(
            serde_json::to_string(&map_schema(&def, false)).unwrap(),
            r#"{"type":"object","properties":{"b":{},"a":{}},"required":["a"],"$schema":"x","title":"T"}"#
        );
        let s = map_schema(&json!({"name": "t", "inputSchema": {"properties": {"a": {}}, "required": ["a"]}}), false);
        assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"properties":{"a":{}},"required":["a"],"type":"object"}"#);
        assert_eq!(
            map_schema(&json!({"name": "t"}), true),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
        assert_eq!(def_description(&json!({"name": "t"})), "");
    }

    #[test]
    fn results_map_as_the_reference_maps_them() {
        let r = map_call_result(
            "s",
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(
            r,
            ToolResult { output: "a\n\nb".into(), is_error: false, metadata: Some(json!({"server": "s"})), rich: None }
        );
        let r = map_call_result(
            "s",
            &json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"b": 1, "2": [1.5, 2.0]}}),
        );
        assert_eq!(r.output, r#"{"2":[1.5,2],"b":1}"#);
        let r = map_call_result("s", &json!({"content": [], "structuredContent": null}));
        assert_eq!(r.output, "");
        let r = map_call_result(
            "s",
            &json!({"isError": true, "content": [{"type": "text", "text": "one"}, {"type": "text", "text": " \u{feff}\n"}, {"type": "text", "text": "two"}]}),
        );
        assert_eq!((r.output.as_str(), r.is_error), ("one\n\ntwo", true));
        let r = map_call_result("s", &json!({"isError": true, "content": [{"type": "text", "text": "  "}]}));
        assert_eq!(r.output, ERROR_FALLBACK);
        let r = map_call_result("s", &json!({"isError": true, "structuredContent": {"a": 1}}));
        assert_eq!(r.output, ERROR_FALLBACK);
        let r = map_call_result("s", &json!({"content": "nope"}));
        assert_eq!((r.output.as_str(), r.is_error), ("", false));
    }
}
