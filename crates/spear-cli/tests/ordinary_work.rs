//! Issue 13's "What was seen", end to end: each ordinary command an agent runs gives, through
//! `spear exec --auto` (and `--safe` for the read-only ones), the exit code and stdout that plain
//! bash gives in the same fixture project, with the real bwrap.
//!
//! The baseline is `bash -o pipefail -c`, as spear runs `-c` scripts (so `false | cat` fails),
//! except that a run ending with 141 (a producer ended by SIGPIPE after a later stage stopped
//! reading: issue 13, item 1) takes plain `bash -c`'s status. It runs in
//! `bwrap --dev-bind / / --tmpfs /tmp`, a private empty /tmp like the sandbox's, so that a row
//! writing /tmp/t touches nothing on the host; nothing else of the host is hidden. Each run gets a
//! fresh fixture and a fresh HOME holding a git identity and small cargo, rustup and pyenv trees.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// What a row compares besides the exit code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// The normalised stdout too.
    Stdout,
    /// The exit code only: stdout lists what the sandbox shows, which differs from the host's by
    /// design (`ls /`, `ls /etc`).
    ExitOnly,
    /// The normalised stdout only: the exit code is a race's (a Python producer that meets the
    /// pipe `head` closed exits 1 or 120 by when it notices, never by SIGPIPE), or counts what
    /// the host and the sandbox hold differently (directories `find /` cannot read).
    StdoutAnyExit,
}

struct Row {
    /// The script, run with `-c`.
    script: &'static str,
    compare: Compare,
    /// Bash changes nothing in the workspace, so SAFE must run it too.
    read_only: bool,
    /// A program that must be on PATH, or an absolute path that must exist, for the row to run
    /// (skipped, and said so, when absent).
    needs: Option<&'static str>,
    /// The real toolchains (`RUSTUP_HOME`, `CARGO_HOME` of the real home) instead of the
    /// fixture's small trees.
    real_toolchains: bool,
    /// What the command reads on stdin (otherwise stdin is /dev/null).
    stdin: Option<&'static str>,
}

const fn row(script: &'static str, compare: Compare, read_only: bool) -> Row {
    Row {
        script,
        compare,
        read_only,
        needs: None,
        real_toolchains: false,
        stdin: None,
    }
}

use Compare::{ExitOnly, Stdout, StdoutAnyExit};

