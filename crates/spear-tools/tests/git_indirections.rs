//! Everything git reads as configuration or hooks, by whatever name it is reached, through every
//! tool and through commands, against real repositories (a submodule and a linked worktree
//! outside the workspace included) and the host's own git afterwards.
//!
//! Each planting is a program that touches a canary outside the workspace; the host's `git status`,
//! `commit`, `diff` and `log` are run in the workspace, the submodule and the linked worktree, and
//! the canary must not exist. The positive control plants the same outside spear and sees the
//! canary appear.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::Auto;
use spear_core::{RefusalRule, ToolStatus};

/// A file tool's call that wrote host-run configuration with nobody to ask: not made, and the
/// result says it is host-run configuration.
fn not_approved(e: &spear_tools::ToolResultEnvelope, what: &str) {
    assert_ne!(e.result.status, ToolStatus::Ok, "{what}: {e:?}");
    assert_eq!(
        e.result.refusal.as_ref().map(|r| r.rule()),
        Some(RefusalRule::HostRunConfig),
        "{what}: {e:?}"
    );
}

/// The host's own git, never through spear: what the user does after the agent.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) {
    let out = git(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Everything a user does after the agent, in every repository the workspace reaches.
fn host_git_everywhere(dirs: &[PathBuf]) {
    for dir in dirs {
        if !dir.exists() {
            continue;
        }
        std::fs::write(dir.join("touched-by-user.txt"), "u\n").unwrap();
        for args in [
            &["status"][..],
            &["diff"],
            &["add", "touched-by-user.txt"],
            &["commit", "-qm", "user"],
            &["log", "-1"],
            &["checkout", "-q", "-b", "after"],
        ] {
            let _ = git(dir, args);
        }
    }
}

/// A workspace holding a repository with a submodule and a linked worktree outside it.
struct Repos {
    env: Env,
    canary: PathBuf,
    wt: PathBuf,
}

impl Repos {
    fn new() -> Repos {
        let env = Env::new();
        let lib = env.outside.join("lib-origin");
        std::fs::create_dir_all(&lib).unwrap();
        ok(&lib, &["init", "-q"]);
        std::fs::write(lib.join("lib.txt"), "lib\n").unwrap();
        ok(&lib, &["add", "lib.txt"]);
        ok(&lib, &["commit", "-qm", "lib"]);
        ok(&env.ws, &["init", "-q", "-b", "main"]);
        ok(&env.ws, &["add", "README.md"]);
        ok(&env.ws, &["commit", "-qm", "init"]);
        ok(
            &env.ws,
            &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
        );
        ok(&env.ws, &["commit", "-qm", "submodule"]);
        let wt = env.outside.join("wt");
        ok(
            &env.ws,
            &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()],
        );
        let canary = env.outside.join("CANARY");
        Repos { env, canary, wt }
    }

    fn everywhere(&self) -> Vec<PathBuf> {
        vec![
            self.env.ws.clone(),
            self.env.ws.join("lib"),
            self.wt.clone(),
        ]
    }

    /// A hook or config that touches the canary.
    fn payload(&self, rel: &str) -> String {
        let touch = format!("touch {}", self.canary.display());
        let leaf = Path::new(rel).file_name().unwrap().to_str().unwrap();
        match leaf {
            "commondir" | "gitdir" => format!("{}\n", self.env.ws.join("evil").display()),
            ".git" => format!("gitdir: {}\n", self.env.ws.join("evil").display()),
            "config" | "config.worktree" => {
                format!("[core]\n\tfsmonitor = \"{touch}; false\"\n")
            }
            _ => format!("#!/bin/sh\n{touch}\n"),
        }
    }

    /// An attacker's git directory inside the workspace, for the redirects to point at.
    fn plant_evil_dir(&self) {
        let evil = self.env.ws.join("evil");
        std::fs::create_dir_all(evil.join("hooks")).unwrap();
        std::fs::create_dir_all(evil.join("objects")).unwrap();
        std::fs::create_dir_all(evil.join("refs")).unwrap();
        std::fs::write(evil.join("config"), self.payload("config")).unwrap();
    }
}

