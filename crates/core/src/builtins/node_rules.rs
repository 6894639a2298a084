//! The JavaScript and Node.js semantics the built-in tools' observable texts depend on:
//! string trimming and replacement, `path` arithmetic, timer clamping and the wording of
//! file-system errors.

use std::cmp::Ordering;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::jsstr;

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

pub use crate::syserr::{error_code, fs_error};

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

/// The largest file `fs.readFile` opens: Node's `kIoMaxLength`, 2 GiB - 1.
pub const IO_MAX_LENGTH: u64 = (1 << 31) - 1;

/// Node's `ERR_FS_FILE_TOO_LARGE`, for a regular file above [`IO_MAX_LENGTH`].
pub fn file_too_large(size: u64) -> String {
    format!("File size ({size}) is greater than 2 GiB")
}

/// The message of Node's `AbortError` from a file-system call whose signal fired.
pub const FS_ABORTED: &str = "The operation was aborted";

/// How much is read from a file at a time.
const READ_CHUNK: usize = 256 * 1024;

/// The lines `read` keeps: those whose 0-based index `i` has `start <= i < end` (the window of
/// `content.split("\n").slice(start, end)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineWindow {
    start: f64,
    end: f64,
}

impl LineWindow {
    /// The window of the `read` tool's `offset` (1-based, truncated, at least 1) and `limit`
    /// (truncated, at least 0; absent means every line from the offset on).
    pub fn new(offset: Option<f64>, limit: Option<f64>) -> Self {
        let start = offset.map_or(1.0, |o| o.trunc().max(1.0)) - 1.0;
        let end = limit.map_or(f64::INFINITY, |l| start + l.trunc().max(0.0));
        LineWindow { start, end }
    }

    fn holds(&self, line: u64) -> bool {
        let i = line as f64;
        i >= self.start && i < self.end
    }
}

/// What a file's text is collected into: all of it, or a window of its lines.
enum Collector {
    Whole(Rope),
    Lines { window: LineWindow, line: u64, out: Rope },
}

impl Collector {
    fn take(&mut self, text: &str) {
        match self {
            Collector::Whole(out) => out.push_str(text),
            Collector::Lines { window, line, out } => {
                for (k, segment) in text.split('\n').enumerate() {
                    if k > 0 {
                        if window.holds(*line) && window.holds(*line + 1) {
                            out.push_str("\n");
                        }
                        *line += 1;
                    }
                    if window.holds(*line) {
                        out.push_str(segment);
                    }
                }
            }
        }
    }

    /// Whether nothing further can enter the window.
    fn full(&self) -> bool {
        match self {
            Collector::Whole(_) => false,
            Collector::Lines { window, line, .. } => *line as f64 >= window.end,
        }
    }

    fn into_text(self) -> String {
        match self {
            Collector::Whole(s) | Collector::Lines { out: s, .. } => s.into_string(),
        }
    }
}

/// The size of a [`Rope`]'s pieces when nothing says how long the text will be.
const ROPE_PIECE: usize = 1 << 20;

/// Text gathered in pieces, so that gathering never moves what is already there: a growing
/// `String` copies itself at each doubling, and near the string limit the copies would cost
/// more memory than the text.
#[derive(Default)]
struct Rope {
    done: Vec<String>,
    current: String,
    len: usize,
}

impl Rope {
    /// A rope whose first piece holds `n` bytes (the size of the file, when it has one).
    fn with_capacity(n: usize) -> Self {
        Rope { current: String::with_capacity(n), ..Default::default() }
    }

    fn push_str(&mut self, s: &str) {
        if self.current.capacity() - self.current.len() < s.len() {
            let next = String::with_capacity(s.len().max(ROPE_PIECE));
            let done = std::mem::replace(&mut self.current, next);
            if !done.is_empty() {
                self.done.push(done);
            }
        }
        self.current.push_str(s);
        self.len += s.len();
    }

    fn into_string(mut self) -> String {
        if self.done.is_empty() {
            if self.current.capacity() - self.current.len() > ROPE_PIECE / 4 {
                self.current.shrink_to_fit();
            }
            return self.current;
        }
        let mut out = String::with_capacity(self.len);
        // Each piece is let go once copied.
        for piece in self.done.drain(..) {
            out.push_str(&piece);
        }
        out.push_str(&self.current);
        out
    }
}

/// `fs.readFile(p, "utf8")`: the text (invalid UTF-8 replaced), or Node's message.
pub async fn read_text(p: &str) -> Result<String, String> {
    read_text_window(p, None, None).await
}

/// `fs.readFile(p, "utf8")`, then (with a window) `.split("\n").slice(...).join("\n")`, without
/// ever holding more than a JavaScript string could: a regular file above 2 GiB is refused
/// from its size as Node refuses it, and any file whose text passes V8's string limit fails
/// with V8's message as soon as it does (a device such as `/dev/zero` included). With a
/// window only its lines are kept. `cancel` ends the read with Node's abort message.
pub async fn read_text_window(
    p: &str,
    window: Option<LineWindow>,
    cancel: Option<CancellationToken>,
) -> Result<String, String> {
    check_path(p)?;
    // The reading thread stops when the caller cancels or stops waiting (this future is dropped).
    let stop = cancel.as_ref().map_or_else(CancellationToken::new, CancellationToken::child_token);
    let _stop_on_drop = stop.clone().drop_guard();
    if stop.is_cancelled() {
        return Err(FS_ABORTED.into());
    }
    let path = p.to_string();
    let reading = stop.clone();
    let job = tokio::task::spawn_blocking(move || read_file(&path, window, &reading));
    tokio::select! {
        r = job => r.map_err(|e| e.to_string())?,
        _ = stop.cancelled() => Err(FS_ABORTED.into()),
    }
}

