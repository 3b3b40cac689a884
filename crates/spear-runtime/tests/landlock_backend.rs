//! The landlock backend (issue 34, part 2) under spear's runner, with a counting spawner: what it
//! refuses is refused before anything is spawned (the positive control: a command it can hold is
//! spawned once), it needs no bwrap, a required guarantee it cannot give refuses the command, and
//! nothing of a command's tree survives the call, though there is no PID namespace.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{CountingSpawner, Fixture, HOST_SECRET, networked, read_only, runner_for, writable};
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

// The classes of tests/sandbox.rs, against the landlock backend, in SAFE's read-only profile (the
// backend's only one): the same probes and positive controls, with the expectations the backend
// states where they differ from bubblewrap's (no private `/tmp` at `/tmp`: `TMPDIR` names it).

/// A fixture whose runner uses the landlock backend, its config edited by `edit` too.
fn landlock(edit: impl FnOnce(&mut RunnerConfig)) -> Fixture {
    Fixture::with(|c| {
        c.sandbox.backend = BackendChoice::Landlock;
        edit(c);
    })
}

#[test]
fn credential_stores_and_shadow_are_not_visible() {
    let f = landlock(|_| {});
    assert!(
        f.home.join(".ssh/id_rsa").exists(),
        "positive control: the key exists"
    );
    let r = f.safe(&format!(
        "cat {h}/.ssh/id_rsa; ls -a {h}; cat /etc/shadow; ls /etc/ssh; echo home=$HOME",
        h = f.home.display()
    ));
    assert!(!r.stdout.contains("PRIVATE KEY"), "{r:?}");
    assert!(!r.stdout.contains(".ssh"), "{r:?}");
    assert!(r.stderr.contains("/etc/shadow"), "{r:?}");
    assert!(
        !r.stdout.contains(&format!("home={}", f.home.display())),
        "HOME is private: {r:?}"
    );
    let r = f.safe("head -1 /etc/passwd");
    assert!(r.stdout.starts_with("root:"), "positive control: {r:?}");
}

/// The node's TLS key where the sandbox shows its directory, as in tests/sandbox.rs: the
/// landlock backend refuses to open it, and the certificate beside it reads.
#[test]
fn the_node_s_tls_key_is_not_visible_beside_its_certificate() {
    let f = landlock(common::with_node_key);
    common::write_node_key(&f);
    let r = f.safe("cat tls/cert.pem; echo; cat tls/key.pem; grep -rl PRIVATE tls; echo done");
    assert!(
        r.stdout.starts_with("CERTIFICATE"),
        "positive control: {r:?}"
    );
    assert!(!r.stdout.contains("spear-node-key"), "{r:?}");
    assert!(r.stderr.contains("key.pem"), "{r:?}");
    assert!(r.stdout.contains("done"), "{r:?}");
    let on_host = std::fs::read_to_string(f.ws.join("tls/key.pem")).unwrap();
    assert_eq!(on_host, common::NODE_KEY, "the key is there to be read");
}

#[test]
fn host_environment_secrets_are_not_visible() {
    let f = landlock(|_| {});
    let r = f.safe("env; cat /proc/self/environ /proc/1/environ | tr '\\0' '\\n'");
    assert!(!r.stdout.contains(HOST_SECRET), "{r:?}");
    assert!(!r.stdout.contains("ghp_"), "{r:?}");
    assert!(!r.stdout.contains("OPENAI_API_KEY"));
    assert!(r.stdout.contains("LANG=C.UTF-8"), "positive control: {r:?}");
    assert!(r.stdout.contains("TERM=dumb"));
}

#[test]
fn an_fd_opened_by_the_parent_is_not_reachable() {
    use std::os::fd::AsRawFd as _;
    let f = landlock(|_| {});
    let secret = f.outside.join("secret-fd");
    std::fs::write(&secret, "FD-SECRET").unwrap();
    let fd = rustix::fs::open(
        &secret,
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let n = fd.as_raw_fd();
    assert!(
        rustix::io::fcntl_getfd(&fd).unwrap().is_empty(),
        "inheritable"
    );
    let r = f.safe(&format!(
        "ls /proc/self/fd; cat /proc/self/fd/{n}; cat <&{n}"
    ));
    assert!(!r.stdout.contains("FD-SECRET"), "{r:?}");
    let leaked = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("cat /proc/self/fd/{n}")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&leaked.stdout),
        "FD-SECRET",
        "positive control"
    );
    drop(fd);
}

#[test]
fn tiocsti_and_namespaces_fail() {
    let f = landlock(|_| {});
    let r = f.safe(
        "python3 -c \"import fcntl,termios\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('TIOCSTI-OK')\nexcept OSError as e: print('TIOCSTI-ERR', e.errno)\"; \
         unshare -Ur true && echo UNSHARE-OK; unshare -n true && echo UNSHARE-NET-OK; echo done",
    );
    assert!(r.stdout.contains("TIOCSTI-ERR 1"), "{r:?}");
    assert!(!r.stdout.contains("UNSHARE-OK"), "{r:?}");
    assert!(!r.stdout.contains("UNSHARE-NET-OK"), "{r:?}");
    assert!(r.stdout.contains("done"), "positive control: {r:?}");
}

