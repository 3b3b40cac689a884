//! Guarantee bits against the real mechanism: a real run reports what the sandbox set up; with
//! cgroup limits off, the cgroup backend missing or the network path missing, the result says so,
//! or a profile requiring the bit fails before anything is spawned (a marker the command would
//! write is absent, and the spawner was never called), each with a positive control.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{CountingSpawner, Fixture, networked, read_only, runner_for, writable};
use spear_core::{
    ExecutionProfile, Guarantee as G, GuaranteeSet, LimitsBackend, ToolResult, ToolStatus,
};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig};
use spear_sandbox::BackendKind;
use spear_sandbox::{Sandbox, SandboxConfig};

struct Case {
    fixture: Fixture,
    spawner: Arc<CountingSpawner>,
    runner: CommandRunner,
}

/// A runner over a fresh fixture whose sandbox config is edited by `edit`, with the cgroup
/// backend `backend` (the host's when `None`) and a counting spawner.
fn case(edit: impl FnOnce(&mut SandboxConfig), backend: Option<String>) -> Case {
    let fixture = Fixture::new();
    let spawner = Arc::new(CountingSpawner::default());
    let mut config = RunnerConfig::from_host();
    config.home.clone_from(&fixture.home);
    config.staging = vec![fixture.staging.clone()];
    edit(&mut config.sandbox);
    let backend = match backend {
        None => spear_sandbox::detect_cgroup_backend().map_err(|e| e.to_string()),
        Some(why) => Err(why),
    };
    let sandbox = Sandbox::with_parts(config.sandbox.clone(), backend, spawner.clone());
    let runner = runner_for(&fixture.ws, config, Some(sandbox));
    Case {
        fixture,
        spawner,
        runner,
    }
}

impl Case {
    /// Runs `script` with `profile`, its writes committed.
    fn run(&self, profile: ExecutionProfile, script: &str) -> ToolResult {
        common::run_committed(
            &self.runner,
            &CommandRequest::new(CommandLine::Script(script.to_owned()), profile),
        )
    }

    fn exists(&self, name: &str) -> bool {
        self.fixture.ws.join(name).exists()
    }

    fn launches(&self) -> usize {
        self.spawner.launches()
    }
}

fn requiring(profile: ExecutionProfile, bits: &[G]) -> ExecutionProfile {
    profile.with_required(GuaranteeSet::of(bits))
}

/// The host's cgroup backend, as results name it.
fn host_backend() -> LimitsBackend {
    match spear_sandbox::detect_cgroup_backend().unwrap().kind() {
        BackendKind::SystemdScope => LimitsBackend::SystemdScope,
        BackendKind::CgroupV2 => LimitsBackend::CgroupV2,
        BackendKind::CgroupV1 => LimitsBackend::CgroupV1,
        BackendKind::Delegated => LimitsBackend::Delegated,
    }
}

/// What every closed run of the real sandbox has, whatever its profile.
fn closed_bits() -> GuaranteeSet {
    GuaranteeSet::of(&[
        G::ProcessBoundary,
        G::WriteBoundary,
        G::ReadBoundary,
        G::EnvironmentScrubbed,
        G::NetworkClosed,
    ])
}

#[test]
fn a_real_closed_run_reports_what_the_sandbox_set_up() {
    let c = case(|_| {}, None);
    let backend = host_backend();
    let mut want = closed_bits();
    if backend.limits_the_tree() {
        want.insert(G::ResourceLimits);
    }
    for (profile, script) in [
        (read_only(), "cat README.md"),
        (writable(), "touch written"),
    ] {
        let r = c.run(profile.clone(), script);
        assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
        let g = r.guarantees.unwrap();
        assert_eq!(g.enforced, want, "{profile:?}");
        assert_eq!(g.limits, Some(backend));
        // The runtime judges nothing: target_policy is the tool layer's to add.
        assert!(!g.enforced.contains(G::TargetPolicy));
        assert!(!g.enforced.contains(G::NetworkFiltered));
    }
    assert!(c.exists("written"));
    // Refused before anything was set up: no guarantees at all.
    let r = c.run(
        common::granting(&[spear_core::Capability::Gpu]),
        "touch never",
    );
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert_eq!(r.guarantees, None);
    assert!(!c.exists("never"));
}

