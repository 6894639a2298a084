//! Conversation memory (SPEC §8): `ask` with an id keeps the thread in the client's store,
//! a custom `ConversationStore` is what the client uses, and `stream` with an id saves the
//! thread before its `done` event.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use toolnexus_core::callback::callback;
use toolnexus_core::client::{Client, ConversationStore, InMemoryStore, RunOptions, Style};

use crate::common::*;

/// A store that counts its calls and logs them into a trail shared with other recorders.
#[derive(Default)]
struct CountingStore {
    inner: InMemoryStore,
    gets: Counter,
    saves: Counter,
    trail: Log<Value>,
}

#[async_trait]
impl ConversationStore for CountingStore {
    async fn get(&self, id: &str) -> toolnexus_core::error::Result<Option<Vec<Value>>> {
        self.gets.bump();
        self.trail.push(json!({"store": "get", "id": id}));
        self.inner.get(id).await
    }

    async fn save(&self, id: &str, messages: Vec<Value>) -> toolnexus_core::error::Result<()> {
        self.saves.bump();
        self.trail.push(json!({"store": "save", "id": id, "len": messages.len()}));
        self.inner.save(id, messages).await
    }
}

async fn stored_len(client: &Client, id: &str) -> Option<usize> {
    client.store().get(id).await.unwrap().map(|m| m.len())
}

#[tokio::test]
async fn ask_with_an_id_grows_the_thread_by_two_per_call() {
    for style in [Style::OpenAI, Style::Anthropic] {
        let server = MockLlm::start(move |_, i| Action::Reply(Reply::json(text_reply(style, &format!("a{i}"))))).await;
        let tk = toolkit(vec![]).await;
        let client = Client::new(options(&server.url(), style)).unwrap();

        for n in 1..=3 {
            let r = client.ask(&format!("q{n}"), &tk, Some("t1"), None, RunOptions::default()).await.unwrap();
            assert_eq!(r.text, format!("a{}", n - 1));
            assert_eq!(stored_len(&client, "t1").await, Some(2 * n));
            assert_eq!(r.messages.len(), 2 * n, "the result carries the whole thread");
        }

        // Each request carried the thread so far plus the new prompt.
        let lens: Vec<usize> = server.requests().iter().map(|s| s.messages().len()).collect();
        assert_eq!(lens, [1, 3, 5]);
        let last = server.request(2).messages();
        assert_eq!(last[0]["content"], "q1");
        assert_eq!(last[2]["content"], "q2");
        assert_eq!(last[4], json!({"role": "user", "content": "q3"}));

        // Another id is another thread; no id leaves the store untouched.
        client.ask("other", &tk, Some("t2"), None, RunOptions::default()).await.unwrap();
        client.ask("stateless", &tk, None, None, RunOptions::default()).await.unwrap();
        assert_eq!(stored_len(&client, "t2").await, Some(2));
        assert_eq!(stored_len(&client, "t1").await, Some(6));
        assert_eq!(server.request(4).messages().len(), 1, "no id ⇒ no history");
    }
}

#[tokio::test]
async fn a_thousand_asks_on_one_id_keep_every_turn() {
    let sizes = Log::default();
    let s = sizes.clone();
    let server = MockLlm::lean(move |seen, _| {
        // Every message of this thread is a flat {"role":…,"content":…} object.
        s.push(seen.raw.matches(r#"{"role":"#).count());
        Action::Reply(Reply::json(oa_text("a")))
    })
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::OpenAI)).unwrap();

    let t0 = Instant::now();
    for _ in 0..1000 {
        client.ask("q", &tk, Some("long"), None, RunOptions::default()).await.unwrap();
    }
    let took = t0.elapsed();

    assert_eq!(stored_len(&client, "long").await, Some(2000));
    assert_eq!(server.count(), 1000);
    let want: Vec<usize> = (0..1000).map(|i| 2 * i + 1).collect();
    assert_eq!(sizes.all(), want, "every request carried the whole thread");
    let thread = client.store().get("long").await.unwrap().unwrap();
    assert!(thread.chunks(2).all(|pair| pair[0]["role"] == "user" && pair[1]["role"] == "assistant"));
    // A gross guard only (a debug build spends a few seconds re-sending the growing thread).
    assert!(took < Duration::from_secs(60), "1,000 asks took {took:?}");
}

#[tokio::test]
async fn a_custom_store_is_the_one_ask_uses() {
    let server = MockLlm::start(|_, i| Action::Reply(Reply::json(oa_text(&format!("a{i}"))))).await;
    let tk = toolkit(vec![]).await;
    let store = Arc::new(CountingStore::default());
    // A thread that exists before the client does.
    store.inner.save_now(
        "seeded",
        vec![json!({"role": "user", "content": "earlier"}), json!({"role": "assistant", "content": "before"})],
    );
    let client = Client::with_store(options(&server.url(), Style::OpenAI), store.clone()).unwrap();

    client.ask("next", &tk, Some("seeded"), None, RunOptions::default()).await.unwrap();
    assert_eq!((store.gets.get(), store.saves.get()), (1, 1));
    assert_eq!(server.request(0).messages().len(), 3, "the seeded thread was the history");
    assert_eq!(server.request(0).messages()[0]["content"], "earlier");
    assert_eq!(store.inner.get_now("seeded").unwrap().len(), 4);

    client.ask("plain", &tk, None, None, RunOptions::default()).await.unwrap();
    client.run("plain run", &tk, RunOptions::default()).await.unwrap();
    assert_eq!((store.gets.get(), store.saves.get()), (1, 1), "no id (and run) never touch the store");

    client.ask("fresh", &tk, Some("new"), None, RunOptions::default()).await.unwrap();
    assert_eq!((store.gets.get(), store.saves.get()), (2, 2));
    assert_eq!(store.inner.get_now("new").unwrap().len(), 2);

    // The accessor hands back the very store the client was built with.
    let before = store.gets.get();
    assert_eq!(client.store().get("new").await.unwrap().unwrap().len(), 2);
    assert_eq!(store.gets.get(), before + 1);
}

