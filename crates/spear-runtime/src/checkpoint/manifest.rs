//! One turn's manifest ([`TurnCheckpoint`]): for every entry the turn changed, its state before
//! the first change and after the last one.
//!
//! A manifest names an entry by its root's canonical HOST path and its path relative to that root
//! (a root's index can differ between processes), plus its audit label for messages. It is JSON,
//! written whole (temporary file, then rename) with mode 0600 in `turns/<turn id>.json`.
//!
//! Attack: a manifest edited on disk to name `../../.ssh/id_rsa` or a blob `../x`. Loading refuses
//! a relative path that is not plain names, a root that is not absolute and a hash that is not
//! 64 hex digits; the workspace layer refuses `..` again when it acts.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use spear_workspace::{Location, Workspace};

use super::entry_state::path_bytes;
use super::names::is_sha256_hex;
use super::private_dir::{open_regular, write_atomic};
use super::{CheckpointError, EntryState};

/// The manifest format this code writes and reads.
const VERSION: u32 = 1;

/// Largest manifest read back (a turn records at most a few thousand entries).
pub(crate) const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// One recorded entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The root's canonical host path.
    #[serde(with = "path_bytes")]
    pub(crate) root: PathBuf,
    /// The path relative to the root (plain names only, not empty).
    #[serde(with = "path_bytes")]
    pub(crate) rel: PathBuf,
    /// The audit label when it was recorded.
    pub(crate) label: String,
    /// The state before the turn's first change.
    pub(crate) before: EntryState,
    /// The state after the turn's last change; `None` if it was never recorded.
    pub(crate) after: Option<EntryState>,
}

impl Entry {
    /// Whether undoing this entry has anything to do.
    pub(crate) fn changed(&self) -> bool {
        self.after.as_ref() != Some(&self.before)
    }
}

/// What is written to disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) version: u32,
    pub(crate) turn: String,
    /// Order of the turns in this store: each new turn gets one more than the largest so far.
    pub(crate) seq: u64,
    /// Milliseconds since the epoch when the turn was created.
    pub(crate) created_ms: u64,
    pub(crate) undone: bool,
    #[serde(default)]
    pub(crate) undone_ms: Option<u64>,
    pub(crate) entries: Vec<Entry>,
}

/// The checkpoint of one turn: load it with [`super::CheckpointStore::turn`], note entries
/// before and after each change, [`TurnCheckpoint::save`] it.
#[derive(Debug, Clone)]
pub struct TurnCheckpoint {
    pub(crate) path: PathBuf,
    pub(crate) manifest: Manifest,
    /// Where each entry is in `manifest.entries`, by root and relative path: finding an entry is
    /// one lookup (by borrowed paths), so that recording a command that changed 200,000 paths
    /// costs in proportion to them, not to their square.
    index: HashMap<PathBuf, HashMap<PathBuf, usize>>,
}

impl TurnCheckpoint {
    /// A new, empty turn.
    pub(crate) fn new(path: PathBuf, turn: &str, seq: u64) -> TurnCheckpoint {
        TurnCheckpoint {
            path,
            manifest: Manifest {
                version: VERSION,
                turn: turn.to_owned(),
                seq,
                created_ms: now_ms(),
                undone: false,
                undone_ms: None,
                entries: Vec::new(),
            },
            index: HashMap::new(),
        }
    }

