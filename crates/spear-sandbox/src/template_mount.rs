//! A copy-on-write view of a template directory, mounted on the host: `merged` shows the template
//! (the read-only lower layer) with a session's writes kept in `upper`; the template is never
//! written. It is mounted in spear's own mount namespace, not a command's, because spear's file
//! tools read a workspace from spear's process (openat2 beneath its root) and its sandboxes bind
//! it like any root.
//!
//! Which mechanism, and why:
//! - As root (effective uid 0): kernel overlayfs through mount(2) (`lowerdir` the template,
//!   `upperdir`/`workdir` the session's), `nosuid,nodev`, then made a private mount. It is ready
//!   at once (nothing is copied: a file is copied up when it is first written) and costs disk only
//!   for what changes. Redirects, the index and metacopy are off, so the upper layer holds only
//!   whole files, whiteouts and opaque directories; `volatile`, so mounting does not wait for the
//!   writeback of everything dirty on the upper filesystem (a session's `fsync` is then no sync
//!   of the layer either; the layer is thrown away or copied out when the session ends). Layer
//!   paths are escaped as the stage's overlays escape them (`stage::escape`).
//! - As a user, or where the kernel refuses (a container without `CAP_SYS_ADMIN`):
//!   `fuse-overlayfs` (Debian package `fuse-overlayfs`), the same layering in a FUSE daemon the
//!   user may mount; unmounted with `fusermount3 -u` (or `fusermount -u`). FUSE mounts of a user
//!   are `nosuid,nodev` by construction, and `-o nosuid,nodev` asks it where root mounts one
//!   (root's FUSE mount is `allow_other`, with `default_permissions`: the mount point, the upper
//!   layer's root, is mode 0700, so no other user gets in).
//!   It needs `/dev/fuse` readable and writable by the user (mode 0666, as Debian's udev rule
//!   makes it).
//! - Neither: [`CowMountError::Unavailable`], naming what was tried and what to install. Never a
//!   silent full copy: a copy of a 100 MB tree is not ready at once, reflinks do not exist on
//!   ext4, and a farm of hard links shares inodes with the template, so a `chmod` or an in-place
//!   write in the session would change the template.
//!
//! Unmounting is sure: a plain unmount first, a lazy detach (`MNT_DETACH`, `fusermount3 -uz`) as
//! the last resort, and then the mount table is read again to check ([`CowMount::unmount`]). A
//! crash leaves no mount forever when the caller keeps the layers in a directory held by
//! [`crate::hold_made_dir`]: the next sweep takes the free directory, unmounts what is mounted
//! there ([`unmount_stale`]) and only then removes it (spear-runtime's rollout workspaces).
//!
//! Programs are looked for only in the system's directories ([`SYSTEM_BIN_DIRS`]), never in a
//! `PATH` a workspace could have shaped, and run with an empty environment.

use std::ffi::OsStr;
use std::io::{self, Read, Seek};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

use crate::stage::escape;

/// Where [`CowMount::mount`] looks for `fuse-overlayfs`, `fusermount3` and `fusermount`, in order.
pub const SYSTEM_BIN_DIRS: [&str; 5] = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"];

/// How many mounts stacked on one mount point [`unmount_stale`] takes off before giving up.
const MAX_STACKED: usize = 8;

/// The mechanism behind a [`CowMount`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CowBackend {
    /// The kernel's overlayfs, mounted by root.
    KernelOverlay,
    /// The `fuse-overlayfs` daemon, mounted by the user through FUSE.
    FuseOverlayfs,
}

impl CowBackend {
    /// Its name, as an operator would look for it.
    pub fn name(self) -> &'static str {
        match self {
            CowBackend::KernelOverlay => "kernel overlayfs",
            CowBackend::FuseOverlayfs => "fuse-overlayfs",
        }
    }
}

/// Why a copy-on-write view could not be mounted or unmounted.
#[derive(Debug, thiserror::Error)]
pub enum CowMountError {
    /// A layer is not a directory, or its path cannot be written in the mount's options.
    #[error("`{}` cannot be a layer of a copy-on-write mount: {reason}", path.display())]
    Layer {
        /// The layer as given.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// No mechanism mounted it.
    #[error("{}", describe_unavailable(attempts, *is_root))]
    Unavailable {
        /// Each mechanism tried and why it failed.
        attempts: Vec<(CowBackend, String)>,
        /// Whether this process is root (what it could have used).
        is_root: bool,
    },
    /// Something is still mounted there after a plain and a lazy unmount.
    #[error(
        "the copy-on-write mount at `{}` could not be unmounted, even lazily ({reason}); unmount it \
         by hand (`umount -l PATH` as root, `fusermount3 -uz PATH` as its user) and remove its \
         directory",
        path.display()
    )]
    Unmount {
        /// The mount point.
        path: PathBuf,
        /// What the last attempt said.
        reason: String,
    },
}

