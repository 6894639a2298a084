//! `grep` and `glob`: a walk of the tree under a directory, then a content search (ripgrep's
//! searcher) or a name match.
//!
//! The walk lists regular files only, skips every directory named `node_modules` or `.git`,
//! follows no symbolic link and reads no ignore file: hidden files and files a `.gitignore`
//! names are listed like any other. Its order is fixed: a directory's files in byte order,
//! then its subdirectories, the last name first.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use grep_matcher::Matcher;
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkMatch};
use regex::Regex;
use serde_json::{json, Value};

use super::jsregex::{content_matcher, ContentMatcher};
use super::{arg_number, arg_text, arg_text_if_truthy, node_rules, number_value, ok_with, BoxFut, Builtin};
use crate::jsstr;
use crate::tool::{SharedTool, ToolContext};
use crate::types::ToolResult;

/// Directory names the walk never enters.
const SKIPPED_DIRS: [&str; 2] = ["node_modules", ".git"];

pub fn grep_tool() -> SharedTool {
    Builtin::shared(
        "grep",
        "Search file contents by regex under a directory. Output is file:line:text matches.",
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "Regular expression to search for" },
                "path": { "type": "string", "description": "Directory to search (default: process cwd)" },
                "include": { "type": "string", "description": "Glob filter for file names" },
                "limit": { "type": "number", "description": "Maximum number of matches (default 100)" }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        run_grep,
    )
}

