//! The systemd backend: each command runs in a transient scope of the user's systemd manager
//! (or, for root without a user bus, the system manager's: [`Manager`]),
//! `systemd-run --user --scope --collect -p MemoryMax=.. -p MemorySwapMax=.. -p TasksMax=..
//! -p CPUQuota=..% --quiet --unit=<name> -- <argv>`.
//!
//! systemd-run creates the scope, moves itself into it and execs the command, so the command's
//! whole tree is born inside. `--collect` lets systemd drop the unit once its last process exits,
//! even when it failed.
//!
//! systemd-run reaches the user manager through the session bus, named by
//! `$DBUS_SESSION_BUS_ADDRESS` or found at `$XDG_RUNTIME_DIR/bus`. The spawner builds the
//! command's environment from an allowlist, so the prefix carries those variables itself
//! (`env VAR=.. systemd-run ..`) and removes them again after systemd-run (`-- env -u VAR ..`), so
//! that the bus address does not reach the sandboxed command.
//!
//! Detection also requires the unified cgroup v2 hierarchy with memory, pids and cpu available in
//! our cgroup: on a cgroup v1 host, or where the user manager is not delegated those controllers,
//! systemd accepts the properties and enforces nothing, which would be a silent pass.
//!
//! Untested on a real systemd here: the hosts spear is tested on have no systemd. The argv is
//! unit-tested.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::backend::{CgroupBackend, check_session};
use super::backend_kind::BackendKind;
use super::command_cgroup::{CommandCgroup, Control};
use super::error::CgroupError;
use super::limits::{CgroupLimits, SessionBudget};
use super::parse;
use super::session_cgroup::{SessionCgroup, SessionControl};
use super::systemd_units::{Manager, ScopeControl, SliceControl, SystemdScope};

/// The slice unit of a session named `name`. A `-` in a slice's name means nesting to systemd
/// (`a-b.slice` is inside `a.slice`), so each becomes `_`: the session's slice is one unit
/// directly in the user manager's root slice.
pub(crate) fn slice_unit(name: &str) -> String {
    format!("{}.slice", name.replace('-', "_"))
}

/// The argv that starts a session's slice `unit` as a transient unit of the user's manager with
/// the budget as its properties (`TasksMax`, `MemoryMax`): systemd-run cannot make a slice, so
/// through the manager's `StartTransientUnit` with busctl. Its scopes (`--slice=`) then count
/// against it; stopping it stops them all, and a transient unit leaves nothing behind once
/// stopped.
pub(crate) fn slice_start_argv(
    scope: &SystemdScope,
    budget: &SessionBudget,
    unit: &str,
) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![scope.busctl.clone().into()];
    for arg in [
        scope.manager.flag(),
        "call",
        "org.freedesktop.systemd1",
        "/org/freedesktop/systemd1",
        "org.freedesktop.systemd1.Manager",
        "StartTransientUnit",
        "ssa(sv)a(sa(sv))",
        unit,
        "fail",
        "2",
        "TasksMax",
        "t",
        &budget.tasks_max.to_string(),
        "MemoryMax",
        "t",
        &budget.memory_max_bytes.to_string(),
        "0",
    ] {
        argv.push(arg.into());
    }
    argv
}

/// The argv prefix that runs a command in a scope named `name` with `limits`, inside the
/// session's slice `slice` when it has one.
pub(crate) fn scope_argv(
    scope: &SystemdScope,
    limits: &CgroupLimits,
    name: &str,
    slice: Option<&str>,
) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![scope.env.clone().into()];
    argv.extend(
        scope
            .bus_env
            .iter()
            .map(|(k, v)| OsString::from(format!("{k}={v}"))),
    );
    argv.push(scope.systemd_run.clone().into());
    for arg in [
        scope.manager.flag().to_owned(),
        "--scope".to_owned(),
        "--collect".to_owned(),
        "-p".to_owned(),
        format!("MemoryMax={}", limits.memory_max_bytes),
        "-p".to_owned(),
        format!("MemorySwapMax={}", limits.swap_max_bytes),
        "-p".to_owned(),
        format!("TasksMax={}", limits.tasks_max),
        "-p".to_owned(),
        format!("CPUQuota={}%", limits.cpu_percent),
    ] {
        argv.push(arg.into());
    }
    if let Some(slice) = slice {
        argv.push(format!("--slice={slice}").into());
    }
    for arg in [
        "--quiet".to_owned(),
        format!("--unit={name}"),
        "--".to_owned(),
    ] {
        argv.push(arg.into());
    }
    argv.push(scope.env.clone().into());
    for (key, _) in &scope.bus_env {
        argv.push("-u".into());
        argv.push(key.into());
    }
    argv
}

