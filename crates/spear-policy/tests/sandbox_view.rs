//! The decision layer against what the sandbox shows: toolchain trees bound read-only are read
//! and searched with no capability (their credential files are not), interpreter links into them
//! run, and a link under the private `/tmp` that leads into the workspace is a workspace write.

// Test fixtures fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::Fixture;
use spear_core::{Capability, CommandClass, RefusalRule};

/// A fixture whose home holds a cargo registry, rustup toolchains and a pyenv Python, and a
/// workspace venv whose interpreter links into it. With `shown`, the sandbox view binds them.
fn toolchain_fixture(shown: bool) -> Fixture {
    Fixture::with_config(|mut c| {
        let home = c.home.clone().unwrap();
        for d in [
            ".cargo/registry/src/index-1/itoa-1.0.0/src",
            ".rustup/toolchains/stable/bin",
            ".pyenv/versions/3.12/bin",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(
            home.join(".cargo/registry/src/index-1/itoa-1.0.0/src/lib.rs"),
            "pub fn x() {}\n",
        )
        .unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), "token = \"x\"\n").unwrap();
        std::fs::write(home.join(".pyenv/versions/3.12/bin/python3.12"), "").unwrap();
        if shown {
            c.sandbox.shown.extend([
                home.join(".cargo"),
                home.join(".rustup"),
                home.join(".pyenv"),
            ]);
        }
        c
    })
}

fn venv(fx: &Fixture) {
    std::fs::create_dir_all(fx.path(".venv/bin")).unwrap();
    std::os::unix::fs::symlink(
        fx.home.join(".pyenv/versions/3.12/bin/python3.12"),
        fx.path(".venv/bin/python"),
    )
    .unwrap();
}

#[test]
fn shown_toolchain_trees_are_readable_and_searchable() {
    let fx = toolchain_fixture(true);
    venv(&fx);
    for script in [
        "cat ~/.cargo/registry/src/*/itoa-*/src/lib.rs",
        "ls ~/.rustup/toolchains",
        "grep -rn fn ~/.cargo/registry/src",
        "find ~/.rustup -name rustc",
        "cat {HOME}/.cargo/registry/src/index-1/itoa-1.0.0/src/lib.rs",
    ] {
        let a = fx.classify(script);
        assert_eq!(a.class, CommandClass::ReadOnly, "{script}: {}", a.reason);
        assert!(
            !a.capabilities.contains(Capability::HostRead),
            "{script}: nothing to bind"
        );
    }
    // A venv's interpreter links into a shown tree: it runs (a program given by its path is
    // SHELL_COMPLEX, never refused for where it lives).
    let a = fx.classify(".venv/bin/python --version");
    assert!(a.refusal.is_none(), "{}", a.reason);
    assert!(!a.capabilities.contains(Capability::HostRead));
    // Credential stores stay refused inside a shown tree and in the home.
    for script in [
        "cat ~/.cargo/credentials.toml",
        "cat {HOME}/.cargo/credentials.toml",
        "cp ~/.cargo/credentials.toml x",
        "cat ~/.ssh/id_rsa",
    ] {
        let a = fx.classify(script);
        assert_eq!(
            a.refusal.map(|r| r.rule()),
            Some(RefusalRule::CredentialStore),
            "{script}"
        );
    }
    // A shown tree is read-only: a write there is outside the writable roots.
    let a = fx.classify("echo x > ~/.cargo/registry/x");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::WriteOutsideRoots),
        "{}",
        a.reason
    );
}

/// Positive control: without the view, the same trees are the host's, another project.
#[test]
fn unshown_toolchain_trees_are_out_of_scope() {
    let fx = toolchain_fixture(false);
    venv(&fx);
    for script in [
        "ls ~/.rustup/toolchains",
        "cat ~/.cargo/registry/src/*/itoa-*/src/lib.rs",
        ".venv/bin/python --version",
    ] {
        let a = fx.classify(script);
        assert_eq!(
            a.refusal.map(|r| r.rule()),
            Some(RefusalRule::ProjectScope),
            "{script}: {}",
            a.reason
        );
    }
}

/// A link under /tmp into the workspace: the write is judged where it lands, by the target
/// policy. (The fixture's workspace is outside /tmp; the link is made in the real /tmp.)
#[test]
fn a_tmp_link_into_the_workspace_is_a_workspace_write() {
    let fx = Fixture::new();
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    let links: PathBuf = tmp.path().to_path_buf();
    std::os::unix::fs::symlink(fx.path(".git/hooks"), links.join("hooks")).unwrap();
    std::os::unix::fs::symlink(fx.path(".git"), links.join("dotgit")).unwrap();
    std::os::unix::fs::symlink(fx.path("src"), links.join("src")).unwrap();
    let at = |rel: &str| links.join(rel).display().to_string();

    for script in [
        format!("echo x > {}", at("hooks/pre-commit")),
        format!("cp payload.txt {}", at("dotgit/hooks/post-checkout")),
        format!("echo '[core]' > {}", at("dotgit/config")),
    ] {
        let a = fx.classify(&script);
        assert!(
            !a.host_config.is_empty() && a.refusal.is_none(),
            "{script}: host-run configuration reached through a link under /tmp: {}",
            a.reason
        );
    }
    let a = fx.classify(&format!("echo x > {}", at("src/new.rs")));
    assert_eq!(a.class, CommandClass::WorkspaceMutating, "{}", a.reason);
    assert_eq!(a.write_targets, vec![fx.path("src/new.rs")]);
    // Positive control: a plain file under /tmp is the sandbox's own.
    let a = fx.classify(&format!("echo x > {}", at("plain.txt")));
    assert_eq!(a.class, CommandClass::ReadOnly, "{}", a.reason);
    assert!(a.write_targets.is_empty());
}
