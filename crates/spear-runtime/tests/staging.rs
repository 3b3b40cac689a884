//! Staged writes against the real mechanism (bubblewrap over an overlay of each root): what a
//! command wrote reaches the workspace only through the commit, and every kind of change is seen
//! and committed as the command left it.
//!
//! Every negative check has a positive control in the same command.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use common::{Fixture, run_committed, writable};
use spear_core::ToolStatus;
use spear_runtime::{CommandLine, CommandRequest};

fn read(f: &Fixture, rel: &str) -> Option<String> {
    std::fs::read_to_string(f.ws.join(rel)).ok()
}

#[test]
fn every_kind_of_change_is_committed_as_the_command_left_it() {
    let f = Fixture::new();
    let w = |rel: &str, text: &str| {
        let p = f.ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("renamed.txt", "moved\n");
    w("removed.txt", "gone\n");
    w("tree/a.txt", "a\n");
    w("tree/sub/b.txt", "b\n");
    w("replaced/old.txt", "old\n");
    w("movedir/x.txt", "x\n");
    w("script.sh", "#!/bin/sh\n");
    w("file-to-dir", "f\n");
    std::fs::create_dir_all(f.ws.join("dir-to-file/inner")).unwrap();
    w("touched.txt", "same\n");
    w("linked.txt", "linked\n");
    std::os::unix::fs::symlink("renamed.txt", f.ws.join("link-old")).unwrap();
    let before_touch = std::fs::metadata(f.ws.join("touched.txt")).unwrap().mtime();
    let r = f.auto(
        "mv renamed.txt now-here.txt && rm removed.txt && rm -rf tree && \
         rm -rf replaced && mkdir replaced && echo new > replaced/new.txt && \
         mv movedir movedir2 && chmod 755 script.sh && \
         rm file-to-dir && mkdir file-to-dir && echo in > file-to-dir/in.txt && \
         rm -rf dir-to-file && echo now-a-file > dir-to-file && \
         touch -d '2001-01-01' touched.txt && ln linked.txt hard.txt && \
         ln -sfn now-here.txt link-old && ln -s now-here.txt link-new && \
         mkfifo pipe && echo made > made.txt && chmod 4755 made.txt",
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(read(&f, "now-here.txt").as_deref(), Some("moved\n"));
    assert!(!f.ws.join("renamed.txt").exists());
    assert!(!f.ws.join("removed.txt").exists());
    assert!(!f.ws.join("tree").exists());
    assert_eq!(read(&f, "replaced/new.txt").as_deref(), Some("new\n"));
    assert!(
        !f.ws.join("replaced/old.txt").exists(),
        "a replaced directory"
    );
    assert_eq!(read(&f, "movedir2/x.txt").as_deref(), Some("x\n"));
    assert!(!f.ws.join("movedir").exists());
    let mode = |rel: &str| {
        std::fs::symlink_metadata(f.ws.join(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("script.sh"), 0o755);
    assert_eq!(
        mode("made.txt"),
        0o755,
        "set-user-ID never reaches the host"
    );
    assert_eq!(read(&f, "file-to-dir/in.txt").as_deref(), Some("in\n"));
    assert_eq!(read(&f, "dir-to-file").as_deref(), Some("now-a-file\n"));
    let touched = std::fs::metadata(f.ws.join("touched.txt")).unwrap().mtime();
    assert_ne!(touched, before_touch, "a time-only change lands");
    assert_eq!(read(&f, "hard.txt").as_deref(), Some("linked\n"));
    assert_eq!(
        std::fs::read_link(f.ws.join("link-old")).unwrap(),
        std::path::Path::new("now-here.txt")
    );
    assert_eq!(
        std::fs::read_link(f.ws.join("link-new")).unwrap(),
        std::path::Path::new("now-here.txt")
    );
    assert!(!f.ws.join("pipe").exists(), "a fifo is not kept");
    let reason = r.reason.clone().unwrap_or_default();
    assert!(reason.contains("pipe"), "and the result says so: {reason}");
    for label in [
        "now-here.txt",
        "renamed.txt",
        "removed.txt",
        "tree/a.txt",
        "replaced/old.txt",
        "replaced/new.txt",
        "movedir2/x.txt",
        "script.sh",
        "dir-to-file",
        "hard.txt",
        "link-new",
        "made.txt",
    ] {
        assert!(
            r.changed_paths.iter().any(|p| p == label),
            "{label} in {:?}",
            r.changed_paths
        );
    }
    // Nothing of the staging is left behind.
    assert!(
        no_staging_left(&f),
        "staging directories remain: {:?}",
        staging_dirs(&f)
    );
}

fn staging_dirs(f: &Fixture) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(&f.staging)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n != "conflicts"))
                .collect()
        })
        .unwrap_or_default()
}

