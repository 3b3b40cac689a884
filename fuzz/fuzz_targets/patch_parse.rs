//! Fuzzes `spear_tools::patch::{parse, plan}`: any patch text, over any file content, is parsed
//! and planned without a panic or a hang, and what comes out keeps its promises.
//!
//! The input is the patch text (`String::from_utf8_lossy`), then optionally a NUL byte and the
//! bytes every existing file holds. A path of even length exists, one of odd length does not, so
//! adds, updates, moves and deletes all meet both cases.

#![no_main]
// A failed invariant must abort the run: that is how libFuzzer learns of it.
#![allow(clippy::manual_assert, clippy::panic)]

use libfuzzer_sys::fuzz_target;
use spear_tools::patch::{FileChange, FilePatch, parse, plan};

fuzz_target!(
    init: spear_fuzz::install_panic_hook(),
    |data: &[u8]| {
        let (text, content) = match data.iter().position(|&b| b == 0) {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (data, &b"fn main() {\n    a();\n}\n"[..]),
        };
        let text = String::from_utf8_lossy(text);
        let Ok(patch) = parse(&text) else { return };

        // A parsed patch names at least one file, and every path is usable.
        if patch.files.is_empty() {
            panic!("an empty patch parsed: {text:?}");
        }
        let paths = patch.paths();
        for p in &paths {
            if p.is_empty() || p.contains(['\0', '\n', '\r']) {
                panic!("bad path {p:?} from {text:?}");
            }
        }
        for f in &patch.files {
            if let FilePatch::Update { hunks, move_to: None, .. } = f
                && hunks.is_empty()
            {
                panic!("an update that does nothing: {f:?}");
            }
        }

        let mut reads = Vec::new();
        let result = plan(&patch, &mut |p: &str| {
            if reads.iter().any(|r: &String| r == p) {
                panic!("{p:?} read twice");
            }
            reads.push(p.to_owned());
            Ok(p.len().is_multiple_of(2).then(|| content.to_vec()))
        });
        let Ok(changes) = result else { return };

        // Every change is to a path of the patch, each path at most once, writes before deletes.
        let mut seen: Vec<&str> = Vec::new();
        let mut deleting = false;
        for c in &changes {
            let p = c.path();
            if !paths.contains(&p) {
                panic!("change to {p:?}, not among {paths:?}");
            }
            if seen.contains(&p) {
                panic!("{p:?} changed twice: {changes:?}");
            }
            seen.push(p);
            match c {
                FileChange::Write { .. } if deleting => panic!("a write after a delete"),
                FileChange::Write { .. } => {}
                FileChange::Delete { .. } => deleting = true,
            }
        }
    }
);
