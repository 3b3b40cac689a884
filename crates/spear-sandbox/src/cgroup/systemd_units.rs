//! The systemd manager as spear reaches it ([`SystemdScope`]: which manager, its programs and
//! bus), and the units spear makes in it: a command's scope ([`ScopeControl`]) and a session's
//! slice ([`SliceControl`]), killed, stopped and read through `systemctl`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::error::CgroupError;
use super::limits::LimitsHit;
use super::ops::KILL_DEADLINE;
use super::parse::{self, Hierarchy, ProcCgroupLine};
use super::v2_control;

/// Which systemd manager spear asks for its units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Manager {
    /// The user's manager, over the session bus.
    User,
    /// The system manager, for root on a host booted with systemd where no user bus is reachable
    /// (a root shell over ssh, a CI runner's job as root): the same transient scopes and slices,
    /// in the system's tree, where writing cgroups systemd did not delegate would fight it.
    System,
}

impl Manager {
    /// The flag systemd-run, systemctl and busctl take for it.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Manager::User => "--user",
            Manager::System => "--system",
        }
    }
}

/// The manager, programs and bus spear reaches systemd through.
#[derive(Debug, Clone)]
pub(crate) struct SystemdScope {
    /// Which manager.
    pub manager: Manager,
    pub env: PathBuf,
    pub systemd_run: PathBuf,
    pub systemctl: PathBuf,
    /// busctl, which starts a session's transient slice.
    pub busctl: PathBuf,
    /// The variables that lead to the user bus, as found.
    pub bus_env: Vec<(String, String)>,
    /// Where the cgroup v2 hierarchy is mounted.
    pub cgroup2_mount: PathBuf,
}

/// A session's transient slice.
#[derive(Debug)]
pub(crate) struct SliceControl {
    pub(super) scope: SystemdScope,
    pub(super) unit: String,
}

impl SliceControl {
    /// `systemctl --user|--system stop <slice>`: stops every scope in it (killing their processes), and
    /// the transient slice is gone.
    pub(crate) fn stop(&self) -> Result<(), CgroupError> {
        let output = self.scope.systemctl(&["stop", &self.unit])?;
        if output.status.success() {
            Ok(())
        } else {
            Err(CgroupError::Systemd(format!(
                "could not stop the session's slice {}: {}",
                self.unit,
                String::from_utf8_lossy(&output.stderr).trim()
            )))
        }
    }
}

impl SystemdScope {
    /// `systemctl --user|--system ARGS` on the manager's bus, its output captured.
    pub(super) fn systemctl(&self, args: &[&str]) -> Result<std::process::Output, CgroupError> {
        Command::new(&self.systemctl)
            .arg(self.manager.flag())
            .args(args)
            .envs(self.bus_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                CgroupError::Systemd(format!("cannot run {}: {e}", self.systemctl.display()))
            })
    }
}

/// A command's scope unit.
#[derive(Debug)]
pub(crate) struct ScopeControl {
    pub(super) scope: SystemdScope,
    pub(super) unit: String,
}

impl ScopeControl {
    fn systemctl(&self, args: &[&str]) -> Result<(bool, String), CgroupError> {
        let output = self.scope.systemctl(args)?;
        Ok((
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).trim().to_owned(),
        ))
    }

    fn active_state(&self) -> Result<String, CgroupError> {
        Ok(self
            .systemctl(&["show", "--property=ActiveState", "--value", &self.unit])?
            .1)
    }

    /// `systemctl kill --signal=SIGKILL` (every process of the unit), then waits until
    /// the unit is no longer active. A unit that never started or is already collected is fine.
    pub(crate) fn kill_all(&self) -> Result<(), CgroupError> {
        let deadline = Instant::now() + KILL_DEADLINE;
        let (killed, _) = self.systemctl(&["kill", "--signal=SIGKILL", &self.unit])?;
        loop {
            let state = self.active_state()?;
            if matches!(state.as_str(), "inactive" | "failed" | "") {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(CgroupError::Systemd(format!(
                    "{} is still {state} after SIGKILL{}; see `systemctl {} status {}`",
                    self.unit,
                    if killed {
                        ""
                    } else {
                        " (systemctl kill failed)"
                    },
                    self.scope.manager.flag(),
                    self.unit
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn limits_hit(&self) -> LimitsHit {
        match self.systemctl(&["show", "--property=ControlGroup", "--value", &self.unit]) {
            Ok((true, path)) if path.starts_with('/') => v2_control::limits_hit(
                &parse::under_root(&self.scope.cgroup2_mount, Path::new(&path)),
            ),
            Ok(_) => LimitsHit::default(),
            Err(error) => {
                tracing::warn!(unit = %self.unit, %error, "cannot read the scope's cgroup");
                LimitsHit::default()
            }
        }
    }

    pub(crate) fn contains(&self, lines: &[ProcCgroupLine<'_>]) -> bool {
        parse::cgroup_path(lines, Hierarchy::V2)
            .is_some_and(|p| p.ends_with(&format!("/{}", self.unit)))
    }
}
