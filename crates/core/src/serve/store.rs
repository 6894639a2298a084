//! Where served A2A Tasks live (SPEC §7B `TaskStore`): in memory, one file per Task, or a
//! host's own store. Tasks are JSON values (`{ id, contextId?, status, artifacts? }`) kept as
//! they were saved.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::lru::Lru;
use crate::serve::task::{parked_since, task_id};
use crate::syserr::SystemError;

/// A host's own Task store: its `get(id)` and `save(task)` as callbacks (a `get` answering
/// `null` knows no such Task).
pub struct CallbackTaskStore {
    pub get: crate::callback::SharedCallback,
    pub save: crate::callback::SharedCallback,
}

#[async_trait]
impl TaskStore for CallbackTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        match self.get.call(Value::String(id.into())).await? {
            Value::Null => Ok(None),
            task => Ok(Some(task)),
        }
    }

    async fn save(&self, task: Value) -> Result<()> {
        self.save.call(task).await.map(|_| ())
    }
}

/// Persistence for served Tasks: `get` by id (`None` when unknown) and `save` (by the Task's
/// own `id`).
#[async_trait]
pub trait TaskStore: Send + Sync {
    async fn get(&self, id: &str) -> Result<Option<Value>>;
    async fn save(&self, task: Value) -> Result<()>;
    /// Save a Task this server is running (a durable store leases it meanwhile).
    async fn save_own(&self, task: Value) -> Result<()> {
        self.save(task).await
    }
    /// Take up Task `id`, parked for input since `parked_at`: write `working` over it only if
    /// it is still that parking. `true` when this call did; `false` when another resume (here or
    /// in another process) took it up first, or it is no longer parked there (nothing written).
    /// A store of the host's own takes it up once in this process; the others compare and set
    /// on what they hold, so one taker wins across processes.
    async fn take_parked(&self, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        if !crate::suspension::claim_locally(&format!("task:{id}@{parked_at}")) {
            return Ok(false);
        }
        self.save_own(working).await.map(|_| true)
    }
}

pub type SharedTaskStore = Arc<dyn TaskStore>;

/// How many Tasks an in-memory store keeps by default; beyond it, the least recently used
/// finished one is let go (a Task still running never is).
pub const MEMORY_TASKS: usize = 1_000;

/// Tasks in memory, at most `cap` finished ones.
pub struct InMemoryTaskStore {
    tasks: Mutex<Lru<Value>>,
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        InMemoryTaskStore::with_cap(MEMORY_TASKS)
    }
}

impl InMemoryTaskStore {
    pub fn new() -> InMemoryTaskStore {
        InMemoryTaskStore::default()
    }

    /// A store of at most `cap` Tasks (more while more are running).
    pub fn with_cap(cap: usize) -> InMemoryTaskStore {
        InMemoryTaskStore { tasks: Mutex::new(Lru::new(cap)) }
    }
}

/// Whether a Task is still running (submitted, working, or parked for input or auth): such a
/// Task is never let go to make room.
pub fn running(task: &Value) -> bool {
    matches!(
        task.get("status").and_then(|s| s.get("state")).and_then(Value::as_str),
        Some("submitted" | "working" | "input-required" | "auth-required")
    )
}

impl Drop for InMemoryTaskStore {
    /// Tasks may nest deep (a run's result is kept as it came): they go without recursing,
    /// wherever the store is let go.
    fn drop(&mut self) {
        let tasks = self.tasks.get_mut().unwrap_or_else(PoisonError::into_inner).drain();
        for task in tasks {
            crate::json::release(task);
        }
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        Ok(self.tasks.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned())
    }

    async fn save(&self, task: Value) -> Result<()> {
        let id = task_id(&task);
        let gone = self.tasks.lock().unwrap_or_else(PoisonError::into_inner).insert(id, task, running);
        for old in gone {
            crate::json::release(old);
        }
        Ok(())
    }

    async fn take_parked(&self, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        if !tasks.get(id).is_some_and(|t| parked_since(t, parked_at)) {
            return Ok(false);
        }
        let gone = tasks.insert(id.to_string(), working, running);
        drop(tasks);
        for old in gone {
            crate::json::release(old);
        }
        Ok(true)
    }
}

