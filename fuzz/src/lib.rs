//! Fixtures shared by the fuzz targets in `fuzz_targets/`.
//!
//! Each target builds its fixture once per process (a `OnceLock`), in a fresh temporary directory
//! that lives as long as the process. Nothing the targets do writes to a fixture, so every input
//! sees the same tree.

// A fuzz fixture fails loudly: a broken fixture is a broken harness, not a value to handle. The
// crate is not a member of the main workspace, so its lints do not apply here anyway.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{MountSchemeChoice, Workspace, WorkspaceConfig};
use tempfile::TempDir;

/// The red-team layout, shared with the decision-layer tests rather than copied.
pub use spear_testkit::layout;

/// Makes a panic that spear itself catches (`catch_unwind` around brush-parser's `parse_program`)
/// harmless, as it is in production.
///
/// libfuzzer-sys installs a panic hook that aborts at the panic site, before any `catch_unwind`
/// can run, so a panic spear recovers from would be reported as a crash. This hook only prints
/// (the first few) panics; a panic that nobody catches still unwinds into libfuzzer-sys's own
/// `catch_unwind` around the target, which aborts, and libFuzzer reports the crash.
///
/// Set `SPEAR_FUZZ_STRICT_PANICS=1` to keep libfuzzer-sys's hook (every panic is a crash, caught
/// or not): useful to find and minimise the inputs that make brush-parser panic.
pub fn install_panic_hook() {
    if std::env::var_os("SPEAR_FUZZ_STRICT_PANICS").is_some_and(|v| v != "0") {
        return;
    }
    // Panics inside brush-parser are caught by spear and may be frequent: only the first few are
    // shown. Any other panic is shown, and so is the one that escapes (the unwind into
    // libfuzzer-sys's `extern "C"` entry point raises a second, non-unwinding panic).
    static SHOWN: AtomicUsize = AtomicUsize::new(0);
    static LAST: Mutex<String> = Mutex::new(String::new());
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        let mut last = LAST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if text.contains("panic in a function that cannot unwind") {
            eprintln!("spear-fuzz: FATAL (not caught): {last}");
            return;
        }
        let in_parser = info
            .location()
            .is_some_and(|l| l.file().contains("brush-parser"));
        if !in_parser || SHOWN.fetch_add(1, Ordering::Relaxed) < 20 {
            eprintln!("spear-fuzz: {text} (harmless if spear catches it)");
        }
        *last = text;
    }));
}

/// Where the red-team placeholders point: the layout of `spear_testkit::layout`.
pub struct PolicyFixture {
    _dir: TempDir,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub canary: PathBuf,
    layout: layout::Layout,
    pub policy: CommandPolicy,
}

impl PolicyFixture {
    /// Substitutes the red-team placeholders (`{WS}`, `{HOME}`, `{CANARY}`...) so seeds taken
    /// from `testdata/redteam-public-cases.jsonl` name real places in the fixture.
    pub fn substitute(&self, script: &str) -> String {
        self.layout.substitute(script)
    }
}

/// The policy fixture, built on first use: the decision-layer tests' own red-team layout
/// ([`layout`], the same code), with a policy over it.
pub fn policy_fixture() -> &'static PolicyFixture {
    static FIXTURE: OnceLock<PolicyFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (dir, base) = fixture_base("policy");
        let layout = layout::Layout::build(&base);
        let workspace = Workspace::open(&WorkspaceConfig::new(&layout.ws)).expect("workspace");
        let policy = CommandPolicy::new(
            Arc::new(workspace),
            PolicyConfig::new(Some(layout.home.clone())),
        );
        PolicyFixture {
            _dir: dir,
            ws: layout.ws.clone(),
            home: layout.home.clone(),
            canary: layout.canary.clone(),
            layout,
            policy,
        }
    })
}

