//! The seccomp filter every sandboxed command runs under.
//!
//! bubblewrap loads the program (`bwrap --seccomp FD`, fed by [`program_fd`]) in the sandbox right
//! before it execs the command, after it has set `no_new_privs`. It loads the same program into the
//! sandbox's pid 1 (bwrap's reaper), so no process inside the sandbox runs unfiltered. A filter is
//! inherited by every child and can never be removed, only stacked.
//!
//! # Shape
//!
//! A denylist: what is not named here is allowed. The confinement itself is bubblewrap's
//! (namespaces, the mount view, dropped capabilities); the filter closes the ways out of that
//! confinement which namespaces do not cover, and removes kernel interfaces that serve mainly as
//! exploitation primitives. An allowlist would have to predict every compiler, interpreter and test
//! runner an agent may start; the denylist is short enough to audit line by line.
//!
//! The program is checked in this order (see [`DENIED`] for the list by name):
//!
//! 1. **The native ABI gate** (a few hand-written instructions, `abi_gate`):
//!    - A syscall made through another architecture's ABI (`int 0x80` or a 32-bit code segment on
//!      x86-64, `AArch32` on aarch64) **kills the process**. Syscall numbers differ per ABI (i386's
//!      `keyctl` is 288, which is `accept4` on x86-64), so a filter written for one ABI says
//!      nothing about another: without this check every rule below could be bypassed by
//!      switching ABI. seccompiler's own program starts with the same check (its
//!      `build_arch_validation_sequence` returns `SECCOMP_RET_KILL_PROCESS` when
//!      `seccomp_data.arch` is not the target's `AUDIT_ARCH_*`); the gate repeats it because it
//!      must run before the gate reads syscall numbers.
//!    - On x86-64, a syscall number with the x32 bit (`0x4000_0000`) set **kills the process**.
//!      x32 syscalls report `AUDIT_ARCH_X86_64`, so the architecture check lets them through, and
//!      their numbers (`keyctl` is `0x4000_00fa`, the x32 `ioctl` is `0x4000_0202`) match no rule.
//!      seccompiler matches syscall numbers only by equality, so the whole range is refused here
//!      with one comparison rather than by listing each denied syscall again with the bit set
//!      (which would also miss the x32-only numbers 512..=547). Nothing in a sandbox legitimately
//!      uses x32, and killing is what libseccomp does for an ABI the filter was not built for. The
//!      number `-1` (`0xffff_ffff`) is exempt, as in libseccomp: it is how a tracer skips a
//!      syscall, and the kernel answers it with `ENOSYS`.
//!    - `clone3` returns **`ENOSYS`**: its flags live in memory that seccomp cannot read, so it
//!      cannot be filtered for namespace flags the way `clone` is. `ENOSYS` (not `EPERM`) is what
//!      makes glibc 2.34+ (which tries `clone3` first, for threads among others) fall back to
//!      `clone`, which is filtered; on `EPERM` it gives up and `pthread_create` fails. Container
//!      runtimes learned this when their profiles refused `clone3` with `EPERM` and glibc 2.34
//!      stopped creating threads; Docker's default profile now returns `ENOSYS` for it.
//! 2. **The table** (compiled by seccompiler): the calls below return **`EPERM`**. A refused call
//!    is an error the program can report, not a crash; tools that probe for `io_uring`, keyrings or
//!    perf fall back or fail with a readable message.
//! 3. Everything else is allowed.
//!
//! # What is refused, and the attack each rule stops
//!
//! - **Terminal injection**: `ioctl(TIOCSTI)` pushes bytes into a terminal's input queue, so a
//!   sandboxed command sharing the user's terminal could type commands into the shell that
//!   started it, outside the sandbox (CVE-2017-5226 against bubblewrap itself; `--new-session`
//!   is the other half of that fix). `ioctl(TIOCLINUX)` can do the same on a Linux virtual console
//!   (paste the selection buffer). The kernel reads the request as 32 bits, so only the low 32
//!   bits are compared: `0x1_0000_5412` is `TIOCSTI` too.
//! - **`io_uring`** (`io_uring_setup`, `io_uring_enter`, `io_uring_register`): the operations of a
//!   ring (open, read, connect, …) run in the kernel without passing through seccomp, so a ring
//!   makes any future rule moot; `io_uring` is also one of the kernel's most exploited interfaces.
//! - **Kernel keyrings** (`keyctl`, `add_key`, `request_key`): keyrings are not confined by
//!   mount or PID namespaces. The session keyring a command inherits is its caller's, on the host
//!   (bubblewrap does not replace it), with whatever the user keeps there (Kerberos tickets,
//!   fscrypt and ecryptfs keys, tokens), readable by whoever possesses it.
//! - **Exploitation primitives** (`bpf`, `perf_event_open`, `userfaultfd`): kernel attack surface
//!   with a long record of privilege escalations; `userfaultfd` pauses the kernel mid-copy and is
//!   the classic way to win a kernel race. No build or test needs them in a sandbox.
//! - **Kernel code** (`kexec_load`, `kexec_file_load`, `init_module`, `finit_module`,
//!   `delete_module`): loading or replacing kernel code. They already need capabilities the
//!   sandbox lacks; refusing them is defence in depth against a capability leak.
//! - **The filesystem view** (`mount`, `umount2`, `pivot_root` and the new mount API: `open_tree`,
//!   `open_tree_attr`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`):
//!   the sandbox's mounts are what keep it inside its workspace; with these refused the view
//!   bubblewrap built cannot be rearranged, unmounted to uncover what lies beneath, or
//!   remounted writable, even by a process that somehow holds `CAP_SYS_ADMIN` in the sandbox.
//! - **Namespaces** (`unshare`, `setns`, and `clone` with any `CLONE_NEW*` flag): a new user
//!   namespace hands its creator every capability inside it, which re-opens all the kernel
//!   interfaces guarded by `ns_capable` (mounts, netfilter, …) and is the first step of most
//!   container escapes; `setns` would join a namespace through an inherited fd. `CLONE_NEWTIME`
//!   cannot be requested through `clone` (its bit is part of the exit-signal byte), only through
//!   `clone3` and `unshare`, both refused. The kernel reads `clone`'s flags as 32 bits, so only
//!   the low 32 bits are compared.
//!
//! # What stays allowed on purpose
//!
//! `ptrace` is allowed, so debuggers, `strace` and sanitizers work inside the sandbox. It is safe
//! because:
//! - the PID namespace hides every process outside the sandbox: there is no pid to attach to;
//! - every process inside runs under this same filter, the sandbox's pid 1 included, so a tracer
//!   cannot borrow an unfiltered process to make syscalls for it;
//! - since Linux 4.8 the kernel runs seccomp after the tracer's syscall-entry stop, so a tracer
//!   rewriting its tracee's syscall number or arguments is filtered again. Older kernels ran it
//!   before and allowed exactly that escape; [`kernel_supports_seccomp`] requires the
//!   `kill_process` action (Linux 4.14), which rules them out.
//!
//! # Architectures
//!
//! x86-64 and aarch64. Syscall numbers come from the tables in this module (checked against the
//! system's kernel headers by the tests), not from the running kernel: a number the kernel does not
//! know is refused or passed on to the kernel's own `ENOSYS`, both safe.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::io::Errno;
use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch, sock_filter,
};

