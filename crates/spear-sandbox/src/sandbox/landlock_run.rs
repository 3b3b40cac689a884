//! A command run under the landlock backend (`landlock` module of this crate): refused before anything is
//! made when its profile asks what the backend cannot hold, then its cgroup, its ruleset and
//! private directories, the command spawned confining itself, the tree supervised and killed
//! through its cgroup, and the guarantees computed from what was applied.

use std::os::fd::AsFd;

use spear_core::{GuaranteeSet, Guarantees};

use super::error::SandboxError;
use super::execute::{RunOutcome, kill_cgroup};
use super::instance::Sandbox;
use crate::cgroup::{CommandCgroup, LimitsHit};
use crate::guarantees;
use crate::landlock::{self, LandlockError};
use crate::output::CappedOutput;
use crate::spawn::{Exit, Finished, Stop};
use crate::spawn::{Launch, Watch, supervise};
use crate::spec::BwrapSpec;

impl Sandbox {
    /// Runs `spec` under the landlock backend at Landlock `abi`. Refused before anything is made
    /// (no directory, no cgroup, no process): a profile the backend cannot hold, a host without
    /// Landlock, a cgroup backend whose cgroup the child cannot join itself. The private
    /// directories made for the command are removed after its tree is killed.
    pub(super) fn run_landlock(
        &self,
        spec: &BwrapSpec,
        watch: &Watch,
        abi: u32,
    ) -> Result<RunOutcome, SandboxError> {
        if abi == 0 {
            return Err(LandlockError::Unavailable.into());
        }
        if let Some(refused) = landlock::refusal(spec) {
            return Err(refused.into());
        }
        self.landlock_cgroup().map_err(LandlockError::NoCgroup)?;
        let cgroup = self
            .launcher
            .create_cgroup("spear")?
            .ok_or_else(|| LandlockError::NoCgroup("cgroup limits are off".to_owned()))?;
        if !cgroup.argv_prefix().is_empty() || cgroup.join_fds().is_empty() {
            return Err(LandlockError::NoCgroup(format!(
                "the `{}` backend's cgroup is not joined by the command itself",
                cgroup.kind()
            ))
            .into());
        }
        let prepared = landlock::prepare(spec, abi, &std::env::temp_dir())?;
        let bits = guarantees::from_landlock(
            spec,
            &prepared.applied,
            &prepared.private.all,
            &prepared.env,
        );
        tracing::debug!(
            abi = prepared.applied.abi,
            rules = prepared.applied.rules.len(),
            "landlock ruleset ready"
        );
        let seccomp = crate::seccomp::program_fd()?;
        let (program, args) = spec
            .command
            .split_first()
            .ok_or(crate::spec::SpecError::EmptyCommand)?;
        let launch = Launch {
            program: program.into(),
            args: args.to_vec(),
            seccomp: seccomp.as_fd(),
            inherit: Vec::new(),
            join: cgroup.join_fds(),
            rlimits: self.launcher.config.rlimits,
            stage: None,
            stdin: watch.stdin.as_deref().map(AsFd::as_fd),
            landlock: Some(std::sync::Arc::clone(&prepared.confinement)),
            env: prepared.env.clone(),
            cwd: Some(spec.cwd.clone()),
        };
        let spawned = self.launcher.spawner.spawn(&launch);
        drop(launch);
        let running = match spawned {
            Ok(running) => running,
            // The only step of the child that answers ENOENT is the exec: the program is not
            // there. Reported as bwrap reports it (`bwrap: execvp ...`), so that the result is
            // "not found" (127), as under bubblewrap.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let setup = format!(
                    "landlock: execvp {}: No such file or directory",
                    program.to_string_lossy()
                );
                return Ok(not_started(setup, bits, cgroup));
            }
            Err(e) => return Err(SandboxError::Spawn(e)),
        };
        let cgroup = Some(cgroup);
        let kill = || kill_cgroup(cgroup.as_ref());
        let finished = supervise(running, watch, &kill);
        // No GPU under Landlock: a grant is refused before anything runs.
        let given = Guarantees {
            enforced: bits,
            limits: None,
            gpu: false,
        };
        let outcome = self.collect(finished, None, cgroup, given);
        drop(prepared);
        Ok(outcome)
    }
}

/// The outcome of a command whose program could not be executed: nothing ran (its cgroup, empty,
/// is removed), and `setup` says why.
fn not_started(setup: String, bits: GuaranteeSet, cgroup: CommandCgroup) -> RunOutcome {
    let cleanup_error = cgroup.remove().err().map(|e| e.to_string());
    RunOutcome {
        finished: Finished {
            exit: Exit::Code(127),
            stop: Stop::None,
            stdout: CappedOutput::new(2).finish(),
            stderr: CappedOutput::new(2).finish(),
            duration: std::time::Duration::ZERO,
        },
        limits_hit: LimitsHit::default(),
        session_limits_hit: LimitsHit::default(),
        cleanup_error,
        setup_error: Some(setup),
        network_error: None,
        guarantees: Guarantees {
            enforced: bits,
            limits: None,
            gpu: false,
        },
    }
}
