//! Background jobs: commands that run on while the session goes on.
//!
//! A job is a command run by the same [`CommandRunner`] as any other, so it is confined and
//! limited like any other (namespaces, seccomp, rlimits, its own cgroup); it only has no timeout
//! of its own. Each job is supervised by a thread of its own that lives exactly as long as the
//! job: bubblewrap's `--die-with-parent` and slirp4netns's parent-death signal are tied to the
//! thread that spawned them, so the spawning thread must outlive the tree.
//!
//! What a job prints goes to its [`JobOutput`] as it is read: a bounded buffer of what nobody has
//! read yet. [`Job::read`] takes it, so no byte is returned twice; when more arrives than the
//! buffer holds, the oldest unread bytes are dropped and counted. A job is stopped by cancelling
//! it ([`Job::kill`]): its whole tree is killed through its cgroup and pidfd. [`Jobs`] belongs to a
//! session, and dropping it kills every job still running: nothing outlives the session.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use spear_sandbox::{CancelToken, OutputTee};

use crate::{CommandRequest, CommandRunner, PreparedProcess, RunReport};

/// Unread bytes kept per stream of a job.
pub const DEFAULT_JOB_BUFFER: usize = 1 << 20;

/// Jobs one session may have at once (running or finished and not yet collected).
pub const DEFAULT_MAX_JOBS: usize = 16;

/// Why a job could not be started or found.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// No job of this session has this id.
    #[error(
        "there is no job `{0}` in this session; start one with terminal {{\"background\": true}}"
    )]
    NotFound(String),
    /// Too many jobs at once.
    #[error(
        "this session already has {0} jobs; collect finished ones with terminal_output or stop one with terminal_kill"
    )]
    TooMany(usize),
    /// The job's thread or its cancellation could not be made.
    #[error("the job could not be started: {0}")]
    Start(std::io::Error),
}

/// What a job printed that has not been read yet, per stream, bounded.
#[derive(Debug)]
pub struct JobOutput {
    cap: usize,
    unread: Mutex<Unread>,
}

#[derive(Debug, Default)]
struct Unread {
    stdout: VecDeque<u8>,
    stderr: VecDeque<u8>,
    dropped_stdout: u64,
    dropped_stderr: u64,
}

/// What [`Job::read`] took from a job's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taken {
    /// Stdout since the last read (lossy UTF-8; a character cut by the read waits for the next).
    pub stdout: String,
    /// Stderr since the last read.
    pub stderr: String,
    /// Stdout bytes dropped unread since the last read (the buffer was full).
    pub dropped_stdout: u64,
    /// Stderr bytes dropped unread since the last read.
    pub dropped_stderr: u64,
}

impl JobOutput {
    /// A buffer keeping at most `cap` unread bytes per stream.
    pub fn new(cap: usize) -> Self {
        JobOutput {
            cap: cap.max(16),
            unread: Mutex::new(Unread::default()),
        }
    }

    fn push(&self, bytes: &[u8], stdout: bool) {
        let mut u = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        let cap = self.cap;
        let (buf, dropped) = if stdout {
            let Unread {
                stdout,
                dropped_stdout,
                ..
            } = &mut *u;
            (stdout, dropped_stdout)
        } else {
            let Unread {
                stderr,
                dropped_stderr,
                ..
            } = &mut *u;
            (stderr, dropped_stderr)
        };
        buf.extend(bytes);
        let over = buf.len().saturating_sub(cap);
        if over > 0 {
            buf.drain(..over);
            *dropped += over as u64;
        }
    }

    /// Takes what was not read yet. With `all`, everything; otherwise a character whose bytes have
    /// not all arrived stays for the next read.
    fn take(&self, all: bool) -> Taken {
        let mut u = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        let text = |buf: &mut VecDeque<u8>| {
            let bytes: Vec<u8> = buf.drain(..).collect();
            let keep_from = if all {
                bytes.len()
            } else {
                complete_prefix(&bytes)
            };
            buf.extend(&bytes[keep_from..]);
            String::from_utf8_lossy(&bytes[..keep_from]).into_owned()
        };
        let stdout = text(&mut u.stdout);
        let stderr = text(&mut u.stderr);
        Taken {
            stdout,
            stderr,
            dropped_stdout: std::mem::take(&mut u.dropped_stdout),
            dropped_stderr: std::mem::take(&mut u.dropped_stderr),
        }
    }
}

/// The length of `bytes` without a UTF-8 sequence cut at its end (at most 3 bytes held back).
fn complete_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            // A continuation byte: look further back for the sequence's first byte.
            continue;
        }
        let needs = match b {
            0xF0..=0xF4 => 4,
            0xE0..=0xEF => 3,
            0xC2..=0xDF => 2,
            // ASCII, or a byte no UTF-8 sequence starts with: nothing to wait for.
            _ => 1,
        };
        return if needs > back { len - back } else { len };
    }
    len
}

