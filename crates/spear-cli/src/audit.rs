//! `spear audit [--tail N]`: prints the audit log.

use std::io::Write;

/// `spear audit [--tail N]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the last N records.
    #[arg(long, value_name = "N")]
    tail: Option<usize>,
}

/// Prints the log (one JSON record a line); returns the exit status.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    let path = crate::state_home::audit_path(host)?;
    if !path.exists() {
        eprintln!("spear: no audit log yet at {}", path.display());
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    if let Some(n) = args.tail {
        let lines = spear_runtime::AuditLogger::tail(&path, n)
            .map_err(|e| format!("the audit log {} cannot be read: {e}", path.display()))?;
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    } else {
        // The rotated, older log first, if there is one.
        let older = spear_runtime::AuditLogger::rotated_path(&path);
        if let Ok(mut file) = std::fs::File::open(&older) {
            std::io::copy(&mut file, &mut out)
                .map_err(|e| format!("the audit log {} cannot be read: {e}", older.display()))?;
        }
        let mut file = std::fs::File::open(&path)
            .map_err(|e| format!("the audit log {} cannot be read: {e}", path.display()))?;
        std::io::copy(&mut file, &mut out)
            .map_err(|e| format!("the audit log {} cannot be read: {e}", path.display()))?;
    }
    Ok(0)
}
