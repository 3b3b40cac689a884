//! Admission for sandbox set-ups: at most [`PER_CPU`] per CPU of this process at once, the rest
//! asleep in the order they came.
//!
//! Setting a sandbox up (bwrap's namespaces, mounts and seccomp filter, the first exec, the
//! cgroup made and joined) is CPU-bound kernel work that also takes the kernel's cgroup and mount
//! locks. A process that serves many sessions starts many at once. Each is runnable, so the run
//! queue grows with them, and every thread of the process waits behind them for a CPU: the event
//! loop that answers a quick call (`read_file`) too, once for every hop of the call. Set-ups that
//! wait are not runnable; the CPU they would have shared goes to the ones admitted.
//!
//! Measured on the node bench (64 sessions on 2 cores, beside runs without the gate): `read_file`
//! p99 85-116 ms without it; 13-18 ms with one set-up per CPU, 22-38 ms with two, for about 7%
//! fewer actions per second than without.
//!
//! What holds a [`Place`]:
//! - a warm sandbox being started ([`crate::warm`]): from its cgroup's creation until its hold
//!   says it is set up, or gives up;
//! - a command run cold: from its cgroup's creation until it exits or [`SETUP_SHARE`] after it
//!   was spawned, whichever comes first. bwrap says nothing when it has set a cold command's
//!   sandbox up, so its share is bounded by time: a long command holds a place for at most that.
//!
//! A command handed to a warm sandbox takes no place: its set-up was admitted when it was made.
//! Nothing else waits here: a call that runs no sandbox never meets the gate.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

/// Set-ups admitted at once per CPU this process may run on: one keeps each CPU busy with a
/// set-up while a quick call still finds it soon (two per CPU doubled the tail; see above).
pub(crate) const PER_CPU: usize = 1;

/// The longest a cold command holds its place after its spawn: longer than bwrap takes to set a
/// sandbox up on a loaded machine (about 5 ms on an idle one), short enough that commands that
/// run for long do not keep others from starting.
pub(crate) const SETUP_SHARE: Duration = Duration::from_millis(20);

/// The process's gate, sized by the CPUs it may run on (its affinity and cgroup quota, as
/// [`std::thread::available_parallelism`] reads them) when first used.
pub(crate) fn process_gate() -> &'static SetupGate {
    static GATE: OnceLock<SetupGate> = OnceLock::new();
    GATE.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        SetupGate::new(cpus.saturating_mul(PER_CPU))
    })
}

/// A counting gate that admits in arrival order.
#[derive(Debug)]
pub(crate) struct SetupGate {
    limit: usize,
    state: Mutex<Queue>,
    changed: Condvar,
}

/// Places held, and the tickets of the set-ups waiting.
#[derive(Debug, Default)]
struct Queue {
    held: usize,
    /// The ticket the next set-up to come gets.
    next: u64,
    /// The ticket admitted next: every ticket below it has been admitted.
    head: u64,
}

/// One admitted set-up's place, given back when dropped.
#[derive(Debug)]
#[must_use = "the place is given back as soon as it is dropped"]
pub(crate) struct Place<'g> {
    gate: &'g SetupGate,
}

impl SetupGate {
    /// A gate admitting `limit` set-ups at once (at least one).
    pub(crate) fn new(limit: usize) -> SetupGate {
        SetupGate {
            limit: limit.max(1),
            state: Mutex::new(Queue::default()),
            changed: Condvar::new(),
        }
    }

    /// Waits, asleep, until every set-up that came earlier is admitted and a place is free, then
    /// takes it.
    pub(crate) fn enter(&self) -> Place<'_> {
        let mut queue = self.lock();
        let ticket = queue.next;
        queue.next += 1;
        while queue.head != ticket || queue.held >= self.limit {
            queue = self
                .changed
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        queue.head += 1;
        queue.held += 1;
        drop(queue);
        // The next in line may find a place free too.
        self.changed.notify_all();
        Place { gate: self }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.gate.lock().held -= 1;
        self.gate.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    #[test]
    fn no_more_than_the_limit_are_admitted_at_once() {
        let gate = Arc::new(SetupGate::new(3));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let _place = gate.enter();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // The positive control of the limit: the threads did meet inside, up to it.
        assert_eq!(most.load(Ordering::SeqCst), 3);
        assert_eq!(gate.lock().held, 0, "every place was given back");
    }

    #[test]
    fn set_ups_are_admitted_in_the_order_they_came() {
        let gate = Arc::new(SetupGate::new(1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = gate.enter();
        let mut threads = Vec::new();
        for i in 0..5u64 {
            let (g, order) = (gate.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let _place = g.enter();
                order.lock().unwrap().push(i);
            }));
            // Each waits in line before the next comes.
            let deadline = Instant::now() + Duration::from_secs(5);
            while gate.lock().next < i + 2 {
                assert!(Instant::now() < deadline, "thread {i} never came");
                std::thread::yield_now();
            }
        }
        assert!(
            order.lock().unwrap().is_empty(),
            "none is admitted while the place is held"
        );
        drop(first);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_zero_limit_still_admits_one() {
        let gate = SetupGate::new(0);
        let place = gate.enter();
        assert_eq!(gate.lock().held, 1);
        drop(place);
        assert_eq!(gate.lock().held, 0);
    }

    #[test]
    fn the_process_gate_admits_per_cpu() {
        let cpus = std::thread::available_parallelism().unwrap().get();
        assert_eq!(process_gate().limit, cpus * PER_CPU);
    }
}
