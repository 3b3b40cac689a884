//! `ResultStore` against real temporary directories: chunks cover the whole content, the content
//! is re-hashed on every read, references cannot leave the session's directory, and the store's
//! directories are private.
//!
//! Every refusal has a positive control showing the same read works when nothing is wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use spear_runtime::{ResultStore, StoreError};
use spear_testkit::process::is_root;

struct Fx {
    _tmp: tempfile::TempDir,
    base: PathBuf,
}

impl Fx {
    fn new() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        Fx { _tmp: tmp, base }
    }

    fn results(&self) -> PathBuf {
        self.base.join("state/spear/results")
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// Reads `r` chunk by chunk with `limit`, checking each chunk starts where the last one said.
fn read_all(store: &ResultStore, r: &str, limit: u64) -> (String, Vec<(u64, Option<u64>)>) {
    let mut text = String::new();
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let chunk = store.read(r, offset, limit).unwrap();
        assert_eq!(
            chunk.offset, offset,
            "a chunk starts where the last one ended"
        );
        text.push_str(&chunk.text);
        seen.push((chunk.offset, chunk.next_offset));
        match chunk.next_offset {
            Some(next) => {
                assert!(next > offset, "every chunk makes progress");
                offset = next;
            }
            None => return (text, seen),
        }
    }
}

#[test]
fn chunks_cover_the_whole_content_on_character_boundaries() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let content = (0..60)
        .map(|i| format!("line {i}: é€😀 ascii\n"))
        .collect::<Vec<_>>()
        .concat();
    let r = store.put(content.as_bytes()).unwrap();
    assert_eq!(r.size, content.len() as u64);
    assert_eq!(r.hash.len(), 64);

    for limit in [1, 2, 3, 5, 7, 64, 1000, 1 << 20] {
        let (text, seen) = read_all(&store, r.as_ref(), limit);
        assert_eq!(text, content, "limit {limit}");
        // Every chunk was valid UTF-8 on its own: no replacement characters anywhere.
        assert!(!text.contains('\u{fffd}'));
        if limit >= content.len() as u64 {
            assert_eq!(seen, vec![(0, None)]);
        }
    }

    // An offset inside a character starts the chunk at that character.
    let inside = u64::try_from(content.find('€').unwrap()).unwrap() + 1;
    let chunk = store.read(&r, inside, 3).unwrap();
    assert_eq!(chunk.offset, inside - 1);
    assert_eq!(chunk.text, "€");
    assert_eq!(chunk.total, content.len() as u64);
}

#[test]
fn binary_content_is_covered_exactly_once() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let r = store.put(&bytes).unwrap();
    let mut offset = 0;
    let mut covered = 0;
    loop {
        let chunk = store.read(&r, offset, 100).unwrap();
        assert_eq!(chunk.offset, offset);
        let end = chunk.next_offset.unwrap_or(chunk.total);
        covered += end - offset;
        match chunk.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(covered, 3000);
}

#[test]
fn offsets_at_and_past_the_end() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let r = store.put(b"hello").unwrap();
    let end = store.read(&r, 5, 10).unwrap();
    assert_eq!(
        (end.text.as_str(), end.next_offset, end.total),
        ("", None, 5)
    );
    assert!(matches!(
        store.read(&r, 6, 10),
        Err(StoreError::OffsetPastEnd {
            offset: 6,
            total: 5
        })
    ));
    let mid = store.read(&r, 1, 2).unwrap();
    assert_eq!((mid.text.as_str(), mid.next_offset), ("el", Some(3)));
    // A limit of 0 still makes progress.
    assert_eq!(store.read(&r, 0, 0).unwrap().text, "h");
}

#[test]
fn putting_the_same_content_twice_gives_the_same_ref() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let a = store.put(b"same").unwrap();
    let b = store.put(b"same").unwrap();
    assert_eq!(a, b);
    assert_ne!(store.put(b"other").unwrap(), a);
    assert_eq!(store.read(&a, 0, 100).unwrap().text, "same");
}

