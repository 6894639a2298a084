//! Retries (SPEC §8): which failures are tried again and how often, `Retry-After`, and the
//! `onError` classifier, for runs, streams and translations alike.

mod network;
mod on_error;
mod retry_after;
mod status;
