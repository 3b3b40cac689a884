//! `spear gc`: what spear's own stores hold (checkpoints, stored outputs, the audit log), their
//! quotas, and the free space left on their filesystem; and clearing what may go.
//!
//! Without flags it brings every store within its quota (the oldest checkpoint turns first),
//! removes checkpoint content no turn names, and removes the stored outputs of sessions idle for
//! a day. `--checkpoints` also removes every checkpoint turn (nothing is left to undo), and
//! `--results` the outputs of every session idle for ten minutes. `spear doctor` prints the same
//! report, changing nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use spear_policy::OperatorConfig;
use spear_policy::quotas::Quotas;
use spear_runtime::HostSnapshot;
use spear_runtime::{
    CheckpointStore, checkpoint_store_usage as store_usage, checkpoint_stores_base as stores_base,
    list_checkpoint_stores as list_stores,
};
use spear_runtime::{bytes_text, free_bytes};
use spear_runtime::{results_base as default_base, results_usage as usage_of};

use crate::out::outln;

/// A session's outputs idle this long are removed by `spear gc`.
const RESULTS_IDLE: Duration = Duration::from_secs(24 * 3600);

/// ... and by `spear gc --results`.
const RESULTS_IDLE_CLEAR: Duration = Duration::from_secs(600);

/// `spear gc [--checkpoints] [--results] [--json]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also remove every checkpoint turn of every workspace: `spear undo` has nothing left.
    #[arg(long)]
    checkpoints: bool,
    /// Also remove the stored outputs of every session idle for ten minutes (their refs then
    /// answer "not found").
    #[arg(long)]
    results: bool,
    /// Print one JSON object (the report before and after) instead of text.
    #[arg(long)]
    json: bool,
    /// The operator configuration file (default: ~/.config/spear/config.toml), for the quotas.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// What spear's stores hold, and their quotas.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StateReport {
    /// spear's state directory.
    pub state_dir: PathBuf,
    /// Free bytes on its filesystem (`None`: it does not exist yet, or cannot be examined).
    pub free_bytes: Option<u64>,
    /// `[state] free_floor`.
    pub free_floor_bytes: u64,
    /// Every workspace's checkpoint store.
    pub checkpoints: Vec<StoreRow>,
    /// Their bytes together.
    pub checkpoints_bytes: u64,
    /// `[state] checkpoints` (one workspace).
    pub checkpoints_quota: u64,
    /// `[state] checkpoints_all` (every workspace).
    pub checkpoints_all_quota: u64,
    /// Sessions with stored outputs.
    pub result_sessions: u64,
    /// Their bytes together.
    pub results_bytes: u64,
    /// The largest session's bytes.
    pub results_largest_session: u64,
    /// `[state] results` (one session).
    pub results_quota: u64,
    /// The audit log's bytes (with its rotated, older file).
    pub audit_bytes: u64,
    /// `[state] audit` (rotation size).
    pub audit_rotate_at: u64,
}

/// One checkpoint store.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StoreRow {
    /// Its directory.
    pub dir: PathBuf,
    /// Turns (undone ones included).
    pub turns: u64,
    /// Content blobs.
    pub blobs: u64,
    /// Bytes held.
    pub bytes: u64,
}

/// The operator's quotas, from `config` or the default configuration file.
pub fn quotas(host: &HostSnapshot, config: Option<&Path>) -> Result<Quotas, String> {
    let (operator, name) = operator(host, config)?;
    Quotas::resolve(&operator.state, &name).map_err(|e| e.to_string())
}

/// The operator's configuration, from `config` or the default file, and its name for messages.
pub fn operator(
    host: &HostSnapshot,
    config: Option<&Path>,
) -> Result<(OperatorConfig, String), String> {
    let home = spear_runtime::host_home(host).map_err(|e| e.to_string())?;
    let xdg = spear_runtime::host_xdg_config_home(host).map_err(|e| e.to_string())?;
    let path = match config {
        Some(p) => Some(p.to_path_buf()),
        None => OperatorConfig::default_path(xdg.as_deref(), home.as_deref()),
    };
    let operator = match &path {
        Some(p) => OperatorConfig::load(p).map_err(|e| e.to_string())?,
        None => OperatorConfig::default(),
    };
    let name = path.map_or_else(
        || "the operator configuration".to_owned(),
        |p| p.display().to_string(),
    );
    Ok((operator, name))
}