    /// Loads the manifest at `path` (`None` when there is none) and checks it makes sense.
    pub(crate) fn load(path: &Path) -> Result<Option<TurnCheckpoint>, CheckpointError> {
        let bad = |why: String| CheckpointError::BadManifest {
            path: path.to_path_buf(),
            why,
        };
        let Some((file, _)) = open_regular(path).map_err(|e| bad(e.to_string()))? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_MANIFEST_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| bad(e.to_string()))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(bad(format!("it is larger than {MAX_MANIFEST_BYTES} bytes")));
        }
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("it is not valid: {e}")))?;
        let stem = path.file_stem().and_then(|s| s.to_str());
        validate(&manifest, stem).map_err(bad)?;
        let mut index: HashMap<PathBuf, HashMap<PathBuf, usize>> = HashMap::new();
        for (i, e) in manifest.entries.iter().enumerate() {
            // The first entry of a path is the one every lookup found before the index.
            index
                .entry(e.root.clone())
                .or_default()
                .entry(e.rel.clone())
                .or_insert(i);
        }
        Ok(Some(TurnCheckpoint {
            path: path.to_path_buf(),
            manifest,
            index,
        }))
    }

    /// The turn's id.
    pub fn id(&self) -> &str {
        &self.manifest.turn
    }

    /// The turn's place in the order of turns of its store (larger is later).
    pub fn seq(&self) -> u64 {
        self.manifest.seq
    }

    /// Whether the turn was undone.
    pub fn is_undone(&self) -> bool {
        self.manifest.undone
    }

    /// Whether undoing the turn would change anything (some entry's state after differs from the
    /// one before, or was never recorded).
    pub fn has_changes(&self) -> bool {
        self.manifest.entries.iter().any(Entry::changed)
    }

    /// Records the state of `loc` before a change. The FIRST capture of a path in a turn wins;
    /// later ones are ignored. A location whose root is not in `ws` is ignored.
    pub fn note_before(&mut self, ws: &Workspace, loc: &Location, prior: EntryState) {
        let Some(root) = ws.roots().get(loc.root) else {
            return;
        };
        let root = root.host_path();
        if self.find(root, &loc.rel).is_some() {
            return;
        }
        self.index
            .entry(root.to_path_buf())
            .or_default()
            .insert(loc.rel.clone(), self.manifest.entries.len());
        self.manifest.entries.push(Entry {
            root: root.to_path_buf(),
            rel: loc.rel.clone(),
            label: ws.label(loc),
            before: prior,
            after: None,
        });
    }

    /// Records the state of `loc` after a change (the latest wins), which `undo` expects to find.
    /// A path with no recorded state before is ignored: without it nothing could be restored.
    pub fn note_after(&mut self, ws: &Workspace, loc: &Location, after: EntryState) {
        let Some(root) = ws.roots().get(loc.root) else {
            return;
        };
        if let Some(i) = self.find(root.host_path(), &loc.rel) {
            self.manifest.entries[i].after = Some(after);
        }
    }

    /// The recorded state of `loc` before the turn, if any.
    pub fn before(&self, ws: &Workspace, loc: &Location) -> Option<&EntryState> {
        let root = ws.roots().get(loc.root)?;
        self.find(root.host_path(), &loc.rel)
            .map(|i| &self.manifest.entries[i].before)
    }

    /// Writes the manifest whole (temporary file, then rename), mode 0600.
    pub fn save(&self) -> Result<(), CheckpointError> {
        let io = |source| CheckpointError::Io {
            path: self.path.clone(),
            source,
        };
        let json = serde_json::to_vec(&self.manifest).map_err(|e| io(std::io::Error::other(e)))?;
        let (Some(dir), Some(name)) = (
            self.path.parent(),
            self.path.file_name().and_then(|n| n.to_str()),
        ) else {
            return Err(io(std::io::Error::other("a manifest path without a name")));
        };
        write_atomic(dir, name, &json, true).map_err(io)
    }

    /// The labels of the recorded entries, in the order they were first noted.
    pub fn paths(&self) -> Vec<String> {
        self.manifest
            .entries
            .iter()
            .map(|e| e.label.clone())
            .collect()
    }

    /// Marks the turn undone (not saved).
    pub(crate) fn mark_undone(&mut self) {
        self.manifest.undone = true;
        self.manifest.undone_ms = Some(now_ms());
    }

    fn find(&self, root: &Path, rel: &Path) -> Option<usize> {
        self.index.get(root)?.get(rel).copied()
    }
}

