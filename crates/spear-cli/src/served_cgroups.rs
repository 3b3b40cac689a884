//! Whether a server's command would run within the limits its client runs under: the cgroup
//! half of a served call's identity (the binary's `served::process_identity`).
//!
//! A command spear runs gets a cgroup of its own under the cgroup of the process that runs it
//! (or the session's inside it). Run by the client, every limit on the client's cgroup and its
//! ancestors bounds it; run by a server in another cgroup, none of them does. Attack stopped: a
//! client limited to 60 processes (or some memory) having a server outside that cgroup run its
//! command with 100.
//!
//! The server runs a call only when, in every hierarchy, its own cgroup is the client's or lies
//! below it: limits are hierarchical (a descendant is bounded by every ancestor's), so what runs
//! below the server's cgroup runs within the client's limits too. Hierarchies whose settings do
//! not bind descendants (cgroup v1's `net_cls` and `net_prio`, which tag traffic a firewall may
//! match, `blkio`, `perf_event` and any controller not known here) must be the very same cgroup.

/// cgroup v1 controllers whose limits bind every descendant; a hierarchy holding only these (or
/// none, a named hierarchy such as `name=systemd`) may hold the server below the client.
const HIERARCHICAL: &[&str] = &[
    "memory", "pids", "cpu", "cpuacct", "cpuset", "freezer", "devices", "hugetlb", "rdma", "misc",
];

/// One line of `/proc/<pid>/cgroup`: `ID:CONTROLLERS:PATH`.
#[derive(Debug, PartialEq, Eq)]
struct Line<'a> {
    /// `ID:CONTROLLERS`, which names the hierarchy.
    hierarchy: &'a str,
    /// The controllers (empty for cgroup v2's `0::`).
    controllers: &'a str,
    path: &'a str,
}

/// The lines of `text`; `None` when one is malformed or names a hierarchy twice (what the kernel
/// never writes: each hierarchy is compared once, both ways).
fn lines(text: &str) -> Option<Vec<Line<'_>>> {
    let lines: Vec<Line<'_>> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (id, rest) = l.split_once(':')?;
            let (controllers, path) = rest.split_once(':')?;
            path.starts_with('/').then(|| Line {
                hierarchy: &l[..id.len() + 1 + controllers.len()],
                controllers,
                path,
            })
        })
        .collect::<Option<_>>()?;
    let mut names: Vec<&str> = lines.iter().map(|l| l.hierarchy).collect();
    names.sort_unstable();
    names.dedup();
    (names.len() == lines.len()).then_some(lines)
}

/// Whether every limit on `client`'s cgroups (the text of its `/proc/self/cgroup`) binds what
/// runs in `server`'s: `Ok`, or which hierarchy does not, for the server's log.
pub fn within(client: &str, server: &str) -> Result<(), String> {
    let (Some(client), Some(server)) = (lines(client), lines(server)) else {
        return Err("cgroup membership could not be read".to_owned());
    };
    if client.is_empty() || client.len() != server.len() {
        return Err("cgroup hierarchies differ".to_owned());
    }
    for c in &client {
        let Some(s) = server.iter().find(|s| s.hierarchy == c.hierarchy) else {
            return Err(format!("cgroup hierarchy {} differs", c.hierarchy));
        };
        let below = s.path == c.path
            || (binds_descendants(c.controllers)
                && s.path
                    .strip_prefix(c.path)
                    .is_some_and(|rest| c.path == "/" || rest.starts_with('/')));
        if !below {
            return Err(format!(
                "cgroup ({}) is {}, and the server's {} is not within it",
                c.hierarchy, c.path, s.path
            ));
        }
    }
    Ok(())
}

/// Whether every controller of a hierarchy binds descendants (cgroup v2's `0::`: all of them
/// do; a named v1 hierarchy has none).
fn binds_descendants(controllers: &str) -> bool {
    controllers.is_empty()
        || controllers
            .split(',')
            .all(|c| c.starts_with("name=") || HIERARCHICAL.contains(&c))
}

#[cfg(test)]
mod tests {
    use super::within;

    const V1: &str = "12:pids:/user/a\n11:memory:/user/a\n10:cpu,cpuacct:/user/a\n\
                      9:net_cls,net_prio:/user/a\n1:name=systemd:/user/a\n0::/user/a\n";

    fn v1_at(path: &str, net: &str) -> String {
        format!(
            "12:pids:{path}\n11:memory:{path}\n10:cpu,cpuacct:{path}\n9:net_cls,net_prio:{net}\n\
             1:name=systemd:{path}\n0::{path}\n"
        )
    }

    #[test]
    fn a_server_runs_a_call_only_within_its_clients_cgroups() {
        let table: &[(&str, &str, Result<(), &str>)] = &[
            // The same cgroup: served.
            (V1, V1, Ok(())),
            ("0::/a/b\n", "0::/a/b\n", Ok(())),
            // The server below the client (v2, and v1 hierarchical controllers).
            ("0::/a\n", "0::/a/spear\n", Ok(())),
            ("0::/\n", "0::/anything\n", Ok(())),
            (V1, &v1_at("/user/a/serve", "/user/a"), Ok(())),
            // The client below the server, or beside it: its limits would be lifted.
            ("0::/a/limited\n", "0::/a\n", Err("0:")),
            ("0::/a/x\n", "0::/a/y\n", Err("0:")),
            ("0::/a\n", "0::/ab\n", Err("0:")),
            (&v1_at("/user/a/limited", "/user/a"), V1, Err("12:pids")),
            // A v1 hierarchy whose settings do not bind descendants: the very same cgroup.
            (
                V1,
                &v1_at("/user/a", "/user/a/other"),
                Err("9:net_cls,net_prio"),
            ),
            (
                V1,
                &v1_at("/user/a/serve", "/user/a/serve"),
                Err("9:net_cls,net_prio"),
            ),
            ("3:blkio:/a\n", "3:blkio:/a/b\n", Err("3:blkio")),
            // Hierarchies that differ, or that cannot be read.
            ("0::/a\n", "1:pids:/a\n", Err("hierarch")),
            (V1, "0::/user/a\n", Err("hierarch")),
            ("", "", Err("hierarch")),
            ("garbage\n", "0::/\n", Err("could not be read")),
            ("0::/a\n", "0::relative\n", Err("could not be read")),
            ("\0unknown", "0::/\n", Err("could not be read")),
            // A hierarchy named twice would let the other side's go unchecked.
            (
                "0::/\n0::/\n",
                "0::/\n1:pids:/x\n",
                Err("could not be read"),
            ),
        ];
        for (client, server, want) in table {
            let got = within(client, server);
            match want {
                Ok(()) => assert_eq!(got, Ok(()), "{client:?} / {server:?}"),
                Err(part) => assert!(
                    got.as_ref().is_err_and(|e| e.contains(part)),
                    "{client:?} / {server:?}: {got:?}"
                ),
            }
        }
    }
}
