//! The vocabulary every spear crate speaks, with no I/O.
//!
//! What this crate guarantees:
//! - [`CapabilityPolicy::for_mode`] is the only way to learn what an [`ExecutionMode`] grants, and
//!   a policy can only be narrowed after it is built ([`CapabilityPolicy::without_network`]).
//! - Capabilities that no mode grants (gpu, ssh, remote:write, container-runtime, secrets) are
//!   answered [`Grant::Never`] by every policy.
//! - Every refusal message is written once, in [`Refusal`], so that the CLI, the MCP server and the
//!   tests all see the same words.

mod assessment;
pub mod authority;
mod capability;
mod change;
mod class;
mod command_line;
pub mod credentials;
mod guarantee;
pub mod known_secrets;
mod mode;
mod profile;
pub mod redact;
mod refusal;
mod result;
pub mod secret;
mod view;
pub mod visible;

pub use assessment::{CommandAssessment, HostConfigWrite};
pub use capability::{Capability, CapabilityPolicy, CapabilitySet, Grant, UnknownCapability};
pub use change::ChangeKind;
pub use class::CommandClass;
pub use command_line::{CommandLine, SHELL};
pub use guarantee::{Guarantee, GuaranteeSet, Guarantees, LimitsBackend, UnknownGuarantee};
pub use mode::{ExecutionMode, UnknownMode};
pub use profile::ExecutionProfile;
pub use refusal::{Refusal, RefusalRule};
pub use result::{EscapedControls, MAX_LISTED_CHANGES, ToolResult, ToolStatus, exit_code};
pub use view::{SANDBOX_TMPDIR, SandboxView};