/// The syscalls the filter refuses, by name, for `spear doctor` and the docs.
///
/// A syscall refused only for some arguments carries them in parentheses. `clone3` returns `ENOSYS`
/// (so that libc falls back to `clone`); all others return `EPERM`. Besides these, a syscall made
/// through a foreign ABI (i386 on x86-64, `AArch32` on aarch64, and x32) kills the process.
pub const DENIED: &[&str] = &[
    "ioctl(TIOCSTI)",
    "ioctl(TIOCLINUX)",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "clone(CLONE_NEW*)",
    "clone3",
];

/// Errors building or exporting the filter.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    /// The host's architecture has no syscall table here.
    #[error(
        "seccomp: no filter for the {arch} architecture; spear's sandbox runs on x86_64 and aarch64"
    )]
    UnsupportedArch {
        /// The architecture, as `std::env::consts::ARCH` names it.
        arch: String,
    },
    /// A rule names a syscall missing from this module's table for the architecture (a bug here).
    #[error("seccomp: the {arch} syscall table has no entry for `{syscall}` (a bug in spear)")]
    UnknownSyscall {
        /// The architecture.
        arch: &'static str,
        /// The syscall a rule names.
        syscall: &'static str,
    },
    /// seccompiler refused the rules (a bug here).
    #[error("seccomp: the filter does not compile (a bug in spear): {0}")]
    Compile(#[from] BackendError),
    /// The program is longer than the kernel accepts (a bug here).
    #[error("seccomp: the filter has {len} instructions, more than the kernel's limit of {max}")]
    TooLong {
        /// Instructions in the program.
        len: usize,
        /// The kernel's limit (`BPF_MAXINSNS`).
        max: usize,
    },
    /// The memfd that carries the program to bubblewrap could not be prepared.
    #[error("seccomp: cannot {step} the memfd that carries the filter to bwrap: {source}")]
    Memfd {
        /// What failed: create, write, rewind, seal.
        step: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A kernel interface that says whether seccomp works could not be read.
    #[error("seccomp: cannot read {path} to check for seccomp support: {source}")]
    Probe {
        /// The file.
        path: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel cannot run this filter.
    #[error(
        "seccomp: the kernel cannot run spear's filter: {reason}; spear needs Linux 4.14 or newer \
         built with CONFIG_SECCOMP_FILTER, and runs no command without it"
    )]
    KernelUnsupported {
        /// What is missing.
        reason: String,
    },
}

/// The compiled BPF program for this host's architecture, as the raw bytes bwrap expects
/// (an array of `struct sock_filter`, native endian). Compiled once per process: the program is a
/// function of the architecture alone, and every command of a session needs it.
pub fn program_bytes() -> Result<Vec<u8>, SeccompError> {
    static COMPILED: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    if let Some(bytes) = COMPILED.get() {
        return Ok(bytes.clone());
    }
    let bytes = compile_bytes()?;
    Ok(COMPILED.get_or_init(|| bytes).clone())
}

