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

#[cfg(test)]
mod tests {
    use super::redact_urls;

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
}
