//! Where spear can make its cgroup v2 subtree, planned from what the tree shows (pure), and the
//! exact step that would make one possible where none is.
//!
//! cgroup v2 gives a cgroup's children a controller only when the cgroup lists it in its
//! `cgroup.subtree_control`, which in turn needs the controller in its own `cgroup.controllers`
//! (its parent's grant), all the way from the hierarchy's root; and a cgroup other than the root
//! may enable a controller for its children only while it holds no process ("no internal
//! processes"). A pure v2 host without systemd (a container's namespace root, a CI runner, a
//! Kubernetes node, a VM whose init is not systemd) often starts spear in a cgroup that offers
//! only some controllers, or that it shares with the shell that started it.
//!
//! [`plan`] reads a [`Chain`] (the cgroups from the hierarchy's root down to spear's own) and
//! says what to do:
//! - which ancestors must enable which controllers for their children ([`Plan::enable`]), each an
//!   interior cgroup holding no process (or the root, to which the rule does not apply) that
//!   spear may write;
//! - where its commands' cgroups go ([`Base`]): in its own cgroup, beside the leaf spear moves
//!   itself into, when it holds nothing but spear; else in a new cgroup beside its own, under
//!   the same parent, which takes the limits of the cgroup spear left so that no limit that
//!   applied to spear is lifted.
//!
//! Where nothing works, the refusal ([`Unplannable`]) names the cgroup, what it lacks, and the one
//! step that would make it work. Nothing here writes: the backend ([`super::v2::CgroupV2`])
//! carries a plan out.

/// The controllers spear needs for its commands on cgroup v2.
pub(crate) const CONTROLLERS: [&str; 3] = ["memory", "pids", "cpu"];

/// One cgroup on the way from the hierarchy's root to spear's own, as its files show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// Its path in the hierarchy (`/`, `/user.slice`, ...), as `/proc/self/cgroup` writes it.
    pub rel: String,
    /// Its `cgroup.controllers`: what its parent grants it.
    pub controllers: Vec<String>,
    /// Its `cgroup.subtree_control`: what it grants its children.
    pub subtree_control: Vec<String>,
    /// How many processes its `cgroup.procs` lists (spear itself included, for its own).
    pub processes: usize,
    /// Whether spear may create children in it and write its control files and `cgroup.procs`.
    pub writable: bool,
    /// Whether it is the hierarchy's real root (it has no `cgroup.type`), the only cgroup exempt
    /// from "no internal processes". A container's cgroup namespace shows its own root as `/`,
    /// but that one is an ordinary cgroup to the kernel and keeps the rule.
    pub is_root: bool,
}

/// The cgroups from the hierarchy's root (the first, `/`; a container's namespace root shows
/// itself as `/`) down to spear's own (the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain(pub Vec<Node>);

/// Where spear's commands' cgroups go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// In spear's own cgroup, beside the leaf spear moves itself into (none when its own is the
    /// root).
    Own,
    /// In a new cgroup under `parent`, beside spear's own, which other processes share: spear
    /// moves itself into a leaf of the new cgroup, and writes there the limits its own cgroup
    /// had.
    Beside {
        /// The parent's path in the hierarchy.
        parent: String,
    },
}

/// What spear does before its first command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Ancestors (by path, root first) and the controllers each enables for its children.
    pub enable: Vec<(String, Vec<&'static str>)>,
    /// Where the commands go.
    pub base: Base,
}

/// Why no subtree can be made, and the one step that would make one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unplannable {
    /// What stops it, naming the cgroup.
    pub why: String,
    /// What a person can do.
    pub fix: String,
}

impl std::fmt::Display for Unplannable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; to fix: {}", self.why, self.fix)
    }
}

