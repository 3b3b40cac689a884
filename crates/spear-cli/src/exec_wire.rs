//! What `spear exec` and `spear serve` say to each other over the server's socket. Pure: the
//! encoding, the decoding and the comparison of identities, with no I/O.
//!
//! A frame is a 4-byte little-endian length and that many bytes; a frame's fields are byte
//! strings, each a 4-byte length and its bytes. The client sends one [`Request`] frame (with
//! the read end of its stdin relay beside it, `SCM_RIGHTS`, when [`Request::stdin`]); the server
//! answers one [`Verdict`] frame, and after [`Verdict::Accepted`] one [`Done`] frame when the
//! command has ended.
//!
//! Attack (and accident) stopped by the bounds: a peer announcing a frame of gigabytes, or
//! fields past the frame's end, makes the reader fail before it allocates, never read out of
//! bounds.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

/// The largest frame either side reads: a request carries the command line and the
/// environment, which the kernel caps at a few MiB for any program anyway.
pub const MAX_FRAME: usize = 16 << 20;

/// What tells this version of the protocol from any other: a peer that sends another is
/// declined before anything else is read from its frame.
const MAGIC: &[u8] = b"spear-exec/1";

/// What must be the same in the client and the server for a call to run in the server as it
/// would in the client's own process: the binary (so the same policy decides), the user, its
/// groups and umask, the namespaces, and the environment variables that the server reads of
/// its own process once (the cgroup backend's, the per-user runtime directory). Each entry is a
/// name and a value; [`Identity::differs`] names the first that is not the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity(pub Vec<(String, Vec<u8>)>);

/// The value of an entry that could not be read. It matches nothing, itself included: a check
/// that could not be made on either side is a difference, never a pass.
pub const UNKNOWN: &[u8] = b"\0unknown";

/// Entries compared by a relation of their own rather than for equality: the server judges
/// them apart (`cgroup`: the server's cgroup must lie within the client's, see
/// [`crate::served_cgroups`]).
pub const COMPARED_APART: &[&str] = &["cgroup"];

impl Identity {
    /// The name of the first entry whose value is not the same in `self` and `other` (or that
    /// only one of them has, or that either could not read: [`UNKNOWN`]), or `None` when they
    /// are the same. [`COMPARED_APART`] entries are not compared here.
    pub fn differs(&self, other: &Identity) -> Option<String> {
        let compared = |n: &String| !COMPARED_APART.contains(&n.as_str());
        for (name, value) in self.0.iter().filter(|(n, _)| compared(n)) {
            match other.0.iter().find(|(n, _)| n == name) {
                Some((_, v)) if v == value && v != UNKNOWN => {}
                _ => return Some(name.clone()),
            }
        }
        other
            .0
            .iter()
            .filter(|(n, _)| compared(n))
            .find(|(n, _)| !self.0.iter().any(|(m, _)| m == n))
            .map(|(n, _)| n.clone())
    }

    /// The value of the entry `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// One `spear exec` call, as the client sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The client's identity ([`Identity`]).
    pub identity: Identity,
    /// The words after `spear exec`, as the client was given them.
    pub args: Vec<OsString>,
    /// The client's environment, in order.
    pub env: Vec<(OsString, OsString)>,
    /// The client's current directory, or why it has none.
    pub cwd: Result<PathBuf, String>,
    /// Whether the read end of the client's stdin relay comes with the frame.
    pub stdin: bool,
}

/// The server's first answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The server runs the call; nothing of it ran in the client, and it must not be run again
    /// there whatever happens next.
    Accepted,
    /// The server does not run it, for this reason; nothing of it ran, and the client runs it
    /// in its own process.
    Declined(String),
}

/// The end of an accepted call: what `spear exec` prints and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// The exit status.
    pub code: i32,
    /// What goes to stdout.
    pub stdout: Vec<u8>,
    /// What goes to stderr.
    pub stderr: Vec<u8>,
}

/// A frame that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// It ends before a field does.
    #[error("the message is cut short")]
    Short,
    /// It is of another protocol or version.
    #[error("the message is not spear-exec/1")]
    Magic,
    /// A field holds what its type cannot.
    #[error("the message's field {0} is malformed")]
    Field(&'static str),
    /// It is longer than [`MAX_FRAME`].
    #[error("the message is larger than {MAX_FRAME} bytes")]
    TooLarge,
}

