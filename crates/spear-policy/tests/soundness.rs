//! Soundness on real commands: every tldr command the classifier calls `READ_ONLY` is run for real,
//! in a bubblewrap sandbox where the workspace is writable and the rest of the host read-only, and
//! must leave the workspace exactly as it was (paths, kinds, modes, sizes, modification times and
//! contents). A positive control shows that the same runner sees a write.
//!
//! bubblewrap is installed by scripts/setup.sh; without it this test fails, it does not skip.

// A test fails loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use spear_core::CommandClass;
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{Workspace, WorkspaceConfig};

/// One entry of a workspace snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    kind: u32,
    mode: u32,
    size: u64,
    mtime: (i64, i64),
    content: u64,
}

type Snapshot = BTreeMap<PathBuf, Entry>;

fn snapshot(root: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(m) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let content = if m.is_file() {
                // The first MiB; size and modification time cover the rest (a command may leave a
                // 10 GiB sparse file behind, as `truncate -s 10G` does).
                let mut h = std::collections::hash_map::DefaultHasher::new();
                let mut head = Vec::new();
                if let Ok(f) = std::fs::File::open(&path) {
                    let _ =
                        std::io::Read::read_to_end(&mut std::io::Read::take(f, 1 << 20), &mut head);
                }
                head.hash(&mut h);
                h.finish()
            } else if m.file_type().is_symlink() {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read_link(&path).unwrap_or_default().hash(&mut h);
                h.finish()
            } else {
                0
            };
            if m.is_dir() {
                stack.push(path.clone());
            }
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            out.insert(
                rel,
                Entry {
                    kind: m.mode() & 0o170_000,
                    mode: m.mode() & 0o7777,
                    size: if m.is_dir() { 0 } else { m.size() },
                    mtime: (m.mtime(), m.mtime_nsec()),
                    content,
                },
            );
        }
    }
    out
}

fn differences(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut diffs = Vec::new();
    for (p, e) in before {
        match after.get(p) {
            None => diffs.push(format!("removed {}", p.display())),
            Some(a) if a != e => diffs.push(format!("changed {}", p.display())),
            Some(_) => {}
        }
    }
    for p in after.keys() {
        if !before.contains_key(p) {
            diffs.push(format!("created {}", p.display()));
        }
    }
    diffs
}

/// A workspace with the files the corpus placeholders are replaced by, and a git repository.
fn make_workspace(ws: &Path) {
    for d in ["data/sub", "src"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    for (f, text) in [
        ("README.md", "# readme\n"),
        ("data/file.txt", "alpha\nbeta\ngamma\n"),
        ("data/file2.txt", "one,two\nthree,four\n"),
        ("data/sub/deep.txt", "deep\n"),
        ("data/file.json", "{\"name\": \"x\", \"list\": [1, 2]}\n"),
        ("src/main.rs", "fn main() {}\n"),
    ] {
        std::fs::write(ws.join(f), text).unwrap();
    }
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "init"]);
}

