//! A run's two beginnings: from a prompt, or inside a parked turn being taken up again (what
//! `resume` hands the loop in `turns`).

use serde_json::{Map, Value};

use super::result::{HaltSite, Resolution};
use super::wire::Call;

/// How a run starts: from a prompt (a new user turn), or inside a parked turn being taken up
/// again (no new user turn).
pub(super) enum Start<'a> {
    Prompt(&'a str),
    Resume(Box<Resumed>),
}

/// A parked turn as a resume takes it up: the transcript without the parked call's placeholder,
/// and the calls from the parked one on.
pub(super) struct Resumed {
    /// The transcript up to the parked call's result (left out). Anthropic: without the user
    /// message of tool results, whose earlier blocks are in `blocks`.
    pub messages: Vec<Value>,
    /// Anthropic: the results of the calls before the parked one, written again in front of
    /// the rest.
    pub blocks: Vec<Value>,
    /// The parked call first, then the calls after it that never reached the transcript.
    /// Empty when the run parked before an LLM call.
    pub calls: Vec<Call>,
    pub site: HaltSite,
    /// The Request the run parked on.
    pub request: Map<String, Value>,
    pub resolution: Resolution,
    /// The conversation to save once the parked turn's calls have their results.
    pub keep: Option<String>,
}