impl CgroupBackend for SystemdScope {
    fn kind(&self) -> BackendKind {
        BackendKind::SystemdScope
    }

    fn describe(&self) -> String {
        let bus: Vec<String> = self
            .bus_env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        match self.manager {
            Manager::User => format!(
                "systemd user scope via {} ({}; untested on real systemd by spear's own tests)",
                self.systemd_run.display(),
                bus.join(" ")
            ),
            Manager::System => format!(
                "systemd system scope via {} (root without a user bus; untested on real systemd \
                 by spear's own tests)",
                self.systemd_run.display()
            ),
        }
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
        let slice = match session.map(|s| &s.control) {
            None => None,
            Some(SessionControl::Systemd(slice)) => Some(slice.unit.as_str()),
            Some(_) => {
                return Err(CgroupError::Systemd(
                    "a session made by another backend cannot hold a systemd scope".to_owned(),
                ));
            }
        };
        let control = ScopeControl {
            scope: self.clone(),
            unit: format!("{name}.scope"),
        };
        let mut cgroup =
            CommandCgroup::new(BackendKind::SystemdScope, name, Control::Systemd(control));
        cgroup.argv_prefix = scope_argv(self, limits, name, slice);
        cgroup.session = session.cloned();
        Ok(cgroup)
    }

