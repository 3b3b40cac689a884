//! A way of enforcing the limits on this host ([`CgroupBackend`]), and what every backend checks
//! before it makes a session.

use std::sync::Arc;

use super::backend_kind::BackendKind;
use super::command_cgroup::CommandCgroup;
use super::error::CgroupError;
use super::limits::{CgroupLimits, SessionBudget};
use super::parse;
use super::session_cgroup::SessionCgroup;

/// A way of enforcing [`CgroupLimits`] on this host.
pub trait CgroupBackend: std::fmt::Debug + Send + Sync {
    /// Which mechanism this is.
    fn kind(&self) -> BackendKind;
    /// One line for `spear doctor`: what it uses (e.g. "cgroup v1 at
    /// `/sys/fs/cgroup/{memory,pids,cpu,freezer}/process_api/..`").
    fn describe(&self) -> String;
    /// Creates the cgroup of one command (name is unique per command, e.g. `spear-<pid>-<n>`),
    /// limits applied, directly under spear's own cgroup. Nothing is spawned yet.
    fn prepare(&self, limits: &CgroupLimits, name: &str) -> Result<CommandCgroup, CgroupError> {
        self.prepare_in(None, limits, name)
    }

    /// Creates the cgroup of one command inside `session` (made by this backend's
    /// [`prepare_session`](Self::prepare_session)), or under spear's own cgroup with `None`,
    /// limits applied. The command's cgroup keeps the session alive until it is removed.
    fn prepare_in(
        &self,
        session: Option<&Arc<SessionCgroup>>,
        limits: &CgroupLimits,
        name: &str,
    ) -> Result<CommandCgroup, CgroupError>;

    /// Creates a session's cgroup (name unique per session, e.g. `spear-session-<pid>-<n>`) with
    /// its budget applied, for commands limited by `command` (the budget must hold one of them).
    /// Nothing is spawned into it: commands' cgroups go inside it.
    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError>;

    /// Removes the empty cgroups a spear process that no longer exists left under spear's own
    /// cgroup (killed with SIGKILL, it could not remove them itself). Only empty directories are
    /// removed (rmdir), never a process killed; returns how many. Backends that make nothing
    /// there have nothing to do.
    fn sweep_stale(&self) -> usize {
        0
    }
}

/// What every backend checks before it makes a session: the command's limits and the budget
/// make sense, the budget holds one command, and `name` is a plain cgroup name. Attack: a name
/// such as `../x` making a directory outside spear's own cgroup.
pub(super) fn check_session(
    budget: &SessionBudget,
    command: &CgroupLimits,
    name: &str,
) -> Result<(), CgroupError> {
    command.validate()?;
    budget.validate(command)?;
    if !parse::is_valid_name(name) {
        return Err(CgroupError::InvalidName(name.to_owned()));
    }
    Ok(())
}