/// The plan for `chain`, or why there is none. `mount` is where the hierarchy is mounted (for
/// the paths the fix names).
pub(crate) fn plan(chain: &Chain, mount: &str) -> Result<Plan, Unplannable> {
    let nodes = &chain.0;
    let (Some(root), Some(own)) = (nodes.first(), nodes.last()) else {
        return Err(Unplannable {
            why: "spear's cgroup v2 is not known".into(),
            fix: "mount cgroup2 at /sys/fs/cgroup".into(),
        });
    };
    check_root(root, mount)?;
    // The commands' cgroups are children of spear's own cgroup, or (when other processes share
    // it) of a new cgroup beside it: every cgroup from the root down to own, or to its parent,
    // must grant the controllers to its children.
    let shared = !own.is_root && own.processes > 1;
    if shared && nodes.len() < 2 {
        return Err(namespace_root_shared(own, mount));
    }
    let last = if shared {
        nodes.len().saturating_sub(2)
    } else {
        nodes.len() - 1
    };
    let mut enable = Vec::new();
    for (i, node) in nodes[..=last].iter().enumerate() {
        // Spear's own cgroup is emptied first (spear moves into its leaf).
        let spears_own = !shared && i == nodes.len() - 1 && node.processes == 1;
        if let Some(missing) = grant(node, spears_own, mount)? {
            // Its parent's grant, if it lacks one, is the step before it, as the kernel needs.
            enable.push((node.rel.clone(), missing));
        }
    }
    let base = if shared {
        beside(own, &nodes[last], mount)?
    } else if own.writable {
        Base::Own
    } else {
        return Err(Unplannable {
            why: format!(
                "spear's cgroup {} is not writable by uid {} (not delegated)",
                dir(mount, &own.rel),
                rustix::process::geteuid().as_raw()
            ),
            fix: "run spear as root, or in a delegated cgroup (systemd-run --user --scope -p \
                  Delegate=yes spear ...)"
                .into(),
        });
    };
    Ok(Plan { enable, base })
}

/// The directory of the cgroup at `rel` under `mount`.
fn dir(mount: &str, rel: &str) -> String {
    format!(
        "{}{}",
        mount.trim_end_matches('/'),
        rel.trim_end_matches('/')
    )
}

/// The hierarchy's root must offer every controller: nothing below can have one it lacks.
fn check_root(root: &Node, mount: &str) -> Result<(), Unplannable> {
    let absent: Vec<&str> = CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !root.controllers.iter().any(|x| x == c))
        .collect();
    if absent.is_empty() {
        return Ok(());
    }
    Err(Unplannable {
        why: format!(
            "the cgroup v2 hierarchy at {} offers no {} controller (bound to cgroup v1, or \
             withheld by the container runtime)",
            dir(mount, &root.rel),
            absent.join(", ")
        ),
        fix: "give the container or host the controllers (cgroup v2 with memory, pids and cpu, \
              e.g. docker run --cgroupns=private on a v2 host), or set \
              SPEAR_RESOURCE_CONTROL=delegated where an outer runtime already limits spear"
            .into(),
    })
}

/// The controllers `node` must enable for its children (`None`: all are), or why it cannot:
/// spear may not write it, or it holds processes (no internal processes; the root is exempt, and
/// so is spear's own cgroup when `spears_own`, which spear empties into its leaf first).
fn grant(
    node: &Node,
    spears_own: bool,
    mount: &str,
) -> Result<Option<Vec<&'static str>>, Unplannable> {
    let missing: Vec<&'static str> = CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !node.subtree_control.iter().any(|x| x == c))
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    if !node.writable {
        let plus: Vec<String> = missing.iter().map(|c| format!("+{c}")).collect();
        return Err(Unplannable {
            why: format!(
                "{} does not enable {} for its children, and spear (uid {}) may not write its \
                 cgroup.subtree_control",
                dir(mount, &node.rel),
                missing.join(", "),
                rustix::process::geteuid().as_raw()
            ),
            fix: format!(
                "as root: echo '{}' > {}/cgroup.subtree_control; or start spear in a delegated \
                 cgroup (systemd-run --user --scope -p Delegate=yes spear ...)",
                plus.join(" "),
                dir(mount, &node.rel)
            ),
        });
    }
    if !node.is_root && node.processes > 0 && !spears_own {
        return Err(Unplannable {
            why: format!(
                "{} holds {} process(es), so cgroup v2 lets it enable no controller for its \
                 children (no internal processes)",
                dir(mount, &node.rel),
                node.processes
            ),
            fix: format!(
                "move those processes into a child cgroup of {} (or start spear in a cgroup of \
                 its own), then run spear again",
                dir(mount, &node.rel)
            ),
        });
    }
    Ok(Some(missing))
}

