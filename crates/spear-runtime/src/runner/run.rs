//! Running: the sandbox's preflights for a runner, and a request run to its report (staged,
//! specified, run cold or warm, its session's places readied, its outcome interpreted).

use std::sync::Arc;
use std::time::Instant;

use spear_core::{Capability, CapabilitySet, ExecutionProfile, ToolResult, ToolStatus};
use spear_sandbox::{BwrapSpec, Exit, SandboxError, SpecError, Watch};

use super::command_runner::CommandRunner;
use super::outcome::unmet_after_run;
use super::request::{CommandRequest, RunReport};
use crate::scratch::SessionScratch;
use crate::staging::Staging;
use spear_core::CommandLine;

impl CommandRunner {
    /// Runs the sandbox preflight for `profile` once (cached on the sandbox, terminal failures
    /// too).
    pub fn ensure_sandbox(&self, profile: &ExecutionProfile) -> Result<(), SandboxError> {
        let request =
            CommandRequest::new(CommandLine::Argv(vec!["/bin/true".into()]), profile.clone());
        let staging = self.stage(profile).map_err(SandboxError::Spec)?;
        // A missing mechanism is reported before anything about this spec, as the sandbox does.
        self.sandbox.check_mechanisms()?;
        let spec = self
            .spec(&request, staging.as_ref())
            .map_err(SandboxError::Spec)?;
        self.sandbox.ensure(&spec)
    }

    /// Runs the network preflight for this workspace once (cached on the sandbox): a real
    /// networked `/bin/true` with its network attached, its egress policy loaded and its teardown
    /// confirmed.
    pub fn ensure_network(&self) -> Result<(), SandboxError> {
        let profile = ExecutionProfile::from_granted(
            CapabilitySet::of(&[Capability::FilesystemRead, Capability::Network]),
            Vec::new(),
        );
        let request = CommandRequest::new(CommandLine::Argv(vec!["/bin/true".into()]), profile);
        self.sandbox.check_mechanisms()?;
        let spec = self.spec(&request, None).map_err(SandboxError::Spec)?;
        self.sandbox.ensure(&spec)?;
        self.sandbox.ensure_network(&spec)
    }

    /// Runs `request` to one result. Every failure to confine is a failed result with nothing
    /// spawned; every end of a command that ran is reported as it happened.
    pub fn run(&self, request: &CommandRequest) -> ToolResult {
        self.run_report(request).result
    }

    /// Runs `request` as [`CommandRunner::run`] does, and also says whether it failed because the
    /// sandbox itself is missing or broken (as opposed to the command failing, or a refusal).
    pub fn run_report(&self, request: &CommandRequest) -> RunReport {
        let started = Instant::now();
        let mut report = self.run_inner(request);
        report.result.class = request.class;
        report.result.duration_ms =
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        report
    }

    fn run_inner(&self, request: &CommandRequest) -> RunReport {
        let refused = |e: SpecError| RunReport {
            result: ToolResult::failed(e.to_string()),
            sandbox_down: None,
            staged: None,
        };
        let staging = match self.stage(&request.profile) {
            Ok(s) => s,
            Err(e) => return refused(e),
        };
        let builder = match self.spec_builder(request, staging.as_ref()) {
            Ok(b) => b,
            Err(e) => return refused(e),
        };
        self.execute(request, staging, builder.build())
    }

    /// Fresh layers for `profile` and the spec of `request` over them: what [`Self::prepare`]
    /// compiles before anything is spawned.
    pub(crate) fn compile(
        &self,
        request: &CommandRequest,
    ) -> Result<(Option<Staging>, BwrapSpec), SpecError> {
        let staging = self.stage(&request.profile)?;
        let spec = self.spec_builder(request, staging.as_ref())?.build()?;
        Ok((staging, spec))
    }

    /// Runs `request` in the sandbox of `spec` (a spec the sandbox refused is its refusal, as if
    /// it had been handed the spec), its writes staged in `staging`.
    pub(crate) fn execute(
        &self,
        request: &CommandRequest,
        mut staging: Option<Staging>,
        spec: Result<BwrapSpec, SpecError>,
    ) -> RunReport {
        let timeout = request.timeout.unwrap_or(self.config.default_timeout);
        let watch = Watch {
            timeout,
            output_cap: self.config.output_cap,
            flood_bytes: request.flood_bytes.unwrap_or(self.config.flood_bytes),
            cancel: request.cancel.clone(),
            tee: request.tee.clone(),
            stdin: request.stdin.clone(),
        };
        let outcome = spec.map_err(SandboxError::Spec).and_then(|spec| {
            tracing::debug!("sandbox spec built");
            self.prepare_scratch(&spec);
            let outcome = self.sandbox.run(&spec, &watch);
            if outcome.is_ok() && self.sandbox.would_prewarm(&spec) {
                // The next command's sandbox, if it can wait warm, is set up now: over session
                // directories cleared of links as for a cold spawn.
                self.prepare_scratch(&spec);
                self.sandbox.prewarm(&spec);
            }
            outcome
        });
        let mut sandbox_down = None;
        let result = match outcome {
            Ok(outcome) => {
                let mut result = self.interpret(&outcome, timeout);
                let broken = outcome
                    .setup_error
                    .as_ref()
                    .is_some_and(|_| result.status != ToolStatus::NotFound)
                    || outcome.finished.exit == Exit::Unknown;
                // Attack: a process that survived the kill could still write into the layer
                // while it is judged and committed. When the end of the tree cannot be
                // confirmed, nothing the command wrote is kept.
                if outcome.finished.exit == Exit::Unknown && staging.take().is_some() {
                    result.append_reason("nothing it wrote was kept, since the end of its processes could not be confirmed",
                    );
                }
                if broken {
                    sandbox_down.clone_from(&result.reason);
                }
                result
            }
            Err(e) => {
                // A spec refusal (an unimplemented capability) or a broken network path is not the
                // sandbox being down: closed commands still run confined.
                if e.means_sandbox_down() {
                    sandbox_down = Some(e.to_string());
                }
                ToolResult::failed(e.to_string())
            }
        };
        let mut result = result;
        unmet_after_run(&mut result, &request.profile);
        if let Some(over) = self.scratch.as_ref().and_then(SessionScratch::enforce_cap) {
            result.append_reason(&over);
        }
        RunReport {
            result,
            sandbox_down,
            staged: staging.map(Arc::new),
        }
    }

    /// Readies the session's own directories for `spec`, when it binds them: made if missing, and
    /// rid of links to what the sandbox binds on top.
    fn prepare_scratch(&self, spec: &BwrapSpec) {
        if let (Some(scratch), Some(_)) = (&self.scratch, spec.scratch()) {
            scratch.ensure_dirs();
            for dest in spec
                .toolchains()
                .iter()
                .chain(spec.profile().host_read_paths())
                .chain(spec.roots().iter().map(|r| &r.mount))
            {
                scratch.clear_links_to(dest, spec.home());
            }
        }
    }
}
