//! One conformance suite for every store: memory, files, SQLite, and PostgreSQL and Redis when
//! `.ci/run` (or the developer) started them and named them in `TOOLNEXUS_TEST_POSTGRES` /
//! `TOOLNEXUS_TEST_REDIS`. Real engines only.

use std::sync::Arc;

use serde_json::json;
use toolnexus_core::client::store::{ConversationStore, DurableConversationStore, InMemoryStore};
use toolnexus_core::error::Error;
use toolnexus_core::serve::store::{resolve_store, DurableTaskStore, FileTaskStore, InMemoryTaskStore, TaskStore};

/// The engines to run against (see `common::engine_urls`).
fn engines(dir: &std::path::Path) -> Vec<String> {
    crate::common::engine_urls(dir)
}

/// An id no other test run has used.
fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{name}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn code(e: &Error) -> Option<&'static str> {
    match e {
        Error::Store { code, .. } => Some(code),
        _ => None,
    }
}

async fn task_store_round_trip(store: &dyn TaskStore, what: &str) {
    let id = unique("t");
    assert!(store.get(&id).await.unwrap().is_none(), "{what}: unknown id");
    // Key order, unicode, numbers and nesting come back as saved.
    let task = json!({"id": id, "status": {"state": "working", "z": 1, "a": 2}, "contextId": "c-ü-🙂", "artifacts": [{"parts": [{"kind": "text", "text": "x".repeat(10_000)}]}], "n": 1.5e300});
    store.save(task.clone()).await.unwrap();
    let back = store.get(&id).await.unwrap().unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&task).unwrap(), "{what}");
    let mut next = task.clone();
    next["status"]["state"] = json!("completed");
    store.save(next.clone()).await.unwrap();
    assert_eq!(store.get(&id).await.unwrap().unwrap(), next, "{what}: the second save replaces the first");
}

async fn conversation_round_trip(store: &dyn ConversationStore, what: &str) {
    let id = unique("c");
    assert!(store.get(&id).await.unwrap().is_none(), "{what}");
    let messages = vec![
        json!({"role": "user", "content": "hi"}),
        json!({"role": "assistant", "content": "hello", "tool_calls": []}),
    ];
    store.save(&id, messages.clone()).await.unwrap();
    assert_eq!(store.get(&id).await.unwrap().unwrap(), messages, "{what}");
    let mut more = messages.clone();
    more.push(json!({"role": "user", "content": "again"}));
    store.save(&id, more.clone()).await.unwrap();
    assert_eq!(store.get(&id).await.unwrap().unwrap(), more, "{what}");
}

#[tokio::test]
async fn every_store_keeps_tasks_and_conversations_as_saved() {
    let dir = tempfile::tempdir().unwrap();
    task_store_round_trip(&InMemoryTaskStore::new(), "memory").await;
    task_store_round_trip(&FileTaskStore::new(dir.path().join("files")).unwrap(), "file").await;
    conversation_round_trip(&InMemoryStore::default(), "memory").await;
    for url in engines(dir.path()) {
        task_store_round_trip(&DurableTaskStore::new(&url), &url).await;
        conversation_round_trip(&DurableConversationStore::new(&url), &url).await;
        // The selector form reaches the same engine.
        task_store_round_trip(resolve_store(Some(&json!(url))).unwrap().as_ref(), &url).await;
    }
}

