//! Build tools, package managers, compilers and formatters.
//!
//! The principle: a tool whose job is to build the project's artifacts (cargo build, make, go
//! build, tsc, a compiler) is `WORKSPACE_MUTATING`: it writes its outputs into the workspace, and the
//! project code it runs on the way (build scripts, recipes) is the project's own, confined by the
//! sandbox. A tool whose job is to run code (cargo run, npm test, npm run, pytest, npx) is
//! `SHELL_COMPLEX`. Fetching dependencies needs `network`; publishing needs `remote:write`, which no
//! mode grants; installing outside the workspace writes outside the roots.

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{OptionSpec, has, operands, scan, values};
use crate::commands::workspace_code::{self, CargoUse};
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// The build tools, package managers, compilers and formatters.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::harmless(&["cargo"], |a, c, cwd| cargo(a, c.args, cwd)),
    Programs::harmless(&["npm", "pnpm", "yarn", "bun"], |a, c, cwd| {
        node_packages(a, c.name, c.args, cwd);
    }),
    Programs::harmless(&["npx", "pnpx", "bunx"], downloads_and_runs),
    Programs::harmless(&["pip", "pip3"], |a, c, cwd| pip(a, c.name, c.args, cwd)),
    Programs::harmless(&["uv"], |a, c, cwd| uv(a, c.args, cwd)),
    Programs::complex(&["make", "gmake", "bmake"], make),
    Programs::harmless(&["cmake"], |a, c, cwd| cmake(a, c.args, cwd)),
    Programs::harmless(
        &[
            "ninja", "meson", "scons", "bazel", "bazelisk", "buck", "buck2", "pants",
        ],
        build_here,
    ),
    Programs::harmless(&["go"], |a, c, cwd| go(a, c.args, cwd)),
    Programs::harmless(&["mvn", "gradle"], java_build),
    Programs::harmless(
        &[
            "gcc", "g++", "cc", "c++", "clang", "clang++", "rustc", "javac", "tcc", "gfortran",
            "as", "ld",
        ],
        |a, c, cwd| compiler(a, c.name, c.args, cwd),
    ),
    Programs::harmless(&["tsc"], tsc),
    Programs::harmless(
        &[
            "rustfmt",
            "gofmt",
            "black",
            "isort",
            "clang-format",
            "shfmt",
            "autopep8",
            "yapf",
            "ruff",
            "taplo",
            "stylua",
        ],
        |a, c, cwd| formatter(a, c.name, c.args, cwd),
    ),
    Programs::harmless(
        &[
            "pytest",
            "py.test",
            "tox",
            "nox",
            "jest",
            "vitest",
            "mocha",
            "ava",
            "karma",
            "phpunit",
            "rspec",
            "eslint",
            "prettier",
            "webpack",
            "vite",
            "rollup",
            "esbuild",
            "parcel",
            "next",
            "nuxt",
            "gulp",
            "grunt",
            "rake",
            "bundle",
            "poetry",
            "pdm",
            "pipenv",
            "hatch",
            "composer",
            "mix",
            "dotnet",
            "swift",
            "flutter",
            "dart",
            "deno",
            "cabal",
            "stack",
            "sbt",
            "lein",
            "opam",
            "dune",
            "just",
            "task",
            "mise",
            "asdf",
            "nix",
            "nix-shell",
            "direnv",
            "pre-commit",
            "ansible",
            "ansible-playbook",
            "mypy",
            "pylint",
            "flake8",
            "bandit",
            "coverage",
        ],
        project_code,
    ),
];

/// npx, pnpx, bunx: download and run a package.
fn downloads_and_runs(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    a.needs(Capability::Network);
    a.complex(format!("`{name}` downloads and runs a package"));
}

/// Build systems that build in the current directory.
fn build_here(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let name = c.name;
    a.write_path(&Arg::Lit(".".into()), cwd, name);
}

/// mvn and gradle build here, fetching unless offline; deploying is refused.
fn java_build(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    if !args
        .iter()
        .any(|x| matches!(x.lit(), Some("-o" | "--offline")))
    {
        a.needs(Capability::Network);
    }
    if args
        .iter()
        .any(|x| matches!(x.lit(), Some("deploy" | "publish" | "release:perform")))
    {
        a.needs(Capability::RemoteWrite);
        a.refuse(Refusal::no_mode_grants(
            Capability::RemoteWrite,
            format!("{name} deploy"),
        ));
    }
    a.write_path(&Arg::Lit(".".into()), cwd, name);
}

