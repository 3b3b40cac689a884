//! The sandbox's security claims, against the real bubblewrap, namespaces, seccomp and cgroups.
//! Each negative probe has a positive control that shows the probe would have seen the effect.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use common::{Fixture, HOST_SECRET};
use spear_core::{Capability, ToolStatus};
use spear_testkit::process::processes_with;

#[test]
fn writes_outside_the_roots_fail_and_inside_succeed() {
    let f = Fixture::new();
    let canary = f.outside.join("canary");
    let script = format!(
        "touch {c}; echo x >> /etc/hosts; touch /usr/local/bin/x; touch /pwned; touch {h}/.bashrc; touch inside",
        c = canary.display(),
        h = f.home.display()
    );
    let r = f.auto(&script);
    assert!(!canary.exists(), "canary written outside the roots: {r:?}");
    assert!(!f.home.join(".bashrc").exists());
    assert!(!std::path::Path::new("/pwned").exists());
    // Positive control: the same kind of write inside the root lands.
    assert!(f.ws.join("inside").exists(), "{r:?}");
    // And the outside dir is writable on the host, so the probe could have seen a write.
    std::fs::write(&canary, "").unwrap();
    assert!(canary.exists());
}

#[test]
fn safe_profile_workspace_is_read_only() {
    let f = Fixture::new();
    let r = f.safe("cat README.md; touch made-in-safe; echo x >> README.md");
    assert_eq!(r.stdout, "hello\n", "{r:?}");
    assert!(!f.ws.join("made-in-safe").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(r.stderr.contains("Read-only file system"), "{r:?}");
    // Positive control: the writable profile writes.
    let r = f.auto("touch made-in-auto");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(f.ws.join("made-in-auto").exists());
}

/// Runs the host's own git in `dir` (never through spear): what a user does after the command.
fn host_git(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn protected_entries_never_reach_the_host_whatever_the_command_does() {
    let f = Fixture::new();
    assert!(host_git(&f.ws, &["init", "-q"]).status.success());
    let hooks = f.ws.join(".git/hooks");
    std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let config = std::fs::read_to_string(f.ws.join(".git/config")).unwrap();
    std::fs::write(f.ws.join(".envrc"), "export A=1\n").unwrap();
    let canary = f.outside.join("hooked");
    let evil = format!("#!/bin/sh\\ntouch {}\\n", canary.display());
    let script = format!(
        "printf '{evil}' > .git/hooks/pre-commit; printf '{evil}' > .git/hooks/post-checkout; \
         chmod +x .git/hooks/*; echo '[core] fsmonitor = \"touch {c}\"' >> .git/config; \
         mv .git/config .git/config.old; mv .git .git-moved; rm -rf .git; \
         echo 'touch x' > .envrc; mv .envrc e2; ln -sf /tmp .git/hooks; \
         echo wrote-normal > normal.txt; ls .git-moved/hooks",
        c = canary.display()
    );
    let r = f.auto(&script);
    assert!(
        r.stdout.contains("post-checkout"),
        "the command saw its writes: {r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(hooks.join("pre-commit")).unwrap(),
        "#!/bin/sh\nexit 0\n",
        "{r:?}"
    );
    assert!(!hooks.join("post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".envrc")).unwrap(),
        "export A=1\n"
    );
    // The copy `mv` made of the repository is a repository too: none of its hooks or config.
    assert!(
        !f.ws.join(".git-moved/hooks/post-checkout").exists(),
        "{r:?}"
    );
    assert!(!f.ws.join(".git-moved/config").exists(), "{r:?}");
    // `rm -rf .git` is kept out as a whole: it is a repository's core, which no command
    // removes; the result is not `ok` and says why.
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains(".git (`.git` is protected: it is a git repository's directory"),
        "{reason}"
    );
    assert_eq!(r.status, ToolStatus::Denied, "{r:?}");
    // The host's own git runs nothing planted.
    std::fs::write(f.ws.join("file.txt"), "x\n").unwrap();
    for args in [
        &["status"][..],
        &["add", "file.txt"],
        &["commit", "-qm", "x"],
        &["log", "-1"],
    ] {
        let _ = host_git(&f.ws, args);
        let _ = host_git(&f.ws.join(".git-moved"), args);
    }
    assert!(!canary.exists());
    // Positive control: the rest of the workspace was written by the same command.
    assert_eq!(
        std::fs::read_to_string(f.ws.join("normal.txt")).unwrap(),
        "wrote-normal\n"
    );
}

#[test]
fn protected_entries_of_a_repository_made_by_the_command_never_reach_the_host() {
    let f = Fixture::new();
    let canary = f.outside.join("nested-hook");
    let script = format!(
        "mkdir -p libs/inner && git init -q libs/inner && \
         printf '#!/bin/sh\\ntouch {}\\n' > libs/inner/.git/hooks/post-checkout && \
         chmod +x libs/inner/.git/hooks/post-checkout && echo '[core] fsmonitor = x' >> libs/inner/.git/config && \
         echo 'touch x' > .envrc && mkdir -p .vscode && echo '{{}}' > .vscode/tasks.json && \
         echo kept > libs/inner/file.txt && git init -q libs/plain && \
         ls libs/inner/.git/hooks/post-checkout",
        canary.display()
    );
    let r = f.auto(&script);
    // Positive control: the command did create them (it listed the hook) and its other files stay.
    assert!(r.stdout.contains("post-checkout"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("libs/inner/file.txt")).unwrap(),
        "kept\n"
    );
    assert!(
        !f.ws.join("libs/inner/.git/hooks/post-checkout").exists(),
        "{r:?}"
    );
    assert!(
        !f.ws.join("libs/inner/.git/config").exists(),
        "a config naming a program"
    );
    // The rest of that repository's git directory is kept out with them (committed together or
    // not at all): no repository without its configuration.
    assert!(
        !f.ws.join("libs/inner/.git").exists(),
        "the repository's git directory, whole: {r:?}"
    );
    // Positive control: a repository made by the same command with nothing refused in it lands
    // whole, git's sample hooks included (they never run).
    assert!(f.ws.join("libs/plain/.git/HEAD").exists(), "{r:?}");
    assert!(f.ws.join("libs/plain/.git/config").exists(), "{r:?}");
    assert!(
        f.ws.join("libs/plain/.git/hooks/pre-commit.sample")
            .exists(),
        "git's samples never run: {r:?}"
    );
    assert!(!f.ws.join(".envrc").exists());
    assert!(!f.ws.join(".vscode").exists());
    assert_eq!(r.status, ToolStatus::Denied, "not everything landed: {r:?}");
    assert_eq!(
        r.exit_code,
        Some(spear_core::exit_code::REFUSED),
        "it exited 0; 126 says part was kept out: {r:?}"
    );
    let reason = r.reason.unwrap_or_default();
    assert!(
        reason.contains("host-run configuration"),
        "the result says so: {reason}"
    );
    assert!(
        reason.contains("the rest of the changes to libs/inner/.git ("),
        "{reason}"
    );
    let _ = host_git(&f.ws.join("libs/inner"), &["status"]);
    assert!(!canary.exists());
}

#[test]
fn credential_stores_and_shadow_are_not_visible() {
    let f = Fixture::new();
    assert!(
        f.home.join(".ssh/id_rsa").exists(),
        "positive control: the key exists on the host"
    );
    let r = f.auto(&format!(
        "cat {h}/.ssh/id_rsa; ls -a {h}; cat /etc/shadow; ls /etc/ssh; echo home=$HOME",
        h = f.home.display()
    ));
    assert!(!r.stdout.contains("PRIVATE KEY"), "{r:?}");
    assert!(!r.stdout.contains(".ssh"), "{r:?}");
    assert!(r.stdout.contains(&format!("home={}", f.home.display())));
    assert!(r.stderr.contains("/etc/shadow"), "{r:?}");
    // Positive control: a file of the same home is readable on the host, and /etc/passwd inside.
    let r = f.auto("head -1 /etc/passwd");
    assert!(r.stdout.starts_with("root:"), "{r:?}");
}

#[test]
fn tmp_is_private() {
    let f = Fixture::new();
    let host_tmp = tempfile::Builder::new()
        .prefix("spear-host-visible")
        .tempfile_in("/tmp")
        .unwrap();
    let name = host_tmp
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let marker = format!("spear-sandbox-made-{}", std::process::id());
    let r = f.auto(&format!("ls /tmp; touch /tmp/{marker}; ls /tmp"));
    assert!(!r.stdout.contains(&name), "{r:?}");
    assert!(
        r.stdout.contains(&marker),
        "positive control: the sandbox's own /tmp works: {r:?}"
    );
    assert!(!std::path::Path::new("/tmp").join(&marker).exists());
}

/// Attack: an agent reading the node's TLS key where the sandbox shows its directory (here the
/// workspace), to impersonate the node to its clients. Read-only and writable: the key reads
/// empty, the certificate beside it reads (positive control), and the key is on the host.
#[test]
fn the_node_s_tls_key_is_not_visible_beside_its_certificate() {
    let f = Fixture::with(common::with_node_key);
    common::write_node_key(&f);
    let script = "cat tls/cert.pem; echo; cat tls/key.pem; grep -rl PRIVATE tls; echo done";
    for r in [f.safe(script), f.auto(script)] {
        assert!(
            r.stdout.starts_with("CERTIFICATE"),
            "positive control: {r:?}"
        );
        assert!(!r.stdout.contains("spear-node-key"), "{r:?}");
        assert!(r.stdout.contains("done"), "{r:?}");
    }
    let on_host = std::fs::read_to_string(f.ws.join("tls/key.pem")).unwrap();
    assert_eq!(on_host, common::NODE_KEY, "the key is there to be read");
}

#[test]
fn host_environment_secrets_are_not_visible() {
    let f = Fixture::new();
    let r = f.auto("env; cat /proc/self/environ /proc/1/environ | tr '\\0' '\\n'");
    assert!(!r.stdout.contains(HOST_SECRET), "{r:?}");
    assert!(!r.stdout.contains("ghp_"), "{r:?}");
    assert!(!r.stdout.contains("OPENAI_API_KEY"));
    // Positive control: allowlisted host variables do arrive.
    assert!(r.stdout.contains("LANG=C.UTF-8"), "{r:?}");
    assert!(r.stdout.contains("TERM=dumb"));
}

#[test]
fn an_fd_opened_by_the_parent_is_not_reachable() {
    let f = Fixture::new();
    let secret = f.outside.join("secret-fd");
    std::fs::write(&secret, "FD-SECRET").unwrap();
    // Opened without O_CLOEXEC, as a careless library in the harness might.
    let fd = rustix::fs::open(
        &secret,
        rustix::fs::OFlags::RDONLY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let n = fd.as_raw_fd();
    assert!(
        rustix::io::fcntl_getfd(&fd).unwrap().is_empty(),
        "positive control: inheritable"
    );
    let probe = format!("ls /proc/self/fd; cat /proc/self/fd/{n}; cat <&{n}");
    let r = f.auto(&probe);
    assert!(!r.stdout.contains("FD-SECRET"), "{r:?}");
    // Positive control: the same probe in a child spawned the ordinary way reads the leaked fd
    // (by its /proc path: dash's `<&N` takes one digit only).
    let leaked = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("cat /proc/self/fd/{n}")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&leaked.stdout), "FD-SECRET");
    drop(fd);
}

#[test]
fn tiocsti_and_nested_namespaces_fail() {
    let f = Fixture::new();
    let r = f.auto(
        "python3 -c \"import fcntl,termios,os\nfd=os.open('/dev/ptmx', os.O_RDWR)\ntry:\n    fcntl.ioctl(fd, termios.TIOCSTI, b'x'); print('TIOCSTI-OK')\nexcept OSError as e: print('TIOCSTI-ERR', e.errno)\"; \
         unshare -Ur true && echo UNSHARE-OK; unshare -n true && echo UNSHARE-NET-OK; echo done",
    );
    assert!(r.stdout.contains("TIOCSTI-ERR 1"), "{r:?}");
    assert!(!r.stdout.contains("UNSHARE-OK"), "{r:?}");
    assert!(!r.stdout.contains("UNSHARE-NET-OK"), "{r:?}");
    assert!(
        r.stdout.contains("done"),
        "positive control: the script ran to the end: {r:?}"
    );
}

#[test]
fn a_fork_bomb_is_stopped_and_leaves_no_process() {
    let f = Fixture::with(|c| {
        c.default_timeout = Duration::from_secs(8);
    });
    let marker = "spearforkbomb";
    let r = f.auto(&format!(
        "{marker}() {{ {marker} | {marker} & }}; {marker}; sleep 2; echo survived"
    ));
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("tasks"),
        "the task limit is reported: {r:?}"
    );
    assert!(processes_with(marker).is_empty());
    // The host can still fork.
    assert!(
        std::process::Command::new("/bin/true")
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn a_memory_hog_is_killed() {
    let f = Fixture::with(|c| {
        if let Some(l) = c.sandbox.cgroup.as_mut() {
            l.memory_max_bytes = 256 << 20;
        }
    });
    let r = f.auto("python3 -c 'b = bytearray(1 << 30); print(\"ALLOCATED\")'");
    assert!(!r.stdout.contains("ALLOCATED"), "{r:?}");
    assert_ne!(r.status, ToolStatus::Ok);
    assert!(r.reason.unwrap_or_default().contains("memory limit"));
    // Positive control: a modest allocation under the limit works.
    let r = f.auto("python3 -c 'b = bytearray(64 << 20); print(\"ALLOCATED\")'");
    assert!(r.stdout.contains("ALLOCATED"), "{r:?}");
}

#[test]
fn output_floods_are_capped_and_killed() {
    let f = Fixture::with(|c| {
        c.output_cap = 64 * 1024;
        c.flood_bytes = 32 << 20;
    });
    let started = Instant::now();
    let r = f.auto("yes");
    assert!(r.truncated, "{}", r.reason.clone().unwrap_or_default());
    assert!(r.stdout.len() < 70 * 1024);
    assert!(r.stdout.contains("cut from the middle"));
    assert!(r.reason.unwrap_or_default().contains("printed more than"));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(processes_with("yes").iter().all(|p| !p.ends_with(": yes ")));
}

#[test]
fn a_timeout_kills_every_descendant() {
    let f = Fixture::new();
    let script = "setsid sleep 5926.1 & nohup sleep 5926.2 >/dev/null 2>&1 & disown; \
                  (sh -c 'sleep 5926.3 &' &); \
                  sh -c \"trap '' TERM INT HUP; while :; do sleep 5926.4; done\" & \
                  trap '' TERM; sleep 5926.5; echo never";
    assert!(processes_with("5926.").is_empty());
    let started = Instant::now();
    let r = f.runner.run(&spear_runtime::CommandRequest {
        timeout: Some(Duration::from_secs(2)),
        ..spear_runtime::CommandRequest::new(
            spear_runtime::CommandLine::Script(script.into()),
            common::writable(),
        )
    });
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        processes_with("5926.").is_empty(),
        "survivors: {:?}",
        processes_with("5926.")
    );
    assert_eq!(r.process_exit_code(), 124);
}

#[test]
fn background_processes_die_with_the_call() {
    let f = Fixture::new();
    let r =
        f.auto("nohup sleep 2718.1 >/dev/null 2>&1 & disown; setsid sleep 2718.2 & echo started");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(r.stdout.contains("started"));
    assert!(
        processes_with("2718.").is_empty(),
        "{:?}",
        processes_with("2718.")
    );
}

#[test]
fn a_process_holding_stdout_cannot_hang_the_call() {
    let f = Fixture::new();
    let started = Instant::now();
    let r = f.auto("(sleep 1000.5; echo late) & echo first");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.stdout, "first\n");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_command_runs_in_the_launch_directory_with_a_private_home() {
    let f = Fixture::new();
    let r = f.auto("pwd; echo $HOME; touch $HOME/x && echo home-writable; ls /dev; cat /proc/1/cmdline | tr '\\0' ' '");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], f.ws.display().to_string(), "{r:?}");
    assert_eq!(lines[1], f.home.display().to_string());
    assert!(r.stdout.contains("home-writable"));
    assert!(!f.home.join("x").exists(), "the home directory is private");
    for dev in ["null", "zero", "urandom", "shm"] {
        assert!(r.stdout.lines().any(|l| l == dev), "{dev} in {r:?}");
    }
    assert!(
        !r.stdout.lines().any(|l| l.starts_with("sd") || l == "mem"),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("bwrap") || r.stdout.contains("bash"),
        "pid 1 is the sandbox's: {r:?}"
    );
}

