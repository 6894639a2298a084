//! Path text as Node's `path` module writes it, shared by every source that reports paths the way
//! the reference does (skills, the built-in tools): the posix rules, and on Windows the win32
//! rules Node's default `path` follows there.

#[cfg(not(windows))]
use posix as platform;
#[cfg(windows)]
use win32 as platform;

/// `path.normalize` with the platform's rules.
pub fn normalize(p: &str) -> String {
    platform::normalize(p)
}

/// `path.join(dir, name)` with the platform's rules.
pub fn join(dir: &str, name: &str) -> String {
    platform::join(dir, name)
}

/// `path.dirname` with the platform's rules.
pub fn dirname(p: &str) -> String {
    platform::dirname(p)
}

/// `path.resolve(p)` against the process's working directory, with the platform's rules.
pub fn resolve(p: &str) -> String {
    platform::resolve_from(&cwd(), p)
}

/// The process working directory as text.
pub fn cwd() -> String {
    std::env::current_dir().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|_| "/".into())
}

/// Node's `path.posix`.
pub mod posix {
    use super::segments;

    /// `path.posix.normalize`: collapse repeated separators, resolve `.` and `..` lexically, keep a
    /// leading and a trailing `/`; the empty path is `.`.
    pub fn normalize(p: &str) -> String {
        if p.is_empty() {
            return ".".into();
        }
        let absolute = p.starts_with('/');
        let trailing = p.ends_with('/');
        let mut out = segments(p, |c| c == '/', !absolute).join("/");
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

    /// `path.posix.resolve(p)` against the working directory `cwd`.
    pub fn resolve_from(cwd: &str, p: &str) -> String {
        if p.starts_with('/') {
            return strip_trailing(normalize(p));
        }
        strip_trailing(normalize(&format!("{cwd}/{p}")))
    }

    fn strip_trailing(mut s: String) -> String {
        while s.len() > 1 && s.ends_with('/') {
            s.pop();
        }
        s
    }
}

/// The segments of `rest` (split at any separator `is_sep` accepts) with `.` dropped and `..`
/// taken back lexically; a `..` that would climb above the start is kept when `above_root` allows
/// it (a relative path) and dropped otherwise (`path`'s `normalizeString`).
fn segments(rest: &str, is_sep: fn(char) -> bool, above_root: bool) -> Vec<&str> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in rest.split(is_sep) {
        match seg {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if above_root => parts.push(".."),
                _ => {}
            },
            other => parts.push(other),
        }
    }
    parts
}

/// Node's `path.win32`: both `\` and `/` separate, a path may start with a drive (`C:`) or a UNC
/// share (`\\server\share`), and what it writes uses `\`. The addon uses these on Windows, where
/// Node's default `path` is this one; they are compiled everywhere so their tests run on Linux.
pub mod win32 {
    use super::segments;

    fn is_sep(c: char) -> bool {
        c == '\\' || c == '/'
    }

    fn sep_at(p: &str, i: usize) -> bool {
        p.as_bytes().get(i).is_some_and(|&b| b == b'\\' || b == b'/')
    }

