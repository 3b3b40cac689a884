//! The network path: slirp4netns attached to the sandbox's own network namespace, behind an
//! egress policy the sandbox cannot undo.
//!
//! Order, and why:
//! 1. bwrap starts with its namespaces unshared and `--info-fd`: it reports its child's pid and
//!    namespace inodes. The command runs behind a hold ([`crate::spec::NETWORK_HOLD`]) that says when
//!    bwrap has finished setting the sandbox up (`--block-fd` would block before that is known)
//!    and then waits for "go". No byte of the command runs until spear releases it; if spear dies
//!    or gives up, the hold exits without running it.
//! 2. spear pins the child through a pidfd and its network namespace as an fd (`/proc/PID/ns/net`),
//!    takes the namespace's owning user namespace with `NS_GET_USERNS`, and checks with
//!    `NS_GET_NSTYPE` and the inode numbers that the fds are the namespaces bwrap reported, and that
//!    the pinned child was still alive after they were opened. Attack stopped: attaching the
//!    network to a recycled pid's namespace.
//! 3. slirp4netns attaches through the pinned fds (`/proc/self/fd/N`), with the host's loopback
//!    disabled, its own sandbox and seccomp filter, and reports readiness on a pipe.
//! 4. The egress policy is loaded as nftables rules into the sandbox's namespace (by `nsenter` into
//!    its user and network namespaces, while the command is still held). The sandbox cannot
//!    change them: it has no capabilities in its user namespace and cannot create another one.
//!    nftables rather than routes, because routes cannot say "DNS only to slirp's resolver" or
//!    "this host, this port". If nft is missing or refuses, the path fails closed.
//! 5. spear releases the command. Afterwards slirp4netns is killed through its pidfd and its exit
//!    confirmed; a teardown that cannot be confirmed poisons the sandbox's network for good.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid,
};

use crate::spawn::vfork::{self, Output, Spawned};

/// slirp4netns's address for its DNS forwarder inside the sandbox.
pub const SLIRP_DNS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 3);

/// How long attaching may take, from bwrap's start to the release of the command.
const ATTACH_DEADLINE: Duration = Duration::from_secs(10);
/// How long a killed slirp4netns has to be confirmed dead, per attempt.
const STOP_CONFIRM: Duration = Duration::from_secs(2);

/// Destinations refused to every networked sandbox (before the operator's allowances): this
/// network, private and shared ranges (RFC 1918, CGNAT with 100.100.100.200), loopback,
/// link-local with the cloud metadata address, documentation and benchmarking ranges, multicast
/// and reserved space.
pub const REFUSED_RANGES: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// A destination the operator allows despite [`REFUSED_RANGES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressAllow {
    /// Every port of a prefix (`203.0.113.0/24`, or an address alone for `/32`).
    Prefix {
        /// The network address.
        addr: Ipv4Addr,
        /// The prefix length.
        len: u8,
    },
    /// One TCP or UDP port of one host (`203.0.113.10:8080`).
    HostPort {
        /// The host.
        addr: Ipv4Addr,
        /// The port.
        port: u16,
    },
}

impl FromStr for EgressAllow {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("`{s}` is not an IPv4 prefix (203.0.113.0/24) or host:port (203.0.113.10:8080)")
        };
        if let Some((addr, len)) = s.split_once('/') {
            let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
            let len: u8 = len.parse().map_err(|_| bad())?;
            if len > 32 {
                return Err(bad());
            }
            Ok(EgressAllow::Prefix { addr, len })
        } else if let Some((addr, port)) = s.split_once(':') {
            Ok(EgressAllow::HostPort {
                addr: addr.parse().map_err(|_| bad())?,
                port: port.parse().map_err(|_| bad())?,
            })
        } else {
            Ok(EgressAllow::Prefix {
                addr: s.parse().map_err(|_| bad())?,
                len: 32,
            })
        }
    }
}

