//! Edge cases and attacks on the tool layer's own bookkeeping: credential files, a workspace that
//! holds the home directory or spear's state, ignore rules rewritten by a command, a session
//! without checkpoints, turn ids, two spellings of one file, files too large to keep, and the
//! router's own bounds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

mod common;

use std::sync::Arc;

use common::{Env, Opts, policy, router, tree};
use serde_json::json;
use spear_core::ExecutionMode::{Auto, Safe};
use spear_core::ToolStatus;
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_runtime::AuditLogger;
use spear_runtime::{CommandRunner, RunnerConfig};
use spear_tools::{RouterConfig, RouterError, RouterStores, ToolRegistry, ToolRouter};
use spear_workspace::{Workspace, WorkspaceConfig};

fn undo(env: &Env) -> Result<spear_runtime::UndoReport, spear_runtime::UndoError> {
    let ws = Workspace::open(&WorkspaceConfig::new(&env.ws)).unwrap();
    env.checkpoints().undo_last(&ws, &ws.fs().unwrap())
}

#[test]
fn credential_files_are_refused_to_the_file_tools() {
    let env = Env::new();
    env.write(".npmrc", "//registry.npmjs.org/:_authToken=npm_secret\n");
    env.write("deploy/.ssh/id_ed25519", "PRIVATE KEY\n");
    env.write("src/id_map.rs", "pub fn id() {}\n");
    let r = router(&env, Opts::mode(Auto));
    let before = tree(&env.ws);
    for (tool, args) in [
        ("read_file", json!({"path": ".npmrc"})),
        ("read_file", json!({"path": "deploy/.ssh/id_ed25519"})),
        ("write_file", json!({"path": ".npmrc", "content": "x"})),
        (
            "write_file",
            json!({"path": "deploy/.ssh/authorized_keys", "content": "x"}),
        ),
        ("delete_file", json!({"path": "deploy/.ssh/id_ed25519"})),
    ] {
        let e = r.call(tool, args.clone());
        assert_eq!(e.result.status, ToolStatus::Denied, "{tool} {args}: {e:?}");
        assert_eq!(
            e.result.rule(),
            Some(spear_core::RefusalRule::CredentialStore),
            "{tool} {args}: {e:?}"
        );
        assert!(!e.result.stdout.contains("secret") && !e.result.stdout.contains("PRIVATE"));
    }
    assert_eq!(tree(&env.ws), before);
    // Positive control: a source file whose name merely starts like a key is read.
    let e = r.call("read_file", json!({"path": "src/id_map.rs"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
}

fn plain_router(
    env: &Env,
    home: Option<std::path::PathBuf>,
    audit: Option<std::path::PathBuf>,
) -> Result<ToolRouter, RouterError> {
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&env.ws)).unwrap());
    let policy = Arc::new(CommandPolicy::new(
        Arc::clone(&workspace),
        PolicyConfig::new(home),
    ));
    let runner = Arc::new(CommandRunner::new(workspace, RunnerConfig::from_host()));
    let stores = RouterStores {
        audit: audit.map(|p| AuditLogger::open(&p).unwrap()),
        ..RouterStores::default()
    };
    ToolRouter::new(
        ToolRegistry::coding(),
        policy,
        runner,
        RouterConfig::new(Safe),
        stores,
    )
}

#[test]
fn a_workspace_holding_home_or_state_is_refused() {
    let env = Env::new();
    // The workspace is the home directory, or holds it.
    let err = plain_router(&env, Some(env.ws.clone()), None)
        .err()
        .unwrap();
    assert!(matches!(err, RouterError::HomeInRoot { .. }), "{err}");
    let err = plain_router(&env, Some(env.ws.join("home/me")), None)
        .err()
        .unwrap();
    assert!(matches!(err, RouterError::HomeInRoot { .. }), "{err}");
    // spear's own state inside the workspace.
    let err = plain_router(
        &env,
        Some(env.home.clone()),
        Some(env.ws.join(".state/audit.jsonl")),
    )
    .err()
    .unwrap();
    assert!(matches!(err, RouterError::StateInRoot { .. }), "{err}");
    // Positive control: home and state outside.
    assert!(
        plain_router(
            &env,
            Some(env.home.clone()),
            Some(env.state.join("audit.jsonl"))
        )
        .is_ok()
    );
}

