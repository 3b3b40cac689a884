//! Files a directory holds that make a known program run their code.
//!
//! `READ_ONLY` means that the programs that run are known and change nothing. Some known programs
//! take part of what they run from the directory they run in or one above it: Python puts the
//! current directory first on its module path, rustup runs the toolchain a `rust-toolchain.toml`
//! names, cargo runs the `rustc` wrapper of a `.cargo/config.toml`, yarn runs the `yarnPath` of a
//! `.yarnrc.yml`, git runs the drivers of the repository's configuration. Where the directory
//! holds such a file, the program runs the workspace's code, and the command is `SHELL_COMPLEX`;
//! where it holds none, the command keeps its class (`python3 -m json.tool` stays `READ_ONLY` where
//! nothing shadows `json`).
//!
//! The survey of every program the classifier can call `READ_ONLY`, and what decides each:
//!
//! - **python** (`-m json.tool`, `-m pip` and its reading subcommands; `-m venv`, `-m py_compile`,
//!   `-m compileall` write): the current directory comes first on the module path, so a module
//!   file (`X.py`, `X.pyc`, `X*.so`) or package (`X/__init__.*`) there is imported before the
//!   standard library's. `json.tool` and the compilers import only the standard library, so only
//!   a module of a standard-library name (or the module asked for) shadows them; pip and venv
//!   (which runs pip) also import third-party names (pip's debundled dependencies), so any module
//!   does. `-I` and `-P` keep the current directory off the path. `sitecustomize`,
//!   `usercustomize` and `.pth` files are read from the site directories only, before the current
//!   directory is on the path. `--version` and `--help` import nothing.
//! - **The other interpreters** are `READ_ONLY` only for the flags with which each prints and
//!   exits ([`crate::commands::interpreters`]): `tclsh -v` and `jshell -v` run their input, so they
//!   are not such flags.
//! - **cargo, rustc, rustfmt** (rustup's proxies): the nearest `rust-toolchain.toml` or
//!   `rust-toolchain` in the directory or above selects the toolchain that runs, and one that names
//!   a path (`path = "/abs/dir"`, or a legacy file holding a path) runs the programs of that
//!   directory in place of cargo, rustc or rustfmt themselves, for every subcommand, `--version`
//!   included; `cargo +/abs/dir` does the same. A channel name runs an installed toolchain.
//! - **cargo**'s `.cargo/config.toml` and `.cargo/config`, in the directory and every one above:
//!   `cargo tree` and `cargo metadata` (and `search`, `info`) ask rustc about the target, through
//!   `build.rustc`, `build.rustc-wrapper`, `build.rustc-workspace-wrapper`, with `build.rustflags`
//!   and `target.*.rustflags` (`-Zcodegen-backend=lib.so` loads a library); a registry's
//!   `credential-provider` runs a program; `[env]` sets the environment of what cargo runs; `include`
//!   reads another file. `cargo fmt` is not a built-in command, so an `[alias] fmt` replaces it.
//!   `version`, `locate-project`, `pkgid`, `verify-project`, `read-manifest` and `report` run no
//!   program (measured with a wrapper that records its calls).
//! - **npm** reads `.npmrc` up the tree: its `onload-script` (npm 6 and earlier) is code npm loads.
//!   `script-shell` and `node-options` apply to package scripts, which are `SHELL_COMPLEX` already.
//! - **yarn** reads `.yarnrc.yml` and `.yarnrc` up the tree: `yarnPath`/`yarn-path` runs that file
//!   in place of yarn for every command, `plugins` loads code.
//! - **pnpm** loads `.pnpmfile.cjs` (or the `pnpmfile` a configuration names), whose hooks include
//!   one that runs as the configuration is read (`updateConfig`).
//! - **bun**'s `bunfig.toml` `preload` runs only with `bun run`, `bun test` and scripts, which are
//!   `SHELL_COMPLEX` already; `bun ls` reads.
//! - **uv** `tree` and `version` resolve the project unless `--frozen`: a project's dynamic
//!   metadata comes from running its build backend (`setup.py`), and the lock file is rewritten.
//! - **git**: the repository's own configuration (`.git/config`, `config.worktree` and what they
//!   include), and that of a bare repository the workspace holds, can name programs that reading
//!   subcommands run: `core.fsmonitor` (status, diff), `diff.external`, `diff.*.textconv` and
//!   `diff.*.command` (diff, log -p, show, blame, grep), `filter.*.clean`/`process` (status, diff),
//!   `gpg.program` (verify-commit, log --show-signature). Pagers do not run: the output is not a
//!   terminal. Writing these files is refused ([`crate::git_layout`]); one that came with the
//!   workspace is found here.
//! - **go** (`version`, `env`, `list`, `doc`, `vet`): no file of the tree names a program: `go.mod`'s
//!   `toolchain` downloads a checksummed toolchain (the network), `GOFLAGS` come from the
//!   environment and the user's `go env` file, cgo's flags are go's own allowlist. `go vet
//!   -vettool=PROG` runs PROG ([`crate::commands::build`]).
//! - **make** reads no makefile for `--version` and `--help` (every other form runs
//!   `$(shell ...)`); **cmake** `--version`; the **C compilers** find their programs by their own
//!   prefix, not the directory; **tsc**'s `tsconfig.json` loads no code (plugins are the editor
//!   server's); the **formatters** read data only (`rustfmt.toml`, `pyproject.toml`,
//!   `.clang-format`), and the Python ones run as installed scripts, whose module path starts with
//!   their own directory, not the current one.
//! - pytest (`conftest.py`), tox, nox, Maven (`.mvn/`), Gradle, bundler (`.bundle/config`), direnv
//!   (`.envrc`), rake, just and the like are never `READ_ONLY`: they run the project's code by their
//!   job.
//! - The readers and searchers (cat, grep, rg, fd, jq, less, bat, ...) read their configuration
//!   from the environment and the home directory (the sandbox's own), and the ignore files they
//!   read are data.
//!
//! A directory that is the sandbox's private `/tmp`, `/dev/shm` or home cannot be seen from here
//! (the command may have written it a moment before): a program that takes code from it is
//! `SHELL_COMPLEX`. A directory that cannot be read is too (fails closed).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::analysis::{Analysis, Cwd};