/// How networked sandboxes reach the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// The slirp4netns binary.
    pub slirp4netns: PathBuf,
    /// util-linux's nsenter, to load the rules inside the sandbox's namespaces.
    pub nsenter: PathBuf,
    /// The nft binary.
    pub nft: PathBuf,
    /// Destinations allowed despite [`REFUSED_RANGES`].
    pub allow: Vec<EgressAllow>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            slirp4netns: PathBuf::from("/usr/bin/slirp4netns"),
            nsenter: PathBuf::from("/usr/bin/nsenter"),
            nft: PathBuf::from("/usr/sbin/nft"),
            allow: Vec::new(),
        }
    }
}

/// Why the network path could not be set up or torn down.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// bwrap's report was missing or malformed.
    #[error("bwrap did not report its sandbox: {0}")]
    Info(String),
    /// The namespaces could not be pinned or were not the reported ones.
    #[error("the sandbox's network namespace could not be pinned: {0}")]
    Pin(String),
    /// slirp4netns could not be started or did not come up.
    #[error(
        "slirp4netns did not start: {0}; check `spear doctor` (slirp4netns installed, /dev/net/tun accessible)"
    )]
    Slirp(String),
    /// The egress rules could not be loaded.
    #[error("the egress policy could not be put in place, so the network stays closed: {0}")]
    Egress(String),
    /// Teardown could not be confirmed.
    #[error("slirp4netns could not be confirmed dead: {0}")]
    Teardown(String),
}

/// What bwrap reported on its info fd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Info {
    pub child_pid: i32,
    pub net_ns: u64,
    pub user_ns: Option<u64>,
}

