//! Keeping credentials out of messages: a URL quoted in an error (reqwest and rmcp quote the
//! request URL whole) may carry a token in its query (`?api_key=…`), its fragment or its
//! userinfo (`https://user:pass@host/`). Every message that may quote a configured URL goes
//! through [`redact_urls`] before anyone sees it.

use std::borrow::Cow;

/// `text` with every URL in it (`scheme://…`) cut down to scheme, host, port and path: the
/// userinfo, the query and the fragment are dropped. Closing punctuation that ended the URL's
/// span (the `)` of `(url)`, a final `.`) is kept. Text without `://` comes back as is.
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(rel) = text[from..].find("://") {
        let sep = from + rel;
        let start = scheme_start(text, copied, sep);
        let rest = &text[sep + 3..];
        let end = sep + 3 + rest.find(ends_url).unwrap_or(rest.len());
        from = end.max(sep + 3);
        let Some(start) = start else { continue };
        out.push_str(&text[copied..start]);
        out.push_str(&text[start..sep + 3]);
        clean_after_scheme(&text[sep + 3..end], &mut out);
        copied = end;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Where the scheme ending at `sep` starts (a letter, then letters, digits, `+`, `-`, `.`),
/// never before `floor`; `None` when there is no scheme.
fn scheme_start(text: &str, floor: usize, sep: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut start = sep;
    while start > floor && matches!(bytes[start - 1], b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'+' | b'-' | b'.') {
        start -= 1;
    }
    while start < sep && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    (start < sep).then_some(start)
}

/// The characters that end a URL quoted in running text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '<' | '>' | '`')
}

/// Append `authority + path` of `span` (what follows `scheme://`) without userinfo, query or
/// fragment.
fn clean_after_scheme(span: &str, out: &mut String) {
    let authority_end = span.find(['/', '?', '#']).unwrap_or(span.len());
    let authority = &span[..authority_end];
    out.push_str(authority.rfind('@').map_or(authority, |at| &authority[at + 1..]));
    let tail = &span[authority_end..];
    match tail.find(['?', '#']) {
        None => out.push_str(tail),
        Some(cut) => {
            out.push_str(&tail[..cut]);
            let dropped = &tail[cut..];
            let kept = dropped.trim_end_matches([')', ']', '}', ',', '.', ';', ':']);
            out.push_str(&dropped[kept.len()..]);
        }
    }
}

/// What a known secret is replaced with wherever a message could carry it.
pub const REDACTED: &str = "[REDACTED]";

/// The shortest value treated as a secret: shorter ones (`1`, `yes`) would blank out ordinary
/// words of a message without protecting anything.
const MIN_SECRET: usize = 6;

/// Headers whose values describe the request rather than authorise it.
const PLAIN_HEADERS: [&str; 9] = [
    "content-type",
    "accept",
    "user-agent",
    "anthropic-version",
    "a2a-version",
    "mcp-protocol-version",
    "content-length",
    "accept-encoding",
    "connection",
];

/// The secret values a request was sent with (an API key, header values, a URL's
/// credentials), to be cut out of anything the far side echoes back: an error body that
/// quotes the request would otherwise carry them into a run's error, a metric, a served Task
/// any caller can read, and a task store's files.
#[derive(Default, Clone, Debug)]
pub struct Secrets(Vec<String>);

impl Secrets {
    pub fn new() -> Secrets {
        Secrets(Vec::new())
    }

