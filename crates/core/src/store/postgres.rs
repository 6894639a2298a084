//! PostgreSQL: a pool of connections (tokio-postgres under deadpool), TLS when the URL asks for
//! it (`sslmode`), every write one statement (atomic on its own).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};

use super::engine::{newer_schema, schema, unavailable, Engine, Expect, Kind, SCHEMA_VERSION};
use super::sql;
use super::url::scrub;
use crate::error::Result;

/// Connections per pool: one pool per URL per process.
pub const POOL_SIZE: usize = 8;
/// How long a call waits for a free connection, or for a new one to open.
const WAIT: Duration = Duration::from_secs(30);
/// An arbitrary key for the advisory lock that serialises creating the layout.
const LAYOUT_LOCK: i64 = 0x746f_6f6c_6e78;

pub struct PostgresEngine {
    label: String,
    url: String,
    pool: Pool,
}

impl PostgresEngine {
    pub async fn connect(url: &str, label: String) -> Result<PostgresEngine> {
        let config = tokio_postgres::Config::from_str(url)
            .map_err(|e| unavailable(&label, scrub(&crate::error::with_causes(&e), url)))?;
        let tls = match crate::net::tls_config() {
            Some(c) => {
                let mut c = (*c).clone();
                // PostgreSQL names its own protocol in ALPN, if any is sent.
                c.alpn_protocols = vec![b"postgresql".to_vec()];
                tokio_postgres_rustls::MakeRustlsConnect::new(c)
            }
            None => return Err(unavailable(&label, "no TLS configuration could be built")),
        };
        let manager = Manager::from_config(config, tls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .timeouts(Timeouts { wait: Some(WAIT), create: Some(WAIT), recycle: Some(WAIT) })
            .build()
            .map_err(|e| unavailable(&label, scrub(&e.to_string(), url)))?;
        let engine = PostgresEngine { label, url: url.to_string(), pool };
        engine.prepare().await?;
        Ok(engine)
    }

    fn fail(&self, e: impl std::fmt::Display) -> crate::error::Error {
        unavailable(&self.label, scrub(&e.to_string(), &self.url))
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| self.fail(pool_error(e)))
    }

    /// Create the layout (under an advisory lock, so concurrent first uses do not race), or
    /// check the one found.
    async fn prepare(&self) -> Result<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(|e| self.fail(e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LAYOUT_LOCK]).await.map_err(|e| self.fail(e))?;
        let foreign = |table: &str, e: tokio_postgres::Error| {
            schema(&self.label, scrub(&sql::foreign(table, db_message(&e)), &self.url))
        };
        tx.execute(sql::CREATE_SCHEMA, &[]).await.map_err(|e| foreign("toolnexus_schema", e))?;
        tx.execute(sql::CLAIM_SCHEMA, &[&SCHEMA_VERSION]).await.map_err(|e| foreign("toolnexus_schema", e))?;
        let row = tx.query_one(sql::READ_SCHEMA, &[]).await.map_err(|e| foreign("toolnexus_schema", e))?;
        let found: i64 = row.try_get(0).map_err(|e| foreign("toolnexus_schema", e))?;
        if found > SCHEMA_VERSION {
            return Err(newer_schema(&self.label, found));
        }
        tx.execute(sql::CREATE_RECORDS, &[]).await.map_err(|e| foreign("toolnexus_records", e))?;
        tx.execute(sql::PROBE_RECORDS, &[]).await.map_err(|e| foreign("toolnexus_records", e))?;
        // A database of the first layout gets its expiry column.
        tx.execute(&sql::ADD_EXPIRY.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"), &[])
            .await
            .map_err(|e| foreign("toolnexus_records", e))?;
        tx.execute(sql::INDEX_EXPIRY, &[]).await.map_err(|e| foreign("toolnexus_records", e))?;
        tx.commit().await.map_err(|e| self.fail(e))
    }
}

/// A pool error's own words (the connection's error, when that is what failed).
fn pool_error(e: deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => db_message(&e),
        deadpool_postgres::PoolError::Timeout(_) => "timed out waiting for a connection".into(),
        other => other.to_string(),
    }
}

/// tokio-postgres's message with the server's own detail when there is one.
fn db_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => match std::error::Error::source(e) {
            Some(inner) => format!("{e}: {inner}"),
            None => e.to_string(),
        },
    }
}

#[async_trait]
impl Engine for PostgresEngine {
    fn label(&self) -> &str {
        &self.label
    }

    async fn load(&self, kind: Kind, id: &str) -> Result<Option<(i64, String)>> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql::LOAD).await.map_err(|e| self.fail(db_message(&e)))?;
        let now = sql::now_ms();
        let row = client.query_opt(&stmt, &[&kind.as_str(), &id, &now]).await.map_err(|e| self.fail(db_message(&e)))?;
        match row {
            Some(r) => Ok(Some((r.try_get(0).map_err(|e| self.fail(e))?, r.try_get(1).map_err(|e| self.fail(e))?))),
            None => Ok(None),
        }
    }

    async fn write(
        &self,
        kind: Kind,
        id: &str,
        body: String,
        expect: Expect,
        expires: Option<i64>,
    ) -> Result<Option<i64>> {
        let client = self.client().await?;
        let now = sql::now_ms();
        let k = kind.as_str();
        let row = match expect {
            Expect::Any => {
                let stmt = client.prepare_cached(sql::WRITE_ANY).await.map_err(|e| self.fail(db_message(&e)))?;
                client.query_opt(&stmt, &[&k, &id, &body, &now, &expires]).await
            }
            Expect::Absent => {
                let stmt = client.prepare_cached(sql::WRITE_NEW).await.map_err(|e| self.fail(db_message(&e)))?;
                client.query_opt(&stmt, &[&k, &id, &body, &now, &expires]).await
            }
            Expect::Version(v) => {
                let stmt = client.prepare_cached(sql::WRITE_OVER).await.map_err(|e| self.fail(db_message(&e)))?;
                client.query_opt(&stmt, &[&k, &id, &body, &now, &expires, &v]).await
            }
        }
        .map_err(|e| self.fail(db_message(&e)))?;
        match row {
            Some(r) => Ok(Some(r.try_get(0).map_err(|e| self.fail(e))?)),
            None => Ok(None),
        }
    }

    async fn delete(&self, kind: Kind, id: &str) -> Result<bool> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql::DELETE).await.map_err(|e| self.fail(db_message(&e)))?;
        let n = client.execute(&stmt, &[&kind.as_str(), &id]).await.map_err(|e| self.fail(db_message(&e)))?;
        Ok(n > 0)
    }

    async fn delete_prefix(&self, kind: Kind, prefix: &str) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql::DELETE_PREFIX).await.map_err(|e| self.fail(db_message(&e)))?;
        client.execute(&stmt, &[&kind.as_str(), &prefix]).await.map_err(|e| self.fail(db_message(&e)))
    }

    async fn sweep(&self, now: i64) -> Result<u64> {
        let client = self.client().await?;
        let before = now.saturating_sub(super::engine::CLAIM_RETENTION_MS);
        let stmt = client.prepare_cached(sql::SWEEP).await.map_err(|e| self.fail(db_message(&e)))?;
        client.execute(&stmt, &[&now, &before]).await.map_err(|e| self.fail(db_message(&e)))
    }
}