/// Where the stores are.
struct Places {
    state_dir: PathBuf,
    checkpoints: Option<PathBuf>,
    results: Option<PathBuf>,
    audit: PathBuf,
}

fn places(host: &HostSnapshot) -> Result<Places, String> {
    let (xdg, home) = crate::state_home::dirs(host)?;
    Ok(Places {
        state_dir: crate::state_home::state_dir(host)?,
        checkpoints: stores_base(xdg.as_deref(), home.as_deref()),
        results: default_base(xdg.as_deref(), home.as_deref()),
        audit: crate::state_home::audit_path(host)?,
    })
}

/// The report of what the stores hold now. Changes nothing.
pub fn report(host: &HostSnapshot, quotas: &Quotas) -> Result<StateReport, String> {
    let at = places(host)?;
    let mut checkpoints = Vec::new();
    if let Some(base) = &at.checkpoints {
        for dir in list_stores(base).map_err(|e| format!("{}: {e}", base.display()))? {
            // Read as they are (nothing created or changed); one that cannot be scanned shows empty.
            let usage = store_usage(&dir);
            let (turns, blobs, bytes) = usage.map_or((0, 0, 0), |u| (u.turns, u.blobs, u.bytes()));
            checkpoints.push(StoreRow {
                dir,
                turns,
                blobs,
                bytes,
            });
        }
    }
    let sessions = at
        .results
        .as_deref()
        .map(result_sessions)
        .unwrap_or_default();
    let audit_bytes = [
        at.audit.clone(),
        spear_runtime::AuditLogger::rotated_path(&at.audit),
    ]
    .iter()
    .filter_map(|p| std::fs::symlink_metadata(p).ok())
    .map(|m| m.len())
    .sum();
    Ok(StateReport {
        free_bytes: nearest_existing(&at.state_dir).and_then(|p| free_bytes(&p).ok()),
        state_dir: at.state_dir,
        free_floor_bytes: quotas.free_floor_bytes,
        checkpoints_bytes: checkpoints.iter().map(|c| c.bytes).sum(),
        checkpoints,
        checkpoints_quota: quotas.checkpoints_bytes,
        checkpoints_all_quota: quotas.checkpoints_all_bytes,
        result_sessions: sessions.len() as u64,
        results_bytes: sessions.iter().map(|s| s.1).sum(),
        results_largest_session: sessions.iter().map(|s| s.1).max().unwrap_or(0),
        results_quota: quotas.results_bytes,
        audit_bytes,
        audit_rotate_at: quotas.audit_bytes,
    })
}

/// The directory itself or its nearest ancestor that exists (for the free space).
fn nearest_existing(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|p| p.exists()).map(Path::to_path_buf)
}

/// Every session directory under `base`: its path, bytes and newest modification.
fn result_sessions(base: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        // Real directories only: a link is never followed, nor removed through.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let bytes = usage_of(&dir).map_or(0, |u| u.bytes);
        let newest = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| e.metadata().ok()?.modified().ok())
            .chain(entry.metadata().ok().and_then(|m| m.modified().ok()))
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        out.push((dir, bytes, newest));
    }
    out.sort();
    out
}

/// What `spear gc` did.
#[derive(Debug, Serialize)]
struct GcReport {
    before: StateReport,
    after: StateReport,
    /// Checkpoint turns removed by `--checkpoints`.
    turns_cleared: u64,
    /// Result sessions removed.
    result_sessions_removed: u64,
    /// What could not be done.
    problems: Vec<String>,
}

