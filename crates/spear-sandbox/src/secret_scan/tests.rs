//! The scan of bound trees against real directories: every case of issue 31 masked beside a
//! clean twin, the incremental looks (stamps, racy stamps, watches), links, roots, files and the
//! file between processes.

use super::disk::{FORMAT, decode, encode};
use super::*;
use std::fs;
use std::time::Duration;

/// A home with the trees of issue 31's cases, each beside a twin that holds no secret.
struct Host {
    _dir: tempfile::TempDir,
    base: PathBuf,
}

const TOKEN: &str = "s3cr3t-token-value";

impl Host {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        Host { _dir: dir, base }
    }

    fn put(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.base.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    /// Every case of the issue and its clean twin.
    fn cases(&self) {
        let t = TOKEN;
        self.put(
            ".cargo/config.toml",
            &format!("[registry]\ntoken = \"{t}\"\n"),
        );
        self.put(
            ".cargo/config",
            &format!("[registries.corp]\ntoken = \"{t}\"\n"),
        );
        self.put(
            ".cargo/registry/src/i/a-1.0/.cargo/config.toml",
            "[build]\njobs = 2\n",
        );
        self.put(".cargo/registry/src/i/a-1.0/src/lib.rs", "pub fn a() {}\n");
        self.put(
            ".pyenv/versions/3.12.1/envs/venv/pip.conf",
            &format!("[global]\nindex-url = https://u:{t}@pypi.corp/simple\n"),
        );
        self.put(
            ".pyenv/versions/3.11.0/envs/clean/pip.conf",
            "[global]\nindex-url = https://pypi.org/simple\n",
        );
        self.put(
            ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
            &format!("//registry.npmjs.org/:_authToken={t}\n"),
        );
        self.put(
            ".nvm/versions/node/v18.0.0/lib/node_modules/npm/npmrc",
            "globalconfig=/x/etc/npmrc\n",
        );
        self.put(
            "miniconda3/envs/e/.condarc",
            &format!("channels:\n  - https://conda.anaconda.org/t/{t}/corp\n"),
        );
        self.put(
            "miniconda3/envs/e/pip.conf",
            &format!("[global]\nextra-index-url = https://{t}:x@corp/simple\n"),
        );
        self.put("miniconda3/envs/f/.condarc", "channels:\n  - conda-forge\n");
        self.put(
            ".pyenv/plugins/.git-credentials",
            &format!("https://u:{t}@github.com\n"),
        );
        self.put(
            ".cargo/git/.netrc",
            &format!("machine h login u password {t}\n"),
        );
        self.put(
            ".local/share/uv/uv.toml",
            &format!("[[index]]\nurl = \"https://u:{t}@corp/simple\"\n"),
        );
        self.put(
            ".local/share/uv/tools/ruff/pip.conf",
            &format!("[global]\nindex-url = https://u:{t}@corp/simple\n"),
        );
        self.put(
            ".local/share/uv/tools/black/pip.conf",
            "[global]\ntimeout = 30\n",
        );
        self.put(".local/share/uv/python/cpython/lib/x.py", "import os\n");
    }

    fn trees(&self) -> Vec<PathBuf> {
        [".cargo", ".pyenv", ".nvm", "miniconda3", ".local/share/uv"]
            .iter()
            .map(|t| self.p(t))
            .collect()
    }
}

/// A fresh scan of `tree` as if it were `now`.
fn scan_of(tree: &Path, now: SystemTime, stats: &mut ScanStats) -> TreeScan {
    let mut look = Look {
        now,
        skip: &[],
        watcher: None,
        stats,
    };
    TreeScan::scan(tree, &mut look)
}

/// A look at `scan` at `depth` as if it were `now`; whether it changed.
fn look(scan: &mut TreeScan, depth: Depth, now: SystemTime, stats: &mut ScanStats) -> bool {
    let mut look = Look {
        now,
        skip: &[],
        watcher: None,
        stats,
    };
    match depth {
        Depth::Full => scan.refresh(&mut look),
        // What `look_at` does when no directory had an event.
        Depth::Found => scan.recheck_holding(&scan.holding(), &mut look),
    }
}

fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