/// The largest configuration file read; a larger one is not judged (fails closed).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl Analysis<'_> {
    /// Runs `check` on the directory a program runs in, when the sandbox shows it as the host has
    /// it, and records what it finds as `SHELL_COMPLEX`. A directory known only at run time, or one
    /// of the sandbox's private places, is `SHELL_COMPLEX` as it is.
    pub(crate) fn workspace_code(
        &mut self,
        program: &str,
        cwd: &Cwd,
        check: impl FnOnce(&Path) -> Option<String>,
    ) {
        match self.code_dir(cwd) {
            Ok(dir) => {
                if let Some(why) = check(&dir) {
                    self.complex(format!("{program} runs the workspace's code: {why}"));
                }
            }
            Err(why) => self.complex(format!("{program} may run code from {why}")),
        }
    }

    /// The host directory a program runs in, when the host shows what the program will see there.
    fn code_dir(&self, cwd: &Cwd) -> Result<PathBuf, String> {
        let Cwd::Known(dir) = cwd else {
            return Err("a directory known only at run time".to_owned());
        };
        let ws = self.policy.workspace();
        if ws.locate(dir).is_some() {
            return Ok(dir.clone());
        }
        let holds_root = ws.roots().iter().any(|r| r.host_path().starts_with(dir));
        if self.policy.host_view().sandbox().is_private(dir) && !holds_root {
            return Err(format!(
                "{}, the sandbox's private directory, which spear cannot see before the command \
                 runs",
                dir.display()
            ));
        }
        Ok(dir.clone())
    }
}

/// `dir` and every directory above it, nearest first.
fn up_from(dir: &Path) -> impl Iterator<Item = &Path> {
    dir.ancestors()
}

/// The text of the file `path`: `Ok(None)` when there is none, `Err` with a reason when one is
/// there and cannot be read whole (fails closed).
fn read_config(path: &Path) -> Result<Option<String>, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be examined ({e})", path.display())),
        Ok(_) => {}
    }
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("{} cannot be examined ({e})", path.display()))?;
    if meta.is_dir() {
        return Ok(None);
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!("{} is too large to be examined", path.display()));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("{} cannot be read ({e})", path.display()))?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Whether `path` exists (a link counts, whatever it points at). `Err` when that cannot be known.
fn exists(path: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{} cannot be examined ({e})", path.display())),
    }
}

