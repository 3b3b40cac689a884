//! A command run ([`Sandbox::run`]): the guarantees its profile requires checked, the preflights
//! ensured, then run in the waiting sandbox when one fits it (the warm path, [`crate::warm`]), or
//! cold.

use super::error::SandboxError;
use super::execute::{RunOutcome, kill_cgroup};
use super::instance::Sandbox;
use crate::spawn::{Watch, supervise};
use crate::spec::BwrapSpec;

impl Sandbox {
    /// Runs `spec` under `watch`: the guarantees its profile requires checked against what this
    /// host can give (refused with [`SandboxError::GuaranteeUnavailable`] before anything, the
    /// preflight included, is spawned), mechanisms checked, preflight ensured, a fresh cgroup, the
    /// tree supervised and killed on timeout or cancellation, the cgroup removed; the outcome says
    /// which guarantees the run really had ([`RunOutcome::guarantees`]).
    pub fn run(&self, spec: &BwrapSpec, watch: &Watch) -> Result<RunOutcome, SandboxError> {
        // No argv is built here to check `spec`: a spec exists only once its builder has checked
        // that it builds, and the cold path builds it once, in `Launcher::prepare`.
        let confinement = self.confinement()?;
        self.check_required(spec)?;
        if let super::choice::Confinement::Landlock { abi } = confinement {
            return self.run_landlock(spec, watch, abi);
        }
        self.ensure(spec)?;
        if spec.profile.network() {
            self.ensure_network(spec)?;
        }
        if let Some(outcome) = self.run_warm(spec, watch) {
            return Ok(outcome);
        }
        self.run_unchecked(spec, watch)
    }

    /// Asks for a sandbox shaped like `spec` to be set up for the next command, when this sandbox
    /// keeps one warm ([`SandboxConfig::warm`](crate::SandboxConfig::warm)) and `spec` can wait
    /// warm (closed, read-only, a program the host has where the sandbox shows it; see the `warm`
    /// module). Returns at once: a thread of the sandbox's own starts it. The caller does first
    /// whatever it does before a cold spawn of `spec` (spear's runner clears links in the session's
    /// directories), since the mounts are made now.
    pub fn prewarm(&self, spec: &BwrapSpec) {
        if let Some(pool) = &self.warm
            && matches!(
                self.confinement(),
                Ok(super::choice::Confinement::Bubblewrap)
            )
        {
            pool.prewarm(spec);
        }
    }

    /// Whether [`Sandbox::prewarm`] would set a sandbox up for `spec`: a caller skips its own
    /// preparation for the spawn when not.
    pub fn would_prewarm(&self, spec: &BwrapSpec) -> bool {
        self.warm.as_ref().is_some_and(|pool| pool.would_warm(spec))
            && matches!(
                self.confinement(),
                Ok(super::choice::Confinement::Bubblewrap)
            )
    }

    /// Runs `spec` in the waiting sandbox, if there is one for it (`None`: run it cold). Its
    /// timeout counts from the moment its command is handed over.
    fn run_warm(&self, spec: &BwrapSpec, watch: &Watch) -> Option<RunOutcome> {
        let pool = self.warm.as_ref()?;
        let warm = pool.checkout(spec, watch.stdin.is_some())?;
        match warm.release(&spec.command) {
            Ok(released) => {
                tracing::debug!("sandbox released warm");
                let cgroup = released.cgroup;
                let kill = || kill_cgroup(cgroup.as_ref());
                let finished = supervise(released.running, watch, &kill);
                Some(self.collect(finished, None, cgroup, released.guarantees))
            }
            Err(warm) => {
                pool.dispose(warm);
                None
            }
        }
    }
}