pub fn glob_tool() -> SharedTool {
    Builtin::shared(
        "glob",
        "List files matching a glob under a directory. Output is newline-joined relative paths.",
        json!({
            "type": "object",
            "properties": {
                "pattern": { "type": "string", "description": "Glob pattern to match" },
                "path": { "type": "string", "description": "Directory to search (default: process cwd)" },
                "limit": { "type": "number", "description": "Maximum number of results (default 100)" }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        run_glob,
    )
}

fn run_grep(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let pattern = arg_text(&args, "pattern");
        if pattern.is_empty() {
            return Ok(ToolResult::error("grep: pattern is required"));
        }
        let matcher = match content_matcher(&pattern) {
            Ok(m) => m,
            Err(e) => return Ok(ToolResult::error(format!("grep: invalid regex: {e}"))),
        };
        let root = arg_text_if_truthy(&args, "path").unwrap_or_else(node_rules::cwd);
        let include = arg_text_if_truthy(&args, "include");
        let limit = arg_number(&args, "limit").unwrap_or(100.0);
        let matches = tokio::task::spawn_blocking(move || match &matcher {
            ContentMatcher::Fast(m) => grep(m, &root, include.as_deref(), limit),
            ContentMatcher::Ecma(m) => grep(m, &root, include.as_deref(), limit),
        })
        .await
        .map_err(|e| e.to_string())??;
        let count = matches.len();
        Ok(ok_with(matches.join("\n"), json!({ "count": count })))
    })
}

fn run_glob(args: Value, _ctx: ToolContext) -> BoxFut {
    Box::pin(async move {
        let pattern = arg_text(&args, "pattern");
        if pattern.is_empty() {
            return Ok(ToolResult::error("glob: pattern is required"));
        }
        let root = arg_text_if_truthy(&args, "path").unwrap_or_else(node_rules::cwd);
        let limit = arg_number(&args, "limit").unwrap_or(100.0);
        let mut found =
            tokio::task::spawn_blocking(move || glob(&pattern, &root, limit)).await.map_err(|e| e.to_string())?;
        sort_utf16(&mut found);
        let count = (found.len() as f64).min(limit);
        let shown = if limit > 0.0 { (limit.trunc() as usize).min(found.len()) } else { 0 };
        Ok(ok_with(found[..shown].join("\n"), json!({ "count": number_value(count) })))
    })
}

// ---- the walk ----------------------------------------------------------------------------

/// A regular file under the root.
struct Walked {
    /// The directory it is in.
    dir: Arc<Path>,
    name: OsString,
    /// The path relative to the root, `/`-separated (a name that is not UTF-8 lossily).
    rel: String,
    /// Whether every component is valid UTF-8 (a name that is not cannot be opened again
    /// from its text form).
    named_in_utf8: bool,
}

impl Walked {
    fn path(&self) -> PathBuf {
        self.dir.join(&self.name)
    }
}

/// Every regular file under a root, in the reference's walk order: a stack of directories,
/// each one's entries sorted by name (as libuv's scandir sorts them), its files listed when it
/// is popped and its subdirectories pushed in order, so they are visited last-first.
/// `node_modules` and `.git` are skipped; links are not followed. A root that is not a
/// readable directory has none. Lazy: a directory is read when the files before it are used.
struct Walk {
    /// Directories still to read, the next on top: (path, relative path, named in UTF-8).
    dirs: Vec<(Arc<Path>, String, bool)>,
    /// The files of the directory read last that are still to come, the next last.
    files: Vec<Walked>,
}

impl Walk {
    fn new(root: &str) -> Self {
        let root = Path::new(root);
        let dirs = if std::fs::metadata(root).is_ok_and(|m| m.is_dir()) {
            vec![(Arc::from(root), String::new(), true)]
        } else {
            Vec::new()
        };
        Walk { dirs, files: Vec::new() }
    }
}

/// `rel/name`, or `name` at the root.
fn child_rel(rel: &str, name: &OsStr) -> String {
    let name = name.to_string_lossy();
    if rel.is_empty() {
        return name.into_owned();
    }
    let mut s = String::with_capacity(rel.len() + 1 + name.len());
    s.push_str(rel);
    s.push('/');
    s.push_str(&name);
    s
}

impl Iterator for Walk {
    type Item = Walked;

    fn next(&mut self) -> Option<Walked> {
        loop {
            if let Some(f) = self.files.pop() {
                return Some(f);
            }
            let (dir, rel, named_in_utf8) = self.dirs.pop()?;
            let Ok(read) = std::fs::read_dir(&dir) else { continue };
            let mut entries: Vec<(OsString, std::fs::FileType)> =
                read.flatten().filter_map(|e| Some((e.file_name(), e.file_type().ok()?))).collect();
            entries.sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
            for (name, kind) in entries {
                if kind.is_dir() {
                    if !SKIPPED_DIRS.iter().any(|d| name == *d) {
                        let utf8 = named_in_utf8 && name.to_str().is_some();
                        self.dirs.push((Arc::from(dir.join(&name)), child_rel(&rel, &name), utf8));
                    }
                } else if kind.is_file() {
                    let utf8 = named_in_utf8 && name.to_str().is_some();
                    let rel = child_rel(&rel, &name);
                    self.files.push(Walked { dir: dir.clone(), name, rel, named_in_utf8: utf8 });
                }
            }
            self.files.reverse();
        }
    }
}

// ---- glob --------------------------------------------------------------------------------

/// A glob as an anchored regex: `**` (and a `/` right after it) is any text, `*` any text
/// without `/`, `?` one character but `/`; everything else is literal.
fn glob_regex(glob: &str) -> Option<Regex> {
    let mut re = String::from("^(?:");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                re.push_str(ANY_TEXT);
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                }
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    re.push_str(")$");
    Regex::new(&re).ok()
}

/// JavaScript's `.*`: any run of characters other than line terminators.
const ANY_TEXT: &str = "[^\\n\\r\\u{2028}\\u{2029}]*";

/// A compiled glob; a slash-less glob is tested against the file's base name.
struct Glob {
    re: Option<Regex>,
    whole_path: bool,
}

impl Glob {
    fn new(glob: &str) -> Self {
        Glob { re: glob_regex(glob), whole_path: glob.contains('/') }
    }

    fn matches(&self, rel: &str) -> bool {
        let Some(re) = &self.re else { return false };
        if self.whole_path {
            re.is_match(rel)
        } else {
            re.is_match(rel.rsplit('/').next().unwrap_or(rel))
        }
    }
}

fn glob(pattern: &str, root: &str, limit: f64) -> Vec<String> {
    let g = Glob::new(pattern);
    let mut found = Vec::new();
    let mut walk = Walk::new(root);
    loop {
        if found.len() as f64 >= limit {
            break;
        }
        let Some(f) = walk.next() else { break };
        if g.matches(&f.rel) {
            found.push(f.rel);
        }
    }
    found
}

