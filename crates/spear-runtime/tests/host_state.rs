//! The host's own state is never changed by a sandbox: its kernel settings (every writable file
//! under /proc/sys and /sys, as root and as a user), its mount table, routes and network
//! namespaces, whatever kind of command runs. One test binary of its own: nothing else runs in it
//! while it compares the host before and after.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Fixture, read_only, run_committed, writable};
use spear_core::{ExecutionProfile, ToolStatus};
use spear_runtime::{CommandLine, CommandRequest, Jobs};
use spear_sandbox::CancelToken;
use spear_testkit::process::is_root;

/// Every file under `dir` (no link followed) that this process may open for writing.
fn writable_files(dir: &Path, out: &mut Vec<PathBuf>, budget: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            writable_files(&p, out, budget);
        } else if ft.is_file() {
            let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            if rustix::fs::access(c.as_c_str(), rustix::fs::Access::WRITE_OK).is_ok() {
                out.push(p);
            }
        }
    }
}

/// Every file of the host's /proc/sys and /sys this process could write is refused to the
/// sandbox, opened for writing (never written). The sandbox runs as the host's uid when spear
/// does; as root it is uid 0 in its user namespace, and the host-global files only check that.
#[test]
fn every_writable_kernel_setting_is_refused_to_the_sandbox() {
    let f = Fixture::new();
    let mut paths = Vec::new();
    let mut budget = 400_000;
    for dir in ["/proc/sys", "/sys"] {
        writable_files(Path::new(dir), &mut paths, &mut budget);
    }
    // Host-global files outside /proc/sys, and this process's own: writable by any user.
    for extra in [
        "/proc/sysrq-trigger",
        "/proc/self/comm",
        "/proc/self/oom_score_adj",
    ] {
        paths.push(PathBuf::from(extra));
    }
    if is_root() {
        assert!(
            paths.iter().any(|p| p.starts_with("/proc/sys/kernel")),
            "as root the host's kernel settings are writable: the sweep has something to refuse"
        );
    }
    // Positive control: the host opens them (the first of each kind) for writing.
    let control = paths.iter().find(|p| p.starts_with("/proc/self")).unwrap();
    assert!(
        std::fs::OpenOptions::new()
            .write(true)
            .open(control)
            .is_ok(),
        "{}",
        control.display()
    );
    let list: String = paths
        .iter()
        .map(|p| p.display().to_string() + "\n")
        .collect();
    std::fs::write(f.ws.join("paths.txt"), list).unwrap();
    std::fs::write(
        f.ws.join("probe.py"),
        "import os\nopened = 0\nfor p in open('paths.txt').read().split('\\n'):\n    if not p: continue\n    try:\n        fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)\n    except OSError:\n        continue\n    os.close(fd)\n    print('OPENED', p)\n    opened += 1\nprint('tried', opened)\n",
    )
    .unwrap();
    let r = f.safe("python3 probe.py");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(r.stdout.contains("tried 0"), "{}", r.stdout);
    assert!(!r.stdout.contains("OPENED"), "{}", r.stdout);
    let r = f.auto("python3 probe.py");
    assert!(!r.stdout.contains("OPENED"), "{}", r.stdout);
    assert!(r.stdout.contains("tried 0"), "{r:?}");
}

/// The reported case: a script writing `kernel.core_pattern` and `vm.stat_interval`. The host's
/// values are the same afterwards (as root the kernel would accept them: nothing but the
/// sandbox's read-only /proc stands in the way).
#[test]
fn a_script_cannot_change_the_hosts_kernel_settings() {
    let f = Fixture::new();
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    let (core, stat) = (
        read("/proc/sys/kernel/core_pattern"),
        read("/proc/sys/vm/stat_interval"),
    );
    std::fs::write(
        f.ws.join("k.sh"),
        "echo '|/bin/touch /tmp/spear-core-canary' > /proc/sys/kernel/core_pattern; echo 7 > /proc/sys/vm/stat_interval; cat /proc/sys/vm/stat_interval",
    )
    .unwrap();
    for profile in [read_only(), writable()] {
        let r = f.run(profile, "sh k.sh");
        assert!(
            r.stderr.contains("Read-only file system"),
            "refused by the mount: {r:?}"
        );
        assert_eq!(read("/proc/sys/kernel/core_pattern"), core);
        assert_eq!(read("/proc/sys/vm/stat_interval"), stat);
    }
}

/// What the host shows of its own state: its mount table (without the fields that name this
/// process), routes and network namespaces.
fn host_state() -> (Vec<String>, String, String) {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("ip")
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    (mounts, run(&["route"]), run(&["netns", "list"]))
}