fn describe_unavailable(attempts: &[(CowBackend, String)], is_root: bool) -> String {
    let tried = if attempts.is_empty() {
        "nothing could be tried".to_owned()
    } else {
        attempts
            .iter()
            .map(|(b, why)| format!("{}: {why}", b.name()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let fix = if is_root {
        "the kernel must allow overlayfs with the upper layer's filesystem (ext4, xfs, btrfs, or \
         tmpfs on Linux 6.6 or later), or install the Debian package `fuse-overlayfs`"
    } else {
        "install the Debian package `fuse-overlayfs` (scripts/setup.sh does) and make /dev/fuse \
         readable and writable by this user (mode 0666, as udev sets it), or run spear as root \
         for kernel overlayfs"
    };
    format!("no copy-on-write mount of the template works here ({tried}): {fix}")
}

/// The mechanisms to try, in order, for a process that is root or not: root tries the kernel's
/// overlayfs first (no daemon, no extra package), then `fuse-overlayfs`; a user only
/// `fuse-overlayfs` (the kernel refuses overlayfs on the host to a user).
pub fn attempts(is_root: bool) -> &'static [CowBackend] {
    if is_root {
        &[CowBackend::KernelOverlay, CowBackend::FuseOverlayfs]
    } else {
        &[CowBackend::FuseOverlayfs]
    }
}

/// A mounted copy-on-write view; unmounted (best effort, lazily at worst) when dropped.
#[derive(Debug)]
pub struct CowMount {
    merged: PathBuf,
    backend: CowBackend,
    mounted: bool,
}

impl CowMount {
    /// Mounts at `merged` the view of `lower` (the template, only ever read) with writes kept in
    /// `upper`, using `work` as the mechanism's scratch. All four must be directories; `upper`,
    /// `work` and `merged` empty and on one filesystem (`upper` and `work`). Tries the
    /// mechanisms of [`attempts`] in order; returns only once `merged` is a mount point.
    pub fn mount(
        lower: &Path,
        upper: &Path,
        work: &Path,
        merged: &Path,
    ) -> Result<CowMount, CowMountError> {
        for dir in [lower, upper, work, merged] {
            // Absolute, so that no path reads as an option to the programs it is passed to.
            if !dir.is_absolute() {
                return Err(layer(dir, "not an absolute path"));
            }
            match std::fs::symlink_metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(layer(dir, "not a directory (a link is not followed)")),
                Err(e) => return Err(layer(dir, &e.to_string())),
            }
        }
        let is_root = rustix::process::geteuid().is_root();
        let mut tried = Vec::new();
        for &backend in attempts(is_root) {
            let result = match backend {
                CowBackend::KernelOverlay => mount_kernel(lower, upper, work, merged),
                CowBackend::FuseOverlayfs => mount_fuse(lower, upper, work, merged),
            };
            match result {
                Ok(()) => {
                    tracing::debug!(merged = %merged.display(), backend = backend.name(), "template mounted");
                    return Ok(CowMount {
                        merged: merged.to_path_buf(),
                        backend,
                        mounted: true,
                    });
                }
                Err(Attempt::Layer(e)) => return Err(e),
                Err(Attempt::Failed(why)) => tried.push((backend, why)),
            }
        }
        Err(CowMountError::Unavailable {
            attempts: tried,
            is_root,
        })
    }

    /// The mount point: the session's view of the template.
    pub fn merged(&self) -> &Path {
        &self.merged
    }

    /// Which mechanism mounted it.
    pub fn backend(&self) -> CowBackend {
        self.backend
    }

    /// Unmounts it; once this returns `Ok`, nothing is mounted at [`CowMount::merged`] (checked
    /// in the mount table), and the layers may be read or removed.
    pub fn unmount(mut self) -> Result<(), CowMountError> {
        self.mounted = false;
        unmount_stale(&self.merged)
    }
}

impl Drop for CowMount {
    fn drop(&mut self) {
        if self.mounted
            && let Err(e) = unmount_stale(&self.merged)
        {
            tracing::warn!("{e}");
        }
    }
}

/// Unmounts whatever is mounted at `merged` (nothing is fine): a plain unmount, then a lazy one,
/// as root by umount2(2), as a user by `fusermount3 -u`/`-uz` (a user can take off only their
/// own FUSE mounts). For sweeping the views of a process that is gone. `Ok` means the mount
/// table no longer lists `merged`.
pub fn unmount_stale(merged: &Path) -> Result<(), CowMountError> {
    if !merged.is_absolute() {
        return Err(layer(merged, "not an absolute path"));
    }
    let is_root = rustix::process::geteuid().is_root();
    let mut reason = String::new();
    for _ in 0..MAX_STACKED {
        if !is_mount_point(merged) {
            return Ok(());
        }
        reason = match unmount_once(merged, is_root) {
            Ok(()) => continue,
            Err(e) => e,
        };
    }
    if is_mount_point(merged) {
        Err(CowMountError::Unmount {
            path: merged.to_path_buf(),
            reason,
        })
    } else {
        Ok(())
    }
}

/// One unmount of the top mount at `merged`: plain, else lazy.
fn unmount_once(merged: &Path, is_root: bool) -> Result<(), String> {
    if is_root {
        let plain = rustix::mount::unmount(merged, UnmountFlags::NOFOLLOW);
        if plain.is_ok() {
            return Ok(());
        }
        rustix::mount::unmount(merged, UnmountFlags::NOFOLLOW | UnmountFlags::DETACH)
            .map_err(|e| format!("umount2: {e}"))
    } else {
        let Some(tool) = find_tool(&["fusermount3", "fusermount"]) else {
            return Err("neither fusermount3 nor fusermount is installed".to_owned());
        };
        if run_quietly(Command::new(&tool).arg("-u").arg(merged)).is_ok() {
            return Ok(());
        }
        run_quietly(Command::new(&tool).arg("-u").arg("-z").arg(merged))
    }
}

/// Whether `path` (as written, absolute and without links) is a mount point in this process's
/// mount namespace (its line in `/proc/self/mountinfo`).
pub fn is_mount_point(path: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|info| mount_points(&info).iter().any(|p| p == path))
}

