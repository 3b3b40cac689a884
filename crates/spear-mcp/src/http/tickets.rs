//! Session tickets: what counts a session against its credential's limit and the node's.
//!
//! A [`Ticket`] is taken before a session is made and lives as long as the session (the server
//! holds it): taking one increments both counts at once, or neither, so two clients racing for
//! the last place cannot both get it; dropping it gives both places back, however the session
//! ends (closed, idle, revoked, the server stopping). Attack stopped: one credential (or all of
//! them) opening sessions until the node runs out of memory, processes or disk.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One count of open sessions with its limit (none: unlimited).
#[derive(Debug)]
pub(crate) struct Counter {
    open: AtomicUsize,
    limit: Option<usize>,
}

impl Counter {
    /// A count at zero with `limit`.
    pub(crate) fn new(limit: Option<usize>) -> Arc<Counter> {
        Arc::new(Counter {
            open: AtomicUsize::new(0),
            limit,
        })
    }

    /// The sessions counted now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Counts one more if that stays within the limit.
    fn take(&self) -> bool {
        self.open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                self.limit.is_none_or(|limit| n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Which limit a ticket was refused by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The credential's own (`spear token add --sessions N`).
    Credential(usize),
    /// The node's (`--max-sessions N`).
    Node(usize),
}

/// A place in both counts, given back when dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    credential: Arc<Counter>,
    node: Arc<Counter>,
}

impl Ticket {
    /// A place in `credential`'s count and `node`'s, or the limit that is reached (nothing is
    /// counted then).
    pub(crate) fn take(credential: &Arc<Counter>, node: &Arc<Counter>) -> Result<Ticket, Full> {
        if !credential.take() {
            return Err(Full::Credential(credential.limit.unwrap_or(0)));
        }
        if !node.take() {
            credential.give_back();
            return Err(Full::Node(node.limit.unwrap_or(0)));
        }
        Ok(Ticket {
            credential: Arc::clone(credential),
            node: Arc::clone(node),
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.credential.give_back();
        self.node.give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_counts_in_both_or_neither_and_gives_both_back() {
        let node = Counter::new(Some(3));
        let a = Counter::new(Some(2));
        let b = Counter::new(None);
        let a1 = Ticket::take(&a, &node).unwrap();
        let a2 = Ticket::take(&a, &node).unwrap();
        // The credential's limit: nothing counted in the node.
        assert_eq!(Ticket::take(&a, &node).unwrap_err(), Full::Credential(2));
        assert_eq!((a.open(), node.open()), (2, 2));
        let b1 = Ticket::take(&b, &node).unwrap();
        // The node's limit: the credential's place is given back.
        assert_eq!(Ticket::take(&b, &node).unwrap_err(), Full::Node(3));
        assert_eq!((b.open(), node.open()), (1, 3));
        drop(a1);
        assert_eq!((a.open(), node.open()), (1, 2));
        let b2 = Ticket::take(&b, &node).unwrap();
        drop((a2, b1, b2));
        assert_eq!((a.open(), b.open(), node.open()), (0, 0, 0));
    }

    #[test]
    fn racing_takers_never_pass_the_limit() {
        let node = Counter::new(Some(5));
        let credential = Counter::new(None);
        let won: Vec<Option<Ticket>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..32)
                .map(|_| s.spawn(|| Ticket::take(&credential, &node).ok()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(won.iter().flatten().count(), 5);
        assert_eq!(node.open(), 5);
        drop(won);
        assert_eq!((node.open(), credential.open()), (0, 0));
    }
}