impl OutputTee for JobOutput {
    fn stdout(&self, bytes: &[u8]) {
        self.push(bytes, true);
    }

    fn stderr(&self, bytes: &[u8]) {
        self.push(bytes, false);
    }
}

/// One background job.
#[derive(Debug)]
pub struct Job {
    id: String,
    executable: String,
    cancel: CancelToken,
    output: Arc<JobOutput>,
    done: Arc<Mutex<Option<RunReport>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Whether the job may write to the workspace (its writes are staged until its end is read).
    writable: bool,
    /// The caller's mark at the start (the router's call number).
    mark: u64,
    /// Held while the job's end is reported, so that it is reported once.
    finishing: Mutex<()>,
    /// Host-run configuration a person approved when the job was started: its commit lets
    /// these writes through without asking again.
    approved: Mutex<Vec<spear_core::HostConfigWrite>>,
}

/// What [`Job::read`] says about a job.
#[derive(Debug, Clone)]
pub struct JobRead {
    /// Output since the last read.
    pub output: Taken,
    /// How the job ended, once it has (and its output was drained); `None` while it runs.
    pub finished: Option<RunReport>,
}

impl Job {
    /// The job's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The executable summary of the command it runs, as its starter gave it (for the audit
    /// record of its end).
    pub fn executable(&self) -> &str {
        &self.executable
    }

    /// Output since the last read, and the end once the job has ended.
    pub fn read(&self) -> JobRead {
        let finished = self
            .done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if finished.is_some() {
            self.join();
        }
        JobRead {
            output: self.output.take(finished.is_some()),
            finished,
        }
    }

    /// Kills the job's whole tree and waits for its supervisor to confirm the end.
    pub fn kill(&self) {
        self.cancel.cancel();
        self.join();
    }

    /// Whether the job may write to the workspace.
    pub fn writable(&self) -> bool {
        self.writable
    }

    /// The caller's mark at the start.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// Records the host-run configuration a person approved for this job when it was started.
    pub fn set_approved_host_config(&self, approved: Vec<spear_core::HostConfigWrite>) {
        *self.approved.lock().unwrap_or_else(PoisonError::into_inner) = approved;
    }

    /// The host-run configuration a person approved for this job when it was started.
    pub fn approved_host_config(&self) -> Vec<spear_core::HostConfigWrite> {
        self.approved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Held by whoever reports the job's end, so that it is reported once.
    pub fn finishing(&self) -> std::sync::MutexGuard<'_, ()> {
        self.finishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn join(&self) {
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = handle
            && h.join().is_err()
        {
            tracing::error!("the supervisor of job {} panicked", self.id);
        }
    }
}

/// The background jobs of one session. Dropping it kills every job still running.
#[derive(Debug)]
pub struct Jobs {
    by_id: Mutex<BTreeMap<String, Arc<Job>>>,
    next: AtomicU64,
    limit: usize,
    buffer: usize,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs::new(DEFAULT_MAX_JOBS, DEFAULT_JOB_BUFFER)
    }
}

impl Jobs {
    /// At most `max_jobs` jobs at once, each keeping `buffer` unread bytes per stream.
    pub fn new(max_jobs: usize, buffer: usize) -> Self {
        Jobs {
            by_id: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            limit: max_jobs.max(1),
            buffer,
        }
    }

    /// Starts `request` in the background on a thread of its own and returns the job at once.
    /// The request's timeout, cancellation and output tee are the job's own; so is its flood
    /// limit (none: its unread output is bounded, and it may run for hours).
    /// A writable job's writes stay staged until its end is read (the report carries them);
    /// `mark` is the caller's own (the router's call number).
    pub fn start(
        &self,
        runner: Arc<CommandRunner>,
        request: CommandRequest,
        executable: &str,
        mark: u64,
    ) -> Result<Arc<Job>, JobError> {
        let writable = request.profile.workspace_write();
        self.launch(writable, executable, mark, move |cancel, tee| {
            let mut request = request;
            as_job(&mut request, cancel, tee);
            Box::new(move || runner.run_report(&request))
        })
    }

    /// Starts a prepared command as a job, as [`Jobs::start`] does: the checks and the grant
    /// were made when it was prepared, and nothing runs if it cannot start.
    pub fn start_prepared(
        &self,
        prepared: PreparedProcess,
        executable: &str,
        mark: u64,
    ) -> Result<Arc<Job>, JobError> {
        let writable = prepared.request.profile.workspace_write();
        self.launch(writable, executable, mark, move |cancel, tee| {
            let mut prepared = prepared;
            as_job(&mut prepared.request, cancel, tee);
            Box::new(move || prepared.start())
        })
    }