/// The mount points listed in `mountinfo` (the format of `/proc/self/mountinfo`: the fifth
/// field, with its octal escapes of space, tab, newline and backslash undone).
fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(OsStr::from_bytes(&unescape_octal(field.as_bytes()))))
        .collect()
}

/// `\NNN` (three octal digits) to the byte it names; everything else as it is.
fn unescape_octal(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\'
            && let Some(d) = field.get(i + 1..i + 4)
            && d.iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let value = d.iter().fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(field[i]);
        i += 1;
    }
    out
}

/// How one mechanism's attempt ended.
enum Attempt {
    /// A layer's path cannot be used by any mechanism: stop.
    Layer(CowMountError),
    /// This mechanism failed, for this reason; try the next.
    Failed(String),
}

fn layer(path: &Path, reason: &str) -> CowMountError {
    CowMountError::Layer {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    }
}

/// The kernel overlay's options: layers escaped, upper layer of whole files only, no sync on
/// mount.
fn kernel_options(lower: &Path, upper: &Path, work: &Path) -> io::Result<String> {
    Ok(format!(
        "lowerdir={},upperdir={},workdir={},redirect_dir=off,index=off,metacopy=off,volatile",
        escape(lower)?,
        escape(upper)?,
        escape(work)?
    ))
}

/// fuse-overlayfs's options. libfuse undoes a backslash before any character, and
/// fuse-overlayfs then splits `lowerdir` on `:` with no escape of its own: a lower layer whose
/// path holds `:` cannot be named (`None`).
fn fuse_options(lower: &Path, upper: &Path, work: &Path) -> io::Result<Option<String>> {
    if lower.as_os_str().as_bytes().contains(&b':') {
        return Ok(None);
    }
    Ok(Some(format!(
        "lowerdir={},upperdir={},workdir={},nosuid,nodev",
        escape(lower)?,
        escape(upper)?,
        escape(work)?
    )))
}

fn mount_kernel(lower: &Path, upper: &Path, work: &Path, merged: &Path) -> Result<(), Attempt> {
    let data = kernel_options(lower, upper, work)
        .map_err(|e| Attempt::Layer(layer(lower, &e.to_string())))?;
    let data = std::ffi::CString::new(data)
        .map_err(|_| Attempt::Layer(layer(lower, "a layer's path holds a NUL byte")))?;
    rustix::mount::mount(
        c"overlay",
        merged,
        c"overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        Some(data.as_c_str()),
    )
    .map_err(|e| Attempt::Failed(format!("mount(2): {e}")))?;
    // Attack stopped (and accident): the session's view propagating through a shared peer group
    // into other mount namespaces (systemd makes `/` shared), where no sweep of ours unmounts it.
    if let Err(e) = rustix::mount::mount_change(merged, MountPropagationFlags::PRIVATE) {
        let _ = rustix::mount::unmount(merged, UnmountFlags::DETACH | UnmountFlags::NOFOLLOW);
        return Err(Attempt::Failed(format!("making the mount private: {e}")));
    }
    Ok(())
}