#[test]
fn a_stored_file_edited_or_swapped_is_refused() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let r = store.put(b"original output").unwrap();
    let path = store.dir().join(&r.hash);
    // Positive control: it reads before anything is changed.
    assert_eq!(store.read(&r, 0, 100).unwrap().text, "original output");

    // Attack: edited in place, same length; the part asked for is unchanged.
    std::fs::write(&path, b"original OUTPUT").unwrap();
    let got = store.read(&r, 0, 8);
    assert!(matches!(got, Err(StoreError::Tampered { .. })), "{got:?}");

    // Attack: swapped for a link to a file with the very same content: still refused.
    let copy = fx.base.join("copy");
    std::fs::write(&copy, b"original output").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&copy, &path).unwrap();
    let got = store.read(&r, 0, 100);
    assert!(matches!(got, Err(StoreError::Tampered { .. })), "{got:?}");

    // Positive control: storing it again repairs it.
    std::fs::remove_file(&path).unwrap();
    store.put(b"original output").unwrap();
    assert_eq!(store.read(&r, 0, 100).unwrap().text, "original output");
}

#[test]
fn refs_that_are_not_hashes_are_refused() {
    let fx = Fx::new();
    let store = ResultStore::open(&fx.results(), "s1").unwrap();
    let r = store.put(b"x").unwrap();
    std::fs::write(fx.base.join("secret"), b"SECRET").unwrap();
    let bad = [
        String::new(),
        "../../../secret".to_owned(),
        r.hash.to_uppercase(),
        r.hash[..63].to_owned(),
        format!("{}/", &r.hash[..63]),
        format!("../s1/{}", r.hash),
        format!("/{}", &r.hash[..63]),
    ];
    for b in &bad {
        let got = store.read(b.as_str(), 0, 100);
        assert!(
            matches!(got, Err(StoreError::InvalidRef { .. })),
            "{b:?}: {got:?}"
        );
    }
    // A well-formed ref nothing was stored under.
    let missing = "0".repeat(64);
    assert!(matches!(
        store.read(missing.as_str(), 0, 1),
        Err(StoreError::NotFound { .. })
    ));
    // Positive control.
    assert_eq!(store.read(r.hash.as_str(), 0, 1).unwrap().text, "x");
}

#[test]
fn another_sessions_output_cannot_be_read() {
    let fx = Fx::new();
    let a = ResultStore::open(&fx.results(), "session-a").unwrap();
    let b = ResultStore::open(&fx.results(), "session-b").unwrap();
    let r = a.put(b"a's output").unwrap();
    let got = b.read(&r, 0, 100);
    assert!(matches!(got, Err(StoreError::NotFound { .. })), "{got:?}");
    // Positive control: its own session reads it.
    assert_eq!(a.read(&r, 0, 100).unwrap().text, "a's output");
}

#[test]
fn session_ids_are_validated_before_anything_is_made() {
    let fx = Fx::new();
    for s in ["", "..", "../x", "a/b", "a b", &"x".repeat(65)] {
        let got = ResultStore::open(&fx.results(), s);
        assert!(
            matches!(got, Err(StoreError::InvalidSession { .. })),
            "{s:?}"
        );
    }
    assert!(!fx.results().exists(), "nothing was made for a refused id");
    // Positive control.
    ResultStore::open(&fx.results(), "ok_id-1").unwrap();
    assert!(fx.results().join("ok_id-1").is_dir());
}

#[test]
fn store_directories_are_0700_and_files_0600() {
    let fx = Fx::new();
    let base = fx.results();
    // A base that exists with a looser mode is tightened.
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = ResultStore::open(&base, "s1").unwrap();
    let r = store.put(b"data").unwrap();
    assert_eq!(mode(&base), 0o700);
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.dir().join(&r.hash)), 0o600);
    // Parents the store made are private too.
    let fresh = fx.base.join("fresh/a/b");
    ResultStore::open(&fresh, "s1").unwrap();
    assert_eq!(mode(&fx.base.join("fresh/a")), 0o700);
}