/// [`program_bytes`], compiled now.
fn compile_bytes() -> Result<Vec<u8>, SeccompError> {
    let program = program_for(std::env::consts::ARCH)?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in &program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// A sealed memfd positioned at offset 0 holding `program_bytes`, ready to be passed to bwrap as
/// `--seccomp N` (the spawner dup2's it to N in the child).
///
/// The fd is created close-on-exec, so it leaks into no other child; the spawner's `dup2` clears
/// the flag on the copy it makes. It is sealed against writing, growing and shrinking. bwrap reads
/// it to the end, which moves the offset that every copy of the fd shares: use one fd per spawn.
pub fn program_fd() -> Result<OwnedFd, SeccompError> {
    let bytes = program_bytes()?;
    let memfd_error = |step| move |source| SeccompError::Memfd { step, source };
    let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
    // MFD_NOEXEC_SEAL (Linux 6.3) keeps the kernel from warning, and is required where
    // vm.memfd_noexec=2; older kernels reject the flag with EINVAL.
    let fd = match rustix::fs::memfd_create("spear-seccomp", flags | MemfdFlags::NOEXEC_SEAL) {
        Err(Errno::INVAL) => rustix::fs::memfd_create("spear-seccomp", flags),
        other => other,
    }
    .map_err(|errno| memfd_error("create")(errno.into()))?;
    let mut file = File::from(fd);
    file.write_all(&bytes).map_err(memfd_error("write"))?;
    file.seek(SeekFrom::Start(0))
        .map_err(memfd_error("rewind"))?;
    let fd = OwnedFd::from(file);
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )
    .map_err(|errno| memfd_error("seal")(errno.into()))?;
    Ok(fd)
}

/// Whether the running kernel supports seccomp filters (for preflight and `spear doctor`).
///
/// Two checks: `/proc/self/status` has a `Seccomp:` line (the kernel has `CONFIG_SECCOMP`), and
/// `/proc/sys/kernel/seccomp/actions_avail` (`CONFIG_SECCOMP_FILTER`, Linux 4.14) lists the two
/// actions this filter returns, `errno` and `kill_process`. Linux 4.14 is also past 4.8, before
/// which a tracer could rewrite a syscall after seccomp had checked it (see the module doc on
/// `ptrace`).
///
/// A kernel found to support it is not probed again by this process (a running kernel does not
/// lose a configuration option); one found lacking it is, at every call.
pub fn kernel_supports_seccomp() -> Result<(), SeccompError> {
    static SUPPORTED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if SUPPORTED.get().is_some() {
        return Ok(());
    }
    probe_seccomp_support()?;
    let _ = SUPPORTED.set(());
    Ok(())
}

/// [`kernel_supports_seccomp`]'s two checks, made now.
fn probe_seccomp_support() -> Result<(), SeccompError> {
    const STATUS: &str = "/proc/self/status";
    const ACTIONS: &str = "/proc/sys/kernel/seccomp/actions_avail";
    let status = std::fs::read_to_string(STATUS).map_err(|source| SeccompError::Probe {
        path: STATUS,
        source,
    })?;
    if !status.lines().any(|line| line.starts_with("Seccomp:")) {
        return Err(SeccompError::KernelUnsupported {
            reason: format!("{STATUS} has no `Seccomp:` line (built without CONFIG_SECCOMP)"),
        });
    }
    let actions = match std::fs::read_to_string(ACTIONS) {
        Ok(actions) => actions,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(SeccompError::KernelUnsupported {
                reason: format!("{ACTIONS} does not exist (Linux older than 4.14)"),
            });
        }
        Err(source) => {
            return Err(SeccompError::Probe {
                path: ACTIONS,
                source,
            });
        }
    };
    for needed in ["errno", "kill_process"] {
        if !actions.split_whitespace().any(|action| action == needed) {
            return Err(SeccompError::KernelUnsupported {
                reason: format!("{ACTIONS} does not list the `{needed}` action"),
            });
        }
    }
    Ok(())
}

/// `TIOCSTI`: push a byte into a terminal's input queue.
const TIOCSTI: u32 = 0x5412;
/// `TIOCLINUX`: virtual-console multiplexer; subcode 2/3 selects and pastes text as input.
const TIOCLINUX: u32 = 0x541C;

/// The `CLONE_NEW*` flags `clone` accepts (`CLONE_NEWTIME` is only reachable through `clone3`).
const CLONE_NEW: [(&str, u32); 7] = [
    ("CLONE_NEWNS", 0x0002_0000),
    ("CLONE_NEWCGROUP", 0x0200_0000),
    ("CLONE_NEWUTS", 0x0400_0000),
    ("CLONE_NEWIPC", 0x0800_0000),
    ("CLONE_NEWUSER", 0x1000_0000),
    ("CLONE_NEWPID", 0x2000_0000),
    ("CLONE_NEWNET", 0x4000_0000),
];