// ---------------------------------------------------------------------------------------------
// Python

/// Which modules of the current directory a `python -m MODULE` imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Imports<'m> {
    /// The standard library and the module asked for (`json.tool` imports `json`, `argparse`...).
    StandardLibrary(&'m str),
    /// Any module: the program imports third-party names too (pip).
    Any,
}

/// Attack stopped: `python3 -m json.tool` (or `-m pip --version`) in a directory holding
/// `json/__init__.py`, `argparse.py` or `pip/__main__.py`: Python finds the current directory's
/// module first and runs it.
///
/// The module `dir` offers on Python's path that the program would import, named in the reason.
pub(crate) fn python_shadow(dir: &Path, imports: Imports<'_>) -> Option<String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            return Some(format!(
                "{} cannot be listed ({e}), so what Python imports from it cannot be known",
                dir.display()
            ));
        }
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return Some(format!("{} cannot be listed", dir.display()));
        };
        let name = entry.file_name();
        let Some(module) = importable_module(dir, &name) else {
            continue;
        };
        let wanted = match imports {
            Imports::Any => true,
            Imports::StandardLibrary(asked) => {
                let top = asked.split('.').next().unwrap_or(asked);
                module == top || is_standard_module(&module)
            }
        };
        if wanted {
            let what = match imports {
                Imports::Any => "a module it may import (pip imports third-party modules too)",
                Imports::StandardLibrary(_) => {
                    "which Python imports in place of the module of that name"
                }
            };
            return Some(format!(
                "{} holds `{}`, {what}, since the current directory comes first on Python's \
                 module path (`python -I` or `-P` leaves it off)",
                dir.display(),
                name.to_string_lossy()
            ));
        }
    }
    None
}

/// The top-level module an entry of a directory on Python's path provides: `X.py`, `X.pyc`,
/// `X.so`, `X.cpython-312-x86_64-linux-gnu.so` or a package directory `X/` with an `__init__`.
fn importable_module(dir: &Path, name: &OsStr) -> Option<String> {
    let text = name.to_string_lossy();
    let stem = text.split('.').next().unwrap_or(&text);
    if stem.is_empty() {
        return None;
    }
    if text.ends_with(".py") || text.ends_with(".pyc") || text.ends_with(".so") {
        return Some(stem.to_owned());
    }
    if text.contains('.') {
        return None;
    }
    let package = dir.join(name);
    let is_package = std::fs::read_dir(&package).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("__init__.") || n.starts_with("__main__.")
        })
    });
    // A package that cannot be listed could hold an `__init__`: counted (fails closed).
    let unlistable = package.is_dir() && std::fs::read_dir(&package).is_err();
    (is_package || unlistable).then(|| text.into_owned())
}

/// Whether `name` is a top-level module of Python's standard library (`CPython` 3.8 to 3.14), a
/// private one (`_json`), or one that interpreter start-up hooks import lazily (setuptools'
/// `_distutils_hack`, `sitecustomize`).
fn is_standard_module(name: &str) -> bool {
    name.starts_with('_') || STANDARD_MODULES.binary_search(&name).is_ok()
}

/// `CPython`'s `sys.stdlib_module_names` of 3.11, with the names 3.8 to 3.10 had and 3.12 to 3.14
/// added, and the names setuptools' import hook loads (sorted, for the binary search).
const STANDARD_MODULES: &[&str] = &[
    "abc",
    "aifc",
    "annotationlib",
    "antigravity",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "binhex",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "compression",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "dummy_threading",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "formatter",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "macpath",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "parser",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkg_resources",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "setuptools",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "sitecustomize",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symbol",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "usercustomize",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

// ---------------------------------------------------------------------------------------------
// Rust: rustup's toolchain files and cargo's configuration

/// Attack stopped: a `rust-toolchain.toml` with `path = "/workspace/tc"` (or a legacy
/// `rust-toolchain` holding that path), which makes rustup's `cargo`, `rustc` and `rustfmt` run
/// `/workspace/tc/bin/cargo` and so on for every command, `--version` included.
///
/// The toolchain file of `dir` or a directory above that names a path.
pub(crate) fn rust_toolchain_path(dir: &Path) -> Option<String> {
    for d in up_from(dir) {
        for name in ["rust-toolchain.toml", "rust-toolchain"] {
            let path = d.join(name);
            let text = match read_config(&path) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(why) => return Some(why),
            };
            if let Some(why) = toolchain_names_path(&text) {
                return Some(format!("{} {why}", path.display()));
            }
        }
    }
    None
}

