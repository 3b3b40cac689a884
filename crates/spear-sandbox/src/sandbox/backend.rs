//! The confinement of a [`Sandbox`], resolved once against the host ([`super::choice::choose`]),
//! and what each backend gives here.

use spear_core::{Guarantee, GuaranteeSet};

use super::choice::{Confinement, choose};
use super::config::BackendChoice;
use super::error::SandboxError;
use super::instance::Sandbox;
use crate::cgroup::BackendKind;
use crate::guarantees;

impl Sandbox {
    /// The confinement this sandbox's commands run under, resolved at its first use and kept:
    /// for `auto`, bubblewrap is tried once (`bwrap --unshare-all ... /bin/true`); a bwrap that
    /// is not installed keeps bubblewrap (its own error says to install it), one the kernel
    /// refuses namespaces to lets the landlock backend in only if it gives what is required.
    pub fn confinement(&self) -> Result<Confinement, SandboxError> {
        let resolved = self.confinement.get_or_init(|| {
            let config = &self.launcher.config;
            let userns = match config.backend {
                BackendChoice::Auto => userns_usable(&config.bwrap),
                _ => Ok(()),
            };
            let abi = crate::landlock::kernel_abi();
            choose(
                config.backend,
                userns,
                abi,
                self.landlock_gives(),
                config.auto_require,
            )
        });
        resolved.clone().map_err(|n| SandboxError::NoBackend {
            missing: n.missing,
            bubblewrap: n.bubblewrap,
        })
    }

    /// What the landlock backend gives on this host, with this configuration: nothing without
    /// Landlock or without a cgroup of spear's own that spear joins itself (cgroup v1 or v2:
    /// without a PID namespace it is what kills the tree); `resource_limits` where that cgroup
    /// limits.
    pub fn landlock_gives(&self) -> GuaranteeSet {
        let abi = crate::landlock::kernel_abi();
        let joinable = self.landlock_cgroup().is_ok();
        if !joinable {
            return GuaranteeSet::EMPTY;
        }
        guarantees::landlock_host(abi, self.launcher.config.cgroup.is_some())
    }

    /// What bubblewrap gives on this host: nothing where it cannot make its namespaces, else its
    /// confinement bits and what [`Sandbox::can_give`] finds for the network path and limits.
    pub fn bubblewrap_gives(&self) -> GuaranteeSet {
        if userns_usable(&self.launcher.config.bwrap).is_err() {
            return GuaranteeSet::EMPTY;
        }
        Guarantee::ALL
            .into_iter()
            .filter(|g| self.can_give_bubblewrap(*g).is_ok())
            .collect()
    }

    /// The cgroup backend's kind when the landlock backend can use it (each command's cgroup
    /// joined by the child itself), or why not.
    pub(crate) fn landlock_cgroup(&self) -> Result<BackendKind, String> {
        if self.launcher.config.cgroup.is_none() {
            return Err("cgroup limits are turned off in this sandbox's configuration".to_owned());
        }
        match &self.launcher.backend {
            Err(why) => Err(format!("no cgroup backend: {why}")),
            Ok(b) => match b.kind() {
                k @ (BackendKind::CgroupV1 | BackendKind::CgroupV2) => Ok(k),
                k => Err(format!(
                    "the cgroup backend is `{k}`, whose cgroup spear does not join itself"
                )),
            },
        }
    }
}

/// Whether bubblewrap can make its namespaces here. A bwrap that cannot be run at all counts as
/// usable: the bubblewrap path then says to install it, rather than `auto` moving elsewhere.
fn userns_usable(bwrap: &std::path::Path) -> Result<(), String> {
    if super::launcher::check_bwrap(bwrap).is_err() {
        return Ok(());
    }
    crate::userns::probe(bwrap)
        .map(|_| ())
        .map_err(|(why, _)| why)
}
