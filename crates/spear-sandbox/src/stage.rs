//! Staged writes, the mechanism: each writable root is mounted over itself as an overlay, in a
//! mount namespace of the command's own, before bwrap starts; bwrap binds that view like any root.
//!
//! The steps run in the child between clone and exec (`StagePlan::apply`), so nothing of
//! them is ever seen by the host:
//! 1. A mount namespace of the child's own: as root `unshare(CLONE_NEWNS)`; as a user
//!    `unshare(CLONE_NEWUSER | CLONE_NEWNS)` with the user's own uid and gid mapped to themselves
//!    (the only maps a user may write), so that overlayfs may be mounted and the sandbox still runs
//!    as the user.
//! 2. Every mount made private (`MS_REC | MS_PRIVATE`). Attack stopped: a mount (or an unmount)
//!    made for the command propagating back into the host's mount table through a shared peer
//!    group (`ip netns` keeps its namespaces on a shared `/run/netns`, systemd makes `/` shared).
//! 3. One overlay per root, mounted over the root itself: `lowerdir` the root, `upperdir`/`workdir`
//!    empty directories of spear's own, by their canonical paths (overlayfs clones the layers'
//!    mounts, which it does only for mounts of the namespace it is mounted in, so they are looked
//!    up after the unshare; the characters overlayfs splits options on are escaped). Redirects, the index and
//!    metacopy are off: the upper layer holds only whole files, whiteouts (character devices 0:0)
//!    and opaque directories, which is all the reader of the upper layer understands. A directory
//!    that exists in the root cannot be renamed (EXDEV: `mv` copies instead). The overlay is
//!    `volatile`: its mount does not sync the upper filesystem (which would wait for everything
//!    dirty on it), and `fsync` inside the command is not a sync of the upper layer; the commit
//!    syncs what git writes, which relies on it.
//!
//! When a step fails, the child writes which step and the errno on a report pipe and exits before
//! exec: nothing runs, and the parent turns the report into [`StageFailure`].

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use rustix::fs::{Mode, OFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};

use crate::spec::Overlay;

/// Work directories made by this process (each mount gets its own).
static MOUNTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Which step of the stage failed (reported by the child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageStep {
    /// Making the mount namespace (and, for a user, the user namespace).
    Unshare,
    /// Writing the user namespace's maps.
    Maps,
    /// Making the mounts private.
    Private,
    /// Mounting an overlay.
    Overlay,
}

impl StageStep {
    fn code(self) -> u8 {
        match self {
            StageStep::Unshare => 1,
            StageStep::Maps => 2,
            StageStep::Private => 3,
            StageStep::Overlay => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => StageStep::Unshare,
            2 => StageStep::Maps,
            3 => StageStep::Private,
            4 => StageStep::Overlay,
            _ => return None,
        })
    }
}

/// Why the child could not stage the writable roots; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct StageFailure {
    /// The step.
    pub step: StageStep,
    /// The errno it failed with.
    pub errno: i32,
}

impl StageFailure {
    fn describe(&self) -> String {
        let e = io::Error::from_raw_os_error(self.errno);
        match self.step {
            StageStep::Unshare => format!(
                "the command's mount namespace could not be made ({e}); user namespaces may be disabled"
            ),
            StageStep::Maps => format!("the command's user namespace could not be mapped ({e})"),
            StageStep::Private => format!("the command's mounts could not be made private ({e})"),
            StageStep::Overlay => format!(
                "the writable roots could not be staged with overlayfs ({e}); the staging directory \
                 must be on a filesystem overlayfs accepts as an upper layer (ext4, xfs, btrfs, or \
                 tmpfs on Linux 6.6 or later), and the kernel must allow overlayfs{}",
                if rustix::process::geteuid().is_root() {
                    ""
                } else {
                    " in user namespaces (Linux 5.11 or later)"
                }
            ),
        }
    }
}

/// Everything the child needs to stage, prepared before the clone: no allocation happens after it
/// (the child shares this process's memory).
#[derive(Debug)]
pub struct StagePlan {
    /// `(uid_map, gid_map)` contents when a user namespace is made (not as root).
    maps: Option<(CString, CString)>,
    /// `(target, data)` of each overlay mount.
    mounts: Vec<(CString, CString)>,
    /// Where the child reports a failed step.
    report_read: OwnedFd,
    report_write: OwnedFd,
}