/// Sorts paths in JavaScript's order (UTF-16 code units). Without a character at or above
/// U+E000 that is the order of their UTF-8 bytes, which is much cheaper to compare.
fn sort_utf16(paths: &mut [String]) {
    if paths.iter().all(|p| p.bytes().all(|b| b < 0xEE)) {
        paths.sort_unstable();
    } else {
        paths.sort_by(|a, b| node_rules::utf16_cmp(a, b));
    }
}

// ---- grep --------------------------------------------------------------------------------

/// The longest line grep holds while searching a file, in bytes: a file with a longer line
/// (procfs files such as `/proc/self/pagemap` are mostly one endless line of NULs) is skipped.
pub(crate) const GREP_LINE_LIMIT: usize = 16 * 1024 * 1024;

/// A file up to this size is read whole into a buffer its searcher keeps and searched as one
/// slice; a larger one is streamed.
const SMALL_FILE: usize = 1 << 20;

/// Files handed to a searching thread at a time.
const BATCH: usize = 64;

/// What a search gives back: the matches, or V8's message when they would not fit in one
/// string.
type Found = Result<Vec<String>, String>;

/// The matches under `root` in walk order, at most `limit` of them. The walk runs on this
/// thread and hands batches of files to searching threads (as many as there are cores, at
/// most 8); their results are appended in walk order as they come, and the walk and the
/// search stop as soon as the limit is reached.
fn grep<M: Matcher + Sync>(matcher: &M, root: &str, include: Option<&str>, limit: f64) -> Found {
    let filter = include.map(Glob::new);
    let matches_empty_line = matcher.is_match(b"").unwrap_or(false);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let stop = AtomicBool::new(false);
    let (job_tx, job_rx) = mpsc::channel::<(usize, Vec<Walked>)>();
    let job_rx = Mutex::new(job_rx);
    let (found_tx, found_rx) = mpsc::channel::<(usize, Vec<Found>)>();
    let mut joined = Joined { out: Vec::new(), units: 0, limit, next: 0, waiting: HashMap::new(), end: None };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let found_tx = found_tx.clone();
                let (job_rx, stop) = (&job_rx, &stop);
                scope.spawn(move || {
                    let mut search = FileSearch::new(matcher, root, matches_empty_line, limit);
                    loop {
                        let job = job_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((i, files)) = job else { break };
                        if stop.load(Ordering::Relaxed) {
                            continue;
                        }
                        let found = files.iter().map(|f| search.file(f)).collect();
                        if found_tx.send((i, found)).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        drop(found_tx);
        let mut sent = 0;
        let mut batch = Vec::with_capacity(BATCH);
        let mut walk = Walk::new(root);
        while joined.end.is_none() {
            let Some(f) = walk.next() else { break };
            if !(filter.as_ref().is_none_or(|g| g.matches(&f.rel)) && f.named_in_utf8) {
                continue;
            }
            batch.push(f);
            if batch.len() == BATCH {
                let _ = job_tx.send((sent, std::mem::replace(&mut batch, Vec::with_capacity(BATCH))));
                sent += 1;
                while let Ok((i, found)) = found_rx.try_recv() {
                    joined.add(i, found);
                }
            }
        }
        if !batch.is_empty() && joined.end.is_none() {
            let _ = job_tx.send((sent, batch));
            sent += 1;
        }
        drop(job_tx);
        while joined.end.is_none() && joined.next < sent {
            let Ok((i, found)) = found_rx.recv() else { break };
            joined.add(i, found);
        }
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            let _ = w.join();
        }
    });
    match joined.end {
        Some(Err(e)) => Err(e),
        _ => Ok(joined.out),
    }
}

/// The matches of the batches searched so far, appended in walk order.
struct Joined {
    out: Vec<String>,
    /// The UTF-16 length of `out.join("\n")`.
    units: usize,
    limit: f64,
    /// The batch to append next.
    next: usize,
    /// Batches searched before the ones before them.
    waiting: HashMap<usize, Vec<Found>>,
    /// Set when no more is appended: the limit is reached (Ok) or the text is too long.
    end: Option<Result<(), String>>,
}

impl Joined {
    fn add(&mut self, i: usize, found: Vec<Found>) {
        self.waiting.insert(i, found);
        while self.end.is_none() {
            let Some(found) = self.waiting.remove(&self.next) else { return };
            self.next += 1;
            self.append(found);
        }
    }

