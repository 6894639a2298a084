//! https: the transport over TLS with a configuration of its own, and the trust every client of
//! the core gets by default, as Node's (its bundled roots plus `NODE_EXTRA_CA_CERTS`).

mod common_name;
mod node_trust;
mod transport;
