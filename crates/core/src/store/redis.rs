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
/// body. Answers the new version, or -1 when the expectation failed (nothing written).
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
return n
";

pub struct RedisEngine {
    label: String,
    url: String,
    conn: ConnectionManager,
    write: redis::Script,
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
        let engine = RedisEngine { label: label.clone(), url: url.to_string(), conn, write: redis::Script::new(WRITE) };
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

    async fn write(&self, kind: Kind, id: &str, body: String, expect: Expect) -> Result<Option<i64>> {
        let mut conn = self.conn.clone();
        let expect = match expect {
            Expect::Any => "*".to_string(),
            Expect::Absent => "0".to_string(),
            Expect::Version(v) => v.to_string(),
        };
        let n: i64 =
            self.write.key(Self::key(kind, id)).arg(expect).arg(body).invoke_async(&mut conn).await.map_err(|e| {
                if wrong_type(&e) {
                    schema(&self.label, format!("the key {} exists and is not toolnexus's", Self::key(kind, id)))
                } else {
                    self.fail(e)
                }
            })?;
        Ok((n > 0).then_some(n))
    }
}
