//! Single-turn translation helpers (SPEC §11): OpenAI wire shapes read in and rewritten for an
//! Anthropic-style endpoint, and provider tool calls rendered back in OpenAI form.
//!
//! Every function here is pure and works on loosely-typed JSON the way the JavaScript package
//! does: truthiness decides presence, `String(x)` decides how ids and names become text, and
//! `JSON.stringify` decides how an arguments object becomes a string. Objects are built with
//! their keys in the order JavaScript would produce them, because that order is visible to
//! anyone who serializes the result.
//!
//! Input that JavaScript could not iterate at all (an object or a number where a list belongs)
//! makes the JS functions throw a `TypeError`. The plain functions here read such input as an
//! empty list; the `try_` variants report the error with JavaScript's own message.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::json::{js_normalize, js_string, js_stringify, obj, truthy};

/// One tool call the model asked for, in OpenAI shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslatedToolCall {
    /// The id the caller echoes on its `tool` result message.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as a JSON string, exactly as the OpenAI wire carries them.
    pub arguments: String,
}

impl TranslatedToolCall {
    /// `{ id, name, arguments }`, keys in that order.
    pub fn to_value(&self) -> Value {
        obj([
            ("id", Value::String(self.id.clone())),
            ("name", Value::String(self.name.clone())),
            ("arguments", Value::String(self.arguments.clone())),
        ])
    }
}

/// The OpenAI finish reason for a turn. Any tool call makes it `"tool_calls"`; otherwise the
/// provider's stop reason is mapped (`max_tokens`/`length` → `"length"`, `refusal`/
/// `content_filter` → `"content_filter"`, anything else or nothing → `"stop"`).
pub fn finish_reason_for(has_tool_calls: bool, provider_stop: Option<&str>) -> &'static str {
    if has_tool_calls {
        return "tool_calls";
    }
    match provider_stop {
        Some("max_tokens" | "length") => "length",
        Some("refusal" | "content_filter") => "content_filter",
        _ => "stop",
    }
}

/// The text of an OpenAI `content` value: a string as is, a parts array as the concatenation
/// of its parts' string `text` fields, anything else as `""`.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// A tool call's arguments as a JSON object (or array). An object or array is returned as it
/// is; a string is parsed and kept when it holds an object or array; everything else —
/// including a malformed string — gives `{}`.
pub fn args_object(args: &Value) -> Value {
    match args {
        Value::Object(_) | Value::Array(_) => args.clone(),
        Value::String(s) => match crate::json::parse_str::<Value>(s) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => js_normalize(parsed),
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// A tool call's arguments as the JSON string the OpenAI wire uses: a string as it is, an
/// object or array as `JSON.stringify` renders it, anything else as `"{}"`.
pub fn args_string(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        Value::Object(_) | Value::Array(_) => js_stringify(args),
        _ => "{}".to_string(),
    }
}

/// The tool calls on an assistant message's OpenAI `tool_calls` array, in order. An entry
/// without a (truthy) `function` is skipped; a missing id or name becomes `""`.
pub fn tool_calls_of(message: &Value) -> Vec<TranslatedToolCall> {
    let Some(Value::Array(raw)) = message.get("tool_calls") else {
        return Vec::new();
    };
    raw.iter()
        .filter_map(|tc| {
            let func = tc.get("function").filter(|f| truthy(f))?;
            Some(TranslatedToolCall {
                id: string_or_empty(tc.get("id")),
                name: string_or_empty(func.get("name")),
                arguments: args_string(func.get("arguments").unwrap_or(&Value::Null)),
            })
        })
        .collect()
}

/// `String(v ?? "")`.
fn string_or_empty(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(v) => js_string(v),
    }
}

