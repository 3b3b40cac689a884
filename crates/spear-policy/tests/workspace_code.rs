//! What the classifier calls `READ_ONLY` runs no code of the workspace: a known program that takes
//! code from the directory it runs in (Python's module path, rustup's toolchain file, cargo's
//! configuration, yarn's `yarnPath`, a repository's diff drivers) is `SHELL_COMPLEX` when the
//! directory holds such a file, and keeps its class when it holds none.
//!
//! Each planted case is checked twice: with the files planted (`SHELL_COMPLEX`, the reason naming
//! the file) and, as its positive control, in a workspace without them (`READ_ONLY`: the twin shows
//! the class changes because of the file, not the command). Files that run nothing keep the class.
//! The runtime controls run the real programs (python3, git, tclsh) with the same files, outside
//! spear, and see the planted code run: the files the table plants are the ones that matter.

// A test fails loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::Fixture;
use spear_core::CommandClass::{self, ReadOnly as R, ShellComplex as C};

/// One case: files to plant (relative to the workspace; `{WS}` in a text is the workspace's
/// absolute path; a name ending in `/` is a directory), the script, and a fragment of the reason.
struct Case {
    plant: &'static [(&'static str, &'static str)],
    script: &'static str,
    reason: &'static str,
}

const fn case(
    plant: &'static [(&'static str, &'static str)],
    script: &'static str,
    reason: &'static str,
) -> Case {
    Case {
        plant,
        script,
        reason,
    }
}

/// A bare repository inside the workspace whose configuration names an external diff.
const BARE_REPO: &[(&str, &str)] = &[
    ("vendor/x.git/HEAD", "ref: refs/heads/main\n"),
    ("vendor/x.git/objects/", ""),
    ("vendor/x.git/refs/", ""),
    ("vendor/x.git/config", "[diff]\n\texternal = {WS}/evil.sh\n"),
];