fn paths(masks: &[Mask]) -> Vec<PathBuf> {
    masks.iter().map(|m| m.path().to_path_buf()).collect()
}

/// Each case of the issue is masked, at whatever depth; each clean twin is not (the positive
/// control: the same kind of file, in the same kind of place, without the secret).
#[test]
fn every_case_is_masked_and_no_twin() {
    let host = Host::new();
    host.cases();
    let (masks, stats) = masks_at(&host.trees(), &[], None, Depth::Full, false, later());
    let got = paths(&masks);
    for secret in [
        ".cargo/config.toml",
        ".cargo/config",
        ".cargo/git/.netrc",
        ".pyenv/versions/3.12.1/envs/venv/pip.conf",
        ".pyenv/plugins/.git-credentials",
        ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
        "miniconda3/envs/e/.condarc",
        "miniconda3/envs/e/pip.conf",
        ".local/share/uv/uv.toml",
        ".local/share/uv/tools/ruff/pip.conf",
    ] {
        assert!(
            got.contains(&host.p(secret)),
            "{secret} not masked: {got:?}"
        );
    }
    assert_eq!(got.len(), 10, "{got:?}");
    assert!(masks.iter().all(|m| matches!(m, Mask::File(_))));
    assert!(stats.listed > 20 && stats.judged >= 13, "{stats:?}");
}

/// A second look at an unchanged tree lists nothing; a file that appears deep inside is
/// found by listing its directory alone; a token written into a known file in place (no
/// directory changes) is found by the look every command makes.
#[test]
fn a_look_lists_only_what_changed() {
    let host = Host::new();
    host.cases();
    let tree = host.p(".pyenv");
    let mut stats = ScanStats::default();
    let mut scan = scan_of(&tree, later(), &mut stats);
    let mut again = ScanStats::default();
    assert!(!look(&mut scan, Depth::Full, later(), &mut again));
    assert_eq!((again.listed, again.judged), (0, 0), "{again:?}");
    assert_eq!(again.stamped, scan.dirs.len());

    // Deep, new: its directory's stamp moved, that directory alone is listed.
    host.put(
        ".pyenv/versions/3.11.0/lib/python3.11/site-packages/x/.netrc",
        "machine h\n",
    );
    let mut masks = Vec::new();
    let mut seen = ScanStats::default();
    // Positive control: a look at the files found only does not see it.
    assert!(!look(&mut scan.clone(), Depth::Found, later(), &mut seen));
    assert!(look(&mut scan, Depth::Full, later(), &mut seen));
    scan.masks(&scan.holding(), || &[], &mut masks);
    assert!(
        paths(&masks)
            .contains(&host.p(".pyenv/versions/3.11.0/lib/python3.11/site-packages/x/.netrc")),
        "{masks:?}"
    );
    assert!(seen.listed <= 6, "{seen:?}");

    // In place: the clean pip.conf gets a token appended.
    let clean = host.p(".pyenv/versions/3.11.0/envs/clean/pip.conf");
    let mut before = Vec::new();
    scan.masks(&scan.holding(), || &[], &mut before);
    assert!(!paths(&before).contains(&clean));
    let text = fs::read_to_string(&clean).unwrap();
    let text = format!("{text}extra-index-url = https://u:{TOKEN}@h/simple\n");
    fs::write(&clean, text).unwrap();
    let mut fresh = ScanStats::default();
    assert!(look(&mut scan, Depth::Found, later(), &mut fresh));
    assert_eq!(fresh.listed, 0);
    let mut after = Vec::new();
    scan.masks(&scan.holding(), || &[], &mut after);
    assert!(paths(&after).contains(&clean), "{after:?}");

    // A store that is removed is no mask any more (bwrap would fail to mount over nothing).
    fs::remove_file(host.p(".pyenv/plugins/.git-credentials")).unwrap();
    assert!(look(&mut scan, Depth::Found, later(), &mut fresh));
    let mut gone = Vec::new();
    scan.masks(&scan.holding(), || &[], &mut gone);
    assert!(!paths(&gone).contains(&host.p(".pyenv/plugins/.git-credentials")));
}