#[test]
fn exit_codes_and_not_found() {
    let f = Fixture::new();
    let r = f.auto("exit 7");
    assert_eq!((r.status, r.exit_code), (ToolStatus::Failed, Some(7)));
    let r = f.runner.run(&spear_runtime::CommandRequest::new(
        spear_runtime::CommandLine::Argv(vec!["no-such-program-spear".into()]),
        common::writable(),
    ));
    assert_eq!(r.status, ToolStatus::NotFound, "{r:?}");
    assert_eq!(r.process_exit_code(), 127);
    let r = f.runner.run(&spear_runtime::CommandRequest::new(
        spear_runtime::CommandLine::Argv(vec!["echo".into(), "a b".into(), "$HOME".into()]),
        common::writable(),
    ));
    assert_eq!(
        r.stdout, "a b $HOME\n",
        "argv is never run through a shell: {r:?}"
    );
    let r = f.auto("false | true");
    assert_eq!(r.exit_code, Some(1), "pipefail: {r:?}");
}

/// `cmd | head` succeeds as in bash: a producer ended by SIGPIPE because a later stage stopped
/// reading is no failure, while a stage that really fails still fails its pipeline.
#[test]
fn a_pipeline_cut_short_by_its_reader_succeeds() {
    let f = Fixture::new();
    for (script, code, stdout) in [
        ("seq 1 1000000 | head -3", 0, "1\n2\n3\n"),
        ("yes | head -1 && echo next", 0, "y\nnext\n"),
        (
            "set -e; seq 1 1000000 | head -1; echo after",
            0,
            "1\nafter\n",
        ),
        ("false | cat", 1, ""),
        ("grep x /nonexistent 2>/dev/null | wc -l", 2, "0\n"),
        ("seq 1 1000000 | head -1 | false", 1, ""),
    ] {
        let r = f.auto(&spear_policy::script_to_run(script));
        assert_eq!(
            (r.exit_code, r.stdout.as_str()),
            (Some(code), stdout),
            "{script}: {r:?}"
        );
    }
}

