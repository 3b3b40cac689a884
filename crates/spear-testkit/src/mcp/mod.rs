//! MCP clients for the tests that drive a server over stdio (`spear mcp`): rmcp's client in a
//! [`Session`] with a deadline on every call and a [`User`] that answers questions as told, and a
//! [`RawClient`] that speaks JSON-RPC line by line, for what no SDK client sends. The caller
//! makes the server's command (the binary is the caller's: a test binary knows its crate's
//! executables).

mod raw;
mod session;

pub use raw::RawClient;
pub use session::{DEADLINE, Generation, Session, User, envelope, within};