/// A stamp taken within [`RACY`] of its change is looked at again, whatever it says.
#[test]
fn a_racy_stamp_is_not_trusted() {
    let host = Host::new();
    host.cases();
    let tree = host.p(".cargo");
    let mut stats = ScanStats::default();
    let now = SystemTime::now();
    let mut scan = scan_of(&tree, now, &mut stats);
    let mut again = ScanStats::default();
    look(&mut scan, Depth::Full, now, &mut again);
    assert_eq!(
        again.listed,
        scan.dirs.len(),
        "every directory is new: {again:?}"
    );
    // Positive control: taken an hour on, the stamps hold.
    let mut settled = scan_of(&tree, later(), &mut stats);
    let mut quiet = ScanStats::default();
    look(&mut settled, Depth::Full, later(), &mut quiet);
    assert_eq!(quiet.listed, 0);
}

/// What lies in a workspace root inside a tree is the project's, not the tree's: not scanned.
#[test]
fn a_root_inside_a_tree_is_left_out() {
    let host = Host::new();
    host.put("opt/proj/.netrc", "machine h password p\n");
    host.put("opt/tool/.netrc", "machine h password p\n");
    let skip = [host.p("opt/proj")];
    let (masks, _) = masks_at(&[host.p("opt")], &skip, None, Depth::Full, false, later());
    assert_eq!(paths(&masks), vec![host.p("opt/tool/.netrc")]);
    // Positive control: without the root, both.
    forget_scan(&host.p("opt"));
    let (masks, _) = masks_at(&[host.p("opt")], &[], None, Depth::Full, false, later());
    assert_eq!(masks.len(), 2);
}

/// A link with a credential name is masked at its target where the sandbox shows it (a
/// bound tree); one that points outside every bound tree needs no mask, and the link itself
/// is never a mask (bwrap would follow it).
#[test]
fn credential_links_mask_their_targets() {
    let host = Host::new();
    let kept = host.put(".cargo/store/tokens.txt", "x\n");
    host.put(".cargo/clean.toml", "[build]\njobs = 1\n");
    let secret = host.put(
        ".cargo/secret.toml",
        &format!("[registry]\ntoken = \"{TOKEN}\"\n"),
    );
    std::os::unix::fs::symlink(&kept, host.p(".cargo/credentials.toml")).unwrap();
    std::os::unix::fs::symlink(&secret, host.p(".cargo/config.toml")).unwrap();
    fs::create_dir_all(host.p(".pyenv")).unwrap();
    std::os::unix::fs::symlink(host.p("elsewhere/.netrc"), host.p(".pyenv/.netrc")).unwrap();
    host.put("elsewhere/.netrc", "machine h password p\n");
    let (masks, _) = masks_at(
        &[host.p(".cargo"), host.p(".pyenv")],
        &[],
        None,
        Depth::Full,
        false,
        later(),
    );
    assert_eq!(masks, vec![Mask::File(secret), Mask::File(kept)]);
    // Positive control: a config link to a clean file is no mask.
    fs::remove_file(host.p(".cargo/config.toml")).unwrap();
    std::os::unix::fs::symlink(host.p(".cargo/clean.toml"), host.p(".cargo/config.toml")).unwrap();
    forget_scan(&host.p(".cargo"));
    let (masks, _) = masks_at(&[host.p(".cargo")], &[], None, Depth::Full, false, later());
    assert_eq!(masks.len(), 1, "{masks:?}");
}

/// A scan written by one process is read by the next, which then lists nothing of an unchanged
/// tree; a file of another format, of other rules or cut short is never taken.
#[test]
fn scans_survive_the_process() {
    let host = Host::new();
    host.cases();
    let disk = tempfile::tempdir().unwrap();
    let trees = host.trees();
    let (first, cold) = masks_at(&trees, &[], Some(disk.path()), Depth::Full, false, later());
    assert_eq!(cold.from_disk, 0);
    for tree in &trees {
        forget_scan(tree);
    }
    let (second, warm) = masks_at(&trees, &[], Some(disk.path()), Depth::Found, false, later());
    assert_eq!(first, second);
    assert_eq!(warm.from_disk, trees.len());
    assert_eq!(warm.listed, 0, "{warm:?}");
    assert!(
        warm.stamped > 0,
        "a scan from disk is checked whole: {warm:?}"
    );

    let tree = host.p(".pyenv");
    let mut stats = ScanStats::default();
    let scan = scan_of(&tree, later(), &mut stats);
    let bytes = encode(&scan);
    assert_eq!(decode(&bytes), Some(scan));
    assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
    let mut other = bytes.clone();
    other[FORMAT.len()] ^= 1;
    assert_eq!(decode(&other), None, "other rules");
    assert_eq!(decode(b"junk"), None);
}