#[test]
fn unimplemented_capabilities_fail_before_anything_runs() {
    let f = Fixture::new();
    for cap in Capability::ALL
        .into_iter()
        .filter(|c| !c.is_implemented_by_sandbox())
    {
        let profile = common::plus(&common::writable(), &[cap]);
        let r = f.run(profile, "touch marker");
        assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
        assert_eq!(r.process_exit_code(), 125);
        assert!(!f.ws.join("marker").exists(), "{cap}");
        assert!(
            r.reason
                .as_deref()
                .is_some_and(|m| m.contains(&format!("does not implement {cap}"))),
            "{cap}: {r:?}"
        );
    }
    let r = f.auto("touch marker");
    assert!(f.ws.join("marker").exists(), "positive control: {r:?}");
}

#[test]
fn host_reads_are_visible_only_when_granted_and_never_writable() {
    let f = Fixture::new();
    std::fs::write(f.outside.join("data.txt"), "outside-data").unwrap();
    let script = format!(
        "cat {o}/data.txt; echo changed > {o}/data.txt",
        o = f.outside.display()
    );
    let r = f.auto(&script);
    assert!(!r.stdout.contains("outside-data"), "not granted: {r:?}");
    let profile = common::reading_host(&common::writable(), vec![f.outside.clone()]);
    let r = f.run(profile, &script);
    assert!(r.stdout.contains("outside-data"), "granted: {r:?}");
    assert!(r.stderr.contains("Read-only file system"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(f.outside.join("data.txt")).unwrap(),
        "outside-data"
    );
}

/// A command that moves a nested repository away and puts a link in its place: the removal of
/// the repository holds its hooks and configuration (host-run, which nobody approved here), so
/// it is kept out whole (nothing of the real `.git/config` or hooks is deleted), and the copy
/// `mv` made lands without the hook.
#[test]
fn a_nested_repository_moved_away_keeps_its_config_and_hooks() {
    let f = Fixture::new();
    let sub = f.ws.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    assert!(host_git(&sub, &["init", "-q"]).status.success());
    let hook = sub.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let config = std::fs::read_to_string(sub.join(".git/config")).unwrap();
    let r = f.auto("mv sub moved && ln -s moved sub && echo ok > marker.txt");
    // Not everything the command did landed (nobody approved moving the repository's hooks and
    // configuration): not `ok`.
    assert_eq!(r.status, ToolStatus::Denied, "{r:?}");
    assert!(std::fs::symlink_metadata(&sub).unwrap().is_dir(), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(sub.join(".git/config")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert!(
        !f.ws.join("moved/.git/hooks/pre-commit").exists(),
        "the copy has no hook: {r:?}"
    );
    // Positive control: the rest of the command landed.
    assert_eq!(
        std::fs::read_to_string(f.ws.join("marker.txt")).unwrap(),
        "ok\n"
    );
    let reason = r.reason.unwrap_or_default();
    assert!(reason.contains("sub (it holds"), "{reason}");
}