/// Ignore rules are read once per session: a command that rewrites `.gitignore` neither hides
/// its later changes nor makes files that were there look new (to be removed by put-back or undo).
#[test]
fn rewriting_gitignore_changes_nothing_for_the_tracker() {
    let env = Env::new();
    env.write(".gitignore", "keep/\ngenerated/\n");
    env.write("keep/data.txt", "data\n");
    env.write("generated/out.rs", "// generated\n");
    let r = router(&env, Opts::mode(Auto));
    r.begin_turn(Some("rewrite")).unwrap();
    let e = r.call("terminal", json!({"command": "echo > .gitignore"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(e.result.changed_paths, [".gitignore"], "{e:?}");
    assert_eq!(env.read("generated/out.rs").unwrap(), "// generated\n");
    assert_eq!(env.read("keep/data.txt").unwrap(), "data\n");
    // Hiding a later change behind a new rule does not work either.
    let e = r.call(
        "terminal",
        json!({"command": "echo 'src/' >> .gitignore && mkdir -p src && echo x > src/hidden.rs"}),
    );
    assert!(
        e.result.changed_paths.contains(&"src/hidden.rs".to_owned()),
        "{e:?}"
    );
    undo(&env).unwrap();
    assert_eq!(env.read(".gitignore").unwrap(), "keep/\ngenerated/\n");
    assert_eq!(env.read("keep/data.txt").unwrap(), "data\n");
    assert_eq!(env.read("generated/out.rs").unwrap(), "// generated\n");
    assert!(!env.path("src/hidden.rs").exists());
}

/// Without a checkpoint store nothing can be undone, but every change is still judged before it
/// lands: a writable command runs (as a file tool writes), and a refused change never lands.
#[test]
fn a_session_without_checkpoints_still_judges_every_change() {
    let env = Env::new();
    let mut opts = Opts::mode(Auto);
    opts.stores = false;
    let r = router(&env, opts);
    let e = r.call(
        "terminal",
        json!({"command": "touch made.txt; p=.envr; echo x > ${p}c"}),
    );
    // Host-run configuration the command wrote with nobody to approve it is kept out, and the
    // result is not `ok`: not everything the command did reached the workspace. It exited 0;
    // 126 takes that 0's place, so that no reader of the code alone takes it for success.
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(
        e.result.exit_code,
        Some(spear_core::exit_code::REFUSED),
        "{e:?}"
    );
    assert_eq!(e.result.changed_paths, ["made.txt"], "{e:?}");
    assert!(env.path("made.txt").exists());
    assert!(!env.path(".envrc").exists(), "{e:?}");
    let reason = e.result.reason.unwrap();
    assert!(
        reason.contains(".envrc") && reason.contains("host-run configuration"),
        "{reason}"
    );
}

#[test]
fn turn_ids_are_checked_and_an_undone_turn_starts_afresh() {
    let env = Env::new();
    env.write("a.txt", "a0\n");
    let r = router(&env, Opts::mode(Auto));
    for bad in ["turn.1", "../x", "", &"x".repeat(65)] {
        assert!(r.begin_turn(Some(bad)).is_err(), "{bad}");
    }
    r.begin_turn(Some("t0")).unwrap();
    r.call("write_file", json!({"path": "a.txt", "content": "a1\n"}));
    r.begin_turn(Some("t1")).unwrap();
    r.call("write_file", json!({"path": "a.txt", "content": "a2\n"}));
    undo(&env).unwrap();
    assert_eq!(env.read("a.txt").unwrap(), "a1\n");
    // The same turn id goes on after its undo: the next undo takes exactly that, not t0.
    r.call("write_file", json!({"path": "b.txt", "content": "b\n"}));
    let report = undo(&env).unwrap();
    assert_eq!(report.turn, "t1");
    assert!(!env.path("b.txt").exists());
    assert_eq!(env.read("a.txt").unwrap(), "a1\n", "t0 was not undone");
}

#[test]
fn a_patch_naming_one_file_twice_is_refused() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    let r = router(&env, Opts::mode(Auto));
    let abs = env.path("a.txt");
    let text = format!(
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: {}\n@@\n-three\n+THREE\n*** End Patch\n",
        abs.display()
    );
    // Absolute host paths are accepted here only because the workspace maps roots at their own
    // paths; either way the two spellings are one file.
    let e = r.call("patch", json!({ "patch": text }));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(
        e.result
            .reason
            .clone()
            .unwrap()
            .contains("names one file twice"),
        "{e:?}"
    );
    assert_eq!(env.read("a.txt").unwrap(), "one\ntwo\nthree\n");
}

#[test]
fn files_too_large_to_keep_are_still_changed_and_said_so() {
    let env = Env::new();
    let big = "x".repeat((17 << 20) + 1);
    env.write("big.log", &big);
    let r = router(&env, Opts::mode(Auto));
    let e = r.call("delete_file", json!({"path": "big.log"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(e.result.reason.unwrap().contains("not kept"));
    assert!(!env.path("big.log").exists());
}

#[test]
fn the_routers_own_timeout_bound_holds() {
    let env = Env::new();
    let mut config = RouterConfig::new(Safe);
    config.limits.terminal_max_timeout_secs = 10;
    let workspace = Arc::new(Workspace::open(&WorkspaceConfig::new(&env.ws)).unwrap());
    let runner = Arc::new(CommandRunner::new(
        Arc::clone(&workspace),
        RunnerConfig::from_host(),
    ));
    let r = ToolRouter::new(
        ToolRegistry::coding(),
        policy(&env),
        runner,
        config,
        RouterStores::default(),
    )
    .unwrap();
    let e = r.call("terminal", json!({"command": "true", "timeout": 20}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(e.result.reason.unwrap().contains("1 to 10 seconds"));
    let e = r.call("terminal", json!({"command": "true", "timeout": 10}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
}
