//! The SQL both SQL engines run (SQLite and PostgreSQL read the same statements; only the
//! parameter marks differ: `?N` there, `$N` here, written `$N` and rewritten for SQLite).
//!
//! One table of records keyed by (kind, id), with a version per record and, for records that
//! go by themselves, the time they expire; and one table naming the layout version. Bodies are
//! TEXT, not a JSON column type: a JSON value keeps its key order as it was saved.
//!
//! `expires_at` came after the first layout: a table without it gets it (`ADD_EXPIRY`), which
//! code that never reads it does not notice, so the layout version stays 1. An expired record
//! reads as absent and is written over as absent; `SWEEP` deletes them.

pub const CREATE_SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS toolnexus_schema (name TEXT PRIMARY KEY, version BIGINT NOT NULL)";
pub const CLAIM_SCHEMA: &str =
    "INSERT INTO toolnexus_schema (name, version) VALUES ('records', $1) ON CONFLICT (name) DO NOTHING";
pub const READ_SCHEMA: &str = "SELECT version FROM toolnexus_schema WHERE name = 'records'";
pub const CREATE_RECORDS: &str = "CREATE TABLE IF NOT EXISTS toolnexus_records (\
     kind TEXT NOT NULL, id TEXT NOT NULL, version BIGINT NOT NULL, body TEXT NOT NULL, \
     updated_at BIGINT NOT NULL, expires_at BIGINT, PRIMARY KEY (kind, id))";
/// Fails when the table predates `expires_at`.
pub const PROBE_EXPIRY: &str = "SELECT expires_at FROM toolnexus_records WHERE 1 = 0";
/// Gives a table of the first layout its `expires_at`.
pub const ADD_EXPIRY: &str = "ALTER TABLE toolnexus_records ADD COLUMN expires_at BIGINT";
/// Finds what has expired without reading the whole table.
pub const INDEX_EXPIRY: &str = "CREATE INDEX IF NOT EXISTS toolnexus_records_expiry \
     ON toolnexus_records (expires_at) WHERE expires_at IS NOT NULL";
/// Fails when a table of that name exists without these columns (someone else's).
pub const PROBE_RECORDS: &str = "SELECT kind, id, version, body, updated_at FROM toolnexus_records WHERE 1 = 0";

/// A record that has not expired at `$3`.
pub const LOAD: &str = "SELECT version, body FROM toolnexus_records \
     WHERE kind = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)";
/// A write over whatever is stored (`$4` now, `$5` when it expires, NULL for never).
pub const WRITE_ANY: &str = "INSERT INTO toolnexus_records (kind, id, version, body, updated_at, expires_at) \
     VALUES ($1, $2, 1, $3, $4, $5) ON CONFLICT (kind, id) DO UPDATE SET \
     version = toolnexus_records.version + 1, body = excluded.body, updated_at = excluded.updated_at, \
     expires_at = excluded.expires_at RETURNING version";
/// A first write: no row back when the record already exists and has not expired (an expired
/// one is written over, its version going on from where it was).
pub const WRITE_NEW: &str = "INSERT INTO toolnexus_records (kind, id, version, body, updated_at, expires_at) \
     VALUES ($1, $2, 1, $3, $4, $5) ON CONFLICT (kind, id) DO UPDATE SET \
     version = toolnexus_records.version + 1, body = excluded.body, updated_at = excluded.updated_at, \
     expires_at = excluded.expires_at \
     WHERE toolnexus_records.expires_at IS NOT NULL AND toolnexus_records.expires_at <= excluded.updated_at \
     RETURNING version";
/// A write over version `$6`: no row back when the stored version is another.
pub const WRITE_OVER: &str = "UPDATE toolnexus_records SET version = version + 1, body = $3, updated_at = $4, \
     expires_at = $5 WHERE kind = $1 AND id = $2 AND version = $6 RETURNING version";
/// One record gone.
pub const DELETE: &str = "DELETE FROM toolnexus_records WHERE kind = $1 AND id = $2";
/// Every record of a kind whose id starts with `$2`.
pub const DELETE_PREFIX: &str =
    "DELETE FROM toolnexus_records WHERE kind = $1 AND substr(id, 1, length(CAST($2 AS TEXT))) = CAST($2 AS TEXT)";
/// Records that expired by `$1`, and claims (the first layout's resume records, which never
/// expired) written before `$2`.
pub const SWEEP: &str = "DELETE FROM toolnexus_records WHERE (expires_at IS NOT NULL AND expires_at <= $1) \
     OR (kind = 'claim' AND updated_at <= $2)";

/// The message for a table of ours that is not ours.
pub fn foreign(table: &str, e: impl std::fmt::Display) -> String {
    format!("a table named {table} exists and is not toolnexus's ({e}); use another database or schema")
}

/// Milliseconds since the epoch, for `updated_at`.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// `$N` marks as SQLite's `?N`.
pub fn for_sqlite(sql: &str) -> String {
    sql.replace('$', "?")
}
