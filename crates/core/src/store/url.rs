//! Store URLs: which engine a `store` string names, and the same URL with its password hidden
//! (the only form that may appear in an error, a warning or a metric).

use std::path::PathBuf;

/// The engine a store URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite:<path>`: one file (created when missing).
    Sqlite(PathBuf),
    /// `postgres://…` / `postgresql://…`: the URL as libpq reads it.
    Postgres(String),
    /// `redis://…` / `rediss://…`.
    Redis(String),
}

/// The engine behind a store URL, as its scheme names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    Redis,
}

impl Backend {
    /// Every engine, in the order their schemes are tried.
    pub const ALL: [Backend; 3] = [Backend::Sqlite, Backend::Postgres, Backend::Redis];

    /// The engine's name: `sqlite`, `postgres`, `redis`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
            Backend::Redis => "redis",
        }
    }

    /// The engine of that name.
    pub fn named(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The URL beginnings that name this engine (matched in any case).
    pub fn schemes(self) -> &'static [&'static str] {
        match self {
            Backend::Sqlite => &["sqlite:"],
            Backend::Postgres => &["postgres://", "postgresql://"],
            Backend::Redis => &["redis://", "rediss://"],
        }
    }

    /// The engine whose scheme begins `text`, in any case (`SQLite:`, `POSTGRES://`).
    pub fn of(text: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|e| e.schemes().iter().any(|s| starts_with_ignoring_case(text, s)))
    }

    /// What a store class says of a value that is not one of its URLs: `what` is the value as
    /// the caller shows it (a redacted URL in quotes, or its type).
    pub fn refusal(self, owner: &str, what: &str) -> String {
        format!("{owner}: expected a URL starting with {}, got {what}", self.schemes().join(" or "))
    }
}

fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len() && text.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

impl StoreUrl {
    /// The engine `text` names (its scheme in any case), or `None` when it is not a store URL
    /// (so the caller's own rules for other strings apply).
    pub fn parse(text: &str) -> Option<StoreUrl> {
        match Backend::of(text)? {
            Backend::Sqlite => {
                // `sqlite://path` and `sqlite:path` both name a file; `sqlite:///abs` an absolute one.
                let path = &text["sqlite:".len()..];
                let path = path.strip_prefix("//").unwrap_or(path);
                Some(StoreUrl::Sqlite(PathBuf::from(path)))
            }
            Backend::Postgres => Some(StoreUrl::Postgres(text.to_string())),
            Backend::Redis => Some(StoreUrl::Redis(text.to_string())),
        }
    }

    /// Whether `text` is a store URL this module opens.
    pub fn is_store_url(text: &str) -> bool {
        Backend::of(text).is_some()
    }
}

/// Where the password of `url` sits (`scheme://user:PASSWORD@host…`), read by hand so that a
/// URL no parser accepts is hidden as well.
fn password_span(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..end].rfind('@')?;
    let colon = rest[..at].find(':')?;
    Some((start + colon + 1, start + at))
}

/// `url` with any password replaced by `***` (`postgres://u:***@h/db`), and a `password=`
/// query parameter likewise; the rest exactly as given. Text that is not a URL comes back
/// unchanged.
pub fn redacted(url: &str) -> String {
    let mut out = url.to_string();
    if let Some((from, to)) = password_span(url) {
        out.replace_range(from..to, "***");
    }
    // libpq also reads `?password=…` (and `sslpassword`): hide their values too.
    for key in ["password=", "sslpassword="] {
        let mut from = 0;
        while let Some(at) = out[from..].find(key) {
            let start = from + at + key.len();
            let before = out[..from + at].chars().last();
            if !matches!(before, Some('?') | Some('&')) {
                from = start;
                continue;
            }
            let end = out[start..].find('&').map_or(out.len(), |e| start + e);
            out.replace_range(start..end, "***");
            from = start + 3;
        }
    }
    out
}