fn mount_fuse(lower: &Path, upper: &Path, work: &Path, merged: &Path) -> Result<(), Attempt> {
    let Some(tool) = find_tool(&["fuse-overlayfs"]) else {
        return Err(Attempt::Failed(
            "not installed (Debian package `fuse-overlayfs`)".to_owned(),
        ));
    };
    let options = match fuse_options(lower, upper, work) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return Err(Attempt::Failed(format!(
                "the template's path `{}` holds `:`, which fuse-overlayfs cannot take",
                lower.display()
            )));
        }
        Err(e) => return Err(Attempt::Layer(layer(lower, &e.to_string()))),
    };
    run_quietly(Command::new(tool).arg("-o").arg(options).arg(merged)).map_err(Attempt::Failed)?;
    if is_mount_point(merged) {
        Ok(())
    } else {
        Err(Attempt::Failed(
            "it exited without a mount at the mount point".to_owned(),
        ))
    }
}

/// The first of `names` found as an executable file in [`SYSTEM_BIN_DIRS`].
fn find_tool(names: &[&str]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    names.iter().find_map(|name| {
        SYSTEM_BIN_DIRS.iter().find_map(|dir| {
            let path = Path::new(dir).join(name);
            std::fs::metadata(&path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .then_some(path)
        })
    })
}

/// Runs `command` with an empty environment (but a system `PATH`), no input, and its error output
/// kept in an anonymous file (a pipe would stay open in a daemon it forks); `Err` holds what it
/// said when it did not exit 0.
fn run_quietly(command: &mut Command) -> Result<(), String> {
    let err = rustix::fs::memfd_create(c"spear-cow-stderr", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| format!("memfd_create: {e}"))?;
    let mut file = std::fs::File::from(err);
    let stderr = file.try_clone().map_err(|e| e.to_string())?;
    let status = command
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr))
        .status()
        .map_err(|e| format!("could not run it: {e}"))?;
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    let _ = file.rewind();
    let _ = file.take(4096).read_to_string(&mut said);
    Err(format!("{status}: {}", said.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_tries_the_kernel_first_a_user_only_fuse() {
        for (is_root, want) in [
            (
                true,
                &[CowBackend::KernelOverlay, CowBackend::FuseOverlayfs][..],
            ),
            (false, &[CowBackend::FuseOverlayfs][..]),
        ] {
            assert_eq!(attempts(is_root), want, "root: {is_root}");
        }
    }

    #[test]
    fn mount_points_are_read_with_their_escapes_undone() {
        let info = "22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                    45 22 0:40 / /tmp/a\\040b/m rw,nosuid - fuse.fuse-overlayfs fuse-overlayfs rw\n\
                    46 22 0:41 / /x\\134y\\011z rw - overlay overlay rw\n\
                    47 22 0:42 / /bad\\9 rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mount_points(info),
            [
                PathBuf::from("/"),
                PathBuf::from("/tmp/a b/m"),
                PathBuf::from("/x\\y\tz"),
                PathBuf::from("/bad\\9"),
            ]
        );
    }

    #[test]
    fn options_escape_layers_and_fuse_refuses_a_colon() {
        let (u, w) = (Path::new("/u,1"), Path::new("/w"));
        assert_eq!(
            kernel_options(Path::new("/t:x"), u, w).unwrap(),
            "lowerdir=/t\\:x,upperdir=/u\\,1,workdir=/w,redirect_dir=off,index=off,metacopy=off,volatile"
        );
        assert_eq!(fuse_options(Path::new("/t:x"), u, w).unwrap(), None);
        assert_eq!(
            fuse_options(Path::new("/t"), u, w).unwrap().unwrap(),
            "lowerdir=/t,upperdir=/u\\,1,workdir=/w,nosuid,nodev"
        );
    }

    #[test]
    fn unavailable_says_what_to_install() {
        for is_root in [true, false] {
            let e = CowMountError::Unavailable {
                attempts: vec![(CowBackend::FuseOverlayfs, "not installed".to_owned())],
                is_root,
            };
            let msg = e.to_string();
            assert!(
                msg.contains("fuse-overlayfs: not installed") && msg.contains("`fuse-overlayfs`"),
                "{msg}"
            );
        }
    }
}
