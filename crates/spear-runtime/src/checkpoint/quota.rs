//! The checkpoint store's quotas: what one workspace's store, and every store of the user
//! together, may hold, and the free space kept on their filesystem.
//!
//! Attack: a model writing without pause (200 one-MiB writes a turn, turn after turn) grew a
//! store until the filesystem was full, and every other program on the host lost its disk. With
//! a quota, a new blob that would take the store past it first evicts the oldest turns (their
//! manifests, then the blobs no remaining turn names); the current turn and the latest turn of
//! each store are kept whole, and when they alone do not fit, the write is refused with
//! [`super::CheckpointError::QuotaFull`] before anything is written. Below the free-space floor,
//! nothing new is stored ([`super::CheckpointError::FloorReached`]).
//!
//! Cost: the store's size is scanned once per process (at its first new blob) and again only
//! when the running count says a blob would not fit, or the count is older than
//! [`RESCAN_AFTER`] (another process may have added to the store meanwhile). An eviction holds
//! an exclusive `flock` on the store's `.lock`, so two processes never evict at once.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::evict::{Plan, TurnRefs, plan};
use super::manifest::Manifest;
use super::names::is_sha256_hex;

/// How long a running count of the store's bytes is trusted before it is scanned again.
pub(crate) const RESCAN_AFTER: Duration = Duration::from_secs(10);

/// How long a blob this process stored, and no saved manifest may name yet, is kept from
/// eviction.
pub(crate) const PENDING_FOR: Duration = Duration::from_secs(600);

/// A manifest saved this long before a blob was marked pending may still have been saved after
/// it: file times come from a coarser clock.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

/// Limits on the checkpoint stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreQuota {
    /// Bytes one workspace's store may hold (blobs and manifests).
    pub max_bytes: u64,
    /// Bytes every store under the same `checkpoints/` directory may hold together.
    pub all_max_bytes: u64,
    /// Free bytes kept on the store's filesystem.
    pub free_floor_bytes: u64,
}

/// What a store holds, as `spear gc` and `spear doctor` report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreUsage {
    /// Blob files.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// Turn manifests (undone ones included).
    pub turns: u64,
    /// Their bytes.
    pub turn_bytes: u64,
}

impl StoreUsage {
    /// Every byte held.
    pub fn bytes(&self) -> u64 {
        self.blob_bytes + self.turn_bytes
    }
}

/// The running count of one store's bytes, shared by the clones of a store.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// Bytes held at the last scan plus what this process stored since; `None` before a scan.
    pub(crate) bytes: Option<u64>,
    /// Bytes the other stores of the user held at the last scan (0 when they were not looked
    /// at: too few to reach the user's quota).
    pub(crate) others: u64,
    /// When it was last scanned.
    pub(crate) scanned: Option<Instant>,
    /// Blobs this process stored (or found already stored), and when: kept from eviction until
    /// a manifest saved after names them, for at most [`PENDING_FOR`].
    pub(crate) pending: HashMap<String, SystemTime>,
}

impl Ledger {
    /// Whether the count says `need` more bytes fit under the store's quota and the user's,
    /// without a scan.
    pub(crate) fn fits(&self, need: u64, q: &StoreQuota) -> bool {
        match (self.bytes, self.scanned) {
            (Some(b), Some(at)) => {
                at.elapsed() < RESCAN_AFTER
                    && b.saturating_add(need) <= q.max_bytes
                    && b.saturating_add(need).saturating_add(self.others) <= q.all_max_bytes
            }
            _ => false,
        }
    }

    /// Notes a blob this process stored.
    pub(crate) fn stored(&mut self, hash: &str, size: u64) {
        if let Some(b) = &mut self.bytes {
            *b = b.saturating_add(size);
        }
        let now = SystemTime::now();
        self.pending
            .retain(|_, at| now.duration_since(*at).is_ok_and(|d| d < PENDING_FOR));
        self.pending.insert(hash.to_owned(), now);
    }

    /// The blobs still pending, and when they were marked.
    pub(crate) fn pending(&self) -> HashMap<String, SystemTime> {
        self.pending
            .iter()
            .filter(|(_, at)| at.elapsed().is_ok_and(|d| d < PENDING_FOR))
            .map(|(h, at)| (h.clone(), *at))
            .collect()
    }
}

/// Whether a file name in `turns/` is a live manifest (`<id>.json`), as the store writes them.
fn is_live(name: &str) -> bool {
    Path::new(name).extension().is_some_and(|e| e == "json")
}

/// Whether a file name in `turns/` is a manifest, live or undone (`<id>.<seq>.undone`).
fn is_manifest(name: &str) -> bool {
    !name.starts_with(".tmp-")
        && Path::new(name)
            .extension()
            .is_some_and(|e| e == "json" || e == "undone")
}