/// Frames a payload: its length, then it.
pub fn frame(payload: &[u8]) -> Result<Vec<u8>, WireError> {
    if payload.len() > MAX_FRAME {
        return Err(WireError::TooLarge);
    }
    let len = u32::try_from(payload.len()).map_err(|_| WireError::TooLarge)?;
    let mut out = Vec::with_capacity(4 + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// The payload length a frame's 4-byte header announces, refused over [`MAX_FRAME`].
pub fn frame_len(header: [u8; 4]) -> Result<usize, WireError> {
    let len = u32::from_le_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(WireError::TooLarge);
    }
    Ok(len)
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn bytes(&mut self, b: &[u8]) {
        // Lengths past u32 cannot occur: the whole frame is checked against MAX_FRAME.
        let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(b);
    }

    fn count(&mut self, n: usize) {
        self.bytes(n.to_string().as_bytes());
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let (head, rest) = self.0.split_at_checked(4).ok_or(WireError::Short)?;
        let mut len = [0u8; 4];
        len.copy_from_slice(head);
        let len = u32::from_le_bytes(len) as usize;
        let (field, rest) = rest.split_at_checked(len).ok_or(WireError::Short)?;
        self.0 = rest;
        Ok(field)
    }

    fn text(&mut self, name: &'static str) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.bytes()?).map_err(|_| WireError::Field(name))
    }

    /// A count, never more than the fields left could hold (each takes 4 bytes at least).
    fn count(&mut self, name: &'static str) -> Result<usize, WireError> {
        let n: usize = self
            .text(name)?
            .parse()
            .map_err(|_| WireError::Field(name))?;
        if n > self.0.len() / 4 {
            return Err(WireError::Short);
        }
        Ok(n)
    }

    fn os(&mut self) -> Result<OsString, WireError> {
        Ok(OsString::from_vec(self.bytes()?.to_vec()))
    }

    fn end(&self) -> Result<(), WireError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(WireError::Field("end"))
        }
    }
}

impl Request {
    /// The request's payload (not yet framed).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(MAGIC);
        w.count(self.identity.0.len());
        for (name, value) in &self.identity.0 {
            w.bytes(name.as_bytes());
            w.bytes(value);
        }
        w.count(self.args.len());
        for a in &self.args {
            w.bytes(a.as_bytes());
        }
        w.count(self.env.len());
        for (k, v) in &self.env {
            w.bytes(k.as_bytes());
            w.bytes(v.as_bytes());
        }
        match &self.cwd {
            Ok(dir) => {
                w.bytes(b"ok");
                w.bytes(dir.as_os_str().as_bytes());
            }
            Err(why) => {
                w.bytes(b"err");
                w.bytes(why.as_bytes());
            }
        }
        w.bytes(if self.stdin { b"1" } else { b"0" });
        w.0
    }

    /// Reads a request's payload.
    pub fn decode(payload: &[u8]) -> Result<Request, WireError> {
        let mut r = Reader(payload);
        if r.bytes()? != MAGIC {
            return Err(WireError::Magic);
        }
        let n = r.count("identity")?;
        let mut identity = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.text("identity")?.to_owned();
            identity.push((name, r.bytes()?.to_vec()));
        }
        let n = r.count("args")?;
        let mut args = Vec::with_capacity(n);
        for _ in 0..n {
            args.push(r.os()?);
        }
        let n = r.count("env")?;
        let mut env = Vec::with_capacity(n);
        for _ in 0..n {
            let k = r.os()?;
            env.push((k, r.os()?));
        }
        let cwd = match r.bytes()? {
            b"ok" => Ok(PathBuf::from(r.os()?)),
            b"err" => Err(r.text("cwd")?.to_owned()),
            _ => return Err(WireError::Field("cwd")),
        };
        let stdin = match r.bytes()? {
            b"1" => true,
            b"0" => false,
            _ => return Err(WireError::Field("stdin")),
        };
        r.end()?;
        Ok(Request {
            identity: Identity(identity),
            args,
            env,
            cwd,
            stdin,
        })
    }
}

impl Verdict {
    /// The verdict's payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        match self {
            Verdict::Accepted => w.bytes(b"accepted"),
            Verdict::Declined(why) => {
                w.bytes(b"declined");
                w.bytes(why.as_bytes());
            }
        }
        w.0
    }

    /// Reads a verdict's payload.
    pub fn decode(payload: &[u8]) -> Result<Verdict, WireError> {
        let mut r = Reader(payload);
        let verdict = match r.bytes()? {
            b"accepted" => Verdict::Accepted,
            b"declined" => Verdict::Declined(r.text("reason")?.to_owned()),
            _ => return Err(WireError::Field("verdict")),
        };
        r.end()?;
        Ok(verdict)
    }
}

