//! The JavaScript and Node.js semantics the built-in tools' observable texts depend on:
//! string trimming and replacement, `path` arithmetic, timer clamping and the wording of
//! file-system errors.

use std::cmp::Ordering;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Whether `String.prototype.trim` strips this character (WhiteSpace and LineTerminator).
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{A}' | '\u{B}' | '\u{C}' | '\u{D}' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

/// `haystack.replace(needle, replacement)` with a string needle: the first occurrence is
/// replaced and the replacement's `$$`, `$&`, `` $` `` and `$'` patterns are expanded.
pub fn replace_first(haystack: &str, needle: &str, replacement: &str) -> String {
    let Some(pos) = haystack.find(needle) else { return haystack.to_string() };
    let after = pos + needle.len();
    let mut out = String::with_capacity(haystack.len() + replacement.len());
    out.push_str(&haystack[..pos]);
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('$') => out.push('$'),
            Some('&') => out.push_str(needle),
            Some('`') => out.push_str(&haystack[..pos]),
            Some('\'') => out.push_str(&haystack[after..]),
            _ => {
                out.push('$');
                continue;
            }
        }
        chars.next();
    }
    out.push_str(&haystack[after..]);
    out
}

/// The order of JavaScript's default `Array.prototype.sort` for strings: UTF-16 code units.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// The delay `setTimeout(fn, ms)` really waits: anything below 1 or above 2^31-1 is 1 ms.
pub fn timer_delay(ms: f64) -> Duration {
    let ms = if (1.0..=2_147_483_647.0).contains(&ms) { ms.trunc() } else { 1.0 };
    Duration::from_millis(ms as u64)
}

// ---- path --------------------------------------------------------------------------------

pub use crate::nodepath::{cwd, dirname, join, resolve};

// ---- Node's error texts --------------------------------------------------------------------

/// The code and description libuv gives an errno.
fn uv_name(errno: i32) -> Option<(&'static str, &'static str)> {
    #[cfg(unix)]
    {
        let table: &[(i32, &str, &str)] = &[
            (libc::ENOENT, "ENOENT", "no such file or directory"),
            (libc::EACCES, "EACCES", "permission denied"),
            (libc::EPERM, "EPERM", "operation not permitted"),
            (libc::EISDIR, "EISDIR", "illegal operation on a directory"),
            (libc::ENOTDIR, "ENOTDIR", "not a directory"),
            (libc::EEXIST, "EEXIST", "file already exists"),
            (libc::ELOOP, "ELOOP", "too many symbolic links encountered"),
            (libc::ENAMETOOLONG, "ENAMETOOLONG", "name too long"),
            (libc::EMFILE, "EMFILE", "too many open files"),
            (libc::ENFILE, "ENFILE", "file table overflow"),
            (libc::ENOSPC, "ENOSPC", "no space left on device"),
            (libc::EROFS, "EROFS", "read-only file system"),
            (libc::EBUSY, "EBUSY", "resource busy or locked"),
            (libc::EINVAL, "EINVAL", "invalid argument"),
            (libc::EIO, "EIO", "i/o error"),
            (libc::ETXTBSY, "ETXTBSY", "text file is busy"),
            (libc::ENXIO, "ENXIO", "no such device or address"),
            (libc::EFBIG, "EFBIG", "file too large"),
            (libc::ENOTEMPTY, "ENOTEMPTY", "directory not empty"),
            (libc::EXDEV, "EXDEV", "cross-device link not permitted"),
            (libc::EAGAIN, "EAGAIN", "resource temporarily unavailable"),
            (libc::ENOMEM, "ENOMEM", "not enough memory"),
            (libc::EDQUOT, "EDQUOT", "disk quota exceeded"),
            (libc::ENODEV, "ENODEV", "no such device"),
        ];
        table.iter().find(|(n, _, _)| *n == errno).map(|(_, c, d)| (*c, *d))
    }
    #[cfg(not(unix))]
    {
        let _ = errno;
        None
    }
}

/// The code (`ENOENT`...) of an I/O error, as Node names it.
pub fn error_code(e: &io::Error) -> String {
    if let Some((code, _)) = e.raw_os_error().and_then(uv_name) {
        return code.into();
    }
    match e.kind() {
        io::ErrorKind::NotFound => "ENOENT".into(),
        io::ErrorKind::PermissionDenied => "EACCES".into(),
        io::ErrorKind::AlreadyExists => "EEXIST".into(),
        _ => "EIO".into(),
    }
}

/// A Node file-system error message: `CODE: description, syscall 'path'` (the path part only
/// when the call had one).
pub fn fs_error(e: &io::Error, syscall: &str, path: Option<&str>) -> String {
    let (code, desc) = match e.raw_os_error().and_then(uv_name) {
        Some((c, d)) => (c.to_string(), d.to_string()),
        None => (error_code(e), e.to_string()),
    };
    match path {
        Some(p) => format!("{code}: {desc}, {syscall} '{p}'"),
        None => format!("{code}: {desc}, {syscall}"),
    }
}