#[tokio::test]
async fn a_failed_ask_saves_nothing() {
    let server = MockLlm::script(vec![Reply::json(oa_text("one")), Reply::raw(400, "no")]).await;
    let tk = toolkit(vec![]).await;
    let store = Arc::new(CountingStore::default());
    let client = Client::with_store(options(&server.url(), Style::OpenAI), store.clone()).unwrap();

    client.ask("a", &tk, Some("t"), None, RunOptions::default()).await.unwrap();
    client.ask("b", &tk, Some("t"), None, RunOptions::default()).await.unwrap_err();

    assert_eq!((store.gets.get(), store.saves.get()), (2, 1));
    assert_eq!(store.inner.get_now("t").unwrap().len(), 2, "the thread is as the last success left it");
}

#[tokio::test]
async fn stream_with_an_id_loads_the_thread_and_saves_it_before_done() {
    let server = MockLlm::sequence(vec![
        Action::Stream(oa_text_stream(&["first"], 1, 1)),
        Action::Stream(oa_text_stream(&["sec", "ond"], 1, 1)),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let store = Arc::new(CountingStore::default());
    let trail = store.trail.clone();
    let client = Client::with_store(options(&server.url(), Style::OpenAI), store.clone()).unwrap();
    let sink = tagged(trail.clone(), "event");

    client.stream("one", &tk, Some("s"), RunOptions::default(), sink.as_ref()).await.unwrap();
    let r = client.stream("two", &tk, Some("s"), RunOptions::default(), sink.as_ref()).await.unwrap();

    let steps: Vec<String> = trail
        .all()
        .iter()
        .map(|s| match (s.get("store"), s.get("event")) {
            (Some(op), _) => format!("store:{}", op.as_str().unwrap()),
            (_, Some(e)) => e["type"].as_str().unwrap().to_string(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        steps,
        [
            "store:get",
            "text",
            "usage",
            "store:save",
            "done",
            "store:get",
            "text",
            "text",
            "usage",
            "store:save",
            "done"
        ]
    );
    assert_eq!(trail.all()[9]["len"], 4);
    assert_eq!(server.request(1).messages().len(), 3, "the second stream continued the thread");
    assert_eq!(r.messages.len(), 4);
    assert_eq!(store.inner.get_now("s").unwrap(), r.messages);
}

#[tokio::test]
async fn stream_without_an_id_leaves_the_store_alone() {
    let server = MockLlm::sequence(vec![Action::Stream(oa_text_stream(&["x"], 1, 1))]).await;
    let tk = toolkit(vec![]).await;
    let store = Arc::new(CountingStore::default());
    let client = Client::with_store(options(&server.url(), Style::OpenAI), store.clone()).unwrap();

    client.stream("q", &tk, None, RunOptions::default(), recorder(Log::default()).as_ref()).await.unwrap();

    assert_eq!((store.gets.get(), store.saves.get()), (0, 0));
}

#[tokio::test]
async fn ask_with_on_text_streams_the_deltas_and_remembers_the_thread() {
    let server = MockLlm::sequence(vec![
        Action::Stream(an_text_stream(&["Hel", "lo"], 2, 2)),
        Action::Reply(Reply::json(an_reply(json!([an_text("again")])))),
    ])
    .await;
    let tk = toolkit(vec![]).await;
    let client = Client::new(options(&server.url(), Style::Anthropic)).unwrap();
    let deltas = Log::default();
    let d = deltas.clone();
    let on_text = callback(move |v: Value| {
        let d = d.clone();
        async move {
            d.push(v);
            Ok(Value::Null)
        }
    });

    let r = client.ask("hi", &tk, Some("c"), Some(on_text.as_ref()), RunOptions::default()).await.unwrap();

    assert_eq!(r.text, "Hello");
    assert_eq!(deltas.all(), vec![json!("Hel"), json!("lo")], "only the text deltas, as strings");
    assert_eq!(server.request(0).body["stream"], json!(true));
    assert_eq!(stored_len(&client, "c").await, Some(2));

    // The next plain ask continues the same thread.
    client.ask("more", &tk, Some("c"), None, RunOptions::default()).await.unwrap();
    assert_eq!(server.request(1).messages().len(), 3);
    assert!(server.request(1).body.get("stream").is_none());
    assert_eq!(stored_len(&client, "c").await, Some(4));
}
