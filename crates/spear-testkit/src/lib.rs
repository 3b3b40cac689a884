//! Test support for spear's crates, one copy of each piece: the test network, temporary
//! workspaces and homes, the red-team layout, process and cgroup leftovers checks, waiting with a
//! deadline, repositories made by the host's git, and (feature `mcp`) MCP clients.
//!
//! Test support only: a `[dev-dependencies]` entry of the crates whose tests use it (and a
//! dependency of the fuzz crate), never a dependency of a shipped crate. It depends on no spear
//! crate, so that no crate's tests see two copies of that crate's types; what needs a crate's own
//! types stays in that crate's `tests/common`.
//!
//! Every helper fails loudly: a broken fixture is a failed test (a panic naming what broke), not a
//! value to handle.

// Test support fails loudly: a broken fixture is a failed test, not a value to handle (which is
// why no helper's doc has a `# Panics` section: every one panics on a broken fixture).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::missing_panics_doc)]

pub mod baseline;
pub mod cgroup;
pub mod child;
pub mod git;
pub mod layout;
pub mod listener;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod net;
pub mod pdf;
pub mod process;
pub mod serial;
pub mod wait;
pub mod web_file;
pub mod workspace;
