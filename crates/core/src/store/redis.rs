//! Redis: each record one hash (`v` the version, `b` the JSON), every write one Lua script
//! (atomic on the server), over one multiplexed connection that reconnects by itself.

use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::engine::{newer_schema, schema, unavailable, Engine, Expect, Kind, SCHEMA_VERSION};
use super::url::scrub;
use crate::error::Result;

/// The key naming the layout version.
const SCHEMA_KEY: &str = "toolnexus:schema";

/// `KEYS[1]` the record; `ARGV[1]` the expected version (`*` any, `0` absent), `ARGV[2]` the
/// body, `ARGV[3]` when it expires (ms since the epoch; empty for never). Answers the new
/// version, or -1 when the expectation failed (nothing written).
const WRITE: &str = r"
local v = redis.call('HGET', KEYS[1], 'v')
local expect = ARGV[1]
if expect == '0' then
  if v then return -1 end
elseif expect ~= '*' then
  if v ~= expect then return -1 end
end
local n = (tonumber(v) or 0) + 1
redis.call('HSET', KEYS[1], 'v', n, 'b', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
else
  redis.call('PERSIST', KEYS[1])
end
return n
";

/// How long the first layout's claim keys (written with no expiry) are given when a sweep
/// finds them.
const CLAIM_TTL_MS: i64 = super::engine::CLAIM_RETENTION_MS;

pub struct RedisEngine {
    label: String,
    url: String,
    conn: ConnectionManager,
    write: redis::Script,
    /// The first layout's claim keys were given an expiry by this process.
    claims_swept: std::sync::atomic::AtomicBool,
}

impl RedisEngine {
    pub async fn connect(url: &str, label: String) -> Result<RedisEngine> {
        if url.to_ascii_lowercase().starts_with("rediss:") {
            // The process's rustls provider (ring) is installed by the first TLS configuration.
            let _ = crate::net::tls_config();
        }
        let fail = |e: redis::RedisError| unavailable(&label, scrub(&e.to_string(), url));
        let client = redis::Client::open(url).map_err(fail)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(10)))
            .set_response_timeout(Some(Duration::from_secs(30)))
            .set_number_of_retries(2);
        let conn = ConnectionManager::new_with_config(client, config).await.map_err(fail)?;
        let engine = RedisEngine {
            label: label.clone(),
            url: url.to_string(),
            conn,
            write: redis::Script::new(WRITE),
            claims_swept: std::sync::atomic::AtomicBool::new(false),
        };
        engine.prepare().await?;
        Ok(engine)
    }

    fn fail(&self, e: redis::RedisError) -> crate::error::Error {
        unavailable(&self.label, scrub(&e.to_string(), &self.url))
    }

    /// Claim the layout version (first use), or check the one found.
    async fn prepare(&self) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: Option<String> = redis::cmd("SET")
            .arg(SCHEMA_KEY)
            .arg(SCHEMA_VERSION)
            .arg("NX")
            .query_async(&mut conn)
            .await
            .map_err(|e| self.fail(e))?;
        let found: redis::Value = redis::cmd("GET").arg(SCHEMA_KEY).query_async(&mut conn).await.map_err(|e| {
            if wrong_type(&e) {
                schema(&self.label, format!("the key {SCHEMA_KEY} exists and is not toolnexus's"))
            } else {
                self.fail(e)
            }
        })?;
        let version = match &found {
            redis::Value::BulkString(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse::<i64>().ok()),
            _ => None,
        };
        match version {
            Some(v) if v > SCHEMA_VERSION => Err(newer_schema(&self.label, v)),
            Some(_) => Ok(()),
            None => Err(schema(&self.label, format!("the key {SCHEMA_KEY} exists and is not toolnexus's"))),
        }
    }

    fn key(kind: Kind, id: &str) -> String {
        format!("toolnexus:{}:{id}", kind.as_str())
    }

    /// Every key matching the glob `pattern`, read a batch at a time (SCAN: the server is
    /// never blocked).
    async fn scan(&self, pattern: &str) -> Result<Vec<String>> {
        let mut conn = self.conn.clone();
        let mut cursor: u64 = 0;
        let mut out = Vec::new();
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.fail(e))?;
            out.extend(keys);
            if next == 0 {
                return Ok(out);
            }
            cursor = next;
        }
    }
}

