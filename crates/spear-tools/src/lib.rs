//! The tool layer: what a coding agent may call, and the one router every call passes through.

pub mod patch;