/// Parses bwrap's `--info-fd` JSON (flat, numbers only).
pub(crate) fn parse_info(text: &str) -> Result<Info, NetworkError> {
    let number = |key: &str| -> Option<u64> {
        let at = text.find(&format!("\"{key}\""))?;
        let rest = &text[at + key.len() + 2..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let child_pid = number("child-pid")
        .and_then(|p| i32::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| NetworkError::Info(format!("no child-pid in {text:?}")))?;
    let net_ns = number("net-namespace")
        .ok_or_else(|| NetworkError::Info(format!("no net-namespace in {text:?}")))?;
    Ok(Info {
        child_pid,
        net_ns,
        user_ns: number("user-namespace"),
    })
}

/// The nftables rules of the egress policy, loaded into the sandbox's namespace. Pure.
pub(crate) fn egress_rules(allow: &[EgressAllow], host_addrs: &[Ipv4Addr]) -> String {
    let mut r = String::from(
        "table inet spear_egress {\n  chain output {\n    type filter hook output priority filter; policy accept;\n    oifname \"lo\" accept\n",
    );
    let _ = writeln!(
        r,
        "    ip daddr {SLIRP_DNS} meta l4proto {{ tcp, udp }} th dport 53 accept"
    );
    for a in allow {
        match a {
            EgressAllow::Prefix { addr, len } => {
                let _ = writeln!(r, "    ip daddr {addr}/{len} accept");
            }
            EgressAllow::HostPort { addr, port } => {
                let _ = writeln!(
                    r,
                    "    ip daddr {addr} meta l4proto {{ tcp, udp }} th dport {port} accept"
                );
            }
        }
    }
    r.push_str("    meta l4proto { tcp, udp } th dport 53 reject\n");
    let _ = writeln!(r, "    ip daddr {{ {} }} reject", REFUSED_RANGES.join(", "));
    if !host_addrs.is_empty() {
        let list: Vec<String> = host_addrs.iter().map(ToString::to_string).collect();
        let _ = writeln!(r, "    ip daddr {{ {} }} reject", list.join(", "));
    }
    r.push_str("    meta nfproto ipv6 reject\n  }\n}\n");
    r
}

/// The host's own IPv4 addresses (the LOCAL routes of `/proc/net/fib_trie`): slirp4netns would
/// otherwise carry a sandbox to services bound to them. A table that cannot be read, or that lists
/// none (it always holds 127.0.0.1), is an error: the rules are never loaded without them.
pub(crate) fn host_addresses() -> Result<Vec<Ipv4Addr>, NetworkError> {
    let text = std::fs::read_to_string("/proc/net/fib_trie").map_err(|e| {
        NetworkError::Egress(format!(
            "the host's addresses are unknown: /proc/net/fib_trie: {e}"
        ))
    })?;
    let addrs = parse_fib_trie(&text);
    if addrs.is_empty() {
        return Err(NetworkError::Egress(
            "the host's addresses are unknown: /proc/net/fib_trie lists no local address".into(),
        ));
    }
    Ok(addrs)
}

fn parse_fib_trie(text: &str) -> Vec<Ipv4Addr> {
    let mut out: Vec<Ipv4Addr> = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(addr) = t.strip_prefix("|-- ").and_then(|a| a.parse().ok()) {
            last = Some(addr);
        } else if t.contains("/32 host LOCAL")
            && let Some(a) = last
            && !out.contains(&a)
        {
            out.push(a);
        }
    }
    out.sort();
    out
}

/// The sandbox's pinned namespaces.
#[derive(Debug)]
pub(crate) struct Pinned {
    pub net: OwnedFd,
    pub user: OwnedFd,
    _child: OwnedFd,
}

/// A running slirp4netns.
#[derive(Debug)]
pub(crate) struct Slirp {
    pidfd: OwnedFd,
    /// Its pid, pinned by `pidfd` (our child, reaped only through it).
    pid: Pid,
    /// spear's own copy of its tap device, once it is ready ([`hold_tap`]).
    tap: Option<OwnedFd>,
}

/// Waits for the hold's "r": bwrap has set the sandbox up and the command is held.
fn wait_for_setup(ready: &OwnedFd, deadline: Instant) -> Result<(), NetworkError> {
    let left = deadline.saturating_duration_since(Instant::now());
    let mut fds = [PollFd::new(ready, PollFlags::IN)];
    let ts = Timespec {
        tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(left.subsec_nanos()),
    };
    let mut buf = [0u8; 1];
    let said = matches!(poll(&mut fds, Some(&ts)), Ok(n) if n > 0)
        && matches!(rustix::io::read(ready, &mut buf), Ok(1) if buf[0] == b'r');
    if said {
        Ok(())
    } else {
        Err(NetworkError::Info(
            "the sandbox did not finish its setup".into(),
        ))
    }
}

/// Reads bwrap's report from `info` (until EOF or a closing brace), within `deadline`.
pub(crate) fn read_info(info: &OwnedFd, deadline: Instant) -> Result<Info, NetworkError> {
    let mut text = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NetworkError::Info("timed out".into()));
        }
        let mut fds = [PollFd::new(info, PollFlags::IN)];
        let ts = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        match poll(&mut fds, Some(&ts)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(NetworkError::Info(e.to_string())),
        }
        match rustix::io::read(info, &mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.extend_from_slice(&buf[..n]);
                if text.contains(&b'}') {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(e) => return Err(NetworkError::Info(e.to_string())),
        }
    }
    parse_info(&String::from_utf8_lossy(&text))
}

const NS_GET_USERNS: libc::c_ulong = 0xb701;
const NS_GET_NSTYPE: libc::c_ulong = 0xb703;

