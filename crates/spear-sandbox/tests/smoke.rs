//! The sandbox end to end on a hand-built spec: the real bwrap, seccomp, cgroup backend.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use spear_core::ExecutionProfile;
use spear_sandbox::{
    Bind, BwrapSpec, EnvInputs, Etc, Exit, Sandbox, SandboxConfig, Stop, TmpfsSizes, Watch,
    etc_entries, sandbox_env, system_dirs,
};

fn spec(ws: &Path, write: bool, command: &[&str]) -> BwrapSpec {
    let home = PathBuf::from("/home/sandbox-user");
    BwrapSpec {
        profile: ExecutionProfile {
            workspace_read: true,
            workspace_write: write,
            ..ExecutionProfile::default()
        },
        command: command.iter().map(OsString::from).collect(),
        cwd: ws.to_path_buf(),
        home: home.clone(),
        system: system_dirs(Path::new("/")),
        etc: Etc::Entries(etc_entries(Path::new("/etc"))),
        toolchains: vec![],
        roots: vec![Bind {
            host: ws.to_path_buf(),
            mount: ws.to_path_buf(),
        }],
        anchors: vec![],
        protected: vec![],
        masks: vec![],
        env: sandbox_env(EnvInputs {
            host: &[],
            home: &home,
            path: &[PathBuf::from("/usr/bin"), PathBuf::from("/bin")],
        }),
        tmpfs: TmpfsSizes::default(),
        seccomp_fd: 3,
        network: None,
    }
}

fn watch(secs: u64) -> Watch {
    Watch {
        timeout: Duration::from_secs(secs),
        output_cap: 1 << 16,
        flood_bytes: 1 << 24,
        cancel: None,
        tee: None,
    }
}

#[test]
fn runs_and_reports() {
    let ws = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(SandboxConfig::default());
    let s = spec(
        ws.path(),
        true,
        &["/bin/sh", "-c", "echo hi; echo err >&2; touch made; exit 3"],
    );
    let out = sandbox.run(&s, &watch(20)).unwrap();
    assert_eq!(out.finished.exit, Exit::Code(3), "{out:?}");
    assert_eq!(out.finished.stop, Stop::None);
    assert_eq!(out.finished.stdout.text, "hi\n");
    assert_eq!(out.finished.stderr.text, "err\n");
    assert!(ws.path().join("made").exists());
}