/// A bound file (a host-read path) is judged by its name and what it holds.
#[test]
fn bound_files_are_judged() {
    let host = Host::new();
    let secret = host.put(
        "srv/pip.conf",
        "[global]\nindex-url = https://u:p@h/simple\n",
    );
    let clean = host.put(
        "srv2/pip.conf",
        "[global]\nindex-url = https://pypi.org/simple\n",
    );
    let store = host.put("srv/.netrc", "machine h\n");
    let plain = host.put("srv/data.csv", "a,b\n");
    let (masks, _) = masks_at(
        &[secret.clone(), clean, store.clone(), plain],
        &[],
        None,
        Depth::Full,
        false,
        later(),
    );
    assert_eq!(masks, vec![Mask::File(store), Mask::File(secret)]);
}

/// A watched tree (a session's): after the first look, a look lists exactly the directories
/// that had events and stamps none, and sees every change: a credential file created deep in a
/// new directory, a directory replaced, one moved in from outside, one renamed inside, a token
/// written in place, a store removed. The positive control for each is the mask's absence
/// before the change.
#[test]
fn a_watched_tree_sees_every_change() {
    let host = Host::new();
    host.cases();
    let tree = [host.p(".pyenv")];
    let look = || masks_at(&tree, &[], None, Depth::Found, true, later());
    let has = |masks: &[Mask], rel: &str| paths(masks).contains(&host.p(rel));
    let (first, _) = look();
    let (again, quiet) = look();
    assert_eq!(first, again);
    assert_eq!(
        (quiet.watched, quiet.stamped, quiet.listed),
        (1, 0, 0),
        "{quiet:?}"
    );

    let deep = ".pyenv/versions/3.11.0/lib/python3.11/site-packages/x/y/.netrc";
    assert!(!has(&again, deep));
    host.put(deep, "machine h password p\n");
    let (masks, stats) = look();
    assert!(has(&masks, deep), "{masks:?}");
    assert_eq!(stats.stamped, 0);
    // The directory that had the event, and the five new ones under it.
    assert!(stats.listed <= 6, "{stats:?}");

    let clean = ".pyenv/versions/3.11.0/envs/clean";
    assert!(!has(&masks, &format!("{clean}/pip.conf")));
    fs::remove_dir_all(host.p(clean)).unwrap();
    host.put(
        &format!("{clean}/pip.conf"),
        "[global]\nindex-url = https://u:p@h/simple\n",
    );
    let (masks, _) = look();
    assert!(has(&masks, &format!("{clean}/pip.conf")), "{masks:?}");

    host.put("outside/pkg/sub/.git-credentials", "https://u:p@h\n");
    let moved = ".pyenv/versions/3.12.1/pkg";
    fs::rename(host.p("outside/pkg"), host.p(moved)).unwrap();
    let (masks, _) = look();
    assert!(
        has(&masks, &format!("{moved}/sub/.git-credentials")),
        "{masks:?}"
    );

    let renamed = ".pyenv/versions/3.12.1/pkg2";
    fs::rename(host.p(moved), host.p(renamed)).unwrap();
    let (masks, _) = look();
    assert!(
        has(&masks, &format!("{renamed}/sub/.git-credentials")),
        "{masks:?}"
    );
    assert!(
        !has(&masks, &format!("{moved}/sub/.git-credentials")),
        "{masks:?}"
    );
    // The renamed directory's own watch follows it: a change inside it is seen there.
    host.put(&format!("{renamed}/sub/.netrc"), "machine h\n");
    let (masks, _) = look();
    assert!(has(&masks, &format!("{renamed}/sub/.netrc")), "{masks:?}");

    let venv = ".pyenv/versions/3.12.1/envs/venv/pip.conf";
    let twin = ".pyenv/versions/3.11.0/lib/pip.conf";
    host.put(twin, "[global]\ntimeout = 1\n");
    let (masks, _) = look();
    assert!(has(&masks, venv) && !has(&masks, twin), "{masks:?}");
    let mut text = fs::read_to_string(host.p(twin)).unwrap();
    text.push_str("index-url = https://u:p@h/simple\n");
    fs::write(host.p(twin), text).unwrap();
    let (masks, _) = look();
    assert!(has(&masks, twin), "{masks:?}");

    // A file found, written through a hard link outside the tree: no event in its directory,
    // so only the quiet look's check of what was found sees it.
    let inner = ".pyenv/versions/3.11.0/lib/sub/pip.conf";
    host.put(inner, "[global]\ntimeout = 1\n");
    let (masks, _) = look();
    assert!(!has(&masks, inner), "{masks:?}");
    fs::create_dir_all(host.p("outside")).unwrap();
    fs::hard_link(host.p(inner), host.p("outside/pip.conf")).unwrap();
    let _ = look();
    let (masks, quiet) = look();
    assert!(!has(&masks, inner), "{masks:?}");
    assert_eq!((quiet.listed, quiet.stamped), (0, 0), "{quiet:?}");
    let mut linked = fs::OpenOptions::new()
        .append(true)
        .open(host.p("outside/pip.conf"))
        .unwrap();
    std::io::Write::write_all(&mut linked, b"index-url = https://u:p@h/simple\n").unwrap();
    drop(linked);
    let (masks, quiet) = look();
    assert!(has(&masks, inner), "{masks:?}");
    assert_eq!((quiet.listed, quiet.stamped), (0, 0), "{quiet:?}");

    fs::remove_file(host.p(deep)).unwrap();
    let (masks, stats) = look();
    assert!(!has(&masks, deep), "{masks:?}");
    assert_eq!(stats.stamped, 0);
}