/// Planted files that make the program run the workspace's code.
const PLANTED: &[Case] = &[
    // Python: the current directory comes first on the module path.
    case(
        &[("json/__init__.py", "")],
        "python3 -m json.tool payload.txt",
        "`json`",
    ),
    case(
        &[("json.py", "")],
        "python3 -m json.tool payload.txt",
        "`json.py`",
    ),
    case(
        &[("argparse.py", "")],
        "python3 -m json.tool payload.txt",
        "`argparse.py`",
    ),
    case(
        &[("re.pyc", "")],
        "python3 -m json.tool payload.txt",
        "`re.pyc`",
    ),
    case(
        &[("_json.cpython-311-x86_64-linux-gnu.so", "")],
        "python3.11 -m json.tool payload.txt",
        "`_json.cpython-311",
    ),
    case(
        &[("json/__init__.py", "")],
        "python3 -m json.tool < payload.txt",
        "`json`",
    ),
    case(
        &[("json/__init__.py", "")],
        "cat payload.txt | python -m json.tool",
        "`json`",
    ),
    case(
        &[("pip/__main__.py", "")],
        "python3 -m pip --version",
        "`pip`",
    ),
    case(&[("setup.py", "")], "python3 -m pip list", "`setup.py`"),
    case(
        &[("packaging/__init__.py", "")],
        "python3 -m pip show requests",
        "`packaging`",
    ),
    case(
        &[("sub/json/__init__.py", "")],
        "cd sub && python3 -m json.tool ../payload.txt",
        "`json`",
    ),
    case(
        &[("json/__init__.py", "")],
        "bash -c 'python3 -m json.tool payload.txt'",
        "`json`",
    ),
    case(
        &[("json/__init__.py", "")],
        "timeout 5 python3 -m json.tool payload.txt",
        "`json`",
    ),
    // rustup: a toolchain file that names a directory replaces cargo, rustc and rustfmt.
    case(
        &[("rust-toolchain.toml", "[toolchain]\npath = \"{WS}/tc\"\n")],
        "cargo --version",
        "rust-toolchain.toml",
    ),
    case(
        &[("rust-toolchain", "{WS}/tc\n")],
        "cargo --version",
        "rust-toolchain",
    ),
    case(
        &[("rust-toolchain.toml", "[toolchain]\npath = \"{WS}/tc\"\n")],
        "rustc --version",
        "rust-toolchain.toml",
    ),
    case(
        &[("rust-toolchain.toml", "[toolchain]\npath = \"{WS}/tc\"\n")],
        "rustfmt --check src/main.rs",
        "rust-toolchain.toml",
    ),
    case(
        &[("rust-toolchain.toml", "[toolchain]\npath = \"{WS}/tc\"\n")],
        "cd sub/deeper && cargo tree",
        "rust-toolchain.toml",
    ),
    case(
        &[("rust-toolchain.toml", "[toolchain\npath = ")],
        "cargo --version",
        "rust-toolchain.toml",
    ),
    // cargo's configuration: programs and flags of the rustc that `tree` and `metadata` ask.
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustc-wrapper = \"./evil\"\n",
        )],
        "cargo tree",
        "build.rustc-wrapper",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustc-wrapper = \"./evil\"\n",
        )],
        "cargo metadata --format-version 1",
        "build.rustc-wrapper",
    ),
    case(
        &[(".cargo/config", "[build]\nrustc = \"./evil\"\n")],
        "cargo tree",
        "build.rustc",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustc-workspace-wrapper = \"./evil\"\n",
        )],
        "cd sub && cargo tree",
        "build.rustc-workspace-wrapper",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustflags = [\"-Zcodegen-backend=./b.so\"]\n",
        )],
        "cargo tree",
        "-Zcodegen-backend",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[target.x86_64-unknown-linux-gnu]\nrustflags = \"-C llvm-args=-x\"\n",
        )],
        "cargo metadata",
        "llvm-args",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[target.'cfg(unix)']\nrustflags = [\"@flags\"]\n",
        )],
        "cargo tree",
        "@flags",
    ),
    case(
        &[(".cargo/config.toml", "[env]\nLD_PRELOAD = \"x.so\"\n")],
        "cargo tree",
        "[env]",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[registry]\ncredential-provider = \"./evil\"\n",
        )],
        "cargo search serde",
        "credential provider",
    ),
    case(
        &[(".cargo/config.toml", "include = \"more.toml\"\n")],
        "cargo tree",
        "include",
    ),
    case(
        &[(".cargo/config.toml", "[build\n")],
        "cargo tree",
        "cannot be parsed",
    ),
    case(
        &[(".cargo/config.toml", "[alias]\nfmt = \"run --\"\n")],
        "cargo fmt --check",
        "[alias] fmt",
    ),
    // Node package managers.
    case(
        &[(".yarnrc.yml", "yarnPath: ./evil.cjs\n")],
        "yarn list",
        "yarnPath",
    ),
    case(
        &[(".yarnrc", "yarn-path \"./evil.js\"\n")],
        "yarn why x",
        "yarn-path",
    ),
    case(
        &[(".yarnrc.yml", "plugins:\n  - ./p.cjs\n")],
        "cd sub && yarn list",
        "plugins",
    ),
    case(&[(".pnpmfile.cjs", "")], "pnpm ls", ".pnpmfile.cjs"),
    case(
        &[(".npmrc", "onload-script=./x.js\n")],
        "npm ls",
        "onload-script",
    ),
    // uv resolves the project, which can run its build backend.
    case(
        &[("pyproject.toml", "[project]\nname = \"x\"\n")],
        "uv tree",
        "pyproject.toml",
    ),
    // git: what the repository's configuration names.
    case(BARE_REPO, "git -C vendor/x.git log -p", "diff.external"),
    case(BARE_REPO, "cd vendor/x.git && git log", "diff.external"),
    case(BARE_REPO, "git --git-dir=vendor/x.git log", "diff.external"),
    case(
        &[(".git/config", "[core]\n\tfsmonitor = ./fsm\n")],
        "git status",
        "core.fsmonitor",
    ),
    case(
        &[(".git/config", "[diff \"x\"]\n\ttextconv = ./conv\n")],
        "git log -p",
        "diff.*.textconv",
    ),
    case(
        &[(".git/config", "[filter \"x\"]\n\tclean = ./clean\n")],
        "cd sub && git status",
        "filter.*.clean",
    ),
    case(
        &[(".git/config", "[gpg]\n\tprogram = ./gpg\n")],
        "git verify-commit HEAD",
        "gpg.program",
    ),
    case(
        &[
            (".git/config", "[include]\n\tpath = ../inc.cfg\n"),
            ("inc.cfg", "[diff]\n\texternal = ./d\n"),
        ],
        "git diff",
        "diff.external",
    ),
];

