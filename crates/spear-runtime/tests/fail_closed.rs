//! Fail closed: with bwrap absent, not executable or refused by the kernel, and with limits
//! active and no cgroup backend, the result is failed and the command was never spawned.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{Fixture, runner_for, sandbox_config, writable};
use spear_core::ToolStatus;
use spear_runtime::{CommandLine, CommandRequest, RunnerConfig};
use spear_sandbox::{Launch, ProcessSpawner, Running, Sandbox, Spawner};

/// Records every launch, then really spawns it.
#[derive(Debug, Default)]
struct RecordingSpawner {
    launches: Mutex<Vec<String>>,
}

impl Spawner for RecordingSpawner {
    fn spawn(&self, launch: &Launch<'_>) -> io::Result<Running> {
        let line = std::iter::once(launch.program.as_os_str())
            .chain(launch.args.iter().map(std::ffi::OsString::as_os_str))
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        self.launches.lock().unwrap().push(line);
        ProcessSpawner.spawn(launch)
    }
}

struct Case {
    fixture: Fixture,
    spawner: Arc<RecordingSpawner>,
    runner: spear_runtime::CommandRunner,
}

fn case(bwrap: PathBuf, backend: Option<Result<(), String>>) -> Case {
    let fixture = Fixture::new();
    let spawner = Arc::new(RecordingSpawner::default());
    let mut config = RunnerConfig::from_host();
    config.home.clone_from(&fixture.home);
    config.staging = vec![fixture.staging.clone()];
    config.sandbox = sandbox_config(|c| c.bwrap = bwrap);
    let backend = match backend {
        None => spear_sandbox::detect_cgroup_backend().map_err(|e| e.to_string()),
        Some(Err(why)) => Err(why),
        Some(Ok(())) => unreachable!(),
    };
    let sandbox = Sandbox::with_parts(config.sandbox.clone(), backend, spawner.clone());
    let runner = runner_for(&fixture.ws, config, Some(sandbox));
    Case {
        fixture,
        spawner,
        runner,
    }
}

fn run_marker(c: &Case) -> spear_core::ToolResult {
    common::run_committed(
        &c.runner,
        &CommandRequest::new(
            CommandLine::Script("touch marker-written".into()),
            writable(),
        ),
    )
}

fn marker(c: &Case) -> bool {
    c.fixture.ws.join("marker-written").exists()
}

#[test]
fn bwrap_absent() {
    let c = case(PathBuf::from("/nonexistent/bwrap"), None);
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert_eq!(r.process_exit_code(), 125);
    assert!(r.reason.unwrap().contains("not installed"));
    assert!(!marker(&c));
    assert!(c.spawner.launches.lock().unwrap().is_empty());
}

#[test]
fn bwrap_not_executable() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bwrap");
    std::fs::write(&fake, "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o644)).unwrap();
    let c = case(fake.clone(), None);
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(r.reason.unwrap().contains("cannot be executed"));
    assert!(!marker(&c));
    assert!(c.spawner.launches.lock().unwrap().is_empty());
    // Positive control: the same wrapper, executable, runs the command.
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = case(fake, None);
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(marker(&c));
}

#[test]
fn bwrap_refused_by_the_kernel_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = case(fake, None);
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(
        r.reason.unwrap().contains("refused"),
        "says the kernel refused"
    );
    assert!(!marker(&c));
    let launches = c.spawner.launches.lock().unwrap().clone();
    assert_eq!(launches.len(), 1, "only the preflight probe: {launches:?}");
    assert!(
        !launches[0].contains("marker-written"),
        "the command itself never spawned"
    );
    // Terminal: the next call fails at once, without probing again.
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Failed);
    assert_eq!(c.spawner.launches.lock().unwrap().len(), 1);
}

#[test]
fn limits_active_and_no_cgroup_backend() {
    let c = case(
        PathBuf::from("/usr/bin/bwrap"),
        Some(Err("no writable cgroup (test)".into())),
    );
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(r.reason.unwrap().contains("cannot be enforced"));
    assert!(!marker(&c));
    assert!(c.spawner.launches.lock().unwrap().is_empty());
    // Positive control: with the host's backend the same runner shape runs it.
    let c = case(PathBuf::from("/usr/bin/bwrap"), None);
    let r = run_marker(&c);
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(marker(&c));
    assert!(Path::new("/usr/bin/bwrap").exists());
}

/// A command too large for the kernel to pass to a program (a script arriving through MCP has
/// no command line to outgrow first) is refused before bwrap starts, saying what to do, and
/// nothing ran; the positive control, a script of 100 KiB, runs and writes.
#[test]
fn a_command_too_large_for_the_kernel_is_refused_before_anything_runs() {
    let script = |pad: usize| format!("echo ran > marker\n# {}\n", "x".repeat(pad));
    let f = Fixture::new();
    let r = f.auto(&script(100 << 10));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("marker")).unwrap(),
        "ran\n"
    );
    std::fs::remove_file(f.ws.join("marker")).unwrap();
    for pad in [200 << 10, 15 << 20] {
        let r = f.auto(&script(pad));
        assert_eq!(r.status, ToolStatus::Failed, "{pad}");
        let reason = r.reason.clone().unwrap_or_default();
        assert!(reason.contains("too large to run"), "{reason}");
        assert!(reason.contains("bash script.sh"), "{reason}");
        assert!(r.exit_code.is_none(), "{r:?}");
        assert!(!f.ws.join("marker").exists(), "the command ran");
    }
}
