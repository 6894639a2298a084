//! The SQL both SQL engines run (SQLite and PostgreSQL read the same statements; only the
//! parameter marks differ: `?N` there, `$N` here, written `$N` and rewritten for SQLite).
//!
//! One table of records keyed by (kind, id), with a version per record, and one table naming
//! the layout version. Bodies are TEXT, not a JSON column type: a JSON value keeps its key
//! order as it was saved.

pub const CREATE_SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS toolnexus_schema (name TEXT PRIMARY KEY, version BIGINT NOT NULL)";
pub const CLAIM_SCHEMA: &str =
    "INSERT INTO toolnexus_schema (name, version) VALUES ('records', $1) ON CONFLICT (name) DO NOTHING";
pub const READ_SCHEMA: &str = "SELECT version FROM toolnexus_schema WHERE name = 'records'";
pub const CREATE_RECORDS: &str = "CREATE TABLE IF NOT EXISTS toolnexus_records (\
     kind TEXT NOT NULL, id TEXT NOT NULL, version BIGINT NOT NULL, body TEXT NOT NULL, \
     updated_at BIGINT NOT NULL, PRIMARY KEY (kind, id))";
/// Fails when a table of that name exists without these columns (someone else's).
pub const PROBE_RECORDS: &str = "SELECT kind, id, version, body, updated_at FROM toolnexus_records WHERE 1 = 0";

pub const LOAD: &str = "SELECT version, body FROM toolnexus_records WHERE kind = $1 AND id = $2";
/// A write over whatever is stored.
pub const WRITE_ANY: &str = "INSERT INTO toolnexus_records (kind, id, version, body, updated_at) \
     VALUES ($1, $2, 1, $3, $4) ON CONFLICT (kind, id) DO UPDATE SET \
     version = toolnexus_records.version + 1, body = excluded.body, updated_at = excluded.updated_at \
     RETURNING version";
/// A first write: no row back when the record already exists.
pub const WRITE_NEW: &str = "INSERT INTO toolnexus_records (kind, id, version, body, updated_at) \
     VALUES ($1, $2, 1, $3, $4) ON CONFLICT (kind, id) DO NOTHING RETURNING version";
/// A write over version `$5`: no row back when the stored version is another.
pub const WRITE_OVER: &str = "UPDATE toolnexus_records SET version = version + 1, body = $3, updated_at = $4 \
     WHERE kind = $1 AND id = $2 AND version = $5 RETURNING version";

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
