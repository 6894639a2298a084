//! The tool-calling loop against a scripted endpoint, in both wire styles: the request each
//! turn sends, tool calls and their results, the transcript, the turn limit and the client's
//! options.

mod options;
mod tool_calls;
mod transcript;
mod turn_limit;
mod wire;