/// One store as a scan found it.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Blob name to size.
    pub(crate) blobs: HashMap<String, u64>,
    /// Manifests: file name, turn id, and what they refer to.
    pub(crate) turns: Vec<(String, String, TurnRefs)>,
    /// When each manifest (same order) was last saved.
    pub(crate) saved: Vec<SystemTime>,
    /// Some manifest could not be read: no blob is taken for unreferenced, since it may name it.
    pub(crate) damaged: bool,
}

impl Scanned {
    /// The blobs kept whatever the plan: every blob when a manifest is damaged; else those
    /// `pending` that no manifest saved after they were marked names (a capture in progress may
    /// name them in a manifest not saved yet).
    pub(crate) fn kept(&self, pending: &HashMap<String, SystemTime>) -> HashSet<String> {
        if self.damaged {
            return self.blobs.keys().cloned().collect();
        }
        let mut named_at: HashMap<&str, SystemTime> = HashMap::new();
        for ((_, _, t), saved) in self.turns.iter().zip(&self.saved) {
            for b in &t.blobs {
                let at = named_at.entry(b.as_str()).or_insert(*saved);
                *at = (*at).max(*saved);
            }
        }
        pending
            .iter()
            .filter(|(b, marked)| {
                named_at
                    .get(b.as_str())
                    .is_none_or(|saved| *saved + CLOCK_SLACK < **marked)
            })
            .map(|(b, _)| b.clone())
            .collect()
    }

    /// The turns' references, in scan order.
    pub(crate) fn refs(&self) -> Vec<TurnRefs> {
        self.turns.iter().map(|(_, _, t)| t.clone()).collect()
    }

    /// What the store holds.
    pub(crate) fn usage(&self) -> StoreUsage {
        StoreUsage {
            blobs: self.blobs.len() as u64,
            blob_bytes: self.blobs.values().sum(),
            turns: self.turns.len() as u64,
            turn_bytes: self.turns.iter().map(|(_, _, t)| t.manifest_bytes).sum(),
        }
    }

    /// Marks protected the turn named `current` and the latest turn that is not undone.
    pub(crate) fn protect(&mut self, current: Option<&str>) {
        let latest = self
            .turns
            .iter()
            .enumerate()
            .filter(|(_, (name, _, _))| is_live(name))
            .max_by_key(|(_, (_, _, t))| t.order)
            .map(|(i, _)| i);
        for (i, (name, id, t)) in self.turns.iter_mut().enumerate() {
            t.protected = Some(i) == latest || (is_live(name) && Some(id.as_str()) == current);
        }
    }
}

/// Reads what the store at `dir` holds: every blob's size and every manifest's references (an
/// undone turn's too). A manifest that cannot be read counts its bytes and refers to nothing it
/// could be trusted for; it is never evicted, so that a damaged store is left for a person to see.
pub(crate) fn scan(dir: &Path) -> io::Result<Scanned> {
    let mut out = Scanned::default();
    for entry in std::fs::read_dir(dir.join("blobs"))? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_sha256_hex(name) {
            continue;
        }
        let meta = entry.metadata()?;
        if meta.is_file() {
            out.blobs.insert(name.to_owned(), meta.len());
        }
    }
    for entry in std::fs::read_dir(dir.join("turns"))? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_manifest(name) {
            continue;
        }
        let meta = entry.metadata()?;
        if !meta.is_file() {
            continue;
        }
        // As a turn is loaded: one over the largest manifest read back is damaged, not read.
        let bytes = if meta.len() > super::manifest::MAX_MANIFEST_BYTES {
            Vec::new()
        } else {
            std::fs::read(entry.path())?
        };
        let (id, refs) = match serde_json::from_slice::<Manifest>(&bytes) {
            Ok(m) => {
                let blobs = m
                    .entries
                    .iter()
                    .flat_map(|e| std::iter::once(&e.before).chain(e.after.as_ref()))
                    .filter_map(|s| match s {
                        super::EntryState::File { hash, .. } if is_sha256_hex(hash) => {
                            Some(hash.clone())
                        }
                        _ => None,
                    })
                    .collect();
                (
                    m.turn,
                    TurnRefs {
                        order: (m.created_ms, m.seq),
                        manifest_bytes: meta.len(),
                        blobs,
                        protected: false,
                    },
                )
            }
            Err(_) => (
                {
                    out.damaged = true;
                    String::new()
                },
                TurnRefs {
                    order: (0, 0),
                    manifest_bytes: meta.len(),
                    blobs: Vec::new(),
                    protected: true,
                },
            ),
        };
        out.turns.push((name.to_owned(), id, refs));
        out.saved.push(meta.modified()?);
    }
    Ok(out)
}