    fn launch(
        &self,
        writable: bool,
        executable: &str,
        mark: u64,
        make: impl FnOnce(CancelToken, Arc<dyn OutputTee>) -> Box<dyn FnOnce() -> RunReport + Send>,
    ) -> Result<Arc<Job>, JobError> {
        let mut jobs = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        if jobs.len() >= self.limit {
            return Err(JobError::TooMany(jobs.len()));
        }
        let id = format!("job-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let cancel = CancelToken::new().map_err(JobError::Start)?;
        let output = Arc::new(JobOutput::new(self.buffer));
        let done: Arc<Mutex<Option<RunReport>>> = Arc::new(Mutex::new(None));
        let tee: Arc<dyn OutputTee> = output.clone();
        let run = make(cancel.clone(), tee);
        let finished = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name(format!("spear-{id}"))
            .spawn(move || {
                let report = run();
                *finished.lock().unwrap_or_else(PoisonError::into_inner) = Some(report);
            })
            .map_err(JobError::Start)?;
        let job = Arc::new(Job {
            id: id.clone(),
            executable: executable.to_owned(),
            cancel,
            output,
            done,
            thread: Mutex::new(Some(thread)),
            writable,
            mark,
            finishing: Mutex::new(()),
            approved: Mutex::new(Vec::new()),
        });
        jobs.insert(id, Arc::clone(&job));
        Ok(job)
    }

    /// The job `id` of this session.
    pub fn get(&self, id: &str) -> Result<Arc<Job>, JobError> {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| JobError::NotFound(id.to_owned()))
    }

    /// A job that may write to the workspace and whose end was not reported yet, if any.
    pub fn writable_pending(&self) -> Option<String> {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .find(|j| j.writable)
            .map(|j| j.id.clone())
    }

    /// Forgets a job that has ended and whose end was reported.
    pub fn remove(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// The ids of every job, oldest first.
    pub fn ids(&self) -> Vec<String> {
        let jobs = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ids: Vec<(u64, String)> = jobs
            .keys()
            .map(|k| {
                (
                    k.trim_start_matches("job-").parse().unwrap_or(u64::MAX),
                    k.clone(),
                )
            })
            .collect();
        ids.sort();
        ids.into_iter().map(|(_, k)| k).collect()
    }

    /// Kills every job still running and waits for each to end.
    pub fn kill_all(&self) {
        let jobs: Vec<Arc<Job>> = self
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for job in &jobs {
            job.cancel.cancel();
        }
        for job in jobs {
            job.join();
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A job's own watch: no timeout (it ends when it ends, is killed, or the session ends), no flood
/// limit, its cancellation and its output buffer.
fn as_job(request: &mut CommandRequest, cancel: CancelToken, tee: Arc<dyn OutputTee>) {
    request.timeout = Some(Duration::MAX);
    request.flood_bytes = Some(u64::MAX);
    request.cancel = Some(cancel);
    request.tee = Some(tee);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_taken_once_and_bounded() {
        let out = JobOutput::new(16);
        out.stdout(b"hello ");
        out.stderr(b"err");
        let t = out.take(false);
        assert_eq!((t.stdout.as_str(), t.stderr.as_str()), ("hello ", "err"));
        assert_eq!(
            out.take(false),
            Taken::default(),
            "never the same byte twice"
        );
        out.stdout(&[b'x'; 40]);
        let t = out.take(false);
        assert_eq!(t.stdout, "x".repeat(16));
        assert_eq!(t.dropped_stdout, 24);
        assert_eq!(out.take(false).dropped_stdout, 0);
    }

    #[test]
    fn a_character_cut_by_a_read_waits_for_the_rest() {
        let out = JobOutput::new(64);
        let e = "é".as_bytes();
        out.stdout(&[b'a', e[0]]);
        assert_eq!(out.take(false).stdout, "a");
        out.stdout(&[e[1], b'b']);
        assert_eq!(out.take(false).stdout, "éb");
        // At the end everything is taken, a cut character shown replaced.
        out.stdout(&[e[0]]);
        assert_eq!(out.take(true).stdout, "\u{fffd}");
    }

    #[test]
    fn complete_prefixes() {
        assert_eq!(complete_prefix(b"abc"), 3);
        assert_eq!(complete_prefix(&[b'a', 0xE2, 0x82]), 1);
        assert_eq!(complete_prefix(&[b'a', 0xFF, b'b']), 3);
        assert_eq!(complete_prefix(&[0xFF, b'b', 0xE2]), 2);
        assert_eq!(
            complete_prefix(&[b'a', 0xFF]),
            2,
            "an invalid byte is not held back"
        );
        assert_eq!(complete_prefix(&[b'a', 0xC0]), 2);
    }
}
