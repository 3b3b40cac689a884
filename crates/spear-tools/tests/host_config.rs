//! Host-run configuration through the router and the real sandbox: every catalogue entry, git's
//! includes, husky's and pre-commit's hooks, links, renames and removals. A write is never
//! silent: with nobody to ask it does not reach the workspace and the result is not `ok`; asked
//! and approved it lands; the operator's `[policy] allow_host_config` lets its entry through.
//!
//! The host's own consumers run for real afterwards (git, git's hooks, husky, pre-commit): the
//! canary they would create is absent whenever spear kept the write out, and present in the
//! positive control, where the same write was approved.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::{Ask, Auto};
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::host_config::{CATALOGUE, Match};
use spear_policy::{ConfirmRequest, Confirmation, Confirmer};
use spear_tools::{ToolResultEnvelope, ToolRouter};

/// A confirmer that answers the same every time and keeps every question whole.
struct Recorder {
    answer: Confirmation,
    asked: Arc<Mutex<Vec<ConfirmRequest>>>,
}

fn recorder(answer: Confirmation) -> (Box<Recorder>, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    (
        Box::new(Recorder {
            answer,
            asked: Arc::clone(&asked),
        }),
        asked,
    )
}

impl Confirmer for Recorder {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.asked.lock().unwrap().push(request.clone());
        self.answer
    }
}

/// AUTO, answering `answer` (or with nobody to ask).
fn auto(env: &Env, answer: Option<Confirmation>) -> (ToolRouter, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let mut opts = Opts::mode(Auto);
    let asked = answer.map(|a| {
        let (c, asked) = recorder(a);
        opts.confirmer = Some(c);
        asked
    });
    (router(env, opts), asked.unwrap_or_default())
}

/// A writer the classifier cannot see into: it copies `p.txt` to the path named in `t.txt`
/// (and makes its directories), so only the judge of its staged writes sees where it wrote.
const BLIND: &str = "python3 w.py \"$(cat t.txt)\" p.txt";

fn blind(r: &ToolRouter, env: &Env, rel: &str, content: &str) -> ToolResultEnvelope {
    env.write(
        "w.py",
        "import sys, os\np = sys.argv[1]\nos.makedirs(os.path.dirname(p) or '.', exist_ok=True)\nopen(p, 'w').write(open(sys.argv[2]).read())\n",
    );
    env.write("p.txt", content);
    env.write("t.txt", rel);
    r.call("terminal", json!({ "command": BLIND }))
}

/// The host's own git, as the user runs it after the agent: their home (its global
/// configuration), the system's configuration left out.
fn host_git(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@example.com"])
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env("PATH", clients_path())
        .output()
        .unwrap()
}

/// The test clients' `bin` (husky, pre-commit, node) first on PATH, then the system's.
fn clients_path() -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", clients().display())
}

/// Where `scripts/setup-test-clients.sh` installed the hook managers. Missing is a failure.
fn clients() -> PathBuf {
    let dir = std::env::var_os("SPEAR_TEST_CLIENTS")
        .map_or_else(|| PathBuf::from("/opt/spear-test-clients"), PathBuf::from)
        .join("bin");
    for tool in ["husky", "pre-commit"] {
        assert!(
            dir.join(tool).exists(),
            "{} is missing: run scripts/setup-test-clients.sh once (as root it installs into \
             /opt/spear-test-clients; elsewhere set SPEAR_TEST_CLIENTS)",
            dir.join(tool).display()
        );
    }
    dir
}

fn init_repo(env: &Env) {
    let out = host_git(&env.ws, &env.home, &["init", "-q", "-b", "main"]);
    assert!(out.status.success(), "{out:?}");
    let out = host_git(&env.ws, &env.home, &["add", "README.md"]);
    assert!(out.status.success(), "{out:?}");
    let out = host_git(&env.ws, &env.home, &["commit", "-qm", "init"]);
    assert!(out.status.success(), "{out:?}");
}

/// A file of the entry's by name: its first pattern made concrete.
fn concrete(pattern: &str) -> String {
    let p = pattern.replace('*', "staging");
    if p.ends_with('/') {
        format!("{p}settings.json")
    } else {
        p
    }
}

/// Not written, not `ok`, and the result says it is host-run configuration.
fn kept_out(env: &Env, e: &ToolResultEnvelope, rel: &str) {
    assert!(!env.path(rel).exists(), "{rel}: {e:?}");
    assert_ne!(e.result.status, ToolStatus::Ok, "{rel}: {e:?}");
    let said = e.result.reason.clone().unwrap_or_default();
    assert!(
        said.contains("host-run configuration") && said.contains(rel),
        "{rel}: {said}"
    );
}