/// Shared mounts, as a systemd host has them: a network namespace under `/run/netns` (`ip netns
/// add`) and a shared bind mount. Made as root only (a user cannot); removed on drop.
struct SharedMounts {
    ns: String,
    bind: Option<tempfile::TempDir>,
    /// Whether `ip netns add` made `/run/netns` a mount point (to be undone).
    made_run_netns: bool,
}

fn is_mount_point(path: &str) -> bool {
    std::process::Command::new("mountpoint")
        .args(["-q", path])
        .status()
        .is_ok_and(|s| s.success())
}

impl SharedMounts {
    fn new() -> Option<SharedMounts> {
        if !is_root() {
            return None;
        }
        let ns = format!("spear-probe-{}", std::process::id());
        let made_run_netns = !is_mount_point("/run/netns");
        let ok = |args: &[&str]| {
            assert!(
                std::process::Command::new(args[0])
                    .args(&args[1..])
                    .status()
                    .unwrap()
                    .success(),
                "{args:?}"
            );
        };
        ok(&["ip", "netns", "add", &ns]);
        let bind = tempfile::tempdir().unwrap();
        let p = bind.path().to_str().unwrap().to_owned();
        ok(&["mount", "--bind", &p, &p]);
        ok(&["mount", "--make-shared", &p]);
        Some(SharedMounts {
            ns,
            bind: Some(bind),
            made_run_netns,
        })
    }
}

impl Drop for SharedMounts {
    fn drop(&mut self) {
        if let Some(b) = self.bind.take() {
            let _ = std::process::Command::new("umount").arg(b.path()).status();
        }
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.ns])
            .status();
        let empty = std::fs::read_dir("/run/netns").is_ok_and(|mut d| d.next().is_none());
        if self.made_run_netns && empty {
            let _ = std::process::Command::new("umount")
                .arg("/run/netns")
                .status();
        }
    }
}

#[test]
fn no_kind_of_command_changes_the_hosts_mounts_routes_or_namespaces() {
    let shared = SharedMounts::new();
    let f = Fixture::with(|c| c.default_timeout = Duration::from_secs(20));
    let before = host_state();
    if let Some(s) = &shared {
        assert!(before.2.contains(&s.ns), "positive control: {}", before.2);
        assert!(
            before.0.iter().any(|l| l.contains("shared:")),
            "positive control: shared mounts present"
        );
        // Positive control: a change of the host's mount table is seen by the comparison.
        let probe = tempfile::tempdir().unwrap();
        let p = probe.path().to_str().unwrap();
        assert!(
            std::process::Command::new("mount")
                .args(["--bind", p, p])
                .status()
                .unwrap()
                .success()
        );
        assert_ne!(host_state(), before, "the comparison sees a new mount");
        assert!(
            std::process::Command::new("umount")
                .arg(p)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(host_state(), before);
    }
    let networked = common::networked();
    let request = |script: &str, profile: ExecutionProfile| {
        CommandRequest::new(CommandLine::Script(script.to_owned()), profile)
    };
    let check = |what: &str| {
        assert_eq!(host_state(), before, "after {what}");
    };
    // Closed, writable, networked.
    let r = f.safe("ls >/dev/null");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    check("a closed command");
    let r = f.auto("echo x > written.txt");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(f.ws.join("written.txt").exists());
    check("a writable command");
    let r = run_committed(
        &f.runner,
        &request("curl --version >/dev/null", networked.clone()),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    check("a networked command");
    // A timeout and a cancellation.
    let mut timed = request("sleep 60", networked.clone());
    timed.timeout = Some(Duration::from_secs(1));
    let r = run_committed(&f.runner, &timed);
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    check("a timeout");
    let cancel = CancelToken::new().unwrap();
    let mut cancelled = request("echo y > c.txt; sleep 60", writable());
    cancelled.cancel = Some(cancel.clone());
    let trigger = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        cancel.cancel();
    });
    let r = run_committed(&f.runner, &cancelled);
    trigger.join().unwrap();
    assert_eq!(r.status, ToolStatus::Cancelled, "{r:?}");
    check("a cancellation");
    // A background job, writable and networked, killed.
    let runner = std::sync::Arc::clone(&f.runner);
    let jobs = Jobs::default();
    let job = jobs
        .start(
            runner,
            request("echo j > job.txt; sleep 60", networked),
            "job",
            1,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    job.kill();
    let report = job.read().finished.unwrap();
    assert_eq!(report.result.status, ToolStatus::Cancelled, "{report:?}");
    drop(report);
    drop(jobs);
    check("a background job");
    drop(shared);
}
