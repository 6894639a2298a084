//! JavaScript regular expressions for `grep`: a pattern rewritten into the Rust regex syntax
//! with the same meaning on one line (ripgrep's fast engine), or, when it needs what that engine
//! lacks (lookaround, backreferences), run by `regress`, an ECMAScript regex engine, one line at
//! a time; and JavaScript's `SyntaxError` wording for a pattern that is bad.

use grep_matcher::{Match, Matcher, NoCaptures, NoError};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};

/// A line matcher for a JavaScript regular expression.
pub(super) enum ContentMatcher {
    /// The pattern in Rust's syntax, on ripgrep's engine.
    Fast(RegexMatcher),
    /// The pattern itself, on an ECMAScript engine.
    Ecma(EcmaLines),
}

/// The line matcher for a JavaScript regular expression: the fast engine when the pattern
/// translates exactly, else the ECMAScript one.
pub(super) fn content_matcher(pattern: &str) -> Result<ContentMatcher, String> {
    match translate_js_regex(pattern).map_err(|reason| js_regex_error(pattern, &reason))? {
        Translated::Rust(translated) => RegexMatcherBuilder::new()
            .multi_line(true)
            .line_terminator(Some(b'\n'))
            .build(&translated)
            .map(ContentMatcher::Fast)
            .map_err(|e| js_regex_error(pattern, &rust_reason(&e.to_string()))),
        Translated::NeedsEcma => regress::Regex::new(pattern)
            .map(|re| ContentMatcher::Ecma(EcmaLines(re)))
            .map_err(|e| js_regex_error(pattern, &e.text)),
    }
}

/// A JavaScript pattern run by `regress` on each line. It names no line terminator, so the
/// searcher hands it one line at a time, its terminator stripped (ripgrep's slow line path).
pub(super) struct EcmaLines(regress::Regex);

impl Matcher for EcmaLines {
    type Captures = NoCaptures;
    type Error = NoError;

    fn find_at(&self, haystack: &[u8], at: usize) -> Result<Option<Match>, NoError> {
        // The searcher hands over text decoded as `fs.readFile(…, "utf8")` decodes it, so this
        // borrows; were it not UTF-8, a match's ends are kept within the line.
        let text = String::from_utf8_lossy(haystack);
        let start = if text.is_char_boundary(at) { at } else { 0 };
        let len = haystack.len();
        Ok(self.0.find_from(&text, start).next().map(|m| Match::new(m.start().min(len), m.end().min(len))))
    }

    fn new_captures(&self) -> Result<NoCaptures, NoError> {
        Ok(NoCaptures::new())
    }
}

/// The message shape of JavaScript's `SyntaxError` for a bad pattern.
fn js_regex_error(pattern: &str, reason: &str) -> String {
    let mut source = String::with_capacity(pattern.len());
    let mut escaped = false;
    let mut in_class = false;
    for c in pattern.chars() {
        match c {
            '/' if !escaped && !in_class => source.push_str("\\/"),
            '\n' => source.push_str(if escaped { "n" } else { "\\n" }),
            '\r' => source.push_str(if escaped { "r" } else { "\\r" }),
            c => source.push(c),
        }
        if !escaped {
            match c {
                '[' => in_class = true,
                ']' => in_class = false,
                _ => {}
            }
        }
        escaped = c == '\\' && !escaped;
    }
    format!("Invalid regular expression: /{source}/: {reason}")
}

/// The gist of a Rust regex error (its last "error:" line).
fn rust_reason(text: &str) -> String {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| text.trim().to_string(), |r| r.to_string())
}

// ---- JavaScript regex → Rust regex -------------------------------------------------------

/// JavaScript's `\s`: WhiteSpace and LineTerminator (the line feed never occurs in a line).
const JS_SPACE: &str =
    "\\t\\x0B\\x0C\\r \\u{A0}\\u{1680}\\u{2000}-\\u{200A}\\u{2028}\\u{2029}\\u{202F}\\u{205F}\\u{3000}\\u{FEFF}";
/// A class that matches nothing.
const NEVER: &str = "[^\\x{0}-\\x{10FFFF}]";
/// JavaScript's `.`: anything but a line terminator.
const JS_DOT: &str = "[^\\n\\r\\u{2028}\\u{2029}]";

