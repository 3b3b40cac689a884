//! `Workspace::open`: which roots a session gets.

use std::path::PathBuf;

use super::Tree;
use crate::{MountScheme, MountSchemeChoice, Workspace, WorkspaceConfig, WorkspaceError};

fn hosts(ws: &Workspace) -> Vec<PathBuf> {
    ws.roots()
        .iter()
        .map(|r| r.host_path().to_path_buf())
        .collect()
}

fn names(ws: &Workspace) -> Vec<&str> {
    ws.roots().iter().map(crate::Root::name).collect()
}

#[test]
fn launch_dir_alone_is_the_primary_root() {
    let t = Tree::standard();
    let ws = Workspace::open(&t.config("ws", &[])).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws")]);
    assert!(ws.primary().is_primary());
    assert_eq!(ws.launch_dir(), t.path("ws"));
    assert_eq!(ws.mount_scheme(), MountScheme::Identity);
    assert_eq!(ws.primary().mount_path(), t.path("ws"));
    assert!(ws.dropped_roots().is_empty());
}

#[test]
fn launch_dir_is_canonicalised() {
    let t = Tree::standard();
    t.link(t.path("ws"), "ws-link");
    let ws = Workspace::open(&t.config("ws-link/a/..", &[])).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws")]);
    assert_eq!(ws.launch_dir(), t.path("ws"));
}

#[test]
fn a_missing_or_non_directory_launch_dir_is_an_error() {
    let t = Tree::standard();
    for launch in ["missing", "ws/f.txt"] {
        let e = Workspace::open(&t.config(launch, &[])).unwrap_err();
        let WorkspaceError::LaunchDir { path, .. } = &e;
        assert_eq!(path, &t.path(launch));
    }
    // Positive control: the directory itself opens.
    assert!(Workspace::open(&t.config("ws", &[])).is_ok());
}

#[test]
fn system_directories_cannot_be_the_launch_dir() {
    for launch in ["/", "/proc", "/proc/self", "/dev", "/sys"] {
        let e = Workspace::open(&WorkspaceConfig::new(launch)).unwrap_err();
        assert!(e.to_string().contains("cannot"), "{launch}: {e}");
    }
}

#[test]
fn extra_roots_follow_the_primary_in_order() {
    let t = Tree::standard();
    t.dir("third");
    let ws = Workspace::open(&t.config("ws", &["third", "other"])).unwrap();
    assert_eq!(
        hosts(&ws),
        vec![t.path("ws"), t.path("third"), t.path("other")]
    );
    assert!(ws.roots()[0].is_primary());
    assert!(!ws.roots()[1].is_primary());
    assert_eq!(names(&ws), vec!["ws", "third", "other"]);
}

#[test]
fn a_relative_extra_root_is_taken_from_the_launch_dir() {
    let t = Tree::standard();
    let mut c = t.config("ws", &[]);
    c.extra_roots = vec![PathBuf::from("../other")];
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws"), t.path("other")]);
}

#[test]
fn vanished_and_non_directory_extra_roots_are_dropped_not_fatal() {
    let t = Tree::standard();
    let c = t.config("ws", &["gone", "outside/secret.txt", "other"]);
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws"), t.path("other")]);
    let dropped: Vec<&PathBuf> = ws.dropped_roots().iter().map(|(p, _)| p).collect();
    assert_eq!(
        dropped,
        vec![&t.path("gone"), &t.path("outside/secret.txt")]
    );
    assert!(ws.dropped_roots().iter().all(|(_, why)| !why.is_empty()));
}

#[test]
fn system_directories_are_dropped_as_extra_roots() {
    let t = Tree::standard();
    let mut c = t.config("ws", &[]);
    c.extra_roots = vec![
        PathBuf::from("/proc/self"),
        PathBuf::from("/"),
        PathBuf::from("/dev"),
    ];
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws")]);
    assert_eq!(ws.dropped_roots().len(), 3);
}

#[test]
fn duplicates_and_nested_roots_merge() {
    let t = Tree::standard();
    t.link(t.path("other"), "other-link");
    let ws = Workspace::open(&t.config("ws", &["ws/a", "other", "other-link", "ws"])).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws"), t.path("other")]);
    assert!(ws.dropped_roots().is_empty());
}

#[test]
fn an_extra_root_enclosing_the_launch_dir_becomes_primary() {
    let t = Tree::standard();
    let ws = Workspace::open(&t.config("ws/a", &["other", "ws"])).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("ws"), t.path("other")]);
    assert!(ws.roots()[0].is_primary());
    // Relative paths still resolve in the launch directory.
    assert_eq!(ws.launch_dir(), t.path("ws/a"));
    let r = super::ok(&ws, "b.txt");
    assert_eq!(r.target.rel, PathBuf::from("a/b.txt"));
    assert_eq!(ws.launch_mount_dir(), t.path("ws/a"));
}