impl Done {
    /// The end's payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(self.code.to_string().as_bytes());
        w.bytes(&self.stdout);
        w.bytes(&self.stderr);
        w.0
    }

    /// Reads an end's payload.
    pub fn decode(payload: &[u8]) -> Result<Done, WireError> {
        let mut r = Reader(payload);
        let code = r
            .text("code")?
            .parse()
            .map_err(|_| WireError::Field("code"))?;
        let stdout = r.bytes()?.to_vec();
        let stderr = r.bytes()?.to_vec();
        r.end()?;
        Ok(Done {
            code,
            stdout,
            stderr,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn request() -> Request {
        Request {
            identity: Identity(vec![
                ("exe".into(), b"1:2:3".to_vec()),
                ("uid".into(), b"1000".to_vec()),
            ]),
            args: vec!["--auto".into(), "--".into(), "/bin/true".into()],
            env: vec![
                ("HOME".into(), "/home/u".into()),
                ("X".into(), OsString::from_vec(vec![0xff, b'=', 0])),
            ],
            cwd: Ok(PathBuf::from("/work")),
            stdin: true,
        }
    }

    #[test]
    fn every_message_reads_back_as_it_was_written() {
        let r = request();
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        let gone = Request {
            cwd: Err("deleted".into()),
            stdin: false,
            ..request()
        };
        assert_eq!(Request::decode(&gone.encode()).unwrap(), gone);
        for v in [Verdict::Accepted, Verdict::Declined("busy".into())] {
            assert_eq!(Verdict::decode(&v.encode()).unwrap(), v);
        }
        let d = Done {
            code: -1,
            stdout: vec![0, 1, 2],
            stderr: b"spear: denied\n".to_vec(),
        };
        assert_eq!(Done::decode(&d.encode()).unwrap(), d);
    }

    #[test]
    fn a_message_cut_anywhere_or_with_bytes_after_it_is_refused() {
        let bytes = request().encode();
        for cut in 0..bytes.len() {
            assert!(Request::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Request::decode(&longer), Err(WireError::Field("end")));
    }

    #[test]
    fn another_protocol_is_refused_before_its_fields_are_read() {
        let mut w = Writer::default();
        w.bytes(b"spear-exec/2");
        assert_eq!(Request::decode(&w.0), Err(WireError::Magic));
    }

    #[test]
    fn a_count_larger_than_the_message_is_refused_before_allocating() {
        let mut w = Writer::default();
        w.bytes(MAGIC);
        w.bytes(b"4000000000");
        assert_eq!(Request::decode(&w.0), Err(WireError::Short));
    }

    #[test]
    fn frames_over_the_bound_are_refused_on_both_sides() {
        assert_eq!(frame_len(u32::MAX.to_le_bytes()), Err(WireError::TooLarge));
        let max = u32::try_from(MAX_FRAME).unwrap();
        assert_eq!(frame_len(max.to_le_bytes()), Ok(MAX_FRAME));
        assert!(frame(&vec![0; MAX_FRAME + 1]).is_err());
        assert_eq!(frame(b"ab").unwrap(), vec![2, 0, 0, 0, b'a', b'b']);
    }

    #[test]
    fn identities_name_their_first_difference() {
        let a = Identity(vec![
            ("exe".into(), b"1".to_vec()),
            ("uid".into(), b"0".to_vec()),
        ]);
        assert_eq!(a.differs(&a.clone()), None);
        let mut b = a.clone();
        b.0[1].1 = b"1000".to_vec();
        assert_eq!(a.differs(&b).as_deref(), Some("uid"));
        let mut c = a.clone();
        c.0.push(("umask".into(), b"22".to_vec()));
        assert_eq!(a.differs(&c).as_deref(), Some("umask"));
        assert_eq!(c.differs(&a).as_deref(), Some("umask"));
        // An entry neither side could read is a difference, not a match.
        let mut d = a.clone();
        d.0[0].1 = UNKNOWN.to_vec();
        assert_eq!(d.differs(&d.clone()).as_deref(), Some("exe"));
    }

    proptest! {
        #[test]
        fn no_input_makes_the_readers_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = Request::decode(&bytes);
            let _ = Verdict::decode(&bytes);
            let _ = Done::decode(&bytes);
        }
    }
}