    fn append(&mut self, found: Vec<Found>) {
        for lines in found {
            if self.out.len() as f64 >= self.limit {
                self.end = Some(Ok(()));
                return;
            }
            let lines = match lines {
                Ok(lines) => lines,
                Err(e) => {
                    self.end = Some(Err(e));
                    return;
                }
            };
            for line in lines {
                if self.out.len() as f64 >= self.limit {
                    self.end = Some(Ok(()));
                    return;
                }
                self.units += usize::from(!self.out.is_empty()) + jsstr::utf16_len(&line);
                if self.units > jsstr::MAX_LENGTH {
                    self.end = Some(Err(jsstr::INVALID_LENGTH.into()));
                    return;
                }
                self.out.push(line);
            }
        }
    }
}

/// One searching thread's searcher and buffers, kept from file to file.
struct FileSearch<'a, M> {
    searcher: Searcher,
    matcher: &'a M,
    root: &'a str,
    matches_empty_line: bool,
    limit: f64,
    /// The bytes of a file, when it is small enough to be held whole.
    bytes: Vec<u8>,
    /// Their text, when they are not valid UTF-8.
    text: String,
}

impl<'a, M: Matcher> FileSearch<'a, M> {
    fn new(matcher: &'a M, root: &'a str, matches_empty_line: bool, limit: f64) -> Self {
        let searcher =
            SearcherBuilder::new().line_number(true).bom_sniffing(false).heap_limit(Some(GREP_LINE_LIMIT)).build();
        FileSearch { searcher, matcher, root, matches_empty_line, limit, bytes: Vec::new(), text: String::new() }
    }

    /// One file's `file:line:text` matches (at most `limit` of them), found in the text
    /// `fs.readFile(file, "utf8")` makes of its bytes. A file `fs.readFile` would refuse (above
    /// 2 GiB, or whose text passes the string limit) is skipped as the reference's failed read
    /// skips it; a file above [`SMALL_FILE`] is streamed, never held whole.
    fn file(&mut self, f: &Walked) -> Found {
        let Ok(mut file) = std::fs::File::open(f.path()) else { return Ok(Vec::new()) };
        let Ok((len, whole)) = read_head(&mut file, &mut self.bytes) else { return Ok(Vec::new()) };
        let mut sink = Collect {
            root: self.root,
            rel: &f.rel,
            file: None,
            out: Vec::new(),
            units: 0,
            overflow: false,
            limit: self.limit,
        };
        let (searched, ends_a_line, newlines) = if whole {
            let bytes = &self.bytes[..len];
            let text = if std::str::from_utf8(bytes).is_ok() {
                bytes
            } else {
                // At most SMALL_FILE units: far below the string limit.
                self.text.clear();
                let mut decoder = jsstr::Utf8Decoder::new();
                decoder.push(bytes, &mut self.text);
                decoder.finish(&mut self.text);
                self.text.as_bytes()
            };
            let searched = self.searcher.search_slice(self.matcher, text, &mut sink);
            let newlines =
                if self.matches_empty_line { text.iter().filter(|&&b| b == b'\n').count() as u64 } else { 0 };
            (searched, matches!(text.last(), None | Some(b'\n')), newlines)
        } else {
            if file.metadata().is_ok_and(|m| m.is_file() && m.len() > node_rules::IO_MAX_LENGTH) {
                return Ok(Vec::new());
            }
            let mut text = TextReader::new(io::Read::chain(&self.bytes[..len], file));
            let searched = self.searcher.search_reader(self.matcher, &mut text, &mut sink);
            (searched, text.ends_a_line(), text.newlines)
        };
        if sink.overflow {
            return Err(jsstr::INVALID_LENGTH.into());
        }
        if searched.is_err() {
            return Ok(Vec::new());
        }
        // Splitting on "\n" leaves an empty last line after a final newline (or in an empty
        // file); a pattern that matches the empty string matches it too.
        if self.matches_empty_line && ends_a_line && (sink.out.len() as f64) < self.limit {
            let file = sink.file.take().unwrap_or_else(|| node_rules::join(self.root, &f.rel));
            sink.out.push(format!("{file}:{}:", newlines + 1));
        }
        Ok(sink.out)
    }
}