/// Row by row: each entry found by name is kept out of the workspace when nobody can approve it,
/// whether a file tool or a command the classifier cannot see into writes it; the operator's
/// allowance of that entry lets the same command's write through (the positive control).
#[test]
fn every_catalogue_row_is_kept_out_unapproved_and_allowed_by_its_entry() {
    let mut rows = 0;
    for entry in CATALOGUE {
        let Match::Names(names, _) = entry.matches else {
            continue;
        };
        let rel = concrete(names[0]);
        let env = Env::new();
        init_repo(&env);
        let (r, _) = auto(&env, None);
        let e = r.call("write_file", json!({"path": rel, "content": "x = 1\n"}));
        assert_eq!(
            e.result.refusal.as_ref().map(|r| r.rule()),
            Some(RefusalRule::HostRunConfig),
            "{}: write_file {rel}: {e:?}",
            entry.id
        );
        assert!(!env.path(&rel).exists(), "{rel}");
        let e = blind(&r, &env, &rel, "x = 1\n");
        kept_out(&env, &e, &rel);
        // The command ran and exited 0; part of what it changed was kept out, so 126 says so.
        assert_eq!(
            e.result.exit_code,
            Some(spear_core::exit_code::REFUSED),
            "the command ran: {e:?}"
        );
        assert!(
            e.result
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("the command itself exited 0")),
            "{e:?}"
        );
        // Positive control: the operator allows this entry, and the same write lands.
        let mut opts = Opts::mode(Auto);
        opts.allow_host_config = vec![entry.id.to_owned()];
        let r = router(&env, opts);
        let e = blind(&r, &env, &rel, "x = 1\n");
        assert_eq!(e.result.status, ToolStatus::Ok, "{}: {e:?}", entry.id);
        assert_eq!(env.read(&rel).as_deref(), Some("x = 1\n"), "{rel}");
        rows += 1;
    }
    assert!(rows >= 25, "{rows} rows by name");
}

/// git's includes: a repository's (existing, not yet made, under a condition that does not hold
/// now, and transitively), and the user's global configuration including a file of the
/// workspace. A `core.fsmonitor` written there with nobody to approve it never runs on the host's
/// `git status`; approved, the same write does (the positive control: the probe sees the effect).
#[test]
fn what_git_includes_is_host_run_existing_or_not() {
    for (rel, how) in [
        ("inc/team.cfg", "an include that exists"),
        ("shared.gitconfig", "an include not made yet"),
        (
            "later.cfg",
            "an includeIf whose condition does not hold now",
        ),
        ("inc/deep.cfg", "included by an included file"),
        ("global.inc", "the user's global configuration includes it"),
    ] {
        for approve in [false, true] {
            let env = Env::new();
            init_repo(&env);
            let canary = env.outside.join("CANARY");
            let git = |args: &[&str]| {
                assert!(
                    host_git(&env.ws, &env.home, args).status.success(),
                    "{args:?}"
                );
            };
            git(&["config", "include.path", "../inc/team.cfg"]);
            git(&["config", "--add", "include.path", "../shared.gitconfig"]);
            git(&["config", "includeIf.onbranch:never.path", "../later.cfg"]);
            env.write("inc/team.cfg", "[include]\n\tpath = deep.cfg\n");
            std::fs::write(
                env.home.join(".gitconfig"),
                format!("[include]\n\tpath = {}\n", env.path("global.inc").display()),
            )
            .unwrap();
            let payload = format!(
                "[core]\n\tfsmonitor = \"touch {}; false\"\n{}",
                canary.display(),
                if rel == "inc/team.cfg" {
                    "[include]\n\tpath = deep.cfg\n"
                } else {
                    ""
                }
            );
            let answer = approve.then_some(Confirmation::Approved);
            let (r, asked) = auto(&env, answer);
            let before = env.read(rel);
            let e = blind(&r, &env, rel, &payload);
            // The condition of the includeIf holds now, as it may any day.
            git(&["checkout", "-q", "-b", "never"]);
            let _ = host_git(&env.ws, &env.home, &["status"]);
            if approve {
                assert_eq!(e.result.status, ToolStatus::Ok, "{how}: {e:?}");
                let asked = asked.lock().unwrap();
                assert_eq!(asked.len(), 1, "{how}: one question");
                assert!(asked[0].after_run, "{how}");
                assert_eq!(asked[0].host_config[0].path, rel, "{how}");
                assert_eq!(asked[0].host_config[0].entry, "git-include", "{how}");
                assert!(
                    canary.exists(),
                    "{how}: the host's git runs what was approved"
                );
            } else {
                assert_eq!(env.read(rel), before, "{how}: {e:?}");
                assert_eq!(e.result.status, ToolStatus::Denied, "{how}: {e:?}");
                assert!(!canary.exists(), "{how}: {e:?}");
            }
        }
    }
}