/// The rows of issue 13's "What was seen" that are commands, each with the line it checks.
const ROWS: &[Row] = &[
    // "`cat big.txt | head -3` ...: status failed, exit 141 (pipefail counts the producer's SIGPIPE)"
    row("cat big.txt | head -3", Stdout, true),
    // same line: `ls -la /usr/bin | head`
    row("ls -la /usr/bin | head", Stdout, true),
    // same line, a producer that outlives its reader by far
    row("seq 1 100000 | head -1", Stdout, true),
    // same line: `pip list | head`
    Row {
        needs: Some("pip"),
        ..row("pip list 2>/dev/null | head -3", StdoutAnyExit, true)
    },
    // "`cd src && cat ../Cargo.toml`, `ls tests/../calc.py`: DANGEROUS (climbs out ... with `..`)"
    row("cd src && cat ../Cargo.toml", Stdout, true),
    // same line
    row("ls tests/../calc.py", Stdout, true),
    // "`echo x > /tmp/t && cat /tmp/t`, `mktemp -d`, `cat > /tmp/s.py <<EOF`: DANGEROUS (outside
    // the workspace), though /tmp is the sandbox's private tmpfs"
    row("echo x > /tmp/t && cat /tmp/t", Stdout, true),
    // same line
    row("mktemp -d", Stdout, true),
    // same line: a scratch script written with a here-document, then run
    Row {
        needs: Some("python3"),
        ..row(
            "cat > /tmp/s.py <<EOF\nprint(\"scratch\", 6 * 7)\nEOF\npython3 /tmp/s.py",
            Stdout,
            true,
        )
    },
    // same line: `echo x > "$TMPDIR/f"` "already works" (the control)
    row("echo x > \"$TMPDIR/f\" && cat \"$TMPDIR/f\"", Stdout, true),
    // "`ls /`, `ls /usr`, `ls /etc`, `ls ~`, `find / -name stdio.h 2>/dev/null`: DANGEROUS (is, or
    // contains, one of the sandbox's own mount points)"; / and /etc are the sandbox's own views
    row("ls /", ExitOnly, true),
    // same line: /usr is the host's, read-only, so the listing is the same
    row("ls /usr", Stdout, true),
    // same line: /etc is a curated copy
    row("ls /etc", ExitOnly, true),
    // same line: the sandbox's HOME is empty of visible entries, as the fresh one bash gets
    row("ls ~", Stdout, true),
    // same line: `-maxdepth 3` keeps the baseline from walking the host's whole disk
    // (/usr/include/stdio.h is the one at depth 3); find's exit code counts the directories it
    // could not read, which are the host's (/proc's, /root for a user) on one side and the
    // sandbox's on the other, so the first match is compared
    row(
        "find / -maxdepth 3 -name stdio.h 2>/dev/null | head -1",
        StdoutAnyExit,
        true,
    ),
    // "`grep -rn printf /usr/include/stdio.h` refused while `grep -n` of the same file is allowed"
    Row {
        needs: Some("/usr/include/stdio.h"),
        ..row(
            "grep -rn printf /usr/include/stdio.h | head -1",
            Stdout,
            true,
        )
    },
    // same line: the control
    Row {
        needs: Some("/usr/include/stdio.h"),
        ..row(
            "grep -n printf /usr/include/stdio.h | head -1",
            Stdout,
            true,
        )
    },
    // "`cat ~/.cargo/registry/src/*/itoa-*/src/lib.rs`, `ls ~/.rustup/toolchains`, `grep -rn X
    // ~/.pyenv/...` refused in every mode. Reading dependency and toolchain sources is routine."
    row(
        "cat ~/.cargo/registry/src/*/itoa-*/src/lib.rs",
        Stdout,
        true,
    ),
    // same line
    row("ls ~/.rustup/toolchains", Stdout, true),
    // same line (pyenv's own root: the real one when PYENV_ROOT names it, else the fresh HOME's)
    row(
        "grep -rn fixture_marker \"${PYENV_ROOT:-$HOME/.pyenv}/versions\"",
        Stdout,
        true,
    ),
    // "`.venv/bin/python -c 1` refused (reaches outside the project: the venv's symlink points
    // into the host's Python), while `source .venv/bin/activate && python` works"
    Row {
        needs: Some("python3"),
        ..row(
            "python3 -m venv --without-pip .venv && .venv/bin/python -c 'print(1)'",
            Stdout,
            false,
        )
    },
    // same line: the control
    Row {
        needs: Some("python3"),
        ..row(
            "python3 -m venv --without-pip .venv && . .venv/bin/activate && python -c 'print(2)'",
            Stdout,
            false,
        )
    },
    // "`git add -A && git commit -m wip` fails (Author identity unknown): the host's identity is
    // not visible"
    row("git add -A && git commit -m wip", Stdout, false),
    // same line: the commit carries the host's identity
    row(
        "git add -A && git commit -qm wip && git log -1 --format='%an <%ae>'",
        Stdout,
        false,
    ),
    // "... and `git config user.name` is refused"
    row("git config user.name", Stdout, true),
    // same line: a key that runs nothing may be set
    row(
        "git config user.name foo && git config user.name",
        Stdout,
        false,
    ),
    // "`git init` in a new directory returns ok, and then its .git/config and hooks are gone"
    row("git init x && cd x && git status", Stdout, false),
    // same line: the new repository works
    row(
        "git init -q x && cd x && echo a > a && git add a && git commit -qm first && git log --format=%s",
        Stdout,
        false,
    ),
    // "`rustc --print sysroot` is WORKSPACE_MUTATING"
    Row {
        needs: Some("rustc"),
        real_toolchains: true,
        ..row("rustc --print sysroot", Stdout, true)
    },
    // item 1: "A stage that really fails still fails the pipeline (`false | cat`, ...)"
    row("false | cat", Stdout, true),
    // same: `grep x missing | wc -l` is non-zero
    row("grep x missing | wc -l", Stdout, true),
    // "`spear exec`'s stdin is silently dropped"
    Row {
        stdin: Some("hi\n"),
        ..row("cat", Stdout, true)
    },
    // same line: a script that reads a line of stdin
    Row {
        stdin: Some("first\nsecond\n"),
        ..row("read -r line && echo \"got $line\"", Stdout, true)
    },
    // Issue 32, item 1: an inline program that only reads runs in SAFE as bash runs it.
    Row {
        needs: Some("python3"),
        ..row(
            "python3 -c \"import json; print(json.load(open('package.json'))['name'])\"",
            Stdout,
            true,
        )
    },
    Row {
        needs: Some("python3"),
        ..row(
            "python3 -c \"from pathlib import Path; print(Path('calc.py').read_text().count('def'))\"",
            Stdout,
            true,
        )
    },
    Row {
        needs: Some("node"),
        ..row(
            "node -e \"console.log(require('./package.json').name)\"",
            Stdout,
            true,
        )
    },
    Row {
        needs: Some("node"),
        ..row(
            "node -e \"console.log(require('fs').readFileSync('calc.py', 'utf8').length)\"",
            Stdout,
            true,
        )
    },
    Row {
        needs: Some("perl"),
        ..row(
            "perl -e 'open(my $f, \"<\", \"calc.py\") or die; print scalar(() = <$f>), \"\\n\"'",
            Stdout,
            true,
        )
    },
    // item 3: a URL path in a here-document program is no file
    Row {
        needs: Some("python3"),
        ..row(
            "python3 - <<'EOF'\npath = '/admin/auth/foo'\nprint(path.split('/'))\nEOF",
            Stdout,
            true,
        )
    },
    // item 1: one that writes the workspace still writes it (AUTO)
    Row {
        needs: Some("python3"),
        ..row(
            "python3 -c \"open('out.txt', 'w').write('x')\" && cat out.txt",
            Stdout,
            false,
        )
    },
    // item 2: scratch directories from mktemp, held in a variable or used directly
    row(
        "d=$(mktemp -d) && tar -cf \"$d/a.tar\" calc.py tests && tar -xf \"$d/a.tar\" -C \"$d\" && ls \"$d\"",
        Stdout,
        true,
    ),
    row(
        "d=$(mktemp -d) && cp -r src tests \"$d\" && ls \"$d\"",
        Stdout,
        true,
    ),
    row("cd \"$(mktemp -d)\" && echo ok > f && cat f", Stdout, true),
    // item 6: the workspace lies under /tmp here: /tmp itself holds it, and is written
    row(
        "tar -cf /tmp/a.tar calc.py && mkdir /tmp/x && tar -xf /tmp/a.tar -C /tmp/x && ls /tmp/x",
        Stdout,
        true,
    ),
];

