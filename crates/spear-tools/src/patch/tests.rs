//! Fixture table (files before, patch, files after or the error), then the focused tests and
//! the round-trip properties.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{
    FileChange, FilePatch, Hunk, HunkLine, MAX_PATCH_BYTES, Patch, PatchError, parse, plan,
};

type Files = BTreeMap<String, Vec<u8>>;

/// The files, keyed by the path with any leading `./` removed (the harness's idea of one file).
fn files(list: &[(&str, &str)]) -> Files {
    list.iter()
        .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
        .collect()
}

fn key(path: &str) -> String {
    path.trim_start_matches("./").to_owned()
}

/// Parses and plans `patch` over `before`; applies the changes to a copy. Also checks that every
/// changed path is one of the patch's paths, and that each path is read once.
fn run(before: &Files, patch: &str) -> Result<(Files, Vec<FileChange>), PatchError> {
    let parsed = parse(patch)?;
    let mut reads: Vec<String> = Vec::new();
    let changes = plan(&parsed, &mut |path: &str| {
        assert!(
            !reads.iter().any(|r| key(r) == key(path)),
            "{path} read twice"
        );
        reads.push(path.to_owned());
        Ok(before.get(&key(path)).cloned())
    })?;
    let paths = parsed.paths();
    let mut after = before.clone();
    for c in &changes {
        assert!(
            paths.contains(&c.path()),
            "{} is not in {paths:?}",
            c.path()
        );
        match c {
            FileChange::Write { path, content } => {
                after.insert(key(path), content.clone());
            }
            FileChange::Delete { path } => {
                assert!(
                    after.remove(&key(path)).is_some(),
                    "deleting missing {path}"
                );
            }
        }
    }
    Ok((after, changes))
}

enum Expect {
    /// Every file after the patch.
    Files(&'static [(&'static str, &'static str)]),
    /// The error's message holds each of these.
    Err(&'static [&'static str]),
}

struct Case {
    name: &'static str,
    before: &'static [(&'static str, &'static str)],
    patch: &'static str,
    expect: Expect,
}

const MAIN_RS: &str = "fn main() {\n    println!(\"hello\");\n}\n";