/// The workspaces the resolve target checks every path against.
pub struct ResolveFixture {
    _dir: TempDir,
    /// The temporary directory holding the tree.
    pub base: PathBuf,
    /// Each workspace with a short description for failure messages.
    pub workspaces: Vec<(&'static str, Workspace)>,
}

impl ResolveFixture {
    /// Substitutes `{BASE}` (the fixture's directory), `{WS}` (the launch directory) and
    /// `{OTHER}` (the extra root), so seeds can name absolute host paths of the fixture.
    pub fn substitute(&self, path: &str) -> String {
        if !path.contains('{') {
            return path.to_owned();
        }
        let base = self.base.to_string_lossy();
        path.replace("{WS}", &format!("{base}/tree/ws"))
            .replace("{OTHER}", &format!("{base}/other"))
            .replace("{BASE}", &base)
    }
}

/// The resolve fixture, built on first use.
///
/// ```text
/// base/
///   tree/                       a build tree (env.sh, scripts/build.sh)
///     ws/                       the launch directory
///       README.md  src/{main.rs,lib.rs}  sub/deeper/file.txt  .git/{config,hooks/}  fifo
///       link-etc -> /etc                       absolute, outside
///       link-ssh -> base/home/.ssh             absolute, outside (credentials)
///       link-main -> src/main.rs               relative, inside, to a file
///       link-src-abs -> base/tree/ws/src       absolute, inside
///       link-sub -> sub/deeper                 relative, inside, to a directory
///       link-up -> ..                          to tree/ (a root or outside, by workspace)
///       link-out -> ../../outside              relative, climbing out
///       link-outfile -> ../../outside/data.txt
///       link-other -> ../../other              to the extra root
///       link-dangling -> missing/dir/file      inside, does not exist
///       link-proc -> /proc/self/root           magic link
///       link-root -> /                         the filesystem root
///       loop-a -> loop-b, loop-b -> loop-a     a loop
///       self-loop -> self-loop
///       chain-1 -> chain-2 -> chain-3 -> sub   a chain
///       sub/deeper/up3 -> ../../..             back to ws/ through the parents
///       sub/back -> ../../ws/src               through the root's own name
///       src/to-main -> ./main.rs
///   other/                      an extra root
///     lib.rs  link-back -> ../tree/ws  link-home -> base/home
///   outside/data.txt   home/.ssh/id_rsa
/// ```
///
/// Workspaces: `ws` alone (identity mounts); `tree` + `other` (the build tree is the primary
/// root, the launch directory below it); the same with the fixed scheme (`/workspace`,
/// `/workspaces/other`); and the fixed scheme with `--allow-absolute-paths`.
pub fn resolve_fixture() -> &'static ResolveFixture {
    static FIXTURE: OnceLock<ResolveFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (dir, base) = fixture_base("resolve");
        for d in [
            "tree/scripts",
            "tree/ws/src",
            "tree/ws/sub/deeper",
            "tree/ws/.git/hooks",
            "other",
            "outside",
            "home/.ssh",
        ] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        write_files(
            &base,
            &[
                ("tree/env.sh", "# build env\n"),
                ("tree/scripts/build.sh", "#!/bin/sh\n"),
                ("tree/ws/README.md", "# fixture\n"),
                ("tree/ws/src/main.rs", "fn main() {}\n"),
                ("tree/ws/src/lib.rs", "pub fn f() {}\n"),
                ("tree/ws/sub/deeper/file.txt", "deep\n"),
                ("tree/ws/.git/config", "[core]\n"),
                ("tree/ws/.git/hooks/pre-commit.sample", "#!/bin/sh\n"),
                ("other/lib.rs", "pub fn g() {}\n"),
                ("outside/data.txt", "outside\n"),
                ("home/.ssh/id_rsa", "not a key\n"),
            ],
        );
        let ws = base.join("tree/ws");
        let links: &[(&str, PathBuf)] = &[
            ("tree/ws/link-etc", "/etc".into()),
            ("tree/ws/link-ssh", base.join("home/.ssh")),
            ("tree/ws/link-main", "src/main.rs".into()),
            ("tree/ws/link-src-abs", ws.join("src")),
            ("tree/ws/link-sub", "sub/deeper".into()),
            ("tree/ws/link-up", "..".into()),
            ("tree/ws/link-out", "../../outside".into()),
            ("tree/ws/link-outfile", "../../outside/data.txt".into()),
            ("tree/ws/link-other", "../../other".into()),
            ("tree/ws/link-dangling", "missing/dir/file".into()),
            ("tree/ws/link-proc", "/proc/self/root".into()),
            ("tree/ws/link-root", "/".into()),
            ("tree/ws/loop-a", "loop-b".into()),
            ("tree/ws/loop-b", "loop-a".into()),
            ("tree/ws/self-loop", "self-loop".into()),
            ("tree/ws/chain-1", "chain-2".into()),
            ("tree/ws/chain-2", "chain-3".into()),
            ("tree/ws/chain-3", "sub".into()),
            ("tree/ws/sub/deeper/up3", "../../..".into()),
            ("tree/ws/sub/back", "../../ws/src".into()),
            ("tree/ws/src/to-main", "./main.rs".into()),
            ("other/link-back", "../tree/ws".into()),
            ("other/link-home", base.join("home")),
        ];
        for (link, target) in links {
            symlink(target, base.join(link)).expect("symlink");
        }
        // A fifo: reading it must neither block nor fail to fail.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .expect("mkfifo");

        let single = WorkspaceConfig {
            single_root: true,
            ..WorkspaceConfig::new(&ws)
        };
        let multi = WorkspaceConfig {
            extra_roots: vec![PathBuf::from("../../other")],
            ..WorkspaceConfig::new(&ws)
        };
        let fixed = WorkspaceConfig {
            mount_scheme: MountSchemeChoice::Fixed,
            ..multi.clone()
        };
        let fixed_abs = WorkspaceConfig {
            allow_absolute_paths: true,
            ..fixed.clone()
        };
        let workspaces = [
            ("single root, identity", single),
            ("build tree + other, identity", multi),
            ("build tree + other, fixed", fixed),
            ("build tree + other, fixed, absolute allowed", fixed_abs),
        ]
        .into_iter()
        .map(|(what, config)| (what, Workspace::open(&config).expect("workspace")))
        .collect::<Vec<_>>();
        assert_eq!(workspaces[0].1.roots().len(), 1, "single root");
        for (what, w) in &workspaces[1..] {
            assert_eq!(w.roots().len(), 2, "{what}: build tree and other");
            assert_eq!(w.roots()[0].host_path(), base.join("tree"), "{what}");
        }
        ResolveFixture {
            _dir: dir,
            base,
            workspaces,
        }
    })
}

/// A fresh temporary directory and its canonical path. The fixture keeps the directory in its
/// `static` for the life of the process (reachable, so LeakSanitizer does not flag it); libFuzzer
/// exits without running destructors, so `scripts/fuzz.sh` points `TMPDIR` at a directory it
/// removes afterwards.
fn fixture_base(what: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("spear-fuzz-{what}-"))
        .tempdir()
        .expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    (dir, base)
}

fn write_files(base: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        std::fs::write(base.join(path), text).expect("write");
    }
}