/// Why a toolchain file's text runs a toolchain from a directory: a `path` key, or a channel
/// spelled as a path; a file that is neither TOML nor a plain name is not judged (fails closed).
fn toolchain_names_path(text: &str) -> Option<&'static str> {
    const NAMES_DIR: &str = "names a toolchain directory, whose programs run in place of rustup's";
    let Ok(table) = text.parse::<toml::Table>() else {
        let name = text.trim();
        return if name.contains(['/', '\\']) {
            Some(NAMES_DIR)
        } else if name.contains(char::is_whitespace) || name.contains('=') {
            Some("cannot be read as a toolchain name, so what rustup runs cannot be known")
        } else {
            None
        };
    };
    let toolchain = table.get("toolchain").and_then(toml::Value::as_table);
    let named_path = toolchain.is_some_and(|t| t.contains_key("path"));
    let channel_path = toolchain
        .and_then(|t| t.get("channel"))
        .and_then(toml::Value::as_str)
        .is_some_and(|c| c.contains(['/', '\\']));
    (named_path || channel_path).then_some(NAMES_DIR)
}

/// What a cargo subcommand takes from `.cargo/config.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CargoUse<'s> {
    /// It asks rustc about the target, and may fetch through a registry (`tree`, `metadata`,
    /// `search`, `info`): programs, flags and environment of rustc, credential providers.
    Rustc,
    /// It is not a built-in command (`fmt`): an alias of this name replaces it.
    Alias(&'s str),
}

/// The keys of cargo's configuration that run a program or load code, for [`CargoUse::Rustc`].
/// Attack stopped: `cargo tree` with `[build] rustc-wrapper = "./evil"` in `.cargo/config.toml`.
///
/// The configuration file of `dir` or a directory above that makes `sub` run something.
pub(crate) fn cargo_config(dir: &Path, using: CargoUse<'_>) -> Option<String> {
    for d in up_from(dir) {
        for name in [".cargo/config.toml", ".cargo/config"] {
            let path = d.join(name);
            let text = match read_config(&path) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(why) => return Some(why),
            };
            let Ok(table) = text.parse::<toml::Table>() else {
                return Some(format!(
                    "{} cannot be parsed, so what cargo runs cannot be known",
                    path.display()
                ));
            };
            let found = match using {
                CargoUse::Rustc => cargo_runs(&table),
                CargoUse::Alias(sub) => table
                    .get("alias")
                    .and_then(toml::Value::as_table)
                    .is_some_and(|t| t.contains_key(sub))
                    .then(|| format!("`[alias] {sub}`, which replaces `cargo {sub}`")),
            };
            if let Some(what) = found {
                return Some(format!("{} sets {what}", path.display()));
            }
        }
    }
    None
}

