//! spear's runtime: the boundary between decisions and the sandbox.
//!
//! What this crate guarantees:
//! - [`CommandRunner`] is the only way a command reaches a sandbox. It turns an
//!   [`spear_core::ExecutionProfile`] and a [`spear_workspace::Workspace`] into a
//!   [`spear_sandbox::BwrapSpec`], owns the resource contracts and the sandbox instance, and
//!   returns one honest [`spear_core::ToolResult`]. Nothing above it knows about memory limits,
//!   unit names or cgroup paths.
//! - A writable command writes into layers of its own ([`staging`]); nothing it wrote reaches the
//!   workspace before the caller's judge has seen it, and what the judge refuses never does.
//! - A command's `/tmp`, `/var/tmp` and home are private: fresh for every command, or, for a
//!   runner in [`ScratchMode::Session`], one area of the session's own ([`scratch`]) that no
//!   other session sees, measured against its cap after every command and removed with the
//!   runner. Commits carry the host's git identity and nothing else of its git configuration
//!   ([`git_identity`]).

pub mod audit;
pub mod checkpoint;
mod evidence;
pub mod git_identity;
pub mod grant;
pub mod host;
pub mod host_dirs;
mod jobs;
mod owned_dir;
mod prepared;
pub mod refusals;
pub mod result_store;
mod runner;
pub mod scratch;
pub mod staging;

pub use evidence::{EVIDENCE_KEPT, Evidence, EvidenceLog, Verdict, verdict};
pub use host::HostSnapshot;
pub use jobs::{DEFAULT_JOB_BUFFER, DEFAULT_MAX_JOBS, Job, JobError, JobRead, Jobs, Taken};
pub use prepared::{GrantCheck, PrepareError, PrepareOptions, PreparedProcess};
pub use runner::{
    CommandLine, CommandRequest, CommandRunner, DEFAULT_TIMEOUT, HostOffer, RunReport,
    RunnerConfig, ScratchMode, sandbox_view,
};