/// tsc writes its outputs unless told not to emit.
fn tsc(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    if !args.iter().any(|x| {
        matches!(
            x.lit(),
            Some("--noEmit" | "--version" | "-v" | "--help" | "--showConfig")
        )
    }) {
        a.write_path(&Arg::Lit(".".into()), cwd, "tsc");
    }
}

/// Tools whose job is to run project code or configuration: `SHELL_COMPLEX`.
fn project_code(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    a.complex(format!("`{name}` runs project code or configuration"));
    for arg in args {
        a.unknown_operand(arg, cwd);
    }
}

/// cargo's global options (before the subcommand): the ones that take a value, then the flags.
const CARGO_OPTIONS: OptionSpec = OptionSpec::gnu(
    "ZCjpF",
    &[
        "config",
        "color",
        "manifest-path",
        "target-dir",
        "jobs",
        "package",
        "features",
        "target",
        "profile",
        "bin",
        "example",
        "test",
        "bench",
        "message-format",
        "lockfile-path",
        "artifact-dir",
        "out-dir",
        "root",
        "index",
        "registry",
        "git",
        "branch",
        "tag",
        "rev",
        "path",
        "vers",
        "version",
        "exclude",
        "explain",
        "format-version",
        "filter-platform",
        "timings",
        "depth",
        "prefix",
        "invert",
        "edges",
        "name",
        "vcs",
        "edition",
        "rename",
    ],
    &["offline", "frozen", "locked", "check", "release", "list"],
);

/// cargo: its global options come before the subcommand; `--config` and `-Z` change what it runs.
fn cargo(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let spec = CARGO_OPTIONS;
    let args = cargo_toolchain(a, args, cwd);
    let items = scan(args, &spec);
    if has(&items, &["--config", "-Z"]) {
        a.complex(
            "`cargo --config` and `-Z` can set programs cargo runs (runner, linker, rustc wrapper)",
        );
    }
    for m in values(&items, &["--manifest-path"]) {
        a.read_path(m, cwd);
    }
    let ops = operands(&items);
    let sub = ops.first().and_then(Arg::lit).unwrap_or("");
    let project = values(&items, &["--manifest-path"])
        .last()
        .and_then(|m| {
            m.lit().map(|t| {
                std::path::Path::new(t)
                    .parent()
                    .map_or(".".to_owned(), |p| {
                        if p.as_os_str().is_empty() {
                            ".".to_owned()
                        } else {
                            p.to_string_lossy().into_owned()
                        }
                    })
            })
        })
        .map_or(Arg::Lit(".".into()), Arg::Lit);
    let write_project = |a: &mut Analysis<'_>| {
        a.write_path(&project, cwd, &format!("cargo {sub}"));
        for d in values(&items, &["--target-dir", "--artifact-dir", "--out-dir"]) {
            a.write_path(d, cwd, &format!("cargo {sub}"));
        }
    };
    match sub {
        "" | "version" | "help" | "locate-project" | "pkgid" | "verify-project"
        | "read-manifest" | "report" => {}
        "tree" | "metadata" => cargo_config(a, CargoUse::Rustc, sub, cwd),
        "search" | "info" => {
            a.needs(Capability::Network);
            cargo_config(a, CargoUse::Rustc, sub, cwd);
        }
        "fmt" if has(&items, &["--check"]) => cargo_config(a, CargoUse::Alias("fmt"), sub, cwd),
        "build" | "b" | "check" | "c" | "test" | "t" | "bench" | "doc" | "d" | "clippy" | "fix"
        | "fmt" | "clean" | "new" | "init" | "rustc" | "rustdoc" | "generate-lockfile" => {
            write_project(a);
        }
        "fetch" | "update" | "add" | "remove" | "rm" | "vendor" => {
            a.needs(Capability::Network);
            write_project(a);
        }
        "run" | "r" => {
            write_project(a);
            a.complex("`cargo run` runs the program it builds");
        }
        "install" | "uninstall" => {
            a.needs(Capability::Network);
            if let Some(root) = values(&items, &["--root"]).last() {
                a.write_path(root, cwd, "cargo install");
                a.complex("`cargo install` builds and installs code from the network");
            } else {
                let bin = a.policy.config().home.as_ref().map_or_else(
                    || "~/.cargo/bin".to_owned(),
                    |h| h.join(".cargo/bin").to_string_lossy().into_owned(),
                );
                a.refuse(Refusal::write_outside_roots(format!(
                    "cargo {sub} (into {bin}; use --root inside the workspace)"
                )));
            }
        }
        "publish" | "yank" | "owner" => {
            a.needs(Capability::RemoteWrite);
            a.refuse(Refusal::no_mode_grants(
                Capability::RemoteWrite,
                format!("cargo {sub}"),
            ));
        }
        "login" | "logout" => {
            a.needs(Capability::Secrets);
            a.refuse(Refusal::no_mode_grants(
                Capability::Secrets,
                format!("cargo {sub}"),
            ));
        }
        _ => a.complex(format!(
            "`cargo {sub}` is not a cargo command spear knows (it may be a plugin)"
        )),
    }
}

