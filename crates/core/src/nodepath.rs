//! Path text as Node's posix `path` module writes it, shared by every source that reports
//! paths the way the reference does (skills, the built-in tools).

/// `path.posix.normalize`: collapse repeated separators, resolve `.` and `..` lexically, keep a
/// leading and a trailing `/`; the empty path is `.`.
pub fn normalize(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let absolute = p.starts_with('/');
    let trailing = p.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if !absolute => parts.push(".."),
                _ => {}
            },
            other => parts.push(other),
        }
    }
    let mut out = parts.join("/");
    if out.is_empty() && !absolute {
        out.push('.');
    }
    if !out.is_empty() && trailing {
        out.push('/');
    }
    if absolute {
        out.insert(0, '/');
    }
    out
}

/// `path.posix.join(dir, name)`: empty parts are left out, the result normalized.
pub fn join(dir: &str, name: &str) -> String {
    match (dir.is_empty(), name.is_empty()) {
        (true, true) => ".".into(),
        (true, false) => normalize(name),
        (false, true) => normalize(dir),
        (false, false) => normalize(&format!("{dir}/{name}")),
    }
}

/// `path.posix.dirname`.
pub fn dirname(p: &str) -> String {
    let bytes = p.as_bytes();
    if bytes.is_empty() {
        return ".".into();
    }
    let has_root = bytes[0] == b'/';
    let mut end = None;
    let mut matched_slash = true;
    for i in (1..bytes.len()).rev() {
        if bytes[i] == b'/' {
            if !matched_slash {
                end = Some(i);
                break;
            }
        } else {
            matched_slash = false;
        }
    }
    match end {
        None if has_root => "/".into(),
        None => ".".into(),
        Some(1) if has_root => "//".into(),
        // The cut is at an ASCII `/`, so it is a char boundary.
        Some(e) => p.get(..e).unwrap_or(p).to_string(),
    }
}

/// `path.posix.resolve(p)` against the process's working directory.
pub fn resolve(p: &str) -> String {
    if p.starts_with('/') {
        return strip_trailing(normalize(p));
    }
    strip_trailing(normalize(&format!("{}/{p}", cwd())))
}

fn strip_trailing(mut s: String) -> String {
    while s.len() > 1 && s.ends_with('/') {
        s.pop();
    }
    s
}

/// The process working directory as text.
pub fn cwd() -> String {
    std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "/".into())
}