#[test]
fn a_base_that_is_a_link_or_not_ours_is_refused() {
    let fx = Fx::new();
    let real = fx.base.join("real");
    std::fs::create_dir(&real).unwrap();
    let link = fx.base.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let got = ResultStore::open(&link, "s1");
    assert!(
        matches!(&got, Err(StoreError::UnsafeDir { why, .. }) if why.contains("symbolic link")),
        "{got:?}"
    );
    assert_eq!(
        std::fs::read_dir(&real).unwrap().count(),
        0,
        "nothing made through the link"
    );
    // A session directory that is a link is refused the same way.
    std::fs::create_dir(real.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(real.join("elsewhere"), real.join("s2")).unwrap();
    assert!(matches!(
        ResultStore::open(&real, "s2"),
        Err(StoreError::UnsafeDir { .. })
    ));
    // Positive control: the real directory is accepted.
    ResultStore::open(&real, "s1").unwrap();

    // Someone else's directory.
    let theirs = if is_root() {
        let d = fx.base.join("theirs");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        PathBuf::from("/")
    };
    let got = ResultStore::open(&theirs, "s1");
    assert!(
        matches!(&got, Err(StoreError::UnsafeDir { why, .. }) if why.contains("belongs to uid")),
        "{got:?}"
    );
    assert!(!theirs.join("s1").exists());
}

#[test]
fn default_base_prefers_xdg_state_home() {
    use spear_runtime::results_base as default_base;
    assert_eq!(
        default_base(Some(Path::new("/s")), Some(Path::new("/h"))),
        Some(PathBuf::from("/s/spear/results"))
    );
    assert_eq!(
        default_base(None, Some(Path::new("/h"))),
        Some(PathBuf::from("/h/.local/state/spear/results"))
    );
}

#[test]
fn a_sessions_outputs_stay_within_its_budget_and_evicted_refs_answer_expired() {
    const KIB: usize = 1 << 10;
    let fx = Fx::new();
    let limited = ResultStore::open(&fx.results(), "limited")
        .unwrap()
        .with_budget(1 << 20);
    // Positive control: the same outputs without a budget are all kept.
    let unlimited = ResultStore::open(&fx.results(), "unlimited").unwrap();
    let outputs: Vec<String> = (0..5u8)
        .map(|i| char::from(b'a' + i).to_string().repeat(300 * KIB))
        .collect();
    let mut refs = Vec::new();
    for text in &outputs {
        refs.push(limited.put(text.as_bytes()).unwrap());
        unlimited.put(text.as_bytes()).unwrap();
        // Distinct modification times, so that "oldest" is well defined.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let held = limited.usage().unwrap();
    assert!(held.bytes <= 1 << 20, "{held:?}");
    assert_eq!(held.outputs, 3, "{held:?}");
    assert_eq!(unlimited.usage().unwrap().outputs, 5, "control");
    for (i, r) in refs.iter().enumerate() {
        match limited.read(r, 0, 10) {
            Ok(chunk) if i >= 2 => assert_eq!(chunk.total, 300 * KIB as u64),
            Err(e @ StoreError::Expired { .. }) if i < 2 => {
                let msg = e.to_string();
                assert!(msg.contains("expired") && msg.contains("1 MiB"), "{msg}");
            }
            other => panic!("output {i}: {other:?}"),
        }
    }
    // Stored again, an expired output is read again.
    limited.put(outputs[0].as_bytes()).unwrap();
    assert_eq!(limited.read(&refs[0], 0, 3).unwrap().text, "aaa");
    // An output over the whole budget is not stored, and nothing is evicted for it.
    let before = limited.usage().unwrap();
    assert!(matches!(
        limited.put(&vec![b'z'; 2 << 20]),
        Err(StoreError::OverBudget { .. })
    ));
    assert_eq!(limited.usage().unwrap(), before);
    // A reference never stored is still "not found", not "expired".
    assert!(matches!(
        limited.read(&"0".repeat(64), 0, 1),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn sessions_idle_for_a_week_are_swept_and_the_others_kept() {
    use spear_runtime::{SESSION_IDLE, sweep_idle_sessions};
    let fx = Fx::new();
    let week_ago = std::time::SystemTime::now() - SESSION_IDLE - std::time::Duration::from_secs(60);
    let mut stores = Vec::new();
    for name in ["old", "recent", "current"] {
        let store = ResultStore::open(&fx.results(), name).unwrap();
        store.put(name.as_bytes()).unwrap();
        stores.push(store);
    }
    for name in ["old", "current"] {
        std::fs::File::open(fx.results().join(name))
            .unwrap()
            .set_modified(week_ago)
            .unwrap();
    }
    // Not a session: a link to an old directory is never followed nor removed through.
    let outside = fx.base.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("keep"), "x").unwrap();
    std::fs::File::open(&outside)
        .unwrap()
        .set_modified(week_ago)
        .unwrap();
    std::os::unix::fs::symlink(&outside, fx.results().join("link")).unwrap();

    let current = fx.results().join("current");
    assert_eq!(
        sweep_idle_sessions(&fx.results(), &current, SESSION_IDLE),
        1
    );
    assert!(!fx.results().join("old").exists(), "idle a week: removed");
    assert!(
        fx.results().join("recent").exists(),
        "control: a recent session stays"
    );
    assert!(
        current.exists(),
        "the session sweeping is kept, however old"
    );
    assert!(outside.join("keep").exists());
}
