//! `spear exec` at a terminal and in scripts, for real (bwrap, cgroups): data on its stdin reaches
//! the command through a pipe, a terminal or /dev/null gives it /dev/null, never spear's own fd; a cut output says so on stderr; operator limits take
//! effect and out-of-bounds ones are refused at startup; a lowered inherited hard rlimit lowers
//! the sandbox's instead of failing; a HOME spelled with `.` or `..` means the same directory on
//! every path (`spear exec`, `spear tool`, `spear mcp`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{Dirs, SpearCommands as _};

fn spear_cmd(args: &[&str], d: &Dirs) -> Command {
    d.spear(args)
}

fn run_with_input(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap()
}

/// `bash -c SCRIPT` (its `ulimit -f` counts 1024-byte blocks) with `$SPEAR` set to the binary, from the workspace, with the test's HOME.
fn sh(script: &str, d: &Dirs) -> Output {
    d.command("/bin/bash")
        .arg("-c")
        .arg(script)
        .env("SPEAR", env!("CARGO_BIN_EXE_spear"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

// ---- 6. stdin and the output cap ----

#[test]
fn a_pipe_on_stdin_reaches_the_command() {
    let d = Dirs::with(&[]);
    let out = run_with_input(spear_cmd(&["exec", "--auto", "-c", "cat"], &d), b"hi\n");
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
    // Streamed, whole: 8 MiB through a pipe, counted inside.
    let big = vec![b'x'; 8 << 20];
    let out = run_with_input(
        spear_cmd(&["exec", "--auto", "-c", "test -p /dev/stdin && wc -c"], &d),
        &big,
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), (8u64 << 20).to_string());
    // A command that reads nothing still ends, and spear with it.
    let out = run_with_input(spear_cmd(&["exec", "--auto", "-c", "echo done"], &d), &big);
    assert_eq!(text(&out.stdout), "done\n");
    // A plain argv command too, in SAFE.
    let out = run_with_input(spear_cmd(&["exec", "--", "wc", "-l"], &d), b"a\nb\n");
    assert_eq!(text(&out.stdout).trim(), "2", "{}", text(&out.stderr));
}

#[test]
fn a_file_on_stdin_is_read_through_a_pipe_and_cannot_be_written() {
    let d = Dirs::with(&[]);
    let file = d.path("input.txt");
    std::fs::write(&file, "from a file\n").unwrap();
    // Opened read-write, as `spear exec <> input.txt` would: spear's own fd never reaches the
    // command, so writing through /proc/self/fd/0 cannot change the host file.
    // In a script file, so that the write is attempted (the classifier refuses it where it can
    // see it) and only what the sandbox is given can stop it.
    std::fs::write(
        d.ws.join("w.sh"),
        "test -t 0 && echo tty; test -p /dev/stdin && echo pipe; head -c 11; echo; \
         (echo overwritten > /proc/self/fd/0) 2>/dev/null; true\n",
    )
    .unwrap();
    let script = "bash w.sh";
    let rw = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&file)
            .unwrap()
    };
    let out = spear_cmd(&["exec", "--auto", "-c", script], &d)
        .stdin(rw())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "pipe\nfrom a file\n");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "from a file\n");
    // Positive control: the same script in plain bash, given the fd itself, does overwrite it.
    let out = Command::new("/bin/bash")
        .arg("-c")
        .arg(script)
        .current_dir(&d.ws)
        .stdin(rw())
        .output()
        .unwrap();
    assert!(!text(&out.stdout).contains("pipe"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "overwritten\n");
}

/// `rg PATTERN` with no path searches the tree as in bash when spear's stdin is /dev/null or
/// closed, and reads stdin when data is piped in.
#[test]
fn a_search_without_a_path_searches_the_tree_unless_data_is_piped() {
    let d = Dirs::with(&[("notes.md", "TODO: one\n")]);
    assert!(
        Path::new("/usr/bin/rg").exists(),
        "ripgrep is needed (scripts/setup.sh installs it)"
    );
    let out = sh("\"$SPEAR\" exec --auto -c 'rg -c TODO' </dev/null", &d);
    assert_eq!(
        (code(&out), text(&out.stdout)),
        (0, "notes.md:1\n".to_owned()),
        "{}",
        text(&out.stderr)
    );
    let out = sh(
        "echo 'TODO twice TODO' | \"$SPEAR\" exec --auto -c 'rg -c TODO'",
        &d,
    );
    assert_eq!(
        (code(&out), text(&out.stdout)),
        (0, "1\n".to_owned()),
        "{}",
        text(&out.stderr)
    );
    let out = sh("echo none | \"$SPEAR\" exec --auto -c 'rg -c TODO'", &d);
    assert_eq!(
        code(&out),
        1,
        "piped data is what rg reads: {}",
        text(&out.stdout)
    );
}