/// spear shares the top of a cgroup namespace (a container's `/`) with other processes: there is
/// no parent to make a cgroup beside it in, and the rule forbids enabling controllers there.
fn namespace_root_shared(own: &Node, mount: &str) -> Unplannable {
    let top = dir(mount, &own.rel);
    Unplannable {
        why: format!(
            "{top} is the top of this cgroup namespace and holds {} other process(es), so cgroup \
             v2 lets it enable no controller for its children (no internal processes)",
            own.processes - 1
        ),
        fix: format!(
            "start spear as the container's first process, or move the others into a child \
             first (as root: mkdir {top}/init && for p in $(cat {top}/cgroup.procs); do echo $p \
             > {top}/init/cgroup.procs; done)"
        ),
    }
}

/// A new cgroup under `parent`, beside spear's shared `own`, if spear may make one there.
fn beside(own: &Node, parent: &Node, mount: &str) -> Result<Base, Unplannable> {
    if parent.writable {
        return Ok(Base::Beside {
            parent: parent.rel.clone(),
        });
    }
    Err(Unplannable {
        why: format!(
            "{} is shared with {} other process(es), and spear may not make a cgroup beside it \
             in {}",
            dir(mount, &own.rel),
            own.processes - 1,
            dir(mount, &parent.rel)
        ),
        fix: format!(
            "start spear in a cgroup of its own (as root: mkdir {0}/spear && echo $$ > \
             {0}/spear/cgroup.procs before starting it)",
            dir(mount, &parent.rel)
        ),
    })
}

