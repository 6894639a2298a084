//! The `---`-fenced YAML header of a SKILL.md.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::json::js_double_text;

/// What a SKILL.md holds: the scalar fields the source reads, the body, and whether a header
/// was present but not valid YAML.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Frontmatter {
    pub name: Option<String>,
    pub description: Option<String>,
    /// `arguments`: the names of the arguments the skill takes as a prompt, comma-separated.
    pub arguments: Option<String>,
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
    match serde_saphyr::from_str_with_options::<Header>(header, options()) {
        Err(_) => fm.malformed = true,
        Ok(Header(entries)) => {
            for (key, value) in entries {
                let (Scalar::Text(key), Some(value)) = (key, value.text()) else { continue };
                let value = js_trim(&value).to_string();
                match key.as_str() {
                    "name" => fm.name = Some(value),
                    "description" => fm.description = Some(value),
                    "arguments" => fm.arguments = Some(value),
                    _ => {}
                }
            }
        }
    }
    fm
}

/// The reading the reference's YAML parser (the `yaml` package: YAML 1.2, core schema) gives:
/// only `true`/`false` spellings are booleans (`yes`, `on` stay text), `1_000` is text, `.inf`
/// and `.nan` are numbers, `<<` is an ordinary key, a repeated key is an error. Aliases are
/// replayed within a small budget, so an alias bomb fails (as the reference's alias count
/// does) instead of growing.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        underscored_numbers_as_strings: true,
        merge_keys: serde_saphyr::MergeKeyPolicy::AsOrdinary,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: 10_000 },
    }
}

/// One YAML value, as far as the header is read: a scalar, or something else.
enum Scalar {
    Text(String),
    Number(f64),
    Bool(bool),
    Other,
}

