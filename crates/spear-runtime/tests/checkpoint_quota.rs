//! The checkpoint store's quotas against real directories: the store stops growing at its quota
//! by evicting its oldest turns, the current turn is kept whole or its write refused with nothing
//! stored, and every store of the user together stays within the user's quota. Each bound has a
//! positive control: the same writes without a quota grow past it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::struct_field_names)]

use std::path::{Path, PathBuf};

use spear_runtime::{CheckpointError, CheckpointStore, StoreQuota, TurnCheckpoint};
use spear_workspace::{Location, Workspace, WorkspaceConfig, WorkspaceFs};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
/// What manifests may add on top of the blobs the quota was checked against at each write.
const MANIFEST_SLACK: u64 = 16 * KIB;

struct Ws {
    root: PathBuf,
    ws: Workspace,
    fs: WorkspaceFs,
    store: CheckpointStore,
}

impl Ws {
    fn new(base: &Path, name: &str, quota: Option<StoreQuota>) -> Ws {
        let root = base.join(name);
        std::fs::create_dir_all(&root).unwrap();
        let ws = Workspace::open(&WorkspaceConfig::new(&root)).unwrap();
        let fs = ws.fs().unwrap();
        let dir = CheckpointStore::default_dir(Some(&base.join("state")), None, &ws).unwrap();
        let mut store = CheckpointStore::open(&dir).unwrap();
        if let Some(q) = quota {
            store = store.with_quota(q);
        }
        Ws {
            root,
            ws,
            fs,
            store,
        }
    }

    /// Writes `bytes` to `rel` in `turn` as the tool layer does; the error of the capture before,
    /// if any, and then nothing is written.
    fn write(
        &self,
        turn: &mut TurnCheckpoint,
        rel: &str,
        bytes: &[u8],
    ) -> Result<(), CheckpointError> {
        let loc = Location {
            root: 0,
            rel: PathBuf::from(rel),
        };
        self.store.capture_before(turn, &self.ws, &self.fs, &loc)?;
        self.fs
            .write(&self.ws.resolve(rel).unwrap(), bytes)
            .unwrap();
        self.store
            .capture_after(turn, &self.ws, &self.fs, &loc)
            .unwrap();
        Ok(())
    }

    /// One turn overwriting `rel` with `bytes`.
    fn turn_writing(&self, id: &str, rel: &str, bytes: &[u8]) -> Result<(), CheckpointError> {
        let mut turn = self.store.turn(id).unwrap();
        let r = self.write(&mut turn, rel, bytes);
        turn.save().unwrap();
        r
    }

    fn held(&self) -> u64 {
        self.store.usage().unwrap().bytes()
    }

    fn turn_ids(&self) -> Vec<String> {
        self.store
            .turns()
            .unwrap()
            .iter()
            .map(|t| t.id().to_owned())
            .collect()
    }
}

/// `size` bytes that differ for every `seed` (so that no two contents share a blob).
fn content(seed: u64, size: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

fn quota(max: u64, all: u64) -> StoreQuota {
    StoreQuota {
        max_bytes: max,
        all_max_bytes: all,
        free_floor_bytes: 0,
    }
}

#[test]
fn the_store_stops_growing_at_its_quota_and_the_oldest_turns_are_evicted() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let limited = Ws::new(&base, "limited", Some(quota(2 * MIB, 64 * MIB)));
    // Positive control: the same writes, no quota.
    let free = Ws::new(&base, "free", None);
    for ws in [&limited, &free] {
        std::fs::write(ws.root.join("a.bin"), content(0, 300 * KIB)).unwrap();
    }
    let mut peak = 0;
    for i in 1..=20 {
        for ws in [&limited, &free] {
            ws.turn_writing(&format!("t{i}"), "a.bin", &content(i, 300 * KIB))
                .unwrap();
        }
        peak = peak.max(limited.held());
    }
    assert!(
        free.held() > 20 * 300 * KIB,
        "control: without a quota the store holds every turn's content ({} bytes)",
        free.held()
    );
    assert!(
        peak <= 2 * MIB + MANIFEST_SLACK,
        "the store grew to {peak} bytes past its quota of 2 MiB"
    );
    let ids = limited.turn_ids();
    assert!(
        !ids.contains(&"t1".to_owned()),
        "the oldest turn is evicted: {ids:?}"
    );
    assert!(
        ids.contains(&"t20".to_owned()) && ids.contains(&"t19".to_owned()),
        "{ids:?}"
    );
    assert!(ids.len() < 20 && ids.len() >= 5, "{ids:?}");
    // What is kept still undoes, latest first.
    limited.store.undo_last(&limited.ws, &limited.fs).unwrap();
    assert_eq!(
        std::fs::read(limited.root.join("a.bin")).unwrap(),
        content(19, 300 * KIB)
    );
    limited.store.undo_last(&limited.ws, &limited.fs).unwrap();
    assert_eq!(
        std::fs::read(limited.root.join("a.bin")).unwrap(),
        content(18, 300 * KIB)
    );
}