/// The toolchain cargo runs: `cargo +/dir` runs `/dir/bin/cargo`, a program of that directory,
/// not one rustup installed; so does a toolchain file that names a directory. Returns the
/// arguments after `+TOOLCHAIN`.
fn cargo_toolchain<'x>(a: &mut Analysis<'_>, args: &'x [Arg], cwd: &Cwd) -> &'x [Arg] {
    rust_toolchain(a, "cargo", cwd);
    match args
        .first()
        .and_then(Arg::lit)
        .filter(|t| t.starts_with('+'))
    {
        Some(toolchain) => {
            if toolchain.contains(['/', '\\']) {
                a.complex(format!(
                    "`cargo {toolchain}` runs the cargo of that directory, not a toolchain rustup \
                     installed"
                ));
            }
            &args[1..]
        }
        None => args,
    }
}

/// `cargo SUB` takes programs from `.cargo/config.toml` in the working directory or above
/// ([`workspace_code::cargo_config`]).
fn cargo_config(a: &mut Analysis<'_>, using: CargoUse<'_>, sub: &str, cwd: &Cwd) {
    a.workspace_code(&format!("cargo {sub}"), cwd, |dir| {
        workspace_code::cargo_config(dir, using)
    });
}

/// rustup's proxies (`cargo`, `rustc`, `rustfmt`) run the toolchain that a `rust-toolchain.toml`
/// in the working directory or above names ([`workspace_code::rust_toolchain_path`]).
fn rust_toolchain(a: &mut Analysis<'_>, name: &str, cwd: &Cwd) {
    a.workspace_code(name, cwd, workspace_code::rust_toolchain_path);
}

/// The global options of npm, pnpm and yarn that matter here.
const NODE_PACKAGE_OPTIONS: OptionSpec = OptionSpec::gnu(
    "C",
    &[
        "prefix",
        "registry",
        "cache",
        "userconfig",
        "globalconfig",
        "workspace",
        "filter",
        "dir",
        "cwd",
    ],
    &["global"],
);

