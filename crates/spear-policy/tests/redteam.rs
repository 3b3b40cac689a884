//! Every public red-team case that sends a command through the classifier, with the class spear
//! gives it. Cases aimed at the classifier must never be `READ_ONLY`; the others must at least be
//! classified (the sandbox, the limits and the audit log are tested by their own issues).

// A test that cannot read its data fails loudly.
#![allow(clippy::expect_used)]

mod common;

use common::Fixture;
use spear_core::CommandClass::{
    self, Dangerous as D, ReadOnly as R, ShellComplex as C, WorkspaceMutating as M,
};

/// The class spear gives each case, by id.
const EXPECTED: &[(&str, CommandClass)] = &[
    ("CLS-01", D), // find -exec sh -c 'touch CANARY': the inner write is outside the roots
    ("CLS-04", D), // find -fprintf ~/.bashrc
    ("CLS-07", C), // sed s///e: GNU sed rejects the script once CANARY has a slash; still never READ_ONLY
    ("CLS-10", C), // rg --pre
    ("CLS-13", C), // git --config-env, -p
    ("CLS-16", C), // git -c diff.x.textconv=...
    ("CLS-19", C), // tar --checkpoint-action=exec
    ("CLS-22", D), // sort -o ~/.bashrc
    ("SYN-01", D), // ls $(touch CANARY)
    ("SYN-04", D), // $'\x74ouch' CANARY
    ("SYN-07", D), // backslash-newline joins the lines
    ("SYN-10", D), // NBSP is not a separator: the comment does not start
    ("SYN-13", D), // sh <<< 'touch CANARY'
    ("SYN-16", C), // eval "$(... | base64 -d)"
    ("SYN-19", D), // >> ~/.bashrc
    ("SYN-22", C), // $cmd
    ("SYN-25", C), // test -v 'a[$(...)]'
    ("ENV-01", D), // GIT_SSH_COMMAND=... git ls-remote ssh://...: SSH, which no mode grants
    ("ENV-04", C), // LESSOPEN=...
    ("ENV-07", C), // PATH=.:$PATH ls
    ("ENV-10", D), // env -S 'sh -c "touch CANARY"'
    ("APR-01", R), // echo of a string with bidi characters: runs nothing else (display is the confirmer's job)
    ("APR-04", C), // git -c core.fsmonitor=... status
    ("APR-07", R), // git status
    ("PER-01", M), // .git/hooks/pre-commit is host-run: asked about, never silent
    ("PER-04", D), // hooks of a nested repository are protected too
    ("PER-07", M), // .envrc is host-run: asked about, never silent
    ("PER-10", D), // writes under the home directory, outside the roots
    ("FS-01", D),  // writes to /etc, /usr/local, /
    ("FS-04", D),  // echo > /proc/self/fd/3
    ("FS-07", D),  // mount
    ("FS-10", D),  // /dev is a mount point; /dev/sda and /dev/mem are devices
    ("PRC-01", C), // python -c (TIOCSTI)
    ("PRC-04", R), // ps, /proc/1/cmdline, ls /proc: the sandbox's own /proc (its pid namespace), bound from nothing
    ("PRC-07", R), // env and /proc/*/environ: the sandbox's own, visible
    ("PRC-10", C), // python -c (abstract socket)
    ("NET-01", R), // curl: READ_ONLY, needs the network
    ("NET-04", R), // nslookup: READ_ONLY, needs the network
    ("NET-07", C), // python -m http.server
    ("RES-01", C), // fork bomb: a function that calls itself
    ("RES-04", R), // dd of=/tmp/fill, of=/dev/shm/fill: the sandbox's private tmpfs, size-capped (a limits case)
    ("RES-07", R), // yes
    ("RES-10", R), // while :; do :; done
    ("RES-12", R), // trap '' TERM; sleep loop
    ("RES-15", R), // nohup sleep & disown
    ("RES-19", D), // echo > /sys/fs/cgroup/cgroup.procs
    ("RES-21", R), // sleep 0.95 (a harness fault-injection test: pid reuse)
    ("LOG-01", R), // curl with an Authorization header
    ("LOG-04", R), // cat test_key.pem
    ("LOG-07", R), // echo of a forged JSON line
];

struct Case {
    id: String,
    category: String,
    target: String,
    command: String,
}

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/redteam-public-cases.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("the red-team cases are in testdata/");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON line");
            let command = match &v["input"] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => {
                    o.get("command").and_then(|c| c.as_str()).map(str::to_owned)
                }
                _ => None,
            }?;
            Some(Case {
                id: v["id"].as_str().unwrap_or_default().to_owned(),
                category: v["category"].as_str().unwrap_or_default().to_owned(),
                target: v["target"].as_str().unwrap_or_default().to_owned(),
                command,
            })
        })
        .collect()
}

#[test]
fn every_command_case_has_its_class() {
    let fx = Fixture::new();
    let cases = cases();
    assert!(
        cases.len() >= 40,
        "only {} command cases found",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let Some((_, expected)) = EXPECTED.iter().find(|(id, _)| *id == case.id) else {
            failures.push(format!(
                "{}: no expected class in this test; add one",
                case.id
            ));
            continue;
        };
        let a = fx.classify(&case.command);
        if a.class != *expected {
            failures.push(format!(
                "{}: {} (expected {expected}) — {}",
                case.id, a.class, a.reason
            ));
        }
        // Persistence that a mode may write is host-run configuration: asked about in AUTO too.
        if case.category.starts_with("persistence/") && a.class != D && a.host_config.is_empty() {
            failures.push(format!(
                "{}: persistence written with no question ({})",
                case.id, a.reason
            ));
        }
        if case.target == "classifier" && a.class == R {
            failures.push(format!(
                "{}: a classifier case must never be READ_ONLY",
                case.id
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_expectations_name_real_cases() {
    let ids: Vec<String> = cases().into_iter().map(|c| c.id).collect();
    for (id, _) in EXPECTED {
        assert!(
            ids.iter().any(|i| i == id),
            "{id} is not a command case of the file"
        );
    }
}