/// The x32 ABI's marker bit in x86-64 syscall numbers (`__X32_SYSCALL_BIT`).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `BPF_MAXINSNS`: the longest program the kernel loads.
const BPF_MAXINSNS: usize = 4096;

/// `AUDIT_ARCH_X86_64` (`EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`).
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
/// `AUDIT_ARCH_AARCH64` (`EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`).
const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;

/// Offsets into `struct seccomp_data { int nr; __u32 arch; __u64 ip; __u64 args[6]; }`.
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;

/// cBPF opcodes the gate uses (`linux/bpf_common.h`).
const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// When a syscall in the table is refused.
#[derive(Clone, Copy, Debug)]
enum When {
    /// Every call.
    Always,
    /// `ioctl` whose request, read as 32 bits like the kernel reads it, is one of these.
    IoctlRequest(&'static [u32]),
    /// `clone` whose flags (argument 0 on x86-64 and aarch64; 32 bits, as the kernel reads them)
    /// include any `CLONE_NEW*` bit.
    CloneNamespaces,
}

/// The table seccompiler compiles: each syscall appears once. `clone3` is not here: it needs its
/// own errno, which the gate returns.
const TABLE: &[(&str, When)] = &[
    ("ioctl", When::IoctlRequest(&[TIOCSTI, TIOCLINUX])),
    ("io_uring_setup", When::Always),
    ("io_uring_enter", When::Always),
    ("io_uring_register", When::Always),
    ("keyctl", When::Always),
    ("add_key", When::Always),
    ("request_key", When::Always),
    ("bpf", When::Always),
    ("perf_event_open", When::Always),
    ("userfaultfd", When::Always),
    ("kexec_load", When::Always),
    ("kexec_file_load", When::Always),
    ("init_module", When::Always),
    ("finit_module", When::Always),
    ("delete_module", When::Always),
    ("mount", When::Always),
    ("umount2", When::Always),
    ("pivot_root", When::Always),
    ("move_mount", When::Always),
    ("open_tree", When::Always),
    ("open_tree_attr", When::Always),
    ("fsopen", When::Always),
    ("fsconfig", When::Always),
    ("fsmount", When::Always),
    ("fspick", When::Always),
    ("mount_setattr", When::Always),
    ("unshare", When::Always),
    ("setns", When::Always),
    ("clone", When::CloneNamespaces),
];

/// x86-64 syscall numbers (`arch/x86/entry/syscalls/syscall_64.tbl`), for the syscalls the filter
/// names. Numbers from 424 on are shared by every architecture.
const X86_64: &[(&str, u32)] = &[
    ("ioctl", 16),
    ("clone", 56),
    ("pivot_root", 155),
    ("mount", 165),
    ("umount2", 166),
    ("init_module", 175),
    ("delete_module", 176),
    ("kexec_load", 246),
    ("add_key", 248),
    ("request_key", 249),
    ("keyctl", 250),
    ("unshare", 272),
    ("perf_event_open", 298),
    ("setns", 308),
    ("finit_module", 313),
    ("kexec_file_load", 320),
    ("bpf", 321),
    ("userfaultfd", 323),
    ("io_uring_setup", 425),
    ("io_uring_enter", 426),
    ("io_uring_register", 427),
    ("open_tree", 428),
    ("move_mount", 429),
    ("fsopen", 430),
    ("fsconfig", 431),
    ("fsmount", 432),
    ("fspick", 433),
    ("clone3", 435),
    ("mount_setattr", 442),
    ("open_tree_attr", 467),
];

/// aarch64 syscall numbers (`include/uapi/asm-generic/unistd.h`), for the syscalls the filter
/// names.
const AARCH64: &[(&str, u32)] = &[
    ("ioctl", 29),
    ("umount2", 39),
    ("mount", 40),
    ("pivot_root", 41),
    ("unshare", 97),
    ("kexec_load", 104),
    ("init_module", 105),
    ("delete_module", 106),
    ("add_key", 217),
    ("request_key", 218),
    ("keyctl", 219),
    ("clone", 220),
    ("perf_event_open", 241),
    ("setns", 268),
    ("finit_module", 273),
    ("bpf", 280),
    ("userfaultfd", 282),
    ("kexec_file_load", 294),
    ("io_uring_setup", 425),
    ("io_uring_enter", 426),
    ("io_uring_register", 427),
    ("open_tree", 428),
    ("move_mount", 429),
    ("fsopen", 430),
    ("fsconfig", 431),
    ("fsmount", 432),
    ("fspick", 433),
    ("clone3", 435),
    ("mount_setattr", 442),
    ("open_tree_attr", 467),
];

/// One supported architecture: seccompiler's name for it, its audit value and its syscall table.
struct Arch {
    name: &'static str,
    target: TargetArch,
    audit: u32,
    syscalls: &'static [(&'static str, u32)],
    /// Whether syscall numbers carry an ABI bit (x32) that the gate must refuse.
    x32: bool,
}

