//! What the child does between clone and exec under the landlock backend, after it joined its
//! cgroup, took its rlimits and closed every fd but stdio: a new session, every capability
//! dropped, no-new-privs, the Landlock ruleset, then spear's seccomp program and the landlock
//! backend's own ([`extra_program`]). Everything here was prepared in the parent: these are raw
//! system calls on memory and fds made before the clone, no allocation, no lock.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `AF_UNIX`.
const AF_UNIX: u64 = 1;
/// `SOCK_STREAM` and `SOCK_SEQPACKET`: the socket pairs whose `sendmsg` ignores an address.
const PAIR_TYPES: [u64; 2] = [1, 5];

/// What the child applies to itself before exec.
#[derive(Debug)]
pub struct ChildConfinement {
    /// The Landlock ruleset ([`super::ruleset::create`]).
    pub(crate) ruleset: OwnedFd,
    /// spear's seccomp program ([`crate::seccomp`]), as `struct sock_filter`s.
    pub(crate) main: Vec<libc::sock_filter>,
    /// The landlock backend's own filter ([`extra_program`]).
    pub(crate) extra: Vec<libc::sock_filter>,
}

impl ChildConfinement {
    /// In the child, before exec: a new session (attack stopped: `TIOCSTI` into the
    /// caller's terminal), every capability dropped from every set, the bounding set included
    /// when the process may (attack stopped: root in the sandbox loading modules, rebooting,
    /// changing owners; Landlock confines paths, not capabilities), no-new-privs (a setuid
    /// program gains nothing), the ruleset, and the two seccomp programs. A failure fails the
    /// spawn: nothing runs half-confined.
    pub(crate) fn apply(&self) -> io::Result<()> {
        rustix::process::setsid()?;
        drop_capabilities()?;
        rustix::thread::set_no_new_privs(true)?;
        restrict_self(&self.ruleset)?;
        load(&self.main)?;
        load(&self.extra)?;
        Ok(())
    }
}

/// Drops every capability: the bounding set (when `CAP_SETPCAP` allows it, that is as root,
/// where an exec would otherwise hand the program every capability again), the ambient set, and
/// the effective, permitted and inheritable sets.
fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only.
        #[allow(unsafe_code)]
        let r = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if r != 0 {
            match io::Error::last_os_error().raw_os_error() {
                // EINVAL: past the kernel's last capability. EPERM: not allowed to (no
                // CAP_SETPCAP), an unprivileged process, whose exec gains nothing under
                // no-new-privs.
                Some(libc::EINVAL | libc::EPERM) => break,
                _ => return Err(io::Error::last_os_error()),
            }
        }
    }
    // Older kernels without ambient capabilities answer EINVAL: there is nothing to clear.
    match rustix::thread::clear_ambient_capability_set() {
        Ok(()) | Err(rustix::io::Errno::INVAL) => {}
        Err(e) => return Err(e.into()),
    }
    let none = rustix::thread::CapabilitySets {
        effective: rustix::thread::CapabilitySet::empty(),
        permitted: rustix::thread::CapabilitySet::empty(),
        inheritable: rustix::thread::CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none)?;
    Ok(())
}

/// `landlock_restrict_self(fd, 0)`.
fn restrict_self(ruleset: &OwnedFd) -> io::Result<()> {
    // SAFETY: a syscall on an fd this process owns, with no pointer argument.
    #[allow(unsafe_code)]
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Loads one seccomp program (no-new-privs is set).
fn load(program: &[libc::sock_filter]) -> io::Result<()> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `prog` points at `program`, alive for the call; the kernel copies it.
    #[allow(unsafe_code)]
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            std::ptr::from_ref(&prog),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Native-endian `struct sock_filter` bytes (what [`crate::seccomp::program_bytes`] gives bwrap)
/// as the structures.
pub(crate) fn from_bytes(bytes: &[u8]) -> Vec<libc::sock_filter> {
    bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

/// Syscalls that change a file's metadata, refused whatever their arguments: Landlock governs
/// no metadata, so without this a command could `chmod`, `chown`, set extended attributes on or
/// change the times of any file its uid owns, outside its private directories. `fchmodat2`
/// (452), `setxattrat` (463) and `removexattrat` (466) share their numbers on every
/// architecture.
fn metadata_syscalls() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        452,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        463,
        466,
        libc::SYS_utimensat,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    v
}

/// The landlock backend's own seccomp filter, stacked on spear's: every call below returns
/// `EPERM`.
///
/// - `socket`, for every family, `AF_UNIX` included. There is no network namespace: an
///   `AF_INET` socket would reach the host's loopback and its network (attack stopped: a
///   command talking to a database or a metadata service on the host). Landlock (ABI 4 to 8)
///   does not govern `connect` on a pathname unix socket, so an `AF_UNIX` socket would reach
///   every socket the uid may open: the user's D-Bus session (`systemd-run --user` runs a
///   program outside every sandbox), the Docker socket, an ssh-agent. ABI 9's
///   `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` would make that rule unnecessary; it stays for now.
/// - `socketpair` but `AF_UNIX` stream and seqpacket pairs: a datagram pair's `sendmsg` takes an
///   address, and would reach any datagram socket on the host by its path; a stream or seqpacket
///   pair ignores one. Pairs are what pipelines of processes use (Python's `multiprocessing`).
/// - the metadata calls ([`metadata_syscalls`]).
pub(crate) fn extra_program() -> Result<BpfProgram, seccompiler::BackendError> {
    let arch = match std::env::consts::ARCH {
        "aarch64" => TargetArch::aarch64,
        _ => TargetArch::x86_64,
    };
    let cond = |arg, op, value| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value);
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> = metadata_syscalls()
        .into_iter()
        .map(|nr| (nr, Vec::new()))
        .collect();
    rules.insert(libc::SYS_socket, Vec::new());
    let mut pair = vec![SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, AF_UNIX)?])?];
    for t in (0..16u64).filter(|t| !PAIR_TYPES.contains(t)) {
        pair.push(SeccompRule::new(vec![cond(
            1,
            SeccompCmpOp::MaskedEq(0xf),
            t,
        )?])?);
    }
    rules.insert(libc::SYS_socketpair, pair);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
        arch,
    )?;
    BpfProgram::try_from(filter)
}

/// seccompiler's instructions as the kernel's.
pub(crate) fn to_kernel(program: &BpfProgram) -> Vec<libc::sock_filter> {
    program
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}
