//! The session on stdin and stdout: rmcp's service behind spear's intake, stopped by the end of
//! stdin or a signal, and the wait for the calls still running once it has stopped.

use std::time::Duration;

use crate::server::SpearServer;
use crate::{ServeError, eof, intake};

/// How long the end of a session waits for its cancelled calls to kill and reap their trees.
const CALLS_END_WITHIN: Duration = Duration::from_secs(10);

/// The runtime a stdio session is served on, with the signals that stop it already registered:
/// made before the session is opened (opening scans and watches the toolchain trees, which may
/// take a while), so that a SIGTERM, SIGINT or SIGHUP that comes meanwhile is not the default
/// action (death, with nothing cleaned up) but a clean stop as soon as the session is served.
pub struct Stdio {
    runtime: tokio::runtime::Runtime,
    signals: Signals,
}

/// The signals that stop a session, each a stream that keeps what arrived before it is read.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Stdio {
    /// Builds the runtime and registers the signals.
    pub fn prepare() -> Result<Stdio, ServeError> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let signals = {
            let _entered = runtime.enter();
            Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
                hup: signal(SignalKind::hangup())?,
            }
        };
        Ok(Stdio { runtime, signals })
    }

    /// Serves `server` on stdin and stdout, then drops it: the router goes with it, which kills
    /// and reports the session's background jobs. Blocks until the session ends.
    // Taken by value on purpose: dropping the last handle ends the session.
    #[allow(clippy::needless_pass_by_value)]
    pub fn run(self, server: SpearServer) -> Result<(), ServeError> {
        let Stdio { runtime, signals } = self;
        let outcome = runtime.block_on(serve_stdio(server.clone(), signals));
        // The calls still running were cancelled: wait (10 s at most) until each has killed and
        // reaped its tree. Then stop the runtime without waiting for its blocking stdin read, which
        // never ends when stdin is a socket (Node.js clients) that the client keeps open.
        if !server.wait_for_calls(CALLS_END_WITHIN) {
            tracing::warn!(
                "{} calls did not end within {} s of the session's end",
                server.calls_running(),
                CALLS_END_WITHIN.as_secs()
            );
        }
        runtime.shutdown_background();
        // The last handle on the router (unless a call outlived the wait): its jobs die with it.
        drop(server);
        outcome
    }
}

/// Serves `server` on stdin and stdout until the client closes stdin or a SIGTERM, SIGINT or
/// SIGHUP arrives; either cancels the calls still running at once (their process trees are
/// killed). Every line the client sends gets an answer: a malformed one (too large, not UTF-8,
/// not JSON, too deep, not an object) an error response from [`intake`]. The caller drops the
/// server afterwards, which ends the session's background jobs.
async fn serve_stdio(server: SpearServer, signals: Signals) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;

    let Signals {
        mut term,
        mut int,
        mut hup,
    } = signals;
    // A signal stops the server whenever it comes, the handshake included.
    let signalled = tokio_util::sync::CancellationToken::new();
    let watcher = {
        let signalled = signalled.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                _ = int.recv() => tracing::info!("SIGINT: stopping"),
                _ = hup.recv() => tracing::info!("SIGHUP: stopping"),
            }
            signalled.cancel();
        })
    };
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    let on_eof = server.clone();
    let stdin = eof::EofWatch::new(stdin, move || {
        tracing::debug!("stdin closed: cancelling the calls still running");
        on_eof.shut_down();
    });
    let transport = intake::transport(stdin, stdout);
    let running = tokio::select! {
        started = server.clone().serve(transport) => {
            started.map_err(|e| ServeError::Start(e.to_string()))?
        }
        () = signalled.cancelled() => return Ok(()),
    };
    let stop = running.cancellation_token();
    let forward = tokio::spawn(async move {
        signalled.cancelled().await;
        stop.cancel();
    });
    let ended = running.waiting().await;
    watcher.abort();
    forward.abort();
    server.shut_down();
    match ended {
        Ok(reason) => {
            tracing::debug!("MCP session ended: {reason:?}");
            Ok(())
        }
        Err(e) => Err(ServeError::Loop(e.to_string())),
    }
}