impl StagePlan {
    /// Opens every layer of `overlays` and prepares the mounts, for a child of this process.
    pub fn prepare(overlays: &[Overlay]) -> io::Result<StagePlan> {
        let euid = rustix::process::geteuid();
        let maps = (!euid.is_root()).then(|| {
            let gid = rustix::process::getegid().as_raw();
            let uid = euid.as_raw();
            (
                cstring(format!("{uid} {uid} 1\n")),
                cstring(format!("{gid} {gid} 1\n")),
            )
        });
        let maps = match maps {
            Some((Ok(u), Ok(g))) => Some((u, g)),
            Some(_) => return Err(io::Error::other("a map holds a NUL byte")),
            None => None,
        };
        // `volatile`: an overlay otherwise syncs its upper filesystem when it is mounted, which
        // makes every writable command wait for the writeback of whatever else is dirty on it (a
        // build's gigabytes: seconds). The layer is thrown away after the commit, which syncs
        // what needs it (see spear-runtime's staging).
        // `userxattr` exactly when [`opaque_xattr`] names the `user.` form: the reader of the
        // upper layer honours the one namespace the mount uses.
        let options = if mounts_trusted_xattrs() {
            "redirect_dir=off,index=off,metacopy=off,volatile"
        } else {
            "redirect_dir=nofollow,index=off,metacopy=off,userxattr,volatile"
        };
        let mut mounts = Vec::new();
        for o in overlays {
            for dir in [&o.lower, &o.upper, &o.work] {
                if !std::fs::symlink_metadata(dir)?.is_dir() {
                    return Err(io::Error::other(format!(
                        "`{}` is not a directory",
                        dir.display()
                    )));
                }
            }
            // A fresh work directory per mount: a volatile overlay marks its work directory,
            // which no later mount (the command after its preflight) may then use.
            let work = o.work.join(format!(
                "{}",
                MOUNTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(&work)?;
            let data = format!(
                "lowerdir={},upperdir={},workdir={},{options}",
                escape(&o.lower)?,
                escape(&o.upper)?,
                escape(&work)?
            );
            mounts.push((cstring(path_str(&o.lower)?.to_owned())?, cstring(data)?));
        }
        let (report_read, report_write) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        Ok(StagePlan {
            maps,
            mounts,
            report_read,
            report_write,
        })
    }

    /// The fd the child writes a failure report to (for the spawner).
    pub(crate) fn report_fd(&self) -> RawFd {
        self.report_write.as_raw_fd()
    }

    /// In the child, before exec: makes the private namespaces and mounts every overlay.
    /// Async-signal-safe: raw system calls on data prepared before the clone, no allocation. On
    /// failure the step and errno are written to `report` and the error returned (the child then
    /// exits).
    pub(crate) fn apply(&self, report: RawFd) -> io::Result<()> {
        let fail = |step: StageStep, e: rustix::io::Errno| -> io::Error {
            let errno = e.raw_os_error();
            let mut msg = [0u8; 5];
            msg[0] = step.code();
            msg[1..].copy_from_slice(&errno.to_ne_bytes());
            // SAFETY: `report` is the write end of the plan's pipe, open in this child; the
            // buffer is on the stack.
            #[allow(unsafe_code)]
            let _ = unsafe { libc::write(report, msg.as_ptr().cast(), msg.len()) };
            io::Error::from_raw_os_error(errno)
        };
        let flags = if self.maps.is_some() {
            rustix::thread::UnshareFlags::NEWUSER | rustix::thread::UnshareFlags::NEWNS
        } else {
            rustix::thread::UnshareFlags::NEWNS
        };
        // SAFETY: neither flag unshares the file descriptor table (CLONE_FILES), which is what
        // makes unshare unsafe; this child is single-threaded anyway.
        #[allow(unsafe_code)]
        unsafe { rustix::thread::unshare_unsafe(flags) }
            .map_err(|e| fail(StageStep::Unshare, e))?;
        if let Some((uid_map, gid_map)) = &self.maps {
            write_file(c"/proc/self/setgroups", b"deny").map_err(|e| fail(StageStep::Maps, e))?;
            write_file(c"/proc/self/uid_map", uid_map.as_bytes())
                .map_err(|e| fail(StageStep::Maps, e))?;
            write_file(c"/proc/self/gid_map", gid_map.as_bytes())
                .map_err(|e| fail(StageStep::Maps, e))?;
        }
        rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
        )
        .map_err(|e| fail(StageStep::Private, e))?;
        for (target, data) in &self.mounts {
            rustix::mount::mount(
                c"overlay",
                target.as_c_str(),
                c"overlay",
                MountFlags::NOSUID | MountFlags::NODEV,
                Some(data.as_c_str()),
            )
            .map_err(|e| fail(StageStep::Overlay, e))?;
        }
        Ok(())
    }

    /// After a failed spawn: the failure the child reported, if it reported one.
    pub(crate) fn reported(&self) -> Option<StageFailure> {
        let mut buf = [0u8; 5];
        match rustix::io::read(self.report_read.as_fd(), &mut buf) {
            Ok(5) => Some(StageFailure {
                step: StageStep::from_code(buf[0])?,
                errno: i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]),
            }),
            _ => None,
        }
    }
}