/// One `<name>.json` per Task under a directory, written whole to a temporary file that is
/// then renamed over the target, so a reader never sees half a Task.
pub struct FileTaskStore {
    dir: PathBuf,
}

impl FileTaskStore {
    /// The store over `dir`, created (with its parents) when missing.
    pub fn new(dir: impl Into<PathBuf>) -> Result<FileTaskStore> {
        let dir = dir.into();
        // As `fs.mkdirSync(dir, { recursive: true })` fails: an empty path names nothing.
        let made = if dir.as_os_str().is_empty() { Err(not_found()) } else { std::fs::create_dir_all(&dir) };
        made.map_err(|e| Error::System(SystemError::fs(&e, "mkdir", Some(&dir.to_string_lossy()))))?;
        sweep_leftovers(&dir, LEFTOVER_AGE);
        Ok(FileTaskStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of Task `id`.
    pub fn file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", file_stem(id)))
    }
}

/// How old a temporary file must be before a new store over its directory removes it: a
/// writer that died between writing and renaming left it; one still writing is younger.
pub const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether `name` is one of [`FileTaskStore::save`]'s temporary names (`<stem>.json.<16 hex>.tmp`).
fn is_leftover_name(name: &str) -> bool {
    let Some(rest) = name.strip_suffix(".tmp") else { return false };
    let Some((stem, hex)) = rest.rsplit_once('.') else { return false };
    stem.ends_with(".json") && hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Remove the temporary files in `dir` older than `age` (best effort: what cannot be read or
/// removed stays).
pub fn sweep_leftovers(dir: &Path, age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_leftover_name) {
            continue;
        }
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|e| e >= age);
        if old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// ENOENT, as the system reports it.
fn not_found() -> std::io::Error {
    #[cfg(unix)]
    return std::io::Error::from_raw_os_error(libc::ENOENT);
    #[cfg(not(unix))]
    return std::io::Error::from(std::io::ErrorKind::NotFound);
}

/// A file name for an id, one per id: ASCII lowercase letters, digits and `-` stay as they
/// are (`abc-123` is `abc-123`); every other byte of its UTF-8, `_` included, is written
/// `_XX` (uppercase hex). `_` only ever starts an escape, so two ids never share a name, and
/// no name holds a path separator, a dot segment, or letters that differ only by case (names
/// stay distinct on a case-insensitive file system). On Windows a name that would be a DOS
/// device (`con`, `nul`, `com1`, ... which Windows opens as the device whatever the extension)
/// has its first letter escaped too (`con` is `_63on`), which no other id can be written as.
pub fn file_stem(id: &str) -> String {
    stem(id, cfg!(windows))
}

fn stem(id: &str, dos_names: bool) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    if dos_names && is_dos_device(&out) {
        let first = out.as_bytes()[0];
        out.replace_range(..1, &format!("_{first:02X}"));
    }
    out
}

/// Whether Windows takes this (lowercase) name as a device rather than a file.
fn is_dos_device(name: &str) -> bool {
    let b = name.as_bytes();
    matches!(name, "con" | "prn" | "aux" | "nul")
        || (b.len() == 4 && (name.starts_with("com") || name.starts_with("lpt")) && b[3].is_ascii_digit())
}

#[async_trait]
impl TaskStore for FileTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        let path = self.file(id);
        // Any failure to read or parse is "no such Task", as the reference's store has it.
        let before = crate::json::deepest();
        let task = match tokio::fs::read(&path).await {
            Ok(bytes) => crate::json::parse_slice::<Value>(&bytes).ok(),
            Err(_) => None,
        };
        crate::json::settle_depth(before).await;
        Ok(task)
    }

    async fn save(&self, task: Value) -> Result<()> {
        let target = self.file(&task_id(&task));
        let text = crate::json::to_string(&task);
        crate::json::release(task);
        // A temporary name of its own per write: two saves of one Task never share one.
        let tmp = target.with_extension(format!("json.{:016x}.tmp", rand::random::<u64>()));
        let written = async {
            tokio::fs::write(&tmp, text.as_bytes()).await?;
            tokio::fs::rename(&tmp, &target).await
        }
        .await;
        if let Err(e) = written {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(Error::Invalid(format!("FileTaskStore: saving {}: {e}", target.display())));
        }
        Ok(())
    }

    /// Under a lock file `<task>.lock`, made only if absent (every process sharing the
    /// directory sees it) and removed after: read the Task, and write `working` if it is still
    /// parked there. A lock older than [`STALE_LOCK`] was left by a process that died holding it.
    async fn take_parked(&self, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        let lock = self.dir.join(format!("{}.lock", file_stem(id)));
        let mut tries = 0;
        loop {
            match tokio::fs::OpenOptions::new().write(true).create_new(true).open(&lock).await {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&lock)
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age >= STALE_LOCK);
                    if !stale || tries > 0 {
                        // Another resume holds it: that one takes the Task up, if anyone does.
                        return Ok(false);
                    }
                    tries += 1;
                    let _ = tokio::fs::remove_file(&lock).await;
                }
                Err(e) => return Err(Error::Invalid(format!("FileTaskStore: locking {}: {e}", lock.display()))),
            }
        }
        let taken = match self.get(id).await {
            Ok(Some(t)) if parked_since(&t, parked_at) => self.save(working).await.map(|_| true),
            Ok(_) => Ok(false),
            Err(e) => Err(e),
        };
        let _ = tokio::fs::remove_file(&lock).await;
        taken
    }
}