/// One run's outcome.
struct Outcome {
    code: i32,
    stdout: String,
    /// What spear said (status, reason) or bash's stderr, for the failure message.
    detail: String,
}

/// A fresh fixture project: a git repository with one commit and one untracked file.
fn fixture(base: &Path, name: &str) -> PathBuf {
    let ws = base.join(name);
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("tests")).unwrap();
    let mut big = String::new();
    for i in 1..=100_000 {
        let _ = writeln!(big, "{i}");
    }
    std::fs::write(ws.join("big.txt"), big).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n",
    )
    .unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        ws.join("package.json"),
        "{\"name\": \"calc-web\", \"version\": \"1.0.0\"}\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("tests/test_calc.py"),
        "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("HOME", base)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Fixture")
            .env("GIT_AUTHOR_EMAIL", "fixture@example.invalid")
            .env("GIT_COMMITTER_NAME", "Fixture")
            .env("GIT_COMMITTER_EMAIL", "fixture@example.invalid")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["-c", "init.defaultBranch=main", "init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "fixture"]);
    std::fs::write(ws.join("notes.txt"), "untracked notes\n").unwrap();
    ws
}

/// A fresh HOME: the host's git identity and small toolchain and dependency trees.
fn home(base: &Path, name: &str) -> PathBuf {
    let home = base.join(name);
    let write = |rel: &str, text: &str| {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        ".gitconfig",
        "[user]\n\tname = Host User\n\temail = host@example.invalid\n",
    );
    write(
        ".cargo/registry/src/index.crates.io-0000000000000000/itoa-1.0.0/src/lib.rs",
        "//! itoa, a fixture copy\npub fn fmt() {}\n",
    );
    write(
        ".rustup/toolchains/stable-x86_64-unknown-linux-gnu/lib/README",
        "toolchain\n",
    );
    write(
        ".pyenv/versions/3.11.0/lib/python3.11/site-packages/fixture.py",
        "fixture_marker = 1\n",
    );
    home
}

fn present(program: &str) -> bool {
    if program.starts_with('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn run(mut cmd: Command, stdin: Option<&str>) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawns");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // The command may not read it all; a broken pipe here is the command's business.
        let _ = pipe.write_all(text.as_bytes());
    }
    child.wait_with_output().expect("waits")
}