    /// One secret value; a value with an auth scheme (`Bearer <token>`, `Basic <creds>`)
    /// also adds its credential on its own, as a body may echo only that.
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        if value.chars().count() < MIN_SECRET {
            return;
        }
        if let Some((scheme, cred)) = value.split_once(' ') {
            let cred = cred.trim();
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) {
                self.add_one(cred);
            }
        }
        self.add_one(value);
    }

    fn add_one(&mut self, value: &str) {
        if value.chars().count() >= MIN_SECRET && !self.0.iter().any(|s| s == value) {
            self.0.push(value.to_string());
        }
    }

    /// Every header value but those of [`PLAIN_HEADERS`].
    pub fn add_headers<'a>(&mut self, headers: impl IntoIterator<Item = (&'a str, &'a str)>) {
        for (name, value) in headers {
            if !PLAIN_HEADERS.iter().any(|p| p.eq_ignore_ascii_case(name)) {
                self.add(value);
            }
        }
    }

    /// The user name and password of a URL, as written and percent-decoded.
    pub fn add_url(&mut self, url: &str) {
        let Ok(u) = url::Url::parse(url) else { return };
        for part in [u.username(), u.password().unwrap_or("")] {
            if part.is_empty() {
                continue;
            }
            self.add(part);
            if let Ok(decoded) = percent_encoding::percent_decode_str(part).decode_utf8() {
                self.add(&decoded);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every known secret replaced by [`REDACTED`] (longest first, so a value
    /// that contains another is cut whole).
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.is_empty() || !self.0.iter().any(|s| text.contains(s.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut order: Vec<&String> = self.0.iter().collect();
        order.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut out = text.to_string();
        for s in order {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        Cow::Owned(out)
    }
}

/// `text` with each absolute file path in it (`/srv/tasks/x.json`, `C:\data\x.json`) cut to
/// its last component: what a server answers its callers must not map its disk.
pub fn hide_paths(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let starts_path = |i: usize| -> bool {
        let before_ok =
            i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\'' | b'"' | b'(' | b'=' | b'`' | b'[');
        if !before_ok {
            return false;
        }
        let rest = &bytes[i..];
        (rest.len() > 1 && rest[0] == b'/' && rest[1] != b'/' && rest[1] != b' ')
            || (rest.len() > 2 && rest[0].is_ascii_alphabetic() && rest[1] == b':' && rest[2] == b'\\')
    };
    if !(0..bytes.len()).any(starts_path) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if !starts_path(i) {
            i += 1;
            continue;
        }
        let end = text[i..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ')' | '`' | ']' | ','))
            .map_or(text.len(), |n| i + n);
        let span = &text[i..end];
        let span = span.trim_end_matches(['.', ':', ';']);
        let last = span.rsplit(['/', '\\']).find(|c| !c.is_empty()).unwrap_or("");
        out.push_str(&text[copied..i]);
        out.push_str(last);
        copied = i + span.len();
        i = copied.max(i + 1);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{hide_paths, redact_urls, Secrets};

    #[test]
    fn queries_fragments_and_userinfo_are_dropped() {
        let cases = [
            (
                "error sending request for url (http://user:pw@127.0.0.1:9/mcp?api_key=SECRET)",
                "error sending request for url (http://127.0.0.1:9/mcp)",
            ),
            ("https://tok@host.example/a/b#frag and more", "https://host.example/a/b and more"),
            ("see https://h/x?token=S.", "see https://h/x."),
            ("\"https://u:p@h?k=v\" then wss://x:y@z/p?q", "\"https://h\" then wss://z/p"),
            ("http://h:8080", "http://h:8080"),
            ("nothing here", "nothing here"),
            ("a ://b?c and :// alone", "a ://b?c and :// alone"),
            ("x1+y://a@b/c?d", "x1+y://b/c"),
            ("http://h/p?next=https://evil/?s=1 tail", "http://h/p tail"),
            ("ünï http://ü:ñ@hôst/päth?q=ß ok", "ünï http://hôst/päth ok"),
            ("http://", "http://"),
            ("url (http://h/p?a=b))", "url (http://h/p))"),
        ];
        for (input, want) in cases {
            assert_eq!(redact_urls(input), want, "{input}");
        }
    }

    #[test]
    fn secrets_are_cut_out_of_echoes() {
        let mut s = Secrets::new();
        s.add("Bearer sk-live-123456");
        s.add_headers([("Content-Type", "application/json"), ("X-Team", "team-secret-9"), ("X-Short", "abc")]);
        s.add_url("http://alice:p%40ss-word@host/x");
        let echo = r#"{"error":"bad key sk-live-123456","seen":{"authorization":"Bearer sk-live-123456","x-team":"team-secret-9","x-short":"abc","ct":"application/json","pw":"p@ss-word"}}"#;
        let out = s.scrub(echo);
        for gone in ["sk-live-123456", "team-secret-9", "p@ss-word"] {
            assert!(!out.contains(gone), "{out}");
        }
        assert!(out.contains("application/json") && out.contains("\"abc\"") && out.contains("[REDACTED]"), "{out}");
        assert_eq!(s.scrub("nothing to see"), "nothing to see");
        assert!(Secrets::new().scrub("x").len() == 1);
    }

    #[test]
    fn absolute_paths_are_cut_to_their_last_component() {
        let cases = [
            ("EACCES: permission denied, open '/srv/app/tasks/abc.json'", "EACCES: permission denied, open 'abc.json'"),
            ("FileTaskStore: saving /tmp/x/t1.json: disk full", "FileTaskStore: saving t1.json: disk full"),
            ("mkdir C:\\data\\tasks failed", "mkdir tasks failed"),
            ("see http://h/a/b and 1/2", "see http://h/a/b and 1/2"),
            ("no paths", "no paths"),
            ("/ alone", "/ alone"),
        ];
        for (input, want) in cases {
            assert_eq!(hide_paths(input), want, "{input}");
        }
    }
}
