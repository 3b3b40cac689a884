//! The delegated backend (`SPEAR_RESOURCE_CONTROL=delegated`): an outer container runtime owns the
//! cgroup spear runs in and enforces the limits on all of it, spear included.
//!
//! spear creates no cgroup: [`CgroupBackend::prepare`] returns a [`CommandCgroup`] with no argv
//! prefix and no files, whose `kill_all` is a no-op and whose `limits_hit` reports nothing. Ending
//! a command's tree is then the caller's PID-namespace kill (the command is PID 1 of its own
//! namespace, and everything in it dies with it). The limits asked for are not enforced per command;
//! the operator who sets this vouches that the runtime's limits are what they want.

use std::sync::Arc;

use super::backend::{CgroupBackend, check_session};
use super::backend_kind::BackendKind;
use super::command_cgroup::{CommandCgroup, Control};
use super::error::CgroupError;
use super::limits::{CgroupLimits, SessionBudget};
use super::parse;
use super::session_cgroup::{SessionCgroup, SessionControl};

/// An outer runtime enforces the limits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Delegated;

impl CgroupBackend for Delegated {
    fn kind(&self) -> BackendKind {
        BackendKind::Delegated
    }

    fn describe(&self) -> String {
        "delegated (SPEAR_RESOURCE_CONTROL=delegated): an outer container runtime limits spear and its commands; \
         spear creates no cgroup"
            .to_owned()
    }

    fn prepare_in(
        &self,
        session: Option<&Arc<SessionCgroup>>,
        limits: &CgroupLimits,
        name: &str,
    ) -> Result<CommandCgroup, CgroupError> {
        limits.validate()?;
        if !parse::is_valid_name(name) {
            return Err(CgroupError::InvalidName(name.to_owned()));
        }
        let mut cgroup = CommandCgroup::new(BackendKind::Delegated, name, Control::Nothing);
        cgroup.session = session.cloned();
        Ok(cgroup)
    }

    /// Nothing to create: the outer runtime's limits on spear as a whole are the session's.
    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError> {
        check_session(budget, command, name)?;
        Ok(SessionCgroup::new(
            BackendKind::Delegated,
            name,
            *budget,
            SessionControl::Nothing,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_makes_nothing() {
        let cgroup = Delegated.prepare(&CgroupLimits::default(), "spear-1-1");
        assert!(matches!(&cgroup, Ok(c) if c.kind() == BackendKind::Delegated));
        if let Ok(cgroup) = cgroup {
            assert!(cgroup.argv_prefix().is_empty());
            assert!(cgroup.join_fds().is_empty());
            assert!(cgroup.dirs().is_empty());
            assert!(cgroup.kill_all().is_ok());
            assert_eq!(cgroup.limits_hit(), crate::cgroup::LimitsHit::default());
            assert!(matches!(cgroup.contains_pid(std::process::id()), Ok(false)));
            assert!(cgroup.remove().is_ok());
        }
        let session = Delegated.prepare_session(
            &crate::cgroup::SessionBudget::default(),
            &CgroupLimits::default(),
            "spear-session-1-1",
        );
        assert!(matches!(&session, Ok(s) if s.dirs().is_empty() && s.tasks_current().is_none()));
        if let Ok(session) = session {
            let session = Arc::new(session);
            let inside =
                Delegated.prepare_in(Some(&session), &CgroupLimits::default(), "spear-1-2");
            assert!(matches!(&inside, Ok(c) if c.dirs().is_empty()));
            drop(inside);
            assert!(Arc::try_unwrap(session).is_ok_and(|s| s.remove().is_ok()));
        }
    }
}