#[test]
fn the_current_turn_is_kept_whole_or_its_write_is_refused_with_nothing_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = Ws::new(&base, "ws", Some(quota(MIB, 64 * MIB)));
    for i in 0..6 {
        std::fs::write(ws.root.join(format!("f{i}")), content(100 + i, 300 * KIB)).unwrap();
    }
    // An older turn holding 300 KiB: evicted to make room for the current one.
    ws.turn_writing("old", "f0", b"x").unwrap();
    let mut turn = ws.store.turn("now").unwrap();
    for i in 1..=3 {
        ws.write(&mut turn, &format!("f{i}"), b"y").unwrap();
    }
    turn.save().unwrap();
    assert_eq!(ws.turn_ids(), ["now"], "the older turn went to make room");
    let blobs = ws.store.usage().unwrap().blobs;
    let err = ws.write(&mut turn, "f4", b"y").unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, CheckpointError::QuotaFull { .. })
            && msg.contains("nothing was written")
            && msg.contains("[state] checkpoints"),
        "{msg}"
    );
    assert_eq!(ws.store.usage().unwrap().blobs, blobs, "no blob was stored");
    assert_eq!(
        std::fs::read(ws.root.join("f4")).unwrap(),
        content(104, 300 * KIB),
        "the refused write changed nothing"
    );
    // The turn is whole: undo puts back all three files.
    turn.save().unwrap();
    ws.store.undo_last(&ws.ws, &ws.fs).unwrap();
    for i in 1..=3 {
        assert_eq!(
            std::fs::read(ws.root.join(format!("f{i}"))).unwrap(),
            content(100 + i, 300 * KIB)
        );
    }
    // Positive control: a small file still fits.
    let mut next = ws.store.turn("next").unwrap();
    ws.write(&mut next, "small", b"z").unwrap();
}

#[test]
fn every_store_of_the_user_together_stays_within_the_users_quota() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let q = quota(2 * MIB, 3 * MIB);
    let one = Ws::new(&base, "one", Some(q));
    let two = Ws::new(&base, "two", Some(q));
    for ws in [&one, &two] {
        std::fs::write(ws.root.join("a.bin"), content(0, 300 * KIB)).unwrap();
    }
    for i in 1..=8 {
        one.turn_writing(&format!("t{i}"), "a.bin", &content(i, 300 * KIB))
            .unwrap();
    }
    let one_before = one.held();
    assert!(
        one_before > MIB + MIB / 2,
        "control: the first store is full ({one_before})"
    );
    let mut peak = 0;
    for i in 1..=8 {
        two.turn_writing(&format!("u{i}"), "a.bin", &content(50 + i, 300 * KIB))
            .unwrap();
        peak = peak.max(one.held() + two.held());
    }
    assert!(
        peak <= 3 * MIB + 2 * MANIFEST_SLACK,
        "both stores together grew to {peak} bytes, past the user's 3 MiB"
    );
    assert!(
        one.held() < one_before,
        "the first store's oldest turns went"
    );
    let ids = one.turn_ids();
    assert!(
        ids.contains(&"t8".to_owned()),
        "its latest turn is kept: {ids:?}"
    );
}

#[test]
fn collect_garbage_removes_unreferenced_blobs_and_reports_the_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = Ws::new(&base, "ws", Some(quota(4 * MIB, 64 * MIB)));
    std::fs::write(ws.root.join("a"), b"first").unwrap();
    ws.turn_writing("t1", "a", b"second").unwrap();
    // A blob no manifest names, as a crash between storing and saving leaves.
    let orphan = ws.store.dir().join("blobs").join("ab".repeat(32));
    std::fs::write(&orphan, b"left over").unwrap();
    let before = ws.store.usage().unwrap();
    assert_eq!(before.blobs, 2);
    let after = ws.store.collect_garbage().unwrap();
    assert_eq!(after.blobs, 1, "{after:?}");
    assert!(!orphan.exists());
    assert_eq!(after.turns, 1);
    ws.store.undo_last(&ws.ws, &ws.fs).unwrap();
    assert_eq!(std::fs::read(ws.root.join("a")).unwrap(), b"first");
}