    /// Where a path's root ends: `(device, absolute, rest)`. The device is `C:` or
    /// `\\server\share`, absent for a path rooted at `\` alone or a relative one. `whole_unc` is a
    /// path that is nothing but a UNC share (`\\server\share`), which `normalize` and `dirname`
    /// answer specially.
    struct Root<'a> {
        device: Option<String>,
        absolute: bool,
        rest: &'a str,
        whole_unc: bool,
    }

    fn root(p: &str) -> Root<'_> {
        let b = p.as_bytes();
        let none = Root { device: None, absolute: false, rest: p, whole_unc: false };
        if b.is_empty() {
            return none;
        }
        if sep_at(p, 0) {
            if sep_at(p, 1) {
                // `\\server\share`: both names non-empty, or the path is only rooted at `\`.
                let server_end = p[2..].find(is_sep).map(|i| i + 2);
                if let Some(se) = server_end.filter(|&se| se > 2) {
                    let share_start = p[se..].find(|c| !is_sep(c)).map(|i| i + se);
                    if let Some(ss) = share_start {
                        let share_end = p[ss..].find(is_sep).map_or(p.len(), |i| i + ss);
                        let device = format!("\\\\{}\\{}", &p[2..se], &p[ss..share_end]);
                        let whole_unc = share_end == p.len();
                        return Root { device: Some(device), absolute: true, rest: &p[share_end..], whole_unc };
                    }
                }
                return Root { device: None, absolute: true, rest: p, whole_unc: false };
            }
            return Root { device: None, absolute: true, rest: &p[1..], whole_unc: false };
        }
        if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            let absolute = sep_at(p, 2);
            let rest = if absolute { &p[3..] } else { &p[2..] };
            return Root { device: Some(p[..2].to_string()), absolute, rest, whole_unc: false };
        }
        none
    }

    /// `path.win32.normalize`.
    pub fn normalize(p: &str) -> String {
        if p.is_empty() {
            return ".".into();
        }
        if p.len() == 1 {
            return if p == "/" { "\\".into() } else { p.into() };
        }
        let r = root(p);
        if r.whole_unc {
            return format!("{}\\", r.device.unwrap_or_default());
        }
        let mut tail = segments(r.rest, is_sep, !r.absolute).join("\\");
        if tail.is_empty() && !r.absolute {
            tail.push('.');
        }
        if !tail.is_empty() && p.ends_with(is_sep) {
            tail.push('\\');
        }
        let device = r.device.unwrap_or_default();
        if r.absolute {
            format!("{device}\\{tail}")
        } else {
            format!("{device}{tail}")
        }
    }

    /// `path.win32.join(dir, name)`.
    pub fn join(dir: &str, name: &str) -> String {
        match (dir.is_empty(), name.is_empty()) {
            (true, true) => ".".into(),
            (true, false) => normalize(name),
            (false, true) => normalize(dir),
            (false, false) => normalize(&format!("{dir}\\{name}")),
        }
    }

    /// `path.win32.dirname`.
    pub fn dirname(p: &str) -> String {
        if p.is_empty() {
            return ".".into();
        }
        if p.len() == 1 {
            return if sep_at(p, 0) { p.into() } else { ".".into() };
        }
        let r = root(p);
        if r.whole_unc {
            return p.into();
        }
        // Where the root ends (the dirname of a path with nothing after its root is the root).
        let root_end = p.len() - r.rest.len();
        let root_end = if r.device.as_deref().is_some_and(|d| d.starts_with("\\\\")) {
            // A UNC root keeps the separator after the share.
            (root_end + 1).min(p.len())
        } else {
            root_end
        };
        let b = p.as_bytes();
        let mut end = None;
        let mut matched_sep = true;
        for i in (root_end..b.len()).rev() {
            if b[i] == b'\\' || b[i] == b'/' {
                if !matched_sep {
                    end = Some(i);
                    break;
                }
            } else {
                matched_sep = false;
            }
        }
        match end {
            Some(e) => p[..e].to_string(),
            None if root_end == 0 => ".".into(),
            None => p[..root_end].to_string(),
        }
    }

    /// `path.win32.resolve(p)` against the working directory `cwd` (itself absolute): a path
    /// rooted at `\` takes the working directory's drive, a drive-relative one (`D:x`) the working
    /// directory when it is on that drive and the drive's root otherwise.
    pub fn resolve_from(cwd: &str, p: &str) -> String {
        let r = root(p);
        let full = match (&r.device, r.absolute) {
            (Some(_), true) => p.to_string(),
            (None, true) => {
                let c = root(cwd);
                format!("{}{}", c.device.unwrap_or_default(), p)
            }
            (Some(d), false) => {
                let on_cwd_drive = root(cwd).device.is_some_and(|c| c.eq_ignore_ascii_case(d));
                if on_cwd_drive {
                    format!("{cwd}\\{}", r.rest)
                } else {
                    format!("{d}\\{}", r.rest)
                }
            }
            (None, false) => format!("{cwd}\\{p}"),
        };
        let f = root(&full);
        let tail = segments(f.rest, is_sep, false).join("\\");
        format!("{}\\{tail}", f.device.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::win32;

    // Each row as Node 20's `path.win32` answers it (`D:z` as on Windows, where the working
    // directory is on another drive and no `=D:` variable is set).
    #[test]
    fn win32_normalize_and_dirname_match_node() {
        let rows = [
            ("", ".", "."),
            ("a", "a", "."),
            ("/", "\\", "/"),
            ("\\", "\\", "\\"),
            ("C:", "C:.", "C:"),
            ("c:", "c:.", "c:"),
            ("C:\\", "C:\\", "C:\\"),
            ("C:/", "C:\\", "C:/"),
            ("C:a", "C:a", "C:"),
            ("C:/a//b/../c/", "C:\\a\\c\\", "C:/a//b/.."),
            ("c:a\\..\\..\\b", "c:..\\b", "c:a\\..\\.."),
            ("\\\\srv\\share\\a\\..\\b", "\\\\srv\\share\\b", "\\\\srv\\share\\a\\.."),
            ("\\\\srv\\share", "\\\\srv\\share\\", "\\\\srv\\share"),
            ("\\\\srv\\share\\", "\\\\srv\\share\\", "\\\\srv\\share\\"),
            ("\\\\srv", "\\srv", "\\"),
            ("\\\\\\x", "\\x", "\\\\"),
            ("//srv/share/x/", "\\\\srv\\share\\x\\", "//srv/share/"),
            ("/a/./b", "\\a\\b", "/a/."),
            ("..\\..\\x", "..\\..\\x", "..\\.."),
            ("C:\\..\\x", "C:\\x", "C:\\.."),
            ("C:\\a\\b\\", "C:\\a\\b\\", "C:\\a"),
            ("a/b/", "a\\b\\", "a"),
            ("C:\\users\\x\\sub\\note.txt", "C:\\users\\x\\sub\\note.txt", "C:\\users\\x\\sub"),
            ("\\a", "\\a", "\\"),
            ("dir\\", "dir\\", "."),
            ("x:\\", "x:\\", "x:\\"),
        ];
        for (p, normalized, dir) in rows {
            assert_eq!(win32::normalize(p), normalized, "normalize({p:?})");
            assert_eq!(win32::dirname(p), dir, "dirname({p:?})");
        }
    }

    #[test]
    fn win32_resolve_matches_node() {
        let rows = [
            ("a", "C:\\work\\dir\\a"),
            ("..\\b", "C:\\work\\b"),
            ("\\x\\y", "C:\\x\\y"),
            ("C:z", "C:\\work\\dir\\z"),
            ("D:z", "D:\\z"),
            ("D:\\q\\", "D:\\q"),
            ("c:\\", "c:\\"),
            ("\\\\srv\\share\\a\\", "\\\\srv\\share\\a"),
            ("\\\\srv\\share", "\\\\srv\\share\\"),
            ("", "C:\\work\\dir"),
            (".", "C:\\work\\dir"),
            ("C:\\a\\b\\..\\c\\", "C:\\a\\c"),
        ];
        for (p, resolved) in rows {
            assert_eq!(win32::resolve_from("C:\\work\\dir", p), resolved, "resolve({p:?})");
        }
    }

    #[test]
    fn win32_join_matches_node() {
        let rows = [
            ("C:\\x\\", "y/z", "C:\\x\\y\\z"),
            (".", "a.txt", "a.txt"),
            ("", "", "."),
            ("a", "..", "."),
            ("a", "", "a"),
            ("", "b\\", "b\\"),
            ("C:", "x", "C:\\x"),
        ];
        for (a, b, joined) in rows {
            assert_eq!(win32::join(a, b), joined, "join({a:?}, {b:?})");
        }
    }
}
