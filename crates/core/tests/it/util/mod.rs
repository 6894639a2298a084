//! Test plumbing: a bare HTTP server, and running a test in a process of its own.

pub mod alone;
pub mod serve;
