//! The baseline every speed figure is a ratio against: bare bubblewrap, with the namespaces and
//! the view a spear sandbox has at least (the host's root read-only, its own `/dev` and `/proc`,
//! every namespace unshared, dying with its parent, a new session, no capabilities), and nothing
//! of spear's (no staging, no policy, no cgroup, no seccomp).

/// bwrap's arguments for the bare baseline, before the command (`bwrap BARE_BWRAP... /bin/true`);
/// a bench adds its own binds (a workspace) after them.
pub const BARE_BWRAP: &[&str] = &[
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
];