#[test]
fn a_closed_or_null_stdin_is_an_empty_input() {
    let d = Dirs::with(&[]);
    for redirect in ["0<&-", "</dev/null"] {
        let out = sh(
            &format!("exec {redirect}; \"$SPEAR\" exec --auto -c 'wc -c; echo end'"),
            &d,
        );
        assert_eq!(code(&out), 0, "{redirect}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "0\nend\n", "{redirect}");
    }
}

#[test]
fn a_terminal_on_stdin_is_never_handed_over() {
    // `script` gives spear a pseudo-terminal as stdin (and stdout); the command gets /dev/null,
    // as `rg PATTERN` must search the tree as it does at a terminal, not wait for typing.
    assert!(
        Path::new("/usr/bin/script").exists(),
        "util-linux `script` is needed for this test (apt-get install bsdutils)"
    );
    let d = Dirs::with(&[]);
    let inner = "test -t 0 && echo STDIN-IS-A-TTY; test -p /dev/stdin && echo STDIN-IS-A-PIPE; test -c /dev/stdin && echo STDIN-IS-NULL; true";
    let out = sh(
        &format!(
            "test -t 0 || script -qec \"test -t 0 && echo SPEAR-HAS-A-TTY; exec \\\"$SPEAR\\\" exec --auto -c '{inner}'\" /dev/null"
        ),
        &d,
    );
    let stdout = text(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout} {}", text(&out.stderr));
    assert!(
        stdout.contains("SPEAR-HAS-A-TTY"),
        "the probe saw no tty: {stdout}"
    );
    assert!(stdout.contains("STDIN-IS-NULL"), "{stdout}");
    assert!(!stdout.contains("STDIN-IS-A-PIPE"), "{stdout}");
    assert!(!stdout.contains("STDIN-IS-A-TTY"), "{stdout}");
}

#[test]
fn a_tool_call_never_reads_spears_stdin() {
    // `spear tool` (the router, as MCP calls it): the command's stdin is /dev/null, whatever
    // spear's is. Control: `spear exec` with the same input passes it.
    let d = Dirs::with(&[]);
    let out = run_with_input(
        spear_cmd(
            &[
                "tool",
                "terminal",
                "--args",
                "{\"command\": \"cat; echo end\"}",
            ],
            &d,
        ),
        b"not for the tool\n",
    );
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["status"], "ok", "{envelope}");
    assert_eq!(envelope["stdout"], "end\n", "{envelope}");
    let out = run_with_input(
        spear_cmd(&["exec", "-c", "cat; echo end"], &d),
        b"for exec\n",
    );
    assert_eq!(text(&out.stdout), "for exec\nend\n");
}

#[test]
fn a_cut_output_says_so_on_stderr() {
    let d = Dirs::with(&[]);
    let out = spear_cmd(
        &[
            "exec",
            "--auto",
            "--output-cap",
            "4K",
            "-c",
            "head -c 100000 /dev/zero | tr '\\0' a",
        ],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("the output was cut"))
        .collect();
    assert_eq!(notices.len(), 1, "{stderr}");
    assert!(notices[0].contains("output cap of 4 KiB"), "{stderr}");
    assert!(out.stdout.len() < 8 << 10, "{}", out.stdout.len());
    // Control: an output under the cap says nothing.
    let out = spear_cmd(&["exec", "--auto", "-c", "echo short"], &d)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!text(&out.stderr).contains("cut"), "{}", text(&out.stderr));
}

// ---- 8. limits ----

