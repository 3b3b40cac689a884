//! A command run cold, in named phases: its inputs prepared, its cgroup made, bwrap spawned, its
//! network attached and the command released, the tree supervised, and what it did collected
//! into a [`RunOutcome`] with the guarantees the run really had.

use std::sync::atomic::Ordering;
use std::time::Duration;

use spear_core::Guarantees;

use super::error::SandboxError;
use super::instance::Sandbox;
use super::launcher::HeldNetwork;
use crate::cgroup::{BackendKind, CommandCgroup, LimitsHit};
use crate::guarantees::{self, NetworkPath, RunFacts};
use crate::network::{self, Slirp};
use crate::spawn::{Exit, Finished, Running, Watch, supervise, supervise_admitted};
use crate::spec::BwrapSpec;

/// What a finished command did, as the sandbox saw it.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The process tree's end.
    pub finished: Finished,
    /// Which cgroup limits it hit.
    pub limits_hit: LimitsHit,
    /// Which of those were the session's budget rather than its own limits
    /// ([`CommandCgroup::session_limits_hit`]).
    pub session_limits_hit: LimitsHit,
    /// The cgroup could not be removed (named in the text); the command itself ended.
    pub cleanup_error: Option<String>,
    /// bwrap itself failed before the command ran (its message).
    pub setup_error: Option<String>,
    /// slirp4netns could not be confirmed dead; the sandbox's network is poisoned since.
    pub network_error: Option<String>,
    /// What confined it, computed from the bwrap options handed to bwrap and from what happened
    /// (the tree confirmed dead, the network attached and stopped, the cgroup's backend).
    pub guarantees: Guarantees,
}

impl Sandbox {
    /// Runs `spec` without the preflight, in named phases: [`Sandbox::prepare`] the inputs,
    /// [`Sandbox::create_cgroup`], [`Sandbox::spawn`], supervise (a networked command gets its
    /// network attached and is released first, [`Sandbox::attach_network`]), and
    /// [`Sandbox::collect`] what it did.
    ///
    /// Every resource is held by a value that releases it when dropped, so an early return leaves
    /// nothing behind: the command cgroup is killed and removed by [`CommandCgroup`]'s `Drop`, the
    /// network path's pipes are closed with [`NetworkPipes`] and [`HeldNetwork`] (a held command
    /// that never got "go" runs nothing), and the options, staging plan and seccomp program are
    /// owned fds.
    pub(super) fn run_unchecked(
        &self,
        spec: &BwrapSpec,
        watch: &Watch,
    ) -> Result<RunOutcome, SandboxError> {
        if spec.profile.network() && self.network_poisoned.load(Ordering::SeqCst) {
            return Err(SandboxError::NetworkPoisoned);
        }
        // Held through the set-up, and into the run for at most its share (`setup_gate`).
        let place = crate::setup_gate::process_gate().enter();
        let inputs = self.launcher.prepare(spec)?;
        let argv_bits = inputs.guarantees;
        let cgroup = self.launcher.create_cgroup("spear")?;
        let (running, network) =
            self.launcher
                .spawn(inputs, cgroup.as_ref(), watch.stdin.as_deref(), &[])?;
        tracing::debug!("sandbox spawned");
        let kill = || kill_cgroup(cgroup.as_ref());
        let slirp = match network {
            None => None,
            Some(held) => match self.attach_network(held) {
                Ok(slirp) => Some(slirp),
                Err(e) => return Err(abort_held(running, watch, &kill, e)),
            },
        };
        let finished = supervise_admitted(running, watch, &kill, Some(place));
        Ok(self.collect(finished, slirp, cgroup, argv_bits))
    }

    /// Phase 4, networked commands first: the network attached to the held sandbox (pinned
    /// namespaces, slirp4netns, the egress policy), then the command released with "go". On
    /// failure `held` is dropped unreleased, so the hold runs nothing.
    fn attach_network(&self, held: HeldNetwork) -> Result<Slirp, network::NetworkError> {
        let slirp = network::attach(&self.launcher.config.network, &held.info, &held.ready)?;
        held.release();
        Ok(slirp)
    }

