//! The decision layer under configuration: the fixed mount scheme, paths the operator names, and
//! the workspace's own policy file (which can only add).

// Test fixtures fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::Fixture;
use spear_core::{Capability, CommandClass, RefusalRule};
use spear_policy::{CommandPolicy, OperatorConfig, PolicyConfig, WorkspacePolicyFile};
use spear_workspace::{MountSchemeChoice, Workspace, WorkspaceConfig};

fn fixed_scheme_policy(fx: &Fixture) -> CommandPolicy {
    let mut config = WorkspaceConfig::new(&fx.ws);
    config.mount_scheme = MountSchemeChoice::Fixed;
    let ws = Workspace::open(&config).unwrap();
    assert_eq!(ws.primary().mount_path(), Path::new("/workspace"));
    CommandPolicy::new(Arc::new(ws), PolicyConfig::new(Some(fx.home.clone())))
}

#[test]
fn a_target_under_a_mount_path_is_not_an_escape() {
    let fx = Fixture::new();
    let policy = fixed_scheme_policy(&fx);
    let classify = |s: &str| policy.classify_script(s, Path::new("/workspace"));

    let a = classify("ls > /workspace/out.txt");
    assert_eq!(a.class, CommandClass::WorkspaceMutating, "{}", a.reason);
    assert_eq!(
        a.write_targets,
        vec![fx.path("out.txt")],
        "mount spelling is translated to the host path"
    );

    let a = classify("cat /workspace/README.md");
    assert_eq!(a.class, CommandClass::ReadOnly);
    assert!(!a.capabilities.contains(Capability::HostRead));

    let a = classify("cd /workspace/src && touch x.rs");
    assert_eq!(a.write_targets, vec![fx.path("src/x.rs")]);

    let a = classify("echo x > /workspace/.envrc");
    assert_eq!(
        a.host_config
            .iter()
            .map(|w| w.path.as_str())
            .collect::<Vec<_>>(),
        vec![".envrc"],
        "host-run configuration is found on the mount spelling"
    );
    let a = classify("echo x > /workspace/.spear/policy.toml");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::ProtectedEntry)
    );

    let a = classify("echo x > /workspace/../etc/x");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::WriteOutsideRoots)
    );

    // The sandbox's own view of a mount point's parent: nothing of the host is bound.
    let a = classify("ls /workspaces");
    assert_eq!(a.class, CommandClass::ReadOnly, "{}", a.reason);
    assert!(!a.capabilities.contains(Capability::HostRead));

    // The host spelling of the root still means the root.
    let a = classify(&format!("touch {}/y.txt", fx.ws.display()));
    assert_eq!(a.write_targets, vec![fx.path("y.txt")]);
}

#[test]
fn relative_paths_resolve_where_the_command_runs() {
    let fx = Fixture::new();
    let a = fx
        .policy
        .classify_script("touch here.txt", &fx.path("sub/deeper"));
    assert_eq!(a.write_targets, vec![fx.path("sub/deeper/here.txt")]);
    // A relative `..` that stays inside the roots is an ordinary path.
    let a = fx
        .policy
        .classify_script("cd .. && touch x", &fx.path("sub"));
    assert_eq!(a.write_targets, vec![fx.path("x")], "{}", a.reason);
    let a = fx
        .policy
        .classify_script("touch ../y", &fx.path("sub/deeper"));
    assert_eq!(a.write_targets, vec![fx.path("sub/y")], "{}", a.reason);
}

#[test]
fn named_paths_may_be_read_and_searched() {
    // Not under /tmp, which is the sandbox's own (private) place.
    let fx = Fixture::with_config(|mut c| {
        c.named_paths
            .push(std::path::PathBuf::from("/srv/spear-named-data"));
        c
    });
    let named = std::path::PathBuf::from("/srv/spear-named-data");
    let search = format!("grep -r TODO {}", named.display());
    let a = fx.classify(&search);
    assert_eq!(a.class, CommandClass::ReadOnly, "{}", a.reason);
    assert!(a.capabilities.contains(Capability::HostRead));
    assert_eq!(a.host_reads, vec![named.clone()]);

    let a = fx.classify(&format!("find {} -name '*.csv'", named.display()));
    assert_eq!(a.class, CommandClass::ReadOnly, "{}", a.reason);

    // Positive control: the same search of a path nobody named is refused.
    let other = std::path::PathBuf::from("/srv/spear-unnamed-data");
    let a = fx.classify(&format!("grep -r TODO {}", other.display()));
    assert_eq!(a.refusal.map(|r| r.rule()), Some(RefusalRule::ProjectScope));
}