/// `git help gitrepository-layout`: the configuration, hook and redirect files of a repository,
/// its linked worktrees and its submodules.
const LAYOUT: &[&str] = &[
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks/pre-commit",
    ".git/hooks/post-checkout",
    ".git/hooks/fsmonitor-watchman",
    ".git/worktrees/wt/commondir",
    ".git/worktrees/wt/gitdir",
    ".git/worktrees/wt/config.worktree",
    ".git/worktrees/wt/hooks/pre-commit",
    ".git/modules/lib/config",
    ".git/modules/lib/commondir",
    ".git/modules/lib/hooks/post-checkout",
    "lib/.git",
];

/// `rel` cannot be written, patched or deleted through the file tools, nor written by a command
/// the classifier cannot see into (the path known only at run time), directly or through a link.
fn refused_through_every_tool(r: &spear_tools::ToolRouter, repos: &Repos, rel: &str) {
    let env = &repos.env;
    let payload = repos.payload(rel);
    let before = std::fs::read(env.path(rel)).ok();
    // The file tools.
    let e = r.call("write_file", json!({"path": rel, "content": payload}));
    not_approved(&e, &format!("write_file {rel}"));
    let patch = if before.is_some() {
        format!("*** Begin Patch\n*** Delete File: {rel}\n*** End Patch\n")
    } else {
        format!("*** Begin Patch\n*** Add File: {rel}\n+x\n*** End Patch\n")
    };
    let e = r.call("patch", json!({ "patch": patch }));
    assert_ne!(e.result.status, ToolStatus::Ok, "patch {rel}: {e:?}");
    if before.is_some() {
        let e = r.call("delete_file", json!({ "path": rel }));
        not_approved(&e, &format!("delete_file {rel}"));
    }
    // A command the classifier cannot see into (the path is known only at run time),
    // directly and through a link.
    env.write("p.txt", &payload);
    env.write("t.txt", rel);
    let e = r.call(
        "terminal",
        json!({"command": "python3 w.py \"$(cat t.txt)\" p.txt"}),
    );
    assert!(e.result.exit_code.is_some(), "it ran: {e:?}");
    assert_eq!(
        std::fs::read(env.path(rel)).ok(),
        before,
        "command {rel}: {e:?}"
    );
    let e = r.call(
        "terminal",
        json!({"command": "ln -sfn \"$PWD/$(cat t.txt)\" via-link && python3 w.py via-link p.txt; \
            ln -sfn \"$(cat t.txt)\" rel-link; ln -sfn \"$PWD/$(cat t.txt)\" abs-link"}),
    );
    assert!(e.result.exit_code.is_some(), "it ran: {e:?}");
    assert_eq!(
        std::fs::read(env.path(rel)).ok(),
        before,
        "link {rel}: {e:?}"
    );
    for link in ["rel-link", "abs-link"] {
        assert!(
            std::fs::symlink_metadata(env.path(link)).is_err(),
            "a link to {rel} is judged as {rel}: {e:?}"
        );
    }
}

