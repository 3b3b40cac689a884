//! spear's `search_files` engine beside `rg -n --no-heading` on the same large tree, interleaved
//! run by run; for each pattern both medians, both match counts (they must agree: the cap is set
//! high enough that spear returns every match, as rg does) and the ratio of medians.
//!
//! The tree is `SPEAR_BENCH_TREE` (default `~/.cargo/registry/src`); runs per pattern are
//! `SPEAR_BENCH_RUNS` (default 10). spear's time covers `search` and `render`, rg's the whole
//! process writing its lines into a pipe.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spear_tools::search::{SearchRequest, render, search};
use spear_workspace::{Workspace, WorkspaceConfig, WorkspaceFs};

/// High enough that no pattern here is truncated.
const NO_CAP: usize = 50_000_000;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One rg run: its time and how many lines it printed.
#[allow(clippy::naive_bytecount)] // once per run, outside the timed part
fn rg(tree: &PathBuf, pattern: &str, case_insensitive: bool) -> (Duration, usize) {
    let mut cmd = Command::new("rg");
    cmd.args(["--no-config", "-n", "--no-heading"]);
    if case_insensitive {
        cmd.arg("-i");
    }
    cmd.args(["-e", pattern, "."])
        .current_dir(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let out = cmd
        .output()
        .expect("rg is not installed (scripts/setup.sh installs it)");
    let elapsed = start.elapsed();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "rg failed: {:?}",
        out.status
    );
    (elapsed, out.stdout.iter().filter(|&&b| b == b'\n').count())
}

/// One spear run: its time, how many matches, how many files searched.
fn spear(
    ws: &Workspace,
    fs: &WorkspaceFs,
    pattern: &str,
    case_insensitive: bool,
) -> (Duration, usize, usize) {
    let req = SearchRequest {
        pattern: pattern.to_owned(),
        path: None,
        glob: None,
        case_insensitive,
        max_results: NO_CAP,
    };
    let start = Instant::now();
    let out = search(ws, fs, &req).unwrap();
    let text = render(&out);
    let elapsed = start.elapsed();
    assert!(!out.truncated);
    std::hint::black_box(text);
    (elapsed, out.matches.len(), out.files_searched)
}

fn main() {
    let runs: usize = std::env::var("SPEAR_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let tree = std::env::var_os("SPEAR_BENCH_TREE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo/registry/src"),
        PathBuf::from,
    );
    let tree = std::fs::canonicalize(&tree)
        .unwrap_or_else(|e| panic!("SPEAR_BENCH_TREE {}: {e}", tree.display()));
    let mut config = WorkspaceConfig::new(&tree);
    config.single_root = true;
    let ws = Workspace::open(&config).unwrap();
    let fs = ws.fs().unwrap();

    let patterns: &[(&str, &str, bool)] = &[
        ("literal", "fn main", false),
        ("regex", r"unsafe\s+fn", false),
        ("case-insensitive", "deprecated", true),
        ("no match", "zq9x_never_7w", false),
    ];
    println!("tree: {} ({runs} runs per pattern)", tree.display());
    let mut worst: f64 = 0.0;
    for &(kind, pattern, ci) in patterns {
        // Warm the page cache and both programs.
        let (_, rg_count) = rg(&tree, pattern, ci);
        let (_, spear_count, files) = spear(&ws, &fs, pattern, ci);
        let (mut r, mut s) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (t, n) = rg(&tree, pattern, ci);
            assert_eq!(n, rg_count, "rg's count changed between runs");
            r.push(t);
            let (t, n, _) = spear(&ws, &fs, pattern, ci);
            assert_eq!(n, spear_count, "spear's count changed between runs");
            s.push(t);
        }
        let (r, s) = (median(r), median(s));
        let ratio = s.as_secs_f64() / r.as_secs_f64();
        worst = worst.max(ratio);
        let flag = if rg_count == spear_count {
            ""
        } else {
            "  COUNTS DIFFER"
        };
        let shown = format!("{pattern:?}{}", if ci { " -i" } else { "" });
        println!(
            "{kind:<17} {shown:<20} spear median {:8.2} ms ({spear_count} matches, {files} files)  \
             rg median {:8.2} ms ({rg_count} matches)  ratio {ratio:.2}x{flag}",
            ms(s),
            ms(r),
        );
    }
    println!("worst ratio of medians: {worst:.2}x (aim: at most 1.2x)");
}