/// Replaces what must differ between runs: the workspace and home paths, mktemp names, commit
/// ids.
fn normalise(text: &str, ws: &Path, home: &Path) -> String {
    let text = text
        .replace(&ws.display().to_string(), "{WS}")
        .replace(&home.display().to_string(), "{HOME}");
    // Column widths of `ls -l` follow the widest entry of the whole listing, and a few host
    // entries have owners the sandbox does not map (shown as nogroup): one space for a run.
    let text = text
        .lines()
        .map(|l| {
            l.split(' ')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if text.ends_with('\n') { "\n" } else { "" };
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let hex = word.len() >= 7
            && word
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        let mktemp = word.len() == 14 && word.starts_with("tmp.");
        out.push_str(if hex {
            "{SHA}"
        } else if mktemp {
            "tmp.{X}"
        } else {
            word
        });
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The real toolchain homes, for a row that runs the real compiler.
fn toolchains(cmd: &mut Command, row: &Row) {
    if !row.real_toolchains {
        // `cargo test` runs this under rustup, which names the real homes: the fresh HOME's
        // trees are the ones meant.
        for name in ["CARGO_HOME", "RUSTUP_HOME"] {
            cmd.env_remove(name);
        }
        return;
    }
    let real = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    for (name, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var_os(name).map_or_else(|| real.join(dir), PathBuf::from);
        cmd.env(name, value);
    }
}

fn bash(row: &Row, base: &Path, pipefail: bool) -> Outcome {
    let ws = fixture(base, "bash-ws");
    let home = home(base, "bash-home");
    let mut cmd = Command::new("bwrap");
    cmd.args(["--dev-bind", "/", "/", "--tmpfs", "/tmp"]);
    // The test's own directories may live under /tmp: bind them back over the private one.
    cmd.arg("--bind").arg(base).arg(base);
    cmd.args(["--", "bash"]);
    if pipefail {
        cmd.args(["-o", "pipefail"]);
    }
    cmd.args(["-c", row.script])
        .current_dir(&ws)
        .env("HOME", &home)
        // The sandbox's TMPDIR is its private /tmp; so is the baseline's.
        .env("TMPDIR", "/tmp");
    toolchains(&mut cmd, row);
    let out = run(cmd, row.stdin);
    let outcome = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: normalise(&String::from_utf8_lossy(&out.stdout), &ws, &home),
        detail: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
    if pipefail && outcome.code == 141 {
        return bash(row, base, false);
    }
    outcome
}

fn spear(row: &Row, base: &Path, mode: &str) -> Outcome {
    let ws = fixture(base, "spear-ws");
    let home = home(base, "spear-home");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear"));
    cmd.args(["exec", mode, "--workspace"])
        .arg(&ws)
        .args(["-c", row.script])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("XDG_STATE_HOME", base.join("state"))
        .env_remove("XDG_CONFIG_HOME");
    toolchains(&mut cmd, row);
    let out = run(cmd, row.stdin);
    let outcome = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: normalise(&String::from_utf8_lossy(&out.stdout), &ws, &home),
        detail: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
    outcome
}

/// Runs one row (baseline, then each mode) in its own directory; what differs, as text.
fn check(row: &Row, base: &Path) -> Result<String, String> {
    if let Some(program) = row.needs
        && !present(program)
    {
        return Err(format!("skipped (no {program}): {:?}", row.script));
    }
    std::fs::create_dir_all(base).unwrap();
    let started = std::time::Instant::now();
    let want = bash(row, base, true);
    assert!(
        want.code != 127,
        "the baseline found no program for {:?}: {}",
        row.script,
        want.detail
    );
    let modes: &[&str] = if row.read_only {
        &["--auto", "--safe"]
    } else {
        &["--auto"]
    };
    let mut failures = String::new();
    for mode in modes {
        let got = spear(row, base, mode);
        let same_exit = row.compare == StdoutAnyExit || got.code == want.code;
        let same_stdout = row.compare == ExitOnly || got.stdout == want.stdout;
        if !(same_exit && same_stdout) {
            let _ = writeln!(
                failures,
                "\n{mode} {:?}\n  bash:  exit {} stdout {:?}\n  spear: exit {} stdout {:?}\n  \
                 spear's stderr: {}",
                row.script,
                want.code,
                want.stdout,
                got.code,
                got.stdout,
                got.detail.trim_end()
            );
        }
    }
    eprintln!(
        "{:6.2} s  {:?}",
        started.elapsed().as_secs_f64(),
        row.script
    );
    Ok(failures)
}

#[test]
fn ordinary_commands_give_what_bash_gives() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    // Rows run four at a time: each waits mostly on process start-up, not on a core.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(row) = ROWS.get(i) else { break };
                    let outcome = check(row, &base.join(i.to_string()));
                    results.lock().unwrap().push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let mut failures = String::new();
    let mut checked = 0;
    for (_, outcome) in results {
        match outcome {
            Ok(text) => {
                checked += 1;
                failures.push_str(&text);
            }
            Err(skip) => eprintln!("{skip}"),
        }
    }
    assert!(checked > 0, "some row ran");
    assert!(
        failures.is_empty(),
        "ordinary commands that spear does not run as bash does:{failures}"
    );
}