#[test]
fn a_fork_bomb_is_stopped_and_leaves_no_process() {
    let f = landlock(|c| c.default_timeout = Duration::from_secs(8));
    let marker = "spearlandlockbomb";
    let r = f.safe(&format!(
        "{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 2; echo survived"
    ));
    assert!(
        r.reason.clone().unwrap_or_default().contains("tasks"),
        "{r:?}"
    );
    assert!(processes_with(marker).is_empty());
    assert!(
        std::process::Command::new("/bin/true")
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn a_memory_hog_is_killed() {
    let f = landlock(|c| {
        if let Some(l) = c.sandbox.cgroup.as_mut() {
            l.memory_max_bytes = 256 << 20;
        }
    });
    let r = f.safe("python3 -c 'b = bytearray(1 << 30); print(\"ALLOCATED\")'");
    assert!(!r.stdout.contains("ALLOCATED"), "{r:?}");
    assert!(r.reason.unwrap_or_default().contains("memory limit"));
    let r = f.safe("python3 -c 'b = bytearray(64 << 20); print(\"ALLOCATED\")'");
    assert!(r.stdout.contains("ALLOCATED"), "positive control: {r:?}");
}

#[test]
fn output_floods_are_capped_and_killed() {
    let f = landlock(|c| {
        c.output_cap = 64 * 1024;
        c.flood_bytes = 32 << 20;
    });
    let r = f.safe("yes");
    assert!(r.truncated, "{r:?}");
    assert!(r.stdout.len() < 70 * 1024);
    assert!(r.reason.unwrap_or_default().contains("printed more than"));
    assert!(processes_with("yes").iter().all(|p| !p.ends_with(": yes ")));
}

#[test]
fn a_timeout_kills_every_descendant() {
    let f = landlock(|_| {});
    let script = "setsid sleep 6926.1 & nohup sleep 6926.2 >/dev/null 2>&1 & disown; \
                  (sh -c 'sleep 6926.3 &' &); \
                  sh -c \"trap '' TERM INT HUP; while :; do sleep 6926.4; done\" & \
                  trap '' TERM; sleep 6926.5; echo never";
    assert!(processes_with("6926.").is_empty());
    let r = f.runner.run(&CommandRequest {
        timeout: Some(Duration::from_secs(2)),
        ..CommandRequest::new(CommandLine::Script(script.into()), read_only())
    });
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    assert!(
        processes_with("6926.").is_empty(),
        "{:?}",
        processes_with("6926.")
    );
    assert_eq!(r.process_exit_code(), 124);
}

#[test]
fn a_process_holding_stdout_cannot_hang_the_call() {
    let f = landlock(|_| {});
    let started = std::time::Instant::now();
    let r = f.safe("(sleep 1000.7; echo late) & echo first");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.stdout, "first\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(processes_with("sleep 1000.7").is_empty());
}

#[test]
fn exit_codes_and_not_found() {
    let f = landlock(|_| {});
    let r = f.safe("exit 7");
    assert_eq!((r.status, r.exit_code), (ToolStatus::Failed, Some(7)));
    let r = f.runner.run(&CommandRequest::new(
        CommandLine::Argv(vec!["no-such-program-spear".into()]),
        read_only(),
    ));
    assert_eq!(r.status, ToolStatus::NotFound, "{r:?}");
    assert_eq!(r.process_exit_code(), 127);
    let r = f.runner.run(&CommandRequest::new(
        CommandLine::Argv(vec!["echo".into(), "a b".into(), "$HOME".into()]),
        read_only(),
    ));
    assert_eq!(r.stdout, "a b $HOME\n", "{r:?}");
    let r = f.safe("false | true");
    assert_eq!(r.exit_code, Some(1), "pipefail: {r:?}");
}

#[test]
fn a_session_s_commands_share_its_scratch_directories_and_write_nowhere_else() {
    let f = landlock(|c| c.scratch = spear_runtime::ScratchMode::Session);
    let r = f.safe("echo kept > \"$TMPDIR/note\" && echo \"$TMPDIR $HOME\"");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let dirs: Vec<std::path::PathBuf> = r.stdout.split_whitespace().map(Into::into).collect();
    let scratch = f
        .runner
        .session_scratch()
        .expect("a session area")
        .dirs()
        .clone();
    assert_eq!(
        dirs,
        vec![scratch.tmp.clone(), scratch.home.clone()],
        "{r:?}"
    );
    // The next command of the session finds it (the positive control of the write), and still
    // cannot write beside the area.
    let beside = scratch
        .tmp
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("beside");
    let r = f.safe(&format!(
        "cat \"$TMPDIR/note\"; echo x > {} 2>/dev/null || echo refused",
        beside.display()
    ));
    assert_eq!(r.stdout, "kept\nrefused\n", "{r:?}");
    assert!(!beside.exists());
}
