//! The missing-key error.

use toolnexus_core::client::{Client, RunOptions, Style};
use toolnexus_core::Error;

use crate::common::*;

#[tokio::test]
async fn no_key_anywhere_is_a_clear_error_and_nothing_is_sent() {
    const KEYS: [&str; 3] = ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"];
    // The keys are read from the process environment: run in a process without them.
    crate::alone!(no_key_anywhere_is_a_clear_error_and_nothing_is_sent, |cmd| {
        for var in KEYS {
            cmd.env_remove(var);
        }
    });
    assert!(KEYS.iter().all(|var| std::env::var_os(var).is_none()));
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
