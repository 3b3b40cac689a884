//! The sandboxes a server keeps from one call to the next, one per sandbox configuration.

use std::sync::{Arc, Mutex};

use spear_sandbox::{Sandbox, SandboxConfig};

/// How many configurations a server keeps a sandbox for; the least recently used goes first
/// (its waiting sandbox killed, its cgroup removed).
const KEPT: usize = 4;

/// Sandboxes by configuration. A call gets the sandbox made for exactly its configuration
/// (limits, network path, bwrap), so that its preflights, its warm sandbox and a network
/// poisoning carry over only between calls that would have made the same sandbox; every
/// command still gets its own bwrap, PID namespace and cgroup.
///
/// Each kept sandbox is one session for the session budget ([`spear_sandbox::SandboxConfig::session`]):
/// the calls it serves, concurrent ones included, stay within the budget together, and its
/// session cgroup goes when it is evicted or the server stops. Not a session per call: a call
/// has no background job (the budget of a session of one command is its own limit), the sandbox
/// waiting for the next call is made before that call exists and a cgroup v1 directory cannot
/// move to another parent, and one budget over the server is what bounds a client that opens
/// calls in parallel.
#[derive(Debug, Default)]
pub struct Shelf {
    kept: Mutex<Vec<(SandboxConfig, Arc<Sandbox>)>>,
}

impl Shelf {
    /// The sandbox of `config`, made now if none is kept.
    pub fn sandbox(&self, config: &SandboxConfig) -> Arc<Sandbox> {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let found = kept.iter().position(|(c, _)| c == config);
        let entry = match found {
            Some(i) => kept.remove(i),
            None => (config.clone(), Arc::new(Sandbox::new(config.clone()))),
        };
        let sandbox = Arc::clone(&entry.1);
        kept.push(entry);
        let over = kept.len().saturating_sub(KEPT);
        let evicted: Vec<_> = kept.drain(..over).collect();
        drop(kept);
        // Dropped outside the lock: a waiting sandbox is killed and reaped as it goes.
        drop(evicted);
        sandbox
    }

    /// Drops every kept sandbox (their waiting sandboxes are killed and reaped, their cgroups
    /// removed), as a server does before it exits.
    pub fn clear(&self) {
        let all = std::mem::take(
            &mut *self
                .kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        drop(all);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_configuration_gets_its_own_sandbox_and_the_same_one_again() {
        let shelf = Shelf::default();
        let a = SandboxConfig::default();
        let b = SandboxConfig {
            persist_preflight: !a.persist_preflight,
            ..SandboxConfig::default()
        };
        let first = shelf.sandbox(&a);
        assert!(Arc::ptr_eq(&first, &shelf.sandbox(&a)));
        assert!(!Arc::ptr_eq(&first, &shelf.sandbox(&b)));
        // The least recently used goes first.
        for n in 0..KEPT {
            let mut c = SandboxConfig::default();
            c.rlimits.open_files = 1000 + u64::try_from(n).unwrap();
            shelf.sandbox(&c);
        }
        assert!(
            !Arc::ptr_eq(&first, &shelf.sandbox(&a)),
            "evicted and made anew"
        );
        shelf.clear();
        assert!(shelf.kept.lock().unwrap().is_empty());
    }
}
