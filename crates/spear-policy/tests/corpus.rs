//! Every command of the tldr corpus (29,496 real examples) classifies, and the invariants hold on
//! real data: a refusal goes with DANGEROUS and only with it, filesystem:read is always needed, and
//! wrapping a command in `bash -c` never makes it less restricted.

// A test that cannot read its data fails loudly.
#![allow(clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Fixture, rank};
use spear_core::{Capability, CommandClass};

fn commands() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tldr-commands.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("the tldr corpus is in testdata/");
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("valid JSON line");
            v["command"].as_str().expect("a command").to_owned()
        })
        .collect()
}

#[test]
fn every_corpus_command_classifies_consistently() {
    let fx = Fixture::new();
    let commands = commands();
    assert_eq!(commands.len(), 29_496);
    let mut by_class: BTreeMap<CommandClass, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for c in &commands {
        let a = fx.policy.classify_script(c, &fx.ws);
        *by_class.entry(a.class).or_default() += 1;
        if (a.class == CommandClass::Dangerous) != a.refusal.is_some() {
            failures.push(format!("{c:?}: {} with refusal {:?}", a.class, a.refusal));
        }
        if !a.capabilities.contains(Capability::FilesystemRead) {
            failures.push(format!("{c:?}: no filesystem:read"));
        }
        if a.class == CommandClass::ReadOnly && a.capabilities.contains(Capability::WorkspaceWrite)
        {
            failures.push(format!("{c:?}: READ_ONLY yet needs workspace:write"));
        }
        if a.class == CommandClass::WorkspaceMutating
            && !a.capabilities.contains(Capability::WorkspaceWrite)
        {
            failures.push(format!("{c:?}: WORKSPACE_MUTATING without workspace:write"));
        }
        let wrapped = format!("bash -c '{}'", c.replace('\'', "'\\''"));
        let w = fx.policy.classify_script(&wrapped, &fx.ws);
        if rank(w.class) < rank(a.class) {
            failures.push(format!("{c:?}: {} but {} inside bash -c", a.class, w.class));
        }
    }
    eprintln!("tldr corpus classes: {by_class:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    // Usefulness floor: the corpus has a long tail of programs spear does not model, but the
    // everyday ones must still come out READ_ONLY or WORKSPACE_MUTATING.
    assert!(
        by_class.get(&CommandClass::ReadOnly).copied().unwrap_or(0) > 1_000,
        "{by_class:?}"
    );
}

/// The SIGPIPE rewrite runs what the classifier judged: for every corpus command it rewrites,
/// the rewritten script (what bash runs, spear's prelude included) gets the very assessment of
/// the original, and most real pipelines are rewritten (a rewrite that silently gave up would
/// leave `cmd | head` failing).
#[test]
fn the_sigpipe_rewrite_changes_no_verdict() {
    let fx = Fixture::new();
    let (mut piped, mut rewritten) = (0usize, 0usize);
    let mut failures = Vec::new();
    for c in commands() {
        if c.contains(" | ") {
            piped += 1;
        }
        let Some(r) = spear_policy::tolerate_sigpipe(&c) else {
            continue;
        };
        rewritten += 1;
        let (a, b) = (
            fx.policy.classify_script(&c, &fx.ws),
            fx.policy.classify_script(&r, &fx.ws),
        );
        // The whole assessment: class, capabilities, targets, host reads and configuration,
        // refusal, and what the agent and the audit are told (reason, executable summary).
        if a != b {
            failures.push(format!("{c:?}: {a:?} became {b:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert!(
        rewritten * 10 >= piped * 9,
        "{rewritten} of {piped} pipelines rewritten"
    );
}