/// Reads `file` into `buf` (grown up to [`SMALL_FILE`] bytes, never shrunk) until its end or
/// until `buf` is full: (bytes read, whether that is the whole file).
fn read_head(file: &mut std::fs::File, buf: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    use io::Read;
    let mut len = 0;
    loop {
        if len == buf.len() {
            if buf.len() >= SMALL_FILE {
                return Ok((len, false));
            }
            buf.resize((buf.len() * 2).clamp(64 * 1024, SMALL_FILE), 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => return Ok((len, true)),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A file's bytes as the text `fs.readFile(file, "utf8")` makes of them (invalid sequences
/// replaced), a piece at a time; an error once the text passes the string limit.
struct TextReader<R> {
    file: R,
    raw: Vec<u8>,
    decoder: jsstr::Utf8Decoder,
    text: String,
    pos: usize,
    units: usize,
    newlines: u64,
    last: Option<u8>,
    done: bool,
}

impl<R: io::Read> TextReader<R> {
    fn new(file: R) -> Self {
        TextReader {
            file,
            raw: vec![0; 64 * 1024],
            decoder: jsstr::Utf8Decoder::new(),
            text: String::new(),
            pos: 0,
            units: 0,
            newlines: 0,
            last: None,
            done: false,
        }
    }

    /// Whether the text read so far is empty or ends with a line feed.
    fn ends_a_line(&self) -> bool {
        matches!(self.last, None | Some(b'\n'))
    }
}

impl<R: io::Read> io::Read for TextReader<R> {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.text.len() {
            if self.done {
                return Ok(0);
            }
            self.text.clear();
            self.pos = 0;
            let n = loop {
                match self.file.read(&mut self.raw) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            self.units += if n == 0 {
                self.done = true;
                self.decoder.finish(&mut self.text)
            } else {
                self.decoder.push(&self.raw[..n], &mut self.text)
            };
            if self.units > jsstr::MAX_LENGTH {
                return Err(io::Error::other(jsstr::INVALID_LENGTH));
            }
            self.newlines += self.text.matches('\n').count() as u64;
            if let Some(&b) = self.text.as_bytes().last() {
                self.last = Some(b);
            }
        }
        let rest = &self.text.as_bytes()[self.pos..];
        let n = rest.len().min(into.len());
        into[..n].copy_from_slice(&rest[..n]);
        self.pos += n;
        Ok(n)
    }
}

/// Collects `file:line:text` for each matching line, up to the limit, or until they could no
/// longer be joined into one string.
struct Collect<'a> {
    root: &'a str,
    rel: &'a str,
    /// The file's name as printed, made at its first match.
    file: Option<String>,
    out: Vec<String>,
    units: usize,
    overflow: bool,
    limit: f64,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let bytes = m.bytes();
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let n = m.line_number().unwrap_or(0);
        let (root, rel) = (self.root, self.rel);
        let file = self.file.get_or_insert_with(|| node_rules::join(root, rel));
        let found = format!("{file}:{n}:{}", String::from_utf8_lossy(line));
        self.units += usize::from(!self.out.is_empty()) + jsstr::utf16_len(&found);
        if self.units > jsstr::MAX_LENGTH {
            self.overflow = true;
            return Ok(false);
        }
        self.out.push(found);
        Ok((self.out.len() as f64) < self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_translate_like_the_reference() {
        let g = |p: &str, rel: &str| Glob::new(p).matches(rel);
        assert!(g("*.ts", "src/deep/a.ts"));
        assert!(!g("src/*.ts", "src/deep/a.ts"));
        assert!(g("src/**/*.ts", "src/a.ts"));
        assert!(g("src/**/*.ts", "src/x/y/a.ts"));
        assert!(g("**/a.ts", "ba.ts"));
        assert!(g("a?c.txt", "abc.txt"));
        assert!(!g("a?c.txt", "a/c.txt"));
        assert!(g("{a,b}.txt", "{a,b}.txt"));
        assert!(!g("{a,b}.txt", "a.txt"));
        assert!(g("[ab].txt", "[ab].txt"));
        assert!(g("a+b(1).txt", "a+b(1).txt"));
        assert!(!g("*.TXT", "a.txt"));
    }
}