const CASES: &[Case] = &[
    // ---- The envelope. ----
    Case {
        name: "envelope: add",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: path/new.txt\n+line one\n+line two\n*** End Patch\n",
        expect: Expect::Files(&[("path/new.txt", "line one\nline two\n")]),
    },
    Case {
        name: "envelope: add an empty file",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n",
        expect: Expect::Files(&[("empty.txt", "")]),
    },
    Case {
        name: "envelope: add keeps inner empty lines, drops the separator",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+one\n\n+three\n\n*** End Patch\n",
        expect: Expect::Files(&[("a.txt", "one\n\nthree\n")]),
    },
    Case {
        name: "envelope: delete",
        before: &[("old.txt", "bye\n"), ("keep.txt", "k\n")],
        patch: "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
        expect: Expect::Files(&[("keep.txt", "k\n")]),
    },
    Case {
        name: "envelope: update",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n-    println!(\"hello\");\n+    println!(\"hello, world\");\n }\n*** End Patch\n",
        expect: Expect::Files(&[(
            "src/main.rs",
            "fn main() {\n    println!(\"hello, world\");\n}\n",
        )]),
    },
    Case {
        name: "envelope: the first hunk may omit its @@",
        before: &[("a.txt", "one\ntwo\nthree\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n one\n-two\n+2\n*** End Patch\n",
        expect: Expect::Files(&[("a.txt", "one\n2\nthree\n")]),
    },
    Case {
        name: "envelope: move with changes",
        before: &[("path/a.rs", "let x = 1;\nlet y = 2;\n")],
        patch: "*** Begin Patch\n*** Update File: path/a.rs\n*** Move to: path/b.rs\n@@\n let x = 1;\n-let y = 2;\n+let y = 3;\n*** End Patch\n",
        expect: Expect::Files(&[("path/b.rs", "let x = 1;\nlet y = 3;\n")]),
    },
    Case {
        name: "envelope: move without changes",
        before: &[("a.txt", "same\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n",
        expect: Expect::Files(&[("b.txt", "same\n")]),
    },
    Case {
        name: "envelope: multiple hunks",
        before: &[("l.txt", "a\nb\nc\nd\ne\nf\ng\nh\n")],
        patch: "*** Begin Patch\n*** Update File: l.txt\n@@\n a\n-b\n+B\n c\n@@\n f\n-g\n+G\n h\n*** End Patch\n",
        expect: Expect::Files(&[("l.txt", "a\nB\nc\nd\ne\nf\nG\nh\n")]),
    },
    Case {
        name: "envelope: multiple files",
        before: &[("u.txt", "1\n2\n"), ("d.txt", "x\n")],
        patch: "*** Begin Patch\n*** Add File: n.txt\n+new\n\n*** Update File: u.txt\n@@\n-1\n+one\n 2\n*** Delete File: d.txt\n*** End Patch\n",
        expect: Expect::Files(&[("n.txt", "new\n"), ("u.txt", "one\n2\n")]),
    },
    Case {
        name: "envelope: a context header picks the second of two equal bodies",
        before: &[(
            "f.rs",
            "fn a() {\n    let v = 1;\n}\nfn b() {\n    let v = 1;\n}\n",
        )],
        patch: "*** Begin Patch\n*** Update File: f.rs\n@@ fn b() {\n-    let v = 1;\n+    let v = 2;\n*** End Patch\n",
        expect: Expect::Files(&[(
            "f.rs",
            "fn a() {\n    let v = 1;\n}\nfn b() {\n    let v = 2;\n}\n",
        )]),
    },
    Case {
        name: "envelope: stacked headers narrow in turn",
        before: &[(
            "f.py",
            "class A:\n    def f(self):\n        return 1\nclass B:\n    def g(self):\n        return 1\n    def f(self):\n        return 1\n",
        )],
        patch: "*** Begin Patch\n*** Update File: f.py\n@@ class B:\n@@     def f(self):\n-        return 1\n+        return 2\n*** End Patch\n",
        expect: Expect::Files(&[(
            "f.py",
            "class A:\n    def f(self):\n        return 1\nclass B:\n    def g(self):\n        return 1\n    def f(self):\n        return 2\n",
        )]),
    },
    Case {
        name: "envelope: a header repeated as the first context line",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n fn main() {\n+    init();\n     println!(\"hello\");\n*** End Patch\n",
        expect: Expect::Files(&[(
            "src/main.rs",
            "fn main() {\n    init();\n    println!(\"hello\");\n}\n",
        )]),
    },
    Case {
        name: "envelope: lines added right after a header",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n+    init();\n*** End Patch\n",
        expect: Expect::Files(&[(
            "src/main.rs",
            "fn main() {\n    init();\n    println!(\"hello\");\n}\n",
        )]),
    },
    Case {
        name: "envelope: lines added without any context go to the end",
        before: &[("a.txt", "a\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n+b\n+c\n*** End Patch\n",
        expect: Expect::Files(&[("a.txt", "a\nb\nc\n")]),
    },
    Case {
        name: "fuzzy: trailing whitespace (the file's context text is kept)",
        before: &[("w.txt", "keep   \nold\t\nafter  \n")],
        patch: "*** Begin Patch\n*** Update File: w.txt\n@@\n keep\n-old\n+new\n after\n*** End Patch\n",
        expect: Expect::Files(&[("w.txt", "keep   \nnew\nafter  \n")]),
    },
    Case {
        name: "fuzzy: leading whitespace",
        before: &[("w.py", "def f():\n    x = 1\n    return x\n")],
        patch: "*** Begin Patch\n*** Update File: w.py\n@@\n  x = 1\n- return x\n+    return x + 1\n*** End Patch\n",
        expect: Expect::Files(&[("w.py", "def f():\n    x = 1\n    return x + 1\n")]),
    },
    Case {
        name: "fuzzy: typographic dash, quotes and no-break space",
        before: &[(
            "u.md",
            "Title \u{2014} \u{201C}quoted\u{201D}\nit\u{2019}s\u{00A0}here\nend\n",
        )],
        patch: "*** Begin Patch\n*** Update File: u.md\n@@\n Title - \"quoted\"\n-it's here\n+it is here\n end\n*** End Patch\n",
        expect: Expect::Files(&[(
            "u.md",
            "Title \u{2014} \u{201C}quoted\u{201D}\nit is here\nend\n",
        )]),
    },
    Case {
        name: "fuzzy: never fuzzier (case differs)",
        before: &[("c.txt", "Hello\n")],
        patch: "*** Begin Patch\n*** Update File: c.txt\n@@\n-hello\n+bye\n*** End Patch\n",
        expect: Expect::Err(&["c.txt", "hunk 1", "  hello", "Re-read the file"]),
    },
    Case {
        name: "CRLF file, LF patch: changed and added lines keep CRLF",
        before: &[("w.bat", "@echo off\r\nset A=1\r\nexit\r\n")],
        patch: "*** Begin Patch\n*** Update File: w.bat\n@@\n @echo off\n-set A=1\n+set A=2\n+set B=3\n exit\n*** End Patch\n",
        expect: Expect::Files(&[("w.bat", "@echo off\r\nset A=2\r\nset B=3\r\nexit\r\n")]),
    },
    Case {
        name: "LF file, CRLF patch",
        before: &[("a.txt", "one\ntwo\n")],
        patch: "*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n one\r\n-two\r\n+2\r\n*** End Patch\r\n",
        expect: Expect::Files(&[("a.txt", "one\n2\n")]),
    },
    Case {
        name: "envelope: no newline at end of file is kept",
        before: &[("n.txt", "a\nb")],
        patch: "*** Begin Patch\n*** Update File: n.txt\n@@\n a\n-b\n+c\n*** End Patch\n",
        expect: Expect::Files(&[("n.txt", "a\nc")]),
    },
    Case {
        name: "envelope: lines appended to a file without a final newline",
        before: &[("n.txt", "a")],
        patch: "*** Begin Patch\n*** Update File: n.txt\n@@\n a\n+b\n*** End of File\n*** End Patch\n",
        expect: Expect::Files(&[("n.txt", "a\nb")]),
    },
    Case {
        name: "envelope: a carried-over '\\ No newline' marker drops the final newline",
        before: &[("n.txt", "a\nb\n")],
        patch: "*** Begin Patch\n*** Update File: n.txt\n@@\n a\n-b\n+c\n\\ No newline at end of file\n*** End Patch\n",
        expect: Expect::Files(&[("n.txt", "a\nc")]),
    },
    Case {
        name: "envelope: a unified range after @@ is a line hint",
        before: &[("k.txt", "k\nx\nx\nx\nk\n")],
        patch: "*** Begin Patch\n*** Update File: k.txt\n@@ -5,1 +5,1 @@ fn ignored()\n-k\n+K\n*** End Patch\n",
        expect: Expect::Files(&[("k.txt", "k\nx\nx\nx\nK\n")]),
    },
    Case {
        name: "envelope: End of File anchors the hunk at the end",
        before: &[("e.txt", "x\ny\nx\n")],
        patch: "*** Begin Patch\n*** Update File: e.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch\n",
        expect: Expect::Files(&[("e.txt", "x\ny\nz\n")]),
    },
    Case {
        name: "envelope: End of File with lines that are not at the end",
        before: &[("e.txt", "x\ny\n")],
        patch: "*** Begin Patch\n*** Update File: e.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch\n",
        expect: Expect::Err(&["e.txt", "hunk 1", "not at the end of the file"]),
    },
    Case {
        name: "envelope: ambiguous context takes the first match",
        before: &[("k.txt", "k\nk\n")],
        patch: "*** Begin Patch\n*** Update File: k.txt\n@@\n-k\n+K\n*** End Patch\n",
        expect: Expect::Files(&[("k.txt", "K\nk\n")]),
    },
    Case {
        name: "envelope: each hunk searched after the previous one",
        before: &[("k.txt", "k\nk\nk\n")],
        patch: "*** Begin Patch\n*** Update File: k.txt\n@@\n-k\n+A\n@@\n-k\n+B\n*** End Patch\n",
        expect: Expect::Files(&[("k.txt", "A\nB\nk\n")]),
    },
    Case {
        name: "envelope: a blank line before the next marker is no context",
        before: &[("b.txt", "a\nb\n")],
        patch: "*** Begin Patch\n*** Update File: b.txt\n@@\n-a\n+A\n\n*** End Patch\n",
        expect: Expect::Files(&[("b.txt", "A\nb\n")]),
    },
    Case {
        name: "envelope: an empty line inside a hunk is an empty context line",
        before: &[("b.txt", "a\n\nb\n")],
        patch: "*** Begin Patch\n*** Update File: b.txt\n@@\n a\n\n-b\n+B\n*** End Patch\n",
        expect: Expect::Files(&[("b.txt", "a\n\nB\n")]),
    },
    Case {
        name: "envelope: inside a Markdown fence",
        before: &[("a.txt", "1\n")],
        patch: "```diff\n*** Begin Patch\n*** Update File: a.txt\n-1\n+2\n*** End Patch\n```\n",
        expect: Expect::Files(&[("a.txt", "2\n")]),
    },
    Case {
        name: "envelope: inside a shell heredoc",
        before: &[("a.txt", "1\n")],
        patch: "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n-1\n+2\n*** End Patch\nEOF\n",
        expect: Expect::Files(&[("a.txt", "2\n")]),
    },
    Case {
        name: "same path twice: update, then update and move",
        before: &[("a.txt", "1\n2\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n-1\n+one\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n one\n-2\n+two\n*** End Patch\n",
        expect: Expect::Files(&[("b.txt", "one\ntwo\n")]),
    },
    Case {
        name: "same path twice: delete, then add",
        before: &[("a.txt", "old\n")],
        patch: "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: a.txt\n+new\n*** End Patch\n",
        expect: Expect::Files(&[("a.txt", "new\n")]),
    },
    Case {
        name: "same path twice: two spellings of one file",
        before: &[("src/a.rs", "1\n2\n")],
        patch: "*** Begin Patch\n*** Update File: ./src/a.rs\n-1\n+one\n*** Update File: src//a.rs\n@@\n-2\n+two\n*** End Patch\n",
        expect: Expect::Files(&[("src/a.rs", "one\ntwo\n")]),
    },
    Case {
        name: "same path twice: delete, then update",
        before: &[("a.txt", "x\n")],
        patch: "*** Begin Patch\n*** Delete File: a.txt\n*** Update File: a.txt\n-x\n+y\n*** End Patch\n",
        expect: Expect::Err(&["a.txt", "not found", "earlier in this patch"]),
    },
    Case {
        name: "same path twice: added twice",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+1\n*** Add File: a.txt\n+2\n*** End Patch\n",
        expect: Expect::Err(&["a.txt: already exists"]),
    },
    Case {
        name: "move onto an existing file",
        before: &[("a.txt", "a\n"), ("b.txt", "b\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n",
        expect: Expect::Err(&["a.txt: cannot move to b.txt", "already exists"]),
    },
    Case {
        name: "move onto a file deleted earlier in the patch",
        before: &[("a.txt", "a\n"), ("b.txt", "b\n")],
        patch: "*** Begin Patch\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n",
        expect: Expect::Files(&[("b.txt", "a\n")]),
    },
    // ---- Unified diffs. ----
    Case {
        name: "git diff: update",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "diff --git a/src/main.rs b/src/main.rs\nindex 7527576..2e6431c 100644\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hello\");\n+    println!(\"hello, world\");\n }\n",
        expect: Expect::Files(&[(
            "src/main.rs",
            "fn main() {\n    println!(\"hello, world\");\n}\n",
        )]),
    },
    Case {
        name: "git diff: rename with changes, new file, deleted file, no newline",
        before: &[
            ("letters.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"),
            ("gone.txt", "old\ncontent\n"),
            ("nonl.txt", "line1\nlast"),
        ],
        patch: GIT_MULTI,
        expect: Expect::Files(&[
            ("abc.txt", "a\nb\nC\nd\ne\nf\ng\nh\nI\nj\n"),
            ("added.txt", "brand\nnew\n"),
            ("nonl.txt", "line1\nlast\n"),
        ]),
    },
    Case {
        name: "git diff: pure rename, empty new file, newline removed at the end",
        before: &[("abc.txt", "a\n"), ("nonl.txt", "line1\nlast\n")],
        patch: GIT_RENAME_EMPTY,
        expect: Expect::Files(&[
            ("empty.txt", ""),
            ("moved.txt", "a\n"),
            ("nonl.txt", "line1\nlast"),
        ]),
    },
    Case {
        name: "git diff: quoted path with a space",
        before: &[("sp ace.txt", "1\n")],
        patch: "diff --git \"a/sp ace.txt\" \"b/sp ace.txt\"\n--- \"a/sp ace.txt\"\n+++ \"b/sp ace.txt\"\n@@ -1 +1 @@\n-1\n+2\n",
        expect: Expect::Files(&[("sp ace.txt", "2\n")]),
    },
    Case {
        name: "git diff: deleted empty file has no hunk",
        before: &[("e.txt", "")],
        patch: "diff --git a/e.txt b/e.txt\ndeleted file mode 100644\nindex e69de29..0000000\n",
        expect: Expect::Files(&[]),
    },
    Case {
        name: "diff -u: plain names with timestamps",
        before: &[("app.c", "int x;\nint y;\n")],
        patch: "--- app.c.orig\t2024-05-01 10:00:00.000000000 +0200\n+++ app.c\t2024-05-01 10:01:00.000000000 +0200\n@@ -1,2 +1,2 @@\n int x;\n-int y;\n+long y;\n",
        expect: Expect::Files(&[("app.c", "int x;\nlong y;\n")]),
    },
    Case {
        name: "unified: a preamble (commit message) before the diff is skipped",
        before: &[("a.txt", "1\n")],
        patch: "From 123 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] change\n\n---\n a.txt | 2 +-\n\ndiff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-1\n+2\n-- \n2.43.0\n",
        expect: Expect::Files(&[("a.txt", "2\n")]),
    },
    Case {
        name: "unified: line numbers are hints; context decides",
        before: &[("s.txt", "n1\nn2\nn3\nn4\nn5\nalpha\nbeta\ngamma\n")],
        patch: "--- a/s.txt\n+++ b/s.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n",
        expect: Expect::Files(&[("s.txt", "n1\nn2\nn3\nn4\nn5\nalpha\nBETA\ngamma\n")]),
    },
    Case {
        name: "unified: of two matches the one near the stated line wins",
        before: &[("k.txt", "k\na\nb\nc\nd\ne\nf\nk\n")],
        patch: "--- a/k.txt\n+++ b/k.txt\n@@ -8 +8 @@\n-k\n+K\n",
        expect: Expect::Files(&[("k.txt", "k\na\nb\nc\nd\ne\nf\nK\n")]),
    },
    Case {
        name: "unified: several hunks, shifted by the same offset",
        before: &[("m.txt", "x\nx\na\nb\nc\nd\ne\nf\ng\nh\n")],
        patch: "--- a/m.txt\n+++ b/m.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -6,2 +6,2 @@\n f\n-g\n+G\n",
        expect: Expect::Files(&[("m.txt", "x\nx\na\nB\nc\nd\ne\nf\nG\nh\n")]),
    },
    Case {
        name: "unified: line numbers far off, function text after @@ ignored",
        before: &[("f.rs", "fn a() {}\nfn b() {\n    1\n}\n")],
        patch: "--- a/f.rs\n+++ b/f.rs\n@@ -120,3 +120,3 @@ fn nowhere() {\n fn b() {\n-    1\n+    2\n }\n",
        expect: Expect::Files(&[("f.rs", "fn a() {}\nfn b() {\n    2\n}\n")]),
    },
    Case {
        name: "unified: wrong counts (too many, then too few)",
        before: &[("c.txt", "a\nb\nc\nd\ne\nf\n")],
        patch: "--- a/c.txt\n+++ b/c.txt\n@@ -1,9 +1,9 @@\n a\n-b\n+B\n@@ -4,1 +4,1 @@\n d\n-e\n+E\n f\n",
        expect: Expect::Files(&[("c.txt", "a\nB\nc\nd\nE\nf\n")]),
    },
    Case {
        name: "unified: bare @@ without line numbers",
        before: &[("c.txt", "a\nb\n")],
        patch: "--- a/c.txt\n+++ b/c.txt\n@@\n a\n-b\n+c\n",
        expect: Expect::Files(&[("c.txt", "a\nc\n")]),
    },
    Case {
        name: "unified: removed '-- x' and added '++ y' lines are no file header",
        before: &[("h.txt", "-- x\nmid\nz\n")],
        patch: "--- a/h.txt\n+++ b/h.txt\n@@ -1 +1 @@\n--- x\n+++ y\n@@ -3 +3 @@\n-z\n+Z\n",
        expect: Expect::Files(&[("h.txt", "++ y\nmid\nZ\n")]),
    },
    Case {
        name: "unified: -U0 insertion after a stated line",
        before: &[("i.txt", "a\nb\nc\n")],
        patch: "--- a/i.txt\n+++ b/i.txt\n@@ -2,0 +3,1 @@\n+new\n",
        expect: Expect::Files(&[("i.txt", "a\nb\nnew\nc\n")]),
    },
    Case {
        name: "unified: CRLF file",
        before: &[("w.txt", "a\r\nb\r\n")],
        patch: "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,3 @@\n a\n-b\n+B\n+C\n",
        expect: Expect::Files(&[("w.txt", "a\r\nB\r\nC\r\n")]),
    },
    Case {
        name: "unified: no newline at the end kept when the diff does not touch it",
        before: &[("n.txt", "a\nb\nc\nd\ne\nf\ng\nh")],
        patch: "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n",
        expect: Expect::Files(&[("n.txt", "A\nb\nc\nd\ne\nf\ng\nh")]),
    },
    Case {
        name: "unified: add and delete through /dev/null without git headers",
        before: &[("old.txt", "x\n")],
        patch: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+1\n+2\n\\ No newline at end of file\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        expect: Expect::Files(&[("new.txt", "1\n2")]),
    },
    // ---- Refusals. ----
    Case {
        name: "a hunk that does not apply names the file, the hunk and its lines",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "*** Begin Patch\n*** Update File: src/main.rs\n@@\n fn main() {\n-    println!(\"bye\");\n+    println!(\"hi\");\n*** End Patch\n",
        expect: Expect::Err(&[
            "src/main.rs: hunk 1 does not apply",
            "these lines were not found in the file",
            "  fn main() {\n  println!(\"bye\");",
            "Re-read the file",
        ]),
    },
    Case {
        name: "the second hunk does not apply",
        before: &[("l.txt", "a\nb\nc\n")],
        patch: "*** Begin Patch\n*** Update File: l.txt\n@@\n-a\n+A\n@@\n-zzz\n+y\n*** End Patch\n",
        expect: Expect::Err(&["l.txt: hunk 2", "not found after line 1", "  zzz"]),
    },
    Case {
        name: "hunks out of order",
        before: &[("l.txt", "a\nb\nc\n")],
        patch: "*** Begin Patch\n*** Update File: l.txt\n@@\n-c\n+C\n@@\n-a\n+A\n*** End Patch\n",
        expect: Expect::Err(&["hunk 2", "before the previous hunk", "file's order"]),
    },
    Case {
        name: "a context header that is not in the file",
        before: &[("src/main.rs", MAIN_RS)],
        patch: "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn nope() {\n-}\n+};\n*** End Patch\n",
        expect: Expect::Err(&[
            "src/main.rs: hunk 1",
            "'@@ fn nope() {' was not found in the file",
        ]),
    },
    Case {
        name: "add a file that exists",
        before: &[("a.txt", "x\n")],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+y\n*** End Patch\n",
        expect: Expect::Err(&[
            "a.txt: already exists",
            "*** Update File: a.txt",
            "write_file",
        ]),
    },
    Case {
        name: "update a missing file",
        before: &[],
        patch: "*** Begin Patch\n*** Update File: src/missing.rs\n@@\n-a\n+b\n*** End Patch\n",
        expect: Expect::Err(&[
            "src/missing.rs: file not found",
            "*** Add File: src/missing.rs",
        ]),
    },
    Case {
        name: "delete a missing file",
        before: &[],
        patch: "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch\n",
        expect: Expect::Err(&["nope.txt: file not found"]),
    },
    Case {
        name: "unified: update a missing file",
        before: &[],
        patch: "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n",
        expect: Expect::Err(&["x.txt: file not found"]),
    },
    Case {
        name: "missing End Patch",
        before: &[("a.txt", "1\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n-1\n+2\n",
        expect: Expect::Err(&["patch line 5", "without '*** End Patch'"]),
    },
    Case {
        name: "a junk line between sections",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+1\n*** Frobnicate File: b.txt\n*** End Patch\n",
        expect: Expect::Err(&[
            "patch line 4",
            "expected '*** Add File: <path>'",
            "Frobnicate",
        ]),
    },
    Case {
        name: "a junk line inside a hunk",
        before: &[("a.txt", "1\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-1\nwhat is this\n+2\n*** End Patch\n",
        expect: Expect::Err(&["patch line 5", "expected a hunk line starting with ' '"]),
    },
    Case {
        name: "a line of an added file without '+'",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+1\nno plus\n*** End Patch\n",
        expect: Expect::Err(&["patch line 4", "starts with '+'"]),
    },
    Case {
        name: "text after End Patch",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a.txt\n+1\n*** End Patch\nmore\n",
        expect: Expect::Err(&["patch line 5", "after '*** End Patch'"]),
    },
    Case {
        name: "an update without hunks",
        before: &[("a.txt", "1\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n*** End Patch\n",
        expect: Expect::Err(&["patch line 2", "has no hunks"]),
    },
    Case {
        name: "a hunk header without lines",
        before: &[("a.txt", "1\n")],
        patch: "*** Begin Patch\n*** Update File: a.txt\n@@ fn x\n*** End Patch\n",
        expect: Expect::Err(&["patch line 3", "no lines"]),
    },
    Case {
        name: "empty patch",
        before: &[],
        patch: "  \n\n",
        expect: Expect::Err(&["changes no file"]),
    },
    Case {
        name: "an envelope without files",
        before: &[],
        patch: "*** Begin Patch\n*** End Patch\n",
        expect: Expect::Err(&["changes no file"]),
    },
    Case {
        name: "not a patch",
        before: &[],
        patch: "\nplease change the file\n",
        expect: Expect::Err(&[
            "patch line 2",
            "expected '*** Begin Patch' or a unified diff",
        ]),
    },
    Case {
        name: "text before Begin Patch",
        before: &[],
        patch: "Here is the patch:\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n",
        expect: Expect::Err(&["patch line 1", "must start with '*** Begin Patch' (line 2)"]),
    },
    Case {
        name: "an empty path",
        before: &[],
        patch: "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch\n",
        expect: Expect::Err(&["patch line 2", "the path is empty"]),
    },
    Case {
        name: "a path with a NUL byte",
        before: &[],
        patch: "*** Begin Patch\n*** Add File: a\0b.txt\n+x\n*** End Patch\n",
        expect: Expect::Err(&["patch line 2", "NUL byte"]),
    },
    Case {
        name: "git: a quoted path with an escaped NUL or line break",
        before: &[("a.txt", "1\n")],
        patch: "--- \"a/a\\nb\"\n+++ \"b/a\\nb\"\n@@ -1 +1 @@\n-1\n+2\n",
        expect: Expect::Err(&["patch line 1", "line break"]),
    },
    Case {
        name: "git: a binary diff",
        before: &[("i.png", "x")],
        patch: "diff --git a/i.png b/i.png\nindex 1..2 100644\nBinary files a/i.png and b/i.png differ\n",
        expect: Expect::Err(&["patch line 3", "binary diffs are not supported"]),
    },
    Case {
        name: "unified: a hunk before any header",
        before: &[],
        patch: "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nnot a hunk line\n@@ -3 +3 @@\n-c\n+d\n",
        expect: Expect::Err(&["patch line 8", "outside any file section"]),
    },
    Case {
        name: "a file holding NUL bytes is not updated",
        before: &[("n.bin", "a\0b\n")],
        patch: "*** Begin Patch\n*** Update File: n.bin\n@@\n+c\n*** End Patch\n",
        expect: Expect::Err(&["n.bin: not a text file", "contains NUL bytes", "write_file"]),
    },
];

const GIT_MULTI: &str = "\
diff --git a/letters.txt b/abc.txt
similarity index 80%
rename from letters.txt
rename to abc.txt
index 92dfa21..ef618ad 100644
--- a/letters.txt
+++ b/abc.txt
@@ -1,10 +1,10 @@
 a
 b
-c
+C
 d
 e
 f
 g
 h
-i
+I
 j
diff --git a/added.txt b/added.txt
new file mode 100644
index 0000000..5786b13
--- /dev/null
+++ b/added.txt
@@ -0,0 +1,2 @@
+brand
+new
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index c5e08f7..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-old
-content
diff --git a/nonl.txt b/nonl.txt
index f64286b..48f8e59 100644
--- a/nonl.txt
+++ b/nonl.txt
@@ -1,2 +1,2 @@
 line1
-last
\\ No newline at end of file
+last
";

const GIT_RENAME_EMPTY: &str = "\
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/abc.txt b/moved.txt
similarity index 100%
rename from abc.txt
rename to moved.txt
diff --git a/nonl.txt b/nonl.txt
index 48f8e59..f64286b 100644
--- a/nonl.txt
+++ b/nonl.txt
@@ -1,2 +1,2 @@
 line1
-last
+last
\\ No newline at end of file
";

#[test]
fn fixture_cases() {
    assert!(CASES.len() >= 30);
    let mut failures = Vec::new();
    for case in CASES {
        let before = files(case.before);
        let got = run(&before, case.patch);
        match (&case.expect, got) {
            (Expect::Files(want), Ok((after, _))) => {
                if after != files(want) {
                    failures.push(format!(
                        "{}: files differ\n want {:?}\n got  {:?}",
                        case.name,
                        show(&files(want)),
                        show(&after)
                    ));
                }
            }
            (Expect::Files(_), Err(e)) => {
                failures.push(format!("{}: unexpected error: {e}", case.name));
            }
            (Expect::Err(parts), Err(e)) => {
                let msg = e.to_string();
                for part in *parts {
                    if !msg.contains(part) {
                        failures.push(format!("{}: {part:?} not in {msg:?}", case.name));
                    }
                }
            }
            (Expect::Err(_), Ok((after, changes))) => failures.push(format!(
                "{}: applied ({changes:?}), giving {:?}",
                case.name,
                show(&after)
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn show(files: &Files) -> BTreeMap<&str, String> {
    files
        .iter()
        .map(|(k, v)| (k.as_str(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

#[test]
fn a_failure_in_the_second_file_plans_nothing() {
    let before = files(&[("one.txt", "1\n"), ("two.txt", "2\n")]);
    let first = "*** Update File: one.txt\n-1\n+uno\n";
    // Positive control: the first file's section applies on its own.
    let (after, changes) =
        run(&before, &format!("*** Begin Patch\n{first}*** End Patch\n")).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(after["one.txt"], b"uno\n");
    // With a second section that does not apply, no change at all comes out.
    let patch =
        format!("*** Begin Patch\n{first}*** Update File: two.txt\n-nope\n+x\n*** End Patch\n");
    let err = run(&before, &patch).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("two.txt: hunk 1 does not apply"),
        "{err}"
    );
}

#[test]
fn non_utf8_files_are_not_updated_but_may_be_deleted_or_moved() {
    let latin1 = b"caf\xe9\n".to_vec();
    let read = |_: &str| Ok(Some(latin1.clone()));
    let update = parse("*** Begin Patch\n*** Update File: l.txt\n@@\n+x\n*** End Patch\n").unwrap();
    let err = plan(&update, &mut { read }).unwrap_err();
    assert_eq!(
        err,
        PatchError::NotText {
            path: "l.txt".into(),
            why: "not valid UTF-8"
        }
    );
    assert!(err.to_string().contains("write_file"));
    // Positive controls: the same file may be deleted, or moved unchanged.
    let delete = parse("*** Begin Patch\n*** Delete File: l.txt\n*** End Patch\n").unwrap();
    assert_eq!(
        plan(&delete, &mut { read }).unwrap(),
        vec![FileChange::Delete {
            path: "l.txt".into()
        }]
    );
    let moved =
        parse("*** Begin Patch\n*** Update File: l.txt\n*** Move to: m.txt\n*** End Patch\n")
            .unwrap();
    let mut read_moved = |p: &str| Ok((p == "l.txt").then(|| latin1.clone()));
    assert_eq!(
        plan(&moved, &mut read_moved).unwrap(),
        vec![
            FileChange::Write {
                path: "m.txt".into(),
                content: latin1.clone()
            },
            FileChange::Delete {
                path: "l.txt".into()
            },
        ]
    );
}

#[test]
fn a_read_error_stops_the_plan() {
    let patch =
        parse("*** Begin Patch\n*** Delete File: a\n*** Delete File: b\n*** End Patch\n").unwrap();
    let err = plan(&patch, &mut |p: &str| {
        if p == "b" {
            Err("permission denied".to_owned())
        } else {
            Ok(Some(b"x".to_vec()))
        }
    })
    .unwrap_err();
    assert_eq!(err.to_string(), "b: could not be read: permission denied");
}

#[test]
fn a_patch_over_the_limit_is_refused_before_parsing() {
    let mut big = String::from("*** Begin Patch\n*** Add File: a\n");
    while big.len() <= MAX_PATCH_BYTES {
        big.push_str("+0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n");
    }
    assert!(matches!(parse(&big), Err(PatchError::TooLarge { .. })));
    // Positive control: just under the limit parses.
    big.truncate(MAX_PATCH_BYTES - 100);
    let cut = big.rfind('\n').unwrap();
    big.truncate(cut + 1);
    big.push_str("*** End Patch\n");
    assert!(parse(&big).is_ok());
}

#[test]
fn parse_gives_the_structure_and_paths() {
    let p = parse(
        "*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: a.rs\n*** Move to: b.rs\n@@ fn f()\n ctx\n-old\n+new\n*** End of File\n*** Delete File: n.txt\n*** End Patch\n",
    )
    .unwrap();
    assert_eq!(
        p,
        Patch {
            files: vec![
                FilePatch::Add {
                    path: "n.txt".into(),
                    content: "x\n".into()
                },
                FilePatch::Update {
                    path: "a.rs".into(),
                    move_to: Some("b.rs".into()),
                    hunks: vec![Hunk {
                        context: vec!["fn f()".into()],
                        line_hint: None,
                        lines: vec![
                            HunkLine::Context("ctx".into()),
                            HunkLine::Remove("old".into()),
                            HunkLine::Add("new".into()),
                        ],
                        end_of_file: true,
                        final_newline: None,
                    }],
                },
                FilePatch::Delete {
                    path: "n.txt".into()
                },
            ]
        }
    );
    assert_eq!(p.paths(), vec!["n.txt", "a.rs", "b.rs"]);
}

#[test]
fn unified_no_newline_markers_set_the_final_newline() {
    let p = parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n").unwrap();
    let FilePatch::Update { hunks, .. } = &p.files[0] else {
        panic!("{p:?}")
    };
    assert_eq!(hunks[0].final_newline, Some(true));
    assert!(hunks[0].end_of_file);
    assert_eq!(hunks[0].line_hint, Some(0));
}

#[test]
fn writes_come_before_deletes_and_unchanged_files_are_left_alone() {
    let before = files(&[("a.txt", "1\n"), ("c.txt", "c\n")]);
    let (_, changes) = run(
        &before,
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** Update File: c.txt\n-c\n+c\n*** End Patch\n",
    )
    .unwrap();
    assert_eq!(
        changes,
        vec![
            FileChange::Write {
                path: "b.txt".into(),
                content: b"1\n".to_vec()
            },
            FileChange::Delete {
                path: "a.txt".into()
            },
        ]
    );
}

#[test]
fn a_bom_is_kept_out_of_the_first_line() {
    let before = files(&[("b.txt", "\u{feff}first\nsecond\n")]);
    let (after, _) = run(
        &before,
        "*** Begin Patch\n*** Update File: b.txt\n-first\n+1st\n*** End Patch\n",
    )
    .unwrap();
    assert_eq!(after["b.txt"], "\u{feff}1st\nsecond\n".as_bytes());
}

// ---- Round trips: a random edit, written as a patch, reproduces the edited file exactly. ----

/// Lines chosen to repeat often and to look like patch syntax.
const LINE_POOL: &[&str] = &[
    "",
    " ",
    "a",
    "b",
    "k",
    "k",
    "  indented",
    "trailing  ",
    "fn x() {",
    "}",
    "-- x",
    "++ y",
    "--- z",
    "+++ w",
    "@@ q",
    "\\ n",
    "*** End Patch",
    "*** End of File",
    "@@",
    "\t",
];

#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Insert(usize, &'static str),
    Replace(usize, &'static str),
}

fn line() -> impl Strategy<Value = &'static str> {
    prop::sample::select(LINE_POOL)
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), line()).prop_map(|(i, l)| Edit::Insert(i, l)),
        (any::<usize>(), line()).prop_map(|(i, l)| Edit::Replace(i, l)),
    ]
}

fn join(lines: &[&str], final_newline: bool) -> String {
    let mut s = lines.join("\n");
    if final_newline && !lines.is_empty() {
        s.push('\n');
    }
    s
}

fn edited(lines: &[&'static str], edits: &[Edit]) -> Vec<&'static str> {
    let mut out = lines.to_vec();
    for e in edits {
        match *e {
            Edit::Delete(i) if !out.is_empty() => {
                out.remove(i % out.len());
            }
            Edit::Insert(i, l) => out.insert(i % (out.len() + 1), l),
            Edit::Replace(i, l) if !out.is_empty() => {
                let n = out.len();
                out[i % n] = l;
            }
            _ => {}
        }
    }
    out
}

/// Renders the edit from `a` to `b` as an envelope, with enough leading context that each
/// hunk's first match after the previous one is the right one.
fn envelope(a: &str, b: &str) -> String {
    let diff = similar::TextDiff::from_lines(a, b);
    let old: Vec<&str> = (0..diff.old_len())
        .map(|i| diff.old_slice(i).unwrap())
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .collect();
    let new: Vec<&str> = (0..diff.new_len())
        .map(|i| diff.new_slice(i).unwrap())
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .collect();
    let mut out = String::from("*** Begin Patch\n*** Update File: f.txt\n");
    let mut cursor = 0;
    for group in diff.grouped_ops(3) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let (start, end) = (first.old_range().start, last.old_range().end);
        let mut lead = start;
        let body = |from: usize| -> Vec<&str> { old[from..end].to_vec() };
        while lead > cursor && first_exact(&old, &body(lead), cursor) != Some(lead) {
            lead -= 1;
        }
        out.push_str("@@\n");
        for l in &old[lead..start] {
            push_line(&mut out, ' ', l);
        }
        for op in &group {
            match op.tag() {
                similar::DiffTag::Equal => {
                    for l in &old[op.old_range()] {
                        push_line(&mut out, ' ', l);
                    }
                }
                similar::DiffTag::Delete | similar::DiffTag::Replace | similar::DiffTag::Insert => {
                    for l in &old[op.old_range()] {
                        push_line(&mut out, '-', l);
                    }
                    for l in &new[op.new_range()] {
                        push_line(&mut out, '+', l);
                    }
                }
            }
        }
        if end == old.len() {
            out.push_str("*** End of File\n");
        }
        cursor = end;
    }
    out.push_str("*** End Patch\n");
    out
}

fn push_line(out: &mut String, prefix: char, line: &str) {
    out.push(prefix);
    out.push_str(line);
    out.push('\n');
}

fn first_exact(lines: &[&str], pattern: &[&str], from: usize) -> Option<usize> {
    (from..=lines.len().checked_sub(pattern.len())?)
        .find(|&i| lines[i..i + pattern.len()] == *pattern)
}

fn plan_one(patch: &str, a: &str) -> Result<Vec<FileChange>, PatchError> {
    let parsed = parse(patch)?;
    plan(&parsed, &mut |p: &str| {
        assert_eq!(p, "f.txt");
        Ok(Some(a.as_bytes().to_vec()))
    })
}

fn expect_result(changes: &[FileChange], a: &str, b: &str) {
    if a == b {
        assert!(changes.is_empty(), "{changes:?}");
    } else {
        assert_eq!(
            changes,
            [FileChange::Write {
                path: "f.txt".into(),
                content: b.as_bytes().to_vec()
            }]
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn unified_diff_round_trip(
        lines in prop::collection::vec(line(), 0..24),
        edits in prop::collection::vec(edit(), 1..8),
        nl_a: bool,
        nl_b: bool,
    ) {
        let a = join(&lines, nl_a);
        let b = join(&edited(&lines, &edits), nl_b);
        let diff = similar::TextDiff::from_lines(&a, &b)
            .unified_diff()
            .header("a/f.txt", "b/f.txt")
            .to_string();
        prop_assume!(!diff.is_empty());
        let changes = plan_one(&diff, &a).map_err(|e| TestCaseError::fail(format!("{e}\n{diff}")))?;
        expect_result(&changes, &a, &b);
    }

    #[test]
    fn envelope_round_trip(
        lines in prop::collection::vec(line(), 0..24),
        edits in prop::collection::vec(edit(), 1..8),
        nl: bool,
    ) {
        // An envelope cannot change whether the file ends with a newline.
        let nl = nl || join(&lines, false).is_empty();
        let a = join(&lines, nl);
        let b = join(&edited(&lines, &edits), nl);
        prop_assume!(a != b);
        // ("a\n" + "" joined without a final newline is "a\n": a last empty line is a newline.)
        let ends = |s: &str| s.is_empty() || s.ends_with('\n');
        prop_assume!(ends(&a) == ends(&b) || b.is_empty());
        let patch = envelope(&a, &b);
        let changes = plan_one(&patch, &a).map_err(|e| TestCaseError::fail(format!("{e}\n{patch}")))?;
        expect_result(&changes, &a, &b);
    }

    #[test]
    fn parse_and_plan_never_panic(text in "(\\*\\*\\* [A-Za-z ]{0,12}:? ?[a-z.]{0,4}\n|[-+ @\\\\]{0,3}[a-z ]{0,4}\n|@@ -[0-9],[0-9] \\+[0-9],[0-9] @@\n|--- a/f\n|\\+\\+\\+ b/f\n){0,16}") {
        for prefix in ["*** Begin Patch\n", ""] {
            let text = format!("{prefix}{text}");
            if let Ok(p) = parse(&text) {
                let _ = plan(&p, &mut |_: &str| Ok(Some(b"a\nb\n\nk\n".to_vec())));
                let _ = plan(&p, &mut |_: &str| Ok(None));
            }
        }
    }
}

/// Plans `patch` over `before` and returns the new content of `path` and the notes.
fn noted(before: &str, patch: &str) -> Result<(String, Vec<String>), PatchError> {
    let parsed = parse(patch)?;
    let mut notes = Vec::new();
    let changes = super::plan_noting(
        &parsed,
        &mut |_p: &str| Ok(Some(before.as_bytes().to_vec())),
        &mut notes,
    )?;
    let content = match changes.first() {
        Some(FileChange::Write { content, .. }) => String::from_utf8(content.clone()).unwrap(),
        _ => before.to_owned(),
    };
    Ok((content, notes))
}

const MAKEFILE: &str = "all: x\n\nx: x.c\n\tgcc -o x x.c\n\tstrip x\n";

#[test]
fn a_makefile_keeps_its_tabs_when_the_patch_has_spaces() {
    // The envelope format, and a unified diff: the patch spells the recipe lines with spaces.
    for patch in [
        "*** Begin Patch\n*** Update File: Makefile\n@@\n x: x.c\n-    gcc -o x x.c\n+    gcc -O2 -o x x.c\n+    ls -l x\n     strip x\n*** End Patch\n",
        "--- a/Makefile\n+++ b/Makefile\n@@ -3,3 +3,4 @@\n x: x.c\n-    gcc -o x x.c\n+    gcc -O2 -o x x.c\n+    ls -l x\n     strip x\n",
    ] {
        let (after, notes) = noted(MAKEFILE, patch).unwrap();
        assert_eq!(
            after, "all: x\n\nx: x.c\n\tgcc -O2 -o x x.c\n\tls -l x\n\tstrip x\n",
            "{patch}"
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("the patch indents with 4 spaces where the file indents with a tab"),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("2 added lines were written with the file's own indentation"));
    }
}

#[test]
fn an_exact_patch_is_applied_as_written_without_a_note() {
    let patch = "*** Begin Patch\n*** Update File: Makefile\n@@\n x: x.c\n-\tgcc -o x x.c\n+\tgcc -O2 -o x x.c\n*** End Patch\n";
    let (after, notes) = noted(MAKEFILE, patch).unwrap();
    assert_eq!(after, "all: x\n\nx: x.c\n\tgcc -O2 -o x x.c\n\tstrip x\n");
    assert!(notes.is_empty(), "{notes:?}");
    // Indentation that differs only in width (same characters) is the patch's, as before.
    let py = "def f():\n    return 1\n";
    let (after, notes) = noted(
        py,
        "*** Begin Patch\n*** Update File: a.py\n@@\n def f():\n-  return 1\n+  return 2\n*** End Patch\n",
    )
    .unwrap();
    assert_eq!(after, "def f():\n  return 2\n");
    assert!(notes.is_empty());
    // A tab file patched with tabs but new lines indented deeper keep the rest after the tab.
    let (after, _) = noted(
        MAKEFILE,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n-    strip x\n+    strip x\n+        echo deeper\n*** End Patch\n",
    )
    .unwrap();
    assert!(
        after.ends_with("\tstrip x\n\t    echo deeper\n"),
        "{after:?}"
    );
}

#[test]
fn indentation_spear_cannot_carry_over_is_refused_with_a_reason() {
    // One patch spelling stands for a tab in one line and two tabs in another.
    let file = "x:\n\tone\n\t\ttwo\n";
    let e = noted(
        file,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n-    one\n-    two\n+    uno\n*** End Patch\n",
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, PatchError::Indentation { hunk: 1, .. }),
        "{text}"
    );
    assert!(text.contains("indented in two different ways"), "{text}");
    assert!(
        text.contains("Resend the hunk with the file's own indentation"),
        "{text}"
    );
    // An added line indented with the patch's spaces that start with none of its spellings.
    let e = noted(
        MAKEFILE,
        "*** Begin Patch\n*** Update File: Makefile\n@@\n-    strip x\n+  strip x\n*** End Patch\n",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("the added line `strip x` is indented with 2 spaces"),
        "{e}"
    );
}
