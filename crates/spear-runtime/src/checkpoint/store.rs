//! The checkpoint store of one workspace ([`CheckpointStore`]): blobs named by their content,
//! turns' manifests, states read and restored through [`WorkspaceFs`], and the quota kept.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use spear_workspace::{Budget, EntryKind, FsError, Location, Node, Workspace, WorkspaceFs};

use super::entry_state::EntryState;
use super::error::CheckpointError;
use super::evict;
use super::manifest::TurnCheckpoint;
use super::names::{WORKSPACE_KEY_LEN, is_sha256_hex, is_valid_id, sha256_hex};
use super::private_dir::{ensure_private_dir, open_regular, write_atomic};
use super::quota::{self, StoreQuota, StoreUsage};
use super::stores::{store_usage, stores_base};

/// Largest file a checkpoint keeps by default (16 MiB); a larger one is "not checkpointed".
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 20;

/// The checkpoints of one workspace. Clones share the running count of its size and the turn
/// being recorded.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    dir: PathBuf,
    max_file_bytes: u64,
    quota: Option<StoreQuota>,
    ledger: Arc<Mutex<quota::Ledger>>,
    /// The turn last opened through this store: never evicted.
    current: Arc<Mutex<Option<String>>>,
}

impl CheckpointStore {
    /// Opens (creating if needed) the store at `dir` and its `blobs/` and `turns/` directories:
    /// each must be a directory owned by this user, not a link, and is given mode 0700.
    pub fn open(dir: &Path) -> Result<CheckpointStore, CheckpointError> {
        for d in [dir.to_path_buf(), dir.join("blobs"), dir.join("turns")] {
            ensure_private_dir(&d).map_err(|why| CheckpointError::UnsafeDir { path: d, why })?;
        }
        Ok(CheckpointStore {
            dir: dir.to_path_buf(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            quota: None,
            ledger: Arc::default(),
            current: Arc::default(),
        })
    }

    /// The same store held to `quota` (none by default, for library callers and tests).
    #[must_use]
    pub fn with_quota(mut self, quota: StoreQuota) -> CheckpointStore {
        self.quota = Some(quota);
        self
    }

    /// The quota the store is held to.
    pub fn quota(&self) -> Option<StoreQuota> {
        self.quota
    }

    /// What the store holds now (a scan of its directories).
    pub fn usage(&self) -> Result<StoreUsage, CheckpointError> {
        store_usage(&self.dir)
    }

    /// Brings the store within its quota (and every store of the user within theirs): evicts
    /// the oldest turns and removes blobs nothing names, keeping the latest turn. Returns what it
    /// holds afterwards. Without a quota, only unreferenced blobs are removed.
    pub fn collect_garbage(&self) -> Result<StoreUsage, CheckpointError> {
        let quota = self.quota.unwrap_or(StoreQuota {
            max_bytes: u64::MAX,
            all_max_bytes: u64::MAX,
            free_floor_bytes: 0,
        });
        let mut ledger = self.lock_ledger();
        match self.enforce(&mut ledger, 0, quota.max_bytes, quota) {
            // The latest turn alone is over the quota: kept, and reported by the usage.
            Ok(()) | Err(CheckpointError::QuotaFull { .. }) => {}
            Err(e) => return Err(e),
        }
        let _flock = quota::lock(&self.dir).map_err(|e| self.io_err(e))?;
        let scanned = quota::scan(&self.dir).map_err(|e| self.io_err(e))?;
        let orphans = quota::orphans(&scanned, &scanned.kept(&ledger.pending()));
        let plan = evict::Plan {
            free_blobs: orphans,
            ..evict::Plan::default()
        };
        quota::carry_out(&self.dir, &scanned, &plan);
        self.usage()
    }

    /// Removes every turn of the store (live and undone) and the content they named: nothing is
    /// left to undo. Returns how many turns were removed. What a capture of this process still
    /// in progress stored is kept.
    pub fn clear(&self) -> Result<u64, CheckpointError> {
        let ledger = self.lock_ledger();
        let _flock = quota::lock(&self.dir).map_err(|e| self.io_err(e))?;
        let scanned = quota::scan(&self.dir).map_err(|e| self.io_err(e))?;
        let turns: Vec<usize> = (0..scanned.turns.len()).collect();
        let mut plan = evict::Plan {
            evict: turns,
            ..evict::Plan::default()
        };
        let pending = ledger.pending();
        plan.free_blobs = scanned
            .blobs
            .keys()
            .filter(|b| !pending.contains_key(*b))
            .cloned()
            .collect();
        let failed = quota::carry_out(&self.dir, &scanned, &plan);
        if let Some(first) = failed.first() {
            return Err(self.io_err(std::io::Error::other(first.clone())));
        }
        Ok(plan.evict.len() as u64)
    }

    /// Marks `turn_id` the turn being recorded (or undone): never evicted by this store.
    pub(crate) fn set_current(&self, turn_id: &str) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(turn_id.to_owned());
    }