fn no_staging_left(f: &Fixture) -> bool {
    staging_dirs(f).is_empty()
}

/// Nothing a command writes is on the host while it runs, not even an ordinary file: a watcher
/// on the host sees the ordinary file only once the command's changes are committed, and never
/// sees the protected ones.
#[test]
fn nothing_reaches_the_host_before_the_commit() {
    let f = Fixture::new();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (ws, stop) = (f.ws.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for rel in [".envrc", ".vscode/tasks.json", "normal.txt"] {
                    if ws.join(rel).exists() && !seen.contains(&rel) {
                        seen.push(rel);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            seen
        })
    };
    let r = f.auto(
        "p=.envr; echo 'touch x' > ${p}c; mkdir -p .vscode; echo '{}' > .vscode/tasks.json; \
         echo ordinary > normal.txt; sleep 1.5",
    );
    let after_commit = f.ws.join("normal.txt").exists();
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let seen = watcher.join().unwrap();
    assert!(
        after_commit,
        "positive control: committed at the end: {r:?}"
    );
    assert_eq!(
        seen,
        ["normal.txt"],
        "only the ordinary file, and only after the commit"
    );
    assert!(!f.ws.join(".envrc").exists());
    assert!(!f.ws.join(".vscode").exists());
}

/// A command killed half-way (its timeout) leaves the workspace with everything it wrote and
/// the policy allows committed, not half of it.
#[test]
fn a_command_killed_half_way_commits_what_it_wrote_whole() {
    let f = Fixture::new();
    let mut request = CommandRequest::new(
        CommandLine::Script(
            "for i in $(seq 1 300); do echo $i > f$i; done; echo done > last; sleep 600".into(),
        ),
        writable(),
    );
    request.timeout = Some(Duration::from_secs(3));
    let r = run_committed(&f.runner, &request);
    assert_eq!(r.status, ToolStatus::Timeout, "{r:?}");
    for i in 1..=300 {
        assert_eq!(
            read(&f, &format!("f{i}")).as_deref(),
            Some(format!("{i}\n").as_str())
        );
    }
    assert_eq!(read(&f, "last").as_deref(), Some("done\n"));
    assert!(no_staging_left(&f));
}

/// Two writers on one workspace, each with its own staging (two spear processes): a file the
/// other changed while the command ran is not overwritten; the command's version is kept aside
/// and named. Nothing of either is lost.
#[test]
fn a_change_made_on_the_host_while_a_command_ran_is_not_lost() {
    let f = Fixture::new();
    std::fs::write(f.ws.join("shared.txt"), "start\n").unwrap();
    let other = {
        let ws = f.ws.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            std::fs::write(ws.join("shared.txt"), "the other writer\n").unwrap();
        })
    };
    let r = f.auto("sleep 1.5; echo mine >> shared.txt; echo mine > own.txt");
    other.join().unwrap();
    assert_eq!(
        read(&f, "shared.txt").as_deref(),
        Some("the other writer\n"),
        "{r:?}"
    );
    assert_eq!(
        read(&f, "own.txt").as_deref(),
        Some("mine\n"),
        "positive control"
    );
    let reason = r.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("changed on the host while the command ran")
            && reason.contains("shared.txt"),
        "{reason}"
    );
    let kept = reason
        .split("kept in ")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .unwrap()
        .trim();
    let kept = std::path::Path::new(kept).join("0/shared.txt");
    // The command's version is kept (it saw the other writer's content if it read the file
    // after that write: the lower layer is the live workspace until the command copies a file up).
    let kept_text = std::fs::read_to_string(&kept).unwrap();
    assert!(
        kept_text.ends_with("mine\n"),
        "the command's version is kept: {}: {kept_text:?}",
        kept.display()
    );
}