/// npm, pnpm, yarn and bun: installing fetches and runs package scripts; running scripts runs
/// project code; publishing changes a registry; global installs write outside the workspace.
fn node_packages(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) {
    a.workspace_code(name, cwd, |dir| {
        workspace_code::node_package_manager(dir, name)
    });
    let items = scan(args, &NODE_PACKAGE_OPTIONS);
    let ops = operands(&items);
    let sub = ops
        .first()
        .and_then(Arg::lit)
        .unwrap_or(if name == "yarn" { "install" } else { "" });
    if has(&items, &["-g", "--global", "--location=global"])
        && !matches!(
            sub,
            "ls" | "list" | "root" | "bin" | "prefix" | "view" | "info"
        )
    {
        a.refuse(Refusal::write_outside_roots(format!(
            "{name} {sub} --global"
        )));
        return;
    }
    if values(&items, &["--prefix", "--dir", "--cwd", "-C"])
        .next()
        .is_some()
    {
        a.complex(format!("`{name} --prefix` runs in another directory"));
    }
    match sub {
        // `npm version patch` rewrites package.json, runs the version scripts and commits.
        "version" if ops.len() > 1 => {
            a.complex(format!(
                "`{name} version NEW` runs the package's version scripts and git"
            ));
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("{name} version"));
        }
        "fund" if ops.len() > 1 => {
            a.complex(format!("`{name} fund PACKAGE` opens a web browser"));
        }
        "" | "help" | "version" | "--version" | "-v" | "ls" | "list" | "ll" | "la" | "why"
        | "explain" | "root" | "bin" | "prefix" | "fund" | "doctor" => {}
        "view" | "info" | "show" | "outdated" | "search" | "ping" | "audit"
            if !ops.iter().any(|o| o.lit() == Some("fix")) =>
        {
            a.needs(Capability::Network);
        }
        "install" | "i" | "ci" | "add" | "update" | "up" | "upgrade" | "remove" | "rm"
        | "uninstall" | "un" | "unlink" | "link" | "dedupe" | "prune" | "rebuild" | "audit"
        | "import" => {
            a.needs(Capability::Network);
            a.complex(format!(
                "`{name} {sub}` runs the install scripts of the packages it fetches"
            ));
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("{name} {sub}"));
        }
        "pack" => a.write_path(&Arg::Lit(".".into()), cwd, &format!("{name} pack")),
        "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access" | "team"
        | "org" => {
            a.needs(Capability::RemoteWrite);
            a.refuse(Refusal::no_mode_grants(
                Capability::RemoteWrite,
                format!("{name} {sub}"),
            ));
        }
        "login" | "logout" | "adduser" | "token" | "whoami" => {
            a.needs(Capability::Secrets);
            a.refuse(Refusal::no_mode_grants(
                Capability::Secrets,
                format!("{name} {sub}"),
            ));
        }
        "config" | "set" | "get" => {
            if matches!(ops.get(1).and_then(Arg::lit), Some("get" | "list" | "ls")) || sub == "get"
            {
                return;
            }
            let rc = a.policy.config().home.as_ref().map_or_else(
                || "~/.npmrc".to_owned(),
                |h| h.join(".npmrc").to_string_lossy().into_owned(),
            );
            a.refuse(Refusal::write_outside_roots(format!(
                "{name} config ({rc})"
            )));
        }
        "exec" | "x" | "dlx" | "create" | "init" | "innit" => {
            a.needs(Capability::Network);
            a.complex(format!("`{name} {sub}` downloads and runs a package"));
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("{name} {sub}"));
        }
        _ => {
            // test, run, start, stop, restart, run-script, or a script name (yarn build).
            a.complex(format!("`{name} {sub}` runs a script of the project"));
        }
    }
}

/// pip: installing fetches and runs build code and writes site-packages (a virtual environment
/// inside the workspace, or somewhere spear cannot see).
pub(crate) fn pip(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) {
    let items = scan(
        args,
        &OptionSpec::gnu(
            "rcetidf",
            &[
                "requirement",
                "constraint",
                "editable",
                "target",
                "index-url",
                "extra-index-url",
                "find-links",
                "dest",
                "prefix",
                "root",
                "src",
                "log",
                "cache-dir",
                "python",
                "platform",
                "python-version",
                "implementation",
                "abi",
                "progress-bar",
                "report",
                "config-settings",
                "global-option",
                "exists-action",
                "trusted-host",
                "cert",
                "client-cert",
                "timeout",
                "retries",
                "proxy",
                "format",
                "exclude",
            ],
            &["user", "break-system-packages", "site"],
        ),
    );
    let ops = operands(&items);
    let sub = ops.first().and_then(Arg::lit).unwrap_or("");
    for r in values(&items, &["-r", "--requirement", "-c", "--constraint"]) {
        a.read_path(r, cwd);
    }
    for w in values(
        &items,
        &[
            "-t", "--target", "--prefix", "--root", "-d", "--dest", "--log", "--report", "--src",
        ],
    ) {
        a.write_path(w, cwd, name);
    }
    match sub {
        "config"
            if ops.len() > 1
                && !matches!(
                    ops.get(1).and_then(Arg::lit),
                    Some("list" | "get" | "debug")
                ) =>
        {
            if ops.get(1).and_then(Arg::lit) == Some("edit") {
                a.complex(format!("`{name} config edit` runs an editor"));
            }
            if has(&items, &["--site"]) {
                a.complex(format!(
                    "`{name} config --site` writes the configuration of an environment spear \
                     cannot see"
                ));
                a.mutates(format!("{name} config changes pip.conf"));
            } else {
                a.refuse(Refusal::write_outside_roots(format!(
                    "{name} config (pip.conf outside the workspace; pass --site to change a \
                     virtual environment's)"
                )));
            }
        }
        "" | "list" | "show" | "freeze" | "check" | "help" | "debug" | "inspect" | "--version"
        | "-V" | "cache" | "config" | "hash" => {}
        "install" | "download" | "wheel" | "uninstall" => {
            if sub != "uninstall" {
                a.needs(Capability::Network);
            }
            if has(&items, &["--user"]) {
                a.refuse(Refusal::write_outside_roots(format!("{name} {sub} --user")));
                return;
            }
            a.complex(format!(
                "`{name} {sub}` runs package build code and writes an environment spear cannot see"
            ));
            a.mutates(format!("{name} {sub} changes installed packages"));
        }
        "search" | "index" => a.needs(Capability::Network),
        _ => a.complex(format!("`{name} {sub}` is not a pip command spear knows")),
    }
}

