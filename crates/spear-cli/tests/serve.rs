//! `spear serve` and `spear exec` handing its calls to it, against the real binary, sandbox and
//! socket: a served call prints and exits as a one-shot call does, runs warm in a sandbox of
//! its own, dies with its client, cannot be reached from a sandbox, and runs in the client's
//! own process whenever the server would not run it as the client would. Every negative probe
//! has a positive control.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use spear_testkit::process::processes_with;
use spear_testkit::serial::Turns;
use support::{Dirs, SpearCommands as _};

/// The tests of this file count processes and warm sandboxes by name: one at a time.
static SERIAL: Turns = Turns::new();

/// A `spear serve` over `dirs`' state directory, logging at debug level into `serve.log`;
/// stopped by SIGTERM when dropped.
struct Server {
    child: Child,
    log: PathBuf,
    socket: PathBuf,
}

impl Server {
    fn start(dirs: &Dirs) -> Server {
        Server::start_with(dirs, &[])
    }

    fn start_with(dirs: &Dirs, args: &[&str]) -> Server {
        let log = dirs.path("serve.log");
        // From another directory than its clients': what a call names relatively is the
        // client's.
        let child = dirs
            .spear(&["serve"])
            .current_dir(&dirs.base)
            .args(args)
            .env("SPEAR_LOG", "spear=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let socket = dirs.state.join("spear/serve/exec.sock");
        let server = Server { child, log, socket };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.log().contains("serving spear exec") {
            assert!(Instant::now() < deadline, "no server: {}", server.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many calls the server has run.
    fn served(&self) -> usize {
        self.log().matches("call answered").count()
    }

    /// How many calls the server has declined.
    fn declined(&self) -> usize {
        self.log().matches("declined a call").count()
    }

    /// Stops it with SIGTERM; its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let status = self.terminate();
        std::mem::forget(self);
        status
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// `spear exec ARGS` in `dirs`, fed `stdin` (or /dev/null).
fn exec(dirs: &Dirs, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = dirs.spear(&["exec"]);
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

/// What a call printed and its status, with what differs from run to run (a JSON result's
/// duration, the temporary directory's name) taken out.
fn shown(dirs: &Dirs, out: &Output) -> (Option<i32>, String, String) {
    let base = dirs.base.to_str().unwrap();
    let mut stdout = String::from_utf8_lossy(&out.stdout).replace(base, "BASE");
    if let Ok(mut json) = serde_json::from_str::<serde_json::Value>(&stdout) {
        json["duration_ms"] = serde_json::Value::Null;
        stdout = json.to_string();
    }
    let stderr = String::from_utf8_lossy(&out.stderr).replace(base, "BASE");
    (out.status.code(), stdout, stderr)
}

/// Processes of this machine whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

/// How many warm sandboxes wait on this machine (their hold is named `spear-warm-hold`).
fn warm_holds() -> usize {
    processes_with("spear-warm-hold").len()
}

/// Fails the test unless `done` holds within `limit`.
fn wait_for(what: &str, limit: Duration, done: impl FnMut() -> bool) {
    assert!(
        spear_testkit::wait::wait_for(limit, done),
        "timed out waiting for {what}"
    );
}

#[test]
fn a_served_call_prints_and_exits_as_a_one_shot_call_does() {
    let _serial = SERIAL.take();
    let cases: [(&str, &[&str], Option<&str>); 10] = [
        ("a program", &["--", "/bin/cat", "f"], None),
        (
            "a workspace named relatively",
            &["--workspace", ".", "--", "/bin/cat", "f"],
            None,
        ),
        (
            "a script's streams and status",
            &["-c", "cat f; echo err >&2; exit 3"],
            None,
        ),
        (
            "a JSON result",
            &["--json", "-c", "cat f; echo err >&2; exit 3"],
            None,
        ),
        ("stdin passed on", &["--", "/bin/cat"], Some("from stdin\n")),
        ("a write refused in SAFE", &["-c", "echo x > f"], None),
        (
            "a program not found",
            &["--", "/usr/bin/no-such-program-of-spear"],
            None,
        ),
        (
            "a write in AUTO, with its changed paths",
            &["--auto", "--json", "-c", "echo new > g; cat g"],
            None,
        ),
        ("a timeout", &["--timeout", "1", "-c", "sleep 5"], None),
        (
            "an argument error",
            &["--timeout", "x", "--", "/bin/true"],
            None,
        ),
    ];
    let one_shot: Vec<_> = cases
        .iter()
        .map(|(_, args, stdin)| {
            let dirs = Dirs::with(&[("f", "hello\n")]);
            let out = exec(&dirs, args, *stdin);
            (
                shown(&dirs, &out),
                std::fs::read_to_string(dirs.ws.join("g")).ok(),
            )
        })
        .collect();
    let dirs = Dirs::with(&[("f", "hello\n")]);
    let server = Server::start(&dirs);
    for ((name, args, stdin), (expected, written)) in cases.iter().zip(one_shot) {
        let _ = std::fs::remove_file(dirs.ws.join("g"));
        let before = server.served();
        let out = exec(&dirs, args, *stdin);
        assert_eq!(shown(&dirs, &out), expected, "{name}");
        assert_eq!(
            std::fs::read_to_string(dirs.ws.join("g")).ok(),
            written,
            "{name}"
        );
        // Positive control: the server ran it (but for the argument error, which the client
        // reports before it asks anyone).
        let runs = usize::from(*name != "an argument error");
        assert_eq!(server.served() - before, runs, "{name}: {}", server.log());
    }
    assert_eq!(server.declined(), 0, "{}", server.log());
    assert!(server.stop().success());
}

#[test]
fn a_served_command_runs_warm_in_a_sandbox_of_its_own() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let server = Server::start(&dirs);
    // The first call leaves its left-behind process for the next to look for.
    let first = exec(&dirs, &["-c", "sleep 7341 & echo $!"], None);
    assert!(first.status.success(), "{first:?}");
    std::thread::sleep(Duration::from_millis(500));
    let probe = "cut -d' ' -f22 /proc/1/stat; cut -d' ' -f1 /proc/uptime; ls /proc | grep -c '^[0-9]'; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null | grep -c 'sleep 734[1]'";
    let out = exec(&dirs, &["-c", probe], None);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{out:?}");
    let started: f64 = lines[0].parse::<f64>().unwrap() / 100.0;
    let now: f64 = lines[1].parse().unwrap();
    assert!(now - started >= 0.3, "not warm: {text}");
    // Its own PID namespace: a handful of processes, none of the previous call's.
    assert!(lines[2].parse::<u32>().unwrap() <= 6, "{text}");
    assert_eq!(lines[3], "0", "{text}");
    assert!(
        processes(&["sleep", "7341"]).is_empty(),
        "the previous call's process survived"
    );
    assert_eq!(server.served(), 2, "{}", server.log());
    assert!(server.stop().success());
}

#[test]
fn a_client_that_dies_takes_its_command_with_it_and_the_server_goes_on() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let server = Server::start(&dirs);
    let mut client = dirs
        .spear(&["exec", "--", "/bin/sleep", "6123"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Positive control: the command runs while its client waits.
    wait_for("the command", Duration::from_secs(10), || {
        !processes(&["/bin/sleep", "6123"]).is_empty()
    });
    client.kill().unwrap();
    client.wait().unwrap();
    wait_for("the command's death", Duration::from_secs(10), || {
        processes(&["/bin/sleep", "6123"]).is_empty()
    });
    wait_for("the call's end", Duration::from_secs(10), || {
        server.served() == 1
    });
    assert!(
        server.log().contains("the client hung up"),
        "{}",
        server.log()
    );
    let after = exec(&dirs, &["--", "/bin/echo", "still serving"], None);
    assert_eq!(String::from_utf8_lossy(&after.stdout), "still serving\n");
    assert_eq!(server.served(), 2);
    assert!(server.stop().success());
}

#[test]
fn no_sandbox_can_reach_the_servers_socket() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let server = Server::start(&dirs);
    let socket = server.socket.to_str().unwrap().to_owned();
    // Positive control: the socket is there on the host, and reachable.
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    // The paths come from a file, so that no classifier sees them: only the mount answers.
    let probe = "while read -r p; do if test -e \"$p\"; then echo \"reachable $p\"; else echo \"absent $p\"; fi; done < paths";
    let paths = [
        socket.clone(),
        dirs.state.join("spear").to_str().unwrap().to_owned(),
        dirs.ws.join("paths").to_str().unwrap().to_owned(),
    ];
    std::fs::write(dirs.ws.join("paths"), paths.join("\n") + "\n").unwrap();
    let out = exec(&dirs, &["--auto", "-c", probe], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("absent {}", paths[0])), "{text}");
    assert!(text.contains(&format!("absent {}", paths[1])), "{text}");
    // Positive control: the probe sees what the sandbox shows.
    assert!(text.contains(&format!("reachable {}", paths[2])), "{text}");
    assert!(server.stop().success());
}

#[test]
fn a_call_the_server_would_not_run_as_its_client_would_runs_in_the_client() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[("f", "hello\n")]);
    let server = Server::start(&dirs);
    // ASK: it could ask on the client's terminal. Not even sent.
    let out = exec(&dirs, &["--ask", "--", "/bin/cat", "f"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    assert_eq!((server.served(), server.declined()), (0, 0));
    // A variable the server reads of its own environment once, set otherwise: declined, and
    // run in the client.
    let out = dirs
        .spear(&["exec", "--", "/bin/cat", "f"])
        .env("SPEAR_RESOURCE_CONTROL", "cgroupfs")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n", "{out:?}");
    assert_eq!(
        (server.served(), server.declined()),
        (0, 1),
        "{}",
        server.log()
    );
    assert!(
        server.log().contains("$SPEAR_RESOURCE_CONTROL"),
        "{}",
        server.log()
    );
    // Another umask: files it makes would get other modes.
    let out = dirs
        .command("/bin/sh")
        .arg("-c")
        .arg(format!(
            "umask 077; exec {} exec -- /bin/cat f",
            env!("CARGO_BIN_EXE_spear")
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n", "{out:?}");
    assert_eq!(
        (server.served(), server.declined()),
        (0, 2),
        "{}",
        server.log()
    );
    // A client confined by no-new-privs of its own: a server without it would lift it.
    let out = dirs
        .command("setpriv")
        .args([
            "--no-new-privs",
            env!("CARGO_BIN_EXE_spear"),
            "exec",
            "--",
            "/bin/cat",
            "f",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n", "{out:?}");
    assert_eq!(
        (server.served(), server.declined()),
        (0, 3),
        "{}",
        server.log()
    );
    assert!(server.log().contains("NoNewPrivs"), "{}", server.log());
    // Positive control: the same call as the server's own is served.
    let out = exec(&dirs, &["--", "/bin/cat", "f"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    assert_eq!(server.served(), 1, "{}", server.log());
    assert!(server.stop().success());
}

#[test]
fn a_stopped_server_leaves_nothing_and_a_dead_ones_socket_is_no_obstacle() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let server = Server::start(&dirs);
    // A second server on the same socket is refused.
    let second = dirs.spear(&["serve"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stderr).contains("already serves"));
    let out = exec(&dirs, &["--", "/bin/true"], None);
    assert!(out.status.success());
    // Positive control: a sandbox waits for the next call.
    wait_for("a warm sandbox", Duration::from_secs(5), || {
        warm_holds() > 0
    });
    let socket = server.socket.clone();
    assert!(server.stop().success());
    assert!(!socket.exists(), "the socket was left");
    assert_eq!(warm_holds(), 0, "a warm sandbox was left");

    // A server killed outright leaves its socket; calls run in their own process, and a new
    // server takes the place.
    let mut killed = dirs
        .spear(&["serve"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the socket", Duration::from_secs(10), || socket.exists());
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(socket.exists());
    let out = exec(&dirs, &["--", "/bin/echo", "alone"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "alone\n");
    let server = Server::start(&dirs);
    let out = exec(&dirs, &["--", "/bin/echo", "served"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "served\n");
    assert_eq!(server.served(), 1);
    assert!(server.stop().success());
}

#[test]
fn an_idle_server_exits_by_itself() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let mut server = Server::start_with(&dirs, &["--idle-exit", "1"]);
    let mut status = None;
    wait_for("the idle exit", Duration::from_secs(10), || {
        status = server.child.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    assert!(!server.socket.exists());
}

/// A cgroup below this test's own in the pids hierarchy (cgroup v1's `pids`, or the unified
/// hierarchy), limited to `max` processes; removed when dropped (once empty).
struct LimitedCgroup {
    dir: PathBuf,
}

impl LimitedCgroup {
    fn new(max: u32) -> LimitedCgroup {
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let (mount, rel) = text
            .lines()
            .find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                controllers
                    .split(',')
                    .any(|c| c == "pids")
                    .then(|| ("/sys/fs/cgroup/pids", path.to_owned()))
            })
            .or_else(|| {
                text.lines()
                    .find_map(|l| l.strip_prefix("0::"))
                    .map(|path| ("/sys/fs/cgroup", path.to_owned()))
            })
            .unwrap();
        let dir = PathBuf::from(mount)
            .join(rel.trim_start_matches('/'))
            .join(format!("serve-client-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("pids.max"), max.to_string())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        LimitedCgroup { dir }
    }
}

impl Drop for LimitedCgroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A client limited to 60 processes by a cgroup of its own never has a server outside that
/// cgroup run its command: the server declines (its cgroup is not within the client's), the
/// call runs in the client, and its tree stays within 60 processes. Positive control: the
/// same call from a client in the server's own cgroup is served and starts all 100.
#[test]
fn a_client_in_a_cgroup_of_its_own_keeps_its_limits() {
    let _serial = SERIAL.take();
    let dirs = Dirs::with(&[]);
    let server = Server::start(&dirs);
    let script = "import subprocess\nps = []\nfor i in range(100):\n    try:\n        \
                  ps.append(subprocess.Popen(['sleep', '30']))\n    except OSError:\n        \
                  break\nprint(len(ps))\nfor p in ps:\n    p.kill()\n    p.wait()\n";
    let spawned = |out: &Output| -> usize {
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{out:?}"))
    };
    let limited = LimitedCgroup::new(60);
    let out = dirs
        .command("/bin/sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec {} exec --auto -- python3 -c \"$0\"",
            limited.dir.display(),
            env!("CARGO_BIN_EXE_spear")
        ))
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let n = spawned(&out);
    assert!(
        n < 60,
        "the client's limit was lifted: {n} processes: {out:?}"
    );
    assert_eq!(
        (server.served(), server.declined()),
        (0, 1),
        "{}",
        server.log()
    );
    assert!(server.log().contains("cgroup"), "{}", server.log());
    drop(limited);
    // Positive control: in the server's cgroup, the same call is served and starts them all.
    let out = exec(&dirs, &["--auto", "--", "python3", "-c", script], None);
    assert_eq!(spawned(&out), 100, "{out:?}");
    assert_eq!(server.served(), 1, "{}", server.log());
    assert!(server.stop().success());
}
