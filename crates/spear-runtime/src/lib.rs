//! spear's runtime: the boundary between decisions and the sandbox.
//!
//! What this crate guarantees:
//! - [`CommandRunner`] is the only way a command reaches a sandbox. It turns an
//!   [`spear_core::ExecutionProfile`] and a [`spear_workspace::Workspace`] into a
//!   [`spear_sandbox::BwrapSpec`], owns the resource contracts and the sandbox instance, and
//!   returns one honest [`spear_core::ToolResult`]. Nothing above it knows about memory limits,
//!   unit names or cgroup paths.
//! - Protected entries (`.git/hooks`, `.git/config`, `.envrc`, ...) under writable roots cannot be
//!   written, renamed or replaced by a command; one created during it is removed afterwards, and the
//!   result says so.

pub mod audit;
pub mod protect;
pub mod redact;
mod runner;

pub use audit::{
    AuditError, AuditEvent, AuditLogger, AuditRecord, default_path, executable_summary,
};
pub use runner::{CommandLine, CommandRequest, CommandRunner, DEFAULT_TIMEOUT, RunnerConfig};