/// `text` matched literally in a Redis glob pattern.
fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The server's WRONGTYPE: the key holds a value of another type (someone else's key).
fn wrong_type(e: &redis::RedisError) -> bool {
    // A script's error carries the server's code inside its own text.
    e.code() == Some("WRONGTYPE") || e.to_string().contains("WRONGTYPE")
}

#[async_trait]
impl Engine for RedisEngine {
    fn label(&self) -> &str {
        &self.label
    }

    async fn load(&self, kind: Kind, id: &str) -> Result<Option<(i64, String)>> {
        let mut conn = self.conn.clone();
        let (v, b): (Option<i64>, Option<String>) =
            redis::cmd("HMGET").arg(Self::key(kind, id)).arg("v").arg("b").query_async(&mut conn).await.map_err(
                |e| {
                    if wrong_type(&e) {
                        schema(&self.label, format!("the key {} exists and is not toolnexus's", Self::key(kind, id)))
                    } else {
                        self.fail(e)
                    }
                },
            )?;
        Ok(match (v, b) {
            (Some(v), Some(b)) => Some((v, b)),
            _ => None,
        })
    }

    async fn write(
        &self,
        kind: Kind,
        id: &str,
        body: String,
        expect: Expect,
        expires: Option<i64>,
    ) -> Result<Option<i64>> {
        let mut conn = self.conn.clone();
        let expect = match expect {
            Expect::Any => "*".to_string(),
            Expect::Absent => "0".to_string(),
            Expect::Version(v) => v.to_string(),
        };
        let expires = expires.map(|at| at.max(1).to_string()).unwrap_or_default();
        let n: i64 = self
            .write
            .key(Self::key(kind, id))
            .arg(expect)
            .arg(body)
            .arg(expires)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| {
                if wrong_type(&e) {
                    schema(&self.label, format!("the key {} exists and is not toolnexus's", Self::key(kind, id)))
                } else {
                    self.fail(e)
                }
            })?;
        Ok((n > 0).then_some(n))
    }

    async fn delete(&self, kind: Kind, id: &str) -> Result<bool> {
        let mut conn = self.conn.clone();
        let n: i64 =
            redis::cmd("DEL").arg(Self::key(kind, id)).query_async(&mut conn).await.map_err(|e| self.fail(e))?;
        Ok(n > 0)
    }

    async fn delete_prefix(&self, kind: Kind, prefix: &str) -> Result<u64> {
        let pattern = format!("{}*", glob_literal(&Self::key(kind, prefix)));
        let keys = self.scan(&pattern).await?;
        let mut gone = 0u64;
        let mut conn = self.conn.clone();
        for batch in keys.chunks(500) {
            let n: u64 = redis::cmd("DEL").arg(batch).query_async(&mut conn).await.map_err(|e| self.fail(e))?;
            gone += n;
        }
        Ok(gone)
    }

    async fn sweep(&self, _now: i64) -> Result<u64> {
        // Records that expire carry their own TTL. The first layout's claims carry none: they are
        // given one, once per process.
        if self.claims_swept.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Ok(0);
        }
        let keys = self.scan(&format!("{}*", glob_literal(&Self::key(Kind::Claim, "")))).await?;
        let mut conn = self.conn.clone();
        for key in &keys {
            // NX: a key that has an expiry keeps it (Redis 7); older servers answer an error, and
            // the plain form is used.
            let set: redis::RedisResult<i64> =
                redis::cmd("PEXPIRE").arg(key).arg(CLAIM_TTL_MS).arg("NX").query_async(&mut conn).await;
            if set.is_err() {
                let _: i64 = redis::cmd("PEXPIRE")
                    .arg(key)
                    .arg(CLAIM_TTL_MS)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.fail(e))?;
            }
        }
        Ok(0)
    }
}
