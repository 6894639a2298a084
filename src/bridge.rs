//! Bridges from the core's seams to JavaScript functions.
//!
//! Every bridged JS function has one shape, set up by `index.js`: it takes a JSON string
//! and returns a JSON string, or a Promise of one. That keeps one threadsafe-function
//! type for every seam and one JSON hop per crossing.

use async_trait::async_trait;
use serde_json::Value;
use toolnexus_core::callback::Callback;
use toolnexus_core::{json, Error, HostError};

/// A JS `(json, replyId) => string | undefined` (see `dispatch`), callable from any thread.
/// Holding it never keeps Node alive; errors come back as `Err`, never as a crash.
pub type JsonFn = crate::dispatch::JsFn;

/// A JS error carried through the core untouched, so the caller gets the original value back.
#[derive(Debug)]
pub struct JsFailure(pub napi::Error);

impl std::fmt::Display for JsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.reason)
    }
}

impl std::error::Error for JsFailure {}

fn host(e: napi::Error) -> Error {
    Error::host(JsFailure(e))
}

/// Call a bridged function with a JSON argument and parse its JSON answer.
pub async fn call_json(f: &JsonFn, arg: impl Into<crate::dispatch::Arg>) -> Result<Value, Error> {
    let text = f.call(arg).await.map_err(host)?;
    let before = json::deepest();
    let out = json::parse_str(&text).map_err(|e| Error::Invalid(format!("a callback answered with invalid JSON: {e}")));
    drop(text);
    json::settle_depth(before).await;
    out
}

/// Turn a core error into the error JS sees: a callback's own error comes back as it was
/// thrown; any other with its class, message, cause and fields (see `dispatch::error`).
pub fn to_napi(e: Error) -> napi::Error {
    match e {
        Error::Host(HostError(inner)) => match inner.downcast::<JsFailure>() {
            Ok(js) => js.0,
            Err(other) => crate::dispatch::error::plain(other.to_string()),
        },
        other => crate::dispatch::error::shaped(other.js_shape()),
    }
}

/// A hook, `waitFor`, or any other value-in, value-out callback.
pub struct JsCallback(pub JsonFn);

#[async_trait]
impl Callback for JsCallback {
    async fn call(&self, arg: Value) -> Result<Value, Error> {
        call_json(&self.0, crate::dispatch::Arg::of(arg)).await
    }

    async fn call_in_place(&self, arg: Value) -> Result<Value, Error> {
        // The JS side answers with its own truthy answer, else the value as the callback left it.
        call_json(&self.0, crate::dispatch::Arg::InPlace(Box::new(crate::dispatch::Arg::of(arg)))).await
    }

    fn notify(&self, arg: Value) {
        self.0.notify(arg.to_string())
    }

    fn notify_now(&self, arg: Value) {
        self.0.notify_now(arg.to_string())
    }
}

/// A JS tool as `index.js` hands it over outside an options document: its declaration (JSON)
/// and its bridged `execute`, at place `slot` of the list it came in.
pub fn js_tool(decl: &str, call: JsonFn, slot: u32) -> Result<toolnexus_core::tool::SharedTool, Error> {
    let toolnexus_core::toolkit::ToolDecl { name, description, input_schema, source, output_schema } =
        toolnexus_core::toolkit::ToolDecl::from_json(decl, slot)?;
    let call = std::sync::Arc::new(JsCallback(call));
    Ok(std::sync::Arc::new(toolnexus_core::callback_tool::HostTool {
        decl: toolnexus_core::tool::ToolDecl::new(name, description, input_schema, source)
            .with_output_schema(output_schema),
        slot,
        call,
    }))
}
