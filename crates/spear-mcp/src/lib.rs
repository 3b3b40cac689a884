//! spear's MCP server: the tool router, served over stdio with rmcp.
//!
//! - [`catalog`]: tool specs and envelopes in MCP's words (pure).
//! - [`asking`]: ASK confirmations through the client (elicitation, input-required results).
//! - [`state`]: the sealed request state of an input-required exchange.
//! - [`server`]: the `ServerHandler`.
//!
//! stdout carries only protocol messages; logs go to stderr through `tracing`.

pub mod asking;
pub mod catalog;
pub mod server;
pub mod state;

pub use server::{SpearServer, TurnClock};

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed the start of the session.
    #[error("the MCP session did not start: {0}")]
    Start(String),
    /// The runtime or the signal watch could not be set up.
    #[error("cannot set up the server: {0}")]
    Signals(#[from] std::io::Error),
    /// The service loop ended abnormally.
    #[error("the MCP service stopped: {0}")]
    Loop(String),
}

/// Serves `server` on stdin and stdout on a runtime of its own, then drops it: the router goes
/// with it, which kills and reports the session's background jobs. Blocks until the session ends.
pub fn run_stdio(server: SpearServer) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(serve_stdio(server));
    // Calls still running were cancelled: give their supervisors time to kill and reap.
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    outcome
}

/// Serves `server` on stdin and stdout until the client closes them or a SIGTERM, SIGINT or
/// SIGHUP arrives; then cancels the calls still running (their process trees are killed). The
/// caller drops the server afterwards, which ends the session's background jobs.
pub async fn serve_stdio(server: SpearServer) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    use tokio::signal::unix::{SignalKind, signal};

    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let running = server
        .clone()
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    let stop = running.cancellation_token();
    let watcher = tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            _ = int.recv() => tracing::info!("SIGINT: stopping"),
            _ = hup.recv() => tracing::info!("SIGHUP: stopping"),
        }
        stop.cancel();
    });
    let ended = running.waiting().await;
    watcher.abort();
    server.cancel_running();
    match ended {
        Ok(reason) => {
            tracing::debug!("MCP session ended: {reason:?}");
            Ok(())
        }
        Err(e) => Err(ServeError::Loop(e.to_string())),
    }
}