/// The chain from the hierarchy's mount `mount` down to spear's own cgroup directory `own`, read
/// from their files (`writable` says whether spear may write a directory's control files);
/// `None` when `own` is not under `mount` or a file cannot be read.
pub(crate) fn read_chain(
    mount: &std::path::Path,
    own: &std::path::Path,
    writable: &dyn Fn(&std::path::Path) -> bool,
) -> Option<Chain> {
    let below = own.strip_prefix(mount).ok()?;
    let mut dirs = vec![mount.to_path_buf()];
    for part in below.components() {
        let next = dirs.last()?.join(part);
        dirs.push(next);
    }
    let words = |path: std::path::PathBuf| -> Option<Vec<String>> {
        let text = std::fs::read_to_string(path).ok()?;
        Some(text.split_whitespace().map(str::to_owned).collect())
    };
    let mut nodes = Vec::new();
    for dir in dirs {
        let rel = format!("/{}", dir.strip_prefix(mount).ok()?.display());
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
        nodes.push(Node {
            rel: if rel == "/" {
                rel
            } else {
                rel.trim_end_matches('/').to_owned()
            },
            controllers: words(dir.join("cgroup.controllers"))?,
            subtree_control: words(dir.join("cgroup.subtree_control"))?,
            processes: procs.lines().filter(|l| !l.trim().is_empty()).count(),
            writable: writable(&dir.join("cgroup.subtree_control"))
                && writable(&dir.join("cgroup.procs"))
                && writable(&dir),
            is_root: !dir.join("cgroup.type").exists(),
        });
    }
    Some(Chain(nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[&str] = &["cpuset", "cpu", "io", "memory", "pids"];

    fn node(rel: &str, controllers: &[&str], subtree: &[&str], processes: usize) -> Node {
        Node {
            rel: rel.into(),
            controllers: controllers.iter().map(|s| (*s).to_owned()).collect(),
            subtree_control: subtree.iter().map(|s| (*s).to_owned()).collect(),
            processes,
            writable: true,
            is_root: rel == "/",
        }
    }

    /// A container's view: its namespace root shows as `/` but keeps the rule.
    fn namespaced(mut n: Node) -> Node {
        n.is_root = false;
        n
    }

    fn locked(mut n: Node) -> Node {
        n.writable = false;
        n
    }

    fn enables(plan: &Plan) -> Vec<(String, Vec<&'static str>)> {
        plan.enable.clone()
    }

    /// Every layout the issue names, with what spear does or the step it asks for.
    #[test]
    fn layouts() {
        let m = "/sys/fs/cgroup";
        // Root with every controller, spear started in a child that offers only memory (the
        // measured Ubuntu 24.04 case): the root and the parent enable the rest, spear's own
        // cgroup is its own.
        let ubuntu = Chain(vec![
            node("/", ALL, &["memory"], 30),
            node("/user.slice", &["memory"], &["memory"], 0),
            node("/user.slice/session-1", &["memory"], &[], 1),
        ]);
        let p = plan(&ubuntu, m).unwrap();
        assert_eq!(
            enables(&p),
            [
                ("/".to_owned(), vec!["pids", "cpu"]),
                ("/user.slice".to_owned(), vec!["pids", "cpu"]),
                (
                    "/user.slice/session-1".to_owned(),
                    vec!["memory", "pids", "cpu"]
                ),
            ]
        );
        assert_eq!(p.base, Base::Own);

        // The same, but spear shares its cgroup with the shell that started it: a cgroup beside
        // it, under its parent, and its own cgroup is left alone.
        let shared = Chain(vec![
            node("/", ALL, ALL, 30),
            node("/user.slice", ALL, ALL, 0),
            node("/user.slice/session-1", ALL, &[], 2),
        ]);
        let p = plan(&shared, m).unwrap();
        assert!(enables(&p).is_empty(), "{p:?}");
        assert_eq!(
            p.base,
            Base::Beside {
                parent: "/user.slice".into()
            }
        );

        // A container's namespace root, spear its first and only process: it moves into its leaf
        // and the namespace's root enables the controllers.
        let container = Chain(vec![namespaced(node("/", ALL, &[], 1))]);
        let p = plan(&container, m).unwrap();
        assert_eq!(
            enables(&p),
            [("/".to_owned(), vec!["memory", "pids", "cpu"])]
        );
        assert_eq!(p.base, Base::Own);

        // The host's real root (a VM whose init is not systemd, spear as root in `/` beside
        // everything else): exempt from the rule, so the commands go right under it.
        let host_root = Chain(vec![node("/", ALL, &[], 40)]);
        let p = plan(&host_root, m).unwrap();
        assert_eq!(p.base, Base::Own);
        assert_eq!(enables(&p).len(), 1);

        // A user's delegated subtree, already enabled: nothing to enable, spear's own cgroup.
        let delegated = Chain(vec![
            locked(node("/", ALL, ALL, 30)),
            locked(node("/user.slice", ALL, ALL, 0)),
            node(
                "/user.slice/user-1000.slice/app.slice/spear.scope",
                ALL,
                &[],
                1,
            ),
        ]);
        let p = plan(&delegated, m).unwrap();
        assert_eq!(
            (enables(&p), p.base),
            (
                vec![(
                    "/user.slice/user-1000.slice/app.slice/spear.scope".to_owned(),
                    vec!["memory", "pids", "cpu"]
                )],
                Base::Own
            )
        );
    }

    #[test]
    fn refusals_name_the_cgroup_and_the_step() {
        let m = "/sys/fs/cgroup";
        // Controllers missing at the root: bound to v1, or withheld.
        let hybrid = Chain(vec![node("/", &[], &[], 10), node("/a", &[], &[], 1)]);
        let e = plan(&hybrid, m).unwrap_err();
        assert!(
            e.why.contains("/sys/fs/cgroup offers no memory, pids, cpu"),
            "{e}"
        );
        assert!(e.fix.contains("SPEAR_RESOURCE_CONTROL=delegated"), "{e}");

        // A user who may not write the parent that withholds pids.
        let user = Chain(vec![
            locked(node("/", ALL, ALL, 30)),
            locked(node("/user.slice", ALL, &["memory", "cpu"], 0)),
            node("/user.slice/s", &["memory", "cpu"], &[], 1),
        ]);
        let e = plan(&user, m).unwrap_err();
        assert!(
            e.why
                .starts_with("/sys/fs/cgroup/user.slice does not enable pids"),
            "{e}"
        );
        assert!(
            e.fix
                .contains("echo '+pids' > /sys/fs/cgroup/user.slice/cgroup.subtree_control"),
            "{e}"
        );

        // An ancestor that must grant but holds processes itself.
        let busy = Chain(vec![
            node("/", ALL, ALL, 30),
            node("/busy", ALL, &["memory"], 4),
            node("/busy/spear", &["memory"], &[], 1),
        ]);
        let e = plan(&busy, m).unwrap_err();
        assert!(
            e.why.contains("/sys/fs/cgroup/busy holds 4 process(es)"),
            "{e}"
        );
        assert!(e.fix.contains("child cgroup of /sys/fs/cgroup/busy"), "{e}");

        // A container's namespace root shared with a shell (`docker exec`): no parent to go
        // beside, and the rule holds there.
        let docker_exec = Chain(vec![namespaced(node("/", ALL, &[], 3))]);
        let e = plan(&docker_exec, m).unwrap_err();
        assert!(
            e.why
                .contains("top of this cgroup namespace and holds 2 other"),
            "{e}"
        );
        assert!(e.fix.contains("mkdir /sys/fs/cgroup/init"), "{e}");

        // Shared with the shell, and the parent not ours to write.
        let shared = Chain(vec![
            locked(node("/", ALL, ALL, 30)),
            locked(node("/ci", ALL, ALL, 0)),
            node("/ci/job", ALL, &[], 5),
        ]);
        let e = plan(&shared, m).unwrap_err();
        assert!(e.why.contains("shared with 4 other process(es)"), "{e}");
        assert!(e.fix.contains("mkdir /sys/fs/cgroup/ci/spear"), "{e}");

        // spear's own cgroup, not delegated: it cannot enable for its children, or (enabled by
        // someone else) spear cannot make children in it.
        let foreign = Chain(vec![
            locked(node("/", ALL, ALL, 30)),
            locked(node("/s", ALL, &[], 1)),
        ]);
        let e = plan(&foreign, m).unwrap_err();
        assert!(
            e.why
                .contains("/sys/fs/cgroup/s does not enable memory, pids, cpu"),
            "{e}"
        );
        let enabled = Chain(vec![
            locked(node("/", ALL, ALL, 30)),
            locked(node("/s", ALL, ALL, 1)),
        ]);
        let e = plan(&enabled, m).unwrap_err();
        assert!(e.why.contains("/sys/fs/cgroup/s is not writable"), "{e}");
        assert!(e.fix.contains("Delegate=yes"), "{e}");
    }

    /// A fake cgroupfs tree read from disk and planned.
    #[test]
    fn a_fake_tree_is_read_and_its_steps_named() {
        let tmp = tempfile::tempdir().unwrap();
        let mount = tmp.path();
        let write = |rel: &str, controllers: &str, subtree: &str, procs: &str| {
            let dir = mount.join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cgroup.controllers"), controllers).unwrap();
            std::fs::write(dir.join("cgroup.subtree_control"), subtree).unwrap();
            std::fs::write(dir.join("cgroup.procs"), procs).unwrap();
            if !rel.is_empty() {
                std::fs::write(dir.join("cgroup.type"), "domain\n").unwrap();
            }
        };
        write("", "cpuset cpu io memory pids\n", "memory\n", "1\n2\n");
        write("user.slice", "memory\n", "memory\n", "");
        write("user.slice/s", "memory\n", "", "77\n");
        let own = mount.join("user.slice/s");
        let chain = read_chain(mount, &own, &|_| true).unwrap();
        assert_eq!(chain.0.len(), 3);
        assert_eq!(chain.0[2].rel, "/user.slice/s");
        assert_eq!(chain.0[0].processes, 2);
        assert_eq!(chain.0[1].controllers, ["memory"]);
        assert!(chain.0[0].is_root && !chain.0[1].is_root);
        let m = mount.to_str().unwrap();
        let p = plan(&chain, m).unwrap();
        assert_eq!(
            enables(&p),
            [
                ("/".to_owned(), vec!["pids", "cpu"]),
                ("/user.slice".to_owned(), vec!["pids", "cpu"]),
                ("/user.slice/s".to_owned(), vec!["memory", "pids", "cpu"]),
            ]
        );
        // Not under the mount: no chain.
        assert!(read_chain(&mount.join("user.slice"), mount, &|_| true).is_none());
    }

    /// Positive control of the ordering: every enabling step's cgroup is offered the controller
    /// by the step above it (or is the root), as the kernel requires.
    #[test]
    fn enabling_runs_from_the_root_down() {
        let chain = Chain(vec![
            node("/", ALL, &[], 9),
            node("/a", &[], &[], 0),
            node("/a/b", &[], &[], 0),
            node("/a/b/own", &[], &[], 1),
        ]);
        let p = plan(&chain, "/sys/fs/cgroup").unwrap();
        let order: Vec<&str> = p.enable.iter().map(|(rel, _)| rel.as_str()).collect();
        assert_eq!(order, ["/", "/a", "/a/b", "/a/b/own"]);
        assert!(
            p.enable
                .iter()
                .all(|(_, c)| c == &["memory", "pids", "cpu"])
        );
    }
}