/// How old a Task's lock file must be to be taken as left by a process that died holding it
/// (a live holder keeps it for one read and one write).
pub const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(30);

/// A `store` value that is neither a selector nor a store: every call fails as calling a
/// missing method would.
struct NotAStore;

#[async_trait]
impl TaskStore for NotAStore {
    async fn get(&self, _id: &str) -> Result<Option<Value>> {
        Err(Error::Invalid("store.get is not a function".into()))
    }
    async fn save(&self, _task: Value) -> Result<()> {
        Err(Error::Invalid("store.save is not a function".into()))
    }
}

/// What an `a2a.store` selector names.
pub enum StoreChoice {
    Memory,
    File(String),
    /// A durable engine's URL (`sqlite:`, `postgres://`, `redis://`...).
    Url(String),
}

/// Read a `store` selector: absent or `"memory"` ⇒ in memory, `"file:<dir>"` ⇒ a file store
/// over `<dir>`, any other text fails as the reference does.
pub fn store_choice(selector: Option<&str>) -> Result<StoreChoice> {
    match selector {
        None | Some("memory") => Ok(StoreChoice::Memory),
        Some(s) if crate::store::StoreUrl::is_store_url(s) => Ok(StoreChoice::Url(s.to_string())),
        Some(s) => match s.strip_prefix("file:") {
            Some(dir) => Ok(StoreChoice::File(dir.to_string())),
            None => Err(Error::Invalid(format!("Unknown A2A store: \"{s}\" (expected \"memory\" or \"file:<dir>\")"))),
        },
    }
}

/// The store an `a2a.store` value (as JSON) gives: a selector (see [`store_choice`]); `null`
/// counts as absent. A value of any other kind (only a host can hand over an object that is a
/// store) makes a store whose every call fails.
pub fn resolve_store(store: Option<&Value>) -> Result<SharedTaskStore> {
    let selector = match store {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Ok(Arc::new(NotAStore)),
    };
    Ok(match store_choice(selector)? {
        StoreChoice::Memory => Arc::new(InMemoryTaskStore::new()),
        StoreChoice::File(dir) => Arc::new(FileTaskStore::new(dir)?),
        StoreChoice::Url(url) => Arc::new(DurableTaskStore::new(&url)),
    })
}

/// Tasks on a durable engine (a store URL), reached on first use; shared by every process
/// that opens the same URL. A Task saved by another process since this one last read or wrote
/// it is not overwritten: the save fails with `ESTORECONFLICT`.
pub struct DurableTaskStore(Arc<super::lease::Leased>);

impl DurableTaskStore {
    pub fn new(url: &str) -> DurableTaskStore {
        DurableTaskStore::with_lease_ms(url, super::lease::lease_ms())
    }

    /// A store whose leases last `ms` (the default comes from `TOOLNEXUS_TASK_LEASE_MS`).
    pub fn with_lease_ms(url: &str, ms: u64) -> DurableTaskStore {
        DurableTaskStore(super::lease::Leased::new(crate::store::records(url, crate::store::Kind::Task), ms))
    }
}

