//! Property tests: invariants over random paths, against a fixture tree with links.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};

use super::Tree;
use crate::lexical::{lexical_normalize, normalize_absolute};
use crate::naming::unique_names;
use crate::{Location, MountSchemeChoice, Workspace};

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        // Nothing is written into the source tree (the suite also runs unprivileged).
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    })
}

/// `base/ws` (primary) and `base/other` with links inside, across and out:
/// ws/a/x, ws/a/link -> ../b, ws/a/b -> <other>, ws/b -> a, ws/link -> ../outside, ws/x,
/// other/a -> <ws>, other/x, other/link -> link, outside/a/x, outside/x.
fn fixture() -> Tree {
    let t = Tree::new();
    t.file("ws/a/x", "ws/a/x");
    t.link("../b", "ws/a/link");
    t.link(t.path("other"), "ws/a/b");
    t.link("a", "ws/b");
    t.link("../outside", "ws/link");
    t.file("ws/x", "ws/x");
    t.link(t.path("ws"), "other/a");
    t.file("other/x", "other/x");
    t.link("link", "other/link");
    t.file("outside/a/x", "OUT");
    t.file("outside/x", "OUT");
    t
}

fn rel_path() -> impl Strategy<Value = String> {
    let comp = prop::sample::select(vec!["a", "b", "..", ".", "link", "x"]);
    (prop::collection::vec(comp, 1..8), any::<bool>())
        .prop_map(|(c, slash)| c.join("/") + if slash { "/" } else { "" })
}

fn under_a_root(ws: &Workspace, host: &Path) -> bool {
    ws.roots().iter().any(|r| host.starts_with(r.host_path()))
}

