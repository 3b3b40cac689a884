//! Owner-only directories and files outside the workspace, where the harness keeps its stores.
//!
//! A store directory is made with mode 0700 (missing parents too). Before use it must be a real
//! directory, not a symbolic link, owned by the effective user; its mode is then set to 0700
//! through the open directory, never by name. Files are written under a new temporary name
//! (`O_CREAT | O_EXCL`, 0600), synced and renamed into place, and opened for reading with
//! `O_NOFOLLOW | O_NONBLOCK` and checked to be regular files.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use rustix::fs::{CWD, FileType, Mode, OFlags, fchmod, fstat, openat};
use rustix::io::Errno;

/// Mode of every store directory.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Mode of every stored file.
pub(crate) const FILE_MODE: u32 = 0o600;

/// How many temporary names a write tries before giving up.
const TEMP_ATTEMPTS: usize = 16;

/// Makes `path` (and missing parents) with mode 0700 if needed and checks it is ours; returns why
/// it cannot be used otherwise.
///
/// Attack: a store directory that is a link to (or is) a directory another user controls: what
/// the harness keeps there could be read, or swapped under it. A link is refused, never followed;
/// a directory owned by another user is refused; a looser mode is tightened to 0700.
pub(crate) fn ensure_private_dir(path: &Path) -> Result<(), String> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| format!("it cannot be created ({e})"))?;
    let fd = openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => "it is a symbolic link".to_owned(),
        Ok(m) if !m.is_dir() => "it is not a directory".to_owned(),
        _ => format!("it cannot be opened ({})", io::Error::from(e)),
    })?;
    let st = fstat(&fd).map_err(|e| format!("it cannot be examined ({})", io::Error::from(e)))?;
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me {
        return Err(format!(
            "it belongs to uid {}, not to this user (uid {me})",
            st.st_uid
        ));
    }
    if st.st_mode & 0o7777 != DIR_MODE {
        fchmod(&fd, Mode::from_raw_mode(DIR_MODE))
            .map_err(|e| format!("its mode cannot be set to 0700 ({})", io::Error::from(e)))?;
    }
    Ok(())
}

/// Writes `bytes` to `dir/name` (mode 0600) as a whole: a new temporary file in `dir`, renamed over
/// the name, so a reader sees the old content or the new one, never a mix. With `sync`, the data
/// and the rename are synced to disk first; content-addressed blobs skip that, since every read
/// checks a blob against its hash and a torn one fails closed.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> io::Result<()> {
    let (temp, mut file) = create_temp(dir)?;
    let written = file
        .set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| if sync { file.sync_all() } else { Ok(()) })
        .and_then(|()| std::fs::rename(&temp, dir.join(name)));
    if written.is_err() {
        // Best effort: leave no temporary file behind; the original error is what matters.
        let _ = std::fs::remove_file(&temp);
        return written;
    }
    // Best effort durability of the rename (when asked); the data was synced before it.
    if sync && let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new file in `dir` under a random temporary name. `create_new` is `O_CREAT | O_EXCL`: an
/// existing name, a planted link included, is never opened.
fn create_temp(dir: &Path) -> io::Result<(std::path::PathBuf, File)> {
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for _ in 0..TEMP_ATTEMPTS {
        let mut random = [0u8; 8];
        rustix::rand::getrandom(&mut random, rustix::rand::GetRandomFlags::empty())?;
        let path = dir.join(format!(".tmp-{:016x}", u64::from_le_bytes(random)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Opens the regular file at `path` for reading, and its size; `None` when nothing is there.
///
/// Attack: a stored file swapped for a link (to `~/.ssh/id_rsa`, say) or a fifo: a link is
/// refused (`O_NOFOLLOW`), a fifo does not block the open (`O_NONBLOCK`), and anything but a
/// regular file is refused. Both are [`io::ErrorKind::InvalidData`].
pub(crate) fn open_regular(path: &Path) -> io::Result<Option<(File, u64)>> {
    let fd = match openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a symbolic link where a stored file should be",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let st = fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "something other than a regular file where a stored file should be",
        ));
    }
    Ok(Some((
        File::from(fd),
        u64::try_from(st.st_size).unwrap_or(0),
    )))
}