#[test]
fn a_named_path_under_home_is_readable_but_its_credential_stores_are_not() {
    let fx = Fixture::with_config(|mut c| {
        c.named_paths.push(c.home.clone().unwrap().join("notes"));
        c
    });
    let a = fx.classify("cat {HOME}/notes/todo.md");
    assert_eq!(a.class, CommandClass::ReadOnly, "{}", a.reason);
    let a = fx.classify("cat {HOME}/other/x.txt");
    assert_eq!(a.refusal.map(|r| r.rule()), Some(RefusalRule::ProjectScope));
    let fx = Fixture::with_config(|mut c| {
        c.named_paths.push(c.home.clone().unwrap());
        c
    });
    let a = fx.classify("cat {HOME}/.ssh/id_rsa");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::CredentialStore),
        "naming a path never exposes credentials"
    );
}

#[test]
fn the_operator_can_unprotect_and_the_workspace_can_only_add() {
    let op = OperatorConfig::parse(
        "[policy]\nallow_host_config = [\"vscode\"]\n",
        Path::new("c.toml"),
    )
    .unwrap();
    let fx = Fixture::with_config(|c| c.with_operator(&op));
    let a = fx.classify("echo '{}' > .vscode/settings.json");
    assert_eq!(a.class, CommandClass::WorkspaceMutating);
    assert!(a.host_config.is_empty(), "allowed: {:?}", a.host_config);
    let a = fx.classify("echo '{}' > .idea/x.xml");
    assert_eq!(
        a.host_config
            .iter()
            .map(|w| w.entry.as_str())
            .collect::<Vec<_>>(),
        vec!["idea"],
        "only what was named is allowed"
    );

    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path(".spear")).unwrap();
    std::fs::write(
        fx.path(".spear/policy.toml"),
        "[targets]\nprotect = [\"deploy/\"]\ngenerated = [\"gen/\"]\n",
    )
    .unwrap();
    let file = WorkspacePolicyFile::load(fx.policy.workspace())
        .unwrap()
        .expect("the file is found");
    let fx2 = Fixture::with_config(|c| c.with_workspace(&file));
    let a = fx2.classify("echo x > deploy/prod.yaml");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::ProtectedEntry)
    );
    let a = fx2.classify("echo x > gen/out.rs");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::GeneratedFile)
    );
    assert_eq!(
        fx2.class("echo x > src/lib.rs"),
        CommandClass::WorkspaceMutating
    );

    std::fs::write(
        fx.path(".spear/policy.toml"),
        "[targets]\nunprotect = [\".envrc\"]\n",
    )
    .unwrap();
    assert!(
        WorkspacePolicyFile::load(fx.policy.workspace()).is_err(),
        "a workspace file cannot widen"
    );
}

#[test]
fn a_workspace_policy_file_cannot_be_a_link_out_of_the_workspace() {
    let fx = Fixture::new();
    let outside = fx.home.join("policy.toml");
    std::fs::write(&outside, "[targets]\nprotect = [\"x/\"]\n").unwrap();
    std::fs::create_dir_all(fx.path(".spear")).unwrap();
    std::os::unix::fs::symlink(&outside, fx.path(".spear/policy.toml")).unwrap();
    assert!(
        WorkspacePolicyFile::load(fx.policy.workspace()).is_err(),
        "an absolute link out is refused"
    );
    // Positive control: the same content as a regular file loads.
    std::fs::remove_file(fx.path(".spear/policy.toml")).unwrap();
    std::fs::copy(&outside, fx.path(".spear/policy.toml")).unwrap();
    assert!(
        WorkspacePolicyFile::load(fx.policy.workspace())
            .unwrap()
            .is_some()
    );
}

#[test]
fn file_tools_share_the_target_policy() {
    let fx = Fixture::new();
    let ws = fx.policy.workspace();
    let check = |p: &str| {
        let r = ws.resolve(p).unwrap();
        fx.policy.check_write(&r.entry).err().map(|r| r.rule())
    };
    assert_eq!(check("src/main.rs"), None);
    assert_eq!(
        check(".git/hooks/pre-commit"),
        Some(RefusalRule::HostRunConfig)
    );
    assert_eq!(
        check(".vscode/tasks.json"),
        Some(RefusalRule::HostRunConfig)
    );
    assert_eq!(
        check(".spear/policy.toml"),
        Some(RefusalRule::ProtectedEntry)
    );
    assert_eq!(
        check("src/api.rs"),
        Some(RefusalRule::GeneratedFile),
        "the header says DO NOT EDIT"
    );
    assert_eq!(check("vendor/x.go"), Some(RefusalRule::SnapshotCopy));
    let r = ws.resolve("src/api.rs").unwrap();
    let message = fx.policy.check_write(&r.entry).unwrap_err().message();
    assert!(
        message.contains("proto/api.proto"),
        "the refusal names the source: {message}"
    );
}