/// What a pattern translates to.
#[derive(Debug, PartialEq)]
enum Translated {
    /// Rust regex syntax with the same meaning on a line.
    Rust(String),
    /// A valid pattern that uses lookaround or backreferences, which Rust's syntax lacks.
    NeedsEcma,
}

/// The names of the pattern's named groups (`(?<name>`, not a lookbehind).
fn group_names(src: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("(?<") {
        rest = &rest[at + 3..];
        if rest.starts_with('=') || rest.starts_with('!') {
            continue;
        }
        if let Some(end) = rest.find('>') {
            names.push(rest[..end].to_string());
        }
    }
    names
}

/// Stands for a backreference in `escape`'s answer.
const BACKREFERENCE: &str = "\u{0}backreference";

/// Rewrite a JavaScript pattern (no flags) into Rust regex syntax with the same meaning on a
/// single line: `\d`, `\w`, `\b` are ASCII, `\s` and `.` are JavaScript's, braces that are not
/// a quantifier are literal, `[]` matches nothing and `[^]` anything. A pattern with lookaround
/// or backreferences is still read to the end, so that its syntax errors are named as
/// JavaScript names them, and answers `NeedsEcma`.
fn translate_js_regex(src: &str) -> Result<Translated, String> {
    let chars: Vec<char> = src.chars().collect();
    let names = group_names(src);
    let mut out = String::with_capacity(src.len() + 16);
    let mut i = 0;
    // The open groups: whether each is a lookbehind, which JavaScript will not repeat.
    let mut groups: Vec<bool> = Vec::new();
    let mut can_repeat = false;
    let mut ecma = false;
    let mut lookbehind_closed = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let nothing_to_repeat =
            if std::mem::take(&mut lookbehind_closed) { "Invalid quantifier" } else { "Nothing to repeat" };
        match c {
            '\\' => {
                let (text, repeatable, used) = escape(&chars[i..], false, &names)?;
                ecma |= text == BACKREFERENCE;
                out.push_str(&text);
                i += used;
                can_repeat = repeatable;
            }
            '.' => {
                out.push_str(JS_DOT);
                can_repeat = true;
            }
            '\n' => {
                out.push_str(NEVER);
                can_repeat = true;
            }
            '[' => {
                let (text, used) = class(&chars[i..], &names)?;
                out.push_str(&text);
                i += used;
                can_repeat = true;
            }
            '(' => {
                let mut lookbehind = false;
                if chars.get(i) == Some(&'?') {
                    let rest: String = chars[i + 1..].iter().take(2).collect();
                    if rest.starts_with(':') {
                        out.push_str("(?:");
                        i += 2;
                    } else if rest.starts_with('=') || rest.starts_with('!') {
                        ecma = true;
                        i += 2;
                    } else if rest == "<=" || rest == "<!" {
                        ecma = true;
                        lookbehind = true;
                        i += 3;
                    } else if rest.starts_with('<') {
                        out.push_str("(?<");
                        i += 2;
                    } else {
                        return Err("Invalid group".into());
                    }
                } else {
                    out.push('(');
                }
                groups.push(lookbehind);
                can_repeat = false;
            }
            ')' => {
                let Some(lookbehind) = groups.pop() else { return Err("Unmatched ')'".into()) };
                out.push(')');
                can_repeat = !lookbehind;
                lookbehind_closed = lookbehind;
            }
            '*' | '+' | '?' => {
                if !can_repeat {
                    return Err(nothing_to_repeat.into());
                }
                out.push(c);
                if chars.get(i) == Some(&'?') {
                    out.push('?');
                    i += 1;
                }
                can_repeat = false;
            }
            '{' => match quantifier(&chars[i..]) {
                Some((min, max, used)) => {
                    if !can_repeat {
                        return Err(nothing_to_repeat.into());
                    }
                    if max.is_some_and(|m| m < min) {
                        return Err("numbers out of order in {} quantifier".into());
                    }
                    out.push('{');
                    out.extend(&chars[i..i + used]);
                    i += used;
                    if chars.get(i) == Some(&'?') {
                        out.push('?');
                        i += 1;
                    }
                    can_repeat = false;
                }
                None => {
                    out.push_str("\\{");
                    can_repeat = true;
                }
            },
            '|' => {
                out.push('|');
                can_repeat = false;
            }
            '^' | '$' => {
                out.push(c);
                can_repeat = false;
            }
            c => {
                out.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
                can_repeat = true;
            }
        }
    }
    if !groups.is_empty() {
        return Err("Unterminated group".into());
    }
    Ok(if ecma { Translated::NeedsEcma } else { Translated::Rust(out) })
}