/// Why a manifest makes no sense, or `Ok`. `stem` is its file name without `.json`. Pure.
pub(crate) fn validate(m: &Manifest, stem: Option<&str>) -> Result<(), String> {
    if m.version != VERSION {
        return Err(format!("it has version {}, not {VERSION}", m.version));
    }
    if stem != Some(m.turn.as_str()) {
        return Err(format!("it records turn {:?} under another name", m.turn));
    }
    for e in &m.entries {
        if !e.root.is_absolute() {
            return Err(format!("{}: its root is not an absolute path", e.label));
        }
        // Attack: `..`, `/etc/passwd` or `./x` as a recorded path.
        if e.rel.as_os_str().is_empty()
            || !e
                .rel
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(format!(
                "{}: its path is not a plain relative path",
                e.label
            ));
        }
        for state in std::iter::once(&e.before).chain(e.after.as_ref()) {
            if let EntryState::File { hash, .. } = state {
                // Attack: a blob name such as `../../x`.
                if !is_sha256_hex(hash) {
                    return Err(format!("{}: {hash:?} is not a content hash", e.label));
                }
            }
        }
    }
    Ok(())
}

/// Milliseconds since the epoch (0 if the clock is before it).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(root: &str, rel: &str, before: EntryState) -> Entry {
        Entry {
            root: PathBuf::from(root),
            rel: PathBuf::from(rel),
            label: rel.to_owned(),
            before,
            after: None,
        }
    }

    fn manifest(entries: Vec<Entry>) -> Manifest {
        Manifest {
            version: VERSION,
            turn: "t1".to_owned(),
            seq: 1,
            created_ms: 0,
            undone: false,
            undone_ms: None,
            entries,
        }
    }

    #[test]
    fn validate_table() {
        let file = |hash: &str| EntryState::File {
            mode: 0o644,
            hash: hash.to_owned(),
            size: 1,
        };
        let good_hash = "a".repeat(64);
        let cases: Vec<(Manifest, Option<&str>, bool)> = vec![
            (manifest(vec![]), Some("t1"), true),
            (
                manifest(vec![entry("/w", "a/b.txt", file(&good_hash))]),
                Some("t1"),
                true,
            ),
            (manifest(vec![]), Some("t2"), false),
            (manifest(vec![]), None, false),
            (
                manifest(vec![entry("w", "a", EntryState::Absent)]),
                Some("t1"),
                false,
            ),
            (
                manifest(vec![entry("/w", "../x", EntryState::Absent)]),
                Some("t1"),
                false,
            ),
            (
                manifest(vec![entry("/w", "a/../../x", EntryState::Absent)]),
                Some("t1"),
                false,
            ),
            (
                manifest(vec![entry("/w", "/etc/passwd", EntryState::Absent)]),
                Some("t1"),
                false,
            ),
            (
                manifest(vec![entry("/w", "", EntryState::Absent)]),
                Some("t1"),
                false,
            ),
            (
                manifest(vec![entry("/w", "a", file("../../x"))]),
                Some("t1"),
                false,
            ),
            (
                Manifest {
                    version: 2,
                    ..manifest(vec![])
                },
                Some("t1"),
                false,
            ),
        ];
        for (m, stem, ok) in cases {
            assert_eq!(validate(&m, stem).is_ok(), ok, "{m:?} {stem:?}");
        }
        // The after-state is checked too.
        let mut e = entry("/w", "a", EntryState::Absent);
        e.after = Some(file("zz"));
        assert!(validate(&manifest(vec![e]), Some("t1")).is_err());
    }

    #[test]
    fn changed_table() {
        let d = EntryState::Dir { mode: 0o755 };
        let cases = [
            (EntryState::Absent, None, true),
            (EntryState::Absent, Some(EntryState::Absent), false),
            (EntryState::Absent, Some(d.clone()), true),
            (d.clone(), Some(d.clone()), false),
        ];
        for (before, after, want) in cases {
            let mut e = entry("/w", "a", before);
            e.after = after;
            assert_eq!(e.changed(), want, "{e:?}");
        }
    }
}
