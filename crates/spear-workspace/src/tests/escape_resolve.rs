//! `Workspace::resolve` against every escape class of the file tools (PTH-*), each with a
//! positive control that resolves.

use std::path::{Path, PathBuf};

use super::{Tree, err, is_root, ok};
use crate::{Location, MountSchemeChoice, ResolveError};

fn loc(root: usize, rel: &str) -> Location {
    Location {
        root,
        rel: PathBuf::from(rel),
    }
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

#[test]
fn malformed_paths() {
    let t = Tree::standard();
    let ws = t.ws();
    for p in ["", "a\0b", "f.txt\0", "\0"] {
        assert!(
            matches!(err(&ws, p), ResolveError::Malformed { .. }),
            "{p:?}"
        );
    }
    let long = "a/".repeat(3000);
    assert!(matches!(err(&ws, &long), ResolveError::Malformed { .. }));
    // Positive control.
    assert_eq!(ok(&ws, "f.txt").target, loc(0, "f.txt"));
}

#[test]
fn parent_escapes_pth_01() {
    let t = Tree::standard();
    let ws = t.ws();
    let deep = format!("{}../x", "a/../".repeat(50));
    let cases = [
        "..",
        "../",
        "../x",
        "./../x",
        "a/../../x",
        "a/./../.././outside/secret.txt",
        "a/b.txt/../../../x",
        "../../../../etc/passwd",
        "../outside/secret.txt",
        "../home/.ssh/id_rsa",
        "a/../a/../..",
        deep.as_str(),
    ];
    for p in cases {
        match err(&ws, p) {
            ResolveError::ParentEscape { path } => assert_eq!(path, p),
            // `a/b.txt/..` is refused earlier, as the kernel would.
            ResolveError::NotADirectory { .. } if p.contains("b.txt/..") => {}
            e => panic!("{p}: {e:?}"),
        }
    }
    // Positive controls: `..` that stays inside, and `..` that passes through the roots' common
    // parent into a root, as the kernel would resolve it.
    assert_eq!(ok(&ws, "a/../f.txt").target, loc(0, "f.txt"));
    assert_eq!(ok(&ws, "a/./../a/b.txt").target, loc(0, "a/b.txt"));
    assert_eq!(ok(&ws, &"a/../".repeat(50)).target, loc(0, ""));
    assert_eq!(ok(&ws, "../ws/f.txt").target, loc(0, "f.txt"));
    assert_eq!(ok(&ws, "../other/x.txt").target, loc(1, "x.txt"));
}

#[test]
fn parent_inside_a_bigger_primary_root_is_fine() {
    // Launched in ws/a with ws as an extra root: `..` climbs within the primary root.
    let t = Tree::standard();
    let ws = crate::Workspace::open(&t.config("ws/a", &["ws"])).unwrap();
    assert_eq!(ok(&ws, "../f.txt").target, loc(0, "f.txt"));
    assert!(matches!(
        err(&ws, "../../x"),
        ResolveError::ParentEscape { .. }
    ));
}

#[test]
fn absolute_paths_outside_every_root() {
    let t = Tree::standard();
    let outside = s(&t.path("outside/secret.txt"));
    let base = s(&t.base);
    for ws in [
        t.ws(),
        t.ws_with(MountSchemeChoice::Auto, true),
        t.ws_with(MountSchemeChoice::Fixed, false),
        t.ws_with(MountSchemeChoice::Fixed, true),
    ] {
        for p in [
            "/",
            "/etc/passwd",
            "/tmp",
            "/root/.ssh/id_rsa",
            outside.as_str(),
            base.as_str(),
            "/workspace/../etc/passwd",
            "/workspaces",
            "/workspaces/nope/x",
            "/workspaces/other/../../etc/passwd",
        ] {
            match err(&ws, p) {
                ResolveError::OutsideRoots { path, launch_dir } => {
                    assert_eq!(path, p);
                    assert_eq!(PathBuf::from(launch_dir), ws.launch_mount_dir());
                }
                e => panic!("{p} ({:?}): {e:?}", ws.mount_scheme()),
            }
        }
    }
}

#[test]
fn host_and_mount_spelling_identity_scheme() {
    let t = Tree::standard();
    for allow in [false, true] {
        let ws = t.ws_with(MountSchemeChoice::Auto, allow);
        // Host spelling is the mount spelling here: accepted either way.
        assert_eq!(ok(&ws, &s(&t.path("ws/f.txt"))).target, loc(0, "f.txt"));
        assert_eq!(ok(&ws, &s(&t.path("other/x.txt"))).target, loc(1, "x.txt"));
        assert_eq!(ok(&ws, &s(&t.path("ws"))).target, loc(0, ""));
        // The fixed scheme's spelling means nothing in the identity scheme.
        assert!(matches!(
            err(&ws, "/workspace/f.txt"),
            ResolveError::OutsideRoots { .. }
        ));
    }
}

#[test]
fn host_and_mount_spelling_fixed_scheme() {
    let t = Tree::standard();
    let host_ws = s(&t.path("ws/f.txt"));
    let host_other = s(&t.path("other/x.txt"));
    let strict = t.ws_with(MountSchemeChoice::Fixed, false);
    let allowing = t.ws_with(MountSchemeChoice::Fixed, true);
    for ws in [&strict, &allowing] {
        assert_eq!(ok(ws, "/workspace/f.txt").target, loc(0, "f.txt"));
        assert_eq!(ok(ws, "/workspace").target, loc(0, ""));
        assert_eq!(ok(ws, "/workspaces/other/x.txt").target, loc(1, "x.txt"));
        assert_eq!(
            ok(ws, "/workspace/../workspaces/other/x.txt").target,
            loc(1, "x.txt")
        );
        assert_eq!(ok(ws, "f.txt").target, loc(0, "f.txt"));
        // `..` out of a root goes to the parent the sandbox sees, not the host's.
        assert!(matches!(
            err(ws, "../ws/f.txt"),
            ResolveError::ParentEscape { .. }
        ));
        assert_eq!(ok(ws, "../workspaces/other/x.txt").target, loc(1, "x.txt"));
    }
    // Without --allow-absolute-paths the host spelling is refused and the message names the mount.
    match err(&strict, &host_ws) {
        ResolveError::HostAbsolute { path, mount } => {
            assert_eq!(path, host_ws);
            assert_eq!(mount, "/workspace");
        }
        e => panic!("{e:?}"),
    }
    match err(&strict, &host_other) {
        ResolveError::HostAbsolute { mount, .. } => assert_eq!(mount, "/workspaces/other"),
        e => panic!("{e:?}"),
    }
    // Also when reached through `..` from a mount path.
    let sneaky = format!("/workspace/..{host_ws}");
    assert!(matches!(
        err(&strict, &sneaky),
        ResolveError::HostAbsolute { .. }
    ));
    // With it, the host spelling names the same place as the mount spelling.
    assert_eq!(ok(&allowing, &host_ws).target, loc(0, "f.txt"));
    assert_eq!(ok(&allowing, &host_other).target, loc(1, "x.txt"));
    assert_eq!(ok(&allowing, &sneaky).target, loc(0, "f.txt"));
}

#[test]
fn symlinked_leaf_pth_07() {
    let t = Tree::standard();
    let secret = t.path("outside/secret.txt");
    t.link("/etc/passwd", "ws/link.txt");
    t.link(&secret, "ws/secret-link.txt");
    t.link("../outside/secret.txt", "ws/rel-secret.txt");
    t.link("f.txt", "ws/good-link.txt");
    let ws = t.ws();
    for (p, link, target) in [
        (
            "link.txt",
            t.path("ws/link.txt"),
            PathBuf::from("/etc/passwd"),
        ),
        (
            "secret-link.txt",
            t.path("ws/secret-link.txt"),
            secret.clone(),
        ),
        (
            "./secret-link.txt",
            t.path("ws/secret-link.txt"),
            secret.clone(),
        ),
        (
            "a/../secret-link.txt",
            t.path("ws/secret-link.txt"),
            secret.clone(),
        ),
        (
            "rel-secret.txt",
            t.path("ws/rel-secret.txt"),
            PathBuf::from("../outside/secret.txt"),
        ),
    ] {
        match err(&ws, p) {
            ResolveError::SymlinkEscape {
                path,
                link: l,
                target: tg,
            } => {
                assert_eq!(path, p);
                assert_eq!(l, link, "{p}");
                assert_eq!(tg, target, "{p}");
            }
            e => panic!("{p}: {e:?}"),
        }
    }
    // Positive controls: the link really leads to the secret, and a link inside resolves, with
    // the entry at the link and the target at the file.
    assert_eq!(t.read("ws/secret-link.txt"), "SECRET");
    let r = ok(&ws, "good-link.txt");
    assert_eq!(r.entry, loc(0, "good-link.txt"));
    assert_eq!(r.target, loc(0, "f.txt"));
    assert!(r.exists);
}

#[test]
fn symlinked_ancestor_pth_04() {
    let t = Tree::standard();
    t.link(t.path("home/.ssh"), "ws/link");
    t.link("../home/.ssh", "ws/rel-link");
    t.link(t.path("ws/a"), "ws/good");
    let ws = t.ws();
    for p in [
        "link/id_rsa",
        "link/new-file",
        "link/new-dir/new-file",
        "link",
        "rel-link/id_rsa",
        "a/../link/id_rsa",
    ] {
        assert!(
            matches!(err(&ws, p), ResolveError::SymlinkEscape { .. }),
            "{p}"
        );
    }
    // Positive controls: the link does reach the key; a link to a directory inside resolves, the
    // parent chain of a file that does not exist yet included.
    assert_eq!(t.read("ws/link/id_rsa"), "PRIVATE KEY");
    let r = ok(&ws, "good/b.txt");
    assert_eq!(
        (r.entry.clone(), r.target.clone()),
        (loc(0, "a/b.txt"), loc(0, "a/b.txt"))
    );
    let r = ok(&ws, "good/new/deeper.txt");
    assert_eq!(r.entry, loc(0, "a/new/deeper.txt"));
    assert!(!r.exists);
}

#[test]
fn symlinked_parent_of_a_file_not_yet_existing() {
    let t = Tree::standard();
    t.link(t.path("outside"), "ws/out");
    t.link("a", "ws/in");
    let ws = t.ws();
    assert!(matches!(
        err(&ws, "out/created-by-agent.txt"),
        ResolveError::SymlinkEscape { .. }
    ));
    assert!(matches!(
        err(&ws, "out/newdir/x.txt"),
        ResolveError::SymlinkEscape { .. }
    ));
    let r = ok(&ws, "in/new.txt");
    assert_eq!(r.entry, loc(0, "a/new.txt"));
    assert_eq!(r.target, loc(0, "a/new.txt"));
    assert!(!r.exists);
    // Missing components and `..` among them fold without leaving the root.
    let r = ok(&ws, "in/new/../new2.txt");
    assert_eq!(r.target, loc(0, "a/new2.txt"));
}

#[test]
fn symlink_into_another_root_is_fine() {
    let t = Tree::standard();
    t.link(t.path("other"), "ws/to-other");
    t.link("../other/x.txt", "ws/rel-other.txt");
    t.link(t.path("ws/f.txt"), "other/back.txt");
    t.link("/workspaces/other/x.txt", "ws/mount-other.txt");
    t.link("/workspace/f.txt", "other/mount-primary.txt");
    let ws = t.ws();
    assert_eq!(ok(&ws, "to-other/x.txt").target, loc(1, "x.txt"));
    assert_eq!(ok(&ws, "to-other/new.txt").entry, loc(1, "new.txt"));
    let r = ok(&ws, "rel-other.txt");
    assert_eq!(
        (r.entry, r.target),
        (loc(0, "rel-other.txt"), loc(1, "x.txt"))
    );
    assert_eq!(ok(&ws, "to-other/back.txt").target, loc(0, "f.txt"));
    // Mount spelling in a link target means something only in the fixed scheme.
    assert!(matches!(
        err(&ws, "mount-other.txt"),
        ResolveError::SymlinkEscape { .. }
    ));
    let fixed = t.ws_with(MountSchemeChoice::Fixed, false);
    assert_eq!(ok(&fixed, "mount-other.txt").target, loc(1, "x.txt"));
    assert_eq!(
        ok(&fixed, "/workspaces/other/mount-primary.txt").target,
        loc(0, "f.txt")
    );
    // Host spelling in a link target is host reality and works in both schemes.
    assert_eq!(ok(&fixed, "to-other/x.txt").target, loc(1, "x.txt"));
}

#[test]
fn relative_symlink_climbing_out() {
    let t = Tree::standard();
    t.link("../outside", "ws/up");
    t.link("../../outside/secret.txt", "ws/a/deep.txt");
    t.link("..", "ws/parent");
    t.link("../../../../../../../../../../etc/passwd", "ws/a/far");
    let ws = t.ws();
    for p in [
        "up/secret.txt",
        "up",
        "a/deep.txt",
        "parent",
        "parent/outside/secret.txt",
        "a/far",
    ] {
        assert!(
            matches!(err(&ws, p), ResolveError::SymlinkEscape { .. }),
            "{p}"
        );
    }
    // A link to an ancestor of the roots is refused even when later components come back in.
    assert!(matches!(
        err(&ws, "parent/ws/f.txt"),
        ResolveError::SymlinkEscape { .. }
    ));
    // Positive control.
    assert_eq!(t.read("ws/up/secret.txt"), "SECRET");
    t.link("../f.txt", "ws/a/up-ok.txt");
    assert_eq!(ok(&ws, "a/up-ok.txt").target, loc(0, "f.txt"));
}

#[test]
fn symlink_loops() {
    let t = Tree::standard();
    t.link("l2", "ws/l1");
    t.link("l1", "ws/l2");
    t.link("self", "ws/self");
    t.link("deeper/x", "ws/deeper");
    // A chain of 41 links: l0 -> l1 -> ... -> l40 -> f.txt.
    for i in 0..=40 {
        let next = if i == 40 {
            "f.txt".to_owned()
        } else {
            format!("c{}", i + 1)
        };
        t.link(next, &format!("ws/c{i}"));
    }
    let ws = t.ws();
    for p in ["l1", "l2/x", "self", "deeper", "c0"] {
        assert!(
            matches!(err(&ws, p), ResolveError::SymlinkLoop { .. }),
            "{p}"
        );
    }
    // Positive control: 40 links are within the limit, as in Linux.
    assert_eq!(ok(&ws, "c1").target, loc(0, "f.txt"));
}

#[test]
fn proc_and_dev_paths_pth_10() {
    let t = Tree::standard();
    t.link("/proc/self/environ", "ws/env");
    t.link("/proc/self/cwd", "ws/cwd");
    t.link("/proc/self/root", "ws/root");
    t.link("/dev/fd/0", "ws/fd0");
    for ws in [
        t.ws(),
        t.ws_with(MountSchemeChoice::Auto, true),
        t.ws_with(MountSchemeChoice::Fixed, true),
    ] {
        for p in [
            "/proc/self/environ",
            "/proc/self/cwd/f.txt",
            "/proc/self/root/etc/passwd",
            "/proc/thread-self/environ",
            "/proc/1/environ",
            "/proc/self/fd/0",
            "/dev/fd/0",
            "/dev/stdin",
            "/sys/kernel",
        ] {
            assert!(
                matches!(err(&ws, p), ResolveError::OutsideRoots { .. }),
                "{p}"
            );
        }
        for p in ["env", "cwd/f.txt", "root/etc/passwd", "fd0"] {
            assert!(
                matches!(err(&ws, p), ResolveError::SymlinkEscape { .. }),
                "{p}"
            );
        }
    }
    // Positive control: /proc/self/environ is readable by this process, so refusing matters.
    assert!(std::fs::read("/proc/self/environ").is_ok());
}

#[test]
fn components_after_a_file() {
    let t = Tree::standard();
    let ws = t.ws();
    for p in ["f.txt/x", "f.txt/.", "f.txt/..", "f.txt/", "a/b.txt/c/d"] {
        assert!(
            matches!(err(&ws, p), ResolveError::NotADirectory { .. }),
            "{p}"
        );
    }
    assert_eq!(ok(&ws, "a/").target, loc(0, "a"));
    assert_eq!(ok(&ws, "a/.").target, loc(0, "a"));
}

#[test]
fn trailing_slash_follows_a_leaf_link() {
    let t = Tree::standard();
    t.link("a", "ws/dirlink");
    let ws = t.ws();
    let r = ok(&ws, "dirlink");
    assert_eq!((r.entry, r.target), (loc(0, "dirlink"), loc(0, "a")));
    let r = ok(&ws, "dirlink/");
    assert_eq!((r.entry, r.target), (loc(0, "a"), loc(0, "a")));
}

#[test]
fn dangling_link_inside_resolves_to_its_target() {
    let t = Tree::standard();
    t.link("a/not-yet.txt", "ws/dangling");
    let ws = t.ws();
    let r = ok(&ws, "dangling");
    assert_eq!(r.entry, loc(0, "dangling"));
    assert_eq!(r.target, loc(0, "a/not-yet.txt"));
    assert!(!r.exists);
}

#[test]
fn unreadable_components_are_refused_unless_root() {
    let t = Tree::standard();
    t.file("ws/locked/inner.txt", "x");
    let locked = t.path("ws/locked");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let ws = t.ws();
    let result = ws.resolve("locked/inner.txt");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    if is_root() {
        // Root can search any directory, so the component is inspected like any other.
        assert_eq!(result.unwrap().target, loc(0, "locked/inner.txt"));
    } else {
        // Fail closed: what cannot be inspected might be a link leading out.
        match result {
            Err(ResolveError::Unreadable { component, .. }) => {
                assert_eq!(component, t.path("ws/locked/inner.txt"));
            }
            other => panic!("{other:?}"),
        }
    }
    // Positive control: once readable it resolves for everyone.
    assert_eq!(
        ok(&ws, "locked/inner.txt").target,
        loc(0, "locked/inner.txt")
    );
}

#[test]
fn error_messages_name_the_path_and_the_way_forward() {
    let t = Tree::standard();
    let fixed = t.ws_with(MountSchemeChoice::Fixed, false);
    let host = s(&t.path("ws/f.txt"));
    let msg = err(&fixed, &host).to_string();
    assert!(
        msg.contains(&host) && msg.contains("/workspace") && msg.contains("--allow-absolute-paths"),
        "{msg}"
    );
    let msg = err(&fixed, "/etc/passwd").to_string();
    assert!(
        msg.contains("/etc/passwd") && msg.contains("/workspace"),
        "{msg}"
    );
    let msg = err(&fixed, "../x").to_string();
    assert!(msg.contains("../x") && msg.contains(".."), "{msg}");
}

/// `resolve_entry` stops at a leaf link, wherever it points (removing a link never touches its
/// target), and still refuses every escape on the way to it.
#[test]
fn resolve_entry_does_not_follow_the_leaf() {
    let t = Tree::standard();
    t.link(t.path("outside/secret.txt"), "ws/out-link");
    t.link(t.path("outside"), "ws/out-dir");
    t.link("f.txt", "ws/in-link");
    let ws = t.ws();
    // `resolve` refuses a leaf link that leads outside; `resolve_entry` answers the link itself.
    assert!(matches!(
        err(&ws, "out-link"),
        ResolveError::SymlinkEscape { .. }
    ));
    let r = ws.resolve_entry("out-link").unwrap();
    assert_eq!(
        (r.entry.clone(), r.target.clone()),
        (loc(0, "out-link"), loc(0, "out-link"))
    );
    assert!(r.exists);
    let r = ws.resolve_entry("in-link").unwrap();
    assert_eq!(r.target, loc(0, "in-link"), "not followed even inside");
    assert_eq!(ws.resolve("in-link").unwrap().target, loc(0, "f.txt"));
    // A link on the way is still followed, and refused when it leads out.
    for p in [
        "out-dir/secret.txt",
        "../outside/secret.txt",
        "/etc/passwd",
        "out-link/",
    ] {
        assert!(ws.resolve_entry(p).is_err(), "{p}");
    }
    // Positive control: a plain file.
    assert_eq!(
        ws.resolve_entry("a/b.txt").unwrap().target,
        loc(0, "a/b.txt")
    );
}