#[test]
fn resolve_never_lands_outside_a_root() {
    let t = fixture();
    for scheme in [MountSchemeChoice::Auto, MountSchemeChoice::Fixed] {
        let ws = t.ws_with(scheme, false);
        runner(512)
            .run(&rel_path(), |p| {
                let kernel = std::fs::canonicalize(ws.launch_dir().join(&p)).ok();
                match ws.resolve(&p) {
                    Ok(r) => {
                        let entry = ws.host_path(&r.entry);
                        let target = ws.host_path(&r.target);
                        prop_assert!(under_a_root(&ws, &entry), "{p}: {}", entry.display());
                        prop_assert!(under_a_root(&ws, &target), "{p}: {}", target.display());
                        // The parent chain is physical: no link in it.
                        if let Some(parent) = entry.parent()
                            && let Ok(real) = std::fs::canonicalize(parent)
                        {
                            prop_assert_eq!(real, parent.to_path_buf(), "{}", p);
                        }
                        // Where the kernel can resolve it, it agrees. (The kernel refuses
                        // `missing/..`, which resolve folds lexically without leaving the root.)
                        if let Some(k) = kernel {
                            prop_assert!(r.exists, "{}", p);
                            prop_assert_eq!(k, target, "{}", p);
                        }
                    }
                    Err(_) => {
                        // The kernel may reach it, but then only outside a root (or through a
                        // file, which we refuse too).
                        if let Some(k) = kernel {
                            prop_assert!(
                                !under_a_root(&ws, &k),
                                "{p} refused but is {}",
                                k.display()
                            );
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn resolve_with_absolute_spellings_never_lands_outside() {
    let t = fixture();
    let ws_host = t.path("ws").to_string_lossy().into_owned();
    let other_host = t.path("other").to_string_lossy().into_owned();
    let base = t.base.to_string_lossy().into_owned();
    let prefixes = vec![
        "/workspace".to_owned(),
        "/workspaces/other".to_owned(),
        "/workspaces".to_owned(),
        ws_host,
        other_host,
        base,
        "/".to_owned(),
        "/proc/self".to_owned(),
    ];
    for (scheme, allow) in [
        (MountSchemeChoice::Auto, false),
        (MountSchemeChoice::Fixed, false),
        (MountSchemeChoice::Fixed, true),
    ] {
        let ws = t.ws_with(scheme, allow);
        let strategy = (prop::sample::select(prefixes.clone()), rel_path());
        runner(512)
            .run(&strategy, |(prefix, rel)| {
                let p = format!("{prefix}/{rel}");
                if let Ok(r) = ws.resolve(&p) {
                    prop_assert!(under_a_root(&ws, &ws.host_path(&r.entry)), "{p}");
                    prop_assert!(under_a_root(&ws, &ws.host_path(&r.target)), "{p}");
                }
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn random_writes_and_deletes_never_touch_outside() {
    let t = fixture();
    let ws = t.ws();
    let fs = ws.fs().unwrap();
    let before = t.snapshot("outside");
    runner(256)
        .run(&(rel_path(), any::<bool>()), |(p, delete)| {
            if let Ok(r) = ws.resolve(&p) {
                let _ = if delete {
                    fs.delete(&r)
                } else {
                    fs.write(&r, b"written").map(|_| ())
                };
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(t.snapshot("outside"), before);
    // Positive control: the outside tree is still reachable through the workspace's link by name.
    assert_eq!(t.read("ws/link/x"), "OUT");
}

fn rel_components() -> impl Strategy<Value = PathBuf> {
    prop::collection::vec("[a-z]{1,3}", 0..5).prop_map(|v| v.iter().collect())
}

#[test]
fn locate_and_to_host_agree() {
    let t = fixture();
    for scheme in [MountSchemeChoice::Auto, MountSchemeChoice::Fixed] {
        let ws = t.ws_with(scheme, true);
        let strategy = (0..ws.roots().len(), rel_components());
        runner(256)
            .run(&strategy, |(root, rel)| {
                let loc = Location { root, rel };
                let mount = ws.mount_path(&loc);
                let host = ws.host_path(&loc);
                prop_assert_eq!(ws.locate(&mount), Some(loc.clone()));
                prop_assert_eq!(ws.locate(&host), Some(loc.clone()));
                prop_assert_eq!(ws.to_host(&mount), host.clone());
                prop_assert_eq!(ws.locate(&ws.to_host(&mount)), Some(loc.clone()));
                // Extra `.` and `a/..` change nothing.
                let noisy = mount.join(".").join("zz").join("..");
                prop_assert_eq!(ws.locate(&noisy), Some(loc));
                Ok(())
            })
            .unwrap();
    }
}

#[test]
fn normalisation_never_yields_dot_or_dotdot() {
    let comp = prop::sample::select(vec!["a", "b", "..", ".", "", "x.y"]);
    let strategy = (prop::collection::vec(comp, 0..10), any::<bool>());
    runner(1024)
        .run(&strategy, |(comps, absolute)| {
            let p = PathBuf::from(format!(
                "{}{}",
                if absolute { "/" } else { "" },
                comps.join("/")
            ));
            let absolute = p.is_absolute();
            let n = lexical_normalize(&p);
            if absolute {
                let a = normalize_absolute(&p).unwrap();
                prop_assert_eq!(&a, &n);
                prop_assert!(a.components().all(|c| !matches!(
                    c,
                    std::path::Component::ParentDir | std::path::Component::CurDir
                )));
            } else {
                // `..` only as a prefix, never after a name.
                let s: Vec<_> = n.components().collect();
                let first_name = s
                    .iter()
                    .position(|c| !matches!(c, std::path::Component::ParentDir))
                    .unwrap_or(s.len());
                prop_assert!(
                    s[first_name..]
                        .iter()
                        .all(|c| matches!(c, std::path::Component::Normal(_)))
                        || n == Path::new(".")
                );
            }
            // Idempotent.
            prop_assert_eq!(lexical_normalize(&n), n);
            Ok(())
        })
        .unwrap();
}

#[test]
fn root_names_are_unique_and_safe() {
    let name = "[a-z:/\\n .-]{0,6}";
    let strategy = prop::collection::vec(name, 0..6);
    runner(512)
        .run(&strategy, |bases| {
            let roots: Vec<PathBuf> = bases.iter().map(|b| Path::new("/r").join(b)).collect();
            let names = unique_names(&roots);
            prop_assert_eq!(names.len(), roots.len());
            for (i, n) in names.iter().enumerate() {
                prop_assert!(!names[..i].contains(n), "{n} repeated in {names:?}");
                prop_assert!(!n.is_empty() && n != "." && n != "..");
                prop_assert!(
                    n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                    "{n}"
                );
            }
            Ok(())
        })
        .unwrap();
}