/// uv: `run` runs code; `sync`, `add`, `pip install`... fetch and write the project environment.
fn uv(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let items = scan(
        args,
        &OptionSpec::gnu(
            "p",
            &[
                "python",
                "directory",
                "project",
                "index",
                "index-url",
                "cache-dir",
                "with",
                "package",
                "output-format",
            ],
            &["bump", "dry-run", "frozen", "locked", "offline"],
        ),
    );
    let ops = operands(&items);
    let sub = ops.first().and_then(Arg::lit).unwrap_or("");
    match sub {
        // `uv version 1.2.3` and `--bump` rewrite pyproject.toml, then lock and sync.
        "version"
            if (ops.len() > 1 || has(&items, &["--bump"])) && !has(&items, &["--dry-run"]) =>
        {
            a.needs(Capability::Network);
            a.complex("`uv version NEW` locks and syncs the environment, which runs build code");
            a.write_path(&Arg::Lit(".".into()), cwd, "uv version");
        }
        "" | "help" | "--version" => {}
        "version" | "tree" => {
            if !has(&items, &["--frozen"]) {
                a.workspace_code(&format!("uv {sub}"), cwd, workspace_code::uv_project);
            }
        }
        "venv" | "lock" | "init" => a.write_path(&Arg::Lit(".".into()), cwd, "uv"),
        "sync" | "add" | "remove" | "pip" | "build" => {
            a.needs(Capability::Network);
            a.complex(format!("`uv {sub}` runs package build code"));
            a.write_path(&Arg::Lit(".".into()), cwd, "uv");
        }
        "publish" => {
            a.needs(Capability::RemoteWrite);
            a.refuse(Refusal::no_mode_grants(
                Capability::RemoteWrite,
                "uv publish",
            ));
        }
        "tool" | "self" => a.refuse(Refusal::write_outside_roots(format!("uv {sub}"))),
        _ => {
            a.needs(Capability::Network);
            a.complex(format!("`uv {sub}` runs code"));
        }
    }
}

