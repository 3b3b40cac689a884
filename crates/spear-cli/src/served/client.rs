//! The client side: `spear exec` handing its call to the user's `spear serve`.

use std::io::{IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;

use spear_runtime::HostSnapshot;

use super::wire::{self, Done, Request, Verdict};

/// Runs this process's `spear exec` call in the user's server, and returns its exit status
/// once it has printed what the call printed; `None` when there is no server, or it declined
/// the call, or it could not be asked: nothing of the call ran, and the caller runs it itself.
/// `stdin` is the read end of this process's stdin relay, passed to the server with the call.
pub fn call(host: &HostSnapshot, stdin: Option<&OwnedFd>) -> Option<i32> {
    let state = crate::state_home::state_dir(host).ok()?;
    let path = super::socket_path(&state);
    let mut stream = UnixStream::connect(&path).ok()?;
    let args = exec_words()?;
    let identity = super::process_identity::of_process(&|name| {
        host.var_os(name).map(|v| v.as_bytes().to_vec())
    });
    let request = Request {
        identity,
        args,
        env: host.env().to_vec(),
        cwd: host
            .cwd()
            .map(std::path::Path::to_path_buf)
            .map_err(str::to_owned),
        stdin: stdin.is_some(),
    };
    let bytes = wire::frame(&request.encode()).ok()?;
    if let Err(e) = send(&stream, &bytes, stdin) {
        tracing::debug!("spear serve at {} not asked: {e}", path.display());
        return None;
    }
    match read_frame(&mut stream).map(|p| Verdict::decode(&p)) {
        Ok(Ok(Verdict::Accepted)) => {}
        Ok(Ok(Verdict::Declined(why))) => {
            tracing::debug!("spear serve declined the call ({why}); running it here");
            return None;
        }
        // No verdict: the server did not accept, so nothing ran there.
        Ok(Err(e)) => {
            tracing::debug!("spear serve's answer is unreadable ({e}); running it here");
            return None;
        }
        Err(e) => {
            tracing::debug!("spear serve did not answer ({e}); running it here");
            return None;
        }
    }
    // Accepted: from here the call is the server's, and it is never run again here.
    let done = read_frame(&mut stream)
        .map_err(|e| e.to_string())
        .and_then(|p| Done::decode(&p).map_err(|e| e.to_string()));
    match done {
        Ok(done) => {
            let _ = std::io::stdout().lock().write_all(&done.stdout);
            let _ = std::io::stdout().flush();
            let _ = std::io::stderr().lock().write_all(&done.stderr);
            Some(done.code)
        }
        Err(e) => {
            eprintln!(
                "spear: the spear serve process stopped while it ran the command ({e}): the command may have run in part, and its processes were killed with it; see that process's log"
            );
            Some(spear_core::exit_code::HARNESS_FAILURE)
        }
    }
}

/// The words after `spear exec` on this process's command line; `None` when it is not shaped
/// `spear exec ...` (then the call is not handed over).
fn exec_words() -> Option<Vec<std::ffi::OsString>> {
    let mut words = std::env::args_os().skip(1);
    (words.next()? == "exec").then(|| words.collect())
}

/// Sends `bytes`, with `fd` beside its first byte.
fn send(stream: &UnixStream, bytes: &[u8], fd: Option<&OwnedFd>) -> std::io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd.as_fd()];
        if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(std::io::Error::other("no room for the stdin descriptor"));
        }
    }
    let sent = sendmsg(
        stream,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    let mut stream = stream;
    stream.write_all(bytes.get(sent..).unwrap_or_default())
}

/// Reads one frame's payload.
pub fn read_frame(stream: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header)?;
    let len = wire::frame_len(header).map_err(std::io::Error::other)?;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload)?;
    Ok(payload)
}