fn read_file(p: &str, window: Option<LineWindow>, stop: &CancellationToken) -> Result<String, String> {
    use std::io::{Seek, SeekFrom};
    let mut f = open_for_read(p).map_err(|e| fs_error(&e, "open", Some(p)))?;
    let meta = f.metadata().map_err(|e| fs_error(&e, "fstat", None))?;
    // Node trusts the size of a regular file only; anything else (a device, a pipe, a
    // procfs file that says 0) is read until it ends.
    let size = if meta.is_file() { meta.len() } else { 0 };
    if size > IO_MAX_LENGTH {
        return Err(file_too_large(size));
    }
    // A text never has more UTF-16 units than its file has bytes: up to the limit, the size
    // alone says it fits. Above it, one pass that keeps nothing tells.
    let mut known_to_fit = size > 0 && size <= jsstr::MAX_LENGTH as u64;
    if size > jsstr::MAX_LENGTH as u64 {
        pump(&mut f, stop, |_| true)?;
        f.seek(SeekFrom::Start(0)).map_err(|e| fs_error(&e, "read", None))?;
        known_to_fit = true;
    }
    let mut collector = match window {
        None => Collector::Whole(Rope::with_capacity(size as usize)),
        Some(window) => Collector::Lines { window, line: 0, out: Rope::default() },
    };
    pump(&mut f, stop, |text| {
        collector.take(text);
        !(known_to_fit && collector.full())
    })?;
    Ok(collector.into_text())
}

/// Open a file to read it as Node does. On Windows a folder opens too (libuv asks for backup
/// semantics), so reading one fails at the read with `EISDIR`, as in Node, not at the open.
fn open_for_read(p: &str) -> io::Result<std::fs::File> {
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
        std::fs::OpenOptions::new().read(true).custom_flags(FILE_FLAG_BACKUP_SEMANTICS).open(p)
    }
    #[cfg(not(windows))]
    {
        std::fs::File::open(p)
    }
}

/// Read `f` to its end, decoding as it goes, and hand `each` the text of every piece read
/// until it answers false. Fails with V8's message once the text passes the string limit
/// (before the piece that passes it is handed over), or with Node's abort message once `stop`
/// fires.
fn pump(f: &mut std::fs::File, stop: &CancellationToken, mut each: impl FnMut(&str) -> bool) -> Result<(), String> {
    use std::io::Read;
    let mut buf = vec![0u8; READ_CHUNK];
    let mut text = String::new();
    let mut decoder = jsstr::Utf8Decoder::new();
    let mut units = 0usize;
    loop {
        if stop.is_cancelled() {
            return Err(FS_ABORTED.into());
        }
        let n = match f.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fs_error(&e, "read", None)),
        };
        text.clear();
        units += if n == 0 { decoder.finish(&mut text) } else { decoder.push(&buf[..n], &mut text) };
        if units > jsstr::MAX_LENGTH {
            return Err(jsstr::INVALID_LENGTH.into());
        }
        if !each(&text) || n == 0 {
            return Ok(());
        }
    }
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

    fn window(content: &str, offset: Option<f64>, limit: Option<f64>) -> String {
        let mut seen = Vec::new();
        // Fed whole and in every piece size, the window is the same.
        for piece in 0..=content.len() {
            let mut c = Collector::Lines { window: LineWindow::new(offset, limit), line: 0, out: Rope::default() };
            if piece == 0 {
                c.take(content);
            } else {
                for chunk in content.as_bytes().chunks(piece) {
                    c.take(std::str::from_utf8(chunk).unwrap());
                }
            }
            seen.push(c.into_text());
        }
        seen.dedup();
        assert_eq!(seen.len(), 1, "{seen:?}");
        seen.remove(0)
    }

    #[test]
    fn line_windows_clamp_like_slice() {
        let c = "a\nb\nc\n";
        assert_eq!(window(c, Some(2.0), Some(1.0)), "b");
        assert_eq!(window(c, Some(2.0), None), "b\nc\n");
        assert_eq!(window(c, Some(0.0), Some(2.0)), "a\nb");
        assert_eq!(window(c, Some(-3.7), Some(1.9)), "a");
        assert_eq!(window(c, Some(2.9), Some(-1.0)), "");
        assert_eq!(window(c, Some(99.0), Some(5.0)), "");
        assert_eq!(window(c, None, Some(1e300)), c);
        assert_eq!(window(c, Some(1e300), None), "");
        assert_eq!(window("", None, Some(1.0)), "");
        assert_eq!(window("\n\n", Some(2.0), Some(2.0)), "\n");
    }

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