/// No number of repositories in the workspace keeps a writable command from starting (one bwrap
/// argument per protected directory once made `mkdir -p d/{1..20000}/.git` switch writing off).
#[test]
fn twenty_thousand_repositories_do_not_switch_writing_off() {
    let f = Fixture::new();
    for i in 0..20_000 {
        std::fs::create_dir_all(f.ws.join(format!("d/{i}/.git/hooks"))).unwrap();
    }
    let r = f.auto("echo still > writable.txt");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(read(&f, "writable.txt").as_deref(), Some("still\n"));
    let r = f.auto("echo '#!/bin/sh' > d/19999/.git/hooks/pre-commit");
    assert!(
        !f.ws.join("d/19999/.git/hooks/pre-commit").exists(),
        "{r:?}"
    );
}

/// Staging on another filesystem than the workspace (a tmpfs): the commit copies instead of
/// renaming, with the same result (content, mode, modification time).
#[test]
fn staging_on_another_filesystem_commits_by_copying() {
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let base = shm.path().to_path_buf();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let f = Fixture::with(|c| c.staging = vec![base.clone()]);
    assert_ne!(
        std::fs::metadata(&base).unwrap().dev(),
        std::fs::metadata(&f.ws).unwrap().dev(),
        "positive control: two filesystems"
    );
    std::fs::write(f.ws.join("old.txt"), "old\n").unwrap();
    let r = f.auto(
        "echo new > new.txt && echo more >> old.txt && chmod 700 old.txt && \
         touch -d '2001-02-03 04:05:06' new.txt && mkdir -p d/e && echo deep > d/e/f.txt",
    );
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(read(&f, "new.txt").as_deref(), Some("new\n"));
    assert_eq!(read(&f, "old.txt").as_deref(), Some("old\nmore\n"));
    assert_eq!(read(&f, "d/e/f.txt").as_deref(), Some("deep\n"));
    let meta = std::fs::metadata(f.ws.join("old.txt")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
    let new = std::fs::metadata(f.ws.join("new.txt")).unwrap();
    assert_eq!(
        chrono_free_year(new.mtime()),
        2001,
        "the modification time is kept"
    );
    assert!(
        std::fs::read_dir(&base).unwrap().next().is_none(),
        "nothing left in the staging"
    );
}

/// The year of a Unix time (UTC), without a date library.
fn chrono_free_year(secs: i64) -> i64 {
    let mut year = 1970;
    let mut left = secs;
    loop {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let len = if leap { 366 } else { 365 } * 86_400;
        if left < len {
            return year;
        }
        left -= len;
        year += 1;
    }
}

/// A commit past its limit of changes, or stopped while it judges, commits nothing and says so;
/// under the limit, the same command's changes land (positive control).
#[test]
fn a_commit_over_its_limit_or_stopped_commits_nothing() {
    use spear_runtime::TrackedRules;
    let f = Fixture::with(|c| c.commit_max_changes = 50);
    let make = |dir: &str, n: usize| {
        CommandRequest::new(
            CommandLine::Script(format!("mkdir {dir} && cd {dir} && seq {n} | xargs touch")),
            writable(),
        )
    };
    let r = run_committed(&f.runner, &make("small", 40));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(std::fs::read_dir(f.ws.join("small")).unwrap().count(), 40);
    // Over the limit: the layer holds more than 50 entries.
    let r = run_committed(&f.runner, &make("big", 100));
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    let reason = r.reason.unwrap();
    assert!(reason.contains("the limit is 50"), "{reason}");
    assert!(
        reason.contains("none of its changes were committed"),
        "{reason}"
    );
    assert!(r.changed_paths.is_empty());
    assert!(!f.ws.join("big").exists());
    assert!(no_staging_left(&f));
    // Stopped while judging: nothing lands.
    let report = f.runner.run_report(&make("stopped", 10));
    let staged = report.staged.unwrap();
    let ws = f.runner.workspace();
    let fs = ws.fs().unwrap();
    let policy = spear_policy::CommandPolicy::new(
        std::sync::Arc::clone(ws),
        spear_policy::PolicyConfig::new(None),
    );
    let judge = common::PolicyJudge::new(&policy);
    let commit = staged.commit(ws, &fs, &judge, None, &TrackedRules::new(), &|| true);
    assert_eq!(commit.stopped, Some(11), "the directory and its 10 files");
    let mut result = report.result;
    commit.apply_to(&mut result);
    assert_eq!(result.status, ToolStatus::Cancelled);
    assert!(
        result
            .reason
            .unwrap()
            .contains("none of them were committed")
    );
    assert!(!f.ws.join("stopped").exists());
}

/// A judge that refuses outright the paths in `refuse`, asks about those in `ask` (as host-run
/// configuration) and answers the question with `approve`, counting what it was asked.
struct Picky {
    refuse: &'static [&'static str],
    ask: &'static [&'static str],
    approve: bool,
    asked: std::cell::Cell<usize>,
}

