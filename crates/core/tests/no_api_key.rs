//! The missing-key error. This binary holds a single test because it edits process-wide
//! environment variables; no other test in the suite sets them.

mod common;

use common::*;
use toolnexus_core::client::{Client, RunOptions, Style};
use toolnexus_core::Error;

#[tokio::test]
async fn no_key_anywhere_is_a_clear_error_and_nothing_is_sent() {
    for var in ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"] {
        std::env::remove_var(var);
    }
    let server = MockLlm::script(vec![Reply::json(oa_text("unreachable"))]).await;
    let tk = toolkit(vec![]).await;
    for (style, key) in [(Style::OpenAI, None), (Style::Anthropic, None), (Style::OpenAI, Some(String::new()))] {
        let mut o = options(&server.url(), style);
        o.api_key = key.clone();
        let client = Client::new(o).unwrap();

        let e = client.run("q", &tk, RunOptions::default()).await.unwrap_err();

        assert!(matches!(e, Error::NoApiKey), "{style:?} {key:?}: {e:?}");
        assert_eq!(e.to_string(), "No API key: set apiKey or OPENROUTER_API_KEY / OPENAI_API_KEY / ANTHROPIC_API_KEY");
    }
    assert_eq!(server.count(), 0);
}
