//! Which turns to evict so that a checkpoint store fits its quota: a pure plan over what a scan
//! of the store found ([`plan`]).
//!
//! A turn's bytes are its manifest and the blobs only it refers to: a blob several turns share is
//! freed when the last of them goes. Unreferenced blobs (left by a crash, or by an eviction
//! another process began) go first, except those a capture in progress may still name
//! (`pending`). Protected turns (the current turn, the latest of each store) are never evicted:
//! when the store cannot fit without them, the plan says so and the caller refuses the write.

use std::collections::{HashMap, HashSet};

/// One turn as a scan found it. Keys of blobs are opaque (`store/hash` when several stores are
/// planned together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnRefs {
    /// Order: older turns first (creation time, then sequence).
    pub(crate) order: (u64, u64),
    /// Bytes of the manifest file.
    pub(crate) manifest_bytes: u64,
    /// The blobs it refers to.
    pub(crate) blobs: Vec<String>,
    /// Never evicted.
    pub(crate) protected: bool,
}

/// What to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Indexes into the turns given, oldest first.
    pub(crate) evict: Vec<usize>,
    /// Blobs no remaining turn refers to.
    pub(crate) free_blobs: Vec<String>,
    /// Bytes held once the plan is carried out.
    pub(crate) after: u64,
    /// Whether `after + need` is within the limit.
    pub(crate) fits: bool,
}

