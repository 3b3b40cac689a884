//! `spear undo`: restores the files the last turn changed, all or nothing.

use crate::context::{Context, WorkspaceArgs};
use crate::out::outln;

/// `spear undo [--workspace DIR]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    workspace: WorkspaceArgs,
}

/// Undoes the last turn; returns 0 when restored, 1 on a conflict (nothing restored).
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    let ctx = Context::open(&args.workspace, host).map_err(|e| e.to_string())?;
    let ws = ctx.policy.workspace();
    let store = crate::state_home::checkpoints(host, ws, &ctx.quotas)?;
    let fs = ws
        .fs()
        .map_err(|e| format!("the workspace cannot be opened: {e}"))?;
    match store.undo_last(ws, &fs) {
        Ok(report) => {
            outln!("{report}");
            let mut record = spear_runtime::AuditRecord::new(
                spear_tools::random_id(),
                spear_runtime::AuditEvent::Undo,
            );
            record.turn = Some(report.turn.clone());
            record.changed_paths = report
                .restored
                .iter()
                .chain(&report.removed)
                .cloned()
                .collect();
            if let Err(e) = crate::state_home::audit(host, &ctx.quotas)
                .and_then(|log| log.log(&record).map_err(|e| e.to_string()))
            {
                eprintln!(
                    "spear: the undo was done, but its audit record could not be written: {e}"
                );
            }
            Ok(0)
        }
        Err(e) => {
            eprintln!("spear: undo: {e}");
            Ok(1)
        }
    }
}