/// Converts an OpenAI `messages` list into Anthropic messages plus the hoisted system prompt.
///
/// - `system`/`developer` messages leave the list; their non-empty texts are joined with a
///   blank line into the returned system prompt.
/// - `tool`/`function` results become `tool_result` blocks (keyed by `tool_call_id` when it
///   is truthy); consecutive results gather into ONE user turn, emitted when the next
///   non-result message (or the end of the list) arrives.
/// - an assistant turn becomes `text` and `tool_use` blocks (arguments parsed back into an
///   object); one with neither is dropped.
/// - any other message becomes a user turn: its flattened text when that is non-empty, else
///   its content array when that is non-empty, else nothing.
///
/// Entries that are not objects are skipped. A list that is not a list at all reads as empty
/// (see [`try_openai_messages_to_anthropic`] for JavaScript's error instead).
pub fn openai_messages_to_anthropic(messages: &Value) -> (Vec<Value>, String) {
    let mut out: Vec<Value> = Vec::new();
    let mut system_parts: Vec<String> = Vec::new();
    let mut pending: Vec<Value> = Vec::new();

    fn flush(out: &mut Vec<Value>, pending: &mut Vec<Value>) {
        if !pending.is_empty() {
            let content = Value::Array(std::mem::take(pending));
            out.push(obj([("role", Value::String("user".into())), ("content", content)]));
        }
    }

    let items: &[Value] = match messages {
        Value::Array(items) => items,
        _ => &[],
    };
    for m in items {
        // `typeof m === "object"`: arrays pass, and land in the catch-all branch below.
        let fields = match m {
            Value::Object(fields) => Some(fields),
            Value::Array(_) => None,
            _ => continue,
        };
        let get = |key: &str| fields.and_then(|f| f.get(key)).unwrap_or(&Value::Null);
        match get("role").as_str() {
            Some("system" | "developer") => {
                flush(&mut out, &mut pending);
                let s = content_text(get("content"));
                if !s.is_empty() {
                    system_parts.push(s);
                }
            }
            Some("tool" | "function") => {
                let mut block = Map::new();
                block.insert("type".into(), Value::String("tool_result".into()));
                block.insert("content".into(), Value::String(content_text(get("content"))));
                let call_id = get("tool_call_id");
                if truthy(call_id) {
                    block.insert("tool_use_id".into(), Value::String(js_string(call_id)));
                }
                pending.push(Value::Object(block));
            }
            Some("assistant") => {
                flush(&mut out, &mut pending);
                let mut blocks = Vec::new();
                let s = content_text(get("content"));
                if !s.is_empty() {
                    blocks.push(obj([("type", Value::String("text".into())), ("text", Value::String(s))]));
                }
                for tc in tool_calls_of(m) {
                    let input = args_object(&Value::String(tc.arguments));
                    blocks.push(obj([
                        ("type", Value::String("tool_use".into())),
                        ("id", Value::String(tc.id)),
                        ("name", Value::String(tc.name)),
                        ("input", input),
                    ]));
                }
                // An assistant turn with no blocks would be rejected by the provider.
                if !blocks.is_empty() {
                    out.push(obj([("role", Value::String("assistant".into())), ("content", Value::Array(blocks))]));
                }
            }
            _ => {
                flush(&mut out, &mut pending);
                let content = get("content");
                let s = content_text(content);
                if !s.is_empty() {
                    out.push(obj([("role", Value::String("user".into())), ("content", Value::String(s))]));
                } else if matches!(content, Value::Array(parts) if !parts.is_empty()) {
                    out.push(obj([("role", Value::String("user".into())), ("content", content.clone())]));
                }
            }
        }
    }
    flush(&mut out, &mut pending);
    (out, system_parts.join("\n\n"))
}

/// [`openai_messages_to_anthropic`], failing as JavaScript's `for…of` does when `messages` is
/// neither null, a list, nor a string.
pub fn try_openai_messages_to_anthropic(messages: &Value) -> Result<(Vec<Value>, String)> {
    not_iterable(messages, "(messages ?? [])")?;
    Ok(openai_messages_to_anthropic(messages))
}

