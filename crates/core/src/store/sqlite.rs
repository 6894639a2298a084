//! SQLite: one file, WAL, every write one transaction. A process that dies mid-write leaves
//! the previous state (SQLite's journal); `synchronous = NORMAL` keeps a commit from waiting
//! on the disk, so an operating-system crash may lose the last commits but never mixes two.
//! Calls run on the runtime's blocking pool; the connection is shared by the process.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};

use super::engine::{newer_schema, schema, unavailable, Engine, Expect, Kind, SCHEMA_VERSION};
use super::sql;
use crate::error::Result;

pub struct SqliteEngine {
    label: String,
    conn: Arc<Mutex<Connection>>,
    /// The file opened, and which file it is: a write checks it is still there, since SQLite
    /// goes on writing to a file removed (or replaced) under it, where no one will read it.
    path: PathBuf,
    identity: Option<FileId>,
}

/// A file's identity on its file system (device and inode; elsewhere, only that it exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

fn file_id(path: &std::path::Path) -> Option<FileId> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(FileId(meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some(FileId(0, 0))
    }
}

impl SqliteEngine {
    /// Open (creating when missing) the file at `path` and its layout. Blocking.
    pub fn open(path: PathBuf, label: String) -> Result<SqliteEngine> {
        // An empty path is SQLite's private temporary database, and ":memory:" its in-memory
        // one: neither outlives the process, so neither is a durable store.
        let name = path.as_os_str();
        if name.is_empty() || name == ":memory:" {
            return Err(unavailable(&label, "the URL names no file: write sqlite:<path>, as in sqlite:./state.db"));
        }
        let mut conn = Connection::open(&path).map_err(|e| unavailable(&label, e))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(|e| unavailable(&label, e))?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| unavailable(&label, e))?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| unavailable(&label, e))?;
        prepare(&mut conn, &label)?;
        let identity = file_id(&path);
        Ok(SqliteEngine { label, conn: Arc::new(Mutex::new(conn)), path, identity })
    }

    /// After a write: the file written is still the one at the path.
    fn still_there(&self) -> Result<()> {
        if self.identity.is_some() && file_id(&self.path) != self.identity {
            return Err(unavailable(
                &self.label,
                format!(
                    "the database file {} was removed or replaced since it was opened; what was written there is lost",
                    self.path.display()
                ),
            ));
        }
        Ok(())
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T> {
        let conn = self.conn.clone();
        let label = self.label.clone();
        let run = move || {
            let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&conn).map_err(|e| unavailable(&label, e))
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => rt.spawn_blocking(run).await.map_err(|e| unavailable(&self.label, e))?,
            Err(_) => run(),
        }
    }
}

/// Create the layout (once per file), or check the one found.
fn prepare(conn: &mut Connection, label: &str) -> Result<()> {
    // BEGIN IMMEDIATE: the write lock is taken before the layout is read, so two processes
    // opening a new file never both create it.
    let tx =
        conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(|e| unavailable(label, e))?;
    tx.execute(sql::CREATE_SCHEMA, []).map_err(|e| schema(label, sql::foreign("toolnexus_schema", e)))?;
    tx.execute(&sql::for_sqlite(sql::CLAIM_SCHEMA), params![SCHEMA_VERSION])
        .map_err(|e| schema(label, sql::foreign("toolnexus_schema", e)))?;
    let found: i64 = tx
        .query_row(sql::READ_SCHEMA, [], |r| r.get(0))
        .map_err(|e| schema(label, sql::foreign("toolnexus_schema", e)))?;
    if found > SCHEMA_VERSION {
        return Err(newer_schema(label, found));
    }
    tx.execute(sql::CREATE_RECORDS, []).map_err(|e| schema(label, sql::foreign("toolnexus_records", e)))?;
    tx.prepare(sql::PROBE_RECORDS).map_err(|e| schema(label, sql::foreign("toolnexus_records", e)))?;
    // A file of the first layout gets its expiry column (SQLite has no ADD COLUMN IF NOT EXISTS).
    if tx.prepare(sql::PROBE_EXPIRY).is_err() {
        tx.execute(sql::ADD_EXPIRY, []).map_err(|e| schema(label, sql::foreign("toolnexus_records", e)))?;
    }
    tx.execute(sql::INDEX_EXPIRY, []).map_err(|e| schema(label, sql::foreign("toolnexus_records", e)))?;
    tx.commit().map_err(|e| unavailable(label, e))
}

#[async_trait]
impl Engine for SqliteEngine {
    fn label(&self) -> &str {
        &self.label
    }

    async fn load(&self, kind: Kind, id: &str) -> Result<Option<(i64, String)>> {
        let id = id.to_string();
        self.with(move |c| {
            c.prepare_cached(&sql::for_sqlite(sql::LOAD))?
                .query_row(params![kind.as_str(), id, sql::now_ms()], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .await
    }

    async fn write(
        &self,
        kind: Kind,
        id: &str,
        body: String,
        expect: Expect,
        expires: Option<i64>,
    ) -> Result<Option<i64>> {
        let id = id.to_string();
        let written = self
            .with(move |c| {
                let now = sql::now_ms();
                let k = kind.as_str();
                match expect {
                    Expect::Any => c
                        .prepare_cached(&sql::for_sqlite(sql::WRITE_ANY))?
                        .query_row(params![k, id, body, now, expires], |r| r.get(0))
                        .optional(),
                    Expect::Absent => c
                        .prepare_cached(&sql::for_sqlite(sql::WRITE_NEW))?
                        .query_row(params![k, id, body, now, expires], |r| r.get(0))
                        .optional(),
                    Expect::Version(v) => c
                        .prepare_cached(&sql::for_sqlite(sql::WRITE_OVER))?
                        .query_row(params![k, id, body, now, expires, v], |r| r.get(0))
                        .optional(),
                }
            })
            .await?;
        self.still_there()?;
        Ok(written)
    }

    async fn delete(&self, kind: Kind, id: &str) -> Result<bool> {
        let id = id.to_string();
        let n = self
            .with(move |c| c.prepare_cached(&sql::for_sqlite(sql::DELETE))?.execute(params![kind.as_str(), id]))
            .await?;
        self.still_there()?;
        Ok(n > 0)
    }

    async fn delete_prefix(&self, kind: Kind, prefix: &str) -> Result<u64> {
        let prefix = prefix.to_string();
        let n = self
            .with(move |c| {
                c.prepare_cached(&sql::for_sqlite(sql::DELETE_PREFIX))?.execute(params![kind.as_str(), prefix])
            })
            .await?;
        self.still_there()?;
        Ok(n as u64)
    }

    async fn sweep(&self, now: i64) -> Result<u64> {
        let before = now.saturating_sub(super::engine::CLAIM_RETENTION_MS);
        let n =
            self.with(move |c| c.prepare_cached(&sql::for_sqlite(sql::SWEEP))?.execute(params![now, before])).await?;
        Ok(n as u64)
    }
}
