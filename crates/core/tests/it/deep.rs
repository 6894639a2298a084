//! JSON of any depth: parsing, printing, copying and dropping values 10,000 levels deep on a
//! thread with a 2 MiB stack (a tokio worker's), and long strings split out of a value.

use serde_json::{json, Value};
use toolnexus_core::json::{
    deep_clone, depth, js_normalize, js_stringify, on_deep_stack, parse_slice, parse_str, release, split_long_strings,
    text_depth, to_string,
};

const DEEP: usize = 10_000;

/// Run `f` on a fresh thread with a 2 MiB stack, as tokio's workers have.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap().join().unwrap();
}

fn nested_arrays(n: usize) -> String {
    format!("{}{}", "[".repeat(n), "]".repeat(n))
}

fn nested_objects(n: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n))
}

#[test]
fn ten_thousand_deep_arrays_parse_print_copy_and_drop() {
    on_small_stack(|| {
        let text = nested_arrays(DEEP);
        let v: Value = parse_str(&text).expect("parses");
        let copy = deep_clone(&v);
        // Measured first and asserted after the values are gone: a failed assertion would
        // otherwise drop them (recursively) while unwinding.
        let seen = (depth(&v), to_string(&v) == text, js_stringify(&v) == text, to_string(&copy) == text);
        release(copy);
        release(v);
        assert_eq!(seen, (DEEP, true, true, true));
    });
}

#[test]
fn ten_thousand_deep_objects_parse_print_copy_and_drop() {
    on_small_stack(|| {
        let text = nested_objects(DEEP);
        let v: Value = parse_slice(text.as_bytes()).expect("parses");
        let normal = js_normalize(deep_clone(&v));
        let seen = (depth(&v), to_string(&v) == text, js_stringify(&normal) == text);
        release(normal);
        release(v);
        assert_eq!(seen, (DEEP, true, true));
    });
}

#[test]
fn derived_clone_and_drop_get_the_stack_they_need() {
    on_small_stack(|| {
        // Parsing notes the depth; plain Clone and Drop (recursive) then run on a segment sized
        // for it.
        let v: Value = parse_str(&nested_objects(DEEP)).unwrap();
        let same = on_deep_stack(|| {
            let copy = v.clone();
            copy == v
        });
        on_deep_stack(move || drop(v));
        assert!(same);
    });
}

#[test]
fn the_limit_serde_json_had_is_gone_but_bad_json_still_fails() {
    let v: Value = parse_str(&nested_arrays(200)).unwrap();
    assert_eq!(depth(&v), 200);
    assert!(parse_str::<Value>("[[1]").is_err());
    assert!(parse_str::<Value>("[1] x").is_err());
    assert_eq!(parse_str::<Value>(" {\"a\": [1, 2]} \n").unwrap(), json!({"a": [1, 2]}));
    assert_eq!(text_depth(r#"{"a": "[[[", "b": [[1]]}"#), 3);
}

#[test]
fn long_strings_come_apart_once_each_with_their_places() {
    let long = "x".repeat(100);
    let v = json!({
        "text": long,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": long}],
        "other": "y".repeat(100),
    });
    let p = split_long_strings(v, 50);
    assert_eq!(
        p.json,
        r#"{"text":"","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":""}],"other":""}"#
    );
    assert_eq!(p.strings, vec![long.clone(), "y".repeat(100)]);
    assert_eq!(p.places, r#"[[0,"text"],[0,"messages",1,"content"],[1,"other"]]"#);

    // Nothing long: one JSON text, the same serde_json writes.
    let v = json!({"a": [1, 2.5, null, true, "é\n"], "b": {}});
    let expected = to_string(&v);
    let p = split_long_strings(v, 50);
    assert_eq!(p.json, expected);
    assert!(p.places.is_empty() && p.strings.is_empty());

    // A long string at the root, and one under a deep value.
    let p = split_long_strings(Value::String(long.clone()), 50);
    assert_eq!((p.json.as_str(), p.places.as_str()), (r#""""#, "[[0]]"));
    on_small_stack(move || {
        let mut v = Value::String(long);
        for _ in 0..DEEP {
            v = Value::Array(vec![v]);
        }
        let p = split_long_strings(v, 50);
        assert_eq!(p.json.len(), 2 * DEEP + 2);
        assert_eq!(p.strings.len(), 1);
    });
}