/// make: builds in the current directory or `-C DIR`. Every form that reads the makefiles runs
/// code from them: `$(shell ...)` and `include` as they are read, also under `-n` (which also runs
/// `+` recipes), `-q` and `-p` (which prints the database, then builds unless `-q` or `-n`).
/// Variables on the command line and `--eval` replace what recipes run. Only `--version` and
/// `--help` read no makefile.
fn make(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    // `-V VAR` is bmake's (print a variable); GNU make has no `-V`.
    let spec = OptionSpec::gnu(
        "CfIjloWEV",
        &[
            "directory",
            "file",
            "makefile",
            "include-dir",
            "jobs",
            "load-average",
            "old-file",
            "assume-old",
            "what-if",
            "new-file",
            "assume-new",
            "eval",
            "output-sync",
            "debug",
            "jobserver-style",
        ],
        &[],
    )
    .flags(
        "BdeiknpqrRsStvwhL",
        &[
            "always-make",
            "environment-overrides",
            "ignore-errors",
            "keep-going",
            "just-print",
            "dry-run",
            "recon",
            "print-data-base",
            "question",
            "no-builtin-rules",
            "no-builtin-variables",
            "silent",
            "quiet",
            "no-silent",
            "no-keep-going",
            "stop",
            "touch",
            "trace",
            "print-directory",
            "no-print-directory",
            "warn-undefined-variables",
            "check-symlink-times",
            "shuffle",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    // GNU make's `-v` and `-h` are `--version` and `--help`; bmake's `-v`/`-V` print variables of
    // the makefile it reads.
    let no_makefile: &[&str] = if name == "bmake" {
        &["--version", "--help"]
    } else {
        &["--version", "--help", "-v", "-h"]
    };
    if !items.is_empty() && items.iter().all(|item| item.is(no_makefile)) {
        return;
    }
    for f in values(
        &items,
        &["-f", "--file", "--makefile", "-I", "--include-dir"],
    ) {
        a.read_path(f, cwd);
    }
    if has(&items, &["--eval", "-E"]) || operands(&items).iter().any(|o| o.display().contains('='))
    {
        a.complex(format!(
            "`{name} VAR=...` and `--eval` change the commands recipes run"
        ));
    }
    let dir = values(&items, &["-C", "--directory"])
        .last()
        .cloned()
        .unwrap_or(Arg::Lit(".".into()));
    if has(
        &items,
        &[
            "-n",
            "--dry-run",
            "--just-print",
            "--recon",
            "-q",
            "--question",
        ],
    ) {
        a.complex(format!(
            "`{name} -n` and `-q` still read the makefiles, which runs their $(shell ...), and \
             `-n` runs `+` recipes"
        ));
        a.read_path(&dir, cwd);
        return;
    }
    // Builds, `-p`/`--print-data-base` included: recipes write the project's outputs.
    a.write_path(&dir, cwd, name);
}

/// cmake: configuring writes the build directory; `-E` and `-P` run commands or scripts.
fn cmake(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let first = args.first().and_then(Arg::lit);
    match first {
        Some("--version" | "--help" | "-h") => {}
        Some("-E" | "-P") => {
            a.complex("`cmake -E`/`-P` runs commands or a script");
            a.mutates("cmake -E may change files");
        }
        Some("--build" | "--install") => {
            if let Some(dir) = args.get(1) {
                a.write_path(dir, cwd, "cmake");
            }
            if first == Some("--install") {
                let prefix = args
                    .iter()
                    .skip_while(|x| x.lit() != Some("--prefix"))
                    .nth(1);
                match prefix {
                    Some(p) => a.write_path(p, cwd, "cmake --install"),
                    None => a.refuse(Refusal::write_outside_roots("cmake --install (into the system prefix; pass --prefix inside the workspace)")),
                }
            }
        }
        _ => {
            let build = args
                .iter()
                .find_map(|x| {
                    x.lit()
                        .and_then(|t| t.strip_prefix("-B"))
                        .filter(|d| !d.is_empty())
                        .map(|d| Arg::Lit(d.to_owned()))
                })
                .or_else(|| {
                    args.iter()
                        .skip_while(|x| x.lit() != Some("-B"))
                        .nth(1)
                        .cloned()
                })
                .unwrap_or(Arg::Lit(".".into()));
            a.write_path(&build, cwd, "cmake");
        }
    }
}

/// go: build, test and vet write the workspace (and caches in the sandbox's home); get and mod
/// download; run and generate run code; install writes outside the workspace.
fn go(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let sub = args.first().and_then(Arg::lit).unwrap_or("");
    let rest = args.get(1..).unwrap_or(&[]);
    // `go vet -vettool=PROG` runs PROG as the analysis tool.
    if rest.iter().any(|x| {
        x.lit().filter(|t| t.starts_with('-')).is_some_and(|t| {
            let t = t.trim_start_matches('-');
            t.starts_with("toolexec") || t.starts_with("exec") || t.starts_with("vettool")
        })
    }) {
        a.complex("`go -toolexec`, `-exec` and `vet -vettool` run another program");
    }
    for (i, x) in rest.iter().enumerate() {
        if x.lit() == Some("-o")
            && let Some(out) = rest.get(i + 1)
        {
            a.write_path(out, cwd, "go");
        }
    }
    match sub {
        "" | "version" | "help" | "doc" | "list" | "vet" => {}
        "env" => {
            if rest.iter().any(|x| matches!(x.lit(), Some("-w" | "-u"))) {
                a.refuse(Refusal::write_outside_roots(
                    "go env -w (the user's go configuration)",
                ));
            }
        }
        "build" | "test" | "fmt" | "clean" | "fix" | "work" => {
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("go {sub}"));
        }
        "get" | "mod" => {
            if !matches!(
                rest.first().and_then(Arg::lit),
                Some("graph" | "why" | "verify" | "edit")
            ) {
                a.needs(Capability::Network);
            }
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("go {sub}"));
        }
        "run" | "generate" | "tool" => {
            a.complex(format!("`go {sub}` runs code"));
            a.write_path(&Arg::Lit(".".into()), cwd, &format!("go {sub}"));
        }
        "install" => a.refuse(Refusal::write_outside_roots(
            "go install (into GOBIN or GOPATH/bin)",
        )),
        _ => a.complex(format!("`go {sub}` is not a go command spear knows")),
    }
}