impl Arch {
    fn from_name(arch: &str) -> Result<Self, SeccompError> {
        match arch {
            "x86_64" => Ok(Self {
                name: "x86_64",
                target: TargetArch::x86_64,
                audit: AUDIT_ARCH_X86_64,
                syscalls: X86_64,
                x32: true,
            }),
            "aarch64" => Ok(Self {
                name: "aarch64",
                target: TargetArch::aarch64,
                audit: AUDIT_ARCH_AARCH64,
                syscalls: AARCH64,
                x32: false,
            }),
            other => Err(SeccompError::UnsupportedArch {
                arch: other.to_owned(),
            }),
        }
    }

    fn nr(&self, syscall: &'static str) -> Result<u32, SeccompError> {
        self.syscalls
            .iter()
            .find(|(name, _)| *name == syscall)
            .map(|&(_, nr)| nr)
            .ok_or(SeccompError::UnknownSyscall {
                arch: self.name,
                syscall,
            })
    }
}

/// The whole program for `arch` (as `std::env::consts::ARCH` names it): the gate, then the table.
fn program_for(arch: &str) -> Result<BpfProgram, SeccompError> {
    let arch = Arch::from_name(arch)?;
    let mut program = abi_gate(&arch)?;
    program.extend(table_program(&arch)?);
    if program.len() > BPF_MAXINSNS {
        return Err(SeccompError::TooLong {
            len: program.len(),
            max: BPF_MAXINSNS,
        });
    }
    Ok(program)
}

/// The native ABI gate, the program's first instructions: a foreign architecture or (on x86-64)
/// the x32 ABI kills the process; `clone3` returns `ENOSYS`; anything else falls through to the
/// table. Hand-written because seccompiler has one match action per filter and compares syscall
/// numbers only for equality, so it can express neither a second errno nor a number range.
fn abi_gate(arch: &Arch) -> Result<BpfProgram, SeccompError> {
    let kill = u32::from(SeccompAction::KillProcess);
    let enosys = u32::from(SeccompAction::Errno(errno_value(Errno::NOSYS)));
    let mut gate = vec![
        stmt(LD_W_ABS, DATA_ARCH),
        jump(JEQ_K, arch.audit, 1, 0),
        stmt(RET_K, kill),
        stmt(LD_W_ABS, DATA_NR),
    ];
    if arch.x32 {
        gate.extend([
            // nr >= 0x4000_0000: an x32 syscall, unless it is -1 (a tracer skipping a syscall).
            jump(JGE_K, X32_SYSCALL_BIT, 0, 2),
            jump(JEQ_K, u32::MAX, 1, 0),
            stmt(RET_K, kill),
        ]);
    }
    gate.extend([jump(JEQ_K, arch.nr("clone3")?, 0, 1), stmt(RET_K, enosys)]);
    Ok(gate)
}

/// The table compiled by seccompiler: a match returns `EPERM`, anything else is allowed.
fn table_program(arch: &Arch) -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &(syscall, when) in TABLE {
        let conditions: Vec<SeccompRule> = match when {
            // No rule: seccompiler matches on the number alone.
            When::Always => Vec::new(),
            When::IoctlRequest(requests) => requests
                .iter()
                .map(|&request| {
                    let equal = SeccompCmpOp::Eq;
                    arg_rule(1, equal, u64::from(request))
                })
                .collect::<Result<_, _>>()?,
            // One rule per bit: rules are alternatives, so any one bit set refuses the call.
            When::CloneNamespaces => CLONE_NEW
                .iter()
                .map(|&(_, bit)| {
                    arg_rule(0, SeccompCmpOp::MaskedEq(u64::from(bit)), u64::from(bit))
                })
                .collect::<Result<_, _>>()?,
        };
        rules.insert(i64::from(arch.nr(syscall)?), conditions);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno_value(Errno::PERM)),
        arch.target,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

/// A rule on the low 32 bits of argument `index` (`SeccompCmpArgLen::Dword`): the kernel reads
/// `ioctl`'s request and `clone`'s flags as 32 bits, so high bits must not let a call slip past.
fn arg_rule(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?])
}

