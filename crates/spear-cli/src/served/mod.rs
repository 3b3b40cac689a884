//! `spear serve`: one long-lived process of the user's that runs `spear exec` calls for the
//! user's other processes, so that a call costs what a session's command costs (the sandbox
//! configuration, preflights and the next command's sandbox set up before it is asked for), not
//! what starting spear and a sandbox from nothing costs.
//!
//! Nothing about what may run changes: the server decides each call afresh, from the client's
//! own environment, current directory and arguments, through the same router, policy and
//! configuration files that `spear exec` would read in its own process; only the sandbox
//! instance (one per configuration, [`shelf::Shelf`]) is kept between calls, and every command
//! still gets its own bwrap, PID namespace and cgroup.
//!
//! What keeps it as strict as the one-shot path:
//! - The socket is in spear's state directory, which no sandbox shows (it is masked wherever a
//!   bind would show it), in a directory of mode 0700 checked to be the user's own. Attack
//!   stopped: a sandboxed command asking the server to run something outside its sandbox, or
//!   with another mode.
//! - Every peer's uid is checked (`SO_PEERCRED`) before anything is read: another user's
//!   process is refused even if the directory's mode were loosened.
//! - A call runs in the server only when the client and the server would decide and confine it
//!   alike ([`process_identity`]): the same binary, user, groups, umask, limits, namespaces and pinned
//!   variables, the same confinement of its own (capabilities, no-new-privs, seccomp, LSM
//!   label), and a cgroup of the server's within the client's ([`cgroups`]), so that a client
//!   under restrictions of its own never has them lifted. ASK and grants (which ask on the client's terminal) always run in the client.
//!   A declined call runs in the client's own process; nothing of it ran in the server.
//! - The client's death is the command's: when the connection closes, the call is cancelled
//!   and its process tree killed, as Ctrl-C on a one-shot `spear exec` kills its sandbox.
//! - The server never runs a call twice, and the client never runs one the server accepted:
//!   the server says it accepts before it runs anything, and after that the client only waits.

pub use spear_cli::served_cgroups as cgroups;
pub mod client;
pub mod process_identity;
pub mod server;
pub mod shelf;
pub use spear_cli::exec_wire as wire;

use std::path::{Path, PathBuf};

/// The directory of the server's socket, in spear's state directory.
pub fn socket_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("serve")
}

/// The server's socket.
pub fn socket_path(state_dir: &Path) -> PathBuf {
    socket_dir(state_dir).join("exec.sock")
}
