//! spear's MCP server: the tool router, served over stdio with rmcp.
//!
//! - [`catalog`]: tool specs and envelopes in MCP's words (pure).
//! - [`asking`]: ASK confirmations through the client (elicitation, input-required results).
//! - [`approvals`]: ASK confirmations through `spear approve`, for clients that cannot ask.
//! - [`state`]: the sealed request state of an input-required exchange.
//! - [`server`]: the `ServerHandler`.
//! - [`intake`]: the framing in front of rmcp's stdio transport, which answers every malformed
//!   line ([`screen`]: the verdict on a line; [`lines`]: cutting lines in bounded memory;
//!   [`scan`]: reading a line's ids and depth without parsing it).
//! - [`eof`]: the end of stdin, seen at once.
//! - [`stdio`]: the session on stdin and stdout, from its start to the end of its last call.
//!
//! stdout carries only protocol messages; logs go to stderr through `tracing`.

pub mod approvals;
pub mod asking;
pub mod catalog;
pub mod eof;
pub mod intake;
pub mod lines;
pub mod scan;
pub mod screen;
pub mod server;
pub mod state;
pub mod stdio;

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
