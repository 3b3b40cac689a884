//! The sandbox spec of a request: the roots (staged when it writes), the host's system
//! directories, curated `/etc`, toolchains, the masks over credential stores and spear's own state,
//! the environment, and the session's private places.

use std::path::{Path, PathBuf};

use spear_core::ExecutionProfile;
use spear_sandbox::{
    Bind, BwrapSpec, EnvPass, Etc, GIT_CONFIG_PATH, Mask, SpecBuilder, SpecError, credential_masks,
    host_entry, prepare_etc_view, sandbox_env, secret_masks,
};

use super::command_runner::CommandRunner;
use super::request::CommandRequest;
use crate::staging::Staging;

/// The masks that keep spear's state directory `state` (or one of the operator's secret files) out
/// of a sandbox that binds `bound`: the state directory itself where a bound path holds it, and a
/// bound path itself where it lies inside the state directory. What does not exist on the host (`exists` says `None`) needs no
/// mask. Pure but for `exists`.
pub fn state_masks(
    state: &Path,
    bound: &[PathBuf],
    exists: &dyn Fn(&Path) -> Option<bool>,
) -> Vec<Mask> {
    let mut hidden: Vec<&Path> = Vec::new();
    for b in bound {
        let path = if b.starts_with(state) {
            b.as_path()
        } else if state.starts_with(b) {
            state
        } else {
            continue;
        };
        if !hidden.contains(&path) {
            hidden.push(path);
        }
    }
    hidden
        .into_iter()
        .filter_map(|p| match exists(p) {
            Some(true) => Some(Mask::Dir(p.to_path_buf())),
            Some(false) => Some(Mask::File(p.to_path_buf())),
            None => None,
        })
        .collect()
}

impl CommandRunner {
    /// Fresh layers for a writable profile; none for a read-only one.
    pub(super) fn stage(&self, profile: &ExecutionProfile) -> Result<Option<Staging>, SpecError> {
        if !profile.workspace_write() {
            return Ok(None);
        }
        Staging::create(&self.config.staging, &self.workspace)
            .map(|s| Some(s.limit_changes(self.config.commit_max_changes)))
            .map_err(|e| SpecError::Staging(format!("the writes could not be staged: {e}")))
    }

    /// The sandbox spec of `request`, built and checked by the sandbox ([`BwrapSpec::builder`]);
    /// a writable one stages its roots in `staging`.
    pub fn spec(
        &self,
        request: &CommandRequest,
        staging: Option<&Staging>,
    ) -> Result<BwrapSpec, SpecError> {
        self.spec_builder(request, staging)?.build()
    }

    /// What the sandbox of `request` is for, not yet checked: refused here only when its working
    /// directory lies in no root.
    pub(crate) fn spec_builder(
        &self,
        request: &CommandRequest,
        staging: Option<&Staging>,
    ) -> Result<SpecBuilder, SpecError> {
        let ws = &self.workspace;
        let cwd = match &request.workdir {
            None => ws.launch_mount_dir(),
            Some(dir) => ws
                .locate(dir)
                .map(|loc| ws.mount_path(&loc))
                .ok_or_else(|| SpecError::Unbound(dir.clone()))?,
        };
        let command = request.command.argv();
        let roots: Vec<Bind> = ws
            .roots()
            .iter()
            .map(|r| Bind {
                host: r.host_path().to_path_buf(),
                mount: r.mount_path().to_path_buf(),
            })
            .collect();
        let root_hosts: Vec<PathBuf> = roots.iter().map(|r| r.host.clone()).collect();
        let masks = self.masks(request, &root_hosts);
        let mut env = sandbox_env(spear_sandbox::EnvInputs {
            host: &self.config.host_env,
            home: &self.config.home,
            path: &self.host.toolchains.path,
            toolchain_vars: &self.host.toolchains.vars,
            user: self.host.user.as_deref(),
            pass: &self.config.env_pass,
        });
        if self.host.git_config.is_some() {
            env.retain(|(n, _)| n != "GIT_CONFIG_SYSTEM");
            env.push(("GIT_CONFIG_SYSTEM".into(), GIT_CONFIG_PATH.into()));
            env.sort();
        }
        // A mask under the session's own directories could be displaced by a link that a
        // concurrently running job of the session swaps in while bwrap sets up (bwrap follows
        // links in mount points): such a command gets fresh private places instead. A mask
        // inside a toolchain tree is not one: every sandbox of the session binds that tree
        // read-only over its mount point, which no job of the session can rename or replace.
        let private = |p: &Path| {
            let toolchain = self.host.toolchains.binds.iter().any(|b| p.starts_with(b));
            !toolchain
                && (p.starts_with("/tmp")
                    || p.starts_with("/var/tmp")
                    || p.starts_with(&self.config.home))
        };
        let scratch = self
            .scratch
            .as_ref()
            .filter(|_| !masks.iter().any(|m| private(m.path())))
            .map(|s| s.dirs().clone());
        Ok(BwrapSpec::builder(
            request.profile.clone(),
            command,
            cwd,
            self.config.home.clone(),
        )
        .gpu(self.config.gpu.clone())
        .system(self.host.system.clone())
        .etc(self.etc())
        .toolchains(self.host.toolchains.binds.clone())
        .roots(roots)
        .staged(staging.map(Staging::overlays).unwrap_or_default())
        .masks(masks)
        .empty_file(self.host.empty_file.clone())
        .env(env, EnvPass::exact_names(&self.config.env_pass))
        .tmpfs(self.config.tmpfs)
        .scratch(scratch)
        .git_config(self.host.git_config.clone())
        .resolver(self.host.resolv_conf.clone()))
    }