#[test]
fn limits_out_of_bounds_are_refused_at_startup() {
    let d = Dirs::with(&[]);
    for (flags, message) in [
        (
            &["--memory", "1M"][..],
            "--memory: 1 MiB is out of bounds; it must be between 32 MiB and 1 TiB",
        ),
        (
            &["--tasks", "0"][..],
            "--tasks: 0 is out of bounds; it must be between 8 and 65536",
        ),
        (&["--cpu", "0"][..], "--cpu: 0 is out of bounds"),
        (
            &["--output-cap", "lots"][..],
            "--output-cap: `lots` is not a size",
        ),
        (&["--timeout", "0"][..], "--timeout: 0 is out of bounds"),
    ] {
        let mut args = vec!["exec", "--auto"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["-c", "touch ran"]);
        let out = spear_cmd(&args, &d).stdin(Stdio::null()).output().unwrap();
        assert_eq!(code(&out), 2, "{flags:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(message),
            "{flags:?}: {}",
            text(&out.stderr)
        );
        assert!(!d.ws.join("ran").exists(), "{flags:?}: the command ran");
    }
    // From the configuration file, for exec and for mcp alike.
    let config = d.path("config.toml");
    std::fs::write(&config, "[limits]\ntasks = 1000000\n").unwrap();
    let config_arg = config.to_str().unwrap();
    let out = spear_cmd(
        &["exec", "--auto", "--config", config_arg, "-c", "true"],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        text(&out.stderr).contains(&format!(
            "[limits] tasks in {config_arg}: 1000000 is out of bounds"
        )),
        "{}",
        text(&out.stderr)
    );
    let out = d
        .spear_mcp(&["--config", config_arg])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(code(&out), 0);
    assert!(
        text(&out.stderr).contains("[limits] tasks in"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_session_budget_below_one_commands_limit_is_refused_at_startup() {
    let d = Dirs::with(&[]);
    let config = d.path("config.toml");
    std::fs::write(&config, "[limits]\nsession_tasks = 300\n").unwrap();
    let config_arg = config.to_str().unwrap();
    // Control: a budget that holds one command at its limit (256 by default) runs it.
    let out = spear_cmd(
        &["exec", "--auto", "--config", config_arg, "-c", "touch ran"],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(d.ws.join("ran").exists());
    std::fs::remove_file(d.ws.join("ran")).unwrap();
    // A command's limit raised above the session's budget by a flag: refused, nothing runs.
    let out = spear_cmd(
        &[
            "exec",
            "--auto",
            "--config",
            config_arg,
            "--tasks",
            "512",
            "-c",
            "touch ran",
        ],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "[limits] session_tasks in {config_arg}: the session's budget of 300 tasks is below one command's task limit of 512: raise [limits] session_tasks in {config_arg} to at least 512"
        )),
        "{}",
        text(&out.stderr)
    );
    assert!(!d.ws.join("ran").exists(), "the command ran");
    // The flag raises the budget over the file's, and the same command runs.
    let out = spear_cmd(
        &[
            "exec",
            "--auto",
            "--config",
            config_arg,
            "--tasks",
            "512",
            "--session-tasks",
            "512",
            "-c",
            "touch ran",
        ],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(d.ws.join("ran").exists());
    // A budget below the built-in limit, in the file: refused at startup, for mcp too.
    std::fs::write(&config, "[limits]\nsession_memory = \"1G\"\n").unwrap();
    let out = d
        .spear_mcp(&["--config", config_arg])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(code(&out), 0);
    assert!(
        text(&out.stderr)
            .contains("the session's budget of 1 GiB is below one command's memory limit of 2 GiB"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_configured_timeout_and_memory_limit_take_effect() {
    let d = Dirs::with(&[]);
    let config = d.path("config.toml");
    std::fs::write(&config, "[limits]\ntimeout = 1\nmemory = \"64M\"\n").unwrap();
    let config_arg = config.to_str().unwrap();
    let started = std::time::Instant::now();
    let out = spear_cmd(
        &["exec", "--auto", "--config", config_arg, "-c", "sleep 20"],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 124, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("timed out after 1 s"),
        "{}",
        text(&out.stderr)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    // 200 MB held in one shell variable: over 64 MiB, killed by the cgroup.
    let hog = "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}";
    let out = spear_cmd(
        &[
            "exec",
            "--auto",
            "--config",
            config_arg,
            "--timeout",
            "60",
            "-c",
            hog,
        ],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_ne!(code(&out), 0, "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("memory limit (64 MiB)"),
        "{}",
        text(&out.stderr)
    );
    // Control: the flag raises it over the file, and the same command completes.
    let out = spear_cmd(
        &[
            "exec",
            "--auto",
            "--config",
            config_arg,
            "--timeout",
            "60",
            "--memory",
            "1G",
            "-c",
            hog,
        ],
        &d,
    )
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "200000000\n");
}

#[test]
fn a_task_limit_takes_effect() {
    let d = Dirs::with(&[]);
    let script = "for i in $(seq 30); do sleep 3 & done; wait; echo waited";
    let out = spear_cmd(&["exec", "--auto", "--tasks", "8", "-c", script], &d)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("limit of 8 tasks"),
        "{} {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_lowered_hard_rlimit_lowers_the_sandbox_instead_of_failing() {
    let d = Dirs::with(&[]);
    // RLIMIT_FSIZE in 1024-byte blocks (100000 blocks, below spear's 8 GiB) and RLIMIT_NOFILE.
    let out = sh(
        "ulimit -f 100000 && ulimit -n 512 && \"$SPEAR\" exec --auto -c 'ulimit -Hf; ulimit -Hn; echo x > f && cat f'",
        &d,
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "100000\n512\nx\n");
    assert!(
        !text(&out.stderr).contains("cannot be executed"),
        "{}",
        text(&out.stderr)
    );
    // The lowered limit is enforced: a file larger than it cannot be written.
    let out = sh(
        "ulimit -f 100 && \"$SPEAR\" exec --auto -c 'head -c 200000 /dev/zero > big; echo $?; stat -c %s big'",
        &d,
    );
    let stdout = text(&out.stdout);
    // SIGXFSZ (128 + 25) stops the writer at 100 KiB.
    assert_eq!(stdout, "153\n102400\n", "{}", text(&out.stderr));
    // Control: without the lowered limit the same write succeeds in full.
    let out = sh(
        "\"$SPEAR\" exec --auto -c 'head -c 200000 /dev/zero > big2; stat -c %s big2'",
        &d,
    );
    assert_eq!(text(&out.stdout), "200000\n", "{}", text(&out.stderr));
    // spear doctor says which limit was lowered.
    let out = sh("ulimit -f 100000 && \"$SPEAR\" doctor", &d);
    let report = text(&out.stdout);
    assert!(
        report.contains("RLIMIT_FSIZE is 102400000 (the hard limit spear inherited)"),
        "{report}"
    );
    let out = sh("\"$SPEAR\" doctor", &d);
    assert!(!text(&out.stdout).contains("the hard limit spear inherited"));
}

// ---- 9. HOME spelled with . or .. ----

#[test]
fn a_home_with_dots_is_the_same_home_everywhere() {
    let d = Dirs::with(&[("a.txt", "alpha\n")]);
    let real = d.home.clone();
    // HOME spelled so that, read lexically, it lies inside the workspace (`ws/..`).
    std::fs::create_dir_all(d.ws.join("sub")).unwrap();
    let spellings = [
        format!("{}/.", real.display()),
        format!("{}/../home", real.display()),
        format!("{}/", real.display()),
    ];
    for home in &spellings {
        let out = spear_cmd(&["exec", "--auto", "-c", "echo \"$HOME\"; cat a.txt"], &d)
            .env("HOME", home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{home}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            format!("{}\nalpha\n", real.display()),
            "{home}"
        );
        let out = spear_cmd(
            &["tool", "read_file", "--args", "{\"path\": \"a.txt\"}"],
            &d,
        )
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
        assert_eq!(code(&out), 0, "{home}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("alpha"), "{home}");
        let out = d
            .spear_mcp(&[])
            .env("HOME", home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        // The banner comes after every check of HOME and the roots; the server then ends, as
        // its stdin closes before any client speaks.
        let stderr = text(&out.stderr);
        assert!(stderr.contains("spear mcp: SAFE mode"), "{home}: {stderr}");
        assert!(!stderr.contains("HOME"), "{home}: {stderr}");
    }
    // The lexical trap: `ws/..` starts with `ws` as written, yet is the directory above it.
    let trap = format!("{}/..", d.ws.display());
    let out = spear_cmd(&["exec", "--auto", "-c", "echo \"$HOME\""], &d)
        .env("HOME", &trap)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}\n", d.base.display()));
    let out = d
        .spear_mcp(&[])
        .env("HOME", &trap)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("spear mcp: SAFE mode"), "{stderr}");
    assert!(!stderr.contains("holds the home"), "{stderr}");
}

#[test]
fn an_unresolvable_dotted_home_is_one_clear_refusal_on_every_path() {
    let d = Dirs::with(&[("a.txt", "alpha\n")]);
    let home = format!("{}/missing/..", d.base.display());
    let want = format!("HOME is `{home}`, spelled with `.` or `..`, and it cannot be resolved");
    let outs = [
        spear_cmd(&["exec", "--auto", "-c", "touch ran"], &d),
        spear_cmd(
            &["tool", "read_file", "--args", "{\"path\": \"a.txt\"}"],
            &d,
        ),
        d.spear_mcp(&[]),
    ]
    .map(|mut cmd| {
        cmd.env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    });
    for out in &outs {
        assert_eq!(code(out), 2, "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&want), "{}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("holds the home"),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(!d.ws.join("ran").exists());
}
