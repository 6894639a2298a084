//! The `---`-fenced YAML header of a SKILL.md.

use serde_yaml::Value as Yaml;

use crate::json::js_double_text;

/// What a SKILL.md holds: the scalar fields the source reads, the body, and whether a header
/// was present but not valid YAML.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    pub content: String,
    pub malformed: bool,
}

/// Split `---\n<yaml>\n---\n<body>` (either line ending): the header ends at the first line
/// break followed by `---`, and one line break after that fence belongs to it. Text without an
/// opening fence, or without a closing one, is all body.
fn split(text: &str) -> Option<(&str, &str)> {
    let after_open = text.strip_prefix("---")?;
    let start = if after_open.starts_with("\r\n") {
        5
    } else if after_open.starts_with('\n') {
        4
    } else {
        return None;
    };
    let bytes = text.as_bytes();
    let mut i = start;
    while i < bytes.len() {
        if bytes[i] == b'\n' && bytes[i + 1..].starts_with(b"---") {
            let end = if i > start && bytes[i - 1] == b'\r' { i - 1 } else { i };
            let mut rest = i + 4;
            if bytes.get(rest) == Some(&b'\r') {
                rest += 1;
            }
            if bytes.get(rest) == Some(&b'\n') {
                rest += 1;
            }
            // Every cut sits next to an ASCII byte, so each is a char boundary.
            return Some((text.get(start..end)?, text.get(rest..)?));
        }
        i += 1;
    }
    None
}

/// Parse a SKILL.md. Only string, number and boolean values are read, as text with surrounding
/// whitespace trimmed; anything else (lists, maps, null) counts as absent.
pub(crate) fn parse(text: &str) -> Frontmatter {
    let Some((header, body)) = split(text) else {
        return Frontmatter { content: text.to_string(), ..Default::default() };
    };
    let mut fm = Frontmatter { content: body.to_string(), ..Default::default() };
    match serde_yaml::from_str::<Yaml>(header) {
        Err(_) => fm.malformed = true,
        Ok(Yaml::Mapping(map)) => {
            for (k, v) in map {
                let (Some(key), Some(value)) = (scalar_text(&k), scalar_text(&v)) else { continue };
                let value = js_trim(&value).to_string();
                match key.as_str() {
                    "name" => fm.name = Some(value),
                    "description" => fm.description = Some(value),
                    _ => {}
                }
            }
        }
        Ok(_) => {}
    }
    fm
}

/// A scalar as JavaScript's `String(value)` writes it.
fn scalar_text(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Number(n) => {
            let f = if let Some(i) = n.as_i64() {
                i as f64
            } else if let Some(u) = n.as_u64() {
                u as f64
            } else {
                n.as_f64()?
            };
            Some(js_double_text(f))
        }
        Yaml::Tagged(t) => scalar_text(&t.value),
        _ => None,
    }
}

/// `String.prototype.trim`: JavaScript's white space and line terminators.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\u{9}'..='\u{d}'
                | ' '
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(text: &str) -> Frontmatter {
        parse(text)
    }

    #[test]
    fn fences_split_header_and_body() {
        let f = fm("---\nname: a\ndescription: d\n---\n# Body\n");
        assert_eq!(f.name.as_deref(), Some("a"));
        assert_eq!(f.description.as_deref(), Some("d"));
        assert_eq!(f.content, "# Body\n");
        let f = fm("---\r\nname: a\r\n---\r\nbody");
        assert_eq!((f.name.as_deref(), f.content.as_str()), (Some("a"), "body"));
        // The closing fence may run on: the rest of the line is body.
        assert_eq!(fm("---\nname: a\n-----x").content, "--x");
        // A lone CR after the fence belongs to it.
        assert_eq!(fm("---\nname: a\n---\rbody").content, "body");
        assert_eq!(fm("---\n\n---").content, "");
    }

    #[test]
    fn no_fences_means_all_body() {
        for t in ["name: a", "---\nname: a", "---name: a\n---\n", "\u{feff}---\nname: a\n---\n", "---\n---\n"] {
            let f = fm(t);
            assert_eq!(f, Frontmatter { content: t.into(), ..Default::default() }, "{t:?}");
        }
    }

    #[test]
    fn values_are_coerced_and_trimmed() {
        let f = fm("---\nname: |\n  multi\n  line\n\ndescription: >\n  folded\n  text\n---\n");
        assert_eq!(f.name.as_deref(), Some("multi\nline"));
        assert_eq!(f.description.as_deref(), Some("folded text"));
        assert_eq!(fm("---\nname: 12\ndescription: true\n---\n").name.as_deref(), Some("12"));
        assert_eq!(fm("---\nname: 1.50\n---\n").name.as_deref(), Some("1.5"));
        assert_eq!(fm("---\nname: \"  spaced  \"\n---\n").name.as_deref(), Some("spaced"));
        assert_eq!(fm("---\nname: [a]\ndescription:\n---\n"), Frontmatter::default());
    }

    #[test]
    fn malformed_yaml_is_reported_not_fatal() {
        let f = fm("---\nname: [unclosed\n---\nbody");
        assert!(f.malformed);
        assert_eq!(f.name, None);
        assert_eq!(f.content, "body");
    }

    #[test]
    fn js_trim_is_javascripts() {
        assert_eq!(js_trim("\u{feff} a \u{a0}\n"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
    }
}