/// Files that run nothing for the command: it keeps its class.
const HARMLESS: &[Case] = &[
    case(
        &[("setup.py", ""), ("mypkg/__init__.py", ""), ("json/", "")],
        "python3 -m json.tool payload.txt",
        "",
    ),
    case(
        &[("json/__init__.py", "")],
        "python3 -I -m json.tool payload.txt",
        "",
    ),
    case(
        &[("json/__init__.py", "")],
        "python3 -P -m json.tool payload.txt",
        "",
    ),
    case(
        &[("json/__init__.py", "")],
        "cd sub && python3 -m json.tool ../payload.txt",
        "",
    ),
    case(&[("json/__init__.py", "")], "python3 --version", ""),
    case(
        &[("rust-toolchain.toml", "[toolchain]\nchannel = \"stable\"\n")],
        "cargo --version",
        "",
    ),
    case(&[("rust-toolchain", "nightly\n")], "rustc --version", ""),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\ntarget-dir = \"t\"\nrustflags = [\"-C\", \"target-cpu=native\", \"--cfg\", \"x\"]\n[alias]\nb = \"build\"\n",
        )],
        "cargo tree",
        "",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustc-wrapper = \"./evil\"\n",
        )],
        "cargo --version",
        "",
    ),
    case(
        &[(
            ".cargo/config.toml",
            "[build]\nrustc-wrapper = \"./evil\"\n",
        )],
        "cargo locate-project",
        "",
    ),
    case(
        &[(".cargo/config.toml", "[alias]\nb = \"build\"\n")],
        "cargo fmt --check",
        "",
    ),
    case(
        &[(".yarnrc.yml", "nodeLinker: node-modules\n")],
        "yarn list",
        "",
    ),
    case(
        &[(".npmrc", "registry=https://registry.npmjs.org/\n")],
        "npm ls",
        "",
    ),
    case(
        &[("pyproject.toml", "[project]\nname = \"x\"\n")],
        "uv tree --frozen",
        "",
    ),
    case(
        &[(
            ".git/config",
            "[core]\n\tfsmonitor = true\n[user]\n\tname = x\n",
        )],
        "git status",
        "",
    ),
    case(BARE_REPO, "git log", ""),
];

/// Commands whose class does not depend on a file: forms that run their input or another program.
const NOT_READ_ONLY: &[(&str, CommandClass)] = &[
    ("tclsh -v < payload.txt", C),
    ("tclsh --version <<< 'exec touch x'", C),
    ("python3 -v < payload.txt", C),
    ("jshell -v < payload.txt", C),
    ("erl -version", C),
    ("escript --version", C),
    ("ghci -v", C),
    ("go vet -vettool=./x ./...", C),
    ("go vet --vettool ./x ./...", C),
    ("cargo +/opt/tc/x --version", C),
    // The sandbox's private places cannot be seen before the command runs.
    ("cd /tmp && python3 -m json.tool x.json", C),
    ("cd /tmp/r && git diff", C),
    ("git -C /tmp/r log -p", C),
    ("cd /dev/shm && cargo tree", C),
    // Positive controls: the version flags that print and exit, and the same programs elsewhere.
    ("python3 --version", R),
    ("python3 -V", R),
    ("node -v", R),
    ("perl -v", R),
    ("java -version", R),
    ("expect -v", R),
    ("lua -v", R),
    ("go vet ./...", R),
    ("cargo +stable --version", R),
    ("python3 -m json.tool payload.txt", R),
    ("git log -p", R),
    ("cargo tree", R),
];

/// Plants `files` in `ws`.
fn plant(ws: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let path = ws.join(rel);
        if rel.ends_with('/') {
            std::fs::create_dir_all(&path).unwrap();
            continue;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text.replace("{WS}", &ws.display().to_string())).unwrap();
    }
}