/// The first entry of a cargo configuration that makes `cargo tree` or `cargo metadata` run a
/// program or load code.
fn cargo_runs(table: &toml::Table) -> Option<String> {
    if table.contains_key("include") {
        return Some("`include`, which reads more configuration".to_owned());
    }
    if table.contains_key("env") {
        return Some("`[env]`, the environment of the programs cargo runs".to_owned());
    }
    if table.contains_key("credential-alias") {
        return Some("`[credential-alias]`, programs that give registry credentials".to_owned());
    }
    if let Some(build) = table.get("build").and_then(toml::Value::as_table) {
        for key in [
            "rustc",
            "rustc-wrapper",
            "rustc-workspace-wrapper",
            "rustdoc",
        ] {
            if build.contains_key(key) {
                return Some(format!("`build.{key}`, a program cargo runs"));
            }
        }
        if let Some(flags) = build.get("rustflags")
            && let Some(flag) = loading_rustflag(flags)
        {
            return Some(format!("`build.rustflags` with `{flag}`"));
        }
        if build
            .get("target")
            .and_then(toml::Value::as_str)
            .is_some_and(|t| {
                Path::new(t)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json"))
            })
        {
            return Some("`build.target`, a target specification file".to_owned());
        }
    }
    for section in ["target", "host"] {
        let Some(t) = table.get(section).and_then(toml::Value::as_table) else {
            continue;
        };
        let mut tables = vec![(section.to_owned(), t)];
        for (k, v) in t {
            if let Some(inner) = v.as_table() {
                tables.push((format!("{section}.{k}"), inner));
            }
        }
        for (name, t) in tables {
            if let Some(flags) = t.get("rustflags")
                && let Some(flag) = loading_rustflag(flags)
            {
                return Some(format!("`{name}.rustflags` with `{flag}`"));
            }
        }
    }
    if let Some(profiles) = table.get("profile").and_then(toml::Value::as_table) {
        for (name, p) in profiles {
            if p.as_table().is_some_and(|p| p.contains_key("rustflags")) {
                return Some(format!("`profile.{name}.rustflags`"));
            }
        }
    }
    let registry = table.get("registry").and_then(toml::Value::as_table);
    if registry.is_some_and(|r| {
        r.contains_key("credential-provider") || r.contains_key("global-credential-providers")
    }) {
        return Some("a registry credential provider, a program cargo runs".to_owned());
    }
    if let Some(registries) = table.get("registries").and_then(toml::Value::as_table) {
        for (name, r) in registries {
            if r.as_table()
                .is_some_and(|r| r.contains_key("credential-provider"))
            {
                return Some(format!(
                    "`registries.{name}.credential-provider`, a program cargo runs"
                ));
            }
        }
    }
    if table.contains_key("unstable") {
        return Some("`[unstable]`, options cargo does not stabilise".to_owned());
    }
    None
}

/// The first rustc flag of a `rustflags` value (a string of flags or an array) that is not one
/// of the flags known to load no code: rustc answers cargo's questions about the target with
/// these flags, and `-Zcodegen-backend=lib.so`, `-Cllvm-args=...` or `@file` would load or read
/// more.
fn loading_rustflag(flags: &toml::Value) -> Option<String> {
    let list: Vec<String> = match flags {
        toml::Value::String(s) => s.split_whitespace().map(str::to_owned).collect(),
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect(),
        other => return Some(other.to_string()),
    };
    let mut i = 0;
    while i < list.len() {
        let flag = list[i].as_str();
        i += 1;
        // `-C key=value`, `-Ckey=value`, `--codegen key=value`.
        let codegen = match flag {
            "-C" | "--codegen" => {
                i += 1;
                list.get(i - 1).map(String::as_str)
            }
            _ => flag
                .strip_prefix("-C")
                .or_else(|| flag.strip_prefix("--codegen=")),
        };
        if let Some(value) = codegen {
            let key = value.split('=').next().unwrap_or("");
            if SAFE_CODEGEN.contains(&key) {
                continue;
            }
            return Some(format!("-C {value}"));
        }
        let takes_value = matches!(
            flag,
            "--cfg"
                | "--check-cfg"
                | "-A"
                | "-W"
                | "-D"
                | "-F"
                | "--cap-lints"
                | "-L"
                | "-l"
                | "--allow"
                | "--warn"
                | "--deny"
                | "--forbid"
                | "--force-warn"
                | "--edition"
        );
        if takes_value {
            i += 1;
            continue;
        }
        let attached = [
            "--cfg=",
            "--check-cfg=",
            "-A",
            "-W",
            "-D",
            "-F",
            "--cap-lints=",
            "-L",
            "-l",
        ]
        .iter()
        .any(|p| flag.starts_with(p) && flag.len() > p.len());
        if attached {
            continue;
        }
        return Some(flag.to_owned());
    }
    None
}

/// `-C` keys that load nothing when rustc only prints what it knows of the target (the linker is
/// not run; builds are judged by their own class).
const SAFE_CODEGEN: &[&str] = &[
    "target-cpu",
    "target-feature",
    "opt-level",
    "debuginfo",
    "force-frame-pointers",
    "force-unwind-tables",
    "relocation-model",
    "code-model",
    "panic",
    "overflow-checks",
    "debug-assertions",
    "strip",
    "link-arg",
    "link-args",
    "linker",
    "linker-flavor",
    "link-dead-code",
    "link-self-contained",
    "embed-bitcode",
    "lto",
    "codegen-units",
    "incremental",
    "metadata",
    "prefer-dynamic",
    "rpath",
    "split-debuginfo",
    "symbol-mangling-version",
    "soft-float",
    "no-redzone",
    "instrument-coverage",
    "relro-level",
    "control-flow-guard",
];