/// A Task a server is running holds a lease while it runs (see `lease`): one whose server
/// stopped is read back `failed` once its lease has run out.
#[async_trait]
impl TaskStore for DurableTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Value>> {
        self.0.get(id).await
    }

    async fn save(&self, task: Value) -> Result<()> {
        self.0.save(task).await
    }

    async fn save_own(&self, task: Value) -> Result<()> {
        self.0.save_own(task).await
    }

    async fn take_parked(&self, id: &str, parked_at: &str, working: Value) -> Result<bool> {
        self.0.take_parked(id, parked_at, working).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_memory_store_lets_finished_tasks_go_and_keeps_running_ones() {
        let store = InMemoryTaskStore::with_cap(2);
        let task = |id: &str, state: &str| serde_json::json!({"id": id, "status": {"state": state}});
        store.save(task("w1", "working")).await.unwrap();
        store.save(task("w2", "input-required")).await.unwrap();
        store.save(task("d1", "completed")).await.unwrap();
        store.save(task("d2", "failed")).await.unwrap();
        // Both running Tasks stay; of the finished ones only the newest fits.
        assert!(store.get("w1").await.unwrap().is_some());
        assert!(store.get("w2").await.unwrap().is_some());
        assert!(store.get("d1").await.unwrap().is_none());
        assert!(store.get("d2").await.unwrap().is_some());
        // A running Task that finishes may go when room is needed.
        store.save(task("w1", "completed")).await.unwrap();
        store.save(task("d3", "completed")).await.unwrap();
        assert_eq!(store.tasks.lock().unwrap().len(), 2);
        assert!(store.get("w2").await.unwrap().is_some());
        assert!(store.get("d3").await.unwrap().is_some());
    }

    #[test]
    fn leftover_temporary_files_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let keep = ["a.json", "a.json.tmp", "a.json.0123456789abcdeX.tmp", "notes.txt", "b.json.0123.tmp"];
        for name in keep.iter().chain(["a.json.0123456789abcdef.tmp", "_41.json.fedcba9876543210.tmp"].iter()) {
            std::fs::write(dir.path().join(name), "{").unwrap();
        }
        // Young leftovers stay (their writer may still be about to rename them).
        assert_eq!(sweep_leftovers(dir.path(), LEFTOVER_AGE), 0);
        assert_eq!(sweep_leftovers(dir.path(), std::time::Duration::ZERO), 2);
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut want: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(left, want);
    }

    #[test]
    fn file_names_keep_plain_ids_and_never_collide() {
        assert_eq!(file_stem("abc-123"), "abc-123");
        assert_eq!(file_stem("a/b"), "a_2Fb");
        assert_eq!(file_stem("a_b"), "a_5Fb");
        assert_eq!(file_stem("A"), "_41");
        assert_eq!(file_stem(".."), "_2E_2E");
        assert_eq!(file_stem("é"), "_C3_A9");
        // Device names are escaped on Windows, where they are not files, and only there (a
        // store written elsewhere keeps its names).
        for (id, windows) in
            [("con", "_63on"), ("nul", "_6Eul"), ("com1", "_63om1"), ("lpt9", "_6Cpt9"), ("aux", "_61ux")]
        {
            assert_eq!(stem(id, true), windows);
            assert_eq!(stem(id, false), id);
        }
        for id in ["cons", "com", "comx", "con-1", "CON"] {
            assert_eq!(stem(id, true), stem(id, false), "{id}");
        }
        let ids = ["a/b", "a_b", "a_2Fb", "a\\b", "A_b", "a.b", "a b", ""];
        let names: std::collections::HashSet<String> = ids.iter().map(|i| file_stem(i)).collect();
        assert_eq!(names.len(), ids.len());
    }

    #[test]
    fn selectors() {
        assert!(matches!(store_choice(None), Ok(StoreChoice::Memory)));
        assert!(matches!(store_choice(Some("memory")), Ok(StoreChoice::Memory)));
        assert!(matches!(store_choice(Some("file:/x")), Ok(StoreChoice::File(d)) if d == "/x"));
        let e = store_choice(Some("redis:x")).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e, "Unknown A2A store: \"redis:x\" (expected \"memory\" or \"file:<dir>\")");
    }
}
