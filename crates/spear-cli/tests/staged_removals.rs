//! What a command's commit may remove on the host, through the real binary, sandbox, overlay and
//! git (issue 31, part 2): only what the command's own view lost, never because of an attribute
//! the command set; never a repository's core; and every removal named and undoable, ignored
//! files and a git directory's included. Each negative probe has a positive control: a real
//! removal of the same entries is seen, named and undone.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use spear_testkit::git;
use support::{Dirs, SpearCommands as _};

/// A repository made by the host's git: tracked sources, an ignored `.env`, one commit.
fn repository() -> Dirs {
    let d = Dirs::with(&[
        ("README.md", "readme\n"),
        (".gitignore", ".env\n"),
        (".env", "API_URL=http://localhost\n"),
    ]);
    std::fs::create_dir_all(d.ws.join("src")).unwrap();
    std::fs::write(d.ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(d.ws.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    git::commit_everything(|| d.command("git"));
    d
}

/// `spear tool terminal` in AUTO: exit status and envelope.
fn auto(d: &Dirs, command: &str) -> Value {
    tool(d, "terminal", &json!({ "command": command }), &["--auto"])
}

fn tool(d: &Dirs, name: &str, args: &Value, flags: &[&str]) -> Value {
    let args = args.to_string();
    let mut words = vec!["tool", name, "--args", &args];
    words.extend_from_slice(flags);
    let out = d.spear(&words).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)))
}

fn undo(d: &Dirs) {
    let out = d.spear(&["undo"]).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Every entry the repository's host copy must keep.
const KEPT: &[&str] = &[
    "README.md",
    ".gitignore",
    ".env",
    "src/main.rs",
    "src/lib.rs",
    ".git/HEAD",
    ".git/config",
    ".git/index",
    ".git/objects",
    ".git/refs/heads/main",
    ".git/logs/HEAD",
];

fn all_kept(ws: &Path) -> Vec<&'static str> {
    KEPT.iter()
        .copied()
        .filter(|rel| std::fs::symlink_metadata(ws.join(rel)).is_err())
        .collect()
}