/// The `rustc -C`/`-Z` keys (as prefixes) that make the compiler run or load other code.
const RUSTC_CODE_LOADING: &[&str] = &[
    "linker",
    "link-arg",
    "codegen-backend",
    "llvm-args",
    "profile-use",
];

/// The compiler options (as prefixes) that write side files beside the sources or the output.
const SIDE_FILE_OPTIONS: &[&str] = &[
    "-save-temps",
    "-MD",
    "-MMD",
    "-MF",
    "-fdump",
    "-ftest-coverage",
    "--coverage",
    "-fprofile",
    "-gsplit-dwarf",
    "-fcallgraph-info",
    "-fstack-usage",
];

/// Compilers write their output (`-o`, or beside the sources in the current directory); plugins,
/// wrappers and response files change what they run.
fn compiler(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) {
    if name == "rustc" {
        rust_toolchain(a, name, cwd);
    }
    let mut only_query = !args.is_empty();
    // `-fsyntax-only` checks, `-E`, `-M` and `-MM` print to stdout: the sources are read and no
    // file is written unless `-o` names one (judged where it is met).
    let mut writes_no_file = false;
    // A C compiler given `-o` writes that file (and temporaries in TMPDIR) and nothing beside the
    // sources, unless an option asks for side files (`-save-temps`, `-MD`, `.gcno`, `.dwo`...).
    let c_family = !matches!(name, "rustc" | "javac");
    let mut explicit_output = false;
    let mut side_files = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(t) = arg.lit() else {
            only_query = false;
            a.read_path(arg, cwd);
            continue;
        };
        match t {
            "-o" | "-d" | "--out-dir" => {
                if let Some(out) = args.get(i) {
                    a.write_path(out, cwd, name);
                }
                i += 1;
                only_query = false;
                explicit_output = c_family && t == "-o";
            }
            "--version" | "-v" | "-vV" | "-Vv" | "-dumpversion" | "-dumpmachine" | "--help"
            | "-print-search-dirs" | "-V" => {}
            // `rustc --print sysroot` (`--print=cfg`) answers a question and compiles nothing;
            // `--print KIND=PATH` writes the answer to PATH.
            "--print" if name == "rustc" => {
                if let Some(kind) = args.get(i) {
                    print_request(a, kind, cwd);
                }
                i += 1;
            }
            _ if name == "rustc" && t.starts_with("--print=") => {
                print_request(a, &Arg::Lit(t["--print=".len()..].to_owned()), cwd);
            }
            // `rustc -C linker=PROG` and `-Z codegen-backend=LIB` run or load other code.
            "-C" | "-Z" if name == "rustc" => {
                let value = args.get(i).and_then(Arg::lit).unwrap_or("");
                if value.is_empty() || RUSTC_CODE_LOADING.iter().any(|k| value.starts_with(k)) {
                    a.complex(format!(
                        "`{name} {t} {value}` makes the compiler run or load other code"
                    ));
                }
                i += 1;
                only_query = false;
            }
            "--target" | "--edition" | "--crate-type" | "--crate-name" | "--cfg"
                if name == "rustc" =>
            {
                i += 1;
            }
            _ if t.starts_with("-print-") && name != "rustc" => {}
            _ if t.starts_with("-fplugin")
                || t.starts_with("-B")
                || t == "-wrapper"
                || t.starts_with("-specs")
                || t.starts_with("-Zcodegen-backend")
                || t.starts_with("-Clinker")
                || t.starts_with("-Clink-arg")
                || t.starts_with("-Cllvm-args")
                || t.starts_with('@') =>
            {
                a.complex(format!(
                    "`{name} {t}` makes the compiler run or load other code"
                ));
                only_query = false;
            }
            _ if t.starts_with("-o") && t.len() > 2 && name != "rustc" => {
                a.write_path(&Arg::Lit(t[2..].to_owned()), cwd, name);
                only_query = false;
                explicit_output = c_family;
            }
            _ if t.starts_with('-') => {
                if SIDE_FILE_OPTIONS.iter().any(|p| t.starts_with(p)) {
                    side_files = true;
                }
                if matches!(t, "-E" | "-fsyntax-only" | "-M" | "-MM" | "--print") {
                    writes_no_file = name != "rustc";
                    only_query = true;
                    continue;
                }
                only_query = only_query && matches!(t, "-v" | "--verbose");
            }
            _ => {
                only_query = false;
                a.read_path(arg, cwd);
            }
        }
    }
    let output_named_alone = explicit_output && !side_files;
    if !only_query && !writes_no_file && !output_named_alone {
        a.write_path(&Arg::Lit(".".into()), cwd, name);
    }
}