// ---------------------------------------------------------------------------------------------
// Node package managers

/// Attack stopped: `yarn list` with `.yarnrc.yml` saying `yarnPath: ./evil.cjs` (yarn runs that
/// file in place of itself for every command), `pnpm ls` with a `.pnpmfile.cjs`, `npm ls` with an
/// `.npmrc` `onload-script`.
///
/// The configuration of `dir` or a directory above that makes package manager `name` run code.
pub(crate) fn node_package_manager(dir: &Path, name: &str) -> Option<String> {
    let (files, keys): (&[&str], &[&str]) = match name {
        "npm" => (&[".npmrc"], &["onload-script"]),
        "yarn" => (
            &[".yarnrc.yml", ".yarnrc.yaml", ".yarnrc"],
            &["yarnPath", "yarn-path", "plugins"],
        ),
        "pnpm" => (
            &[".npmrc", "pnpm-workspace.yaml"],
            &["pnpmfile", "global-pnpmfile", "hooks"],
        ),
        _ => return None,
    };
    for d in up_from(dir) {
        if name == "pnpm" {
            for file in [".pnpmfile.cjs", ".pnpmfile.mjs", ".pnpmfile.js"] {
                match exists(&d.join(file)) {
                    Ok(true) => {
                        return Some(format!("{} holds hooks pnpm loads", d.join(file).display()));
                    }
                    Ok(false) => {}
                    Err(why) => return Some(why),
                }
            }
        }
        for file in files {
            let path = d.join(file);
            let text = match read_config(&path) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(why) => return Some(why),
            };
            if let Some(key) = keys.iter().find(|k| text.contains(**k)) {
                return Some(format!(
                    "{} sets `{key}`, code {name} loads or runs in place of itself",
                    path.display()
                ));
            }
        }
    }
    None
}