#[test]
fn planted_files_make_the_program_shell_complex_and_their_absence_keeps_it_read_only() {
    let mut failures = Vec::new();
    for c in PLANTED {
        // Positive control: the same command in a workspace without the files.
        let bare = Fixture::new();
        let a = bare.classify(c.script);
        if a.class != R {
            failures.push(format!(
                "{} without the files: {} ({})",
                c.script, a.class, a.reason
            ));
        }
        let fx = Fixture::new();
        plant(&fx.ws, c.plant);
        let a = fx.classify(c.script);
        if a.class != C || !a.reason.contains(c.reason) {
            failures.push(format!(
                "{} with {:?}: {} ({}), wanted SHELL_COMPLEX naming {:?}",
                c.script,
                c.plant.iter().map(|p| p.0).collect::<Vec<_>>(),
                a.class,
                a.reason,
                c.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn files_that_run_nothing_keep_the_class() {
    let mut failures = Vec::new();
    for c in HARMLESS {
        let fx = Fixture::new();
        plant(&fx.ws, c.plant);
        let a = fx.classify(c.script);
        if a.class != R {
            failures.push(format!("{}: {} ({})", c.script, a.class, a.reason));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn forms_that_run_input_or_another_program_are_not_read_only() {
    let fx = Fixture::new();
    let mut failures = Vec::new();
    for (script, want) in NOT_READ_ONLY {
        let a = fx.classify(script);
        if a.class != *want {
            failures.push(format!(
                "{script}: {} ({}), wanted {want}",
                a.class, a.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A directory the user running spear cannot list is not judged as empty: the command is
/// `SHELL_COMPLEX`. (Root lists everything, so the case is made where the user can be denied: a
/// directory without the read bit, as a user other than root sees it; as root, the entry stays
/// listable and the positive control below holds instead.)
#[test]
fn a_directory_that_cannot_be_listed_fails_closed() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let dir = fx.ws.join("sub");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o311)).unwrap();
    let a = fx.classify("cd sub && python3 -m json.tool ../payload.txt");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let listable = std::fs::read_dir(&dir).is_ok();
    if rustix::process::geteuid().is_root() {
        assert_eq!(a.class, R, "{}", a.reason);
    } else {
        assert!(listable);
        assert_eq!(a.class, C, "{}", a.reason);
        assert!(a.reason.contains("cannot be listed"), "{}", a.reason);
    }
}

/// Runs `program args` in `dir` with `stdin`, outside spear, and reports whether `marker` appeared.
fn runs_marker(dir: &Path, program: &str, args: &[&str], stdin: &str, marker: &Path) -> bool {
    let _ = std::fs::remove_file(marker);
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("PYTHONSAFEPATH")
        .env_remove("PYTHONPATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} must be installed for this test: {e}"));
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(stdin.as_bytes());
    }
    child.wait().unwrap();
    marker.exists()
}

/// One run of a real program: the files planted, the program and its arguments, the code on its
/// input, and whether the code runs.
struct Run {
    files: Vec<(&'static str, String)>,
    program: &'static str,
    args: &'static [&'static str],
    stdin: String,
    runs: bool,
}

/// The files the table plants make the real programs run them; the forms the table keeps
/// `READ_ONLY` (`-I`, a module of another name, `--version`) do not.
#[test]
fn the_real_interpreters_run_what_the_table_plants() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let base = dir.path().canonicalize().unwrap();
    let marker = base.join("MARKER");
    let py = format!("open({:?}, 'w').close()\n", marker.display().to_string());
    let tcl = format!("close [open {} w]\n", marker.display());
    let run = |files: Vec<(&'static str, String)>, program, args, stdin: &str, runs| Run {
        files,
        program,
        args,
        stdin: stdin.to_owned(),
        runs,
    };
    let json = &["-m", "json.tool"][..];
    let rows = [
        run(
            vec![("json/__init__.py", py.clone())],
            "python3",
            json,
            "{}",
            true,
        ),
        run(
            vec![("argparse.py", py.clone())],
            "python3",
            json,
            "{}",
            true,
        ),
        run(
            vec![
                ("pip/__init__.py", String::new()),
                ("pip/__main__.py", py.clone()),
            ],
            "python3",
            &["-m", "pip", "--version"],
            "",
            true,
        ),
        run(
            vec![("json/__init__.py", py.clone())],
            "python3",
            &["-I", "-m", "json.tool"],
            "{}",
            false,
        ),
        run(vec![("setup.py", py.clone())], "python3", json, "{}", false),
        run(vec![], "python3", &["-v"], &py, true),
        run(vec![], "python3", &["--version"], &py, false),
        run(vec![], "tclsh", &["-v"], &tcl, true),
    ];
    for row in rows {
        let ws = tempfile::tempdir_in(&base).unwrap();
        for (rel, text) in &row.files {
            let path = ws.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let seen = runs_marker(ws.path(), row.program, row.args, &row.stdin, &marker);
        let planted: Vec<&str> = row.files.iter().map(|f| f.0).collect();
        assert_eq!(
            seen, row.runs,
            "{} {:?} with {planted:?}",
            row.program, row.args
        );
    }
}

/// git runs the external diff a repository's configuration names on `git diff` (and nothing
/// without it): the key the table plants is one git's reading subcommands run.
#[test]
fn real_git_runs_the_external_diff_of_the_configuration() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let r = dir.path().canonicalize().unwrap();
    let marker = r.join("MARKER");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&r)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &r)
            .output()
            .expect("git must be installed for this test");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "."]);
    std::fs::write(r.join("f"), "a\n").unwrap();
    git(&["add", "f"]);
    std::fs::write(r.join("f"), "b\n").unwrap();
    let script = r.join("ext.sh");
    std::fs::write(&script, format!("#!/bin/sh\n: > {}\n", marker.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    git(&["diff"]);
    assert!(
        !marker.exists(),
        "positive control: no external diff, no marker"
    );
    git(&["config", "diff.external", &script.display().to_string()]);
    git(&["diff"]);
    assert!(
        marker.exists(),
        "git diff ran the external diff the configuration names"
    );
}