fn changed(v: &Value) -> Vec<String> {
    v["changed_paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

/// A command that marks a directory "opaque" with an attribute, in either namespace, on the
/// workspace root, a source directory or `.git`, removes nothing: its own view still holds
/// everything, and so does the host. As root the `user.` form reaches the upper layer (the
/// mount ignores it); the `trusted.` form is overlayfs's own and never does.
#[test]
fn an_attribute_a_command_sets_removes_nothing() {
    let d = repository();
    // Each directory, with an entry its own view must still show.
    let dirs = [("src", "main.rs"), (".git", "HEAD"), (".", "README.md")];
    let mut set = [0; 3];
    for name in ["user.overlay.opaque", "trusted.overlay.opaque"] {
        for (i, (dir, inside)) in dirs.iter().enumerate() {
            let script = format!(
                "python3 -c \"import os\ntry:\n    os.setxattr('{dir}', '{name}', b'y')\n    \
                 print('set', os.getxattr('{dir}', '{name}'))\nexcept OSError as e:\n    \
                 print('refused', e.errno)\n\" && ls -A {dir}"
            );
            let v = auto(&d, &script);
            let out = v["stdout"].as_str().unwrap();
            if out.starts_with("set b'y'") {
                set[i] += 1;
            }
            // The command's own view lost nothing.
            assert!(out.lines().any(|l| l == *inside), "{name} on {dir}: {v}");
            assert_eq!(all_kept(&d.ws), Vec::<&str>::new(), "{name} on {dir}: {v}");
            let gone: Vec<String> = changed(&v)
                .into_iter()
                .filter(|p| {
                    KEPT.iter()
                        .any(|k| p == k || k.starts_with(&format!("{p}/")))
                })
                .collect();
            assert!(gone.is_empty(), "{name} on {dir}: {gone:?} in {v}");
        }
    }
    // The probe reached the command's view: on each directory one of the two names could be
    // set (as root `user.`, which the mount ignores; as a user, `user.` escaped by overlayfs).
    assert!(set.iter().all(|n| *n >= 1), "no attribute was set: {set:?}");
    // git still reads the repository as it was.
    let out = d
        .command("git")
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{out:?}");

    // Positive control: a directory the command really replaced loses what it held, on the host
    // too, each removal named; undo puts it back.
    let v = auto(
        &d,
        "rm -rf src && mkdir src && echo 'fn new() {}' > src/new.rs && rm .env",
    );
    assert_eq!(v["status"], "ok", "{v}");
    assert!(!d.ws.join("src/main.rs").exists() && !d.ws.join(".env").exists());
    let named = changed(&v);
    for label in ["src/main.rs", "src/lib.rs", "src/new.rs", ".env"] {
        assert!(named.iter().any(|p| p == label), "{label} in {named:?}");
    }
    undo(&d);
    assert_eq!(all_kept(&d.ws), Vec::<&str>::new());
    assert_eq!(
        std::fs::read_to_string(d.ws.join(".env")).unwrap(),
        "API_URL=http://localhost\n",
        "an ignored file removed is restored"
    );
    assert!(!d.ws.join("src/new.rs").exists());
}

/// No command and no tool removes a repository's core (`HEAD`, `objects`, `refs`, or the git
/// directory itself), whatever removes it; what git removes in ordinary work still goes, named,
/// and undo brings it back.
#[test]
fn a_repositorys_core_is_never_removed() {
    let d = repository();
    std::fs::create_dir_all(d.ws.join("deps")).unwrap();
    let out = d
        .command("git")
        .args(["clone", "-q", ".", "deps/dep"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The paths come from a file: the classifier cannot see them, so only the commit stands
    // between the command and the host (a command naming `.git` is asked about before it runs).
    for (op, path, core) in [
        ("rm", ".git", ".git"),
        ("rm", ".git/HEAD", ".git/HEAD"),
        ("rm", ".git/objects", ".git/objects"),
        ("rm", ".git/refs", ".git/refs"),
        ("rm", "deps", "deps/dep/.git"),
        ("mv", ".git", ".git"),
    ] {
        std::fs::write(d.ws.join("target.txt"), path).unwrap();
        let command = format!(
            "python3 -c \"import os, shutil\np = open('target.txt').read()\nif '{op}' == 'mv': \
             shutil.move(p, 'moved')\nelif os.path.isdir(p): shutil.rmtree(p)\nelse: os.remove(p)\n\" \
             && test ! -e {path}"
        );
        let command = command.as_str();
        let v = auto(&d, command);
        // The command removed it in its view and exited 0; the removal was kept out, so the
        // answer is `denied` with 126, and says the command itself exited 0.
        assert_eq!(v["status"], "denied", "{command}: {v}");
        assert_eq!(v["exit_code"], 126, "{command}: {v}");
        assert!(
            v["reason"]
                .as_str()
                .is_some_and(|r| r.contains("the command itself exited 0")),
            "the command removed it in its view: {v}"
        );
        assert_eq!(all_kept(&d.ws), Vec::<&str>::new(), "{command}: {v}");
        assert!(d.ws.join("deps/dep/.git/HEAD").exists(), "{command}: {v}");
        let reason = v["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(core) && reason.contains("git repository"),
            "{command}: {v}"
        );
    }
    let v = tool(
        &d,
        "delete_file",
        &json!({"path": ".git/HEAD"}),
        &["--auto"],
    );
    assert_eq!(v["status"], "denied", "{v}");
    assert!(d.ws.join(".git/HEAD").exists());
    // Positive control: what git removes itself, and a nested repository's working files, go;
    // each is named, and undo restores them.
    std::fs::write(d.ws.join(".git/ORIG_HEAD"), "0000\n").unwrap();
    let v = auto(&d, "rm .git/ORIG_HEAD .git/index deps/dep/README.md");
    assert_eq!(v["status"], "ok", "{v}");
    for rel in [".git/ORIG_HEAD", ".git/index", "deps/dep/README.md"] {
        assert!(!d.ws.join(rel).exists(), "{rel}");
        assert!(changed(&v).iter().any(|p| p == rel), "{rel} in {v}");
    }
    undo(&d);
    for rel in [".git/ORIG_HEAD", ".git/index", "deps/dep/README.md"] {
        assert!(d.ws.join(rel).exists(), "{rel} restored");
    }
    // What the probes left beside: the file naming their target, and the copy `mv` made of
    // `.git` (all but its host-run configuration, which nobody approved).
    std::fs::remove_file(d.ws.join("target.txt")).unwrap();
    std::fs::remove_dir_all(d.ws.join("moved")).unwrap();
    let out = d
        .command("git")
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "?? deps/\n",
        "{out:?}"
    );
}

/// Removed ignored content past the commit's budget for it (16 MiB) is removed as the command
/// asked, named, and said not to be kept; what fits is kept and undone. Nothing is called
/// restorable that is not.
#[test]
fn removed_ignored_content_past_the_budget_is_said_not_kept() {
    let d = repository();
    std::fs::write(d.ws.join(".gitignore"), ".env\nbuild/\n").unwrap();
    std::fs::create_dir_all(d.ws.join("build")).unwrap();
    std::fs::write(d.ws.join("build/big.bin"), vec![7u8; 20 << 20]).unwrap();
    std::fs::write(d.ws.join("build/small.txt"), "small\n").unwrap();
    let v = auto(&d, "rm -rf build .env");
    assert_eq!(v["status"], "ok", "{v}");
    assert!(!d.ws.join("build").exists() && !d.ws.join(".env").exists());
    let named = changed(&v);
    for label in ["build", ".env"] {
        assert!(named.iter().any(|p| p == label), "{label} in {named:?}");
    }
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not kept") && reason.contains("build/big.bin"),
        "{v}"
    );
    assert!(!reason.contains("small.txt"), "{v}");
    undo(&d);
    assert_eq!(
        std::fs::read_to_string(d.ws.join("build/small.txt")).unwrap(),
        "small\n"
    );
    assert!(d.ws.join(".env").exists());
    assert!(!d.ws.join("build/big.bin").exists(), "it was never kept");
}
