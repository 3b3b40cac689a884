//! Issue 32's ordinary work, as the classifier sees it: inline programs judged by what their file
//! calls do (reads run in SAFE, writes into the workspace need `workspace:write`, writes outside
//! every writable place are refused, strings that are not file arguments are no paths), scratch
//! paths from `mktemp` and `$TMPDIR` tracked through variables, and a workspace under /tmp whose
//! parent directory is written.

mod common;

use std::sync::Arc;

use common::Fixture;
use spear_core::{Capability, CommandAssessment, CommandClass};
use spear_policy::{CommandPolicy, PolicyConfig};
use spear_workspace::{Workspace, WorkspaceConfig};

use CommandClass::{Dangerous as D, ReadOnly as R, ShellComplex as C, WorkspaceMutating as M};

/// What SAFE makes of an assessment: it runs when nothing is refused and nothing needs a write
/// of the workspace (the mount keeps the workspace read-only for whatever else it does).
fn safe_runs(a: &CommandAssessment) -> bool {
    a.refusal.is_none() && !a.capabilities.contains(Capability::WorkspaceWrite)
}

/// `(script, class, SAFE runs it)`.
type Case = (&'static str, CommandClass, bool);

fn check(fx_classify: impl Fn(&str) -> CommandAssessment, cases: &[Case]) {
    let mut failures = Vec::new();
    for (script, class, safe) in cases {
        let a = fx_classify(script);
        if a.class != *class || safe_runs(&a) != *safe {
            failures.push(format!(
                "{script:?}: {} (expected {class}), SAFE runs it: {} (expected {safe}) — {}",
                a.class,
                safe_runs(&a),
                a.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Inline programs that only read run in SAFE; those that write the workspace by name need
/// `workspace:write`; those that write outside every writable place are refused.
#[test]
fn inline_programs_by_their_file_calls() {
    let fx = Fixture::new();
    check(
        |s| fx.classify(s),
        &[
            // Reads: SAFE runs them (the mount keeps the workspace read-only all the same).
            (
                "python3 -c \"import json; print(json.load(open('data.json')))\"",
                C,
                true,
            ),
            (
                "python3 -c \"print(open('README.md', 'r').read())\"",
                C,
                true,
            ),
            (
                "python3 -c \"f = 'README.md'; print(open(f, 'r').read())\"",
                C,
                true,
            ),
            (
                "python3 -c \"from pathlib import Path; print(Path('README.md').read_text())\"",
                C,
                true,
            ),
            (
                "python3 -c \"import os; print(sorted(os.listdir('src')))\"",
                C,
                true,
            ),
            (
                "node -e \"console.log(require('./package.json').name)\"",
                C,
                true,
            ),
            (
                "node -e \"const fs = require('fs'); console.log(fs.readFileSync('package.json', 'utf8'))\"",
                C,
                true,
            ),
            ("ruby -e 'puts File.read(\"README.md\")'", C, true),
            (
                "perl -e 'open(my $f, \"<\", \"README.md\"); print <$f>'",
                C,
                true,
            ),
            // A heredoc program: its URL paths are strings, not files.
            (
                "python3 - <<'EOF'\npath = '/admin/auth/foo'\nurls = ['/api/v1/users', '/static/app.js']\nprint(path, urls)\nEOF",
                C,
                true,
            ),
            ("python3 -c \"print('/etc/passwd'.split('/'))\"", C, true),
            // Writes into the workspace, seen: workspace:write.
            ("python3 -c \"open('out.txt', 'w').write('x')\"", C, false),
            (
                "python3 -c \"from pathlib import Path; Path('out.txt').write_text('x')\"",
                C,
                false,
            ),
            (
                "node -e \"require('fs').writeFileSync('out.txt', 'x')\"",
                C,
                false,
            ),
            ("perl -e 'unlink \"README.md\"'", C, false),
            // Writes the program computes: known only when it runs, under the mount.
            (
                "python3 -c \"import sys; open(sys.argv[1], 'w').write('x')\" out.txt",
                C,
                true,
            ),
            // Writes outside every writable place: refused in every mode.
            ("python3 -c \"open('/etc/x', 'w')\"", D, false),
            ("python3 -c \"open('{CANARY}', 'a').write('x')\"", D, false),
            (
                "node -e \"require('fs').writeFileSync('/etc/x', '')\"",
                D,
                false,
            ),
            ("perl -e 'unlink \"/etc/passwd\"'", D, false),
            ("ruby -e 'File.write(\"~/.bashrc\", \"x\")'", D, false),
            // Writes to the sandbox's private /tmp need nothing.
            ("python3 -c \"open('/tmp/x', 'w').write('x')\"", C, true),
            // A credential store read by an inline program is refused as any read of one is.
            (
                "python3 -c \"print(open('{HOME}/.ssh/id_rsa').read())\"",
                D,
                false,
            ),
        ],
    );
}

/// Paths from `mktemp` and `$TMPDIR` held in variables or used directly are private writes.
#[test]
fn scratch_paths_through_variables() {
    let fx = Fixture::new();
    check(
        |s| fx.classify(s),
        &[
            ("d=$(mktemp -d) && tar -x -C \"$d\" -f a.tar", R, true),
            ("d=$(mktemp -d) && cp -r src \"$d\" && ls \"$d\"", R, true),
            ("d=\"$(mktemp -d)\"; cd \"$d\" && touch a b", R, true),
            ("f=$(mktemp); echo x > \"$f\"; cat \"$f\"", R, true),
            (
                "d=$(mktemp -d -t build.XXXXXX); cp README.md \"${d}/\"",
                R,
                true,
            ),
            ("tar -x -C \"$(mktemp -d)\" -f a.tar", R, true),
            (
                "out=$TMPDIR/build; mkdir -p \"$out\" && cp README.md \"$out\"/",
                R,
                true,
            ),
            ("t=/tmp/scratch; mkdir -p $t; cp -r src $t", R, true),
            // A `..` out of the scratch directory is judged where it leads.
            (
                "d=$(mktemp -d); cp README.md \"$d/../../{CANARY}\"",
                D,
                false,
            ),
            // Not known to hold the scratch path where it is used: as before.
            ("d=$(mktemp -d); d=src; cp README.md \"$d\"", C, false),
            ("false || d=$(mktemp -d); cp README.md \"$d\"", C, false),
            (
                "for x in a; do d=$(mktemp -d); done; cp README.md \"$d\"",
                C,
                false,
            ),
            ("(d=$(mktemp -d)); cp README.md \"$d\"", C, false),
            (
                "d=$(mktemp -d); x=d; eval \"$x=src\"; cp README.md \"$d\"",
                C,
                false,
            ),
            ("d=$(mktemp -d); read d; cp README.md \"$d\"", C, false),
            ("TMPDIR=src; d=$(mktemp -d); cp README.md \"$d\"", C, false),
            // mktemp in the working directory makes its entry in the workspace.
            ("d=$(mktemp -d ./tmp.XXXX); cp README.md \"$d\"", C, false),
        ],
    );
}

/// A workspace under /tmp: the sandbox's /tmp is still private, with the workspace bound on top,
/// so writing /tmp itself may reach the workspace: a workspace write (no refusal whose message
/// offers /tmp), and /tmp's other entries stay private.
#[test]
fn a_workspace_under_tmp() {
    let dir = tempfile::tempdir_in("/tmp").expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("src")).expect("ws");
    let home = base.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let workspace = Workspace::open(&WorkspaceConfig::new(&ws)).expect("workspace");
    let policy = CommandPolicy::new(Arc::new(workspace), PolicyConfig::new(Some(home)));
    let classify = |s: &str| policy.classify_script(s, &ws);
    check(
        classify,
        &[
            ("tar -x -C /tmp -f a.tar", M, false),
            ("touch /tmp/x && tar -x -C /tmp/y -f a.tar", R, true),
            ("d=$(mktemp -d) && tar -x -C \"$d\" -f a.tar", R, true),
        ],
    );
    let a = classify("tar -x -C /tmp -f a.tar");
    assert!(a.write_targets.contains(&ws), "{:?}", a.write_targets);
    assert!(
        !a.reason.contains("outside the workspace"),
        "no message calls /tmp outside and offers it: {}",
        a.reason
    );
}

/// A workspace inside a dot directory of the home directory: a write of the home itself may
/// reach the workspace (a workspace write), but one of the dot directory stays refused, as every
/// write of a home dot entry is (programs read them at start-up), whatever it holds.
#[test]
fn a_workspace_under_a_home_dot_directory() {
    let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
    let home = dir.path().canonicalize().expect("canonical").join("home");
    let ws = home.join(".work/ws");
    std::fs::create_dir_all(ws.join("src")).expect("ws");
    let workspace = Workspace::open(&WorkspaceConfig::new(&ws)).expect("workspace");
    let policy = CommandPolicy::new(Arc::new(workspace), PolicyConfig::new(Some(home.clone())));
    let classify =
        |s: &str| policy.classify_script(&s.replace("{H}", &home.to_string_lossy()), &ws);
    check(
        classify,
        &[
            ("tar -x -C {H}/.work -f a.tar", D, false),
            ("cp README.md {H}/.work/", D, false),
            // The positive control: the home itself holds the workspace, and is no dot entry.
            ("tar -x -C {H} -f a.tar", M, false),
        ],
    );
    let refused = classify("tar -x -C {H}/.work -f a.tar");
    assert_eq!(
        refused.refusal.as_ref().map(spear_core::Refusal::rule),
        Some(spear_core::RefusalRule::ProtectedEntry),
        "{}",
        refused.reason
    );
}