/// Runs `spear gc`; exit status 0, or 1 when something could not be cleared.
pub fn run(args: &Args, host: &HostSnapshot) -> Result<i32, String> {
    let quotas = quotas(host, args.config.as_deref())?;
    let store_quota = crate::state_home::store_quota(&quotas);
    let before = report(host, &quotas)?;
    let at = places(host)?;
    let mut problems = Vec::new();
    let mut turns_cleared = 0;
    for row in &before.checkpoints {
        let store = match CheckpointStore::open(&row.dir) {
            Ok(s) => s.with_quota(store_quota),
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        if args.checkpoints {
            match store.clear() {
                Ok(n) => turns_cleared += n,
                Err(e) => problems.push(e.to_string()),
            }
        }
        if let Err(e) = store.collect_garbage() {
            problems.push(e.to_string());
        }
    }
    let idle = if args.results {
        RESULTS_IDLE_CLEAR
    } else {
        RESULTS_IDLE
    };
    let mut result_sessions_removed = 0;
    let now = SystemTime::now();
    for (dir, _, newest) in at
        .results
        .as_deref()
        .map(result_sessions)
        .unwrap_or_default()
    {
        if now.duration_since(newest).is_ok_and(|d| d >= idle) {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => result_sessions_removed += 1,
                Err(e) => problems.push(format!("{}: {e}", dir.display())),
            }
        }
    }
    let after = report(host, &quotas)?;
    let code = i32::from(!problems.is_empty());
    if args.json {
        let gc = GcReport {
            before,
            after,
            turns_cleared,
            result_sessions_removed,
            problems,
        };
        let text = serde_json::to_string_pretty(&gc).map_err(|e| e.to_string())?;
        outln!("{text}");
    } else {
        print_report(&after);
        outln!(
            "freed {} (checkpoints {} -> {}, stored outputs {} -> {}); {} checkpoint turn(s) and {} session(s) of stored outputs removed",
            bytes_text(
                (before.checkpoints_bytes + before.results_bytes)
                    .saturating_sub(after.checkpoints_bytes + after.results_bytes)
            ),
            bytes_text(before.checkpoints_bytes),
            bytes_text(after.checkpoints_bytes),
            bytes_text(before.results_bytes),
            bytes_text(after.results_bytes),
            turns_cleared,
            result_sessions_removed,
        );
        for p in &problems {
            outln!("could not clear: {p}");
        }
    }
    Ok(code)
}

/// Prints `r` as text (for `spear gc` and `spear doctor`).
pub fn print_report(r: &StateReport) {
    outln!("spear's state in {}:", r.state_dir.display());
    outln!(
        "  checkpoints     {} in {} workspace store(s); quota {} a workspace, {} in all",
        bytes_text(r.checkpoints_bytes),
        r.checkpoints.len(),
        bytes_text(r.checkpoints_quota),
        bytes_text(r.checkpoints_all_quota),
    );
    for c in &r.checkpoints {
        outln!(
            "    {} turn(s), {} blob(s), {}  {}",
            c.turns,
            c.blobs,
            bytes_text(c.bytes),
            c.dir.display()
        );
    }
    outln!(
        "  stored outputs  {} in {} session(s), largest {}; quota {} a session",
        bytes_text(r.results_bytes),
        r.result_sessions,
        bytes_text(r.results_largest_session),
        bytes_text(r.results_quota),
    );
    outln!(
        "  audit log       {}; rotated at {} (one older file kept)",
        bytes_text(r.audit_bytes),
        bytes_text(r.audit_rotate_at),
    );
    match r.free_bytes {
        Some(free) if free < r.free_floor_bytes => outln!(
            "  free space      {} BELOW the floor of {}: calls that write are refused; run `spear gc --checkpoints --results` or free space on that filesystem",
            bytes_text(free),
            bytes_text(r.free_floor_bytes)
        ),
        Some(free) => outln!(
            "  free space      {}; calls that write are refused below {}",
            bytes_text(free),
            bytes_text(r.free_floor_bytes)
        ),
        None => outln!("  free space      unknown (the state directory does not exist yet)"),
    }
}