    /// What the sandbox of `request` masks, in order, none inside another: the credential stores
    /// under the home directory and spear's state directory wherever a bound path or one of
    /// `root_hosts` shows them, and the credential files at any depth of the bound trees and of
    /// the request's host-read paths.
    fn masks(&self, request: &CommandRequest, root_hosts: &[PathBuf]) -> Vec<Mask> {
        let ws = &self.workspace;
        let mut bound: Vec<PathBuf> = self.host.toolchains.binds.clone();
        bound.extend(request.profile.host_read_paths().iter().cloned());
        let mut masks = credential_masks(&self.config.home, &bound, &host_entry);
        // Attack: a registry token or password read from a bound tree at any depth (cargo's
        // config.toml, a virtualenv's pip.conf, npm's own npmrc, a conda environment's .condarc).
        // The trees were scanned whole when the runner was made; each command looks again at the
        // files found (a token written into one since), and scans the host-read paths it binds.
        let cache = self.config.scan_cache.as_deref();
        let (found, full) = (spear_sandbox::Depth::Found, spear_sandbox::Depth::Full);
        let watch = self.config.watch_trees;
        masks.extend(secret_masks(&self.host.trees, root_hosts, cache, found, watch).0);
        let host_reads = request.profile.host_read_paths();
        if !host_reads.is_empty() {
            masks.extend(secret_masks(host_reads, root_hosts, cache, full, false).0);
        }
        for mask in credential_masks(&self.config.home, root_hosts, &host_entry) {
            if let Some(loc) = ws.locate(mask.path()) {
                let inside = ws.mount_path(&loc);
                masks.push(match mask {
                    Mask::File(_) => Mask::File(inside),
                    Mask::Dir(_) => Mask::Dir(inside),
                });
            }
        }
        // Attack: a command reading spear's audit log, or connecting to the approval socket to
        // approve its own pending calls, through a bound path that shows the state directory;
        // or reading the node's TLS key through one that shows it.
        for state in self.config.state_dir.iter().chain(&self.config.secrets) {
            masks.extend(state_masks(state, &bound, &host_entry));
            for mask in state_masks(state, root_hosts, &host_entry) {
                if let Some(loc) = ws.locate(mask.path()) {
                    let inside = ws.mount_path(&loc);
                    masks.push(match mask {
                        Mask::File(_) => Mask::File(inside),
                        Mask::Dir(_) => Mask::Dir(inside),
                    });
                }
            }
        }
        masks.sort_by(|a, b| a.path().cmp(b.path()));
        masks.dedup_by(|a, b| a.path() == b.path());
        // What an empty directory already hides needs no mask of its own (nor could it have a
        // mount point there).
        let dirs: Vec<PathBuf> = masks
            .iter()
            .filter_map(|m| match m {
                Mask::Dir(p) => Some(p.clone()),
                Mask::File(_) => None,
            })
            .collect();
        masks.retain(|m| {
            !dirs
                .iter()
                .any(|d| m.path() != d && m.path().starts_with(d))
        });
        masks
    }

    /// The sandbox's `/etc`: a view prepared in the user's private directory (one mount), or the
    /// curated entries bound one by one when no view can be made.
    fn etc(&self) -> Etc {
        let view = self
            .host
            .etc_views
            .as_ref()
            .map(|base| prepare_etc_view(base, Path::new("/etc"), &self.host.etc));
        match view {
            Some(Ok(files)) => Etc::View {
                files,
                dirs: Vec::new(),
            },
            Some(Err(e)) => {
                tracing::warn!("binding /etc entries one by one: no view ({e})");
                Etc::Entries(self.host.etc.clone())
            }
            None => Etc::Entries(self.host.etc.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_directory_is_masked_wherever_a_bind_shows_it() {
        let p = PathBuf::from;
        let state = p("/h/.local/state/spear");
        // What the fake host holds: the state directory and its socket.
        let exists = |q: &Path| -> Option<bool> {
            match q.to_str() {
                Some("/h/.local/state/spear" | "/h/.local/state/spear/approve") => Some(true),
                Some("/h/.local/state/spear/audit.jsonl") => Some(false),
                _ => None,
            }
        };
        for (bound, want) in [
            // A bind holding it: the state directory is masked.
            (vec![p("/h/.local")], vec![Mask::Dir(state.clone())]),
            (vec![p("/h")], vec![Mask::Dir(state.clone())]),
            // The state directory itself, or a part of it, bound: that bind is masked.
            (vec![state.clone()], vec![Mask::Dir(state.clone())]),
            (
                vec![state.join("approve"), state.join("audit.jsonl")],
                vec![
                    Mask::Dir(state.join("approve")),
                    Mask::File(state.join("audit.jsonl")),
                ],
            ),
            // Two binds holding it: one mask.
            (
                vec![p("/h"), p("/h/.local")],
                vec![Mask::Dir(state.clone())],
            ),
            // Positive controls: binds beside it, and a part that does not exist, mask nothing.
            (vec![p("/h/.local/share"), p("/usr")], vec![]),
            (vec![p("/h/.local/state/spearx")], vec![]),
            (vec![state.join("none")], vec![]),
        ] {
            assert_eq!(state_masks(&state, &bound, &exists), want, "{bound:?}");
        }
    }
}