/// Node's `ERR_INVALID_ARG_VALUE` text: `The argument 'name' <reason>. Received <value>` (a
/// dotted name is a "property"), the shown value cut at 128 characters.
pub fn invalid_arg_value(name: &str, reason: &str, value: &str) -> String {
    let mut shown = inspect(value);
    if shown.chars().count() > 128 {
        shown = shown.chars().take(128).collect::<String>() + "...";
    }
    let kind = if name.contains('.') { "property" } else { "argument" };
    format!("The {kind} '{name}' {reason}. Received {shown}")
}

/// Node's refusal of a path holding a NUL byte.
pub fn null_byte_error(name: &str, value: &str) -> String {
    invalid_arg_value(name, "must be a string, Uint8Array, or URL without null bytes", value)
}

/// Check a path argument the way Node does before any file-system call.
pub fn check_path(p: &str) -> Result<(), String> {
    if p.contains('\0') {
        Err(null_byte_error("path", p))
    } else {
        Ok(())
    }
}

/// `util.inspect` of a string: quoted, with control characters escaped.
pub fn inspect(s: &str) -> String {
    let quote = if !s.contains('\'') {
        '\''
    } else if !s.contains('"') {
        '"'
    } else if !s.contains('`') && !s.contains("${") {
        '`'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{C}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..=0x9f).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

// ---- file operations with Node's messages --------------------------------------------------

/// `fs.readFile(p, "utf8")`: the text (invalid UTF-8 replaced), or Node's message.
pub async fn read_text(p: &str) -> Result<String, String> {
    check_path(p)?;
    let bytes = read_bytes(p).await?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

async fn read_bytes(p: &str) -> Result<Vec<u8>, String> {
    use tokio::io::AsyncReadExt;
    let mut f = tokio::fs::File::open(p).await.map_err(|e| fs_error(&e, "open", Some(p)))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).await.map_err(|e| fs_error(&e, "read", None))?;
    Ok(buf)
}

/// `fs.writeFile(p, content, "utf8")`.
pub async fn write_text(p: &str, content: &str) -> Result<(), String> {
    check_path(p)?;
    use tokio::io::AsyncWriteExt;
    let mut f = tokio::fs::File::create(p).await.map_err(|e| fs_error(&e, "open", Some(p)))?;
    f.write_all(content.as_bytes()).await.map_err(|e| fs_error(&e, "write", None))?;
    f.flush().await.map_err(|e| fs_error(&e, "write", None))?;
    Ok(())
}

/// `fs.mkdir(path.dirname(path.resolve(p)), { recursive: true })`.
pub async fn make_parent_dirs(p: &str) -> Result<(), String> {
    let dir = dirname(&resolve(p));
    if dir.contains('\0') {
        return Err(null_byte_error("path", &dir));
    }
    tokio::fs::create_dir_all(PathBuf::from(&dir)).await.map_err(|e| fs_error(&e, "mkdir", Some(&dir)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepath::normalize;

    #[test]
    fn trim_follows_javascript() {
        assert_eq!(trim("\u{FEFF} a \u{2028}"), "a");
        assert_eq!(trim("\u{85}a"), "\u{85}a");
    }

    #[test]
    fn replace_first_expands_dollar_patterns() {
        assert_eq!(replace_first("a-b-c", "b", "[$&]"), "a-[b]-c");
        assert_eq!(replace_first("a-b-c", "b", "$$"), "a-$-c");
        assert_eq!(replace_first("a-b-c", "b", "$`|$'"), "a-a-|-c-c");
        assert_eq!(replace_first("a-b-c", "b", "$1$<x>$"), "a-$1$<x>$-c");
        assert_eq!(replace_first("abab", "ab", "x"), "xab");
        assert_eq!(replace_first("abc", "z", "x"), "abc");
    }

    #[test]
    fn paths_normalize_like_node() {
        assert_eq!(join(".", "a.txt"), "a.txt");
        assert_eq!(join("./src/", "x/y.ts"), "src/x/y.ts");
        assert_eq!(join("/tmp/x/", "a"), "/tmp/x/a");
        assert_eq!(join("../up", "a"), "../up/a");
        assert_eq!(join("a/..", "b"), "b");
        assert_eq!(normalize("/../a//b/./c/"), "/a/b/c/");
        assert_eq!(normalize("../../a"), "../../a");
        assert_eq!(resolve("/a/b/../c/"), "/a/c");
        assert_eq!(dirname("/a/c"), "/a");
        assert_eq!(dirname("/a"), "/");
    }

    #[test]
    fn timers_clamp_like_set_timeout() {
        assert_eq!(timer_delay(0.0), Duration::from_millis(1));
        assert_eq!(timer_delay(-5.0), Duration::from_millis(1));
        assert_eq!(timer_delay(3e9), Duration::from_millis(1));
        assert_eq!(timer_delay(250.7), Duration::from_millis(250));
    }

    #[test]
    fn inspect_quotes_like_node() {
        assert_eq!(inspect("a\0b"), "'a\\x00b'");
        assert_eq!(inspect("it's"), "\"it's\"");
        assert_eq!(inspect("a\nb"), "'a\\nb'");
    }

    #[test]
    fn utf16_order_differs_from_byte_order_above_the_bmp() {
        assert_eq!(utf16_cmp("\u{FF61}", "\u{1F600}"), Ordering::Greater);
        assert_eq!(utf16_cmp("a", "b"), Ordering::Less);
    }
}
