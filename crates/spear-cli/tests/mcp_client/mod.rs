//! What the tests that drive `spear mcp` with rmcp's client share: a session of this crate's
//! `spear mcp` over a workspace of its own. The client itself (a session with a deadline on every
//! call, a client that answers questions as told, the checks every result must pass) is
//! [`spear_testkit::mcp`].

#![allow(dead_code)]

use rmcp::ClientHandler;
use spear_testkit::mcp::{Generation, Session};

use crate::support::{Dirs, SpearCommands as _};

/// `spear mcp FLAGS --workspace WS` over a workspace holding `a.txt`, served to `handler` in
/// `generation`.
pub async fn start<H: ClientHandler>(
    flags: &[&str],
    handler: H,
    generation: Generation,
) -> Session<H> {
    let dirs = Dirs::with(&[("a.txt", "alpha\nbeta\n")]);
    let server = dirs.spear_mcp(flags);
    Session::start(dirs, server, handler, generation).await
}