/// `{n}`, `{n,}` or `{n,m}` right after the `{`: (n, m, characters used including `}`).
fn quantifier(rest: &[char]) -> Option<(u64, Option<u64>, usize)> {
    let close = rest.iter().position(|&c| c == '}')?;
    let body: String = rest[..close].iter().collect();
    let (a, b) = match body.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (body.as_str(), None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(a) || b.is_some_and(|b| !b.is_empty() && !digits(b)) {
        return None;
    }
    let min = a.parse().unwrap_or(u64::MAX);
    let max = match b {
        None => Some(min),
        Some("") => None,
        Some(b) => Some(b.parse().unwrap_or(u64::MAX)),
    };
    Some((min, max, close + 1))
}

fn hex(rest: &[char], n: usize) -> Option<u32> {
    if rest.len() < n {
        return None;
    }
    let s: String = rest[..n].iter().collect();
    if s.chars().all(|c| c.is_ascii_hexdigit()) {
        u32::from_str_radix(&s, 16).ok()
    } else {
        None
    }
}

fn literal(c: char) -> String {
    if c == '\n' {
        return NEVER.into();
    }
    regex::escape(c.encode_utf8(&mut [0; 4]))
}

fn class_literal(c: char) -> String {
    match c {
        '\\' | ']' | '[' | '^' | '-' | '&' | '~' => format!("\\{c}"),
        '\n' => "\\n".into(),
        c => c.to_string(),
    }
}

/// One escape after a `\`: (Rust text, whether a quantifier may follow, characters used).
/// Inside a class the text is a class item.
fn escape(rest: &[char], in_class: bool, names: &[String]) -> Result<(String, bool, usize), String> {
    let lit = |c: char| if in_class { class_literal(c) } else { literal(c) };
    let Some(&c) = rest.first() else { return Err("\\ at end of pattern".into()) };
    let class_of = |inner: &str, negated: bool| match (in_class, negated) {
        (true, false) => inner.to_string(),
        (_, true) => format!("[^{inner}]"),
        (false, false) => format!("[{inner}]"),
    };
    let text = match c {
        'd' => class_of("0-9", false),
        'D' => class_of("0-9", true),
        'w' => class_of("0-9A-Za-z_", false),
        'W' => class_of("0-9A-Za-z_", true),
        's' => class_of(JS_SPACE, false),
        'S' => class_of(&format!("\\n{JS_SPACE}"), true),
        'b' if in_class => "\\x08".into(),
        'b' => return Ok(("(?-u:\\b)".into(), false, 1)),
        'B' if !in_class => return Ok(("(?-u:\\B)".into(), false, 1)),
        't' => "\\t".into(),
        'n' => lit('\n'),
        'v' => "\\x0B".into(),
        'f' => "\\x0C".into(),
        'r' => "\\r".into(),
        '0' if !rest.get(1).is_some_and(|d| d.is_ascii_digit()) => "\\x00".into(),
        '0'..='7' if in_class || c == '0' => {
            let digits: String = rest.iter().take(3).take_while(|d| ('0'..='7').contains(*d)).collect();
            let digits = if u32::from_str_radix(&digits, 8).unwrap_or(0) > 0o377 { &digits[..2] } else { &digits };
            let v = u32::from_str_radix(digits, 8).unwrap_or(0);
            return Ok((lit(char::from_u32(v).unwrap_or('\0')), true, digits.len()));
        }
        '8' | '9' if in_class => lit(c),
        '1'..='9' => {
            let used = rest.iter().take_while(|d| d.is_ascii_digit()).count();
            return Ok((BACKREFERENCE.into(), true, used));
        }
        'k' if !names.is_empty() => {
            if in_class {
                return Err("Invalid escape".into());
            }
            if rest.get(1) != Some(&'<') {
                return Err("Invalid named reference".into());
            }
            let Some(end) = rest.iter().position(|&c| c == '>') else {
                return Err("Invalid capture group name".into());
            };
            let name: String = rest[2..end].iter().collect();
            if !names.contains(&name) {
                return Err("Invalid named capture referenced".into());
            }
            return Ok((BACKREFERENCE.into(), true, end + 1));
        }
        'c' => match rest.get(1) {
            Some(l) if l.is_ascii_alphabetic() => {
                let v = (*l as u32) % 32;
                return Ok((format!("\\x{{{v:X}}}"), true, 2));
            }
            _ => return Ok((format!("{}c", lit('\\')), true, 1)),
        },
        'x' => match hex(&rest[1..], 2) {
            Some(v) => return Ok((lit(char::from_u32(v).unwrap_or('\0')), true, 3)),
            None => lit('x'),
        },
        'u' => match hex(&rest[1..], 4) {
            Some(hi @ 0xD800..=0xDBFF) => {
                let lo =
                    (rest.get(5) == Some(&'\\') && rest.get(6) == Some(&'u')).then(|| hex(&rest[7..], 4)).flatten();
                match lo {
                    Some(lo @ 0xDC00..=0xDFFF) => {
                        let v = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        return Ok((lit(char::from_u32(v).unwrap_or('\0')), true, 11));
                    }
                    _ => return Ok((if in_class { String::new() } else { NEVER.into() }, true, 5)),
                }
            }
            Some(0xDC00..=0xDFFF) => return Ok((if in_class { String::new() } else { NEVER.into() }, true, 5)),
            Some(v) => return Ok((lit(char::from_u32(v).unwrap_or('\0')), true, 5)),
            None => lit('u'),
        },
        c => lit(c),
    };
    Ok((text, true, 1))
}

/// A class after its `[`: (Rust text, characters used including the closing `]`).
fn class(rest: &[char], names: &[String]) -> Result<(String, usize), String> {
    let mut i = 0;
    let negated = rest.first() == Some(&'^');
    if negated {
        i += 1;
    }
    if rest.get(i) == Some(&']') {
        let text = if negated { "(?s:.)".to_string() } else { NEVER.to_string() };
        return Ok((text, i + 1));
    }
    let mut body = String::new();
    while i < rest.len() {
        let c = rest[i];
        i += 1;
        match c {
            ']' => {
                if body.is_empty() {
                    // Only lone surrogates, which never occur in text.
                    let text = if negated { "(?s:.)".to_string() } else { NEVER.to_string() };
                    return Ok((text, i));
                }
                let text = if negated { format!("[^{body}]") } else { format!("[{body}]") };
                return Ok((text, i));
            }
            // A line never holds a line feed: as a member it adds nothing.
            '\n' if !negated => {}
            '\\' if !negated && rest.get(i) == Some(&'n') => i += 1,
            '\\' => {
                let (text, _, used) = escape(&rest[i..], true, names)?;
                body.push_str(&text);
                i += used;
            }
            '-' => body.push('-'),
            c => body.push_str(&class_literal(c)),
        }
    }
    Err("Unterminated character class".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use grep_matcher::Matcher;

    fn line_matches(pattern: &str, line: &str) -> bool {
        match content_matcher(pattern).unwrap() {
            ContentMatcher::Fast(m) => m.is_match(line.as_bytes()).unwrap(),
            ContentMatcher::Ecma(m) => m.is_match(line.as_bytes()).unwrap(),
        }
    }

    fn engine(pattern: &str) -> &'static str {
        match content_matcher(pattern).unwrap() {
            ContentMatcher::Fast(_) => "fast",
            ContentMatcher::Ecma(_) => "ecma",
        }
    }

    #[test]
    fn lookaround_and_backreferences_run_on_the_ecmascript_engine() {
        assert_eq!(engine("needle_\\d+"), "fast", "a pattern that translates keeps the fast engine");
        assert_eq!(engine("a(?=b)"), "ecma");
        assert!(line_matches("a(?=b)", "xab"));
        assert!(!line_matches("a(?=b)", "xac"));
        assert!(line_matches("a(?!b)", "ac"));
        assert!(line_matches("(?<=\\$)\\d+", "cost $42"));
        assert!(!line_matches("(?<=\\$)\\d+", "cost 42"));
        assert!(line_matches("(?<!x)y", "ay"));
        assert!(!line_matches("(?<!x)y", "xy"));
        assert!(line_matches("(a)\\1", "baab"));
        assert!(!line_matches("(a)\\1", "ab"));
        assert!(line_matches("(?<q>['\"]).*\\k<q>", "say 'hi'"));
        assert!(!line_matches("(?<q>['\"]).*\\k<q>", "say 'hi\""));
        // JavaScript's classes, not Rust's, on this engine too.
        assert!(!line_matches("^\\d(?=x)", "٣x"));
        assert!(line_matches("^(?=.)\\s", "\u{FEFF}"));
        // Anchors hold at the line's ends.
        assert!(line_matches("^(?=a)a$", "a"));
        assert!(!line_matches("^(?=a)a$", "ab"));
    }

    #[test]
    fn js_classes_and_escapes_keep_their_meaning() {
        assert!(line_matches("\\d+", "a 42"));
        assert!(!line_matches("^\\d$", "٣"));
        assert!(line_matches("^\\w+$", "abc_1"));
        assert!(!line_matches("^\\w$", "é"));
        assert!(line_matches("a\\sb", "a\u{FEFF}b"));
        assert!(!line_matches("a\\sb", "a\u{85}b"));
        assert!(!line_matches("a.b", "a\rb"));
        assert!(line_matches("a.b", "a\u{e9}b"));
        assert!(line_matches("\\bfoo\\b", "a foo."));
        assert!(line_matches("x{", "x{"));
        assert!(line_matches("{foo}", "{foo}"));
        assert!(line_matches("^a{2}$", "aa"));
        assert!(line_matches("a\\/b", "a/b"));
        assert!(line_matches("\\x41\\u0042", "AB"));
        assert!(line_matches("\\uD83D\\uDE00", "😀"));
        assert!(line_matches("[\\d-]+x", "1-2x"));
        assert!(line_matches("[[a]+", "[a["));
        assert!(!line_matches("[]", "anything"));
        assert!(line_matches("^[^]$", "z"));
        assert!(line_matches("a\\.b", "a.b"));
        assert!(!line_matches("a\\.b", "axb"));
        assert!(line_matches("(?<year>\\d{4})", "in 2024"));
        assert!(line_matches("\\p{L}", "p{L}"));
        assert!(!line_matches("a\\nb", "a b"));
        assert!(line_matches("[^\\n]", "q"));
        assert!(!line_matches("[\\n]", "q"));
        assert!(line_matches("[\\nq]", "q"));
    }

    #[test]
    fn bad_patterns_are_named_like_javascript() {
        let e = |p: &str| content_matcher(p).err().unwrap();
        assert_eq!(e("("), "Invalid regular expression: /(/: Unterminated group");
        assert_eq!(e("a)"), "Invalid regular expression: /a)/: Unmatched ')'");
        assert_eq!(e("[a"), "Invalid regular expression: /[a/: Unterminated character class");
        assert_eq!(e("*a"), "Invalid regular expression: /*a/: Nothing to repeat");
        assert_eq!(e("a\\"), "Invalid regular expression: /a\\/: \\ at end of pattern");
        assert_eq!(e("a{3,1}"), "Invalid regular expression: /a{3,1}/: numbers out of order in {} quantifier");
        // A pattern with lookaround is still read through: its errors are JavaScript's.
        assert_eq!(e("a/(?=b)("), "Invalid regular expression: /a\\/(?=b)(/: Unterminated group");
        assert_eq!(e("(?<=a))"), "Invalid regular expression: /(?<=a))/: Unmatched ')'");
        assert_eq!(e("(a)\\1*?+"), "Invalid regular expression: /(a)\\1*?+/: Nothing to repeat");
        assert!(e("[z-a]").starts_with("Invalid regular expression: /[z-a]/: "));
    }
}
