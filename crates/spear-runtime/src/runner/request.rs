//! What a call asks the runner ([`CommandRequest`]) and what it gets back ([`RunReport`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spear_core::{CommandClass, ExecutionProfile, ToolResult};
use spear_sandbox::{CancelToken, OutputTee};

use crate::staging::Staging;
use spear_core::CommandLine;

/// One command to run.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The command.
    pub command: CommandLine,
    /// What the decision layer granted.
    pub profile: ExecutionProfile,
    /// Host path of the working directory, inside a root; the launch directory when `None`.
    pub workdir: Option<PathBuf>,
    /// Wall-clock limit; the runner's default when `None`.
    pub timeout: Option<Duration>,
    /// Cancellation from outside.
    pub cancel: Option<CancelToken>,
    /// The class the decision layer gave the command, copied into the result.
    pub class: Option<CommandClass>,
    /// Where output goes as it is read (a background job's reader).
    pub tee: Option<Arc<dyn OutputTee>>,
    /// Bytes per stream after which the command is killed as a flood; the runner's when `None`.
    pub flood_bytes: Option<u64>,
    /// The read end of a pipe the caller feeds, as the command's stdin; `/dev/null` when `None`
    /// (every tool call: a model has no stdin to give).
    pub stdin: Option<Arc<std::os::fd::OwnedFd>>,
}

impl CommandRequest {
    /// A request with no working directory, timeout, cancellation or class.
    pub fn new(command: CommandLine, profile: ExecutionProfile) -> Self {
        CommandRequest {
            command,
            profile,
            workdir: None,
            timeout: None,
            cancel: None,
            class: None,
            tee: None,
            flood_bytes: None,
            stdin: None,
        }
    }
}

/// What [`CommandRunner::run_report`](crate::CommandRunner::run_report) returns.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The result, as [`CommandRunner::run`](crate::CommandRunner::run) returns it.
    pub result: ToolResult,
    /// Why the sandbox is missing or broken, when that is why the command failed (mechanisms
    /// missing, the preflight or setup failed, containment could not be confirmed). Callers stop
    /// trusting writes after this.
    pub sandbox_down: Option<String>,
    /// What a writable command staged, for the caller to judge and commit
    /// ([`Staging::commit`]). Dropping the last handle without committing discards it: nothing
    /// of it reaches the workspace.
    pub staged: Option<Arc<Staging>>,
}