impl Scalar {
    /// The value as JavaScript's `String(value)` writes it; `None` for anything not a string,
    /// number or boolean.
    fn text(self) -> Option<String> {
        match self {
            Scalar::Text(s) => Some(s),
            Scalar::Number(n) => Some(js_double_text(n)),
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Other => None,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    // Numbers are JavaScript's: a double, as the reference's parser makes them.
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Scalar, E> {
        Ok(Scalar::Number(v as f64))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Text(v))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_none<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// The header's top-level entries, in order; empty when it is not a mapping.
struct Header(Vec<(Scalar, Scalar)>);

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = Header;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<Scalar, Scalar>()? {
                    entries.push(entry);
                }
                Ok(Header(entries))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Header, D::Error> {
                d.deserialize_any(HeaderVisitor)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Header, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Header(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_i128<E>(self, _: i128) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_u128<E>(self, _: u128) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
            fn visit_none<E>(self) -> Result<Header, E> {
                Ok(Header(Vec::new()))
            }
        }
        d.deserialize_any(HeaderVisitor)
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

    fn name(header: &str) -> Option<String> {
        fm(&format!("---\n{header}\n---\nbody")).name
    }

    fn malformed(header: &str) -> bool {
        fm(&format!("---\n{header}\n---\nbody")).malformed
    }

    #[test]
    fn quoted_values_keep_their_colons_and_quotes_resolve() {
        let f = fm("---\nname: \"a: b\"\ndescription: 'c: d # not a comment'\n---\n");
        assert_eq!(f.name.as_deref(), Some("a: b"));
        assert_eq!(f.description.as_deref(), Some("c: d # not a comment"));
        assert_eq!(name("name: 'it''s'").as_deref(), Some("it's"));
        assert_eq!(name("name: \"tab\\there\"").as_deref(), Some("tab\there"));
        assert_eq!(name("name: a # a comment").as_deref(), Some("a"));
        assert_eq!(name("name: a\n  continued").as_deref(), Some("a continued"));
        // A quoted scalar stays text whatever it spells.
        assert_eq!(name("name: \"123\"").as_deref(), Some("123"));
        assert_eq!(name("name: 'true'").as_deref(), Some("true"));
        assert_eq!(name("name: !!str 0x1F").as_deref(), Some("0x1F"));
    }

    #[test]
    fn block_scalars_of_every_chomping_are_read_and_trimmed() {
        assert_eq!(fm("---\ndescription: |-\n  one\n  two\n---\n").description.as_deref(), Some("one\ntwo"));
        assert_eq!(fm("---\ndescription: |+\n  one\n\n\nname: n\n---\n").description.as_deref(), Some("one"));
        assert_eq!(
            fm("---\ndescription: >\n  folded\n  line\n\n  next paragraph\n---\n").description.as_deref(),
            Some("folded line\nnext paragraph")
        );
        assert_eq!(
            fm("---\ndescription: >-\n    indented\n    more\n---\n").description.as_deref(),
            Some("indented more")
        );
    }

    #[test]
    fn plain_scalars_resolve_as_yaml_1_2_core_then_read_as_javascript_strings() {
        for (header, want) in [
            ("name: 123", Some("123")),
            ("name: true", Some("true")),
            ("name: False", Some("false")),
            // YAML 1.1's booleans are text in YAML 1.2, as in the reference's parser.
            ("name: yes", Some("yes")),
            ("name: on", Some("on")),
            ("name: 1_000", Some("1_000")),
            ("name: +12", Some("12")),
            ("name: 012", Some("12")),
            ("name: 0o17", Some("15")),
            ("name: 0x1F", Some("31")),
            ("name: 1e3", Some("1000")),
            ("name: 0.1e-2", Some("0.001")),
            ("name: 12345678901234567890123", Some("1.2345678901234568e+22")),
            ("name: -0", Some("0")),
            ("name: .inf", Some("Infinity")),
            ("name: -.Inf", Some("-Infinity")),
            ("name: .nan", Some("NaN")),
            ("name: 2001-12-14", Some("2001-12-14")),
            ("name: ~", None),
            ("name: null", None),
            ("name:", None),
            ("name: {a: b}", None),
        ] {
            assert_eq!(name(header).as_deref(), want, "{header:?}");
            assert!(!malformed(header), "{header:?}");
        }
        // A tag the parser does not know leaves the scalar's text.
        assert_eq!(name("name: !custom v").as_deref(), Some("v"));
    }

    #[test]
    fn a_header_that_is_not_yaml_is_malformed() {
        for header in [
            "name: [unclosed",
            "name: @x",
            "name: `x",
            // A repeated key is an error for the reference's parser too.
            "name: a\nname: b",
            // A tab cannot indent.
            "name: a\n\tdescription: b",
            "name: *unknown",
            // Two documents.
            "name: a\n...\nname: b",
        ] {
            assert!(malformed(header), "{header:?}");
            assert_eq!(name(header), None, "{header:?}");
        }
    }

    #[test]
    fn empty_headers_and_non_mappings_are_not_malformed_and_give_no_fields() {
        for header in ["", "# only a comment", "- a\n- b", "just text", "123"] {
            let f = fm(&format!("---\n{header}\n---\nbody"));
            assert_eq!(f, Frontmatter { content: "body".into(), ..Default::default() }, "{header:?}");
        }
    }

    #[test]
    fn tabs_separating_a_value_and_a_bom_inside_the_header_are_accepted() {
        assert_eq!(name("name:\tvalue").as_deref(), Some("value"));
        assert_eq!(name("\u{feff}name: a").as_deref(), Some("a"));
        assert_eq!(
            fm("---\r\nname: a\r\ndescription: |\r\n  x\r\n  y\r\n---\r\n").description.as_deref(),
            Some("x\ny")
        );
    }

    #[test]
    fn anchors_and_aliases_resolve_and_merge_keys_are_ordinary_keys() {
        assert_eq!(name("base: &b shared\nname: *b").as_deref(), Some("shared"));
        let f = fm("---\nx: &d {k: v}\ndescription: *d\nname: n\n---\n");
        assert_eq!((f.name.as_deref(), f.description), (Some("n"), None));
        // YAML 1.2 has no merge keys: `<<` does not bring `name` in.
        assert_eq!(name("base: &m {name: z}\n<<: *m"), None);
        assert_eq!(name("<<: {name: z}"), None);
    }

    #[test]
    fn an_alias_bomb_fails_fast_instead_of_growing() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        bomb.push_str("name: ok");
        let started = std::time::Instant::now();
        assert!(malformed(&bomb));
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
        // Many aliases of one small anchor: the reference's parser refuses more than 100 too.
        let mut wide = String::from("a: &a x\n");
        for i in 0..150 {
            wide.push_str(&format!("k{i}: *a\n"));
        }
        wide.push_str("name: ok");
        assert!(malformed(&wide));
        // A few aliases are fine.
        assert_eq!(name("a: &a x\nb: *a\nc: *a\nname: *a").as_deref(), Some("x"));
    }

    #[test]
    fn js_trim_is_javascripts() {
        assert_eq!(js_trim("\u{feff} a \u{a0}\n"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
    }
}
