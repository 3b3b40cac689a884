//! The decision layer's view of the sandbox is the runner's: every host path a sandbox's spec
//! binds read-only at the same path is in `sandbox_view`'s `shown`, the private places are the
//! spec's tmpfs mounts, and its environment names are the spec's.

// Test fixtures fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_core::{Capability, CapabilitySet, ExecutionProfile};
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig, sandbox_view};
use spear_sandbox::{Etc, SystemDir};
use spear_workspace::{Workspace, WorkspaceConfig};

#[test]
fn the_view_is_what_the_spec_binds() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws_dir = base.join("ws");
    let home = base.join("home");
    let tool = base.join("tools/bin");
    for d in [&ws_dir, &home.join(".cargo/bin"), &tool] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut config = RunnerConfig::from_host();
    config.home = home.clone();
    let path =
        std::env::join_paths([tool.clone(), home.join(".cargo/bin"), "/usr/bin".into()]).unwrap();
    config.host_env = vec![
        (OsString::from("PATH"), path),
        (OsString::from("LANG"), OsString::from("C.UTF-8")),
        (OsString::from("API_TOKEN"), OsString::from("s3cr3t")),
    ];
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&ws_dir)).unwrap());
    let view = sandbox_view(&workspace, &config);
    let runner = CommandRunner::new(Arc::clone(&workspace), config);
    let request = CommandRequest::new(
        CommandLine::Argv(vec!["/bin/true".into()]),
        ExecutionProfile::from_granted(
            CapabilitySet::of(&[Capability::FilesystemRead]),
            Vec::new(),
        ),
    );
    let spec = runner.spec(&request, None).unwrap();

    let mut bound: Vec<PathBuf> = spec.toolchains().to_vec();
    for d in spec.system() {
        match d {
            SystemDir::Bind(p) | SystemDir::Symlink { path: p, .. } => bound.push(p.clone()),
        }
    }
    match spec.etc() {
        Etc::Entries(entries) => bound.extend(entries.iter().cloned()),
        Etc::View { dirs, .. } => bound.extend(dirs.iter().cloned()),
    }
    for p in &bound {
        assert!(
            view.shows(p),
            "{} is bound but not in the view",
            p.display()
        );
    }
    // The toolchain binds from PATH and the home's toolchain homes are there.
    assert!(view.shows(&tool), "{:?}", view.shown);
    assert!(
        view.shows(&home.join(".cargo/bin/cargo")),
        "{:?}",
        view.shown
    );
    assert!(view.shows(Path::new("/usr/include/stdio.h")));
    // The private places are the spec's own tmpfs mounts; a shown tree under home is not one.
    assert_eq!(spec.home(), home);
    assert!(view.is_private(Path::new("/tmp/x")));
    assert!(view.is_private(Path::new("/dev/shm/x")));
    assert!(view.is_private(&home.join("scratch")));
    assert!(!view.is_private(&home.join(".cargo/bin/x")));
    // The environment names are the spec's, secrets dropped.
    let mut names: Vec<String> = spec
        .env()
        .iter()
        .map(|(n, _)| n.to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut in_view = view.environment.clone();
    in_view.sort();
    assert_eq!(names, in_view);
    assert!(view.has_variable("LANG"));
    assert!(!view.has_variable("API_TOKEN"));
}

/// The host is looked at once: a runner made with the offer the policy's view was computed from
/// mounts exactly that offer, even when the host changed since; an offer discovered for other
/// roots is not taken (its toolchains could lie inside this workspace).
#[test]
fn a_discovered_offer_is_what_the_runner_mounts() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws_dir = base.join("ws");
    let other_ws = base.join("other");
    let home = base.join("home");
    let early = base.join("early/bin");
    let late = base.join("late/bin");
    for d in [&ws_dir, &other_ws, &home, &early] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut config = RunnerConfig::from_host();
    config.home = home.clone();
    let path = std::env::join_paths([early.clone(), late.clone(), "/usr/bin".into()]).unwrap();
    config.host_env = vec![(OsString::from("PATH"), path)];
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&ws_dir)).unwrap());
    config.discovered = Some(Arc::new(spear_runtime::HostOffer::discover(
        &workspace, &config,
    )));
    // The host changes after the look: a PATH entry appears.
    std::fs::create_dir_all(&late).unwrap();
    let request = CommandRequest::new(
        CommandLine::Argv(vec!["/bin/true".into()]),
        ExecutionProfile::from_granted(
            CapabilitySet::of(&[Capability::FilesystemRead]),
            Vec::new(),
        ),
    );
    let binds = |config: &RunnerConfig, ws: &Arc<Workspace>| {
        let runner = CommandRunner::new(Arc::clone(ws), config.clone());
        runner.spec(&request, None).unwrap().toolchains().to_vec()
    };
    let view = sandbox_view(&workspace, &config);
    assert!(view.shows(&early) && !view.shows(&late));
    let offered = binds(&config, &workspace);
    assert!(offered.contains(&early), "{offered:?}");
    assert!(!offered.contains(&late), "{offered:?}");
    // Positive control: a runner that looks for itself sees the new entry.
    let mut fresh = config.clone();
    fresh.discovered = None;
    assert!(binds(&fresh, &workspace).contains(&late));
    // An offer discovered for other roots is not taken.
    let other = Arc::new(Workspace::open(&WorkspaceConfig::new(&other_ws)).unwrap());
    assert!(binds(&config, &other).contains(&late));
}
