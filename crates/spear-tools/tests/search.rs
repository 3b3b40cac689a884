//! The `search_files` engine on real directory trees: what is found, what is left out, and that
//! nothing outside the workspace is ever read (links, swapped directories, fifos).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use spear_tools::search::{
    MAX_FILE_BYTES, SearchError, SearchOutput, SearchRequest, render, search,
};
use spear_workspace::{Workspace, WorkspaceConfig, WorkspaceFs};

const CANARY: &str = "CANARY-7f3a9c-SECRET";

/// A workspace on a fresh temporary directory, with the directory itself.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: Workspace,
    fs: WorkspaceFs,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let mut config = WorkspaceConfig::new(&root);
        config.single_root = true;
        let ws = Workspace::open(&config).unwrap();
        let fs = ws.fs().unwrap();
        Fixture {
            _dir: dir,
            root,
            ws,
            fs,
        }
    }

    fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    fn search(&self, req: &SearchRequest) -> Result<SearchOutput, SearchError> {
        search(&self.ws, &self.fs, req)
    }

    fn find(&self, pattern: &str) -> SearchOutput {
        self.search(&req(pattern)).unwrap()
    }
}

fn req(pattern: &str) -> SearchRequest {
    SearchRequest {
        pattern: pattern.to_owned(),
        path: None,
        glob: None,
        case_insensitive: false,
        max_results: 1000,
    }
}

/// The matches as `path:line:text` strings.
fn lines(out: &SearchOutput) -> Vec<String> {
    out.matches
        .iter()
        .map(|m| format!("{}:{}:{}", m.path, m.line, m.text))
        .collect()
}

/// The paths that matched, deduplicated, in order.
fn paths(out: &SearchOutput) -> Vec<String> {
    let mut p: Vec<String> = out.matches.iter().map(|m| m.path.clone()).collect();
    p.dedup();
    p
}