/// Converts an OpenAI `tools` list into Anthropic tool declarations
/// (`{ name, description?, input_schema }`). An entry without a `function` that has a truthy
/// `name` is taken as already Anthropic-shaped and passes through; an entry whose function has
/// no name, or that is not an object, is skipped. A missing or null `parameters` becomes an
/// empty object schema. A `tools` that is not a list reads as empty.
pub fn openai_tools_to_anthropic(tools: &Value) -> Vec<Value> {
    let items: &[Value] = match tools {
        Value::Array(items) => items,
        _ => &[],
    };
    let mut out = Vec::new();
    for t in items {
        if !t.is_object() && !t.is_array() {
            continue;
        }
        let Some(func) = t.get("function").filter(|f| truthy(f)) else {
            if t.get("name").is_some_and(truthy) {
                out.push(t.clone());
            }
            continue;
        };
        let Some(name) = func.get("name").filter(|n| truthy(n)) else {
            continue;
        };
        let mut decl = Map::new();
        decl.insert("name".into(), name.clone());
        if let Some(description) = func.get("description").filter(|d| truthy(d)) {
            decl.insert("description".into(), description.clone());
        }
        let schema = match func.get("parameters") {
            None | Some(Value::Null) => {
                obj([("type", Value::String("object".into())), ("properties", Value::Object(Map::new()))])
            }
            Some(p) => p.clone(),
        };
        decl.insert("input_schema".into(), schema);
        out.push(Value::Object(decl));
    }
    out
}

/// [`openai_tools_to_anthropic`], failing as JavaScript's `for…of` does when `tools` is
/// neither null, a list, nor a string.
pub fn try_openai_tools_to_anthropic(tools: &Value) -> Result<Vec<Value>> {
    not_iterable(tools, "(tools ?? [])")?;
    Ok(openai_tools_to_anthropic(tools))
}

/// Maps an OpenAI `tool_choice` onto Anthropic's: `"required"`/`"any"` → `{type:"any"}`,
/// `"none"` → `{type:"none"}`, `{function:{name}}` → `{type:"tool",name}`. `None` for
/// `"auto"` (the provider default), absence, and anything unrecognised.
pub fn openai_tool_choice_to_anthropic(choice: &Value) -> Option<Value> {
    match choice {
        Value::String(s) => match s.as_str() {
            "required" | "any" => Some(obj([("type", Value::String("any".into()))])),
            "none" => Some(obj([("type", Value::String("none".into()))])),
            _ => None,
        },
        Value::Object(_) | Value::Array(_) => {
            let name = choice.get("function")?.get("name").filter(|n| truthy(n))?;
            Some(obj([("type", Value::String("tool".into())), ("name", name.clone())]))
        }
        _ => None,
    }
}

