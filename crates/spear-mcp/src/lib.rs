//! spear's MCP server: the tool router, served over stdio with rmcp.
//!
//! The face is short: [`SpearServer`] (the `ServerHandler`), [`Stdio`] (the session on stdin and
//! stdout, from its start to the end of its last call) and the approval channel `spear approve`
//! speaks ([`Approvals`], [`ApprovalChannel`], [`approvals_client`]). Inside:
//!
//! - `catalog`: tool specs and envelopes in MCP's words (pure).
//! - `asking`: ASK confirmations through the client (elicitation, input-required results).
//! - `approvals`: ASK confirmations through `spear approve`, for clients that cannot ask.
//! - `request_state`: the sealed request state of an input-required exchange.
//! - `server`: the `ServerHandler`.
//! - `intake`: the framing in front of rmcp's stdio transport, which answers every malformed
//!   line (`screen`: the verdict on a line; `lines`: cutting lines in bounded memory; `scan`:
//!   reading a line's ids and depth without parsing it).
//! - `eof`: the end of stdin, seen at once.
//! - `stdio`: the session on stdin and stdout.
//! - `http`: the sessions over streamable HTTP ([`Http`]), behind a [`Gatekeeper`].
//! - `listener`: where the HTTP server listens ([`Listener`]: TCP or a unix socket, TLS or
//!   clear by [`bind_verdict`]) and the `Host` and `Origin` a request may carry ([`web_guard`]).
//! - `metrics`: counters and histograms of sessions and calls ([`Metrics`]), rendered in
//!   Prometheus's text format.
//! - `oauth`: OAuth 2.1 access tokens of the operator's authorization server
//!   ([`OAuthVerifier`]), and the Protected Resource Metadata document naming it
//!   ([`resource_metadata`]).
//!
//! The parsers of untrusted input are reachable by the fuzz targets through `fuzzing`, a module
//! that exists only with the `fuzzing` feature.
//!
//! stdout carries only protocol messages; logs go to stderr through `tracing`.

mod approvals;
mod asking;
mod catalog;
mod eof;
mod http;
mod intake;
mod lines;
mod listener;
mod metrics;
mod oauth;
mod request_state;
mod scan;
mod screen;
mod server;
mod stdio;

pub use approvals::{
    ApprovalChannel, Approvals, ApproveRequest, ChannelError,
    DEFAULT_WAIT as DEFAULT_APPROVAL_WAIT, NO_SUCH_PENDING, PendingItem,
    client as approvals_client, is_valid_id, peer_allowed, private_dir, socket_dir,
};
pub use http::{
    Admission, Changes, Denied, Gatekeeper, Grant, HEALTH_PATH, Http, HttpConfig, MAX_BODY_BYTES,
    MCP_PATH, METADATA_PATH, METRICS_PATH, NodeLimits, Opened, Opener, SESSIONS_PATH, SessionAsk,
    SessionFactory,
};
pub use listener::{
    Accepted, BindVerdict, Connection, GuardRefusal, HANDSHAKE_TIMEOUT, INSECURE_WARNING,
    LOOPBACK_HOSTS, LOOPBACK_ORIGINS, ListenAddr, ListenError, Listener, MAX_HANDSHAKES, TlsFiles,
    WebGuard, bind_verdict, web_guard,
};
pub use metrics::{CallRecord, METRICS_CONTENT_TYPE, Metrics};
pub use oauth::{
    JWKS_TIMEOUT, MAX_JWKS_BYTES, MAX_TOKEN_BYTES, OAuthError, OAuthGrant, OAuthRefusal,
    OAuthVerifier, REFETCH_EVERY, resource_metadata,
};
pub use request_state::StateError;
pub use server::{ApprovalWait, SpearServer};
pub use stdio::Stdio;

/// The parsers of untrusted input, for the fuzz targets (`fuzz/`) only: what a client's bytes and
/// a client's returned request state reach. Not part of spear's interface.
#[cfg(feature = "fuzzing")]
pub mod fuzzing {
    pub use crate::asking::{CONFIRM_KEY, answer_in};
    pub use crate::http::{ask_of_json, ask_of_query};
    pub use crate::request_state::StateSealer;
    pub use crate::scan::{Scanner, is_whitespace};
    pub use crate::screen::{Verdict, classify};
}

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed the start of the session.
    #[error("the MCP session did not start: {0}")]
    Start(String),
    /// The runtime or the signal watch could not be set up.
    #[error("cannot set up the server: {0}")]
    Setup(#[from] std::io::Error),
    /// The service loop ended abnormally.
    #[error("the MCP service stopped: {0}")]
    Loop(String),
}