/// Whether anything in the output (matches or notes) mentions `needle`.
fn mentions(out: &SearchOutput, needle: &str) -> bool {
    render(out).contains(needle)
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// Runs the search on another thread and fails if it has not returned within a generous bound:
/// a hang is a failure, not a stuck test run.
fn search_must_return(fx: &Arc<Fixture>, request: SearchRequest) -> SearchOutput {
    let (tx, rx) = mpsc::channel();
    let fx = Arc::clone(fx);
    std::thread::spawn(move || {
        let _ = tx.send(fx.search(&request).unwrap());
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the search hung")
}

#[test]
fn finds_matches_with_labels_and_line_numbers_sorted() {
    let fx = Fixture::new();
    fx.write("src/main.rs", "use x;\nfn main() {\n    run();\n}\n");
    fx.write(
        "src/lib/util.rs",
        "// fn main is not here\npub fn run() {}\n",
    );
    fx.write("README.md", "call run() first\n");
    fx.write("notes.txt", "nothing\n");
    let out = fx.find(r"run\(\)");
    assert_eq!(
        lines(&out),
        [
            "README.md:1:call run() first",
            "src/lib/util.rs:2:pub fn run() {}",
            "src/main.rs:3:    run();",
        ]
    );
    assert!(!out.truncated);
    assert_eq!(out.files_searched, 4);
    assert!(out.skipped.is_empty(), "{:?}", out.skipped);
    // Anchors match at line boundaries, as in rg.
    assert_eq!(lines(&fx.find("^fn main")), ["src/main.rs:2:fn main() {"]);
    assert_eq!(
        render(&fx.find("^pub fn")),
        "src/lib/util.rs:2:pub fn run() {}\n"
    );
}

#[test]
fn the_path_narrows_the_search_and_labels_stay_workspace_relative() {
    let fx = Fixture::new();
    fx.write("a/x.txt", "needle\n");
    fx.write("b/x.txt", "needle\n");
    let mut r = req("needle");
    r.path = Some("b".into());
    assert_eq!(paths(&fx.search(&r).unwrap()), ["b/x.txt"]);
    // A single file is searched as named.
    r.path = Some("a/x.txt".into());
    assert_eq!(lines(&fx.search(&r).unwrap()), ["a/x.txt:1:needle"]);
    // Its mount spelling (identity here) works too.
    r.path = Some(fx.root.join("a").display().to_string());
    assert_eq!(paths(&fx.search(&r).unwrap()), ["a/x.txt"]);
}

#[test]
fn labels_in_another_root_carry_its_name() {
    let main = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let other_root = fs::canonicalize(other.path()).unwrap();
    fs::write(other_root.join("lib.rs"), "needle\n").unwrap();
    let mut config = WorkspaceConfig::new(main.path());
    config.extra_roots = vec![other_root.clone()];
    let ws = Workspace::open(&config).unwrap();
    let fs = ws.fs().unwrap();
    let mut r = req("needle");
    r.path = Some(other_root.display().to_string());
    let out = search(&ws, &fs, &r).unwrap();
    let name = ws.roots()[1].name().to_owned();
    assert_eq!(lines(&out), [format!("{name}:lib.rs:1:needle")]);
}

#[test]
fn glob_filters_by_name_or_by_path() {
    let fx = Fixture::new();
    fx.write("src/a.rs", "needle\n");
    fx.write("src/web/b.ts", "needle\n");
    fx.write("lib/c.ts", "needle\n");
    fx.write("d.md", "needle\n");
    let with = |glob: &str| {
        let mut r = req("needle");
        r.glob = Some(glob.into());
        paths(&fx.search(&r).unwrap())
    };
    assert_eq!(with("*.rs"), ["src/a.rs"]);
    assert_eq!(with("*.ts"), ["lib/c.ts", "src/web/b.ts"]);
    assert_eq!(with("src/**/*.ts"), ["src/web/b.ts"]);
    assert_eq!(with("*.{md,rs}"), ["d.md", "src/a.rs"]);
    assert!(with("*.py").is_empty());
    // Positive control: without a glob, all four.
    assert_eq!(paths(&fx.find("needle")).len(), 4);
}

#[test]
fn case_insensitive_matches_any_case() {
    let fx = Fixture::new();
    fx.write("a.txt", "Hello World\nHELLO again\nhello\n");
    assert_eq!(lines(&fx.find("hello")), ["a.txt:3:hello"]);
    let mut r = req("hello");
    r.case_insensitive = true;
    assert_eq!(
        lines(&fx.search(&r).unwrap()),
        [
            "a.txt:1:Hello World",
            "a.txt:2:HELLO again",
            "a.txt:3:hello"
        ]
    );
}

#[test]
fn gitignore_is_honoured_inside_a_repository() {
    let fx = Fixture::new();
    fs::create_dir(fx.root.join(".git")).unwrap();
    fx.write(".gitignore", "target/\n*.log\n!keep.log\n");
    fx.write("src/a.rs", "needle\n");
    fx.write("target/debug/gen.rs", "needle\n");
    fx.write("run.log", "needle\n");
    fx.write("keep.log", "needle\n");
    fx.write("sub/.gitignore", "local.txt\n");
    fx.write("sub/local.txt", "needle\n");
    fx.write("other/local.txt", "needle\n");
    fx.write(".git/info/exclude", "excluded.txt\n");
    fx.write("excluded.txt", "needle\n");
    assert_eq!(
        paths(&fx.find("needle")),
        ["keep.log", "other/local.txt", "src/a.rs"]
    );
    // Naming an ignored directory searches it, as rg does.
    let mut r = req("needle");
    r.path = Some("target".into());
    assert_eq!(paths(&fx.search(&r).unwrap()), ["target/debug/gen.rs"]);
    // The rules of the directories above the starting point still apply.
    fx.write("sub/deeper/local.txt", "needle\n");
    r.path = Some("sub/deeper".into());
    assert!(fx.search(&r).unwrap().matches.is_empty());
}

#[test]
fn gitignore_outside_a_repository_is_not_applied_but_dot_ignore_is() {
    // As rg: `.gitignore` needs a repository, `.ignore` does not.
    let fx = Fixture::new();
    fx.write(".gitignore", "a.txt\n");
    fx.write(".ignore", "b.txt\n");
    fx.write("a.txt", "needle\n");
    fx.write("b.txt", "needle\n");
    fx.write("c.txt", "needle\n");
    assert_eq!(paths(&fx.find("needle")), ["a.txt", "c.txt"]);
}

#[test]
fn hidden_entries_are_skipped_unless_whitelisted_and_dot_git_never_searched() {
    let fx = Fixture::new();
    fx.write("visible.txt", "needle\n");
    fx.write(".env", "needle\n");
    fx.write(".config/app.toml", "needle\n");
    fx.write(".github/workflow.yml", "needle\n");
    fx.write(".git/HEAD", "needle\n");
    assert_eq!(paths(&fx.find("needle")), ["visible.txt"]);
    // A whitelist in `.ignore` brings a hidden directory back; `.git` stays out regardless.
    fx.write(".ignore", "!.github/\n!.git/\n");
    assert_eq!(
        paths(&fx.find("needle")),
        [".github/workflow.yml", "visible.txt"]
    );
}

#[test]
fn binary_files_are_skipped() {
    let fx = Fixture::new();
    fx.write("blob.bin", b"\x00\x01\x02needle\n");
    fx.write("text.txt", "needle\n");
    // Positive control: the same bytes without the NUL match.
    fx.write("almost.bin", b"\x01\x02needle\n");
    assert_eq!(paths(&fx.find("needle")), ["almost.bin", "text.txt"]);
}

#[test]
fn max_results_truncates_and_says_so() {
    let fx = Fixture::new();
    for i in 0..20 {
        fx.write(&format!("f{i:02}.txt"), "needle\nneedle\nneedle\n");
    }
    let mut r = req("needle");
    r.max_results = 7;
    let out = fx.search(&r).unwrap();
    assert_eq!(out.matches.len(), 7);
    assert!(out.truncated);
    let text = render(&out);
    assert!(
        text.trim_end().ends_with(
            "[truncated: more than 7 matching lines; narrow the search with a more specific \
             pattern, a path, or a glob such as \"*.rs\"]"
        ),
        "{text}"
    );
    // Sorted even when truncated.
    let keys: Vec<(String, u64)> = out
        .matches
        .iter()
        .map(|m| (m.path.clone(), m.line))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // Exactly as many as allowed is not truncated.
    r.max_results = 60;
    let out = fx.search(&r).unwrap();
    assert_eq!(out.matches.len(), 60);
    assert!(!out.truncated);
    assert!(!render(&out).contains("truncated"));
    r.max_results = 0;
    assert!(matches!(fx.search(&r), Err(SearchError::ZeroMaxResults)));
}

#[test]
fn long_lines_are_cut() {
    let fx = Fixture::new();
    fx.write(
        "min.js",
        format!("{}needle{}\n", "a".repeat(500), "b".repeat(500)),
    );
    let out = fx.find("needle");
    let text = &out.matches[0].text;
    assert_eq!(text.chars().count(), 301);
    assert!(text.ends_with('…'));
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let fx = Fixture::new();
    for path in ["../x", "..", "/etc", "/etc/passwd", "/proc/self/environ"] {
        let mut r = req("root");
        r.path = Some(path.into());
        match fx.search(&r) {
            Err(SearchError::InvalidPath { message }) => {
                assert!(message.contains(path), "{path}: {message}");
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    let mut r = req("x");
    r.path = Some("missing".into());
    assert!(matches!(fx.search(&r), Err(SearchError::NotFound { path }) if path == "missing"));
}

#[test]
fn a_symlink_to_a_directory_outside_is_never_followed() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("id_rsa"), format!("key {CANARY}\n")).unwrap();
    symlink(outside.path(), fx.root.join("ssh")).unwrap();
    // Control: the link really leads to the secret.
    assert!(
        fs::read_to_string(fx.root.join("ssh/id_rsa"))
            .unwrap()
            .contains(CANARY)
    );
    let out = fx.find(CANARY);
    assert!(out.matches.is_empty(), "{:?}", out.matches);
    assert!(!mentions(&out, CANARY));
    // Positive control: the same file copied inside is found.
    fx.write("copy/id_rsa", format!("key {CANARY}\n"));
    assert_eq!(paths(&fx.find(CANARY)), ["copy/id_rsa"]);
    // Naming a path through the link is refused before anything is read.
    let mut r = req(CANARY);
    r.path = Some("ssh".into());
    assert!(matches!(
        fx.search(&r),
        Err(SearchError::InvalidPath { .. })
    ));
}

#[test]
fn a_symlink_to_a_file_outside_is_never_searched() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    fs::write(&secret, format!("{CANARY}\n")).unwrap();
    symlink(&secret, fx.root.join("notes.txt")).unwrap();
    assert!(
        fs::read_to_string(fx.root.join("notes.txt"))
            .unwrap()
            .contains(CANARY)
    );
    let out = fx.find(CANARY);
    assert!(out.matches.is_empty(), "{:?}", out.matches);
    let mut r = req(CANARY);
    r.path = Some("notes.txt".into());
    assert!(matches!(
        fx.search(&r),
        Err(SearchError::InvalidPath { .. })
    ));
    // Positive control.
    fx.write("real.txt", format!("{CANARY}\n"));
    assert_eq!(paths(&fx.find(CANARY)), ["real.txt"]);
}

#[test]
fn symlinks_inside_the_workspace_are_not_followed_either() {
    let fx = Fixture::new();
    fx.write("src/a.rs", "needle\n");
    symlink("src", fx.root.join("alias")).unwrap();
    symlink("src/a.rs", fx.root.join("a-link.rs")).unwrap();
    assert_eq!(paths(&fx.find("needle")), ["src/a.rs"]);
}

#[test]
fn an_ignore_file_linked_outside_is_not_read() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let rules = outside.path().join("rules");
    fs::write(&rules, format!("a.txt\n{CANARY}\n")).unwrap();
    symlink(&rules, fx.root.join(".ignore")).unwrap();
    fx.write("a.txt", "needle\n");
    let out = fx.find("needle");
    // The rules were not applied (a.txt is found) and the refusal is noted without the content.
    assert_eq!(paths(&out), ["a.txt"]);
    assert_eq!(out.skipped.len(), 1, "{:?}", out.skipped);
    assert!(out.skipped[0].starts_with(".ignore"), "{:?}", out.skipped);
    assert!(!mentions(&out, CANARY));
    // Positive control: the same rules inside the workspace apply.
    fs::remove_file(fx.root.join(".ignore")).unwrap();
    fx.write(".ignore", "a.txt\n");
    assert!(fx.find("needle").matches.is_empty());
}

#[test]
fn fifos_never_hang_the_search() {
    let fx = Arc::new(Fixture::new());
    fx.write("a.txt", "needle\n");
    mkfifo(&fx.root.join("pipe"));
    mkfifo(&fx.root.join("sub-pipe.txt"));
    fx.write("dir/b.txt", "needle\n");
    // A fifo where an ignore file is read: opened without blocking and refused.
    mkfifo(&fx.root.join("dir/.gitignore"));
    mkfifo(&fx.root.join(".ignore"));
    let out = search_must_return(&fx, req("needle"));
    assert_eq!(paths(&out), ["a.txt", "dir/b.txt"]);
    assert!(
        out.skipped.iter().any(|s| s.starts_with(".ignore")),
        "{:?}",
        out.skipped
    );
    // Named directly.
    let mut r = req("needle");
    r.path = Some("pipe".into());
    let out = search_must_return(&fx, r);
    assert!(out.matches.is_empty());
    assert_eq!(out.files_searched, 0);
}

#[test]
fn files_over_the_size_bound_are_skipped_and_listed() {
    let fx = Fixture::new();
    fx.write("small.log", "needle\n");
    let big = fs::File::create(fx.root.join("big.log")).unwrap();
    // Sparse: nothing is written; the bound is checked on the size before reading.
    big.set_len(MAX_FILE_BYTES + 1).unwrap();
    let out = fx.find("needle");
    assert_eq!(paths(&out), ["small.log"]);
    assert_eq!(out.skipped, ["big.log: larger than 64 MiB"]);
    assert!(render(&out).contains("[not searched: big.log: larger than 64 MiB]"));
}

#[test]
fn a_bad_regex_is_a_clear_error() {
    let fx = Fixture::new();
    fx.write("a.txt", "x\n");
    for (pattern, says) in [
        ("fn (main", "unclosed group"),
        ("a{2,1}", "invalid repetition"),
    ] {
        match fx.search(&req(pattern)) {
            Err(e @ SearchError::BadPattern { .. }) => {
                let message = e.to_string();
                assert!(message.contains(pattern), "{message}");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{pattern}: {other:?}"),
        }
    }
    // A pattern that can only match across lines is refused too, not silently empty.
    assert!(matches!(
        fx.search(&req("a\\nb")),
        Err(SearchError::BadPattern { .. })
    ));
    let mut r = req("x");
    r.glob = Some("src/[".into());
    assert!(matches!(fx.search(&r), Err(SearchError::BadGlob { .. })));
}

/// A directory swapped for a link to a secret directory, back and forth, while searches run: the
/// secret never comes back, whatever moment the swap hits.
#[test]
fn a_directory_swapped_for_a_link_mid_search_never_leaks() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    let secret_dir = outside.path().join("ssh");
    fs::create_dir(&secret_dir).unwrap();
    for i in 0..20 {
        fs::write(
            secret_dir.join(format!("f{i}.txt")),
            format!("needle {CANARY}\n"),
        )
        .unwrap();
        fx.write(&format!("d/f{i}.txt"), "needle inside\n");
    }
    let d = fx.root.join("d");
    let parked = fx.root.join("d-parked");
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let (d, parked, secret_dir) = (d.clone(), parked.clone(), secret_dir.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                fs::rename(&d, &parked).unwrap();
                symlink(&secret_dir, &d).unwrap();
                fs::remove_file(&d).unwrap();
                fs::rename(&parked, &d).unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    // Each search lists `d` and opens its files a moment later; now and then a swap lands in
    // between (the kernel's refusal is then noted). Go on until that was seen a few times.
    let mut raced = 0;
    for _ in 0..3000 {
        let out = fx.find("needle");
        assert!(!mentions(&out, CANARY), "{}", render(&out));
        if out
            .skipped
            .iter()
            .any(|s| s.contains("leads outside the workspace"))
        {
            raced += 1;
            if raced == 5 {
                break;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flipper.join().unwrap() > 0);
    // Positive controls: the attack path is real, and the directory is searched when left alone.
    symlink(&secret_dir, fx.root.join("probe")).unwrap();
    assert!(
        fs::read_to_string(fx.root.join("probe/f0.txt"))
            .unwrap()
            .contains(CANARY)
    );
    fs::remove_file(fx.root.join("probe")).unwrap();
    assert_eq!(fx.find("needle").matches.len(), 20);
}