/// Every occurrence of `url`'s password in `text` hidden: an engine's own message may quote
/// what it was given.
pub fn scrub(text: &str, url: &str) -> String {
    let mut out = text.replace(url, &redacted(url));
    if let Some((from, to)) = password_span(url) {
        let pw = &url[from..to];
        if !pw.is_empty() {
            out = out.replace(pw, "***");
            if let Ok(decoded) = percent_decode(pw) {
                if !decoded.is_empty() {
                    out = out.replace(&decoded, "***");
                }
            }
        }
    }
    out
}

fn percent_decode(s: &str) -> Result<String, ()> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let (b'%', Some(hex)) = (bytes[i], bytes.get(i + 1..i + 3)) {
            let hex = std::str::from_utf8(hex).map_err(|_| ())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| ())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_is_recognised_and_other_text_is_not() {
        assert_eq!(StoreUrl::parse("sqlite:/tmp/a.db"), Some(StoreUrl::Sqlite("/tmp/a.db".into())));
        assert_eq!(StoreUrl::parse("sqlite://rel.db"), Some(StoreUrl::Sqlite("rel.db".into())));
        assert_eq!(StoreUrl::parse("sqlite:///abs.db"), Some(StoreUrl::Sqlite("/abs.db".into())));
        assert!(matches!(StoreUrl::parse("postgres://h/db"), Some(StoreUrl::Postgres(_))));
        assert!(matches!(StoreUrl::parse("PostgreSQL://h/db"), Some(StoreUrl::Postgres(_))));
        assert!(matches!(StoreUrl::parse("rediss://h:6380"), Some(StoreUrl::Redis(_))));
        assert_eq!(StoreUrl::parse("SQLite:/tmp/a.db"), Some(StoreUrl::Sqlite("/tmp/a.db".into())));
        assert!(matches!(StoreUrl::parse("REDIS://h"), Some(StoreUrl::Redis(_))));
        for other in ["memory", "file:/x", "mysql://h", "", "redis:", "sqlite", "é:", "postgres:/h"] {
            assert_eq!(StoreUrl::parse(other), None, "{other}");
        }
    }

    #[test]
    fn engines_name_their_schemes_once() {
        assert_eq!(Backend::of("Postgresql://h"), Some(Backend::Postgres));
        assert_eq!(Backend::of("sqlite:x.db"), Some(Backend::Sqlite));
        assert_eq!(Backend::of("rediss://h"), Some(Backend::Redis));
        assert_eq!(Backend::of("redi"), None);
        for e in Backend::ALL {
            assert_eq!(Backend::named(e.name()), Some(e));
        }
        assert_eq!(Backend::named("mysql"), None);
        assert_eq!(
            Backend::Postgres.refusal("PostgresStore", "\"mysql://h\""),
            "PostgresStore: expected a URL starting with postgres:// or postgresql://, got \"mysql://h\""
        );
    }

    #[test]
    fn passwords_never_survive_redaction() {
        assert_eq!(redacted("postgres://app:s3cret@db:5432/x"), "postgres://app:***@db:5432/x");
        assert_eq!(redacted("redis://:pw@127.0.0.1:6379/0"), "redis://:***@127.0.0.1:6379/0");
        assert_eq!(
            redacted("postgres://db/x?user=a&password=hunter2&sslmode=require"),
            "postgres://db/x?user=a&***&sslmode=require".replace("&***", "&password=***")
        );
        assert_eq!(redacted("sqlite:/tmp/a.db"), "sqlite:/tmp/a.db");
        assert_eq!(redacted("postgres://app:pw@127.0.0.1:notaport/db"), "postgres://app:***@127.0.0.1:notaport/db");
        assert_eq!(redacted("redis://h:6379/0"), "redis://h:6379/0");
        assert_eq!(redacted("postgres://a:b@c@h/d"), "postgres://a:***@h/d");
        let msg = scrub(
            "password authentication failed for s3cret at postgres://app:s3cret@db/x",
            "postgres://app:s3cret@db/x",
        );
        assert!(!msg.contains("s3cret"), "{msg}");
        let msg = scrub("bad p@ss", "postgres://app:p%40ss@db/x");
        assert!(!msg.contains("p@ss"), "{msg}");
    }
}
