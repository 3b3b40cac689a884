//! `CommandRunner`: from a profile and a workspace to a sandbox, and from its end to a `ToolResult`.
//! What a command runs is a [`spear_core::CommandLine`], whose `argv` is executed unchanged.
//!
//! - `config`: how a runner runs commands ([`RunnerConfig`]), and what the host offers
//!   ([`HostOffer`]) when a front end has looked already.
//! - `discover`: looking at the host once: its offer, the runner's view of it, and the view the
//!   decision layer is told ([`sandbox_view`]).
//! - `request`: what a call asks ([`CommandRequest`]) and what it gets back ([`RunReport`]).
//! - `command_runner`: the runner itself ([`CommandRunner`]), made over a workspace and a sandbox.
//! - `spec`: the sandbox spec of a request: mounts, masks, environment, `/etc`, staging.
//! - `run`: the preflights, and a request run to its report.
//! - `outcome`: what the sandbox saw, turned into a result.

mod command_runner;
mod config;
mod discover;
mod outcome;
mod request;
mod run;
mod spec;

pub use command_runner::CommandRunner;
pub use config::{HostOffer, RunnerConfig, ScratchMode};
pub use discover::sandbox_view;
pub use request::{CommandRequest, RunReport};