#[test]
fn a_header_that_cannot_be_read_refuses_the_write() {
    let fx = Fixture::new();
    // A fifo has no header to read: the check cannot be made.
    let fifo = fx.path("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let a = fx.classify("echo x > pipe");
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::Unverifiable),
        "{}",
        a.reason
    );
    // Positive controls: a regular file and a new file are checked and allowed.
    assert_eq!(
        fx.class("echo x > README.md"),
        CommandClass::WorkspaceMutating
    );
    assert_eq!(
        fx.class("echo x > brand-new.txt"),
        CommandClass::WorkspaceMutating
    );
    assert_eq!(
        fx.class("rm -rf src"),
        CommandClass::WorkspaceMutating,
        "a directory has no header"
    );
}

#[test]
fn an_unreadable_file_is_not_written_by_an_unprivileged_user() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let file = fx.path("secret-gen.rs");
    std::fs::write(&file, "// DO NOT EDIT\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o200)).unwrap();
    let a = fx.classify("echo x > secret-gen.rs");
    let root = rustix::process::geteuid().is_root();
    let expected = if root {
        RefusalRule::GeneratedFile
    } else {
        RefusalRule::Unverifiable
    };
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(expected),
        "as root: {root}; {}",
        a.reason
    );
}

#[test]
fn argv_is_taken_literally() {
    let fx = Fixture::new();
    let argv = |words: &[&str]| {
        let v: Vec<String> = words.iter().map(|w| fx.sub(w)).collect();
        fx.policy.classify(&v, &fx.ws)
    };
    assert_eq!(argv(&["ls", "-la"]).class, CommandClass::ReadOnly);
    assert_eq!(
        argv(&["rm", "-rf", "target"]).class,
        CommandClass::WorkspaceMutating
    );
    assert_eq!(argv(&["touch", "{CANARY}"]).class, CommandClass::Dangerous);
    // No shell: `$(...)` and `;` are plain text in an argument.
    assert_eq!(
        argv(&["echo", "$(touch {CANARY}); touch {CANARY}"]).class,
        CommandClass::ReadOnly
    );
    // A shell named in argv is still analysed.
    assert_eq!(
        argv(&["bash", "-c", "touch {CANARY}"]).class,
        CommandClass::Dangerous
    );
    assert_eq!(argv(&["sudo", "ls"]).class, CommandClass::Dangerous);
}

#[test]
fn a_second_root_is_inside_the_workspace() {
    let fx = Fixture::new();
    let extra = fx.ws.parent().unwrap().join("lib");
    std::fs::create_dir_all(extra.join("src")).unwrap();
    let mut config = WorkspaceConfig::new(&fx.ws);
    config.extra_roots.push(extra.clone());
    let ws = Workspace::open(&config).unwrap();
    assert_eq!(ws.roots().len(), 2);
    let policy = CommandPolicy::new(Arc::new(ws), PolicyConfig::new(Some(fx.home.clone())));
    let a = policy.classify_script(&format!("echo x > {}/src/a.rs", extra.display()), &fx.ws);
    assert_eq!(a.class, CommandClass::WorkspaceMutating, "{}", a.reason);
    assert_eq!(a.write_targets, vec![extra.join("src/a.rs")]);
    let a = policy.classify_script(&format!("grep -rn x {}", extra.display()), &fx.ws);
    assert_eq!(
        a.class,
        CommandClass::ReadOnly,
        "a search of another root is in the project: {}",
        a.reason
    );
    assert!(!a.capabilities.contains(Capability::HostRead));
    let a = policy.classify_script(&format!("echo x > {}/.envrc", extra.display()), &fx.ws);
    assert_eq!(
        a.host_config.len(),
        1,
        "host-run configuration is found in every root"
    );
    let a = policy.classify_script(
        &format!("echo x > {}/.spear/policy.toml", extra.display()),
        &fx.ws,
    );
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::ProtectedEntry),
        "the target policy holds in every root"
    );
    // Positive control: without the extra root, the same write is outside.
    let a = fx.classify(&format!("echo x > {}/src/a.rs", extra.display()));
    assert_eq!(
        a.refusal.map(|r| r.rule()),
        Some(RefusalRule::WriteOutsideRoots)
    );
}