/// True when some entry of `messages` is an object whose `role` is `"system"` or
/// `"developer"`. A `messages` that is not a list answers false.
pub fn has_system_message(messages: &Value) -> bool {
    match messages {
        Value::Array(items) => {
            items.iter().any(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")))
        }
        _ => false,
    }
}

/// [`has_system_message`], failing as JavaScript does when `messages` is neither null nor a
/// list (it has no `.some` method).
pub fn try_has_system_message(messages: &Value) -> Result<bool> {
    match messages {
        Value::Null | Value::Array(_) => Ok(has_system_message(messages)),
        _ => Err(Error::Invalid("(messages ?? []).some is not a function".into())),
    }
}

/// `for (const x of value ?? [])` throws for anything but null, an array or a string.
fn not_iterable(value: &Value, expr: &str) -> Result<()> {
    match value {
        Value::Null | Value::Array(_) | Value::String(_) => Ok(()),
        _ => Err(Error::Invalid(format!("{expr} is not iterable"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    // ---- finish reasons ----

    #[test]
    fn finish_reason_tool_calls_win_over_any_stop() {
        for stop in [None, Some("max_tokens"), Some("refusal"), Some("end_turn")] {
            assert_eq!(finish_reason_for(true, stop), "tool_calls");
        }
    }

    #[test]
    fn finish_reason_maps_provider_stops() {
        assert_eq!(finish_reason_for(false, Some("max_tokens")), "length");
        assert_eq!(finish_reason_for(false, Some("length")), "length");
        assert_eq!(finish_reason_for(false, Some("refusal")), "content_filter");
        assert_eq!(finish_reason_for(false, Some("content_filter")), "content_filter");
        assert_eq!(finish_reason_for(false, Some("end_turn")), "stop");
        assert_eq!(finish_reason_for(false, Some("tool_use")), "stop");
        assert_eq!(finish_reason_for(false, Some("")), "stop");
        assert_eq!(finish_reason_for(false, None), "stop");
    }

    // ---- content text ----

    #[test]
    fn content_text_reads_strings_and_parts() {
        assert_eq!(content_text(&json!("plain")), "plain");
        assert_eq!(content_text(&json!("")), "");
        assert_eq!(content_text(&json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])), "ab");
    }

    #[test]
    fn content_text_ignores_parts_without_string_text() {
        let parts = json!([
            {"type": "image_url", "image_url": {"url": "x"}},
            {"text": 5},
            {"text": null},
            null,
            "loose string",
            7,
            ["nested"],
            {"text": "kept"},
        ]);
        assert_eq!(content_text(&parts), "kept");
    }

    #[test]
    fn content_text_of_anything_else_is_empty() {
        for v in [json!(null), json!(1), json!(true), json!({"text": "no"}), json!([])] {
            assert_eq!(content_text(&v), "");
        }
    }

    // ---- arguments ----

    #[test]
    fn args_object_passes_objects_and_arrays_through() {
        let o = json!({"b": 1, "a": {"c": 2}});
        assert_eq!(args_object(&o), o);
        assert_eq!(keys(&args_object(&o)), ["b", "a"]);
        assert_eq!(args_object(&json!([1, 2])), json!([1, 2]));
    }

    #[test]
    fn args_object_parses_json_strings() {
        assert_eq!(args_object(&json!(r#"{"city":"Paris"}"#)), json!({"city": "Paris"}));
        assert_eq!(args_object(&json!("  [1, 2] ")), json!([1, 2]));
        let parsed = args_object(&json!(r#"{"z":1,"y":2}"#));
        assert_eq!(keys(&parsed), ["z", "y"]);
    }

    #[test]
    fn args_object_falls_back_to_empty_object() {
        for v in [
            json!(""),
            json!("   "),
            json!("not json"),
            json!("{\"a\":"),
            json!("5"),
            json!("\"str\""),
            json!("null"),
            json!("true"),
            json!(null),
            json!(0),
            json!(3),
            json!(false),
            json!(true),
        ] {
            assert_eq!(args_object(&v), json!({}), "for {v}");
        }
    }

    #[test]
    fn args_object_orders_parsed_keys_like_javascript() {
        let parsed = args_object(&json!(r#"{"b":1,"2":2,"1":3,"01":4,"4294967295":5,"4294967294":6}"#));
        assert_eq!(keys(&parsed), ["1", "2", "4294967294", "b", "01", "4294967295"]);
        // Numbers become JavaScript doubles.
        assert_eq!(args_object(&json!(r#"{"n":1.0,"m":2.5}"#)), json!({"n": 1, "m": 2.5}));
    }

    #[test]
    fn args_string_renders_the_wire_form() {
        assert_eq!(args_string(&json!(r#"{"a":1}"#)), r#"{"a":1}"#);
        // A string is kept verbatim, even when it is not JSON.
        assert_eq!(args_string(&json!("not json")), "not json");
        assert_eq!(args_string(&json!("")), "");
        assert_eq!(args_string(&json!({"city": "Paris", "n": [1, 2]})), r#"{"city":"Paris","n":[1,2]}"#);
        assert_eq!(args_string(&json!([1, "x"])), r#"[1,"x"]"#);
        for v in [json!(null), json!(0), json!(5), json!(true), json!(false)] {
            assert_eq!(args_string(&v), "{}");
        }
    }

    #[test]
    fn args_string_matches_json_stringify() {
        let v: Value = serde_json::from_str(
            r#"{"b":1.0,"10":true,"2":null,"s":"q\"\\\n\u0001\u007f/é","big":1e21,"small":1.5e-6,"tiny":1e-7,"neg":-0.0,"u":12345678901234567890}"#,
        )
        .unwrap();
        assert_eq!(
            args_string(&v),
            concat!(
                r#"{"2":null,"10":true,"b":1,"s":"q\"\\\n\u0001"#,
                "\u{7f}",
                r#"/é","big":1e+21,"small":0.0000015,"tiny":1e-7,"neg":0,"u":12345678901234567000}"#
            )
        );
    }

    #[test]
    fn js_numbers_print_like_javascript() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (100.0, "100"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (-2.5e-8, "-2.5e-8"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740993.0, "9007199254740992"),
            (123.456, "123.456"),
            // Both doubles lie exactly halfway between two 16-digit candidates (…x5): the even one wins.
            (73283689945473.62, "73283689945473.62"),
            (707293857221271.2, "707293857221271.2"),
            (0.001, "0.001"),
            (1234.5e-10, "1.2345e-7"),
        ];
        for (f, want) in cases {
            assert_eq!(crate::json::js_double_text(f), want, "for {f:e}");
        }
    }

    #[test]
    fn js_string_mirrors_string() {
        assert_eq!(js_string(&json!("s")), "s");
        assert_eq!(js_string(&json!(42)), "42");
        assert_eq!(js_string(&json!(4.5)), "4.5");
        assert_eq!(js_string(&json!(true)), "true");
        assert_eq!(js_string(&json!(null)), "null");
        assert_eq!(js_string(&json!({"a": 1})), "[object Object]");
        assert_eq!(js_string(&json!([1, [2, [3, null]], {}, true])), "1,2,3,,[object Object],true");
        assert_eq!(js_string(&json!([])), "");
    }

    // ---- tool calls ----

    #[test]
    fn tool_calls_of_reads_openai_tool_calls() {
        let m = json!({
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "c2", "function": {"name": "lookup", "arguments": {"q": "x"}}},
            ]
        });
        let calls = tool_calls_of(&m);
        assert_eq!(
            calls,
            vec![
                TranslatedToolCall {
                    id: "c1".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Paris"}"#.into()
                },
                TranslatedToolCall { id: "c2".into(), name: "lookup".into(), arguments: r#"{"q":"x"}"#.into() },
            ]
        );
        let v = calls[0].to_value();
        assert_eq!(keys(&v), ["id", "name", "arguments"]);
        assert_eq!(v, json!({"id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}));
    }

    #[test]
    fn tool_calls_of_skips_entries_without_a_function() {
        let m = json!({"tool_calls": [
            {"id": "a"},
            {"id": "b", "function": null},
            {"id": "c", "function": 0},
            {"id": "d", "function": ""},
            null,
            "x",
            {"id": "e", "function": {"name": "kept"}},
        ]});
        let calls = tool_calls_of(&m);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "e");
        assert_eq!(calls[0].arguments, "{}");
    }

    #[test]
    fn tool_calls_of_stringifies_ids_and_names_like_javascript() {
        let m = json!({"tool_calls": [
            {"id": 7, "function": {"name": 1.5, "arguments": 3}},
            {"id": null, "function": {"name": null}},
            {"function": {}},
            {"id": true, "function": {"name": {"x": 1}}},
            {"id": [1, 2], "function": {"name": false}},
            {"id": "s", "function": "truthy string"},
            {"id": "t", "function": [1]},
        ]});
        let got: Vec<(String, String, String)> =
            tool_calls_of(&m).into_iter().map(|c| (c.id, c.name, c.arguments)).collect();
        let want = [
            ("7", "1.5", "{}"),
            ("", "", "{}"),
            ("", "", "{}"),
            ("true", "[object Object]", "{}"),
            ("1,2", "false", "{}"),
            ("s", "", "{}"),
            ("t", "", "{}"),
        ];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1.as_str(), g.2.as_str()), w);
        }
    }

    #[test]
    fn tool_calls_of_needs_an_array() {
        for m in [
            json!(null),
            json!("x"),
            json!([]),
            json!({}),
            json!({"tool_calls": null}),
            json!({"tool_calls": {"0": {"function": {"name": "f"}}}}),
            json!({"tool_calls": "[]"}),
        ] {
            assert!(tool_calls_of(&m).is_empty(), "for {m}");
        }
    }

    // ---- messages ----

    #[test]
    fn messages_round_trip_hoists_system_and_pairs_call_with_result() {
        let (messages, system) = openai_messages_to_anthropic(&json!([
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "what's the weather in Oslo?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"place\":\"Oslo\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_a", "content": "rain"},
        ]));
        assert_eq!(system, "Answer briefly.");
        assert_eq!(
            Value::Array(messages.clone()),
            json!([
                {"role": "user", "content": "what's the weather in Oslo?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_a", "name": "weather", "input": {"place": "Oslo"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "content": "rain", "tool_use_id": "call_a"}
                ]},
            ])
        );
        assert_eq!(keys(&messages[0]), ["role", "content"]);
        assert_eq!(keys(&messages[1]["content"][0]), ["type", "id", "name", "input"]);
        assert_eq!(keys(&messages[2]["content"][0]), ["type", "content", "tool_use_id"]);
    }

    #[test]
    fn messages_consecutive_results_share_one_user_turn() {
        let (messages, system) = openai_messages_to_anthropic(&json!([
            {"role": "user", "content": "stock price and news for ACME?"},
            {"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "p", "type": "function", "function": {"name": "price", "arguments": "{\"sym\":\"ACME\"}"}},
                {"id": "n", "type": "function", "function": {"name": "news", "arguments": "{\"sym\":\"ACME\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "p", "content": "12.5"},
            {"role": "tool", "tool_call_id": "n", "content": "none today"},
        ]));
        assert_eq!(system, "");
        assert_eq!(messages.len(), 3);
        let blocks = messages[1]["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0], json!({"type": "text", "text": "Checking both."}));
        assert_eq!(keys(&blocks[0]), ["type", "text"]);
        assert_eq!(messages[2]["role"], "user");
        let ids: Vec<&Value> = messages[2]["content"].as_array().unwrap().iter().map(|b| &b["tool_use_id"]).collect();
        assert_eq!(ids, [&json!("p"), &json!("n")]);
    }

    #[test]
    fn messages_parts_flatten_and_developer_hoists() {
        let (messages, system) = openai_messages_to_anthropic(&json!([
            {"role": "developer", "content": "Use metric units."},
            {"role": "user", "content": [{"type": "text", "text": "good "}, {"type": "text", "text": "morning"}]},
        ]));
        assert_eq!(system, "Use metric units.");
        assert_eq!(Value::Array(messages), json!([{"role": "user", "content": "good morning"}]));
    }

    #[test]
    fn messages_system_parts_join_with_a_blank_line_and_skip_empty_ones() {
        let (messages, system) = openai_messages_to_anthropic(&json!([
            {"role": "system", "content": "one"},
            {"role": "system", "content": ""},
            {"role": "developer", "content": [{"type": "text", "text": "two"}]},
            {"role": "system"},
            {"role": "system", "content": "three"},
        ]));
        assert!(messages.is_empty());
        assert_eq!(system, "one\n\ntwo\n\nthree");
    }

    #[test]
    fn messages_skip_entries_that_are_not_objects() {
        let (messages, system) =
            openai_messages_to_anthropic(&json!([null, 1, "user", true, {"role": "user", "content": "hi"}]));
        assert_eq!(Value::Array(messages), json!([{"role": "user", "content": "hi"}]));
        assert_eq!(system, "");
    }

    #[test]
    fn messages_drop_an_empty_assistant_turn() {
        let (messages, _) = openai_messages_to_anthropic(&json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "assistant", "tool_calls": [{"id": "x"}]},
            {"role": "assistant", "content": [{"type": "image"}]},
        ]));
        assert_eq!(Value::Array(messages), json!([{"role": "user", "content": "hi"}]));
    }

    #[test]
    fn messages_pending_results_flush_on_the_next_non_result_message() {
        let (messages, system) = openai_messages_to_anthropic(&json!([
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "function", "tool_call_id": "b", "content": "2"},
            {"role": "system", "content": "sys"},
            {"role": "tool", "tool_call_id": "c", "content": "3"},
            {"role": "assistant", "content": ""},
            {"role": "tool", "tool_call_id": "d", "content": "4"},
            {"role": "user", "content": ""},
            {"role": "tool", "tool_call_id": "e", "content": "5"},
            ["an array entry"],
            {"role": "tool", "tool_call_id": "f", "content": "6"},
        ]));
        assert_eq!(system, "sys");
        let turns: Vec<Vec<&str>> = messages
            .iter()
            .map(|m| {
                assert_eq!(m["role"], "user");
                m["content"].as_array().unwrap().iter().map(|b| b["tool_use_id"].as_str().unwrap()).collect()
            })
            .collect();
        assert_eq!(turns, vec![vec!["a", "b"], vec!["c"], vec!["d"], vec!["e"], vec!["f"]]);
    }

    #[test]
    fn messages_tool_result_details() {
        let (messages, _) = openai_messages_to_anthropic(&json!([
            {"role": "tool", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
            {"role": "tool", "tool_call_id": "", "content": null},
            {"role": "tool", "tool_call_id": 0, "content": 5},
            {"role": "tool", "tool_call_id": 42},
            {"role": "tool", "tool_call_id": {"k": 1}},
        ]));
        assert_eq!(
            Value::Array(messages),
            json!([{"role": "user", "content": [
                {"type": "tool_result", "content": "xy"},
                {"type": "tool_result", "content": ""},
                {"type": "tool_result", "content": ""},
                {"type": "tool_result", "content": "", "tool_use_id": "42"},
                {"type": "tool_result", "content": "", "tool_use_id": "[object Object]"},
            ]}])
        );
    }

    #[test]
    fn messages_assistant_tool_use_input_is_parsed_from_either_form() {
        let (messages, _) = openai_messages_to_anthropic(&json!([
            {"role": "assistant", "content": [{"type": "text", "text": "let me see"}], "tool_calls": [
                {"id": "a", "function": {"name": "f", "arguments": {"obj": true}}},
                {"id": "b", "function": {"name": "g", "arguments": "not json"}},
                {"id": "c", "function": {"name": "h"}},
                {"id": "d", "function": {"name": "i", "arguments": "[1,2]"}},
                {"id": "skipped"},
            ]},
        ]));
        assert_eq!(
            Value::Array(messages),
            json!([{"role": "assistant", "content": [
                {"type": "text", "text": "let me see"},
                {"type": "tool_use", "id": "a", "name": "f", "input": {"obj": true}},
                {"type": "tool_use", "id": "b", "name": "g", "input": {}},
                {"type": "tool_use", "id": "c", "name": "h", "input": {}},
                {"type": "tool_use", "id": "d", "name": "i", "input": [1, 2]},
            ]}])
        );
    }

    #[test]
    fn messages_other_roles_become_user_turns() {
        let image = json!([{"type": "image_url", "image_url": {"url": "data:x"}}]);
        let empty_texts = json!([{"type": "text", "text": ""}]);
        let (messages, _) = openai_messages_to_anthropic(&json!([
            {"role": "user", "content": ""},
            {"role": "user", "content": image},
            {"role": "user", "content": []},
            {"role": "user", "content": empty_texts},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]},
            {"content": "no role"},
            {"role": "critic", "content": "odd role"},
            {"role": 5, "content": "numeric role"},
            {"role": "user"},
        ]));
        assert_eq!(
            Value::Array(messages),
            json!([
                {"role": "user", "content": image},
                {"role": "user", "content": empty_texts},
                {"role": "user", "content": "a"},
                {"role": "user", "content": "no role"},
                {"role": "user", "content": "odd role"},
                {"role": "user", "content": "numeric role"},
            ])
        );
    }

    #[test]
    fn messages_that_are_not_a_list() {
        for v in [json!(null), json!("system"), json!({}), json!(3)] {
            assert_eq!(openai_messages_to_anthropic(&v), (vec![], String::new()));
        }
        assert!(try_openai_messages_to_anthropic(&json!(null)).is_ok());
        assert!(try_openai_messages_to_anthropic(&json!("ab")).is_ok());
        for v in [json!({}), json!(3), json!(true)] {
            let e = try_openai_messages_to_anthropic(&v).unwrap_err();
            assert_eq!(e.to_string(), "(messages ?? []) is not iterable");
        }
    }

    // ---- tools ----

    #[test]
    fn tools_convert_function_declarations() {
        let tools = openai_tools_to_anthropic(&json!([
            {"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"name": "bare"}},
            {"type": "function", "function": {"name": "nulls", "description": "", "parameters": null}},
            {"type": "function", "function": {"parameters": {"type": "object"}, "description": "x", "name": "reordered"}},
        ]));
        assert_eq!(
            Value::Array(tools.clone()),
            json!([
                {"name": "get_weather", "description": "d", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
                {"name": "bare", "input_schema": {"type": "object", "properties": {}}},
                {"name": "nulls", "input_schema": {"type": "object", "properties": {}}},
                {"name": "reordered", "description": "x", "input_schema": {"type": "object"}},
            ])
        );
        assert_eq!(keys(&tools[0]), ["name", "description", "input_schema"]);
        assert_eq!(keys(&tools[3]), ["name", "description", "input_schema"]);
        assert_eq!(keys(&tools[1]["input_schema"]), ["type", "properties"]);
    }

    #[test]
    fn tools_native_entries_pass_through_and_junk_is_skipped() {
        let native = json!({"name": "native", "input_schema": {"type": "object"}, "extra": 1});
        let tools = openai_tools_to_anthropic(&json!([
            native,
            {"type": "function", "function": {"description": "nameless"}},
            {"type": "function", "function": {"name": ""}},
            {"type": "function", "function": "str"},
            {"type": "function"},
            {"name": ""},
            null,
            "tool",
            7,
            [],
            {"function": null, "name": "also native"},
        ]));
        assert_eq!(Value::Array(tools), json!([native, {"function": null, "name": "also native"}]));
    }

    #[test]
    fn tools_keep_odd_but_present_values() {
        let tools = openai_tools_to_anthropic(&json!([
            {"function": {"name": 3, "description": 0, "parameters": false}},
        ]));
        assert_eq!(Value::Array(tools), json!([{"name": 3, "input_schema": false}]));
    }

    #[test]
    fn tools_that_are_not_a_list() {
        for v in [json!(null), json!("abc"), json!({}), json!(1)] {
            assert!(openai_tools_to_anthropic(&v).is_empty());
        }
        assert!(try_openai_tools_to_anthropic(&json!(null)).is_ok());
        let e = try_openai_tools_to_anthropic(&json!({})).unwrap_err();
        assert_eq!(e.to_string(), "(tools ?? []) is not iterable");
    }

    // ---- tool choice ----

    #[test]
    fn tool_choice_mapping() {
        assert_eq!(openai_tool_choice_to_anthropic(&json!("required")), Some(json!({"type": "any"})));
        assert_eq!(openai_tool_choice_to_anthropic(&json!("any")), Some(json!({"type": "any"})));
        assert_eq!(openai_tool_choice_to_anthropic(&json!("none")), Some(json!({"type": "none"})));
        let named =
            openai_tool_choice_to_anthropic(&json!({"type": "function", "function": {"name": "get_weather"}})).unwrap();
        assert_eq!(named, json!({"type": "tool", "name": "get_weather"}));
        assert_eq!(keys(&named), ["type", "name"]);
    }

    #[test]
    fn tool_choice_default_and_unrecognised_give_none() {
        for v in [
            json!("auto"),
            json!(""),
            json!("Required"),
            json!(null),
            json!(true),
            json!(1),
            json!({}),
            json!({"type": "tool", "name": "native_shape"}),
            json!({"function": {}}),
            json!({"function": {"name": ""}}),
            json!({"function": "get_weather"}),
            json!([]),
        ] {
            assert_eq!(openai_tool_choice_to_anthropic(&v), None, "for {v}");
        }
    }

    // ---- system detection ----

    #[test]
    fn has_system_message_detection() {
        assert!(has_system_message(&json!([{"role": "user"}, {"role": "system"}])));
        assert!(has_system_message(&json!([{"role": "developer", "content": ""}])));
        assert!(!has_system_message(&json!([{"role": "user"}, null, "system", {"role": "System"}])));
        assert!(!has_system_message(&json!([])));
        assert!(!has_system_message(&json!(null)));
        assert!(!has_system_message(&json!({"role": "system"})));
        assert!(!try_has_system_message(&json!(null)).unwrap());
        assert!(try_has_system_message(&json!([{"role": "system"}])).unwrap());
        for v in [json!("system"), json!({}), json!(1)] {
            let e = try_has_system_message(&v).unwrap_err();
            assert_eq!(e.to_string(), "(messages ?? []).some is not a function");
        }
    }
}
