//! Staged writes: a writable command writes into overlay layers of its own, and nothing reaches
//! the workspace before the caller has judged it.
//!
//! - [`Staging`] makes the layers before the command (`area`); the sandbox mounts them.
//! - After the command, [`Staging::commit`] reads what the command left in them (`upper`), has
//!   every change judged by the caller's [`Judge`], and puts the allowed ones into the workspace
//!   through `WorkspaceFs` (`commit`), within the bounds of `limits`. Refused changes are dropped
//!   and reported; nothing refused is ever on the host, not even for the length of the command.
//! - The cost of a commit is what the command wrote, not the size of the workspace: nothing walks
//!   the tree.

pub(crate) mod area;
mod commit;
mod limits;
mod tracked;
mod upper;

pub use area::{Staging, default_bases, sweep_stale};
pub use commit::{CommitReport, Judge, Proposed};
pub use limits::MAX_COMMITTED_CHANGES;
pub use tracked::TrackedRules;