/// The blobs no manifest names and `kept` does not hold. Pure over the scan.
pub(crate) fn orphans(scanned: &Scanned, kept: &HashSet<String>) -> Vec<String> {
    let named: HashSet<&String> = scanned
        .turns
        .iter()
        .flat_map(|(_, _, t)| &t.blobs)
        .collect();
    let mut out: Vec<String> = scanned
        .blobs
        .keys()
        .filter(|b| !named.contains(b) && !kept.contains(*b))
        .cloned()
        .collect();
    out.sort();
    out
}

/// Carries out `plan` on the store at `dir`: the evicted manifests first (a turn without its
/// blobs must never be found), then the freed blobs. Returns what could not be removed.
pub(crate) fn carry_out(dir: &Path, scanned: &Scanned, plan: &Plan) -> Vec<String> {
    let mut failed = Vec::new();
    for &i in &plan.evict {
        let (name, id, _) = &scanned.turns[i];
        match std::fs::remove_file(dir.join("turns").join(name)) {
            Ok(()) => tracing::info!(turn = %id, store = %dir.display(), "checkpoint turn evicted"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => failed.push(format!("turn {id}: {e}")),
        }
    }
    for hash in &plan.free_blobs {
        match std::fs::remove_file(dir.join("blobs").join(hash)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => failed.push(format!("blob {hash}: {e}")),
        }
    }
    failed
}

/// An exclusive `flock` on `dir/.lock`, released when dropped.
pub(crate) fn lock(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(dir.join(".lock"))?;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Ok(file),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A byte count for messages: `100 MiB`, `1.5 GiB`, `300 KiB`, `12 bytes`.
pub fn bytes_text(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // A message, not a measurement.
    let show = |shift: u32, unit: &str| {
        let v = n as f64 / (1u64 << shift) as f64;
        if n.is_multiple_of(1 << shift) {
            format!("{} {unit}", n >> shift)
        } else {
            format!("{v:.1} {unit}")
        }
    };
    match n {
        n if n >= 1 << 30 => show(30, "GiB"),
        n if n >= 1 << 20 => show(20, "MiB"),
        n if n >= 1 << 10 => show(10, "KiB"),
        n => format!("{n} bytes"),
    }
}

/// Free bytes for an unprivileged writer on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let st = rustix::fs::statvfs(path)?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// The other stores next to `dir` (siblings named like a workspace key).
pub(crate) fn sibling_stores(dir: &Path) -> Vec<PathBuf> {
    let Some(parent) = dir.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(super::names::is_store_key)
        })
        .map(|e| e.path())
        .filter(|p| p != dir && p.is_dir())
        .collect()
}

/// Plans the eviction across several stores at once (oldest turn of any store first), each
/// store's latest turn and `current` (in `stores[0]`) protected. Pure over the scans.
pub(crate) fn plan_across(
    scans: &mut [(PathBuf, Scanned)],
    current: Option<&str>,
    pending: &HashMap<String, SystemTime>,
    need: u64,
    limit: u64,
) -> Vec<Plan> {
    let mut turns = Vec::new();
    let mut owner = Vec::new();
    let mut blobs = HashMap::new();
    let mut pend = HashSet::new();
    let none = HashMap::new();
    for (s, (_, scanned)) in scans.iter_mut().enumerate() {
        scanned.protect(if s == 0 { current } else { None });
        for (i, (_, _, t)) in scanned.turns.iter().enumerate() {
            let mut t = t.clone();
            t.blobs = t.blobs.iter().map(|b| format!("{s}/{b}")).collect();
            turns.push(t);
            owner.push((s, i));
        }
        for (b, size) in &scanned.blobs {
            blobs.insert(format!("{s}/{b}"), *size);
        }
        let kept = scanned.kept(if s == 0 { pending } else { &none });
        pend.extend(kept.iter().map(|b| format!("{s}/{b}")));
    }
    let whole = plan(&turns, &blobs, &pend, need, limit);
    let mut plans = vec![Plan::default(); scans.len()];
    for i in whole.evict {
        let (s, t) = owner[i];
        plans[s].evict.push(t);
    }
    for key in whole.free_blobs {
        if let Some((s, b)) = key.split_once('/')
            && let Ok(s) = s.parse::<usize>()
            && let Some(p) = plans.get_mut(s)
        {
            p.free_blobs.push(b.to_owned());
        }
    }
    for p in &mut plans {
        p.fits = whole.fits;
    }
    plans
}
