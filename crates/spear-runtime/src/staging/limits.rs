//! The bounds of staging and its commit: how many entries a layer and how many changes a commit
//! take, how much of a result's lists is named, and how much of what a commit removes it keeps.

/// Entries a layer may hold before the commit fails closed.
pub const MAX_STAGED_ENTRIES: usize = 2_000_000;

/// The most changes one command's commit takes by default: past them it commits none of them
/// and says so, in bounded time. Judging, applying and recording a change for the checkpoint
/// cost tens of microseconds (a debug build: about 75), so 250,000 changes are answered in
/// seconds, not minutes, and a command that writes millions of files is answered as soon as
/// its layer has shown more than the limit. An operator may set another (`[limits] changes`).
pub const MAX_COMMITTED_CHANGES: usize = 250_000;

/// How many entries a result's or a reason's list names; the rest are counted ("... and N
/// more").
pub const MAX_LISTED: usize = 1_000;

/// Bytes of removed untracked files (ignored files, a git directory's) one commit keeps for
/// undo: enough for the configuration, data and secrets a project keeps out of git, not for a
/// removed build tree (which its build makes again). Past it, removed untracked files are named
/// as not kept.
pub const MAX_UNTRACKED_KEPT: u64 = 16 << 20;

/// Files larger than this are never compared byte by byte (they count as changed).
pub(crate) const MAX_COMPARE_BYTES: u64 = 64 << 20;