    fn lock_ledger(&self) -> std::sync::MutexGuard<'_, quota::Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn io_err(&self, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: self.dir.clone(),
            source,
        }
    }

    /// Whether the filesystem holding the store has its free-space floor left: a call that would
    /// write is refused before it writes anything when it has not. Attack: a model filling the
    /// disk spear's state (and the user's files) live on, through any writing call.
    pub fn check_floor(&self) -> Result<(), CheckpointError> {
        let Some(q) = self.quota.filter(|q| q.free_floor_bytes > 0) else {
            return Ok(());
        };
        let free = quota::free_bytes(&self.dir).map_err(|e| self.io_err(e))?;
        if free < q.free_floor_bytes {
            return Err(CheckpointError::FloorReached {
                path: self.dir.clone(),
                free: quota::bytes_text(free),
                floor: quota::bytes_text(q.free_floor_bytes),
            });
        }
        Ok(())
    }

    /// Makes room for a new blob of `need` bytes: checks the free-space floor, then brings the
    /// store (and every store of the user) within quota, evicting the oldest turns. Attack: a
    /// model filling the disk through checkpoints (see [`quota`]).
    fn make_room(&self, need: u64) -> Result<(), CheckpointError> {
        let Some(q) = self.quota else {
            return Ok(());
        };
        if q.free_floor_bytes > 0 {
            let free = quota::free_bytes(&self.dir).map_err(|e| self.io_err(e))?;
            if free < need.saturating_add(q.free_floor_bytes) {
                return Err(CheckpointError::FloorReached {
                    path: self.dir.clone(),
                    free: quota::bytes_text(free),
                    floor: quota::bytes_text(q.free_floor_bytes),
                });
            }
        }
        let mut ledger = self.lock_ledger();
        if ledger.fits(need, &q) {
            return Ok(());
        }
        self.enforce(&mut ledger, need, q.max_bytes, q)
    }

    /// Scans, and evicts so that `need` more bytes fit within `limit` in this store and within
    /// `quota.all_max_bytes` in every store of the user; refuses when the protected turns alone
    /// do not leave room (and then evicts nothing).
    fn enforce(
        &self,
        ledger: &mut quota::Ledger,
        need: u64,
        limit: u64,
        q: StoreQuota,
    ) -> Result<(), CheckpointError> {
        let _flock = quota::lock(&self.dir).map_err(|e| self.io_err(e))?;
        let current = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let pending = ledger.pending();
        let mut scanned = quota::scan(&self.dir).map_err(|e| self.io_err(e))?;
        scanned.protect(current.as_deref());
        let kept = scanned.kept(&pending);
        let p = evict::plan(&scanned.refs(), &scanned.blobs, &kept, need, limit);
        if !p.fits {
            let held = scanned
                .turns
                .iter()
                .filter(|(_, _, t)| t.protected)
                .flat_map(|(_, _, t)| t.blobs.iter())
                .collect::<std::collections::HashSet<_>>()
                .iter()
                .filter_map(|b| scanned.blobs.get(*b))
                .sum::<u64>();
            return Err(CheckpointError::QuotaFull {
                which: "this workspace's checkpoint store",
                key: "checkpoints",
                quota: quota::bytes_text(q.max_bytes),
                held: quota::bytes_text(held),
            });
        }
        let failed = quota::carry_out(&self.dir, &scanned, &p);
        if !failed.is_empty() {
            tracing::warn!(store = %self.dir.display(), "checkpoint eviction left: {}", failed.join("; "));
        }
        ledger.bytes = Some(p.after);
        ledger.scanned = Some(std::time::Instant::now());
        self.enforce_all(ledger, need, q, current.as_deref(), &pending)
    }

    /// The user's quota over every store next to this one. Only looked at when the stores
    /// could exceed it (more of them than the quota holds stores at their own quota).
    fn enforce_all(
        &self,
        ledger: &mut quota::Ledger,
        need: u64,
        q: StoreQuota,
        current: Option<&str>,
        pending: &std::collections::HashMap<String, std::time::SystemTime>,
    ) -> Result<(), CheckpointError> {
        let siblings = quota::sibling_stores(&self.dir);
        let stores = u64::try_from(siblings.len() + 1).unwrap_or(u64::MAX);
        if stores.saturating_mul(q.max_bytes) <= q.all_max_bytes {
            ledger.others = 0;
            return Ok(());
        }
        let mine = ledger.bytes.unwrap_or(0);
        let mut scans = vec![(
            self.dir.clone(),
            quota::scan(&self.dir).map_err(|e| self.io_err(e))?,
        )];
        let mut total = mine;
        for dir in siblings {
            // A store another process is removing, or unreadable: not ours to count.
            if let Ok(s) = quota::scan(&dir) {
                total = total.saturating_add(s.usage().bytes());
                scans.push((dir, s));
            }
        }
        ledger.others = total - mine;
        if total.saturating_add(need) <= q.all_max_bytes {
            return Ok(());
        }
        let plans = quota::plan_across(&mut scans, current, pending, need, q.all_max_bytes);
        if plans.first().is_some_and(|p| !p.fits) {
            return Err(CheckpointError::QuotaFull {
                which: "the checkpoint stores of every workspace together",
                key: "checkpoints_all",
                quota: quota::bytes_text(q.all_max_bytes),
                held: quota::bytes_text(total),
            });
        }
        for ((dir, scanned), plan) in scans.iter().zip(&plans) {
            // Another store is evicted under its own lock, as its own process would.
            let _flock = (dir != &self.dir).then(|| quota::lock(dir).ok());
            quota::carry_out(dir, scanned, plan);
        }
        // Counted again at the next scan; until then, what the plan left.
        ledger.others = 0;
        for (dir, _) in &scans {
            let held = quota::scan(dir).map_or(0, |s| s.usage().bytes());
            if dir == &self.dir {
                ledger.bytes = Some(held);
            } else {
                ledger.others = ledger.others.saturating_add(held);
            }
        }
        Ok(())
    }

    /// The same store keeping files of at most `max` bytes.
    #[must_use]
    pub fn with_max_file_bytes(mut self, max: u64) -> CheckpointStore {
        self.max_file_bytes = max;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the store of `ws` lives: `$XDG_STATE_HOME/spear/checkpoints/<key>` (else
    /// `$HOME/.local/state/...`), the key being the first 32 hex digits of the SHA-256 of the
    /// primary root's host path. `None` when neither variable gives an absolute path. Pure.
    pub fn default_dir(
        xdg_state_home: Option<&Path>,
        home: Option<&Path>,
        ws: &Workspace,
    ) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let key = sha256_hex(ws.primary().host_path().as_os_str().as_bytes());
        let key = key.get(..WORKSPACE_KEY_LEN)?;
        stores_base(xdg_state_home, home).map(|b| b.join(key))
    }

    /// Stores `bytes` as a blob and returns its hash. Idempotent: a blob already there with the
    /// right content is left alone; one whose content changed is replaced.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, CheckpointError> {
        let hash = sha256_hex(bytes);
        if self.read_blob(&hash).is_ok() {
            // Kept from eviction until a manifest names it, as a new blob would be.
            self.lock_ledger().stored(&hash, 0);
            return Ok(hash);
        }
        let size = bytes.len() as u64;
        self.make_room(size)?;
        let blobs = self.dir.join("blobs");
        write_atomic(&blobs, &hash, bytes, false).map_err(|source| CheckpointError::Io {
            path: blobs.join(&hash),
            source,
        })?;
        self.lock_ledger().stored(&hash, size);
        Ok(hash)
    }

    /// The content of blob `hash`, verified against it. Attack: a blob edited, swapped for a link
    /// or replaced on disk: [`CheckpointError::BlobTampered`], never its content.
    pub fn read_blob(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        // Attack: a hash such as `../../x` naming a file outside the blob directory.
        if !is_sha256_hex(hash) {
            return Err(CheckpointError::BlobTampered {
                hash: hash.to_owned(),
                why: "it is not a content hash".to_owned(),
            });
        }
        let path = self.dir.join("blobs").join(hash);
        let tampered = |why: String| CheckpointError::BlobTampered {
            hash: hash.to_owned(),
            why,
        };
        let (file, _) = match open_regular(&path) {
            Ok(Some(found)) => found,
            Ok(None) => {
                return Err(CheckpointError::BlobMissing {
                    hash: hash.to_owned(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(tampered(e.to_string()));
            }
            Err(source) => return Err(CheckpointError::Io { path, source }),
        };
        let mut bytes = Vec::new();
        file.take(self.max_file_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| CheckpointError::Io {
                path: path.clone(),
                source,
            })?;
        if sha256_hex(&bytes) != hash {
            return Err(tampered(
                "its content no longer matches its hash".to_owned(),
            ));
        }
        Ok(bytes)
    }

    /// The state of the entry at `loc` now, without following any link (a link on the way to it
    /// means it is [`EntryState::Absent`]); a file's content is stored as a blob. A file over the
    /// store's limit is [`CheckpointError::TooLarge`] (the caller reports it "not
    /// checkpointed"); a fifo, socket or device is [`CheckpointError::Unsupported`].
    pub fn read_state(
        &self,
        fs: &WorkspaceFs,
        loc: &Location,
    ) -> Result<EntryState, CheckpointError> {
        self.state_of(fs, loc, Keep::Blob)
    }

    /// [`CheckpointStore::read_state`] with or without storing a file's content: a state only
    /// ever compared (a turn's state after, a path already captured) needs its hash, not a blob,
    /// so that 200 writes of one file in a turn store one blob and not 200.
    fn state_of(
        &self,
        fs: &WorkspaceFs,
        loc: &Location,
        keep: Keep,
    ) -> Result<EntryState, CheckpointError> {
        let label = || loc.rel.to_string_lossy().into_owned();
        match fs.entry_kind(loc)? {
            None => return Ok(EntryState::Absent),
            Some((EntryKind::Dir, mode)) => return Ok(EntryState::Dir { mode }),
            Some((EntryKind::Other, _)) => {
                return Err(CheckpointError::Unsupported { label: label() });
            }
            Some((EntryKind::File | EntryKind::Symlink, _)) => {}
        }
        let mut budget = Budget {
            bytes: self.max_file_bytes,
            entries: 1,
        };
        // Attack: a huge file must not exhaust memory: read_entry stops one byte over the limit.
        match fs.read_entry(loc, &mut budget) {
            Ok(None) => Ok(EntryState::Absent),
            Ok(Some(Node::File { mode, bytes })) => Ok(EntryState::File {
                mode,
                size: bytes.len() as u64,
                hash: match keep {
                    Keep::Blob => self.put_blob(&bytes)?,
                    Keep::HashOnly => sha256_hex(&bytes),
                },
            }),
            Ok(Some(Node::Symlink { target })) => Ok(EntryState::Symlink {
                target: PathBuf::from(target),
            }),
            Ok(Some(Node::Dir { mode, children })) if children.is_empty() => {
                Ok(EntryState::Dir { mode })
            }
            Ok(Some(_)) => Err(CheckpointError::Unsupported { label: label() }),
            Err(FsError::LimitExceeded { label, .. }) => Err(CheckpointError::TooLarge {
                label,
                max: self.max_file_bytes,
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Puts the entry at `loc` back to `state` through `fs` (never through a link): a file from its
    /// blob (checked against its hash) with its mode, a link with its target, a directory made
    /// where none is (one already there is left as it is), and an absent entry removed with
    /// everything below it.
    pub fn restore_state(
        &self,
        fs: &WorkspaceFs,
        loc: &Location,
        state: &EntryState,
    ) -> Result<(), CheckpointError> {
        let node = match state {
            EntryState::Absent => {
                return match fs.remove_tree(loc) {
                    Ok(()) | Err(FsError::NotFound { .. }) => Ok(()),
                    Err(e) => Err(e.into()),
                };
            }
            EntryState::Dir { mode } => {
                if let Some((EntryKind::Dir, _)) = fs.entry_kind(loc)? {
                    return Ok(());
                }
                Node::Dir {
                    mode: *mode,
                    children: std::collections::BTreeMap::new(),
                }
            }
            EntryState::File { mode, hash, .. } => Node::File {
                mode: *mode,
                bytes: self.read_blob(hash)?,
            },
            EntryState::Symlink { target } => Node::Symlink {
                target: target.clone().into_os_string(),
            },
        };
        fs.restore(loc, &node)?;
        Ok(())
    }

    /// Records in `turn` the state of `loc` before a change, and [`EntryState::Absent`] for every
    /// directory on the way to it that does not exist yet (a write creates them; `undo` then
    /// removes them when empty). The first capture of a path in a turn wins. Returns the state
    /// of `loc` now.
    pub fn capture_before(
        &self,
        turn: &mut TurnCheckpoint,
        ws: &Workspace,
        fs: &WorkspaceFs,
        loc: &Location,
    ) -> Result<EntryState, CheckpointError> {
        // The first capture wins: a path already captured needs no second blob.
        let keep = if turn.before(ws, loc).is_some() {
            Keep::HashOnly
        } else {
            Keep::Blob
        };
        let state = self.state_of(fs, loc, keep)?;
        for parent in fs.missing_parents(loc)?.iter().rev() {
            turn.note_before(ws, parent, EntryState::Absent);
        }
        turn.note_before(ws, loc, state.clone());
        Ok(state)
    }

    /// Records in `turn` the state of `loc` after a change, and that of every directory on the
    /// way to it the turn recorded as absent before. The latest capture wins. Returns the state
    /// of `loc` now.
    pub fn capture_after(
        &self,
        turn: &mut TurnCheckpoint,
        ws: &Workspace,
        fs: &WorkspaceFs,
        loc: &Location,
    ) -> Result<EntryState, CheckpointError> {
        // A state after is only ever compared with what undo finds: its hash is enough.
        for parent in parents(loc) {
            if turn.before(ws, &parent) == Some(&EntryState::Absent) {
                let now = self.state_of(fs, &parent, Keep::HashOnly)?;
                turn.note_after(ws, &parent, now);
            }
        }
        let state = self.state_of(fs, loc, Keep::HashOnly)?;
        turn.note_after(ws, loc, state.clone());
        Ok(state)
    }

    /// [`CheckpointStore::capture_after`] for each of `locs`, each directory on the way looked
    /// at once however many entries it holds (a command that made 200,000 files in one new
    /// directory costs 200,000 captures, not 400,000). `stop` is asked every 1,024 entries:
    /// when it says so, the captures stop and `Ok(Some(done))` says how many were made. An entry
    /// too large or not a file, a link or a directory is passed over, as before it was.
    pub fn capture_after_all(
        &self,
        turn: &mut TurnCheckpoint,
        ws: &Workspace,
        fs: &WorkspaceFs,
        locs: &[&Location],
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<usize>, CheckpointError> {
        let mut parents_seen: std::collections::HashSet<Location> =
            std::collections::HashSet::new();
        for (done, loc) in locs.iter().enumerate() {
            if done % 1024 == 0 && stop() {
                return Ok(Some(done));
            }
            for parent in parents(loc) {
                if parents_seen.contains(&parent) {
                    // Its own parents were looked at with it.
                    break;
                }
                if turn.before(ws, &parent) == Some(&EntryState::Absent) {
                    let now = self.state_of(fs, &parent, Keep::HashOnly)?;
                    turn.note_after(ws, &parent, now);
                }
                parents_seen.insert(parent);
            }
            match self.state_of(fs, loc, Keep::HashOnly) {
                Ok(state) => turn.note_after(ws, loc, state),
                // Not kept before either (too large, not a regular file): nothing to pair it with.
                Err(CheckpointError::TooLarge { .. } | CheckpointError::Unsupported { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The checkpoint of turn `turn_id`: loaded if it was recorded, else created (and saved at
    /// once, so that it takes its place in the order of turns). Ids are 1 to 64 of
    /// `A-Z a-z 0-9 - _`.
    pub fn turn(&self, turn_id: &str) -> Result<TurnCheckpoint, CheckpointError> {
        // Attack: a turn id such as `../../x` used as a file name.
        if !is_valid_id(turn_id) {
            return Err(CheckpointError::InvalidTurnId {
                id: turn_id.to_owned(),
            });
        }
        self.set_current(turn_id);
        let path = self.turns_dir().join(format!("{turn_id}.json"));
        if let Some(turn) = TurnCheckpoint::load(&path)? {
            if !turn.is_undone() {
                return Ok(turn);
            }
            // An undone turn is closed. Changes under its id start a new turn after every other,
            // so that the next undo finds them (and not the turn before the undone one).
            let closed = self
                .turns_dir()
                .join(format!("{turn_id}.{}.undone", turn.seq()));
            std::fs::rename(&path, &closed).map_err(|source| CheckpointError::Io {
                path: path.clone(),
                source,
            })?;
        }
        let seq = self
            .turns()?
            .iter()
            .map(TurnCheckpoint::seq)
            .max()
            .map_or(1, |s| s.saturating_add(1));
        let turn = TurnCheckpoint::new(path, turn_id, seq);
        turn.save()?;
        Ok(turn)
    }

    /// Whether `id` can name a turn: 1 to 64 of `A-Z a-z 0-9 - _`.
    pub fn is_valid_turn_id(id: &str) -> bool {
        is_valid_id(id)
    }

    /// Every recorded turn, oldest first. A manifest that cannot be read is an error (fail
    /// closed: it might be the latest turn).
    pub fn turns(&self) -> Result<Vec<TurnCheckpoint>, CheckpointError> {
        let dir = self.turns_dir();
        let io = |source| CheckpointError::Io {
            path: dir.clone(),
            source,
        };
        let mut turns = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            // Temporary files of a write in progress, and anything not a manifest.
            if name.starts_with(".tmp-") || Path::new(name).extension().is_none_or(|e| e != "json")
            {
                continue;
            }
            let path = entry.path();
            if let Some(turn) = TurnCheckpoint::load(&path)? {
                turns.push(turn);
            }
        }
        turns.sort_by(|a, b| order(a).cmp(&order(b)));
        Ok(turns)
    }

    /// The id of the turn [`CheckpointStore::undo_last`] would undo: the latest turn that is not
    /// undone and changed something. `None` when there is none or the store cannot be read.
    pub fn last_turn(&self) -> Option<String> {
        self.latest_undoable()
            .ok()
            .flatten()
            .map(|t| t.id().to_owned())
    }

    /// The latest turn not undone that changed something.
    pub(crate) fn latest_undoable(&self) -> Result<Option<TurnCheckpoint>, CheckpointError> {
        Ok(self
            .turns()?
            .into_iter()
            .filter(|t| !t.is_undone() && t.has_changes())
            .max_by(|a, b| order(a).cmp(&order(b))))
    }

    fn turns_dir(&self) -> PathBuf {
        self.dir.join("turns")
    }
}

/// Whether reading a state stores a file's content as a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Stored: the state may be restored.
    Blob,
    /// Hashed only: the state is only compared.
    HashOnly,
}

/// The order of turns: sequence number, then creation time, then id.
fn order(t: &TurnCheckpoint) -> (u64, u64, &str) {
    (t.manifest.seq, t.manifest.created_ms, t.id())
}

/// The directories on the way to `loc` below its root, nearest first (the root itself excluded).
fn parents(loc: &Location) -> impl Iterator<Item = Location> + '_ {
    loc.rel
        .ancestors()
        .skip(1)
        .take_while(|p| !p.as_os_str().is_empty())
        .map(|p| Location {
            root: loc.root,
            rel: p.to_path_buf(),
        })
}
