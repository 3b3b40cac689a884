//! `docs/ARCHITECTURE.md` stays true to the code in what a test can see: it names every crate of the
//! workspace, says of each which spear crates it imports (its `[dependencies]`, no more and no
//! less), and names every subcommand `spear --help` lists.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn doc() -> String {
    std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).unwrap()
}

/// The workspace's crates: the directories under `crates/` with a manifest.
fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The spear crates `name`'s manifest lists under `[dependencies]` (not dev- or build-), short
/// (`spear-core` is `core`).
fn imports(name: &str) -> BTreeSet<String> {
    let text =
        std::fs::read_to_string(repo().join("crates").join(name).join("Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            line.clone_into(&mut section);
            continue;
        }
        if section == "[dependencies]"
            && let Some(dep) = line.strip_prefix("spear-")
            && let Some(short) = dep.split(['.', ' ', '=']).next()
        {
            out.insert(short.to_owned());
        }
    }
    out
}

/// The row of the crates table for `name`: its "may import" column, as a set.
fn documented_imports(doc: &str, name: &str) -> Option<BTreeSet<String>> {
    let row = doc
        .lines()
        .find(|l| l.starts_with(&format!("| `{name}` |")))?;
    let last = row.trim_end_matches('|').rsplit('|').next()?.trim();
    if last == "none" {
        return Some(BTreeSet::new());
    }
    Some(last.split(", ").map(str::to_owned).collect())
}

#[test]
fn every_crate_is_described_with_what_it_imports() {
    let doc = doc();
    let crates = crates();
    assert!(crates.len() >= 9, "{crates:?}");
    for name in &crates {
        assert!(
            doc.lines().any(|l| l.starts_with(&format!("| `{name}` |"))),
            "docs/ARCHITECTURE.md has no row for the crate {name}"
        );
        let imports = imports(name);
        let documented = documented_imports(&doc, name);
        assert_eq!(
            documented.as_ref(),
            Some(&imports),
            "docs/ARCHITECTURE.md says {name} may import {documented:?}; its manifest lists {imports:?}"
        );
    }
}

#[test]
fn every_subcommand_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let subcommands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| *s != "help")
        .collect();
    assert!(subcommands.len() >= 10, "{help}");
    let doc = doc();
    for sub in subcommands {
        assert!(
            doc.contains(&format!("`spear {sub}`")),
            "docs/ARCHITECTURE.md does not name `spear {sub}`"
        );
    }
}