/// husky, installed by the user on the host (`core.hooksPath = .husky/_`): a `.husky/pre-commit`
/// the agent writes with nobody to approve it never reaches the workspace, and the host's next
/// commit runs nothing; approved, the commit runs it (the positive control).
#[test]
fn husky_hooks_run_through_gits_own_hook_only_when_approved() {
    for approve in [false, true] {
        let env = Env::new();
        init_repo(&env);
        let out = std::process::Command::new(clients().join("husky"))
            .current_dir(&env.ws)
            .env("HOME", &env.home)
            .env("PATH", clients_path())
            .output()
            .unwrap();
        assert!(out.status.success(), "husky: {out:?}");
        let canary = env.outside.join("CANARY");
        let hook = format!("touch {}\n", canary.display());
        let (r, _) = auto(&env, approve.then_some(Confirmation::Approved));
        let e = blind(&r, &env, ".husky/pre-commit", &hook);
        env.write("change.txt", "c\n");
        let _ = host_git(&env.ws, &env.home, &["add", "change.txt"]);
        let _ = host_git(&env.ws, &env.home, &["commit", "-qm", "user"]);
        if approve {
            assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
            assert!(canary.exists(), "the commit ran husky's hook: {e:?}");
        } else {
            kept_out(&env, &e, ".husky/pre-commit");
            assert!(!canary.exists(), "{e:?}");
            // The file tool too.
            let e = r.call(
                "write_file",
                json!({"path": ".husky/pre-commit", "content": hook}),
            );
            assert_ne!(e.result.status, ToolStatus::Ok, "{e:?}");
            assert!(!env.path(".husky/pre-commit").exists());
        }
    }
}

/// pre-commit, installed by the user on the host (`pre-commit install`): a
/// `.pre-commit-config.yaml` naming a local hook, written by the agent with nobody to approve
/// it, never reaches the workspace, and the host's next commit runs nothing; approved, the commit
/// runs the hook (the positive control).
#[test]
fn pre_commit_configuration_runs_through_gits_own_hook_only_when_approved() {
    for approve in [false, true] {
        let env = Env::new();
        init_repo(&env);
        let out = std::process::Command::new(clients().join("pre-commit"))
            .arg("install")
            .current_dir(&env.ws)
            .env("HOME", &env.home)
            .env("PATH", clients_path())
            .output()
            .unwrap();
        assert!(out.status.success(), "pre-commit install: {out:?}");
        let canary = env.outside.join("CANARY");
        let config = format!(
            "repos:\n- repo: local\n  hooks:\n  - id: planted\n    name: planted\n    \
             entry: touch {}\n    language: system\n    pass_filenames: false\n    \
             always_run: true\n",
            canary.display()
        );
        let (r, _) = auto(&env, approve.then_some(Confirmation::Approved));
        let e = blind(&r, &env, ".pre-commit-config.yaml", &config);
        env.write("change.txt", "c\n");
        let _ = host_git(&env.ws, &env.home, &["add", "change.txt"]);
        let _ = host_git(&env.ws, &env.home, &["commit", "-qm", "user"]);
        if approve {
            assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
            assert!(canary.exists(), "the commit ran pre-commit's hook: {e:?}");
        } else {
            kept_out(&env, &e, ".pre-commit-config.yaml");
            assert!(!canary.exists(), "{e:?}");
        }
    }
}