    /// A transient slice with the budget ([`slice_start_argv`]); each command's scope goes in it.
    fn prepare_session(
        &self,
        budget: &SessionBudget,
        command: &CgroupLimits,
        name: &str,
    ) -> Result<SessionCgroup, CgroupError> {
        check_session(budget, command, name)?;
        let control = SliceControl {
            scope: self.clone(),
            unit: slice_unit(name),
        };
        let command_line = slice_start_argv(self, budget, &control.unit);
        let (program, args) = command_line
            .split_first()
            .ok_or_else(|| CgroupError::Systemd("no program to start a slice with".to_owned()))?;
        let output = Command::new(program)
            .args(args)
            .envs(self.bus_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                CgroupError::Systemd(format!("cannot run {}: {e}", self.busctl.display()))
            })?;
        if !output.status.success() {
            return Err(CgroupError::Systemd(format!(
                "could not start the session's slice {}: {}",
                control.unit,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(SessionCgroup::new(
            BackendKind::SystemdScope,
            name,
            *budget,
            SessionControl::Systemd(control),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The system manager's argv: `--system` everywhere `--user` was, and no bus variables.
    #[test]
    fn the_system_managers_argv() {
        let mut system = scope(&[]);
        system.manager = Manager::System;
        let limits = CgroupLimits::default();
        let argv: Vec<String> = scope_argv(&system, &limits, "spear-1-1", None)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            argv[..3],
            ["/usr/bin/env", "/usr/bin/systemd-run", "--system"]
        );
        assert!(!argv.iter().any(|a| a == "--user" || a == "-u"), "{argv:?}");
        let budget = SessionBudget::default();
        let start = slice_start_argv(&system, &budget, "spear_session_1_1.slice");
        assert_eq!(start[1], "--system");
    }

    fn scope(bus_env: &[(&str, &str)]) -> SystemdScope {
        SystemdScope {
            manager: Manager::User,
            env: "/usr/bin/env".into(),
            systemd_run: "/usr/bin/systemd-run".into(),
            systemctl: "/usr/bin/systemctl".into(),
            busctl: "/usr/bin/busctl".into(),
            bus_env: bus_env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cgroup2_mount: "/sys/fs/cgroup".into(),
        }
    }

    fn strings(argv: &[OsString]) -> Vec<&str> {
        argv.iter()
            .map(|a| a.to_str().unwrap_or("<non-utf8>"))
            .collect()
    }

    #[test]
    fn argv_for_the_defaults() {
        let scope = scope(&[("XDG_RUNTIME_DIR", "/run/user/1000")]);
        assert_eq!(
            strings(&scope_argv(
                &scope,
                &CgroupLimits::default(),
                "spear-12-3",
                None
            )),
            vec![
                "/usr/bin/env",
                "XDG_RUNTIME_DIR=/run/user/1000",
                "/usr/bin/systemd-run",
                "--user",
                "--scope",
                "--collect",
                "-p",
                "MemoryMax=2147483648",
                "-p",
                "MemorySwapMax=0",
                "-p",
                "TasksMax=256",
                "-p",
                "CPUQuota=800%",
                "--quiet",
                "--unit=spear-12-3",
                "--",
                "/usr/bin/env",
                "-u",
                "XDG_RUNTIME_DIR",
            ]
        );
    }

    #[test]
    fn argv_with_other_limits_and_both_bus_variables() {
        let scope = scope(&[
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ]);
        let limits = CgroupLimits {
            memory_max_bytes: 64 << 20,
            swap_max_bytes: 1 << 20,
            tasks_max: 10,
            cpu_percent: 50,
        };
        assert_eq!(
            strings(&scope_argv(&scope, &limits, "x", None)),
            vec![
                "/usr/bin/env",
                "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
                "XDG_RUNTIME_DIR=/run/user/1000",
                "/usr/bin/systemd-run",
                "--user",
                "--scope",
                "--collect",
                "-p",
                "MemoryMax=67108864",
                "-p",
                "MemorySwapMax=1048576",
                "-p",
                "TasksMax=10",
                "-p",
                "CPUQuota=50%",
                "--quiet",
                "--unit=x",
                "--",
                "/usr/bin/env",
                "-u",
                "DBUS_SESSION_BUS_ADDRESS",
                "-u",
                "XDG_RUNTIME_DIR",
            ]
        );
    }

    #[test]
    fn a_session_is_a_transient_slice_its_scopes_go_in() {
        let scope = scope(&[("XDG_RUNTIME_DIR", "/run/user/1000")]);
        let cases = [
            ("spear-session-12-0", "spear_session_12_0.slice"),
            ("s", "s.slice"),
            ("a.b_c", "a.b_c.slice"),
        ];
        for (name, unit) in cases {
            assert_eq!(slice_unit(name), unit);
        }
        let budget = SessionBudget {
            tasks_max: 1024,
            memory_max_bytes: 8 << 30,
        };
        assert_eq!(
            strings(&slice_start_argv(
                &scope,
                &budget,
                "spear_session_12_0.slice"
            )),
            vec![
                "/usr/bin/busctl",
                "--user",
                "call",
                "org.freedesktop.systemd1",
                "/org/freedesktop/systemd1",
                "org.freedesktop.systemd1.Manager",
                "StartTransientUnit",
                "ssa(sv)a(sa(sv))",
                "spear_session_12_0.slice",
                "fail",
                "2",
                "TasksMax",
                "t",
                "1024",
                "MemoryMax",
                "t",
                "8589934592",
                "0",
            ]
        );
        let argv = scope_argv(
            &scope,
            &CgroupLimits::default(),
            "spear-12-3",
            Some("spear_session_12_0.slice"),
        );
        let argv = strings(&argv);
        let at = argv.iter().position(|a| *a == "CPUQuota=800%");
        assert_eq!(
            at.map(|i| &argv[i + 1..i + 4]),
            Some(
                &[
                    "--slice=spear_session_12_0.slice",
                    "--quiet",
                    "--unit=spear-12-3"
                ][..]
            )
        );
    }

    #[test]
    fn prepare_makes_no_files_and_checks_its_inputs() {
        let scope = scope(&[("XDG_RUNTIME_DIR", "/run/user/1000")]);
        let cgroup = scope.prepare(&CgroupLimits::default(), "spear-1-1");
        assert!(
            matches!(&cgroup, Ok(c) if c.join_fds().is_empty() && c.dirs().is_empty() && c.argv_prefix().len() == 20)
        );
        if let Ok(cgroup) = cgroup {
            // Dropping it must not touch systemd: nothing was started.
            std::mem::forget(cgroup);
        }
        assert!(matches!(
            scope.prepare(&CgroupLimits::default(), "a/b"),
            Err(CgroupError::InvalidName(_))
        ));
        let zero = CgroupLimits {
            tasks_max: 0,
            ..CgroupLimits::default()
        };
        assert!(matches!(
            scope.prepare(&zero, "x"),
            Err(CgroupError::InvalidLimits(_))
        ));
    }

    #[test]
    fn membership_by_unit_name() {
        let control = ScopeControl {
            scope: scope(&[]),
            unit: "spear-1-1.scope".into(),
        };
        let inside = parse::parse_proc_cgroup(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/spear-1-1.scope\n",
        );
        let outside = parse::parse_proc_cgroup(
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/xspear-1-1.scope\n",
        );
        assert!(control.contains(&inside));
        assert!(!control.contains(&outside));
    }
}