#[test]
fn limits_off_say_so_and_a_requirement_of_them_spawns_nothing() {
    // Required: refused before the preflight, nothing spawned.
    let c = case(|s| s.cgroup = None, None);
    let r = c.run(requiring(writable(), &[G::ResourceLimits]), "touch marker");
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("requires `resource_limits`") && reason.contains("turned off"),
        "{reason}"
    );
    assert_eq!(r.guarantees, None);
    assert!(!c.exists("marker"));
    assert_eq!(
        c.launches(),
        0,
        "nothing was spawned, not even the preflight"
    );
    // Positive control: the same sandbox without the requirement runs it, and says what it had.
    let r = c.run(writable(), "touch marker");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(c.exists("marker"));
    assert!(c.launches() > 0);
    let g = r.guarantees.unwrap();
    assert_eq!(
        g.enforced,
        closed_bits(),
        "no resource_limits without a cgroup"
    );
    assert_eq!(g.limits, None);
}

#[test]
fn no_cgroup_backend_fails_before_spawn_naming_the_bit() {
    let missing = || Some("no writable cgroup (test)".to_owned());
    let c = case(|_| {}, missing());
    let r = c.run(requiring(writable(), &[G::ResourceLimits]), "touch marker");
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("requires `resource_limits`")
            && reason.contains("no cgroup backend (no writable cgroup (test))"),
        "{reason}"
    );
    assert!(!c.exists("marker"));
    assert_eq!(c.launches(), 0);
    // Without the requirement the sandbox still fails closed with limits active, as before.
    let c = case(|_| {}, missing());
    let r = c.run(writable(), "touch marker");
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(r.reason.unwrap().contains("cannot be enforced"));
    assert!(!c.exists("marker"));
    assert_eq!(c.launches(), 0);
    // Positive control: the host's backend meets the requirement (or, delegated, cannot).
    let c = case(|_| {}, None);
    let r = c.run(requiring(writable(), &[G::ResourceLimits]), "touch marker");
    if host_backend().limits_the_tree() {
        assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
        assert!(c.exists("marker"));
        assert!(r.guarantees.unwrap().enforced.contains(G::ResourceLimits));
    } else {
        assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
        assert!(r.reason.unwrap().contains("`delegated`"));
        assert!(!c.exists("marker"));
    }
}

#[test]
fn a_missing_network_path_fails_a_filtered_requirement_before_spawn() {
    let absent = PathBuf::from("/nonexistent/slirp4netns");
    let c = case(|s| s.network.slirp4netns.clone_from(&absent), None);
    let r = c.run(
        requiring(networked(), &[G::NetworkFiltered]),
        "touch marker",
    );
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("requires `network_filtered`")
            && reason.contains("/nonexistent/slirp4netns"),
        "{reason}"
    );
    assert!(!c.exists("marker"));
    assert_eq!(c.launches(), 0);
    // A networked command cannot meet `network_closed` either, whatever the host has.
    let r = c.run(requiring(networked(), &[G::NetworkClosed]), "touch marker");
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("requires `network_closed`"),
        "{r:?}"
    );
    assert_eq!(c.launches(), 0);
    // Positive control: a closed command meets the same requirement on the same host (no network
    // is narrower than a filtered one), and runs.
    let r = c.run(requiring(writable(), &[G::NetworkFiltered]), "touch marker");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(c.exists("marker"));
    let g = r.guarantees.unwrap();
    assert!(g.enforced.contains(G::NetworkClosed) && !g.enforced.contains(G::NetworkFiltered));
}
