//! Progress of long calls, for clients that asked for it (MCP progress notifications).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use spear_policy::Confirmer;
use spear_sandbox::{CancelToken, OutputTee};

/// How far a running call has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Time since the command started, in milliseconds.
    pub elapsed_ms: u64,
    /// Bytes it printed on stdout so far.
    pub stdout_bytes: u64,
    /// Bytes it printed on stderr so far.
    pub stderr_bytes: u64,
}

/// Receives progress reports; called from the supervising thread, so it must not block.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What a client may attach to a call besides its arguments.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Cancellation: the call's whole process tree is killed, and it ends as cancelled.
    pub cancel: Option<CancelToken>,
    /// Progress reports, at most one a second, while a command runs.
    pub progress: Option<ProgressSink>,
    /// Who is asked about this call in ASK, instead of the router's own confirmer: an MCP server
    /// asks through the client that made the call.
    pub confirmer: Option<Arc<dyn Confirmer + Send + Sync>>,
    /// A grant an operator issued ahead of time (`spear grant`), presented with a command
    /// (`spear exec --grant`): it stands for the approval of exactly the command it binds, and
    /// nothing else.
    pub grant: Option<PresentedGrant>,
    /// Instead of running the command, issue an operator's grant for exactly it (`spear grant`):
    /// the call goes through every gate a run would, and its result's stdout is the token.
    pub issue_grant: Option<IssueGrant>,
}

/// What `spear grant` asks of a command call: a grant sealed by `authority`, valid for `ttl`.
#[derive(Clone, Debug)]
pub struct IssueGrant {
    /// The operator's authority.
    pub authority: Arc<spear_runtime::GrantAuthority>,
    /// How long the grant stays valid.
    pub ttl: std::time::Duration,
}

/// A grant token and the authority that verifies it.
#[derive(Clone)]
pub struct PresentedGrant {
    /// The token.
    pub token: String,
    /// The operator's authority (the per-user key and the shared ledger).
    pub authority: Arc<spear_runtime::GrantAuthority>,
}

impl std::fmt::Debug for PresentedGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresentedGrant")
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancel", &self.cancel.is_some())
            .field("progress", &self.progress.is_some())
            .field("confirmer", &self.confirmer.is_some())
            .field("grant", &self.grant.is_some())
            .field("issue_grant", &self.issue_grant)
            .finish()
    }
}

/// How often a running command reports progress.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// An output tee that counts bytes and reports progress at most every [`PROGRESS_INTERVAL`].
pub(crate) struct ProgressTee {
    sink: ProgressSink,
    stdout: AtomicU64,
    stderr: AtomicU64,
    last: Mutex<Duration>,
}

impl std::fmt::Debug for ProgressTee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressTee")
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .finish_non_exhaustive()
    }
}

impl ProgressTee {
    pub(crate) fn new(sink: ProgressSink) -> Self {
        ProgressTee {
            sink,
            stdout: AtomicU64::new(0),
            stderr: AtomicU64::new(0),
            last: Mutex::new(Duration::ZERO),
        }
    }
}

impl OutputTee for ProgressTee {
    fn stdout(&self, bytes: &[u8]) {
        self.stdout.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }

    fn stderr(&self, bytes: &[u8]) {
        self.stderr.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }

    fn tick(&self, elapsed: Duration) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if elapsed < *last + PROGRESS_INTERVAL {
                return;
            }
            *last = elapsed;
        }
        (self.sink)(Progress {
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            stdout_bytes: self.stdout.load(Ordering::Relaxed),
            stderr_bytes: self.stderr.load(Ordering::Relaxed),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_one_report_per_interval() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = Arc::clone(&seen);
        let tee = ProgressTee::new(Arc::new(move |p| sink_seen.lock().unwrap().push(p)));
        tee.stdout(b"abc");
        for ms in [100, 500, 999, 1000, 1200, 1999, 2000, 3500] {
            tee.tick(Duration::from_millis(ms));
        }
        tee.stderr(b"e");
        tee.tick(Duration::from_millis(4600));
        let seen = seen.lock().unwrap();
        let at: Vec<u64> = seen.iter().map(|p| p.elapsed_ms).collect();
        assert_eq!(at, [1000, 2000, 3500, 4600]);
        assert_eq!(seen[0].stdout_bytes, 3);
        assert_eq!(seen[3].stderr_bytes, 1);
    }
}