/// Whether the overlays this process mounts keep their metadata in `trusted.` extended
/// attributes (mounted as root, in the host's user namespace) rather than `user.` ones (mounted
/// with `userxattr` in a user namespace of the user's own).
fn mounts_trusted_xattrs() -> bool {
    rustix::process::geteuid().is_root()
}

/// The extended attribute by which the overlays this process mounts mark a directory of the upper
/// layer opaque (it replaces the directory below instead of merging with it): overlayfs's private
/// namespace of the mount, `trusted.overlay.opaque` as root, `user.overlay.opaque` otherwise.
///
/// Attack stopped: a command deleting the host's files by marking a directory "opaque" itself.
/// overlayfs refuses (or escapes, as `*.overlay.overlay.*`) a write of its own private
/// attributes through the merged view, so the command can never set this one; but it can set
/// the *other* namespace's (`setfattr -n user.overlay.opaque -v y dir` as root copies `dir` up
/// with an attribute the mount ignores). The command's view still shows everything below that
/// directory; a reader honouring both names would delete it all on the host. Only this name
/// says what the mount did.
pub fn opaque_xattr() -> &'static std::ffi::CStr {
    if mounts_trusted_xattrs() {
        c"trusted.overlay.opaque"
    } else {
        c"user.overlay.opaque"
    }
}

/// Opens `path` for writing, writes `bytes`, closes it. Async-signal-safe.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), rustix::io::Errno> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let n = rustix::io::write(&fd, bytes)?;
    if n == bytes.len() {
        Ok(())
    } else {
        Err(rustix::io::Errno::IO)
    }
}

/// A path as overlayfs's options take it: `\\`, `,` and `:` escaped with a backslash.
pub(crate) fn escape(path: &std::path::Path) -> io::Result<String> {
    let mut out = String::new();
    for c in path_str(path)?.chars() {
        if matches!(c, '\\' | ',' | ':') {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}

pub(crate) fn path_str(path: &std::path::Path) -> io::Result<&str> {
    path.to_str()
        .ok_or_else(|| io::Error::other("a staged path is not valid UTF-8"))
}

fn cstring(s: String) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::other("a path holds a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip() {
        for step in [
            StageStep::Unshare,
            StageStep::Maps,
            StageStep::Private,
            StageStep::Overlay,
        ] {
            assert_eq!(StageStep::from_code(step.code()), Some(step));
        }
        assert_eq!(StageStep::from_code(0), None);
    }

    #[test]
    fn layer_paths_are_escaped() {
        assert_eq!(
            escape(std::path::Path::new("/a,b/c:d\\e")).unwrap(),
            "/a\\,b/c\\:d\\\\e"
        );
    }

    #[test]
    fn failures_say_what_to_do() {
        let f = StageFailure {
            step: StageStep::Overlay,
            errno: libc::EINVAL,
        };
        assert!(f.to_string().contains("overlayfs"), "{f}");
    }
}