/// A tree whose root is a link (`~/.pyenv` linking to `/data/pyenv`) is scanned through it, and
/// masked where the sandbox binds it: at the link's path.
#[test]
fn a_linked_root_is_scanned_through_the_link() {
    let host = Host::new();
    host.put(
        "data/pyenv/versions/3.12/envs/v/pip.conf",
        "[global]\nindex-url = https://u:p@h/s\n",
    );
    std::os::unix::fs::symlink(host.p("data/pyenv"), host.p(".pyenv")).unwrap();
    let tree = [host.p(".pyenv")];
    let want = vec![Mask::File(host.p(".pyenv/versions/3.12/envs/v/pip.conf"))];
    let (masks, _) = masks_at(&tree, &[], None, Depth::Full, false, later());
    assert_eq!(masks, want);
    let (masks, stats) = masks_at(&tree, &[], None, Depth::Full, true, later());
    assert_eq!(masks, want);
    assert_eq!(stats.listed, 0, "{stats:?}");
    host.put("data/pyenv/.netrc", "machine h\n");
    let (masks, _) = masks_at(&tree, &[], None, Depth::Found, true, later());
    assert!(
        paths(&masks).contains(&host.p(".pyenv/.netrc")),
        "{masks:?}"
    );
}

/// A scan's file unused for two weeks is removed when another is written; one in use is kept.
#[test]
fn unused_scan_files_are_swept() {
    let host = Host::new();
    host.cases();
    let disk = tempfile::tempdir().unwrap();
    let old = disk.path().join("0123456789abcdef");
    fs::write(&old, b"x").unwrap();
    let month_ago = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
    fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let fresh = disk.path().join("fedcba9876543210");
    fs::write(&fresh, b"y").unwrap();
    masks_at(
        &[host.p(".cargo")],
        &[],
        Some(disk.path()),
        Depth::Full,
        false,
        later(),
    );
    assert!(!old.exists(), "positive control: it was there, a month old");
    assert!(fresh.exists());
    assert_eq!(
        fs::read_dir(disk.path()).unwrap().count(),
        2,
        "the fresh one and the new scan"
    );
}
