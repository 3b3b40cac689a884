//! The preflights: a real minimal sandbox run once per shape (working directory, writability)
//! and a networked `/bin/true` once per working directory and roots, each remembered (terminal
//! failures too), in this process and, when configured, across processes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use spear_core::Capability;

use super::error::{SandboxError, clone_error};
use super::instance::Sandbox;
use super::launcher::lock;
use crate::preflight_store::PreflightStore;
use crate::spawn::{Exit, Stop, Watch};
use crate::spec::BwrapSpec;

impl Sandbox {
    /// Runs the preflight for sandboxes shaped like `spec` once, and caches the result: a real
    /// minimal sandbox whose shell asserts its working directory, the workspace's writability when
    /// the profile writes, `$HOME` and `$TMPDIR`. Terminal failures (bwrap absent, not executable,
    /// refused by the kernel) are remembered for the life of the instance and not re-probed.
    ///
    /// Under the landlock backend there is no preflight to run: its mechanisms are checked, and
    /// what it cannot hold is refused when the command is run.
    pub fn ensure(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        self.check_mechanisms()?;
        if matches!(
            self.confinement()?,
            super::choice::Confinement::Landlock { .. }
        ) {
            return Ok(());
        }
        let key = (spec.cwd.clone(), spec.profile.workspace_write());
        if let Some(cached) = lock(&self.preflight).get(&key) {
            return cached.clone().map_err(|e| clone_error(&e));
        }
        let store = self
            .launcher
            .config
            .persist_preflight
            .then(PreflightStore::for_user)
            .flatten();
        let store_key = PreflightStore::key(
            &self.launcher.config.bwrap,
            &spec.cwd,
            spec.profile.workspace_write(),
        );
        if let (Some(store), Some(k)) = (&store, &store_key)
            && store.contains(k)
        {
            lock(&self.preflight).insert(key, Ok(()));
            return Ok(());
        }
        let result = self.probe(spec);
        if result.is_ok()
            && let (Some(store), Some(k)) = (&store, &store_key)
        {
            store.record(k);
        }
        match &result {
            Err(e) if e.is_terminal() => {
                let e = Arc::new(clone_error(e));
                *lock(&self.terminal) = Some(e.clone());
                lock(&self.preflight).insert(key, Err(e));
            }
            Ok(()) => {
                lock(&self.preflight).insert(key, Ok(()));
            }
            Err(_) => {}
        }
        result
    }

    /// The network preflight, once per (working directory, roots) and remembered: slirp4netns,
    /// nsenter and nft are there, and a real networked `/bin/true` gets its network attached
    /// through pinned namespaces, its egress policy loaded, and its teardown confirmed. Missing
    /// tools are remembered as failures; other failures are probed again next time.
    /// The landlock backend has no network path: refused.
    pub fn ensure_network(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        if matches!(
            self.confinement()?,
            super::choice::Confinement::Landlock { .. }
        ) {
            return Err(crate::landlock::LandlockError::Networked.into());
        }
        if self.network_poisoned.load(Ordering::SeqCst) {
            return Err(SandboxError::NetworkPoisoned);
        }
        let key = (
            spec.cwd.clone(),
            spec.roots.iter().map(|r| r.host.clone()).collect(),
        );
        if let Some(cached) = lock(&self.network_preflight).get(&key) {
            return cached.clone().map_err(|e| clone_error(&e));
        }
        if let Some(e) = self.missing_network_tool() {
            lock(&self.network_preflight).insert(key, Err(Arc::new(clone_error(&e))));
            return Err(e);
        }
        let store = self
            .launcher
            .config
            .persist_preflight
            .then(PreflightStore::for_user)
            .flatten();
        let store_key =
            PreflightStore::key(&self.launcher.config.network.slirp4netns, &spec.cwd, true);
        if let (Some(store), Some(k)) = (&store, &store_key)
            && store.contains(&format!("net-{k}"))
        {
            lock(&self.network_preflight).insert(key, Ok(()));
            return Ok(());
        }
        let mut probe = spec.clone();
        probe.command = vec!["/bin/true".into()];
        let watch = probe_watch();
        let outcome = self.run_unchecked(&probe, &watch)?;
        if let Some(e) = outcome.network_error {
            return Err(SandboxError::Preflight(format!("network teardown: {e}")));
        }
        if outcome.finished.exit != Exit::Code(0) {
            return Err(SandboxError::Preflight(format!(
                "a networked /bin/true failed: {}",
                outcome.finished.stderr.text.trim()
            )));
        }
        if let (Some(store), Some(k)) = (&store, &store_key) {
            store.record(&format!("net-{k}"));
        }
        lock(&self.network_preflight).insert(key, Ok(()));
        Ok(())
    }

    fn probe(&self, spec: &BwrapSpec) -> Result<(), SandboxError> {
        let mut probe = spec.clone();
        let cwd = spec.cwd.to_string_lossy();
        let home = spec.home.to_string_lossy();
        let mut script = format!(
            "test \"$PWD\" = {cwd} || {{ echo \"working directory is $PWD, not {cwd}\"; exit 1; }}; \
             test \"$HOME\" = {home} && test -d \"$HOME\" && test -w \"$HOME\" || {{ echo 'HOME is missing or not writable'; exit 1; }}; \
             test -d \"$TMPDIR\" && test -w \"$TMPDIR\" || {{ echo 'TMPDIR is missing or not writable'; exit 1; }}; ",
            cwd = shell_quote(&cwd),
            home = shell_quote(&home),
        );
        if spec.profile.workspace_write() {
            script.push_str("test -w . || { echo 'the workspace is not writable'; exit 1; }; ");
        } else {
            script.push_str(
                "test -w . && { echo 'the workspace is writable in a read-only profile'; exit 1; }; ",
            );
        }
        script.push_str("exit 0");
        probe.command = vec!["/bin/sh".into(), "-c".into(), script.into()];
        // The preflight proves the closed sandbox; the network path is attached per command.
        probe.profile = probe.profile.without(Capability::Network);
        let watch = probe_watch();
        let outcome = self.run_unchecked(&probe, &watch)?;
        let f = &outcome.finished;
        if let Some(msg) = outcome.setup_error {
            return Err(if is_namespace_refusal(&msg) {
                SandboxError::BwrapRefused(msg)
            } else {
                SandboxError::Preflight(msg)
            });
        }
        match (f.exit, f.stop) {
            (Exit::Code(0), Stop::None) => Ok(()),
            _ => Err(SandboxError::Preflight(format!(
                "{} {}",
                f.stdout.text.trim(),
                f.stderr.text.trim()
            ))),
        }
    }
}

/// How a preflight probe is watched: 30 s, small output caps.
fn probe_watch() -> Watch {
    Watch {
        timeout: Duration::from_secs(30),
        output_cap: 16 * 1024,
        flood_bytes: 1 << 20,
        cancel: None,
        tee: None,
        stdin: None,
    }
}

/// Whether a bwrap setup failure is the kernel refusing namespaces (terminal), rather than a
/// problem with this particular sandbox's mounts.
fn is_namespace_refusal(msg: &str) -> bool {
    const SIGNS: &[&str] = &[
        "namespace",
        "uid map",
        "gid map",
        "setgroups",
        "Operation not permitted",
        "Permission denied",
    ];
    SIGNS.iter().any(|s| msg.contains(s))
        && !msg.contains("mkdir")
        && !msg.contains("Can't find source path")
}

/// Quotes `s` for `sh` in single quotes.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
