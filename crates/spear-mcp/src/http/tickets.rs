//! Session tickets and call slots: what counts a session against its credential's limit and the
//! node's, and a call in flight against its credential's.
//!
//! A [`Ticket`] is taken before a session is made and lives as long as the session (the server
//! holds it): taking one increments both counts at once, or neither, so two clients racing for
//! the last place cannot both get it; dropping it gives both places back, however the session
//! ends (closed, idle, revoked, the server stopping). Attack stopped: one credential (or all of
//! them) opening sessions until the node runs out of memory, processes or disk.
//!
//! A [`CallSlot`] is taken before a request is handed on and lives as long as its answer is
//! being sent. Attack stopped: one credential posting calls faster than they finish, its
//! sessions' queues growing without bound and starving every other credential's calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One count (of open sessions, or of calls in flight) with its limit (none: unlimited).
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

    /// What is counted now.
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

/// One call in flight in its credential's count, given back when dropped.
#[derive(Debug)]
pub(crate) struct CallSlot {
    count: Arc<Counter>,
}

impl CallSlot {
    /// A slot in `count`, or its limit when it is reached (nothing is counted then).
    pub(crate) fn take(count: &Arc<Counter>) -> Result<CallSlot, usize> {
        if count.take() {
            Ok(CallSlot {
                count: Arc::clone(count),
            })
        } else {
            Err(count.limit.unwrap_or(0))
        }
    }
}

impl Drop for CallSlot {
    fn drop(&mut self) {
        self.count.give_back();
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

    #[test]
    fn call_slots_stop_at_the_limit_and_come_back_when_dropped() {
        let calls = Counter::new(Some(2));
        let one = CallSlot::take(&calls).unwrap();
        let two = CallSlot::take(&calls).unwrap();
        assert_eq!(CallSlot::take(&calls).unwrap_err(), 2);
        assert_eq!(calls.open(), 2);
        drop(one);
        let three = CallSlot::take(&calls).unwrap();
        drop((two, three));
        assert_eq!(calls.open(), 0);
    }
}