/// One `rustc --print` request: `KIND` only prints; `KIND=PATH` writes PATH.
fn print_request(a: &mut Analysis<'_>, kind: &Arg, cwd: &Cwd) {
    match kind.lit() {
        Some(k) => {
            if let Some((_, path)) = k.split_once('=') {
                a.write_path(&Arg::Lit(path.to_owned()), cwd, "rustc --print");
            }
        }
        None => {
            a.complex("`rustc --print` with a request known only at run time could write a file");
        }
    }
}

/// Formatters rewrite their files in place unless told to check or print.
fn formatter(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) {
    if name == "rustfmt" {
        rust_toolchain(a, name, cwd);
    }
    let checking = args.iter().any(|x| {
        matches!(
            x.lit(),
            Some(
                "--check"
                    | "--diff"
                    | "-d"
                    | "-l"
                    | "--list"
                    | "--dry-run"
                    | "--version"
                    | "-V"
                    | "--help"
                    | "--emit=stdout"
                    | "--print-config"
                    | "-c"
                    | "--check-only"
            )
        )
    });
    let writes_by_default = matches!(name, "rustfmt" | "black" | "isort" | "taplo" | "stylua");
    let writes_flag = args.iter().any(|x| {
        matches!(
            x.lit(),
            Some("-w" | "--write" | "-i" | "--in-place" | "--fix")
        )
    });
    let ruff_sub = args.first().and_then(Arg::lit).filter(|_| name == "ruff");
    let ruff_writes = match ruff_sub {
        Some("format") => true,
        // `--add-noqa` writes suppression comments into the files it checks.
        Some("check") => writes_flag || args.iter().any(|x| x.lit() == Some("--add-noqa")),
        _ => false,
    };
    if ruff_sub == Some("clean") {
        a.write_path(&Arg::Lit(".ruff_cache".into()), cwd, "ruff clean");
    }
    if ruff_sub.is_some() {
        // `ruff check -o FILE` (`--output-file`) writes its report to FILE.
        let items = scan(args, &OptionSpec::gnu("o", &["output-file"], &[]));
        for out in values(&items, &["-o", "--output-file"]) {
            a.write_path(out, cwd, "ruff");
        }
    }
    let writes = !checking && (writes_by_default || writes_flag || ruff_writes);
    let files: Vec<&Arg> = args
        .iter()
        .filter(|x| !x.display().starts_with('-') && !matches!(x.lit(), Some("check" | "format")))
        .collect();
    for f in &files {
        if writes {
            a.write_path(f, cwd, name);
        } else {
            a.read_path(f, cwd);
        }
    }
    if writes && files.is_empty() {
        a.write_path(&Arg::Lit(".".into()), cwd, name);
    }
}