/// Replaces the tldr placeholders: `{{[-a|--all]}}` by its first alternative, paths by fixture
/// files, numbers by 1, URLs by an address that goes nowhere.
fn substitute(command: &str) -> String {
    let mut out = String::new();
    let mut rest = command;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = &rest[start + 2..start + len];
        let lower = inner.to_ascii_lowercase();
        let value = if inner.starts_with('[') && inner.contains('|') {
            inner
                .trim_start_matches('[')
                .split('|')
                .next()
                .unwrap_or("")
                .to_owned()
        } else if lower.contains("dir") || lower.contains("folder") {
            "data".to_owned()
        } else if lower.contains("json") {
            "data/file.json".to_owned()
        } else if lower.contains("file") || lower.contains("path") {
            "data/file.txt".to_owned()
        } else if lower.contains("url") || lower.contains("http") {
            "http://192.0.2.1/x".to_owned()
        } else if lower.chars().all(|c| c.is_ascii_digit())
            || [
                "number", "count", "size", "seconds", "lines", "bytes", "port",
            ]
            .iter()
            .any(|w| lower.contains(w))
        {
            "1".to_owned()
        } else {
            "x".to_owned()
        };
        out.push_str(&value);
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// Runs `script` in a bubblewrap sandbox: the workspace writable, the host read-only, no network,
/// a private /tmp, at most 2 seconds.
fn run_confined(ws: &Path, script: &str) {
    let status = Command::new("timeout")
        .args([
            "-s",
            "KILL",
            "2",
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
        ])
        .arg("--bind")
        .arg(ws)
        .arg(ws)
        .args(["--dev", "/dev", "--proc", "/proc", "--chdir"])
        .arg(ws)
        .args(["--", "bash", "-c", script])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", "/tmp")
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("timeout and bwrap run (scripts/setup.sh installs bubblewrap)");
    // The command's own status does not matter; only its effect on the workspace does.
    let _ = status;
}

struct Lane {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    policy: CommandPolicy,
}

fn lane() -> Lane {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // Let an unprivileged run of this test reach the workspace from inside the sandbox.
    make_workspace(&ws);
    let workspace = Workspace::open(&WorkspaceConfig::new(&ws)).unwrap();
    let policy = CommandPolicy::new(
        Arc::new(workspace),
        PolicyConfig::new(Some(PathBuf::from("/tmp"))),
    );
    Lane {
        _dir: dir,
        ws,
        policy,
    }
}

#[test]
fn the_runner_sees_a_write() {
    let bwrap = Command::new("bwrap").arg("--version").output();
    assert!(
        bwrap.is_ok_and(|o| o.status.success()),
        "bubblewrap is missing: run scripts/setup.sh"
    );
    let lane = lane();
    let before = snapshot(&lane.ws);
    run_confined(&lane.ws, "touch data/new.txt; echo x >> README.md");
    let diffs = differences(&before, &snapshot(&lane.ws));
    assert!(
        diffs.iter().any(|d| d == "created data/new.txt"),
        "{diffs:?}"
    );
    assert!(diffs.iter().any(|d| d == "changed README.md"), "{diffs:?}");
    // And that a read changes nothing.
    let before = snapshot(&lane.ws);
    run_confined(&lane.ws, "cat README.md; git log --oneline; git status");
    assert_eq!(
        differences(&before, &snapshot(&lane.ws)),
        Vec::<String>::new()
    );
}

/// One corpus command to run, and what it may change.
struct Job {
    command: String,
    class: CommandClass,
    /// For `WORKSPACE_MUTATING`: the write targets, as host path strings. A target names a path or a
    /// file-name prefix (`split`'s `x`), so a change must start with one of them.
    targets: Vec<String>,
}

/// The tldr corpus's commands, with the placeholders substituted.
fn corpus_commands() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tldr-commands.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            substitute(
                serde_json::from_str::<serde_json::Value>(l).unwrap()["command"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect()
}

/// The commands classified `READ_ONLY` or `WORKSPACE_MUTATING`, each with its write targets
/// relative to the workspace.
fn classify(commands: Vec<String>) -> Vec<Job> {
    let l = lane();
    commands
        .into_iter()
        .filter_map(|command| {
            let a = l.policy.classify_script(&command, &l.ws);
            let targets = a
                .write_targets
                .iter()
                .map(|t| {
                    t.strip_prefix(&l.ws)
                        .unwrap_or(t)
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            matches!(
                a.class,
                CommandClass::ReadOnly | CommandClass::WorkspaceMutating
            )
            .then_some(Job {
                command,
                class: a.class,
                targets,
            })
        })
        .collect()
}

#[test]
fn read_only_changes_nothing_and_writes_stay_in_their_targets() {
    let commands = corpus_commands();
    // Classify in one lane (the fixture paths differ per lane, so targets are kept relative);
    // run in two lanes, one per core.
    let jobs = classify(commands);
    let read_only = jobs
        .iter()
        .filter(|j| j.class == CommandClass::ReadOnly)
        .count();
    let mutating = jobs.len() - read_only;
    assert!(
        read_only > 1_000 && mutating > 500,
        "{read_only} READ_ONLY, {mutating} WORKSPACE_MUTATING"
    );
    let queue = Arc::new(Mutex::new(jobs));
    let violations = Arc::new(Mutex::new(Vec::new()));
    let slow: Arc<Mutex<Vec<(std::time::Duration, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let violations = Arc::clone(&violations);
            let slow = Arc::clone(&slow);
            std::thread::spawn(move || {
                let mut l = lane();
                let mut before = snapshot(&l.ws);
                loop {
                    let Some(job) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let started = std::time::Instant::now();
                    run_confined(&l.ws, &job.command);
                    let after = snapshot(&l.ws);
                    let diffs = differences(&before, &after);
                    slow.lock()
                        .unwrap()
                        .push((started.elapsed(), job.command.clone()));
                    if diffs.is_empty() {
                        continue;
                    }
                    let stray: Vec<&String> = diffs
                        .iter()
                        .filter(|d| {
                            let rel = d.split_once(' ').map_or("", |x| x.1);
                            job.class == CommandClass::ReadOnly
                                || !job.targets.iter().any(|t| {
                                    t.is_empty()
                                        || t == "."
                                        || rel.starts_with(t.as_str())
                                        || t.starts_with(rel)
                                })
                        })
                        .collect();
                    if !stray.is_empty() {
                        let what = if job.class == CommandClass::ReadOnly {
                            "READ_ONLY, changed"
                        } else {
                            "wrote outside its targets"
                        };
                        violations.lock().unwrap().push(format!(
                            "{:?} {what}: {stray:?} (targets {:?})",
                            job.command, job.targets
                        ));
                    }
                    l = lane();
                    before = snapshot(&l.ws);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut slow = slow.lock().unwrap();
    slow.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    for (t, c) in slow.iter().take(25) {
        eprintln!("slow: {t:?} {c:?}");
    }
    let violations = violations.lock().unwrap();
    eprintln!(
        "ran {read_only} READ_ONLY and {mutating} WORKSPACE_MUTATING corpus commands; {} violations",
        violations.len()
    );
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn placeholders() {
    assert_eq!(
        substitute("ls {{[-a|--all]}} {{path/to/dir}}"),
        "ls -a data"
    );
    assert_eq!(
        substitute("head -n {{count}} {{path/to/file}}"),
        "head -n 1 data/file.txt"
    );
    assert_eq!(
        substitute("curl {{https://example.com}}"),
        "curl http://192.0.2.1/x"
    );
}
