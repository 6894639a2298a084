//! Values with long strings, taken apart on their way to JavaScript (see [`Pieces`]).

use serde_json::Value;

use super::deep::{grow, to_string, write_scalar};

/// A value on its way to JavaScript with its long strings apart: `json` is its JSON with each
/// long string written as `""`, `places` the JSON of `[[index, key or position, ...], ...]`
/// saying where each goes back (the path from the root), and `strings` the long strings
/// themselves, each text once however often it occurs. A host turns `json` and `places` into
/// values as usual and each long string into a string of its own, without JSON's escapes and
/// never inside one string larger than a JavaScript string may be.
#[derive(Debug, Default)]
pub struct Pieces {
    pub json: String,
    pub places: String,
    pub strings: Vec<String>,
}

/// One step of a path into a value.
enum Step {
    Key(String),
    At(usize),
}

/// Split `v` into [`Pieces`], moving out (never copying) every string longer than `above`
/// bytes. With none that long, `places` is empty and `strings` too.
pub fn split_long_strings(v: Value, above: usize) -> Pieces {
    let mut w =
        Splitter { out: Vec::with_capacity(256), path: Vec::new(), places: Vec::new(), strings: Vec::new(), above };
    w.write(v);
    let places = if w.places.is_empty() { String::new() } else { to_string(&Value::Array(w.places)) };
    // Everything written is JSON text, which is UTF-8.
    Pieces { json: String::from_utf8(w.out).unwrap_or_default(), places, strings: w.strings }
}

struct Splitter {
    out: Vec<u8>,
    path: Vec<Step>,
    places: Vec<Value>,
    strings: Vec<String>,
    above: usize,
}

impl Splitter {
    fn write(&mut self, v: Value) {
        grow(|| self.write_level(v))
    }

    fn write_level(&mut self, v: Value) {
        match v {
            Value::String(s) if s.len() > self.above => {
                let index = match self.strings.iter().position(|t| t.len() == s.len() && *t == s) {
                    Some(i) => i,
                    None => {
                        self.strings.push(s);
                        self.strings.len() - 1
                    }
                };
                let mut place = Vec::with_capacity(self.path.len() + 1);
                place.push(Value::from(index));
                place.extend(self.path.iter().map(|step| match step {
                    Step::Key(k) => Value::String(k.clone()),
                    Step::At(i) => Value::from(*i),
                }));
                self.places.push(Value::Array(place));
                self.out.extend_from_slice(b"\"\"");
            }
            Value::Array(items) => {
                self.out.push(b'[');
                for (i, x) in items.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.path.push(Step::At(i));
                    self.write(x);
                    self.path.pop();
                }
                self.out.push(b']');
            }
            Value::Object(m) => {
                self.out.push(b'{');
                for (i, (k, x)) in m.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    write_scalar(k.as_str(), &mut self.out);
                    self.out.push(b':');
                    self.path.push(Step::Key(k));
                    self.write(x);
                    self.path.pop();
                }
                self.out.push(b'}');
            }
            scalar => write_scalar(&scalar, &mut self.out),
        }
    }
}