impl Picky {
    fn new(refuse: &'static [&'static str], ask: &'static [&'static str], approve: bool) -> Self {
        Picky {
            refuse,
            ask,
            approve,
            asked: std::cell::Cell::new(0),
        }
    }
}

impl spear_runtime::Judge for Picky {
    fn judge(&self, change: &spear_runtime::Proposed<'_>) -> Result<(), spear_core::Refusal> {
        let rel = change.loc.rel.to_string_lossy();
        if self.refuse.iter().any(|r| rel == *r) {
            return Err(spear_core::Refusal::protected_entry(
                rel,
                "the test refuses it",
            ));
        }
        if self.ask.iter().any(|r| rel == *r) {
            return Err(spear_core::Refusal::host_run_config(
                rel,
                "git-config",
                "the test asks",
            ));
        }
        Ok(())
    }

    fn approve(&self, asked: &[&spear_core::Refusal]) -> Result<(), spear_core::Refusal> {
        self.asked.set(self.asked.get() + asked.len());
        if self.approve {
            Ok(())
        } else {
            Err(spear_core::Refusal::declined("the test declines"))
        }
    }
}

/// `git` in the fixture's workspace, on the host; it must succeed.
fn host_git(f: &Fixture, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(&f.ws)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fixture whose workspace is a repository with one commit.
fn repository() -> Fixture {
    let f = Fixture::new();
    spear_testkit::git::commit_everything(|| {
        let mut git = std::process::Command::new("git");
        git.current_dir(&f.ws);
        git
    });
    f
}

/// Runs `script` writable and commits it with `judge`: the result and the commit's report.
fn commit_with(
    f: &Fixture,
    script: &str,
    judge: &Picky,
) -> (spear_core::ToolResult, spear_runtime::CommitReport) {
    let report = f.runner.run_report(&CommandRequest::new(
        CommandLine::Script(script.to_owned()),
        writable(),
    ));
    let staged = report.staged.unwrap();
    let ws = f.runner.workspace();
    let fs = ws.fs().unwrap();
    let tracked = spear_runtime::TrackedRules::new();
    let commit = staged.commit(ws, &fs, judge, None, &tracked, &|| false);
    let mut result = report.result;
    commit.apply_to(&mut result);
    (result, commit)
}

/// Issue 32, item 4: a git operation's changes are committed together or not at all. One of its
/// refs refused outright, its other ref and its reflog stay out with it, nobody is asked about
/// the host-run configuration it also wrote (dropped anyway), and the result is `denied` with
/// 126; the ordinary file the same command wrote lands (independent). Positive control: the
/// same judge lets a branch alone through, `ok` and 0.
#[test]
fn a_git_operation_refused_in_part_is_kept_out_whole() {
    let f = repository();
    let config_before = std::fs::read(f.ws.join(".git/config")).unwrap();
    let judge = Picky::new(&[".git/refs/tags/t"], &[".git/config"], true);
    let (r, report) = commit_with(
        &f,
        "git branch x && git tag t && git config core.pager less && echo out > out.txt",
        &judge,
    );
    assert_eq!(r.status, ToolStatus::Denied, "{r:?}");
    assert_eq!(r.exit_code, Some(spear_core::exit_code::REFUSED), "{r:?}");
    let reason = r.reason.clone().unwrap();
    assert!(reason.contains("the command itself exited 0"), "{reason}");
    assert!(reason.contains(".git/refs/tags/t"), "{reason}");
    assert!(
        reason.contains("were kept out with them: a git operation's changes are committed"),
        "{reason}"
    );
    assert_eq!(report.kept_together.len(), 1, "{:?}", report.kept_together);
    assert_eq!(report.kept_together[0].0, ".git");
    assert!(report.kept_together[0].1 >= 3, "{:?}", report.kept_together);
    assert_eq!(
        judge.asked.get(),
        0,
        "nobody is asked about what is dropped anyway"
    );
    for gone in [
        ".git/refs/heads/x",
        ".git/logs/refs/heads/x",
        ".git/refs/tags/t",
    ] {
        assert!(!f.ws.join(gone).exists(), "{gone}: {r:?}");
    }
    assert_eq!(
        std::fs::read(f.ws.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(read(&f, "out.txt").as_deref(), Some("out\n"), "{r:?}");
    assert_eq!(r.changed_paths, ["out.txt"]);
    host_git(&f, &["fsck", "--no-progress"]);
    // Positive control: a branch alone is let through whole.
    let (r, report) = commit_with(&f, "git branch y", &judge);
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.exit_code, Some(0));
    assert!(report.kept_together.is_empty());
    assert!(f.ws.join(".git/refs/heads/y").exists());
    assert!(host_git(&f, &["branch", "--list"]).contains('y'));
}

/// Host-run configuration inside a git directory not approved takes the rest of its git
/// operation with it; approved, all of it lands (the positive control). A command that failed
/// keeps its status and its own code.
#[test]
fn an_unapproved_git_write_takes_its_operation_with_it() {
    let f = repository();
    let declines = Picky::new(&[], &[".git/refs/heads/z"], false);
    let (r, report) = commit_with(&f, "git branch z && echo a > a.txt", &declines);
    assert_eq!(declines.asked.get(), 1);
    assert_eq!(
        (r.status, r.exit_code),
        (ToolStatus::Denied, Some(spear_core::exit_code::REFUSED)),
        "{r:?}"
    );
    assert!(report.unapproved.is_some());
    assert_eq!(report.kept_together.len(), 1, "{:?}", report.kept_together);
    assert!(!f.ws.join(".git/refs/heads/z").exists());
    assert!(!f.ws.join(".git/logs/refs/heads/z").exists(), "{r:?}");
    assert_eq!(read(&f, "a.txt").as_deref(), Some("a\n"));
    // A command that failed: failed, with its own code, and the same kept out.
    let (r, _) = commit_with(&f, "git branch z; exit 3", &declines);
    assert_eq!(
        (r.status, r.exit_code),
        (ToolStatus::Failed, Some(3)),
        "{r:?}"
    );
    assert!(!f.ws.join(".git/logs/refs/heads/z").exists(), "{r:?}");
    // Approved: the branch and its reflog land.
    let approves = Picky::new(&[], &[".git/refs/heads/z"], true);
    let (r, report) = commit_with(&f, "git branch z", &approves);
    assert_eq!((r.status, r.exit_code), (ToolStatus::Ok, Some(0)), "{r:?}");
    assert!(report.kept_together.is_empty());
    assert!(f.ws.join(".git/refs/heads/z").exists());
    assert!(f.ws.join(".git/logs/refs/heads/z").exists());
}
