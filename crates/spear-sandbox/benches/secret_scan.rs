//! What finding credential files in the bound trees costs (`secret_masks`): the first scan of a
//! tree, a new process's look (the scan read from the private directory, every directory's stamp
//! checked), a new runner's look in the same process (the scan in memory, every stamp checked),
//! a command's look (only the files found checked), and in a session the cost of watching every
//! directory once and a command's look then (the watch's events read). On a made tree of
//! realistic shape (a `~/.cargo` with a registry of a few thousand files, a pyenv with
//! `versions/*/envs/*`, nvm, conda) and on this host's own trees (`/usr` and the toolchains under
//! `$HOME`, when there). Medians of `SPEAR_BENCH_RUNS` (default 15) looks each.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spear_sandbox::{Depth, forget_scan, secret_masks};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A home with toolchain trees of a realistic shape; the trees' paths.
fn made_home(home: &Path) -> Vec<PathBuf> {
    let reg = home.join(".cargo/registry/src/index.crates.io-1949cf8c6b5b557f");
    for c in 0..300 {
        let krate = reg.join(format!("crate{c}-1.0.{c}"));
        put(&krate.join("Cargo.toml"), "[package]\nname = \"x\"\n");
        put(&krate.join("README.md"), "# x\n");
        for f in 0..8 {
            put(&krate.join(format!("src/m{f}.rs")), "pub fn f() {}\n");
        }
        for f in 0..4 {
            put(&krate.join(format!("src/sub/s{f}.rs")), "pub fn g() {}\n");
        }
        for f in 0..3 {
            put(&krate.join(format!("tests/t{f}.rs")), "#[test] fn t() {}\n");
        }
        put(
            &home.join(format!(
                ".cargo/registry/cache/index/crate{c}-1.0.{c}.crate"
            )),
            "x",
        );
    }
    put(
        &home.join(".cargo/config.toml"),
        "[registry]\ntoken = \"cio_x\"\n",
    );
    put(&home.join(".cargo/bin/cargo"), "");
    let py = home.join(".pyenv/versions/3.12.1");
    for p in 0..150 {
        let pkg = py.join(format!("lib/python3.12/site-packages/pkg{p}"));
        for d in ["", "a/", "b/", "a/c/", "tests/"] {
            for f in 0..4 {
                put(&pkg.join(format!("{d}m{f}.py")), "import os\n");
            }
        }
    }
    for e in 0..3 {
        let env = py.join(format!("envs/venv{e}"));
        for p in 0..20 {
            put(
                &env.join(format!("lib/python3.12/site-packages/p{p}/__init__.py")),
                "",
            );
        }
        put(&env.join("bin/python"), "");
    }
    put(
        &py.join("envs/venv0/pip.conf"),
        "[global]\nindex-url = https://u:p@pypi.corp/simple\n",
    );
    let node = home.join(".nvm/versions/node/v20.1.0");
    for p in 0..100 {
        for d in ["", "lib/", "dist/"] {
            for f in 0..3 {
                put(
                    &node.join(format!("lib/node_modules/p{p}/{d}f{f}.js")),
                    "module.exports = 1\n",
                );
            }
        }
    }
    put(
        &node.join("lib/node_modules/npm/npmrc"),
        "//registry.npmjs.org/:_authToken=npm_x\n",
    );
    put(
        &home.join("miniconda3/envs/e/.condarc"),
        "channels:\n  - conda-forge\n",
    );
    [".cargo", ".pyenv", ".nvm", "miniconda3"]
        .iter()
        .map(|t| home.join(t))
        .collect()
}

/// This host's trees: `/usr` and the toolchains under `$HOME` that exist.
fn host_trees() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut trees = vec![PathBuf::from("/usr")];
    if let Some(home) = home {
        for t in [
            ".cargo",
            ".rustup",
            ".pyenv",
            ".nvm",
            ".local/share/uv",
            "miniconda3",
        ] {
            if home.join(t).is_dir() {
                trees.push(home.join(t));
            }
        }
    }
    trees
}

fn count_dirs(trees: &[PathBuf]) -> (usize, usize) {
    let (mut dirs, mut files) = (0, 0);
    let mut stack: Vec<PathBuf> = trees.to_vec();
    while let Some(d) = stack.pop() {
        dirs += 1;
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                files += 1;
            }
        }
    }
    (dirs, files)
}

fn bench(label: &str, trees: &[PathBuf], runs: usize) {
    let disk = tempfile::tempdir().unwrap();
    let (dirs, files) = count_dirs(trees);
    let forget = || trees.iter().for_each(|t| forget_scan(t));
    let mut first = Vec::new();
    let mut masks = 0;
    for _ in 0..runs.min(5) {
        forget();
        let fresh = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let (m, _) = secret_masks(trees, &[], Some(fresh.path()), Depth::Full, false);
        first.push(t.elapsed());
        masks = m.len();
    }
    secret_masks(trees, &[], Some(disk.path()), Depth::Full, false);
    let mut from_disk = Vec::new();
    for _ in 0..runs {
        forget();
        let t = Instant::now();
        secret_masks(trees, &[], Some(disk.path()), Depth::Full, false);
        from_disk.push(t.elapsed());
    }
    let (mut runner, mut command) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        secret_masks(trees, &[], Some(disk.path()), Depth::Full, false);
        runner.push(t.elapsed());
        let t = Instant::now();
        secret_masks(trees, &[], Some(disk.path()), Depth::Found, false);
        command.push(t.elapsed());
    }
    // A session: the trees watched once, then each command reads their events.
    let t = Instant::now();
    secret_masks(trees, &[], Some(disk.path()), Depth::Found, true);
    let setup = t.elapsed();
    let mut watched = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        secret_masks(trees, &[], Some(disk.path()), Depth::Found, true);
        watched.push(t.elapsed());
    }
    forget();
    let size: u64 = std::fs::read_dir(disk.path())
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    println!(
        "{label}: {dirs} directories, {files} files, {masks} masks; first scan {:.1} ms, a new process's look {:.1} ms (scan files {} KiB), a new runner's look {:.1} ms, a command's look {:.3} ms; watched: set up {:.1} ms, a command's look {:.3} ms",
        ms(median(first)),
        ms(median(from_disk)),
        size / 1024,
        ms(median(runner)),
        ms(median(command)),
        ms(setup),
        ms(median(watched)),
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = std::env::var("SPEAR_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let dir = tempfile::tempdir().unwrap();
    let made = made_home(dir.path());
    // Stamps taken within two seconds of a change are looked at again: let the made tree settle.
    std::thread::sleep(Duration::from_millis(2100));
    bench("made home", &made, runs);
    bench("this host", &host_trees(), runs);
}
