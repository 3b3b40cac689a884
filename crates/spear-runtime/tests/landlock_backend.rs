//! The landlock backend (issue 34, part 2) under spear's runner, with a counting spawner: what it
//! refuses is refused before anything is spawned (the positive control: a command it can hold is
//! spawned once), it needs no bwrap, a required guarantee it cannot give refuses the command, and
//! nothing of a command's tree survives the call, though there is no PID namespace.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{CountingSpawner, Fixture, networked, read_only, runner_for, writable};
use spear_core::{ExecutionProfile, Guarantee as G, GuaranteeSet, ToolResult, ToolStatus};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig};
use spear_sandbox::{BackendChoice, Sandbox, SandboxConfig};
use spear_testkit::process::processes_with;

struct Case {
    fixture: Fixture,
    spawner: Arc<CountingSpawner>,
    runner: CommandRunner,
}

/// A runner whose sandbox is the landlock backend (its config edited by `edit`), with the host's
/// cgroup backend and a counting spawner.
fn case(edit: impl FnOnce(&mut SandboxConfig)) -> Case {
    let fixture = Fixture::new();
    let spawner = Arc::new(CountingSpawner::default());
    let mut config = RunnerConfig::from_host();
    config.home.clone_from(&fixture.home);
    config.staging = vec![fixture.staging.clone()];
    config.sandbox.backend = BackendChoice::Landlock;
    edit(&mut config.sandbox);
    let backend = spear_sandbox::detect_cgroup_backend().map_err(|e| e.to_string());
    let sandbox = Sandbox::with_parts(config.sandbox.clone(), backend, spawner.clone());
    let runner = runner_for(&fixture.ws, config, Some(sandbox));
    Case {
        fixture,
        spawner,
        runner,
    }
}

impl Case {
    fn run(&self, profile: ExecutionProfile, script: &str) -> ToolResult {
        common::run_committed(
            &self.runner,
            &CommandRequest::new(CommandLine::Script(script.to_owned()), profile),
        )
    }
}

#[test]
fn what_it_cannot_hold_is_refused_before_anything_is_spawned() {
    let c = case(|_| {});
    for (profile, says) in [
        (writable(), "cannot stage writes"),
        (networked(), "cannot stage writes"),
        (
            common::plus(&read_only(), &[spear_core::Capability::Network]),
            "no network path",
        ),
    ] {
        let r = c.run(profile, "echo x > marker");
        assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
        assert!(r.reason.clone().unwrap_or_default().contains(says), "{r:?}");
        assert_eq!(c.spawner.launches(), 0, "{r:?}");
        assert!(!c.fixture.ws.join("marker").exists());
    }
    // A guarantee the backend cannot give, required by the profile: refused, nothing spawned.
    let r = c.run(
        read_only().with_required(GuaranteeSet::of(&[G::ProcessBoundary])),
        "true",
    );
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("process_boundary") && reason.contains("no PID namespace"),
        "{reason}"
    );
    assert_eq!(c.spawner.launches(), 0);
    // Positive control: a closed read-only command runs, spawned once.
    let r = c.run(read_only(), "cat README.md");
    assert_eq!(r.stdout, "hello\n", "{r:?}");
    assert_eq!(c.spawner.launches(), 1);
}

#[test]
fn it_needs_no_bubblewrap() {
    let c = case(|s| s.bwrap = "/nonexistent/bwrap".into());
    let r = c.run(read_only(), "cat README.md");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.stdout, "hello\n");
}

#[test]
fn nothing_of_the_tree_survives_though_it_left_the_session_and_its_parent() {
    let c = case(|_| {});
    // A grandchild in a session of its own, reparented away from the command: only the cgroup
    // still holds it.
    let r = c.run(
        read_only(),
        "setsid sh -c 'sleep 313.5 & echo started' < /dev/null; echo back",
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(
        r.stdout.contains("started") && r.stdout.contains("back"),
        "{r:?}"
    );
    assert!(
        processes_with("sleep 313.5").is_empty(),
        "killed with the call"
    );
}

#[test]
fn the_private_directories_are_private_to_the_command_and_removed_after_it() {
    let c = case(|_| {});
    let r = c.run(read_only(), "echo x > \"$TMPDIR/f\" && echo \"$TMPDIR\"");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let tmp = std::path::PathBuf::from(r.stdout.trim());
    assert!(tmp.is_absolute() && tmp.ends_with("tmp"), "{tmp:?}");
    assert!(!tmp.exists(), "removed after the command");
    // The next command gets others, and cannot see the first's.
    let r = c.run(read_only(), "echo \"$TMPDIR\"");
    assert_ne!(std::path::PathBuf::from(r.stdout.trim()), tmp);
}