/// `ioctl(fd, request)` for the two nsfs requests, which take no argument.
fn ns_ioctl(fd: &OwnedFd, request: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: NS_GET_USERNS and NS_GET_NSTYPE take no argument and only return an int (a new fd
    // or a namespace type); nothing is read from or written to our memory.
    #[allow(unsafe_code)]
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Pins the reported child and its namespaces, and checks they are the ones bwrap reported.
pub(crate) fn pin(info: Info) -> Result<Pinned, NetworkError> {
    let pin_err = |what: &str, e: &dyn std::fmt::Display| NetworkError::Pin(format!("{what}: {e}"));
    let pid = Pid::from_raw(info.child_pid).ok_or_else(|| NetworkError::Pin("pid 0".into()))?;
    let child = pidfd_open(pid, PidfdFlags::empty()).map_err(|e| pin_err("pidfd_open", &e))?;
    let net: OwnedFd = std::fs::File::open(format!("/proc/{}/ns/net", info.child_pid))
        .map_err(|e| pin_err("open its network namespace", &e))?
        .into();
    // The pidfd is readable once its process exited: if it is not, the pid was still ours when
    // the namespace was opened.
    let mut fds = [PollFd::new(&child, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if poll(&mut fds, Some(&zero)).map_err(|e| pin_err("poll", &e))? != 0 {
        return Err(NetworkError::Pin(
            "the sandbox exited before its network was attached".into(),
        ));
    }
    let st = rustix::fs::fstat(&net).map_err(|e| pin_err("fstat", &e))?;
    if st.st_ino != info.net_ns {
        return Err(NetworkError::Pin(format!(
            "namespace inode {} is not the reported {}",
            st.st_ino, info.net_ns
        )));
    }
    let net_type = ns_ioctl(&net, NS_GET_NSTYPE).map_err(|e| pin_err("NS_GET_NSTYPE", &e))?;
    if net_type != libc::CLONE_NEWNET {
        return Err(NetworkError::Pin("not a network namespace".into()));
    }
    let user_fd = ns_ioctl(&net, NS_GET_USERNS).map_err(|e| pin_err("NS_GET_USERNS", &e))?;
    // SAFETY: the ioctl returned a new fd that nothing else owns.
    #[allow(unsafe_code)]
    let user = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(user_fd) };
    let user_type = ns_ioctl(&user, NS_GET_NSTYPE).map_err(|e| pin_err("NS_GET_NSTYPE", &e))?;
    if user_type != libc::CLONE_NEWUSER {
        return Err(NetworkError::Pin(
            "its owner is not a user namespace".into(),
        ));
    }
    if let Some(expected) = info.user_ns {
        let st = rustix::fs::fstat(&user).map_err(|e| pin_err("fstat", &e))?;
        if st.st_ino != expected {
            return Err(NetworkError::Pin(
                "its owning user namespace is not the reported one".into(),
            ));
        }
    }
    Ok(Pinned {
        net,
        user,
        _child: child,
    })
}

/// Spawns `program` with `fds` at 3, 4, ... (see [`crate::spawn::place_fds`]), stdout to
/// `/dev/null`, through [`vfork::spawn`] (nothing of spear is copied); the caller reaps it. With
/// `private_mounts` the child first gets a mount namespace of its own whose mounts are all
/// private.
///
/// Attack stopped (by `private_mounts`): a helper that builds a sandbox of its own in the host's
/// mount namespace (slirp4netns's `--enable-sandbox`: unshare, pivot, unmount the old root)
/// changing the host's mount table. Its unmounts reached the host through shared peer groups and
/// took every `ip netns` namespace under `/run/netns` with them.
fn spawn_with_fds(
    program: &std::path::Path,
    args: &[OsString],
    fds: &[RawFd],
    stdin: Option<BorrowedFd<'_>>,
    stderr: Output<'_>,
    private_mounts: bool,
) -> io::Result<Spawned> {
    // spear's own environment, as before (these helpers are spear's, not the command's).
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let command = vfork::Command {
        program,
        args,
        env: &env,
        cwd: None,
        stdin,
        stdout: Output::Null,
        stderr,
    };
    let setup = || {
        // Dies with the spear thread that started it: a spear that crashes or is killed leaves
        // no slirp4netns (or nsenter) behind. Attach, supervision and teardown all run on that one
        // thread.
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if private_mounts {
            // SAFETY: CLONE_NEWNS does not unshare the fd table (CLONE_FILES), which is what
            // makes unshare unsafe; the child is alone in its thread group.
            #[allow(unsafe_code)]
            unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }?;
            rustix::mount::mount_change(
                c"/",
                rustix::mount::MountPropagationFlags::PRIVATE
                    | rustix::mount::MountPropagationFlags::REC,
            )?;
        }
        crate::spawn::place_fds(fds)
    };
    // SAFETY: `setup` is what vfork::spawn requires: raw system calls only (prctl, unshare,
    // mount, and the fd calls of place_fds) on data prepared before the call; its errors are OS
    // errors; it allocates nothing, takes no lock, and cannot panic.
    #[allow(unsafe_code)]
    unsafe {
        vfork::spawn(&command, &setup)
    }
}

/// Waits for a child of [`spawn_with_fds`]; its exit status, or `None` when a signal ended it.
fn wait_for(pid: Pid) -> io::Result<Option<i32>> {
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status.exit_status()),
            Ok(None) => return Err(io::Error::other("waitpid answered no status")),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A slirp4netns that has been started and may not be ready yet.
pub(crate) struct Starting {
    slirp: Slirp,
    ready: OwnedFd,
    log: std::fs::File,
}

/// Starts slirp4netns against the pinned namespaces; [`wait_ready`] waits for it. Its stderr goes
/// to an anonymous file (read only if it fails): a pipe nobody drains could block it.
pub(crate) fn spawn_slirp(
    config: &NetworkConfig,
    pinned: &Pinned,
) -> Result<Starting, NetworkError> {
    let err = |e: &dyn std::fmt::Display| NetworkError::Slirp(e.to_string());
    let (ready, ready_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| err(&e))?;
    let log: std::fs::File =
        rustix::fs::memfd_create("slirp4netns-log", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| err(&e))?
            .into();
    // slirp4netns's own sandbox (a mount namespace holding only what it needs, capabilities
    // dropped) enters the sandbox's user namespace as uid 0, which bwrap maps only when spear runs
    // as root; for a user it fails ("setegid(0)"), so it is used for root only, and then in a mount
    // namespace spear made private first (see `spawn_with_fds`). Its seccomp filter is used for
    // everyone.
    let mut args: Vec<OsString> = vec![
        "--configure".into(),
        "--mtu=65520".into(),
        "--disable-host-loopback".into(),
    ];
    let own_sandbox = rustix::process::geteuid().is_root();
    if own_sandbox {
        args.push("--enable-sandbox".into());
    }
    args.extend(
        [
            "--enable-seccomp",
            "--ready-fd=5",
            "--netns-type=path",
            "--userns-path=/proc/self/fd/4",
            "/proc/self/fd/3",
            "tap0",
        ]
        .iter()
        .map(OsString::from),
    );
    let fds = [
        pinned.net.as_raw_fd(),
        pinned.user.as_raw_fd(),
        ready_w.as_raw_fd(),
    ];
    let child = spawn_with_fds(
        &config.slirp4netns,
        &args,
        &fds,
        None,
        Output::To(log.as_fd()),
        own_sandbox,
    )
    .map_err(|e| NetworkError::Slirp(format!("{}: {e}", config.slirp4netns.display())))?;
    drop(ready_w);
    let pid = child.pid;
    // Our own unreaped child: its pid is still its own.
    let pidfd = pidfd_open(pid, PidfdFlags::empty()).map_err(|e| err(&e))?;
    Ok(Starting {
        slirp: Slirp {
            pidfd,
            pid,
            tap: None,
        },
        ready,
        log,
    })
}

/// Waits until slirp4netns reports ready on its ready fd; stops it and says why if it does not.
pub(crate) fn wait_ready(starting: Starting, deadline: Instant) -> Result<Slirp, NetworkError> {
    let Starting {
        slirp,
        ready,
        mut log,
    } = starting;
    let mut buf = [0u8; 8];
    let left = deadline.saturating_duration_since(Instant::now());
    let mut fds = [PollFd::new(&ready, PollFlags::IN)];
    let ts = Timespec {
        tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(left.subsec_nanos()),
    };
    let is_ready = matches!(poll(&mut fds, Some(&ts)), Ok(n) if n > 0)
        && matches!(rustix::io::read(&ready, &mut buf), Ok(n) if n > 0 && buf[0] == b'1');
    if is_ready {
        let tap = hold_tap(&slirp);
        return Ok(Slirp { tap, ..slirp });
    }
    let _ = stop_slirp(&slirp);
    let mut msg = String::new();
    let _ = io::Seek::seek(&mut log, io::SeekFrom::Start(0));
    let _ = io::Read::read_to_string(&mut io::Read::take(&mut log, 4096), &mut msg);
    Err(NetworkError::Slirp(format!(
        "it did not report ready: {}",
        msg.trim()
    )))
}

/// Loads the egress rules into the pinned namespaces.
pub(crate) fn apply_egress(
    config: &NetworkConfig,
    pinned: &Pinned,
    rules: &str,
) -> Result<(), NetworkError> {
    let args: Vec<OsString> = [
        "--user=/proc/self/fd/4",
        "--net=/proc/self/fd/3",
        "--preserve-credentials",
        "--",
    ]
    .iter()
    .map(OsString::from)
    .chain([config.nft.clone().into_os_string(), "-f".into(), "-".into()])
    .collect();
    let fds = [pinned.net.as_raw_fd(), pinned.user.as_raw_fd()];
    let egress = |e: &dyn std::fmt::Display| NetworkError::Egress(e.to_string());
    let (stdin, rules_in) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| egress(&e))?;
    let child = spawn_with_fds(
        &config.nsenter,
        &args,
        &fds,
        Some(stdin.as_fd()),
        Output::Pipe,
        false,
    )
    .map_err(|e| NetworkError::Egress(format!("{}: {e}", config.nsenter.display())))?;
    drop(stdin);
    // The rules first, then its stderr to the end, then its status (as `wait_with_output` after
    // writing stdin did); reaped even when the rules could not be written.
    let written = std::fs::File::from(rules_in).write_all(rules.as_bytes());
    let mut stderr = Vec::new();
    if let Some(fd) = child.stderr {
        let _ = io::Read::read_to_end(&mut std::fs::File::from(fd), &mut stderr);
    }
    let status = wait_for(child.pid).map_err(|e| egress(&e))?;
    written.map_err(|e| egress(&e))?;
    if status == Some(0) {
        Ok(())
    } else {
        Err(NetworkError::Egress(
            String::from_utf8_lossy(&stderr).trim().to_owned(),
        ))
    }
}

/// A copy of slirp4netns's tap device (its `/dev/net/tun` fd, taken with `pidfd_getfd`, which makes
/// it close-on-exec), or `None` when it cannot be taken (then only the teardown is slower).
///
/// Closing a tap device waits for an RCU grace period (`synchronize_net`): when slirp4netns held
/// the only reference, its exit took 15 to 40 ms, and every networked command waited for it,
/// since its death is confirmed before the command's result. With spear holding a reference its
/// exit is immediate, and spear closes the copy afterwards, off the command's path
/// ([`release_tap`]). The device is already dead then: slirp4netns, its only reader, is gone.
fn hold_tap(slirp: &Slirp) -> Option<OwnedFd> {
    let dir = std::fs::read_dir(format!("/proc/{}/fd", slirp.pid.as_raw_nonzero())).ok()?;
    // Known by its device (the misc device 10:200), not by its path: slirp4netns's own sandbox
    // has another root, where the same file reads `/net/tun`.
    let tun = rustix::fs::makedev(10, 200);
    let fd = dir.flatten().find_map(|entry| {
        let meta = std::fs::metadata(entry.path()).ok()?;
        let is_tun = meta.file_type().is_char_device() && meta.rdev() == tun;
        is_tun
            .then(|| entry.file_name().to_str()?.parse::<RawFd>().ok())
            .flatten()
    })?;
    rustix::process::pidfd_getfd(&slirp.pidfd, fd, rustix::process::PidfdGetfdFlags::empty()).ok()
}

/// Lets go of spear's copy of a stopped slirp4netns's tap device without waiting for the RCU grace
/// period its last close costs (see [`hold_tap`]): the last reference goes to a `/bin/true` of
/// its own, whose exit pays it, and spear's copy is closed at once. So nothing of the command is
/// left in spear's fd table when its result is returned; the helper, which holds nothing else,
/// is reaped by a thread. Without a helper the copy is closed inline (the slow way).
pub(crate) fn release_tap(slirp: Slirp) {
    let Some(tap) = slirp.tap else {
        return;
    };
    let helper = spawn_with_fds(
        std::path::Path::new("/bin/true"),
        &[],
        &[tap.as_raw_fd()],
        None,
        Output::Null,
        false,
    );
    drop(tap);
    match helper {
        Ok(child) => reap_in_background(child.pid),
        Err(e) => tracing::debug!("a tap device was closed inline: {e}"),
    }
}

/// Waits for the child `pid` on a thread of its own; inline when no thread can be started.
fn reap_in_background(pid: Pid) {
    let reaper = std::thread::Builder::new()
        .name("spear-tap-close".into())
        .spawn(move || {
            let _ = wait_for(pid);
        });
    if reaper.is_err() {
        let _ = wait_for(pid);
    }
}

/// Kills slirp4netns through its pidfd and confirms its exit; one retry, no numeric-pid fallback.
pub(crate) fn stop_slirp(slirp: &Slirp) -> Result<(), NetworkError> {
    for _ in 0..2 {
        let _ = pidfd_send_signal(&slirp.pidfd, Signal::KILL);
        let mut fds = [PollFd::new(&slirp.pidfd, PollFlags::IN)];
        let ts = Timespec {
            tv_sec: i64::try_from(STOP_CONFIRM.as_secs()).unwrap_or(2),
            tv_nsec: 0,
        };
        if matches!(poll(&mut fds, Some(&ts)), Ok(n) if n > 0)
            && matches!(
                waitid(
                    WaitId::PidFd(slirp.pidfd.as_fd()),
                    WaitIdOptions::EXITED | WaitIdOptions::NOHANG
                ),
                Ok(Some(_))
            )
        {
            return Ok(());
        }
    }
    Err(NetworkError::Teardown(
        "its pidfd did not report an exit after two SIGKILLs".into(),
    ))
}

/// Attaches the network to a held sandbox: read its report, pin it, start slirp4netns, load the
/// egress rules. The command is still held when this returns.
pub(crate) fn attach(
    config: &NetworkConfig,
    info: &OwnedFd,
    ready: &OwnedFd,
) -> Result<Slirp, NetworkError> {
    // One attach at a time per process. Concurrent attaches as a user (not as root) were seen to
    // get nft's netlink requests refused (EPERM) for some sandboxes, repeatably and not cured by
    // waiting; serialised, none is. The cause is not understood yet (see the closing note of the
    // network issue); an attach takes tens of milliseconds.
    static ATTACH: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = ATTACH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let deadline = Instant::now() + ATTACH_DEADLINE;
    let report = read_info(info, deadline)?;
    // bwrap reports its child before the child has written its user namespace's maps and set up
    // loopback; touching the namespaces before that races it (nft refused with EPERM, bwrap's
    // RTM_NEWADDR failing). The hold says when the setup is done.
    wait_for_setup(ready, deadline)?;
    tracing::debug!("bwrap reported and set up");
    let pinned = pin(report)?;
    tracing::debug!("namespaces pinned");
    // slirp4netns comes up while the rules load: the rules filter the namespace's output hook
    // and do not need its tap device, and the command stays held until both are done.
    let starting = spawn_slirp(config, &pinned)?;
    let rules = match host_addresses() {
        Ok(addrs) => egress_rules(&config.allow, &addrs),
        Err(e) => {
            let _ = stop_slirp(&starting.slirp);
            return Err(e);
        }
    };
    if let Err(e) = apply_egress(config, &pinned, &rules) {
        let _ = stop_slirp(&starting.slirp);
        return Err(e);
    }
    tracing::debug!("egress rules loaded");
    let ready = wait_ready(starting, deadline);
    tracing::debug!("slirp4netns ready");
    ready
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_entries_parse() {
        assert_eq!(
            "203.0.113.0/24".parse(),
            Ok(EgressAllow::Prefix {
                addr: Ipv4Addr::new(203, 0, 113, 0),
                len: 24
            })
        );
        assert_eq!(
            "203.0.113.10".parse(),
            Ok(EgressAllow::Prefix {
                addr: Ipv4Addr::new(203, 0, 113, 10),
                len: 32
            })
        );
        assert_eq!(
            "203.0.113.10:8080".parse(),
            Ok(EgressAllow::HostPort {
                addr: Ipv4Addr::new(203, 0, 113, 10),
                port: 8080
            })
        );
        for bad in [
            "",
            "x",
            "1.2.3.4/33",
            "1.2.3.4:99999",
            "::1",
            "example.com:80",
        ] {
            assert!(bad.parse::<EgressAllow>().is_err(), "{bad}");
        }
    }

    #[test]
    fn bwrap_info() {
        let info = parse_info("{\n    \"child-pid\": 4242,\n    \"cgroup-namespace\": 4026531835,\n    \"net-namespace\": 4026532999,\n    \"user-namespace\": 4026532888\n}\n").unwrap();
        assert_eq!(
            info,
            Info {
                child_pid: 4242,
                net_ns: 4_026_532_999,
                user_ns: Some(4_026_532_888)
            }
        );
        assert!(parse_info("{\"net-namespace\": 1}").is_err());
        assert!(parse_info("{\"child-pid\": 0, \"net-namespace\": 1}").is_err());
        assert!(parse_info("{\"child-pid\": 5}").is_err());
    }

    #[test]
    fn rules_allow_before_they_refuse() {
        let rules = egress_rules(
            &[
                EgressAllow::Prefix {
                    addr: Ipv4Addr::new(203, 0, 113, 10),
                    len: 32,
                },
                EgressAllow::HostPort {
                    addr: Ipv4Addr::new(192, 168, 1, 5),
                    port: 443,
                },
            ],
            &[Ipv4Addr::LOCALHOST, Ipv4Addr::new(198, 51, 100, 7)],
        );
        let at = |s: &str| rules.find(s).unwrap_or_else(|| panic!("{s} in {rules}"));
        assert!(at("oifname \"lo\" accept") < at("ip daddr 10.0.2.3"));
        assert!(at("ip daddr 203.0.113.10/32 accept") < at("th dport 53 reject"));
        assert!(
            at("ip daddr 192.168.1.5 meta l4proto { tcp, udp } th dport 443 accept")
                < at("10.0.0.0/8")
        );
        assert!(rules.contains("169.254.0.0/16") && rules.contains("100.64.0.0/10"));
        assert!(rules.contains("ip daddr { 127.0.0.1, 198.51.100.7 } reject"));
        assert!(rules.contains("meta nfproto ipv6 reject"));
    }

    #[test]
    fn fib_trie_locals() {
        let text = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     |-- 192.0.2.2\n        /32 host LOCAL\n     |-- 127.0.0.1\n        /32 host LOCAL\nLocal:\n     |-- 192.0.2.2\n        /32 host LOCAL\n     |-- 192.0.2.255\n        /32 link BROADCAST\n";
        assert_eq!(
            parse_fib_trie(text),
            vec![Ipv4Addr::LOCALHOST, Ipv4Addr::new(192, 0, 2, 2)]
        );
    }
}
