//! `question` (a suspension: asking the human is a Request of kind "question") and
//! `todowrite` (renders the list it is given; nothing is kept between calls).

use serde_json::{json, Map, Value};

use super::{arg, ok_with, BoxFut, Builtin};
use crate::json::{js_string, js_stringify, truthy};
use crate::tool::{SharedTool, ToolContext};
use crate::types::{pending, ToolResult};

pub fn question_tool() -> SharedTool {
    Builtin::shared(
        "question",
        "Ask the host one or more questions. Suspends via a kind:\"question\" Request (§10); the host's waitFor resolves it and the answer is returned to the model.",
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "description": "Questions to ask",
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": { "type": "string" },
                            "header": { "type": "string" },
                            "options": { "type": "array", "items": { "type": "string" } },
                            "multiple": { "type": "boolean" }
                        },
                        "required": ["question"]
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        }),
        run_question,
    )
}

/// The prompt of a question Request: each question's text, with ` (options: a, b)` when it
/// has options, one per line.
pub(crate) fn render_questions(questions: &[Value]) -> String {
    questions
        .iter()
        .map(|q| {
            let mut line = match q.get("question") {
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            if let Some(Value::Array(opts)) = q.get("options") {
                if !opts.is_empty() {
                    let shown: Vec<String> =
                        opts.iter().map(|o| if o.is_null() { String::new() } else { js_string(o) }).collect();
                    line.push_str(&format!(" (options: {})", shown.join(", ")));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_question(args: Value, ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let questions = match arg(&args, "questions") {
            Some(Value::Array(q)) => q.clone(),
            _ => Vec::new(),
        };
        // The retry after the host resolved the suspension: the resolution is the answer.
        if let Some(answer) = ctx.answer.as_ref().filter(|a| truthy(a)) {
            let data = match answer.get("data") {
                None | Some(Value::Null) => json!({}),
                Some(d) => d.clone(),
            };
            return Ok(ToolResult::ok(js_stringify(&data)));
        }
        let mut request = Map::with_capacity(3);
        request.insert("kind".into(), Value::String("question".into()));
        request.insert("prompt".into(), Value::String(render_questions(&questions)));
        request.insert("data".into(), json!({ "questions": questions }));
        pending(request).map_err(|e| e.to_string())
    })
}

pub fn todowrite_tool() -> SharedTool {
    Builtin::shared(
        "todowrite",
        "Replace the session todo list. Returns the rendered list.",
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The full todo list to store",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "text": { "type": "string" },
                            "completed": { "type": "boolean" }
                        },
                        "required": ["id", "text", "completed"]
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        }),
        run_todowrite,
    )
}

fn run_todowrite(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let todos = match arg(&args, "todos") {
            Some(Value::Array(t)) => t.clone(),
            _ => Vec::new(),
        };
        let mut lines = Vec::with_capacity(todos.len());
        for t in &todos {
            if t.is_null() {
                return Err("Cannot read properties of null (reading 'completed')".into());
            }
            let mark = if t.get("completed").is_some_and(truthy) { "x" } else { " " };
            let text = match t.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(v) => js_string(v),
            };
            lines.push(format!("[{mark}] {text}"));
        }
        let rendered = lines.join("\n");
        let output = if rendered.is_empty() { "(no todos)".to_string() } else { rendered };
        Ok(ok_with(output, json!({ "todos": todos })))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_render_options_inline() {
        let q = vec![
            json!({"question": "Which env?", "header": "Env", "options": ["dev", "prod"]}),
            json!({"question": "Why?", "options": []}),
            json!({"options": [1, null, [2, 3]]}),
            json!("not an object"),
        ];
        assert_eq!(render_questions(&q), "Which env? (options: dev, prod)\nWhy?\n (options: 1, , 2,3)\n");
    }
}