fn errno_value(errno: Errno) -> u32 {
    errno.raw_os_error().cast_unsigned()
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    const RET_EPERM: u32 = 0x0005_0000 | 1;
    const RET_ENOSYS: u32 = 0x0005_0000 | 0x26; // ENOSYS (38)

    const AUDIT_ARCH_I386: u32 = 0x4000_0003;
    const AUDIT_ARCH_ARM: u32 = 0x4000_0028;

    /// A cBPF interpreter for the instructions seccompiler and the gate emit, over a
    /// `struct seccomp_data` laid out as the kernel lays it out (little endian on both arches).
    /// Panics on an unknown opcode, a jump out of the program or a fall off its end, all of which
    /// the kernel would reject.
    fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_le_bytes());
        data.extend_from_slice(&arch.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_le_bytes());
        }
        let mut acc: u32 = 0;
        let mut pc = 0usize;
        loop {
            let insn = &program[pc];
            pc += 1;
            match insn.code {
                LD_W_ABS => {
                    let at = insn.k as usize;
                    assert!(
                        at.is_multiple_of(4) && at + 4 <= data.len(),
                        "bad load at {at}"
                    );
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                0x54 => acc &= insn.k,         // BPF_ALU | BPF_AND | BPF_K
                0x05 => pc += insn.k as usize, // BPF_JMP | BPF_JA
                JEQ_K | JGE_K | 0x25 => {
                    let taken = match insn.code {
                        JEQ_K => acc == insn.k,
                        JGE_K => acc >= insn.k,
                        _ => acc > insn.k, // BPF_JGT
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
                RET_K => return insn.k,
                other => panic!("unexpected opcode {other:#x}"),
            }
            assert!(pc < program.len(), "jump past the end of the program");
        }
    }

    fn arches() -> [(&'static str, u32, BpfProgram); 2] {
        ["x86_64", "aarch64"].map(|name| {
            let arch = Arch::from_name(name).unwrap();
            (name, arch.audit, program_for(name).unwrap())
        })
    }

    fn nr(arch: &str, syscall: &'static str) -> u32 {
        Arch::from_name(arch).unwrap().nr(syscall).unwrap()
    }

    /// Numbers for a few ordinary syscalls that must stay allowed.
    fn ordinary(arch: &str) -> &'static [(&'static str, u32)] {
        match arch {
            "x86_64" => &[
                ("read", 0),
                ("write", 1),
                ("openat", 257),
                ("execve", 59),
                ("wait4", 61),
                ("ptrace", 101),
                ("getpid", 39),
                ("exit_group", 231),
                ("prctl", 157),
                ("seccomp", 317),
            ],
            _ => &[
                ("read", 63),
                ("write", 64),
                ("openat", 56),
                ("execve", 221),
                ("wait4", 260),
                ("ptrace", 117),
                ("getpid", 172),
                ("exit_group", 94),
                ("prctl", 167),
                ("seccomp", 277),
            ],
        }
    }

    #[test]
    fn every_always_denied_syscall_returns_eperm_whatever_its_arguments() {
        for (arch, audit, program) in arches() {
            for &(syscall, when) in TABLE {
                if matches!(when, When::Always) {
                    for args in [[0; 6], [u64::MAX; 6], [1, 2, 3, 4, 5, 6]] {
                        assert_eq!(
                            run(&program, audit, nr(arch, syscall), args),
                            RET_EPERM,
                            "{arch} {syscall}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn ordinary_syscalls_are_allowed_including_ptrace() {
        for (arch, audit, program) in arches() {
            for &(syscall, number) in ordinary(arch) {
                assert_eq!(
                    run(&program, audit, number, [3, 4, 5, 6, 7, 8]),
                    RET_ALLOW,
                    "{arch} {syscall}"
                );
            }
        }
    }

    #[test]
    fn tiocsti_and_tioclinux_are_refused_on_the_low_32_bits_of_the_request() {
        for (arch, audit, program) in arches() {
            let ioctl = nr(arch, "ioctl");
            for request in [
                0x5412,
                0x541C,
                0x1_0000_5412,
                0xFFFF_FFFF_0000_5412,
                0xDEAD_BEEF_0000_541C,
            ] {
                assert_eq!(
                    run(&program, audit, ioctl, [0, request, 0, 0, 0, 0]),
                    RET_EPERM,
                    "{arch} ioctl {request:#x}"
                );
            }
            // TCGETS, TIOCGWINSZ, FIONREAD, and TIOCSTI's number only in the high half (the
            // kernel reads 0 there).
            for request in [0x5401, 0x5413, 0x541B, 0x5412_0000_0000] {
                assert_eq!(
                    run(&program, audit, ioctl, [0, request, 0, 0, 0, 0]),
                    RET_ALLOW,
                    "{arch} ioctl {request:#x}"
                );
            }
        }
    }

    #[test]
    fn clone_with_any_namespace_flag_is_refused_and_fork_and_threads_are_not() {
        const SIGCHLD: u64 = 17;
        // glibc's pthread_create: CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|
        // CHILD_CLEARTID.
        const THREAD: u64 = 0x003D_0F00;
        // fork: CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD; posix_spawn: CLONE_VM|CLONE_VFORK.
        const FORK: u64 = 0x0120_0000 | SIGCHLD;
        const VFORK: u64 = 0x0000_4100 | SIGCHLD;
        for (arch, audit, program) in arches() {
            let clone = nr(arch, "clone");
            for (name, bit) in CLONE_NEW {
                let bit = u64::from(bit);
                for flags in [bit, bit | SIGCHLD, bit | THREAD, bit | 0x7E02_0000] {
                    assert_eq!(
                        run(&program, audit, clone, [flags, 0, 0, 0, 0, 0]),
                        RET_EPERM,
                        "{arch} clone {name} {flags:#x}"
                    );
                }
            }
            for flags in [SIGCHLD, THREAD, FORK, VFORK, 0x1000_0000 << 32] {
                assert_eq!(
                    run(&program, audit, clone, [flags, 0, 0, 0, 0, 0]),
                    RET_ALLOW,
                    "{arch} clone {flags:#x}"
                );
            }
        }
    }

    #[test]
    fn clone3_returns_enosys_so_libc_falls_back_to_clone() {
        for (arch, audit, program) in arches() {
            for args in [[0; 6], [u64::MAX; 6]] {
                assert_eq!(
                    run(&program, audit, nr(arch, "clone3"), args),
                    RET_ENOSYS,
                    "{arch}"
                );
            }
        }
    }

    #[test]
    fn a_foreign_abi_kills_the_process_even_for_allowed_syscalls() {
        for (arch, _, program) in arches() {
            let foreign = [
                AUDIT_ARCH_I386,
                AUDIT_ARCH_ARM,
                AUDIT_ARCH_X86_64,
                AUDIT_ARCH_AARCH64,
            ]
            .into_iter()
            .filter(|&audit| audit != Arch::from_name(arch).unwrap().audit);
            for audit in foreign {
                for number in [0, 20, 39, 172, 288] {
                    assert_eq!(
                        run(&program, audit, number, [0; 6]),
                        RET_KILL_PROCESS,
                        "{arch} program, arch {audit:#x}, nr {number}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_x32_abi_kills_the_process_on_x86_64() {
        let program = program_for("x86_64").unwrap();
        // getpid, keyctl, unshare with the x32 bit; the x32-only ioctl (514); the top of the range.
        for number in [39, 250, 272, 514, 547, 0x3FFF_FFFF] {
            let x32 = X32_SYSCALL_BIT | number;
            assert_eq!(
                run(&program, AUDIT_ARCH_X86_64, x32, [0; 6]),
                RET_KILL_PROCESS,
                "nr {x32:#x}"
            );
        }
        for number in [0x8000_0000, 0xFFFF_FFFE] {
            assert_eq!(
                run(&program, AUDIT_ARCH_X86_64, number, [0; 6]),
                RET_KILL_PROCESS,
                "nr {number:#x}"
            );
        }
        // -1 is how a tracer skips a syscall; the kernel answers it with ENOSYS.
        assert_eq!(
            run(&program, AUDIT_ARCH_X86_64, u32::MAX, [0; 6]),
            RET_ALLOW
        );
    }

    #[test]
    fn aarch64_has_no_x32_gate() {
        // There is no such ABI there; unknown numbers go to the kernel, which answers ENOSYS.
        let program = program_for("aarch64").unwrap();
        assert_eq!(
            run(&program, AUDIT_ARCH_AARCH64, X32_SYSCALL_BIT | 0xAC, [0; 6]),
            RET_ALLOW
        );
    }

    #[test]
    fn the_gate_checks_the_same_architecture_as_seccompilers_program() {
        for name in ["x86_64", "aarch64"] {
            let arch = Arch::from_name(name).unwrap();
            let table = table_program(&arch).unwrap();
            // seccompiler's program opens with: load arch; jeq AUDIT_ARCH; ret kill_process.
            assert_eq!(table[0], stmt(LD_W_ABS, DATA_ARCH), "{name}");
            assert_eq!(table[1].code, JEQ_K, "{name}");
            assert_eq!(table[1].k, arch.audit, "{name}");
            assert_eq!(table[2], stmt(RET_K, RET_KILL_PROCESS), "{name}");
        }
    }

    #[test]
    fn denied_names_the_table_and_clone3() {
        let named: Vec<&str> = DENIED
            .iter()
            .map(|entry| entry.split('(').next().unwrap())
            .collect();
        for &(syscall, when) in TABLE {
            assert!(named.contains(&syscall), "{syscall} missing from DENIED");
            if let When::IoctlRequest(requests) = when {
                assert_eq!(
                    named.iter().filter(|&&name| name == syscall).count(),
                    requests.len()
                );
            }
        }
        for name in &named {
            assert!(
                *name == "clone3" || TABLE.iter().any(|(syscall, _)| syscall == name),
                "{name} in DENIED but not filtered"
            );
        }
        assert!(DENIED.contains(&"ioctl(TIOCSTI)") && DENIED.contains(&"ioctl(TIOCLINUX)"));
        assert!(DENIED.contains(&"clone(CLONE_NEW*)"));
    }

    #[test]
    fn every_table_has_every_syscall_the_filter_names() {
        for name in ["x86_64", "aarch64"] {
            let arch = Arch::from_name(name).unwrap();
            for (syscall, _) in TABLE.iter().chain(&[("clone3", When::Always)]) {
                arch.nr(syscall).unwrap();
            }
            assert_eq!(
                arch.syscalls.len(),
                TABLE.len() + 1,
                "{name} has extra entries"
            );
        }
    }

    /// The numbers in this module agree with the system's kernel headers. Headers older than a
    /// syscall (`open_tree_attr` is Linux 6.15) do not define it; every other name must be there.
    #[test]
    fn syscall_numbers_match_the_kernel_headers() {
        let headers = [
            ("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
            ("aarch64", "/usr/include/asm-generic/unistd.h"),
        ];
        for (name, path) in headers {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("{path}: {e} (install linux-libc-dev)"));
            let defined = |syscall: &str| {
                text.lines().find_map(|line| {
                    let mut words = line.split_whitespace();
                    (words.next() == Some("#define")
                        && words.next() == Some(&format!("__NR_{syscall}")))
                    .then(|| words.next().and_then(|n| n.parse::<u32>().ok()))
                    .flatten()
                })
            };
            let arch = Arch::from_name(name).unwrap();
            let mut checked = 0;
            for &(syscall, number) in arch.syscalls {
                match defined(syscall) {
                    Some(header) => {
                        assert_eq!(number, header, "{name} {syscall}");
                        checked += 1;
                    }
                    None => assert_eq!(syscall, "open_tree_attr", "{name}: {path} lacks {syscall}"),
                }
            }
            assert!(checked + 1 >= arch.syscalls.len());
        }
    }

    #[test]
    fn other_architectures_are_an_error() {
        for arch in ["riscv64", "x86", "arm", "mips"] {
            assert!(matches!(
                program_for(arch),
                Err(SeccompError::UnsupportedArch { .. })
            ));
        }
    }

    #[test]
    fn program_bytes_are_the_native_array_of_sock_filter() {
        let program = program_for(std::env::consts::ARCH).unwrap();
        let bytes = program_bytes().unwrap();
        assert_eq!(bytes.len(), program.len() * 8);
        assert!(program.len() <= BPF_MAXINSNS);
        for (insn, chunk) in program.iter().zip(bytes.chunks_exact(8)) {
            assert_eq!(insn.code, u16::from_ne_bytes([chunk[0], chunk[1]]));
            assert_eq!((insn.jt, insn.jf), (chunk[2], chunk[3]));
            assert_eq!(insn.k, u32::from_ne_bytes(chunk[4..8].try_into().unwrap()));
        }
    }

    #[test]
    fn the_cached_program_is_the_compiled_one() {
        let first = program_bytes().unwrap();
        assert_eq!(first, compile_bytes().unwrap());
        assert_eq!(program_bytes().unwrap(), first);
    }

    #[test]
    fn program_fd_is_sealed_and_positioned_at_the_start() {
        use std::io::Read;
        let fd = program_fd().unwrap();
        let seals = rustix::fs::fcntl_get_seals(&fd).unwrap();
        assert!(seals.contains(SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK));
        assert!(seals.contains(SealFlags::SEAL));
        assert!(
            rustix::io::fcntl_getfd(&fd)
                .unwrap()
                .contains(rustix::io::FdFlags::CLOEXEC)
        );
        let mut file = File::from(fd);
        assert!(file.write_all(b"x").is_err(), "the memfd is writable");
        let mut read = Vec::new();
        file.read_to_end(&mut read).unwrap();
        assert_eq!(read, program_bytes().unwrap());
    }

    #[test]
    fn this_kernel_supports_the_filter() {
        kernel_supports_seccomp().unwrap();
    }

    /// The landlock backend's own filter (`landlock::child::extra_program`), for this host's
    /// architecture: every socket refused, a socket pair only of `AF_UNIX` stream or seqpacket
    /// sockets (flags such as `SOCK_CLOEXEC` ignored), the metadata calls refused whatever their
    /// arguments, ordinary calls allowed.
    #[test]
    fn the_landlock_backend_s_filter_refuses_sockets_pairs_that_take_addresses_and_metadata() {
        let program = crate::landlock::extra_program().unwrap();
        let audit = Arch::from_name(std::env::consts::ARCH).unwrap().audit;
        let call = |nr: i64, args: [u64; 6]| run(&program, audit, u32::try_from(nr).unwrap(), args);
        let (unix, inet, netlink) = (1u64, 2u64, 16u64);
        let (stream, dgram, seqpacket, raw) = (1u64, 2u64, 5u64, 3u64);
        let cloexec = 0o2_000_000u64;
        for family in [unix, inet, 10, netlink, 17] {
            for kind in [stream, dgram, raw] {
                assert_eq!(
                    call(libc::SYS_socket, [family, kind, 0, 0, 0, 0]),
                    RET_EPERM
                );
            }
        }
        for kind in [stream, seqpacket, stream | cloexec, seqpacket | cloexec] {
            assert_eq!(
                call(libc::SYS_socketpair, [unix, kind, 0, 0, 0, 0]),
                RET_ALLOW,
                "{kind}"
            );
        }
        for (family, kind) in [
            (unix, dgram),
            (unix, dgram | cloexec),
            (unix, raw),
            (inet, stream),
        ] {
            assert_eq!(
                call(libc::SYS_socketpair, [family, kind, 0, 0, 0, 0]),
                RET_EPERM,
                "{family} {kind}"
            );
        }
        for nr in [
            libc::SYS_fchmod,
            libc::SYS_fchmodat,
            libc::SYS_fchownat,
            libc::SYS_fsetxattr,
            libc::SYS_utimensat,
            452,
        ] {
            assert_eq!(call(nr, [0; 6]), RET_EPERM, "{nr}");
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_connect,
        ] {
            assert_eq!(call(nr, [0; 6]), RET_ALLOW, "{nr}");
        }
    }
}