/// When the person is asked, and what they are shown: a command that names the file is asked
/// about before it runs (and its commit does not ask again); one that does not is asked about
/// once its writes are judged, listing each file with what runs it; declined, those writes are
/// kept out, the rest lands, and the result is not `ok`. ASK asks the same.
#[test]
fn the_person_is_asked_once_before_or_after_the_command() {
    let env = Env::new();
    let (r, asked) = auto(&env, Some(Confirmation::Approved));
    let e = r.call("terminal", json!({"command": "echo 'use flake' > .envrc"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read(".envrc").as_deref(), Some("use flake\n"));
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "asked once, before it ran: {asked:?}");
        assert!(!asked[0].after_run);
        assert_eq!(asked[0].host_config[0].path, ".envrc");
        assert_eq!(asked[0].host_config[0].entry, "direnv");
    }
    // Named by nothing the classifier sees: asked after, with the file and what runs it.
    let e = blind(&r, &env, ".vscode/tasks.json", "{}\n");
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert!(asked[1].after_run);
        assert_eq!(asked[1].command, BLIND);
        assert_eq!(asked[1].host_config.len(), 1);
        assert_eq!(asked[1].host_config[0].path, ".vscode/tasks.json");
        assert!(asked[1].host_config[0].why.contains("VS Code"));
    }
    // Declined: kept out, the rest of the command lands, not `ok`.
    let (r, asked) = auto(&env, Some(Confirmation::Declined));
    env.write("t.txt", ".devcontainer/devcontainer.json");
    env.write("p.txt", "{}\n");
    let e = r.call(
        "terminal",
        json!({"command": format!("echo kept > kept.txt; {BLIND}")}),
    );
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert_eq!(env.read("kept.txt").as_deref(), Some("kept\n"));
    kept_out(&env, &e, ".devcontainer/devcontainer.json");
    assert_eq!(e.result.status, ToolStatus::Denied);
    assert_eq!(e.result.changed_paths, ["kept.txt"], "{e:?}");
    let said = e.result.reason.clone().unwrap_or_default();
    assert!(said.contains("declined"), "{said}");
    // Positive control: an ordinary write is not asked about in AUTO.
    let e = blind(&r, &env, "notes/plain.txt", "x\n");
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(asked.lock().unwrap().len(), 1, "nothing more was asked");
    // ASK: the command is asked about, then what it wrote.
    let mut opts = Opts::mode(Ask);
    let (c, asked) = recorder(Confirmation::Approved);
    opts.confirmer = Some(c);
    let r = router(&env, opts);
    let e = blind(&r, &env, ".zed/tasks.json", "[]\n");
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(!asked[0].after_run && asked[0].host_config.is_empty());
    assert!(asked[1].after_run && asked[1].host_config[0].path == ".zed/tasks.json");
}

/// Links and renames onto host-run configuration, a removal of it, and a mode change are writes
/// of it; project configuration inside a package manager's dependency tree is no project's, and
/// lands without a question (the positive control that the judge looks at where it is).
#[test]
fn links_renames_removals_and_dependency_trees() {
    let env = Env::new();
    env.write(".envrc", "export A=1\n");
    env.write(".vscode/settings.json", "{}\n");
    let (r, asked) = auto(&env, None);
    for (what, script, rel) in [
        (
            "a link made by a program",
            "python3 -c \"import os; os.symlink('/tmp/x', '.' + 'mcp.json')\"",
            ".mcp.json",
        ),
        (
            "a rename onto it",
            "echo '{}' > staged.json; d=.cla; mkdir -p ${d}ude; mv staged.json ${d}ude/settings.json",
            ".claude/settings.json",
        ),
    ] {
        let e = r.call("terminal", json!({ "command": script }));
        assert!(
            std::fs::symlink_metadata(env.path(rel)).is_err(),
            "{what}: {e:?}"
        );
        assert_ne!(e.result.status, ToolStatus::Ok, "{what}: {e:?}");
    }
    let mode = |rel: &str| {
        std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(env.path(rel)).unwrap().permissions(),
        ) & 0o777
    };
    let before = mode(".vscode/settings.json");
    let e = r.call(
        "terminal",
        json!({"command": "python3 -c \"import os; os.remove('.env' + 'rc'); os.chmod('.vs' + 'code/settings.json', 0o600)\""}),
    );
    assert_eq!(
        env.read(".envrc").as_deref(),
        Some("export A=1\n"),
        "removal: {e:?}"
    );
    assert_eq!(mode(".vscode/settings.json"), before, "mode: {e:?}");
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_ne!(
        before, 0o600,
        "positive control: the mode would have changed"
    );
    let e = r.call(
        "terminal",
        json!({"command": "p=node_modules/pkg; mkdir -p $p/.husky $p/.vscode; echo x > $p/.husky/pre-commit; echo '{}' > $p/.vscode/settings.json"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(env.path("node_modules/pkg/.husky/pre-commit").exists());
    assert!(asked.lock().unwrap().is_empty());
    // The same outside the dependency tree is host-run.
    let e = r.call(
        "terminal",
        json!({"command": "p=packages/pkg; mkdir -p $p/.husky; echo x > $p/.husky/pre-commit"}),
    );
    kept_out(&env, &e, "packages/pkg/.husky/pre-commit");
}