    /// Phase 5: what the command did. slirp4netns stopped (a teardown that cannot be confirmed
    /// poisons this sandbox's network for good), the limits read while the cgroup exists, the
    /// cgroup removed with its failure reported, bwrap's own setup failure picked out.
    pub(super) fn collect(
        &self,
        finished: Finished,
        slirp: Option<Slirp>,
        cgroup: Option<CommandCgroup>,
        argv_bits: Guarantees,
    ) -> RunOutcome {
        let network_attached = slirp.is_some();
        let network_error = slirp
            .map(|s| {
                let stopped = network::stop_slirp(&s);
                network::release_tap(s);
                stopped
            })
            .and_then(Result::err)
            .map(|e| {
                self.network_poisoned.store(true, Ordering::SeqCst);
                e.to_string()
            });
        tracing::debug!(exit = ?finished.exit, stop = ?finished.stop, "sandbox finished");
        let limits_hit = cgroup
            .as_ref()
            .map(CommandCgroup::limits_hit)
            .unwrap_or_default();
        let session_limits_hit = cgroup
            .as_ref()
            .map(CommandCgroup::session_limits_hit)
            .unwrap_or_default();
        let backend: Option<BackendKind> = cgroup.as_ref().map(CommandCgroup::kind);
        let cleanup_error = cgroup
            .and_then(|cg| cg.remove().err())
            .map(|e| e.to_string());
        tracing::debug!(error = ?cleanup_error, "command's cgroup removed");
        let setup_error = setup_failure(&finished);
        let guarantees = guarantees::after_run(
            argv_bits,
            RunFacts {
                tree_dead: finished.exit != Exit::Unknown && cleanup_error.is_none(),
                network: match (network_attached, &network_error) {
                    (false, _) => NetworkPath::NotAttached,
                    (true, None) => NetworkPath::Stopped,
                    (true, Some(_)) => NetworkPath::NotStopped,
                },
                // A spawned child set its rlimits before exec (a failure fails the spawn).
                rlimits: true,
                cgroup: backend,
            },
        );
        RunOutcome {
            finished,
            limits_hit,
            session_limits_hit,
            cleanup_error,
            setup_error,
            network_error,
            guarantees,
        }
    }
}

/// Kills every process in the command's cgroup; a failure is logged (the PID namespace still
/// dies with the pidfd kill of `supervise`).
pub(super) fn kill_cgroup(cgroup: Option<&CommandCgroup>) {
    if let Some(cg) = cgroup
        && let Err(e) = cg.kill_all()
    {
        tracing::error!("killing a sandbox's cgroup failed: {e}");
    }
}

/// A networked command whose network could not be attached: it is held, and never released. Its
/// tree is killed and reaped at once; the error is bwrap's own words when bwrap failed on its side
/// of the setup, else the network's.
fn abort_held(
    running: Running,
    watch: &Watch,
    kill: &dyn Fn(),
    e: network::NetworkError,
) -> SandboxError {
    kill();
    let _ = rustix::process::pidfd_send_signal(&running.pidfd, rustix::process::Signal::KILL);
    let reap = Watch {
        timeout: Duration::ZERO,
        ..watch.clone()
    };
    let reaped = supervise(running, &reap, kill);
    match setup_failure(&reaped) {
        Some(setup) => SandboxError::Preflight(setup),
        None => SandboxError::Network(e),
    }
}

/// bwrap reports its own setup failures as `bwrap: ...` on stderr and exit status 1, before the
/// command ran.
fn setup_failure(f: &Finished) -> Option<String> {
    let text = f.stderr.text.trim();
    (f.exit == Exit::Code(1) && f.stdout.total_bytes == 0 && text.starts_with("bwrap: "))
        .then(|| text.lines().next().unwrap_or(text).to_owned())
}
