//! The `patch` tool through the router: both formats on real files, all or nothing, every path
//! checked before anything is written, the target policy, ASK's confirmation, and undo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::format_collect)]

mod common;

use common::{Answer, Env, Opts, router, tree};
use serde_json::json;
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::ToolStatus;
use spear_policy::Confirmation;

fn patch(r: &spear_tools::ToolRouter, text: &str) -> spear_tools::ToolResultEnvelope {
    r.call("patch", json!({ "patch": text }))
}

#[test]
fn envelope_add_update_delete_move() {
    let env = Env::new();
    env.write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    env.write("old.txt", "bye\n");
    env.write("mv/from.txt", "moving\nalong\n");
    let r = router(&env, Opts::mode(Auto));
    let e = patch(
        &r,
        "*** Begin Patch\n\
         *** Add File: docs/new.md\n\
         +# New\n\
         +text\n\
         *** Update File: src/main.rs\n\
         @@ fn main() {\n\
         -    println!(\"hi\");\n\
         +    println!(\"hello\");\n\
         *** Delete File: old.txt\n\
         *** Update File: mv/from.txt\n\
         *** Move to: mv/to.txt\n\
         @@\n\
         -along\n\
         +onward\n\
         *** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("docs/new.md").unwrap(), "# New\ntext\n");
    assert_eq!(
        env.read("src/main.rs").unwrap(),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    assert!(!env.path("old.txt").exists());
    assert!(!env.path("mv/from.txt").exists());
    assert_eq!(env.read("mv/to.txt").unwrap(), "moving\nonward\n");
    let mut changed = e.result.changed_paths.clone();
    changed.sort();
    assert_eq!(
        changed,
        [
            "docs/new.md",
            "mv/from.txt",
            "mv/to.txt",
            "old.txt",
            "src/main.rs"
        ]
    );
}

#[test]
fn unified_diff_from_git() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    let r = router(&env, Opts::mode(Auto));
    let e = patch(
        &r,
        concat!(
            "diff --git a/a.txt b/a.txt\n",
            "index 1111111..2222222 100644\n",
            "--- a/a.txt\n",
            "+++ b/a.txt\n",
            "@@ -1,3 +1,3 @@\n",
            " one\n",
            "-two\n",
            "+TWO\n",
            " three\n",
            "diff --git a/b.txt b/b.txt\n",
            "new file mode 100644\n",
            "--- /dev/null\n",
            "+++ b/b.txt\n",
            "@@ -0,0 +1 @@\n",
            "+bee\n",
        ),
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("a.txt").unwrap(), "one\nTWO\nthree\n");
    assert_eq!(env.read("b.txt").unwrap(), "bee\n");
}

#[test]
fn a_hunk_that_does_not_apply_changes_nothing() {
    let env = Env::new();
    env.write("first.txt", "alpha\nbeta\n");
    env.write("second.txt", "gamma\ndelta\n");
    let r = router(&env, Opts::mode(Auto));
    let before = tree(&env.ws);
    let e = patch(
        &r,
        "*** Begin Patch\n\
         *** Update File: first.txt\n\
         @@\n\
         -alpha\n\
         +ALPHA\n\
         *** Add File: third.txt\n\
         +new\n\
         *** Update File: second.txt\n\
         @@\n\
         -no such line\n\
         +x\n\
         *** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    let reason = e.result.reason.unwrap();
    assert!(
        reason.contains("second.txt") && reason.contains("no such line"),
        "{reason}"
    );
    assert_eq!(tree(&env.ws), before, "nothing changed");
    assert!(e.result.changed_paths.is_empty());
}

#[test]
fn every_path_is_checked_before_anything_is_written() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    env.write("generated/g.rs", "g\n");
    std::fs::write(env.outside.join("victim.txt"), "victim\n").unwrap();
    std::os::unix::fs::symlink(&env.outside, env.path("out")).unwrap();
    let r = router(&env, Opts::mode(Auto));
    let ws_before = tree(&env.ws);
    let outside_before = tree(&env.outside);
    for (escape, status) in [
        ("../outside/victim.txt", ToolStatus::InvalidPath),
        ("out/victim.txt", ToolStatus::InvalidPath),
        ("/etc/hostname", ToolStatus::InvalidPath),
        ("generated/g.rs", ToolStatus::Denied),
        (".spear/policy.toml", ToolStatus::Denied),
        // Host-run configuration with nobody to ask: not written.
        (".git/hooks/pre-commit", ToolStatus::Cancelled),
    ] {
        let e = patch(
            &r,
            &format!(
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: {escape}.new\n+x\n*** Update File: {escape}\n@@\n-victim\n+owned\n*** End Patch\n"
            ),
        );
        assert_eq!(e.result.status, status, "{escape}: {e:?}");
    }
    assert_eq!(
        tree(&env.ws),
        ws_before,
        "the first file was not written either"
    );
    assert_eq!(tree(&env.outside), outside_before);
}

#[test]
fn modes_and_confirmation() {
    let env = Env::new();
    env.write("a.txt", "a\n");
    let text = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+\u{202e}b\n*** End Patch\n";
    let r = router(&env, Opts::mode(Safe));
    assert_eq!(patch(&r, text).result.status, ToolStatus::Denied);
    let mut opts = Opts::mode(Ask);
    let (c, seen) = Answer::new(Confirmation::Declined);
    opts.confirmer = Some(c);
    let r = router(&env, opts);
    assert_eq!(patch(&r, text).result.status, ToolStatus::Denied);
    assert_eq!(env.read("a.txt").unwrap(), "a\n");
    // The confirmation is asked about exactly the patch that would apply.
    assert_eq!(seen.lock().unwrap()[0], format!("patch:\n{text}"));
    let mut opts = Opts::mode(Ask);
    opts.confirmer = Some(Answer::new(Confirmation::Approved).0);
    let r = router(&env, opts);
    assert_eq!(patch(&r, text).result.status, ToolStatus::Ok);
    assert_eq!(env.read("a.txt").unwrap(), "\u{202e}b\n");
}

#[test]
fn crlf_and_missing_final_newline_survive() {
    let env = Env::new();
    env.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    env.write("nonl.txt", "x\ny");
    let r = router(&env, Opts::mode(Auto));
    let e = patch(
        &r,
        "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+TWO\n*** Update File: nonl.txt\n@@\n-x\n+X\n*** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(env.read("win.txt").unwrap(), "one\r\nTWO\r\nthree\r\n");
    assert_eq!(env.read("nonl.txt").unwrap(), "X\ny");
}

#[test]
fn a_patch_is_undone_byte_for_byte() {
    let env = Env::new();
    let original = "keep\r\nme\u{00e9}\n\tindented\n";
    env.write("f.txt", original);
    let r = router(&env, Opts::mode(Auto));
    let e = patch(
        &r,
        "*** Begin Patch\n*** Update File: f.txt\n@@\n keep\n-me\u{00e9}\n+changed\n*** Add File: made/n.txt\n+n\n*** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    let ws =
        spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(&env.ws)).unwrap();
    env.checkpoints().undo_last(&ws, &ws.fs().unwrap()).unwrap();
    assert_eq!(
        std::fs::read(env.path("f.txt")).unwrap(),
        original.as_bytes()
    );
    assert!(
        !env.path("made").exists(),
        "the directory the patch made is gone too"
    );
}

#[test]
fn malformed_patches_are_argument_errors() {
    let env = Env::new();
    let r = router(&env, Opts::mode(Auto));
    for text in [
        "",
        "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch\n",
        "*** Begin Patch\n*** Add File: x\n+y\n",
        "just some text\n",
    ] {
        let e = patch(&r, text);
        assert_eq!(e.result.status, ToolStatus::Failed, "{text:?}: {e:?}");
        assert!(
            e.result
                .reason
                .unwrap()
                .contains("the patch cannot be read")
        );
    }
}

/// A Makefile's recipe lines start with a tab; a patch that spells them with spaces matches
/// (whitespace ignored) and is written with the file's tabs, with a warning; `make` then runs it.
/// Control: the same patch's lines as written (spaces) would break the Makefile.
#[test]
fn a_makefile_patched_with_spaces_keeps_its_tabs_and_still_builds() {
    let env = Env::new();
    let makefile = "all: out.txt\n\nout.txt:\n\techo one > out.txt\n\techo two >> out.txt\n";
    env.write("Makefile", makefile);
    let r = router(&env, Opts::mode(Auto));
    let e = patch(
        &r,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n out.txt:\n-    echo one > out.txt\n+    echo uno > out.txt\n     echo two >> out.txt\n*** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert_eq!(
        env.read("Makefile").unwrap(),
        "all: out.txt\n\nout.txt:\n\techo uno > out.txt\n\techo two >> out.txt\n"
    );
    assert!(
        e.result.stdout.contains(
            "warning: Makefile, hunk 1: the patch indents with 4 spaces where the file indents with a tab"
        ),
        "{}",
        e.result.stdout
    );
    if std::path::Path::new("/usr/bin/make").exists() {
        let e = r.call("terminal", json!({"command": "make -s && cat out.txt"}));
        assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
        assert_eq!(e.result.stdout, "uno\ntwo\n");
        // Control: the recipe spelled with spaces, as the patch had it, is what make rejects.
        env.write("Broken.mk", "all:\n    echo uno\n");
        let e = r.call("terminal", json!({"command": "make -s -f Broken.mk"}));
        assert_ne!(e.result.status, ToolStatus::Ok, "{e:?}");
        assert!(e.result.stderr.contains("missing separator"), "{e:?}");
    }
    // An ordinary exact patch: applied as written, no warning.
    let e = patch(
        &r,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n-\techo two >> out.txt\n+\techo dos >> out.txt\n*** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    assert!(!e.result.stdout.contains("warning"), "{}", e.result.stdout);
    assert!(
        env.read("Makefile")
            .unwrap()
            .ends_with("\techo dos >> out.txt\n")
    );
    // Indentation spear cannot carry over: refused, nothing changed.
    let before = env.read("Makefile").unwrap();
    let e = patch(
        &r,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n-    echo uno > out.txt\n+  echo uno > out.txt\n*** End Patch\n",
    );
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(
        e.result
            .reason
            .as_deref()
            .unwrap()
            .contains("Resend the hunk with the file's own indentation"),
        "{e:?}"
    );
    assert_eq!(env.read("Makefile").unwrap(), before);
}
