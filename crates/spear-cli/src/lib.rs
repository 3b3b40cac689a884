//! The pure parts of the `spear` binary that are read from another process, as a library so that
//! the binary and the fuzz targets (`fuzz/fuzz_targets/exec_wire.rs`) compile the same code:
//!
//! - [`exec_wire`]: the frames of `spear-exec/1`, what a `spear exec` client and a `spear serve`
//!   server send each other over the server's socket;
//! - [`served_cgroups`]: the relation a server judges a client's cgroup membership by.
//!
//! The `spear` command line is spear's interface; this library is not a stable API.

pub mod exec_wire;
pub mod served_cgroups;
