//! Where spear keeps state outside the workspace: the audit log, stored outputs and checkpoints,
//! under `$XDG_STATE_HOME/spear` (or `~/.local/state/spear`).

use std::path::PathBuf;

use spear_policy::quotas::Quotas;
use spear_runtime::AuditLogger;
use spear_runtime::HostSnapshot;
use spear_runtime::ResultStore;
use spear_runtime::{CheckpointStore, StoreQuota};
use spear_workspace::Workspace;

/// `$XDG_STATE_HOME` and `$HOME`, in the one normal form every part of spear uses
/// ([`spear_runtime::host_xdg_state_home`], [`spear_runtime::host_home`]).
pub fn dirs(host: &HostSnapshot) -> Result<(Option<PathBuf>, Option<PathBuf>), String> {
    let xdg = spear_runtime::host_xdg_state_home(host).map_err(|e| e.to_string())?;
    let home = spear_runtime::host_home(host).map_err(|e| e.to_string())?;
    Ok((xdg, home))
}

/// spear's state directory: `$XDG_STATE_HOME/spear`, or `~/.local/state/spear`. It holds the
/// grant key and the record of used grants; no sandbox and no file tool sees it.
pub fn state_dir(host: &HostSnapshot) -> Result<PathBuf, String> {
    let (xdg, home) = dirs(host)?;
    match (xdg, home) {
        (Some(x), _) => Ok(x.join("spear")),
        (None, Some(h)) => Ok(h.join(".local/state/spear")),
        (None, None) => Err(
            "neither XDG_STATE_HOME nor HOME is set, so spear has nowhere to keep its grant key"
                .into(),
        ),
    }
}

/// The audit log's path.
pub fn audit_path(host: &HostSnapshot) -> Result<PathBuf, String> {
    let (xdg, home) = dirs(host)?;
    spear_runtime::default_audit_path(xdg.as_deref(), home.as_deref()).ok_or_else(|| {
        "neither XDG_STATE_HOME nor HOME is set, so spear has nowhere to keep its audit log".into()
    })
}

/// The audit logger, rotating the log at the operator's size.
pub fn audit(host: &HostSnapshot, quotas: &Quotas) -> Result<AuditLogger, String> {
    let path = audit_path(host)?;
    AuditLogger::open(&path)
        .map(|log| log.with_rotation(quotas.audit_bytes))
        .map_err(|e| format!("the audit log {} cannot be opened: {e}", path.display()))
}

/// The result store of `session`, within the operator's per-session budget.
pub fn results(host: &HostSnapshot, session: &str, quotas: &Quotas) -> Result<ResultStore, String> {
    let (xdg, home) = dirs(host)?;
    let base = spear_runtime::results_base(xdg.as_deref(), home.as_deref())
        .ok_or("neither XDG_STATE_HOME nor HOME is set, so spear has nowhere to keep outputs")?;
    ResultStore::open(&base, session)
        .map(|store| store.with_budget(quotas.results_bytes))
        .map_err(|e| format!("the result store cannot be opened: {e}"))
}

/// Where `session`'s stored outputs are kept (whether or not any are).
pub fn results_dir(host: &HostSnapshot, session: &str) -> Result<PathBuf, String> {
    let (xdg, home) = dirs(host)?;
    spear_runtime::results_base(xdg.as_deref(), home.as_deref())
        .map(|base| base.join(session))
        .ok_or_else(|| "neither XDG_STATE_HOME nor HOME is set".to_owned())
}

/// Where the checkpoint store of `ws` is kept (whether or not it was made).
pub fn checkpoints_dir(host: &HostSnapshot, ws: &Workspace) -> Result<PathBuf, String> {
    let (xdg, home) = dirs(host)?;
    CheckpointStore::default_dir(xdg.as_deref(), home.as_deref(), ws).ok_or_else(|| {
        "neither XDG_STATE_HOME nor HOME is set, so spear has nowhere to keep checkpoints"
            .to_owned()
    })
}

/// The checkpoint store of `ws`, held to the operator's `quotas`.
pub fn checkpoints(
    host: &HostSnapshot,
    ws: &Workspace,
    quotas: &Quotas,
) -> Result<CheckpointStore, String> {
    let dir = checkpoints_dir(host, ws)?;
    CheckpointStore::open(&dir)
        .map(|store| store.with_quota(store_quota(quotas)))
        .map_err(|e| {
            format!(
                "the checkpoint store {} cannot be opened: {e}",
                dir.display()
            )
        })
}

/// The checkpoint stores' part of the operator's quotas.
pub fn store_quota(quotas: &Quotas) -> StoreQuota {
    StoreQuota {
        max_bytes: quotas.checkpoints_bytes,
        all_max_bytes: quotas.checkpoints_all_bytes,
        free_floor_bytes: quotas.free_floor_bytes,
    }
}
