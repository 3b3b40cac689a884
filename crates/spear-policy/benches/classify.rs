//! Classification throughput, printed beside a baseline: brush-parser parsing the same scripts
//! (the floor any bash-accurate classifier pays). Run by `scripts/bench.sh`, pinned to one core.
//!
//! Datasets: the public red-team command cases, everyday agent commands, and the tldr corpus.

// A benchmark fails loudly when its data is missing.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{Workspace, WorkspaceConfig};

/// Everyday commands an agent sends to a terminal tool.
const EVERYDAY: &[&str] = &[
    "ls -la",
    "ls src | wc -l",
    "cat README.md",
    "head -n 40 src/main.rs",
    "tail -n 100 build.log",
    "wc -l src/*.rs",
    "grep -rn TODO .",
    "grep -rn 'fn main' src",
    "rg -n 'unwrap\\(' src",
    "rg --files | head",
    "find . -name '*.rs' | head -20",
    "find src -type f -newer Cargo.toml",
    "git status --short",
    "git log --oneline -10",
    "git diff",
    "git diff --stat HEAD~1",
    "git show HEAD --stat",
    "git blame src/main.rs | head",
    "git branch -a",
    "cargo build",
    "cargo test",
    "cargo clippy --all-targets -- -D warnings",
    "cargo fmt --check",
    "npm test",
    "npm run build",
    "npm install",
    "pytest -q",
    "python3 -m pytest tests/ -x",
    "make",
    "make test",
    "go test ./...",
    "echo done",
    "pwd",
    "cd src && ls",
    "sed -n '1,80p' src/lib.rs",
    "sed -i 's/foo/bar/g' src/lib.rs",
    "awk '{print $1}' data.txt",
    "sort data.txt | uniq -c | sort -rn | head",
    "jq '.dependencies' package.json",
    "mkdir -p build && cp README.md build/",
    "touch src/new.rs",
    "rm -rf target/debug/incremental",
    "echo 'hello' > notes.txt",
    "cat <<'EOF' > src/x.rs\nfn x() {}\nEOF",
    "for f in src/*.rs; do wc -l \"$f\"; done",
    "python3 -c 'import sys; print(sys.version)'",
    "curl -sS https://example.com | head",
    "tar -czf out.tgz src",
    "diff -u a.txt b.txt",
    "git add -A && git commit -m 'wip'",
    "ls -la ~/.cargo/bin",
    "cat /etc/os-release",
    "env | sort",
    "which python3 node cargo",
    "du -sh target",
    "tree -L 2 src",
    "git log -p -1 -- src/main.rs",
    "xargs -n1 echo < list.txt",
    "bash -c 'ls && pwd'",
];

fn load(path: &str, field: impl Fn(&serde_json::Value) -> Option<String>) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("test data in testdata/");
    text.lines()
        .filter_map(|l| field(&serde_json::from_str(l).expect("JSON")))
        .collect()
}

fn datasets() -> Vec<(&'static str, Vec<String>)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    let redteam = load(
        &format!("{root}/redteam-public-cases.jsonl"),
        |v| match &v["input"] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Object(o) => {
                o.get("command").and_then(|c| c.as_str()).map(str::to_owned)
            }
            _ => None,
        },
    );
    let tldr = load(&format!("{root}/tldr-commands.jsonl"), |v| {
        v["command"].as_str().map(str::to_owned)
    });
    let everyday = EVERYDAY.iter().map(|s| (*s).to_owned()).collect();
    let mut public_and_everyday: Vec<String> = redteam.clone();
    public_and_everyday.extend(EVERYDAY.iter().map(|s| (*s).to_owned()));
    vec![
        ("red-team cases", redteam),
        ("everyday commands", everyday),
        ("red-team + everyday", public_and_everyday),
        ("tldr corpus", tldr),
    ]
}

/// Runs `f` over `scripts` repeatedly for at least `budget`; returns scripts per second.
fn rate(scripts: &[String], budget: Duration, mut f: impl FnMut(&str)) -> f64 {
    for s in scripts {
        f(s); // warm-up
    }
    let start = Instant::now();
    let mut done = 0usize;
    while start.elapsed() < budget {
        for s in scripts {
            f(s);
        }
        done += scripts.len();
    }
    done as f64 / start.elapsed().as_secs_f64()
}

fn fixture() -> (tempfile::TempDir, PathBuf, CommandPolicy) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    for d in ["src", ".git/hooks", "target"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    for f in [
        "README.md",
        "src/main.rs",
        "src/lib.rs",
        "Cargo.toml",
        "data.txt",
    ] {
        std::fs::write(ws.join(f), "x\n").unwrap();
    }
    let workspace = Workspace::open(&WorkspaceConfig::new(&ws)).unwrap();
    let home = dir.path().join("home");
    let policy = CommandPolicy::new(Arc::new(workspace), PolicyConfig::new(Some(home)));
    (dir, ws, policy)
}

fn parse_only(script: &str) {
    let mut parser = brush_parser::Parser::new(
        std::io::Cursor::new(script),
        &brush_parser::ParserOptions::default(),
    );
    let _ = black_box(parser.parse_program());
}

fn main() {
    // `cargo bench` passes --bench; a filter argument is not supported.
    let budget = Duration::from_millis(
        std::env::var("SPEAR_BENCH_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1500),
    );
    let (_dir, ws, policy) = fixture();
    let cwd: &Path = &ws;
    println!(
        "classification throughput, one thread ({} ms per measurement)",
        budget.as_millis()
    );
    println!(
        "{:<22} {:>8} {:>16} {:>16} {:>10}",
        "dataset", "scripts", "classify/s", "parse only/s", "ratio"
    );
    let mut headline = 0.0;
    for (name, scripts) in datasets() {
        let classify = rate(&scripts, budget, |s| {
            black_box(policy.classify_script(black_box(s), cwd));
        });
        let parse = rate(&scripts, budget, |s| parse_only(black_box(s)));
        println!(
            "{name:<22} {:>8} {classify:>16.0} {parse:>16.0} {:>9.2}x",
            scripts.len(),
            parse / classify
        );
        if name == "red-team + everyday" {
            headline = classify;
        }
    }
    let target = 50_000.0;
    let verdict = if headline >= target {
        "meets"
    } else {
        "is BELOW"
    };
    println!(
        "\nred-team + everyday: {headline:.0} scripts/s {verdict} the target of {target:.0}/s on one core"
    );
}
