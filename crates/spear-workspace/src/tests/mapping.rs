//! Lexical mapping between spellings, labels, and `realpath`.

use std::path::{Path, PathBuf};

use super::Tree;
use crate::{Location, MountSchemeChoice};

fn loc(root: usize, rel: &str) -> Location {
    Location {
        root,
        rel: PathBuf::from(rel),
    }
}

#[test]
fn locate_in_the_identity_scheme() {
    let t = Tree::standard();
    let ws = t.ws();
    let ws_root = t.path("ws");
    let other = t.path("other");
    let cases: Vec<(PathBuf, Option<Location>)> = vec![
        (ws_root.clone(), Some(loc(0, ""))),
        (ws_root.join("a/b.txt"), Some(loc(0, "a/b.txt"))),
        (ws_root.join("a/./c/../b.txt"), Some(loc(0, "a/b.txt"))),
        (other.join("x.txt"), Some(loc(1, "x.txt"))),
        // `..` climbing above a root, into another root or outside.
        (ws_root.join("../other/x.txt"), Some(loc(1, "x.txt"))),
        (ws_root.join(".."), None),
        (ws_root.join("../outside/secret.txt"), None),
        (t.path("outside"), None),
        // Not a root just because the name starts the same.
        (t.path("ws2"), None),
        (PathBuf::from("/etc/passwd"), None),
        (PathBuf::from("/workspace/x"), None),
        // Relative paths are not located.
        (PathBuf::from("a/b.txt"), None),
        (PathBuf::from(""), None),
    ];
    for (path, want) in cases {
        assert_eq!(ws.locate(&path), want, "{}", path.display());
    }
}

#[test]
fn locate_and_to_host_in_the_fixed_scheme() {
    let t = Tree::standard();
    let ws = t.ws_with(MountSchemeChoice::Fixed, false);
    let cases: Vec<(&str, Option<Location>, PathBuf)> = vec![
        ("/workspace", Some(loc(0, "")), t.path("ws")),
        (
            "/workspace/a/b.txt",
            Some(loc(0, "a/b.txt")),
            t.path("ws/a/b.txt"),
        ),
        (
            "/workspace/./a//b.txt",
            Some(loc(0, "a/b.txt")),
            t.path("ws/a/b.txt"),
        ),
        ("/workspaces/other", Some(loc(1, "")), t.path("other")),
        (
            "/workspaces/other/x.txt",
            Some(loc(1, "x.txt")),
            t.path("other/x.txt"),
        ),
        (
            "/workspace/../workspaces/other/x.txt",
            Some(loc(1, "x.txt")),
            t.path("other/x.txt"),
        ),
        (
            "/workspace/../etc/passwd",
            None,
            PathBuf::from("/etc/passwd"),
        ),
        ("/workspaces", None, PathBuf::from("/workspaces")),
        (
            "/workspaces/nope/x",
            None,
            PathBuf::from("/workspaces/nope/x"),
        ),
        ("/workspacex", None, PathBuf::from("/workspacex")),
        ("/etc/passwd", None, PathBuf::from("/etc/passwd")),
    ];
    for (path, want, host) in cases {
        assert_eq!(ws.locate(Path::new(path)), want, "{path}");
        assert_eq!(ws.to_host(Path::new(path)), host, "{path}");
    }
    // Host spelling is located too (after mount spelling), and left as it is by to_host.
    let host = t.path("ws/a/b.txt");
    assert_eq!(ws.locate(&host), Some(loc(0, "a/b.txt")));
    assert_eq!(ws.to_host(&host), host);
}

#[test]
fn to_host_leaves_other_paths_normalised() {
    let t = Tree::standard();
    let ws = t.ws();
    let cases: &[(&str, &str)] = &[
        ("a/./b/../c", "a/c"),
        ("../x", "../x"),
        ("", "."),
        ("/etc/../etc/passwd", "/etc/passwd"),
        ("/workspace/x", "/workspace/x"),
    ];
    for (path, want) in cases {
        assert_eq!(ws.to_host(Path::new(path)), PathBuf::from(want), "{path}");
    }
}

#[test]
fn host_and_mount_paths_of_locations() {
    let t = Tree::standard();
    let fixed = t.ws_with(MountSchemeChoice::Fixed, false);
    assert_eq!(fixed.host_path(&loc(0, "")), t.path("ws"));
    assert_eq!(fixed.host_path(&loc(1, "x.txt")), t.path("other/x.txt"));
    assert_eq!(fixed.mount_path(&loc(0, "")), PathBuf::from("/workspace"));
    assert_eq!(
        fixed.mount_path(&loc(1, "x.txt")),
        PathBuf::from("/workspaces/other/x.txt")
    );
    // No trailing slash for a root itself.
    assert_eq!(
        fixed.host_path(&loc(0, "")).as_os_str(),
        t.path("ws").as_os_str()
    );
}

#[test]
fn labels() {
    let t = Tree::standard();
    let ws = t.ws();
    assert_eq!(ws.label(&loc(0, "")), ".");
    assert_eq!(ws.label(&loc(0, "a/b.txt")), "a/b.txt");
    assert_eq!(ws.label(&loc(1, "")), "other:.");
    assert_eq!(ws.label(&loc(1, "x.txt")), "other:x.txt");
}

#[test]
fn realpath_follows_links_and_translates_mount_spelling() {
    let t = Tree::standard();
    t.link("a", "ws/to-a");
    t.link(t.path("home/.ssh"), "ws/ssh");
    t.link("/workspaces/other/x.txt", "ws/mounted");
    t.link("loop2", "ws/loop1");
    t.link("loop1", "ws/loop2");
    let identity = t.ws();
    let fixed = t.ws_with(MountSchemeChoice::Fixed, false);

    let ws = t.path("ws");
    for w in [&identity, &fixed] {
        assert_eq!(w.realpath(&ws.join("to-a/b.txt")), t.path("ws/a/b.txt"));
        assert_eq!(
            w.realpath(&ws.join("to-a/new/deeper")),
            t.path("ws/a/new/deeper")
        );
        // Links outside the roots are followed: this is the spelling checks look at.
        assert_eq!(
            w.realpath(&ws.join("ssh/id_rsa")),
            t.path("home/.ssh/id_rsa")
        );
        assert_eq!(w.realpath(Path::new("to-a/b.txt")), t.path("ws/a/b.txt"));
        // A loop stops resolution there and appends the rest.
        assert_eq!(w.realpath(&ws.join("loop1/x")), t.path("ws/loop1/x"));
    }
    assert_eq!(
        fixed.realpath(Path::new("/workspace/to-a/b.txt")),
        t.path("ws/a/b.txt")
    );
    assert_eq!(
        fixed.realpath(Path::new("/workspaces/other/x.txt")),
        t.path("other/x.txt")
    );
    // A link written in mount spelling is translated.
    assert_eq!(fixed.realpath(&ws.join("mounted")), t.path("other/x.txt"));
    // In the identity scheme the mount spelling of the fixed scheme means nothing.
    assert_eq!(
        identity.realpath(&ws.join("mounted")),
        PathBuf::from("/workspaces/other/x.txt")
    );
}
