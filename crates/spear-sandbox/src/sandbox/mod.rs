//! The sandbox instance: checks mechanisms, runs the cached preflight, and runs commands.
//!
//! There is no code path from "a mechanism is unavailable" to "run it anyway": every check below
//! returns an error before the spawner is reached.
//!
//! - `instance`: the [`Sandbox`] itself, what it can give and which mechanisms it has.
//! - `preflight`: the preflights, run once per shape and remembered.
//! - `run`: a command run: its guarantees checked, its preflights ensured, warm or cold.
//! - `execute`: a command run cold, phase by phase, into its [`RunOutcome`].
//! - `launcher`: what starts a sandbox ([`Launcher`]), shared with the warm path
//!   ([`crate::warm`]).
//! - `choice`: which confinement runs the commands ([`Confinement`]), `auto` decided purely;
//!   `backend`: that decision made against the host, and what each backend gives here.
//! - `landlock_run`: a command run under the landlock backend (`landlock` module of this crate).
//! - `config` and `error`: [`SandboxConfig`] and [`SandboxError`].

mod backend;
mod choice;
mod config;
mod error;
mod execute;
mod instance;
mod landlock_run;
mod launcher;
mod preflight;
mod run;

pub use choice::{Confinement, bubblewrap_gives_everywhere};
pub use config::{BackendChoice, SandboxConfig};
pub use error::SandboxError;
pub use execute::RunOutcome;
pub use instance::Sandbox;
pub(crate) use launcher::Launcher;