/// Ordinary git work in the workspace (init, commit, branch, stash, merge, rebase, clone) runs
/// and lands.
fn ordinary_git_work_goes_on(r: &spear_tools::ToolRouter, env: &Env) {
    for cmd in [
        "git init -q fresh && cd fresh && echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm a",
        "echo change >> README.md && git add README.md && git -c user.name=t -c user.email=t@t commit -qm change",
        "git checkout -q -b feature && echo f > f.txt && git add f.txt && git -c user.name=t -c user.email=t@t commit -qm f",
        "echo wip >> f.txt && git stash -q && git stash pop -q && git checkout -q -- f.txt",
        "git checkout -q main && git -c user.name=t -c user.email=t@t merge -q --no-edit feature",
        "git checkout -q -b topic HEAD~1 && echo t > t.txt && git add t.txt && git -c user.name=t -c user.email=t@t commit -qm t && git -c user.name=t -c user.email=t@t rebase -q main",
    ] {
        let e = r.call("terminal", json!({ "command": cmd }));
        assert_eq!(e.result.status, ToolStatus::Ok, "{cmd}: {e:?}");
        assert!(
            !e.result
                .reason
                .clone()
                .unwrap_or_default()
                .contains("did not let"),
            "{cmd}: {e:?}"
        );
    }
    let log = git(&env.ws, &["log", "--oneline", "topic"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains(" t") && log.contains(" f") && log.contains(" change"),
        "{log}"
    );
    assert!(env.path("fresh/.git/HEAD").exists());
    assert!(
        env.path("fresh/.git/config").exists(),
        "a new repository's own configuration names no program, and lands"
    );
    // A clone is a repository with its remote: what it needs to fetch lands too.
    let e = r.call(
        "terminal",
        json!({"command": "git clone -q \"file://$PWD/fresh\" cloned"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let remote = git(&env.ws.join("cloned"), &["remote", "get-url", "origin"]);
    assert!(
        String::from_utf8_lossy(&remote.stdout).contains("fresh"),
        "{e:?}"
    );
}

#[test]
fn every_config_hook_and_redirect_is_refused_through_every_tool_and_command() {
    let repos = Repos::new();
    let env = &repos.env;
    env.write(
        "w.py",
        "import sys, os\np = sys.argv[1]\nos.makedirs(os.path.dirname(p) or '.', exist_ok=True)\nopen(p, 'w').write(open(sys.argv[2]).read())\n",
    );
    let r = router(env, Opts::mode(Auto));
    for rel in LAYOUT {
        refused_through_every_tool(&r, &repos, rel);
    }
    // Positive control: the same command writes an ordinary file.
    env.write("t.txt", "ordinary.txt");
    let e = r.call(
        "terminal",
        json!({"command": "python3 w.py \"$(cat t.txt)\" p.txt"}),
    );
    assert!(env.path("ordinary.txt").exists(), "{e:?}");
    repos.plant_evil_dir();
    host_git_everywhere(&repos.everywhere());
    assert!(!repos.canary.exists());

    // Ordinary git work in the workspace goes on.
    ordinary_git_work_goes_on(&r, env);
    host_git_everywhere(&repos.everywhere());
    assert!(!repos.canary.exists());
}

/// Positive control of the sweep: the same planting made outside spear does run.
#[test]
fn the_planting_runs_when_made_outside_spear() {
    let repos = Repos::new();
    let hook = repos.env.path(".git/hooks/pre-commit");
    std::fs::write(&hook, repos.payload("pre-commit")).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    host_git_everywhere(&repos.everywhere());
    assert!(repos.canary.exists());
}

/// `.git/commondir` pointing at a directory the command made: by a command, by four `write_file`
/// calls, by one patch. Each is refused, and the host's git reads its own configuration.
#[test]
fn a_commondir_redirect_is_refused_whoever_writes_it() {
    let repos = Repos::new();
    let env = &repos.env;
    let r = router(env, Opts::mode(Auto));
    let config = repos.payload("config");
    let hook = repos.payload("pre-commit");
    let evil = env.ws.join("evil");
    let script = format!(
        "mkdir -p evil/hooks evil/objects evil/refs && printf '%s' '{config}' > evil/config && \
         printf '%s' '{hook}' > evil/hooks/pre-commit && chmod +x evil/hooks/pre-commit && \
         p=.git/common; echo {} > ${{p}}dir",
        evil.display()
    );
    let e = r.call("terminal", json!({ "command": script }));
    assert!(!env.path(".git/commondir").exists(), "{e:?}");
    for (path, content) in [
        ("evil2/config", config.as_str()),
        ("evil2/hooks/pre-commit", hook.as_str()),
        ("evil2/HEAD", "ref: refs/heads/main\n"),
        (".git/commondir", "../evil2\n"),
    ] {
        let _ = r.call("write_file", json!({"path": path, "content": content}));
    }
    assert!(!env.path(".git/commondir").exists());
    let patch = format!(
        "*** Begin Patch\n*** Add File: evil3/config\n+[core]\n+\tfsmonitor = \"touch {}\"\n*** Add File: .git/commondir\n+../evil3\n*** End Patch\n",
        repos.canary.display()
    );
    let e = r.call("patch", json!({ "patch": patch }));
    assert_ne!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(!env.path(".git/commondir").exists());
    assert!(
        !env.path("evil3/config").exists(),
        "a patch is all or nothing"
    );
    host_git_everywhere(&repos.everywhere());
    assert!(!repos.canary.exists());
}

/// The directory `core.hooksPath` names (husky's `.husky/`), a `.git/hooks` that is a link to
/// `../.githooks` (both spellings), and a program the configuration names by a path.
#[test]
fn what_the_repositorys_configuration_names_is_protected() {
    let repos = Repos::new();
    let env = &repos.env;
    ok(&env.ws, &["config", "core.hooksPath", ".husky"]);
    std::fs::create_dir_all(env.path(".husky")).unwrap();
    let r = router(env, Opts::mode(Auto));
    let hook = repos.payload("pre-commit");
    let e = r.call(
        "write_file",
        json!({"path": ".husky/pre-commit", "content": hook}),
    );
    not_approved(&e, ".husky/pre-commit");
    let e = r.call(
        "terminal",
        json!({"command": format!("d=.hus; printf '%s' '{hook}' > ${{d}}ky/pre-commit; chmod +x ${{d}}ky/pre-commit")}),
    );
    assert!(!env.path(".husky/pre-commit").exists(), "{e:?}");
    host_git_everywhere(std::slice::from_ref(&env.ws));
    assert!(!repos.canary.exists());

    // The hooks directory as a link: the name and what it points to.
    ok(&env.ws, &["config", "--unset", "core.hooksPath"]);
    std::fs::remove_dir_all(env.path(".git/hooks")).unwrap();
    std::fs::create_dir_all(env.path(".githooks")).unwrap();
    std::os::unix::fs::symlink("../.githooks", env.path(".git/hooks")).unwrap();
    let r = router(env, Opts::mode(Auto));
    for path in [".git/hooks/pre-commit", ".githooks/pre-commit"] {
        let e = r.call("write_file", json!({"path": path, "content": hook}));
        not_approved(&e, path);
    }
    let e = r.call(
        "terminal",
        json!({"command": format!("g=.git; printf '%s' '{hook}' > $g/hooks/pre-commit; chmod +x $g/hooks/pre-commit")}),
    );
    assert!(!env.path(".githooks/pre-commit").exists(), "{e:?}");

    // A program the configuration names by a path.
    ok(&env.ws, &["config", "core.fsmonitor", "./tools/fsmon.sh"]);
    let r = router(env, Opts::mode(Auto));
    let e = r.call(
        "write_file",
        json!({"path": "tools/fsmon.sh", "content": hook}),
    );
    not_approved(&e, "tools/fsmon.sh");
    let e = r.call(
        "terminal",
        json!({"command": format!("t=tools; mkdir -p $t; printf '%s' '{hook}' > $t/fsmon.sh")}),
    );
    assert!(!env.path("tools/fsmon.sh").exists(), "{e:?}");
    ok(&env.ws, &["config", "--unset", "core.fsmonitor"]);
    host_git_everywhere(std::slice::from_ref(&env.ws));
    assert!(!repos.canary.exists());

    // Positive control: an ordinary directory of the same shape is written.
    let e = r.call(
        "write_file",
        json!({"path": "scripts/pre-commit", "content": hook}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
}