#[tokio::test]
async fn two_writers_of_one_record_never_lose_an_update_silently() {
    let dir = tempfile::tempdir().unwrap();
    for url in engines(dir.path()) {
        // Two stores on one URL stand for two processes: each remembers its own versions.
        let (a, b) = (DurableConversationStore::new(&url), DurableConversationStore::new(&url));
        let id = unique("race");
        a.save(&id, vec![json!({"role": "user", "content": "0"})]).await.unwrap();
        let seen_a = a.get(&id).await.unwrap().unwrap();
        let seen_b = b.get(&id).await.unwrap().unwrap();
        a.save(&id, [seen_a, vec![json!({"role": "user", "content": "from a"})]].concat()).await.unwrap();
        let e = b.save(&id, [seen_b, vec![json!({"role": "user", "content": "from b"})]].concat()).await.unwrap_err();
        assert_eq!(code(&e), Some("ESTORECONFLICT"), "{url}: {e}");
        assert!(e.to_string().contains("was changed by another writer"), "{e}");
        let kept = a.get(&id).await.unwrap().unwrap();
        assert_eq!(kept.last().unwrap()["content"], "from a", "{url}: a's write kept");
        // After reading again, b writes over what it read.
        let seen_b = b.get(&id).await.unwrap().unwrap();
        b.save(&id, [seen_b, vec![json!({"role": "user", "content": "b again"})]].concat()).await.unwrap();
        assert_eq!(a.get(&id).await.unwrap().unwrap().len(), 3, "{url}");

        // Tasks: two first writes of one new id: the second learns it lost.
        let (ta, tb) = (DurableTaskStore::new(&url), DurableTaskStore::new(&url));
        let tid = unique("task");
        assert!(ta.get(&tid).await.unwrap().is_none());
        assert!(tb.get(&tid).await.unwrap().is_none());
        ta.save(json!({"id": tid, "status": {"state": "working"}})).await.unwrap();
        let e = tb.save(json!({"id": tid, "status": {"state": "failed"}})).await.unwrap_err();
        assert_eq!(code(&e), Some("ESTORECONFLICT"), "{url}: {e}");
        assert_eq!(ta.get(&tid).await.unwrap().unwrap()["status"]["state"], "working");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_writers_share_one_pool() {
    let dir = tempfile::tempdir().unwrap();
    for url in engines(dir.path()) {
        let store: Arc<dyn TaskStore> = Arc::new(DurableTaskStore::new(&url));
        let prefix = unique("many");
        let mut joins = Vec::new();
        for i in 0..64 {
            let store = store.clone();
            let id = format!("{prefix}-{i}");
            joins.push(tokio::spawn(async move {
                for round in 0..5 {
                    store.save(json!({"id": id, "round": round})).await?;
                }
                store.get(&id).await
            }));
        }
        for (i, j) in joins.into_iter().enumerate() {
            let got = j.await.unwrap().unwrap_or_else(|e| panic!("{url}: writer {i}: {e}"));
            assert_eq!(got.unwrap()["round"], 4, "{url}: writer {i}");
        }
    }
}

#[tokio::test]
async fn an_engine_that_is_down_fails_clearly_without_its_password_and_the_next_call_retries() {
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for url in [
        format!("postgres://app:s3cr3t-pw@127.0.0.1:{port}/db?connect_timeout=2"),
        format!("redis://:s3cr3t-pw@127.0.0.1:{port}/0"),
    ] {
        let store = DurableTaskStore::new(&url);
        let e = store.get("x").await.unwrap_err();
        let text = e.to_string();
        assert_eq!(code(&e), Some("ESTOREUNAVAILABLE"), "{text}");
        assert!(!text.contains("s3cr3t-pw"), "{text}");
        assert!(text.contains("***") && text.contains(&port.to_string()), "{text}");
        // The shape JavaScript sees carries the code too.
        assert_eq!(e.js_shape()["fields"]["code"], "ESTOREUNAVAILABLE");
        // Nothing was cached: the next call tries again (and fails again, the same way).
        assert_eq!(code(&store.get("x").await.unwrap_err()), Some("ESTOREUNAVAILABLE"));
    }
    // A URL that does not parse names what is wrong, still without the password.
    let e = DurableTaskStore::new("postgres://app:s3cr3t-pw@127.0.0.1:notaport/db").get("x").await.unwrap_err();
    assert!(!e.to_string().contains("s3cr3t-pw"), "{e}");
}

#[tokio::test]
async fn sqlite_refuses_a_newer_schema_and_a_foreign_table() {
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.db");
    {
        let store = DurableTaskStore::new(&format!("sqlite:{}", newer.display()));
        store.save(json!({"id": "a"})).await.unwrap();
    }
    let conn = rusqlite::Connection::open(&newer).unwrap();
    conn.execute("UPDATE toolnexus_schema SET version = 99", []).unwrap();
    drop(conn);
    // The first store is gone, and its engine with it: this one opens the file afresh.
    let e = DurableTaskStore::new(&format!("sqlite:{}", newer.display())).get("a").await.unwrap_err();
    assert_eq!(code(&e), Some("ESTORESCHEMA"), "{e}");
    assert!(e.to_string().contains("version 99, newer than this toolnexus reads (1)"), "{e}");

    let foreign = dir.path().join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute("CREATE TABLE toolnexus_records (name TEXT)", []).unwrap();
    drop(conn);
    let e = DurableTaskStore::new(&format!("sqlite:{}", foreign.display())).get("a").await.unwrap_err();
    assert_eq!(code(&e), Some("ESTORESCHEMA"), "{e}");
    assert!(e.to_string().contains("a table named toolnexus_records exists and is not toolnexus's"), "{e}");

    // A file in a directory that does not exist: the engine's own words, and the path.
    let e =
        DurableTaskStore::new(&format!("sqlite:{}/no/such/dir/x.db", dir.path().display())).get("a").await.unwrap_err();
    assert_eq!(code(&e), Some("ESTOREUNAVAILABLE"), "{e}");
}

#[tokio::test]
async fn a_running_task_whose_server_stopped_ends_failed_when_its_lease_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    for url in engines(dir.path()) {
        let (alive, dying) = (unique("alive"), unique("dying"));
        let reader = DurableTaskStore::with_lease_ms(&url, 300);
        {
            let server = DurableTaskStore::with_lease_ms(&url, 300);
            server.save_own(json!({"id": dying, "status": {"state": "working"}})).await.unwrap();
            let seen = reader.get(&dying).await.unwrap().unwrap();
            assert_eq!(seen, json!({"id": dying, "status": {"state": "working"}}), "{url}: the lease never shows");
        } // This server is gone: nothing renews its lease.
        let server = DurableTaskStore::with_lease_ms(&url, 300);
        server.save_own(json!({"id": alive, "status": {"state": "working"}})).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        let gone = reader.get(&dying).await.unwrap().unwrap();
        assert_eq!(gone["status"]["state"], "failed", "{url}: {gone}");
        assert_eq!(gone["status"]["message"]["parts"][0]["text"], toolnexus_core::serve::lease::EXPIRED, "{url}");
        assert!(gone.get("__toolnexusLease").is_none());
        let kept = reader.get(&alive).await.unwrap().unwrap();
        assert_eq!(kept["status"]["state"], "working", "{url}: a renewed lease holds");
        server.save_own(json!({"id": alive, "status": {"state": "completed"}})).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(reader.get(&alive).await.unwrap().unwrap()["status"]["state"], "completed", "{url}");
        // A Task parked for input holds no lease: it stays parked.
        let parked = unique("parked");
        server.save_own(json!({"id": parked, "status": {"state": "input-required"}})).await.unwrap();
        drop(server);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(reader.get(&parked).await.unwrap().unwrap()["status"]["state"], "input-required", "{url}");
    }
}

/// Records that expire read as absent once they have, are written over as absent, and go with
/// a sweep; records are deleted one by one or by the start of their id (issue 53: nothing a
/// resume leaves behind grows without bound).
#[tokio::test]
async fn records_expire_and_are_deleted_on_every_engine() {
    use toolnexus_core::store::{records, Expect, Kind};
    let dir = tempfile::tempdir().unwrap();
    for url in engines(dir.path()) {
        let r = records(&url, Kind::Park);
        let now = toolnexus_core::suspension::now_ms();
        let (soon, later, never) = (unique("soon"), unique("later"), unique("never"));
        assert!(r.save_at(&soon, &json!({"n": 1}), Expect::Absent, Some(now + 300)).await.unwrap().is_some());
        assert!(r.save_at(&later, &json!({"n": 2}), Expect::Absent, Some(now + 600_000)).await.unwrap().is_some());
        assert!(r.save_at(&never, &json!({"n": 3}), Expect::Absent, None).await.unwrap().is_some());
        assert_eq!(r.get(&soon).await.unwrap(), Some(json!({"n": 1})), "{url}");
        // A second first write of a live record loses.
        assert!(r.save_at(&soon, &json!({"n": 9}), Expect::Absent, None).await.unwrap().is_none(), "{url}");
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        assert_eq!(r.get(&soon).await.unwrap(), None, "{url}: expired reads as absent");
        assert_eq!(r.get(&later).await.unwrap(), Some(json!({"n": 2})), "{url}");
        // An expired record is written over as absent, and the next version follows.
        let v = r.save_at(&soon, &json!({"n": 4}), Expect::Absent, None).await.unwrap();
        assert!(v.is_some(), "{url}");
        let (v2, back) = r.get_versioned(&soon).await.unwrap().unwrap();
        assert_eq!((Some(v2), back), (v, json!({"n": 4})), "{url}");
        // A compare-and-set on a version that is not the stored one writes nothing.
        assert!(r.save_at(&soon, &json!({"n": 5}), Expect::Version(v2 + 7), None).await.unwrap().is_none());
        assert!(r.save_at(&soon, &json!({"n": 5}), Expect::Version(v2), None).await.unwrap().is_some());
        // Deleting: one, then by prefix (and nothing else).
        assert!(r.delete(&never).await.unwrap(), "{url}");
        assert!(!r.delete(&never).await.unwrap(), "{url}");
        assert_eq!(r.get(&never).await.unwrap(), None);
        let p = unique("conv");
        for k in ["a", "b", "c"] {
            r.save_at(&format!("{p}:{k}"), &json!(k), Expect::Any, None).await.unwrap();
        }
        r.save_at(&format!("{p}x:a"), &json!("x"), Expect::Any, None).await.unwrap();
        assert_eq!(r.delete_prefix(&format!("{p}:")).await.unwrap(), 3, "{url}");
        assert_eq!(r.get(&format!("{p}:a")).await.unwrap(), None);
        assert_eq!(r.get(&format!("{p}x:a")).await.unwrap(), Some(json!("x")), "{url}: another prefix stays");
        // A prefix with the characters a pattern would read is taken as it is written.
        let odd = format!("{}*?[x]\\%_", unique("odd"));
        r.save_at(&format!("{odd}1"), &json!(1), Expect::Any, None).await.unwrap();
        r.save_at(&format!("{}1", unique("odd")), &json!(2), Expect::Any, None).await.unwrap();
        assert_eq!(r.delete_prefix(&odd).await.unwrap(), 1, "{url}");
    }
}

/// The expired rows of a SQL engine are deleted by a sweep (Redis expires them by itself), and a
/// SQLite file of the first layout gains the expiry column when it is opened.
#[tokio::test]
async fn sql_engines_sweep_what_expired_and_the_first_layout_is_upgraded() {
    use toolnexus_core::store::{records, Expect, Kind};
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.db");
    {
        let conn = rusqlite::Connection::open(&old).unwrap();
        conn.execute_batch(
            "CREATE TABLE toolnexus_schema (name TEXT PRIMARY KEY, version BIGINT NOT NULL);
             INSERT INTO toolnexus_schema VALUES ('records', 1);
             CREATE TABLE toolnexus_records (kind TEXT NOT NULL, id TEXT NOT NULL, version BIGINT NOT NULL,
               body TEXT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (kind, id));
             INSERT INTO toolnexus_records VALUES ('conversation', 'kept', 1, '[]', 0);
             INSERT INTO toolnexus_records VALUES ('claim', 'old-claim', 1, '{}', 0);",
        )
        .unwrap();
    }
    let url = format!("sqlite:{}", old.display());
    let conversations = DurableConversationStore::new(&url);
    assert_eq!(conversations.get("kept").await.unwrap(), Some(vec![]), "the first layout's records read on");
    let r = records(&url, Kind::Park);
    let now = toolnexus_core::suspension::now_ms();
    r.save_at("gone", &json!(1), Expect::Absent, Some(now + 50)).await.unwrap();
    r.save_at("stays", &json!(2), Expect::Absent, Some(now + 600_000)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    r.sweep_now_and_then().await;
    let conn = rusqlite::Connection::open(&old).unwrap();
    let ids: Vec<String> = conn
        .prepare("SELECT id FROM toolnexus_records ORDER BY id")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(ids, ["kept", "stays"], "the expired park and the first layout's month-old claim went");
}
