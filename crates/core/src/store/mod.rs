//! Durable stores: conversations and served Tasks on real engines (SQLite, PostgreSQL, Redis),
//! named by a URL wherever a store is accepted. Every engine keeps versioned JSON records
//! under a kind and an id; a write names the version it replaces, so two processes writing one
//! record never lose an update silently (the second gets `ESTORECONFLICT`).
//!
//! Order: `url` (which engine, passwords hidden) → `engine` (the trait, errors) → `sql` →
//! the engines (`sqlite`, `postgres`, `redis`) → `open` (lazily, once per URL) → `records`.

pub mod engine;
mod open;
mod postgres;
pub mod records;
mod redis;
mod sql;
mod sqlite;
pub mod url;

pub use engine::{Engine, Expect, Kind};
pub use open::LazyEngine;
pub use records::Records;
pub use url::{redacted, Backend, StoreUrl};

/// Records of `kind` on the engine `url` names (reached on first use).
pub fn records(url: &str, kind: Kind) -> Records {
    Records::new(LazyEngine::new(url), kind)
}
