//! A body arriving in pieces, and its lines as they complete (the LLM stream and the MCP SSE
//! transport both read server-sent events this way).
//!
//! Shared vocabulary: it imports nothing of the client, the toolkit or the tool sources.

use std::pin::Pin;

use futures::{Stream, StreamExt};

use crate::error::{Error, Result};

/// A response body arriving in pieces.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Vec<u8>>> + Send>>;

/// Lines of an SSE body, as they complete. UTF-8 is decoded per whole line, so a
/// character split across chunks is never garbled. With a cap, a line that grows past it
/// fails with `SSE event too large` instead of buffering without bound.
pub struct Lines {
    body: ByteStream,
    buf: Vec<u8>,
    done: bool,
    cap: Option<usize>,
}

impl Lines {
    pub fn new(body: ByteStream) -> Self {
        Lines { body, buf: Vec::new(), done: false, cap: None }
    }

    pub fn capped(body: ByteStream, cap: usize) -> Self {
        Lines { body, buf: Vec::new(), done: false, cap: Some(cap) }
    }

    pub async fn next_line(&mut self) -> Result<Option<String>> {
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            if self.done {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let rest = std::mem::take(&mut self.buf);
                return Ok(Some(String::from_utf8_lossy(&rest).into_owned()));
            }
            if self.cap.is_some_and(|cap| self.buf.len() > cap) {
                return Err(Error::Invalid("SSE event too large".into()));
            }
            match self.body.next().await {
                Some(chunk) => self.buf.extend(chunk?),
                None => self.done = true,
            }
        }
    }
}
