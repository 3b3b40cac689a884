//! The landlock backend (issue 34, part 2) through the `spear` binary, against the real kernel
//! (Landlock is on on every test machine; a host without it fails these tests, it does not skip
//! them). `[sandbox] backend = "landlock"` in an operator configuration; every negative probe has
//! a positive control showing the probe would have seen the effect.
//!
//! Scripts name the paths they probe in hex, so that the decision layer (which refuses a named
//! credential store or a write outside the workspace before anything runs) cannot see them: what
//! is tested is the mechanism.

#![allow(clippy::expect_used, clippy::unwrap_used, unsafe_code)]

mod support;

use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::{Config, Dirs, SpearCommands as _, config};

const LANDLOCK: &str = "[sandbox]\nbackend = \"landlock\"\n";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn hex(s: &str) -> String {
    s.bytes().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// `python3 -c CODE`, where `P` in CODE stands for `path`, decoded from hex at run time.
fn python(code: &str, path: &Path) -> String {
    let code = code.replace(
        'P',
        &format!(
            "bytes.fromhex(\"{}\").decode()",
            hex(path.to_str().unwrap())
        ),
    );
    format!("/usr/bin/python3 -c '{code}'")
}

/// A test's directories, its operator configuration, and a directory standing for the host's
/// temporary directory (where the backend makes each command's private directories).
struct Host {
    d: Dirs,
    cfg: Config,
    tmp: PathBuf,
}

impl Host {
    fn new(cfg: &str, files: &[(&str, &str)]) -> Host {
        let d = Dirs::with(files);
        let tmp = d.base.join("hosttmp");
        std::fs::create_dir(&tmp).unwrap();
        Host {
            d,
            cfg: config(cfg),
            tmp,
        }
    }

    /// `spear exec --config CFG ARGS` (the toolchain variables of the test's own run removed, so
    /// that the home's trees are where tools keep them by default).
    fn exec(&self, args: &[&str]) -> Output {
        let mut cmd = self.d.spear(&["exec", "--config", &self.cfg.path]);
        cmd.args(args).env("TMPDIR", &self.tmp);
        for var in ["CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "NVM_DIR"] {
            cmd.env_remove(var);
        }
        cmd.stdin(Stdio::null()).output().unwrap()
    }

    /// `spear exec --no-network -c SCRIPT`, expected to run (exit 0).
    fn run(&self, script: &str) -> String {
        let out = self.exec(&["--no-network", "-c", script]);
        assert!(
            out.status.success(),
            "{script}: {} {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Whether the backend left nothing in the host's temporary directory (each command's
    /// private directories are made there before it is spawned, and removed after).
    fn tmp_is_empty(&self) -> bool {
        std::fs::read_dir(&self.tmp).unwrap().next().is_none()
    }
}

#[test]
fn reads_of_the_workspace_work_and_writes_land_only_in_the_private_directories() {
    let h = Host::new(LANDLOCK, &[("a.txt", "alpha\n")]);
    assert_eq!(h.run("cat a.txt"), "alpha\n");
    // The private directories: HOME and TMPDIR name them; writes there work (positive control
    // of every write probe below), and they are gone after the command.
    let out =
        h.run("echo t > \"$TMPDIR/x\" && echo h > \"$HOME/y\" && cat \"$TMPDIR/x\" \"$HOME/y\"");
    assert_eq!(out, "t\nh\n");
    assert!(h.tmp_is_empty(), "the private directories were removed");
    // A root is read-only; a host directory beside it, and the host's /tmp, are not writable.
    let targets = [
        h.d.ws.join("new.txt"),
        h.d.base.join("outside.txt"),
        h.tmp.join("planted.txt"),
    ];
    for target in &targets {
        let script = python(
            "import sys\ntry:\n  open(P, \"w\").write(\"x\")\n  print(\"wrote\")\nexcept OSError as e:\n  print(e.errno)",
            target,
        );
        assert_eq!(h.run(&script), "13\n", "{}", target.display());
        assert!(!target.exists(), "{}", target.display());
    }
    // Metadata too: chmod of a workspace file the uid owns is refused (Landlock governs none;
    // the seccomp filter does). Positive control: the same chmod outside spear works.
    let file = h.d.ws.join("a.txt");
    let chmod = python(
        "import os\ntry:\n  os.chmod(P, 0o600)\n  print(\"changed\")\nexcept OSError as e:\n  print(e.errno)",
        &file,
    );
    assert_eq!(h.run(&chmod), "1\n");
    // Times, owners and extended attributes alike.
    for call in [
        "os.utime(P, (0, 0))",
        "os.chown(P, os.getuid(), os.getgid())",
        "os.setxattr(P, \"user.spear\", b\"x\")",
    ] {
        let probe = python(
            &format!(
                "import os\ntry:\n  {call}\n  print(\"changed\")\nexcept OSError as e:\n  print(e.errno)"
            ),
            &file,
        );
        assert_eq!(h.run(&probe), "1\n", "{call}");
    }
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
            & 0o777
    };
    let before = mode(&file);
    assert_ne!(before, 0o600);
    let direct = Command::new("/bin/sh")
        .arg("-c")
        .arg(&chmod)
        .output()
        .unwrap();
    assert_eq!(text(&direct.stdout), "changed\n");
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn credential_stores_in_the_home_and_masked_files_in_bound_trees_cannot_be_read() {
    const TOKEN: &str = "spear-landlock-token-7c1d";
    let h = Host::new(LANDLOCK, &[("a.txt", "a\n")]);
    let write = |rel: &str, content: &str| {
        let p = h.d.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
        p
    };
    let key = write(".ssh/id_rsa", TOKEN);
    let masked = write(
        ".cargo/config.toml",
        &format!("[registry]\ntoken = \"{TOKEN}\"\n"),
    );
    let twin = write(
        ".cargo/registry/src/i/a-1.0.0/.cargo/config.toml",
        "[build]\njobs = 2\n",
    );
    let read = |p: &Path| {
        python(
            "try:\n  print(open(P).read(), end=\"\")\nexcept OSError as e:\n  print(e.errno)",
            p,
        )
    };
    // Positive control: the twin beside the masked file, in the same bound tree, reads.
    assert_eq!(h.run(&read(&twin)), "[build]\njobs = 2\n");
    for secret in [&key, &masked] {
        let out = h.run(&read(secret));
        assert_eq!(out, "13\n", "{}", secret.display());
        assert!(!out.contains(TOKEN));
    }
    // And outside spear, both read (the probe would have seen them).
    for secret in [&key, &masked] {
        let direct = Command::new("/bin/sh")
            .arg("-c")
            .arg(read(secret))
            .output()
            .unwrap();
        assert!(text(&direct.stdout).contains(TOKEN));
    }
}

#[test]
fn the_network_is_closed_no_socket_reaches_the_host_s_loopback() {
    let h = Host::new(LANDLOCK, &[]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "/usr/bin/python3 -c 'import socket\ntry:\n  socket.create_connection((\"127.0.0.1\", {port}), timeout=5)\n  print(\"connected\")\nexcept OSError as e:\n  print(e.errno)'"
    );
    // Positive control: without spear the same script connects.
    let direct = Command::new("/bin/sh")
        .arg("-c")
        .arg(&connect)
        .output()
        .unwrap();
    assert_eq!(text(&direct.stdout), "connected\n");
    let _ = listener.accept().unwrap();
    assert_eq!(h.run(&connect), "1\n", "EPERM: no socket at all");
    // UDP, raw and unix sockets alike; a stream socket pair still works (the positive control:
    // the probe runs and can make what it is allowed).
    let sockets = "/usr/bin/python3 -c 'import socket\nfor f, t in ((socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_RAW), (socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW)):\n  try:\n    socket.socket(f, t)\n    print(\"made\")\n  except OSError as e:\n    print(e.errno)\ntry:\n  socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n  print(\"made\")\nexcept OSError as e:\n  print(e.errno)\na, b = socket.socketpair()\na.send(b\"p\")\nprint(b.recv(1).decode())'";
    // A datagram pair is refused too: its sendmsg takes an address, which reaches any datagram
    // socket on the host by its path.
    assert_eq!(h.run(sockets), "1\n1\n1\n1\n1\n1\np\n");
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "nothing connected from the sandbox"
    );
}

#[test]
fn a_host_process_cannot_be_signalled_and_the_command_s_own_can() {
    let h = Host::new(LANDLOCK, &[]);
    let mut host = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = host.id();
    let kill = |pid: &str| {
        format!(
            "/usr/bin/python3 -c 'import os, signal\ntry:\n  os.kill({pid}, signal.SIGTERM)\n  print(\"sent\")\nexcept OSError as e:\n  print(e.errno)'"
        )
    };
    assert_eq!(h.run(&kill(&pid.to_string())), "1\n");
    assert!(host.try_wait().unwrap().is_none(), "the host process lives");
    // Positive control: a child of the command's own is signalled.
    let own = "sleep 30 & p=$!; /usr/bin/python3 -c \"import os, signal; os.kill($p, signal.SIGTERM); print('sent')\"; wait $p; echo $?";
    assert_eq!(h.run(own), "sent\n143\n");
    host.kill().unwrap();
    host.wait().unwrap();
}

#[test]
fn writable_and_networked_calls_are_refused_before_anything_runs() {
    let h = Host::new(LANDLOCK, &[("a.txt", "a\n")]);
    let marker = h.d.ws.join("marker");
    for (args, says) in [
        (
            vec!["--auto", "--no-network", "-c", "echo x > marker"],
            "cannot stage writes",
        ),
        (
            vec!["--auto", "-c", "echo x > marker"],
            "cannot stage writes",
        ),
        (
            vec!["--auto", "--", "curl", "-s", "http://127.0.0.1:9/"],
            "no network path",
        ),
        // Before anyone is asked (without the backend, ASK without a terminal is cancelled).
        (
            vec!["--ask", "--no-network", "-c", "echo x > marker"],
            "cannot stage writes",
        ),
        (
            vec!["--ask", "--", "curl", "-s", "http://127.0.0.1:9/"],
            "no network path",
        ),
    ] {
        let out = h.exec(&args);
        assert_eq!(
            out.status.code(),
            Some(125),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains(says) && err.contains("user namespaces"),
            "{args:?}: {err}"
        );
        assert!(!marker.exists());
        // Nothing was prepared, so nothing was spawned: the private directories are made before
        // any spawn.
        assert!(h.tmp_is_empty(), "{args:?}");
    }
    // Positive control: the same configuration runs a closed read-only command.
    assert_eq!(h.run("cat a.txt"), "a\n");
}

#[test]
fn the_result_says_what_the_landlock_backend_gave() {
    let h = Host::new(LANDLOCK, &[("a.txt", "a\n")]);
    let out = h.exec(&["--json", "--no-network", "-c", "cat a.txt"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let enforced: Vec<&str> = v["guarantees"]["enforced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    for g in ["write_boundary", "environment_scrubbed", "network_closed"] {
        assert!(enforced.contains(&g), "{g}: {enforced:?}");
    }
    for g in ["process_boundary", "read_boundary", "network_filtered"] {
        assert!(!enforced.contains(&g), "{g}: {enforced:?}");
    }
}

/// `spear exec --config CFG -c SCRIPT` started under [`no_namespaces`].
fn exec_without_namespaces(h: &Host, script: &str) -> Output {
    let [eperm, enosys] = support::no_namespaces();
    let mut cmd = h.d.spear(&[
        "exec",
        "--config",
        &h.cfg.path,
        "--json",
        "--no-network",
        "-c",
        script,
    ]);
    cmd.env("TMPDIR", &h.tmp).stdin(Stdio::null());
    // SAFETY: between fork and exec, only prctl and seccomp on programs built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            seccompiler::apply_filter(&eperm).map_err(std::io::Error::other)?;
            seccompiler::apply_filter(&enosys).map_err(std::io::Error::other)?;
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn without_user_namespaces_auto_refuses_by_default_and_runs_under_landlock_with_a_narrower_require()
{
    // Positive control of the filter: under it, bwrap cannot make its namespaces.
    let [eperm, enosys] = support::no_namespaces();
    let mut bwrap = Command::new("/usr/bin/bwrap");
    bwrap.args(["--unshare-all", "--ro-bind", "/", "/", "--", "/bin/true"]);
    unsafe {
        bwrap.pre_exec(move || {
            seccompiler::apply_filter(&eperm).map_err(std::io::Error::other)?;
            seccompiler::apply_filter(&enosys).map_err(std::io::Error::other)?;
            Ok(())
        });
    }
    let refused = bwrap.output().unwrap();
    assert!(!refused.status.success(), "the filter refuses namespaces");
    assert!(
        Command::new("/usr/bin/bwrap")
            .args(["--unshare-all", "--ro-bind", "/", "/", "--", "/bin/true"])
            .status()
            .unwrap()
            .success(),
        "and without it bwrap works here"
    );

    // `auto` with no `require`: everything bubblewrap gives is asked of Landlock, which lacks
    // process_boundary and read_boundary; refused, naming them and both ways out, nothing ran.
    let h = Host::new("", &[("a.txt", "alpha\n")]);
    let out = exec_without_namespaces(&h, "cat a.txt; echo ran > \"$TMPDIR/ran\"");
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reason = v["reason"].as_str().unwrap_or_default().to_owned() + &text(&out.stderr);
    for needle in [
        "process_boundary",
        "read_boundary",
        "[sandbox] require",
        "user namespaces",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    assert_eq!(v["stdout"], "");
    assert!(h.tmp_is_empty(), "nothing was prepared");

    // The operator narrows `require` to what Landlock gives: the same command runs under it.
    let h = Host::new(
        "[sandbox]\nrequire = [\"write_boundary\", \"environment_scrubbed\"]\n",
        &[("a.txt", "alpha\n")],
    );
    let out = exec_without_namespaces(&h, "cat a.txt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stdout"], "alpha\n");
    let enforced = v["guarantees"]["enforced"].to_string();
    assert!(
        enforced.contains("write_boundary") && !enforced.contains("process_boundary"),
        "{enforced}"
    );
    // Positive control: without the filter, `auto` takes bubblewrap, whose PID namespace it has.
    let mut cmd = h.d.spear(&[
        "exec",
        "--config",
        &h.cfg.path,
        "--json",
        "--no-network",
        "-c",
        "cat a.txt",
    ]);
    let mut child = cmd
        .env("TMPDIR", &h.tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(stdout.contains("process_boundary"), "{stdout}");
}

#[test]
fn doctor_names_the_backend_and_lists_both_backends_guarantees() {
    let doctor = |cfg: &str| {
        let h = Host::new(cfg, &[]);
        let out =
            h.d.spear(&["doctor", "--json", "--no-network", "--config", &h.cfg.path])
                .output()
                .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["backend"].clone()
    };
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_owned())
            .collect()
    };
    // This host has user namespaces: `auto` takes bubblewrap.
    let b = doctor("");
    assert_eq!(b["chosen"], "bubblewrap", "{b}");
    assert!(b["landlock_abi"].as_u64().unwrap() >= 1, "{b}");
    let bubblewrap = names(&b["bubblewrap"]);
    let landlock = names(&b["landlock"]);
    for g in ["process_boundary", "read_boundary", "write_boundary"] {
        assert!(bubblewrap.iter().any(|x| x == g), "{g}: {b}");
    }
    for g in ["write_boundary", "environment_scrubbed", "network_closed"] {
        assert!(landlock.iter().any(|x| x == g), "{g}: {b}");
    }
    for g in ["process_boundary", "read_boundary", "network_filtered"] {
        assert!(!landlock.iter().any(|x| x == g), "{g}: {b}");
    }
    // Forced, it names Landlock.
    assert_eq!(doctor(LANDLOCK)["chosen"], "landlock");
}

#[test]
fn a_host_temporary_directory_inside_the_workspace_is_refused_before_anything_is_made() {
    let h = Host::new(LANDLOCK, &[("a.txt", "a\n")]);
    let inside = h.d.ws.join("tmp");
    std::fs::create_dir(&inside).unwrap();
    let mut cmd = h.d.spear(&[
        "exec",
        "--config",
        &h.cfg.path,
        "--no-network",
        "-c",
        "cat a.txt",
    ]);
    let out = cmd
        .env("TMPDIR", &inside)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Point TMPDIR elsewhere"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        std::fs::read_dir(&inside).unwrap().next().is_none(),
        "nothing made in the workspace"
    );
    assert_eq!(text(&out.stdout), "");
    // Positive control: with TMPDIR outside, the same command runs.
    assert_eq!(h.run("cat a.txt"), "a\n");
}