/// Plans the removals that bring a store holding `turns` and `blobs` (key to size) down so that
/// `need` more bytes fit within `limit`. Pure.
pub(crate) fn plan(
    turns: &[TurnRefs],
    blobs: &HashMap<String, u64>,
    pending: &HashSet<String>,
    need: u64,
    limit: u64,
) -> Plan {
    let mut held: u64 =
        blobs.values().sum::<u64>() + turns.iter().map(|t| t.manifest_bytes).sum::<u64>();
    let fits = |held: u64| held.saturating_add(need) <= limit;
    if fits(held) {
        return Plan {
            after: held,
            fits: true,
            ..Plan::default()
        };
    }
    let mut refs: HashMap<&str, usize> = HashMap::new();
    for t in turns {
        // A turn naming a blob twice holds it once.
        let unique: HashSet<&str> = t.blobs.iter().map(String::as_str).collect();
        for b in unique {
            *refs.entry(b).or_default() += 1;
        }
    }
    let mut out = Plan::default();
    // Unreferenced blobs first: nothing can restore from them.
    let mut orphans: Vec<&String> = blobs
        .keys()
        .filter(|b| !refs.contains_key(b.as_str()) && !pending.contains(*b))
        .collect();
    orphans.sort();
    for b in orphans {
        held -= blobs[b];
        out.free_blobs.push(b.clone());
    }
    let mut order: Vec<usize> = (0..turns.len()).filter(|&i| !turns[i].protected).collect();
    order.sort_by_key(|&i| turns[i].order);
    for i in order {
        if fits(held) {
            break;
        }
        let t = &turns[i];
        held = held.saturating_sub(t.manifest_bytes);
        let unique: HashSet<&str> = t.blobs.iter().map(String::as_str).collect();
        let mut freed: Vec<&str> = Vec::new();
        for b in unique {
            if let Some(n) = refs.get_mut(b) {
                *n -= 1;
                if *n == 0 && !pending.contains(b) {
                    freed.push(b);
                }
            }
        }
        freed.sort_unstable();
        for b in freed {
            if let Some(size) = blobs.get(b) {
                held = held.saturating_sub(*size);
                out.free_blobs.push(b.to_owned());
            }
        }
        out.evict.push(i);
    }
    out.after = held;
    out.fits = fits(held);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn turn(order: u64, blobs: &[&str], protected: bool) -> TurnRefs {
        TurnRefs {
            order: (order, order),
            manifest_bytes: 10,
            blobs: blobs.iter().map(|b| (*b).to_owned()).collect(),
            protected,
        }
    }

    fn sizes(list: &[(&str, u64)]) -> HashMap<String, u64> {
        list.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    #[allow(clippy::too_many_lines)] // One table.
    fn plans() {
        struct Case {
            name: &'static str,
            turns: Vec<TurnRefs>,
            blobs: HashMap<String, u64>,
            pending: &'static [&'static str],
            need: u64,
            limit: u64,
            evict: Vec<usize>,
            free: Vec<&'static str>,
            after: u64,
            fits: bool,
        }
        let cases = [
            Case {
                name: "within the limit: nothing removed, not even orphans",
                turns: vec![turn(1, &["a"], false)],
                blobs: sizes(&[("a", 100), ("o", 5)]),
                pending: &[],
                need: 10,
                limit: 1000,
                evict: vec![],
                free: vec![],
                after: 115,
                fits: true,
            },
            Case {
                name: "orphans go first and may be enough",
                turns: vec![turn(1, &["a"], false), turn(2, &["b"], true)],
                blobs: sizes(&[("a", 100), ("b", 100), ("o", 50)]),
                pending: &[],
                need: 30,
                limit: 260,
                evict: vec![],
                free: vec!["o"],
                after: 220,
                fits: true,
            },
            Case {
                name: "oldest turn first, whatever the order given",
                turns: vec![
                    turn(3, &["c"], false),
                    turn(1, &["a"], false),
                    turn(2, &["b"], false),
                    turn(4, &["d"], true),
                ],
                blobs: sizes(&[("a", 100), ("b", 100), ("c", 100), ("d", 100)]),
                pending: &[],
                need: 100,
                limit: 340,
                evict: vec![1, 2],
                free: vec!["a", "b"],
                after: 220,
                fits: true,
            },
            Case {
                name: "a shared blob is freed with its last turn only",
                turns: vec![
                    turn(1, &["s", "a"], false),
                    turn(2, &["s"], false),
                    turn(3, &["c"], true),
                ],
                blobs: sizes(&[("s", 100), ("a", 10), ("c", 10)]),
                pending: &[],
                need: 0,
                limit: 50,
                evict: vec![0, 1],
                free: vec!["a", "s"],
                after: 20,
                fits: true,
            },
            Case {
                name: "a pending blob is kept, named or not",
                turns: vec![turn(1, &["p"], false), turn(2, &["c"], true)],
                blobs: sizes(&[("p", 100), ("q", 100), ("c", 10)]),
                pending: &["p", "q"],
                need: 0,
                limit: 100,
                evict: vec![0],
                free: vec![],
                after: 220,
                fits: false,
            },
            Case {
                name: "protected turns alone over the limit: does not fit",
                turns: vec![turn(1, &["a"], false), turn(2, &["b"], true)],
                blobs: sizes(&[("a", 100), ("b", 500)]),
                pending: &[],
                need: 100,
                limit: 550,
                evict: vec![0],
                free: vec!["a"],
                after: 510,
                fits: false,
            },
            Case {
                name: "a turn naming a blob twice holds it once",
                turns: vec![turn(1, &["a", "a"], false), turn(2, &["a"], true)],
                blobs: sizes(&[("a", 100)]),
                pending: &[],
                need: 0,
                limit: 100,
                evict: vec![0],
                free: vec![],
                after: 110,
                fits: false,
            },
        ];
        for c in cases {
            let pending: HashSet<String> = c.pending.iter().map(|p| (*p).to_owned()).collect();
            let p = plan(&c.turns, &c.blobs, &pending, c.need, c.limit);
            assert_eq!(p.evict, c.evict, "{}", c.name);
            assert_eq!(p.free_blobs, c.free, "{}", c.name);
            assert_eq!(p.after, c.after, "{}", c.name);
            assert_eq!(p.fits, c.fits, "{}", c.name);
        }
    }
}
