//! The sandbox end to end on a hand-built spec: the real bwrap, seccomp, cgroup backend.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spear_core::{Capability, CapabilitySet, ExecutionProfile};
use spear_sandbox::{
    Bind, BwrapSpec, EnvInputs, Etc, Exit, Overlay, Sandbox, SandboxConfig, SpecError, Stop,
    TmpfsSizes, Watch, etc_entries, sandbox_env, system_dirs,
};

/// The workspace visible, and writable when `write`.
fn profile(write: bool) -> ExecutionProfile {
    let mut granted = CapabilitySet::of(&[Capability::FilesystemRead]);
    if write {
        granted.insert(Capability::WorkspaceWrite);
    }
    ExecutionProfile::from_granted(granted, Vec::new())
}

/// The spec of a sandbox over the root `ws`, writable (staged through `staged`) when `write`.
fn spec(
    ws: &Path,
    write: bool,
    staged: Vec<Overlay>,
    command: &[&str],
) -> Result<BwrapSpec, SpecError> {
    let home = PathBuf::from("/home/sandbox-user");
    let env = sandbox_env(EnvInputs {
        host: &[],
        home: &home,
        path: &[PathBuf::from("/usr/bin"), PathBuf::from("/bin")],
        toolchain_vars: &[],
        user: None,
        pass: &[],
    });
    BwrapSpec::builder(
        profile(write),
        command.iter().map(OsString::from).collect(),
        ws.to_path_buf(),
        home,
    )
    .system(system_dirs(Path::new("/")))
    .etc(Etc::Entries(etc_entries(Path::new("/etc"))))
    .roots(vec![Bind {
        host: ws.to_path_buf(),
        mount: ws.to_path_buf(),
    }])
    .staged(staged)
    .env(env, vec![])
    .tmpfs(TmpfsSizes::default())
    .build()
}

fn watch(secs: u64) -> Watch {
    Watch {
        timeout: Duration::from_secs(secs),
        output_cap: 1 << 16,
        flood_bytes: 1 << 24,
        cancel: None,
        tee: None,
        stdin: None,
    }
}

/// A workspace and, beside it, the layers that stage its writes.
fn staged(base: &Path) -> (PathBuf, Overlay) {
    let ws = base.join("ws");
    let overlay = Overlay {
        lower: ws.clone(),
        upper: base.join("upper"),
        work: base.join("work"),
    };
    for d in [&ws, &overlay.upper, &overlay.work] {
        std::fs::create_dir_all(d).unwrap();
    }
    (ws, overlay)
}

#[test]
fn runs_and_reports_with_writes_staged() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, overlay) = staged(&dir.path().canonicalize().unwrap());
    std::fs::write(ws.join("old"), "old\n").unwrap();
    let sandbox = Sandbox::new(SandboxConfig::default());
    let s = spec(
        &ws,
        true,
        vec![overlay.clone()],
        &[
            "/bin/sh",
            "-c",
            "echo hi; echo err >&2; touch made; echo more >> old; cat old >&2; exit 3",
        ],
    )
    .unwrap();
    let out = sandbox.run(&s, &watch(20)).unwrap();
    assert_eq!(out.finished.exit, Exit::Code(3), "{out:?}");
    assert_eq!(out.finished.stop, Stop::None);
    assert_eq!(out.finished.stdout.text, "hi\n");
    assert_eq!(
        out.finished.stderr.text, "err\nold\nmore\n",
        "the command sees its writes"
    );
    // Nothing reached the root; everything is in the upper layer.
    assert!(!ws.join("made").exists());
    assert_eq!(std::fs::read_to_string(ws.join("old")).unwrap(), "old\n");
    assert!(overlay.upper.join("made").exists(), "positive control");
    assert_eq!(
        std::fs::read_to_string(overlay.upper.join("old")).unwrap(),
        "old\nmore\n"
    );
}

#[test]
fn a_writable_root_that_is_not_staged_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    let err = spec(ws.path(), true, vec![], &["/bin/sh", "-c", "touch made"]).unwrap_err();
    assert!(matches!(err, SpecError::Staging(_)), "{err}");
    assert!(!ws.path().join("made").exists());
    // Positive control: the same root read-only is built and runs.
    let sandbox = Sandbox::new(SandboxConfig::default());
    let s = spec(ws.path(), false, vec![], &["/bin/sh", "-c", "touch made"]).unwrap();
    let out = sandbox.run(&s, &watch(20)).unwrap();
    assert_ne!(out.finished.exit, Exit::Code(0), "read-only: {out:?}");
    assert!(!ws.path().join("made").exists());
}
