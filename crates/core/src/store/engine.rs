//! What every engine does: versioned JSON records, each under a kind and an id, read whole and
//! written whole with a compare-and-set on the version.

use async_trait::async_trait;

use crate::error::{Error, Result};

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A conversation's transcript (`ask`).
    Conversation,
    /// A served A2A Task.
    Task,
    /// An agent runtime's whole state (its handle tree, inboxes, pools, checkpoints, trace).
    Runtime,
    /// A parked Request taken up by a resume (written once: the first writer wins). The first
    /// layout's; no longer written, and swept after [`CLAIM_RETENTION_MS`].
    Claim,
    /// What a run parked on, recorded by the library (`client::park`): the authority a resume
    /// checks the caller's copy against, and its claim.
    Park,
    /// A remote MCP server's sign-in (`mcp::oauth`): its client registration, its tokens, and
    /// logins waiting for a person.
    Credential,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conversation => "conversation",
            Kind::Task => "task",
            Kind::Runtime => "runtime",
            Kind::Claim => "claim",
            Kind::Park => "park",
            Kind::Credential => "credential",
        }
    }
}

/// The condition a write is made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is stored (a writer that never read this record).
    Any,
    /// Nothing is stored yet.
    Absent,
    /// The stored version is this one (the one this writer last read or wrote).
    Version(i64),
}

/// The layout version this code reads and writes. A store whose recorded version is higher
/// was written by newer code and is refused.
pub const SCHEMA_VERSION: i64 = 1;

/// How long the first layout's claim records are kept before a sweep deletes them.
pub const CLAIM_RETENTION_MS: i64 = 30 * 24 * 3_600_000;

/// One engine's records.
#[async_trait]
pub trait Engine: Send + Sync {
    /// The engine's URL with its password hidden.
    fn label(&self) -> &str;
    /// The record's version and JSON text, `None` when there is none (or it has expired).
    async fn load(&self, kind: Kind, id: &str) -> Result<Option<(i64, String)>>;
    /// Write `body` if `expect` holds: `Some(new version)`, or `None` when another writer got
    /// there first (nothing written). With `expires` (ms since the epoch) the record goes by
    /// itself then; without, it stays until deleted.
    async fn write(
        &self,
        kind: Kind,
        id: &str,
        body: String,
        expect: Expect,
        expires: Option<i64>,
    ) -> Result<Option<i64>>;
    /// Delete the record: `true` when there was one.
    async fn delete(&self, kind: Kind, id: &str) -> Result<bool>;
    /// Delete every record of `kind` whose id starts with `prefix`: how many there were.
    async fn delete_prefix(&self, kind: Kind, prefix: &str) -> Result<u64>;
    /// Delete what has expired by `now` (an engine whose records expire by themselves has
    /// nothing to do): how many records went.
    async fn sweep(&self, now: i64) -> Result<u64>;
}

/// An engine that could not be reached or answered with an error: `message` must already be
/// free of passwords.
pub fn unavailable(label: &str, message: impl std::fmt::Display) -> Error {
    Error::Store { code: "ESTOREUNAVAILABLE", message: format!("store {label}: {message}") }
}

/// A store whose layout this code does not know (newer, or someone else's table).
pub fn schema(label: &str, message: impl std::fmt::Display) -> Error {
    Error::Store { code: "ESTORESCHEMA", message: format!("store {label}: {message}") }
}

/// The refusal of a layout version newer than this code's.
pub fn newer_schema(label: &str, found: i64) -> Error {
    schema(
        label,
        format!("its schema is version {found}, newer than this toolnexus reads ({SCHEMA_VERSION}); upgrade toolnexus to use it"),
    )
}

/// A write that lost a race: another writer changed the record since this one read it.
pub fn conflict(label: &str, kind: Kind, id: &str) -> Error {
    Error::Store {
        code: "ESTORECONFLICT",
        message: format!(
            "store {label}: {} {id:?} was changed by another writer since it was read here; nothing was written",
            kind.as_str()
        ),
    }
}