#[test]
fn the_enclosing_build_tree_is_a_root() {
    let t = Tree::new();
    t.file("tree/env.sh", "");
    t.file("tree/scripts/build.sh", "");
    t.dir("tree/src/proj");
    let ws = Workspace::open(&t.config("tree/src/proj", &[])).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("tree")]);
    assert_eq!(ws.launch_dir(), t.path("tree/src/proj"));
    assert_eq!(ws.launch_mount_dir(), t.path("tree/src/proj"));

    // single_root drops it (and the extras).
    let mut c = t.config("tree/src/proj", &["tree"]);
    c.single_root = true;
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(hosts(&ws), vec![t.path("tree/src/proj")]);
}

#[test]
fn a_build_tree_needs_both_files() {
    let t = Tree::new();
    t.file("t1/env.sh", "");
    t.dir("t1/p");
    t.file("t2/scripts/build.sh", "");
    t.dir("t2/p");
    // A directory named env.sh is not the file.
    t.dir("t3/env.sh");
    t.file("t3/scripts/build.sh", "");
    t.dir("t3/p");
    for launch in ["t1/p", "t2/p", "t3/p"] {
        let ws = Workspace::open(&t.config(launch, &[])).unwrap();
        assert_eq!(hosts(&ws), vec![t.path(launch)], "{launch}");
    }
}

#[test]
fn names_are_made_unique() {
    let t = Tree::new();
    t.dir("x/proj");
    t.dir("y/proj");
    t.dir("z/proj");
    let ws = Workspace::open(&t.config("x/proj", &["y/proj", "z/proj"])).unwrap();
    assert_eq!(names(&ws), vec!["proj", "proj-2", "proj-3"]);
}

#[test]
fn the_fixed_scheme_on_request() {
    let t = Tree::standard();
    let c = t
        .config("ws", &["other"])
        .with_identity_mount_env(Some("0"));
    assert_eq!(c.mount_scheme, MountSchemeChoice::Fixed);
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(ws.mount_scheme(), MountScheme::Fixed);
    assert_eq!(
        ws.mount_points(),
        vec![
            PathBuf::from("/workspace"),
            PathBuf::from("/workspaces/other")
        ]
    );
    assert_eq!(ws.launch_mount_dir(), PathBuf::from("/workspace"));

    // Positive control: other values keep identity mounts.
    for v in [None, Some("1"), Some("yes"), Some("")] {
        let c = t.config("ws", &["other"]).with_identity_mount_env(v);
        let ws = Workspace::open(&c).unwrap();
        assert_eq!(ws.mount_scheme(), MountScheme::Identity, "{v:?}");
        assert_eq!(ws.mount_points(), vec![t.path("ws"), t.path("other")]);
    }
}

#[test]
fn the_fixed_scheme_when_identity_is_unsafe() {
    // A root whose name holds a newline cannot be mounted at its own path.
    let t = Tree::standard();
    t.dir("odd\nname");
    let ws = Workspace::open(&t.config("ws", &["odd\nname"])).unwrap();
    assert_eq!(ws.mount_scheme(), MountScheme::Fixed);
    assert_eq!(ws.roots()[1].name(), "odd_name");
    assert_eq!(
        ws.roots()[1].mount_path(),
        PathBuf::from("/workspaces/odd_name")
    );
}

#[test]
fn the_launch_mount_dir_in_the_fixed_scheme_keeps_the_subdirectory() {
    let t = Tree::standard();
    let mut c = t.config("ws/a", &["ws"]);
    c.mount_scheme = MountSchemeChoice::Fixed;
    let ws = Workspace::open(&c).unwrap();
    assert_eq!(ws.launch_mount_dir(), PathBuf::from("/workspace/a"));
}

#[test]
fn fs_opens_a_fd_on_every_root() {
    let t = Tree::standard();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    assert_eq!(fs.root_fds.len(), 2);
}

#[test]
fn fs_refuses_a_root_replaced_by_a_symlink() {
    let t = Tree::standard();
    let ws = t.ws();
    // Positive control first: it opens.
    assert!(ws.fs().is_ok());
    std::fs::rename(t.path("other"), t.path("other-moved")).unwrap();
    t.link(t.path("outside"), "other");
    // Positive control: a plain open by name now reaches outside.
    assert_eq!(t.read("other/secret.txt"), "SECRET");
    let e = ws.fs();
    assert!(matches!(e, Err(crate::FsError::Escape { .. })), "{e:?}");
}