/// Attack stopped: `uv tree` in a project whose `setup.py` computes its metadata: uv runs the
/// build backend to learn it.
///
/// The Python project of `dir` or a directory above that uv would resolve.
pub(crate) fn uv_project(dir: &Path) -> Option<String> {
    for d in up_from(dir) {
        let path = d.join("pyproject.toml");
        match exists(&path) {
            Ok(true) => {
                return Some(format!(
                    "it resolves the project of {}, which can run its build backend, and \
                     rewrites uv.lock (`--frozen` reads the lock file as it is)",
                    path.display()
                ));
            }
            Ok(false) => {}
            Err(why) => return Some(why),
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// git

/// Keys of a repository's configuration whose program git's reading subcommands run (matched
/// lower-case on `section.key` and `section.*.key`).
const GIT_READING_PROGRAMS: &[&str] = &[
    "core.fsmonitor",
    "diff.external",
    "diff.*.textconv",
    "diff.*.command",
    "filter.*.clean",
    "filter.*.process",
    "gpg.program",
    "gpg.*.program",
];

/// Attack stopped: `git diff` (or `status`, `log -p`) in a repository whose configuration names
/// `diff.external`, a textconv driver or `core.fsmonitor`: a bare repository that came with the
/// workspace (`git -C vendor/x.git log -p`), or one the command made in its private `/tmp`.
///
/// The program that the repository git finds from `dir` names in its own configuration and
/// includes.
pub(crate) fn git_repository_programs(dir: &Path) -> Option<String> {
    let git_dir = match discover_git_dir(dir) {
        Ok(Some(g)) => g,
        Ok(None) => return None,
        Err(why) => return Some(why),
    };
    let common = match read_config(&git_dir.join("commondir")) {
        Ok(Some(c)) => git_dir.join(c.trim()),
        Ok(None) => git_dir.clone(),
        Err(why) => return Some(why),
    };
    let configs = [common.join("config"), git_dir.join("config.worktree")];
    let mut metas = Vec::new();
    for path in &configs {
        match exists(path) {
            Ok(true) => {
                match gix_config::file::Metadata::try_from_path(path, gix_config::Source::Local) {
                    Ok(m) => metas.push(m),
                    Err(e) => return Some(format!("{} cannot be read ({e})", path.display())),
                }
            }
            Ok(false) => {}
            Err(why) => return Some(why),
        }
    }
    if metas.is_empty() {
        return None;
    }
    let mut includes = gix_config::file::includes::Options::follow(
        gix_config::path::interpolate::Context::default(),
        gix_config::file::includes::conditional::Context {
            git_dir: Some(&git_dir),
            branch_name: None,
        },
    );
    includes.err_on_missing_config_path = false;
    let options = gix_config::file::init::Options {
        includes,
        lossy: true,
        ..Default::default()
    };
    let file = match gix_config::File::from_paths_metadata(metas, options) {
        Ok(Some(f)) => f,
        Ok(None) => return None,
        Err(e) => {
            return Some(format!(
                "the configuration of {} cannot be read ({e})",
                git_dir.display()
            ));
        }
    };
    for section in file.sections() {
        let name = section.header().name().to_string().to_ascii_lowercase();
        let sub = section.header().subsection_name().is_some();
        for key in section.body().value_names() {
            let key = key.to_ascii_lowercase();
            let listed = GIT_READING_PROGRAMS.iter().any(|pattern| {
                let (s, rest) = pattern.split_once('.').unwrap_or((pattern, ""));
                s == name
                    && match rest.split_once('.') {
                        Some(("*", k)) => sub && k == key,
                        _ => !sub && rest == key,
                    }
            });
            if !listed {
                continue;
            }
            for value in section.body().values(&key) {
                let text = value.to_string();
                let boolean = matches!(
                    text.trim().to_ascii_lowercase().as_str(),
                    "" | "true" | "false" | "yes" | "no" | "on" | "off" | "0" | "1"
                );
                if name == "core" && key == "fsmonitor" && boolean {
                    continue;
                }
                let shown = if sub {
                    format!("{name}.*.{key}")
                } else {
                    format!("{name}.{key}")
                };
                return Some(format!(
                    "the configuration of {} names a program in `{shown}`, which git runs",
                    git_dir.display()
                ));
            }
        }
    }
    None
}

/// The git directory git uses from `dir`: the `.git` (directory, or the one a gitfile names) of
/// the nearest directory holding one, or the nearest directory that is itself a git directory
/// (a bare repository).
fn discover_git_dir(dir: &Path) -> Result<Option<PathBuf>, String> {
    for d in up_from(dir) {
        let dot = d.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Ok(meta) if meta.is_file() => {
                let text = read_config(&dot)?.unwrap_or_default();
                return Ok(text
                    .trim()
                    .strip_prefix("gitdir:")
                    .map(|p| d.join(p.trim())));
            }
            Ok(_) => return Ok(Some(dot)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{} cannot be examined ({e})", dot.display())),
        }
        let bare = exists(&d.join("HEAD"))? && exists(&d.join("objects"))? && {
            exists(&d.join("refs"))? || exists(&d.join("commondir"))?
        };
        if bare {
            return Ok(Some(d.to_path_buf()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_modules_are_sorted() {
        let mut sorted = STANDARD_MODULES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STANDARD_MODULES);
        assert!(is_standard_module("json"));
        assert!(is_standard_module("_json"));
        assert!(!is_standard_module("setup"));
        assert!(!is_standard_module("mypkg"));
    }

    #[test]
    fn rustflags() {
        let v = |s: &str| toml::Value::String(s.to_owned());
        assert_eq!(
            loading_rustflag(&v("-C target-cpu=native --cfg tokio_unstable")),
            None
        );
        assert_eq!(
            loading_rustflag(&v("-Dwarnings -Ctarget-feature=+crt-static")),
            None
        );
        assert_eq!(
            loading_rustflag(&v("-Zcodegen-backend=/w/x.so")).as_deref(),
            Some("-Zcodegen-backend=/w/x.so")
        );
        assert_eq!(
            loading_rustflag(&v("-C llvm-args=-x")).as_deref(),
            Some("-C llvm-args=-x")
        );
        assert_eq!(loading_rustflag(&v("@flags")).as_deref(), Some("@flags"));
    }

    #[test]
    fn toolchain_files() {
        assert!(toolchain_names_path("[toolchain]\nchannel = \"nightly\"\n").is_none());
        assert!(toolchain_names_path("nightly-2024-01-01\n").is_none());
        assert!(toolchain_names_path("[toolchain]\npath = \"/w/tc\"\n").is_some());
        assert!(toolchain_names_path("/w/tc\n").is_some());
        assert!(toolchain_names_path("[toolchain\npath=").is_some());
    }
}
