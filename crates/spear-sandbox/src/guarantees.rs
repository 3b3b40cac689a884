//! Which guarantees one run really had, computed from what the sandbox built and saw, and which a
//! host can give at all. Pure: the argv is read as bwrap reads it, the facts of the run are given.
//!
//! Two steps, so that nothing is claimed on the strength of what was asked:
//! 1. [`from_argv`] reads the bwrap options that were handed to bwrap (not the spec's intent):
//!    the bits the mount and namespace setup gives, plus two candidates that only the run can
//!    confirm (a PID namespace for `process_boundary`, a held network namespace for
//!    `network_filtered`). An option it does not know makes it vouch for nothing.
//! 2. [`after_run`] confirms or drops the candidates from what happened (the tree confirmed dead,
//!    slirp4netns attached with its egress policy and stopped), and adds `resource_limits` from the
//!    rlimits and the cgroup backend of the command's tree.
//!
//! [`unmet_before_spawn`] decides whether a profile's requirements can be met on this host, before
//! anything is spawned.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use spear_core::{Guarantee, GuaranteeSet, Guarantees, LimitsBackend};

use crate::cgroup::BackendKind;
use crate::env::looks_secret;
use crate::spec::{BwrapSpec, Mask};

/// One bwrap option with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Opt<'a> {
    name: &'a OsStr,
    args: &'a [OsString],
}

/// How many arguments a bwrap option takes; `None` for one this module does not know.
fn arity(name: &OsStr) -> Option<usize> {
    Some(match name.to_str()? {
        "--unshare-all" | "--unshare-user" | "--unshare-pid" | "--unshare-net"
        | "--disable-userns" | "--die-with-parent" | "--new-session" | "--clearenv"
        | "--share-net" => 0,
        "--cap-drop" | "--proc" | "--dev" | "--remount-ro" | "--tmpfs" | "--chdir"
        | "--seccomp" | "--info-fd" | "--size" | "--unsetenv" => 1,
        "--ro-bind" | "--bind" | "--ro-bind-try" | "--bind-try" | "--dev-bind"
        | "--dev-bind-try" | "--symlink" | "--setenv" => 2,
        _ => return None,
    })
}

/// The options as bwrap reads them; `None` when one is not known (nothing is vouched for then).
fn parse(options: &[OsString]) -> Option<Vec<Opt<'_>>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < options.len() {
        let name = options[i].as_os_str();
        let n = arity(name)?;
        let args = options.get(i + 1..i + 1 + n)?;
        out.push(Opt { name, args });
        i += 1 + n;
    }
    Some(out)
}

fn has(opts: &[Opt<'_>], name: &str) -> bool {
    opts.iter().any(|o| o.name == name)
}

fn has_with(opts: &[Opt<'_>], name: &str, args: &[&OsStr]) -> bool {
    opts.iter().any(|o| {
        o.name == name
            && o.args
                .iter()
                .map(OsString::as_os_str)
                .eq(args.iter().copied())
    })
}

/// Options that bind a host path into the sandbox.
const BINDS: &[&str] = &[
    "--ro-bind",
    "--bind",
    "--ro-bind-try",
    "--bind-try",
    "--dev-bind",
    "--dev-bind-try",
];

/// Options that bind a host path writable.
const WRITABLE_BINDS: &[&str] = &["--bind", "--bind-try", "--dev-bind", "--dev-bind-try"];

/// The bits the bwrap options of `spec` give, and the two candidates the run must confirm
/// (`process_boundary`: a PID namespace of its own that dies with spear; `network_filtered`: a
/// networked profile held in a network namespace of its own until its network is attached), with
/// whether they bind a GPU ([`gpu_bound`]).
pub(crate) fn from_argv(spec: &BwrapSpec, options: &[OsString]) -> Guarantees {
    Guarantees {
        enforced: argv_bits(spec, options),
        limits: None,
        gpu: gpu_bound(options),
    }
}

/// Whether `options` hand bwrap a GPU's device node (`/dev/nvidia*`, `/dev/kfd`, `/dev/dri/*`)
/// to bind. Options it cannot read count as binding one: a GPU must never go unreported.
fn gpu_bound(options: &[OsString]) -> bool {
    let gpu = |p: &OsStr| {
        let p = p.as_encoded_bytes();
        [&b"/dev/nvidia"[..], b"/dev/kfd", b"/dev/dri/"]
            .iter()
            .any(|prefix| p.starts_with(prefix))
    };
    match parse(options) {
        Some(opts) => opts
            .iter()
            .filter(|o| BINDS.iter().any(|b| o.name == *b))
            .any(|o| gpu(&o.args[0])),
        None => options.iter().any(|o| gpu(o)),
    }
}

fn argv_bits(spec: &BwrapSpec, options: &[OsString]) -> GuaranteeSet {
    let Some(opts) = parse(options) else {
        return GuaranteeSet::EMPTY;
    };
    let mut bits = GuaranteeSet::EMPTY;
    let all = has(&opts, "--unshare-all");
    let own_net = (all || has(&opts, "--unshare-net")) && !has(&opts, "--share-net");
    if (all || has(&opts, "--unshare-pid")) && has(&opts, "--die-with-parent") {
        bits.insert(Guarantee::ProcessBoundary);
    }
    if has(&opts, "--clearenv")
        && !spec
            .env
            .iter()
            .any(|(n, v)| looks_secret(n, v) && !spec.env_named.contains(n))
    {
        bits.insert(Guarantee::EnvironmentScrubbed);
    }
    if own_net && !spec.profile.network() {
        bits.insert(Guarantee::NetworkClosed);
    }
    if own_net && spec.profile.network() && has(&opts, "--info-fd") {
        bits.insert(Guarantee::NetworkFiltered);
    }
    if write_boundary(spec, &opts) {
        bits.insert(Guarantee::WriteBoundary);
    }
    if read_boundary(spec, &opts) {
        bits.insert(Guarantee::ReadBoundary);
    }
    bits
}

/// Only the writable roots persist: the root tmpfs remounted read-only, and every writable bind
/// either a root seen through its staged layer or one of the session's own directories. A root
/// bound writable without staging, or any other host directory bound writable, loses the bit.
fn write_boundary(spec: &BwrapSpec, opts: &[Opt<'_>]) -> bool {
    if !has_with(opts, "--remount-ro", &[OsStr::new("/")]) {
        return false;
    }
    let staged = |p: &Path| spec.staged.iter().any(|o| o.lower == p);
    let scratch = |p: &Path| {
        spec.scratch.as_ref().is_some_and(|d| {
            [&d.tmp, &d.var_tmp, &d.home]
                .iter()
                .any(|s| s.as_path() == p)
        })
    };
    opts.iter()
        .filter(|o| WRITABLE_BINDS.iter().any(|b| o.name == *b))
        .all(|o| {
            let source = Path::new(&o.args[0]);
            let is_root = spec.roots.iter().any(|r| r.host == source);
            (is_root && spec.profile.workspace_write() && staged(source)) || scratch(source)
        })
}

/// The curated view: nothing binds the host's `/` or its whole `/etc`, and every credential mask
/// of the spec is in place.
fn read_boundary(spec: &BwrapSpec, opts: &[Opt<'_>]) -> bool {
    let whole = |p: &Path| p == Path::new("/") || p == Path::new("/etc");
    if opts
        .iter()
        .filter(|o| BINDS.iter().any(|b| o.name == *b))
        .any(|o| whole(Path::new(&o.args[0])))
    {
        return false;
    }
    spec.masks.iter().all(|m| match m {
        Mask::File(p) => has_with(
            opts,
            "--ro-bind",
            &[spec.mask_source().as_os_str(), p.as_os_str()],
        ),
        Mask::Dir(p) => has_with(opts, "--tmpfs", &[p.as_os_str()]),
    })
}

/// The bits a landlock run gives, from what was really handed to the kernel (`applied`: the
/// ABI the ruleset was built for, the rules added) and the environment the command got; the run
/// then confirms nothing more ([`after_run`] adds `resource_limits`). See
/// `landlock` module of this crate for what each bit means under this backend:
///
/// - `environment_scrubbed`: as [`from_argv`] judges it, on the environment the command got.
/// - `write_boundary`: a read-only profile, truncation governed (ABI 3), and no rule but on a
///   private directory grants a write right.
/// - `network_closed`: a closed profile (the seccomp filter that refuses every socket is loaded
///   by every landlock child, or it does not run).
/// - never `process_boundary` (no PID namespace), `read_boundary` (lookups and metadata are not
///   governed, host processes are visible in `/proc`), nor `network_filtered`.
pub(crate) fn from_landlock(
    spec: &BwrapSpec,
    applied: &crate::landlock::Applied,
    private: &[std::path::PathBuf],
    env: &[(OsString, OsString)],
) -> GuaranteeSet {
    let mut bits = GuaranteeSet::EMPTY;
    if !env
        .iter()
        .any(|(n, v)| looks_secret(n, v) && !spec.env_named.contains(n))
    {
        bits.insert(Guarantee::EnvironmentScrubbed);
    }
    let writes_only_private = applied
        .rules
        .iter()
        .filter(|(_, rights)| rights.writes())
        .all(|(path, _)| {
            private.iter().any(|p| p == path)
                || crate::landlock::DEVICES
                    .iter()
                    .any(|d| path == std::path::Path::new(d))
        });
    if !spec.profile.workspace_write()
        && spec.staged.is_empty()
        && applied.truncate_handled
        && writes_only_private
    {
        bits.insert(Guarantee::WriteBoundary);
    }
    if !spec.profile.network() {
        bits.insert(Guarantee::NetworkClosed);
    }
    bits
}

/// What the landlock backend can give on a host whose kernel offers Landlock `abi`, before any
/// command: `write_boundary` from ABI 3, `environment_scrubbed` and `network_closed` from ABI 1,
/// `resource_limits` when `limits` (a cgroup of spear's own per command), `target_policy` (judged
/// by spear's tools). Nothing without Landlock.
pub(crate) fn landlock_host(abi: u32, limits: bool) -> GuaranteeSet {
    let mut bits = GuaranteeSet::EMPTY;
    if abi == 0 {
        return bits;
    }
    bits.insert(Guarantee::EnvironmentScrubbed);
    bits.insert(Guarantee::NetworkClosed);
    bits.insert(Guarantee::TargetPolicy);
    if abi >= 3 {
        bits.insert(Guarantee::WriteBoundary);
    }
    if limits {
        bits.insert(Guarantee::ResourceLimits);
    }
    bits
}

/// What happened to one run that spawned, as the sandbox saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunFacts {
    /// The main process was reaped (so its PID namespace is gone), and the cgroup killed and
    /// removed without error.
    pub tree_dead: bool,
    /// What became of the network path.
    pub network: NetworkPath,
    /// The rlimits were set in the child (it was spawned).
    pub rlimits: bool,
    /// The backend of the command's own cgroup, when it had one.
    pub cgroup: Option<BackendKind>,
}

/// What became of a run's network path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetworkPath {
    /// None was attached (a closed command).
    NotAttached,
    /// slirp4netns was attached with the egress policy loaded and confirmed, and confirmed dead
    /// afterwards.
    Stopped,
    /// Attached, but its end could not be confirmed.
    NotStopped,
}

/// The guarantees of a run: the candidates of [`from_argv`] confirmed by `facts`.
pub(crate) fn after_run(argv: Guarantees, facts: RunFacts) -> Guarantees {
    let mut enforced = argv.enforced;
    if !facts.tree_dead {
        enforced.remove(Guarantee::ProcessBoundary);
    }
    if facts.network != NetworkPath::Stopped {
        enforced.remove(Guarantee::NetworkFiltered);
    }
    let limits = facts.cgroup.map(backend);
    if facts.rlimits && limits.is_some_and(LimitsBackend::limits_the_tree) {
        enforced.insert(Guarantee::ResourceLimits);
    }
    Guarantees {
        enforced,
        limits,
        gpu: argv.gpu,
    }
}

/// A cgroup backend by its name in results.
pub(crate) const fn backend(kind: BackendKind) -> LimitsBackend {
    match kind {
        BackendKind::SystemdScope => LimitsBackend::SystemdScope,
        BackendKind::CgroupV2 => LimitsBackend::CgroupV2,
        BackendKind::CgroupV1 => LimitsBackend::CgroupV1,
        BackendKind::Delegated => LimitsBackend::Delegated,
    }
}

/// The first requirement of `required` that a command (networked or not) cannot get on a host
/// that answers `host` for each guarantee, with why. `target_policy` is not the sandbox's to give
/// (the caller judges the writes), so it is never refused here. A closed command meets
/// `network_filtered` (see [`spear_core::GuaranteeSet::unmet`]); a networked one cannot meet
/// `network_closed`.
pub(crate) fn unmet_before_spawn(
    required: GuaranteeSet,
    networked: bool,
    host: &dyn Fn(Guarantee) -> Result<String, String>,
) -> Option<(Guarantee, String)> {
    required.iter().find_map(|g| {
        let answer = match g {
            Guarantee::TargetPolicy => Ok(String::new()),
            Guarantee::NetworkFiltered if !networked => Ok(String::new()),
            Guarantee::NetworkClosed if networked => {
                Err("the command was granted the network".to_owned())
            }
            _ => host(g),
        };
        answer.err().map(|why| (g, why))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Bind, Etc, Overlay, ScratchDirs};
    use Guarantee as G;
    use spear_core::{Capability as C, CapabilitySet, ExecutionProfile};
    use std::path::PathBuf;

    fn spec(caps: &[C]) -> BwrapSpec {
        let profile = ExecutionProfile::from_granted(CapabilitySet::of(caps), Vec::new());
        let mut b = BwrapSpec::builder(
            profile.clone(),
            vec!["/bin/true".into()],
            "/ws".into(),
            "/home/u".into(),
        )
        .etc(Etc::Entries(vec!["/etc/passwd".into()]))
        .roots(vec![Bind {
            host: "/ws".into(),
            mount: "/ws".into(),
        }])
        .masks(vec![Mask::File("/ws/.env".into())])
        .resolver(Some("/run/r/resolv.conf".into()));
        if profile.workspace_write() {
            b = b.staged(vec![Overlay {
                lower: "/ws".into(),
                upper: "/st/u".into(),
                work: "/st/w".into(),
            }]);
        }
        b.build().unwrap()
    }

    fn bits(spec: &BwrapSpec) -> GuaranteeSet {
        argv_bits(spec, &crate::build_argv(spec).unwrap().options)
    }

    /// `options` with the option `name` (and its `n` arguments) removed everywhere.
    fn without(options: &[OsString], name: &str) -> Vec<OsString> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < options.len() {
            if options[i] == name {
                i += 1 + arity(options[i].as_os_str()).unwrap();
            } else {
                out.push(options[i].clone());
                i += 1;
            }
        }
        out
    }

    fn strs(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// A GPU's device node handed to bwrap is reported, whatever binds it; other device binds
    /// and unreadable options are told apart.
    #[test]
    fn a_gpu_bind_is_reported() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let cases: [(&[&str], bool); 6] = [
            (&["--dev", "/dev", "--ro-bind", "/usr", "/usr"], false),
            (
                &[
                    "--dev",
                    "/dev",
                    "--dev-bind",
                    "/dev/nvidia0",
                    "/dev/nvidia0",
                ],
                true,
            ),
            (&["--dev-bind", "/dev/kfd", "/dev/kfd"], true),
            (
                &["--dev-bind", "/dev/dri/renderD128", "/dev/dri/renderD128"],
                true,
            ),
            // Not a GPU's node, though a device.
            (&["--dev-bind", "/dev/fuse", "/dev/fuse"], false),
            // An option this module does not know: a GPU path anywhere counts.
            (&["--new-thing", "/dev/nvidiactl"], true),
        ];
        for (options, want) in cases {
            assert_eq!(gpu_bound(&os(options)), want, "{options:?}");
        }
    }

    #[test]
    fn the_argv_of_a_closed_read_only_spec_and_a_writable_one() {
        let ro = spec(&[C::FilesystemRead]);
        let want = GuaranteeSet::of(&[
            G::ProcessBoundary,
            G::WriteBoundary,
            G::ReadBoundary,
            G::EnvironmentScrubbed,
            G::NetworkClosed,
        ]);
        assert_eq!(bits(&ro), want);
        let rw = spec(&[C::FilesystemRead, C::WorkspaceWrite]);
        assert_eq!(
            bits(&rw),
            want,
            "a staged writable root keeps the write boundary"
        );
        let net = spec(&[C::FilesystemRead, C::Network]);
        assert_eq!(
            bits(&net),
            want.difference(GuaranteeSet::of(&[G::NetworkClosed]))
                .union(GuaranteeSet::of(&[G::NetworkFiltered])),
            "networked: a candidate for the filter, never closed"
        );
    }

    #[test]
    fn each_missing_option_loses_its_bit() {
        let ro = spec(&[C::FilesystemRead]);
        let options = crate::build_argv(&ro).unwrap().options;
        let full = argv_bits(&ro, &options);
        // (option removed or added, the bit lost)
        let cases: Vec<(Vec<OsString>, Guarantee)> = vec![
            (without(&options, "--unshare-all"), G::ProcessBoundary),
            (without(&options, "--die-with-parent"), G::ProcessBoundary),
            (without(&options, "--unshare-all"), G::NetworkClosed),
            (without(&options, "--clearenv"), G::EnvironmentScrubbed),
            (
                [options.clone(), strs(&["--share-net"])].concat(),
                G::NetworkClosed,
            ),
            (without(&options, "--remount-ro"), G::WriteBoundary),
            (
                [options.clone(), strs(&["--bind", "/ws", "/ws"])].concat(),
                G::WriteBoundary,
            ),
            (
                [options.clone(), strs(&["--bind", "/var", "/var"])].concat(),
                G::WriteBoundary,
            ),
            (
                [options.clone(), strs(&["--ro-bind", "/", "/"])].concat(),
                G::ReadBoundary,
            ),
            (
                [options.clone(), strs(&["--ro-bind-try", "/etc", "/etc"])].concat(),
                G::ReadBoundary,
            ),
        ];
        for (argv, lost) in cases {
            let got = argv_bits(&ro, &argv);
            assert!(
                full.contains(lost) && !got.contains(lost),
                "{lost}: {argv:?}"
            );
        }
        // The mask of `.env` not applied.
        let unmasked: Vec<OsString> = {
            let mut v = options.clone();
            let at = v.iter().position(|o| o == "/dev/null").unwrap();
            v.splice(at - 1..at + 2, []);
            v
        };
        assert!(!argv_bits(&ro, &unmasked).contains(G::ReadBoundary));
        // An option this module does not know: nothing is vouched for.
        let unknown = [options.clone(), strs(&["--overlay-src", "/x"])].concat();
        assert_eq!(argv_bits(&ro, &unknown), GuaranteeSet::EMPTY);
        // A writable root without its staged layer.
        let rw = spec(&[C::FilesystemRead, C::WorkspaceWrite]);
        let mut unstaged = rw.clone();
        unstaged.staged.clear();
        let rw_argv = crate::build_argv(&rw).unwrap().options;
        assert!(argv_bits(&rw, &rw_argv).contains(G::WriteBoundary));
        assert!(!argv_bits(&unstaged, &rw_argv).contains(G::WriteBoundary));
        // The session's own directories bound writable keep it.
        let mut session = ro.clone();
        session.scratch = Some(ScratchDirs {
            tmp: PathBuf::from("/s/tmp"),
            var_tmp: PathBuf::from("/s/var"),
            home: PathBuf::from("/s/home"),
        });
        let argv = crate::build_argv(&session).unwrap().options;
        assert!(argv_bits(&session, &argv).contains(G::WriteBoundary));
    }

    #[test]
    fn the_run_confirms_or_drops_the_candidates() {
        let argv_bits =
            GuaranteeSet::of(&[G::ProcessBoundary, G::NetworkFiltered, G::ReadBoundary]);
        let good = RunFacts {
            tree_dead: true,
            network: NetworkPath::Stopped,
            rlimits: true,
            cgroup: Some(BackendKind::CgroupV1),
        };
        // (facts, enforced, limits)
        let cases = [
            (
                good,
                argv_bits.union(GuaranteeSet::of(&[G::ResourceLimits])),
                Some("cgroup-v1"),
            ),
            (
                RunFacts {
                    tree_dead: false,
                    ..good
                },
                GuaranteeSet::of(&[G::NetworkFiltered, G::ReadBoundary, G::ResourceLimits]),
                Some("cgroup-v1"),
            ),
            (
                RunFacts {
                    network: NetworkPath::NotStopped,
                    ..good
                },
                GuaranteeSet::of(&[G::ProcessBoundary, G::ReadBoundary, G::ResourceLimits]),
                Some("cgroup-v1"),
            ),
            (
                RunFacts {
                    network: NetworkPath::NotAttached,
                    ..good
                },
                GuaranteeSet::of(&[G::ProcessBoundary, G::ReadBoundary, G::ResourceLimits]),
                Some("cgroup-v1"),
            ),
            (
                RunFacts {
                    cgroup: None,
                    ..good
                },
                argv_bits,
                None,
            ),
            (
                RunFacts {
                    cgroup: Some(BackendKind::Delegated),
                    ..good
                },
                argv_bits,
                Some("delegated"),
            ),
            (
                RunFacts {
                    cgroup: Some(BackendKind::SystemdScope),
                    ..good
                },
                argv_bits.union(GuaranteeSet::of(&[G::ResourceLimits])),
                Some("systemd-scope"),
            ),
            (
                RunFacts {
                    rlimits: false,
                    ..good
                },
                argv_bits,
                Some("cgroup-v1"),
            ),
        ];
        for (facts, enforced, limits) in cases {
            let got = after_run(
                Guarantees {
                    enforced: argv_bits,
                    limits: None,
                    gpu: false,
                },
                facts,
            );
            assert_eq!(got.enforced, enforced, "{facts:?}");
            assert_eq!(got.limits.map(LimitsBackend::as_str), limits, "{facts:?}");
        }
    }

    #[test]
    fn requirements_before_spawn() {
        let host = |g: Guarantee| match g {
            G::ResourceLimits => Err("no cgroup backend".to_owned()),
            G::NetworkFiltered => Err("slirp4netns is missing".to_owned()),
            _ => Ok("ok".to_owned()),
        };
        let set = GuaranteeSet::of;
        // (required, networked, the refused bit)
        let cases = [
            (set(&[]), false, None),
            (set(&[G::ProcessBoundary, G::ReadBoundary]), false, None),
            (set(&[G::ResourceLimits]), false, Some(G::ResourceLimits)),
            (set(&[G::NetworkFiltered]), false, None),
            (set(&[G::NetworkFiltered]), true, Some(G::NetworkFiltered)),
            (set(&[G::NetworkClosed]), false, None),
            (set(&[G::NetworkClosed]), true, Some(G::NetworkClosed)),
            (set(&[G::TargetPolicy]), true, None),
            (
                set(&[G::WriteBoundary, G::ResourceLimits]),
                true,
                Some(G::ResourceLimits),
            ),
        ];
        for (required, networked, refused) in cases {
            let got = unmet_before_spawn(required, networked, &host);
            assert_eq!(
                got.as_ref().map(|(g, _)| *g),
                refused,
                "{required:?} {networked}"
            );
        }
        let (_, why) = unmet_before_spawn(set(&[G::ResourceLimits]), false, &host).unwrap();
        assert_eq!(why, "no cgroup backend");
    }

    mod landlock {
        use super::*;
        use crate::landlock::Applied;
        use crate::landlock::plan_rights as R;

        fn applied(abi: u32, rules: &[(&str, R)]) -> Applied {
            Applied {
                abi,
                truncate_handled: abi >= 3,
                tcp_refused: abi >= 4,
                scoped: abi >= 6,
                rules: rules.iter().map(|(p, r)| (PathBuf::from(p), *r)).collect(),
            }
        }

        const PRIVATE: &str = "/tmp/spear-landlock-1/tmp";

        fn ll(spec: &BwrapSpec, a: &Applied, env: &[(OsString, OsString)]) -> GuaranteeSet {
            from_landlock(spec, a, &[PathBuf::from(PRIVATE)], env)
        }

        #[test]
        fn what_the_kernel_took_decides_each_bit() {
            let spec = spec(&[]);
            let ok = applied(
                7,
                &[
                    ("/usr", R::READ_EXEC),
                    (PRIVATE, R::PRIVATE),
                    ("/dev/null", R::READ.union(R::WRITE_FILE)),
                ],
            );
            let env = vec![("PATH".into(), "/usr/bin".into())];
            assert_eq!(
                ll(&spec, &ok, &env),
                GuaranteeSet::of(&[G::WriteBoundary, G::EnvironmentScrubbed, G::NetworkClosed])
            );
            // ABI 1 and 2 do not govern truncation: no write boundary.
            for abi in [1, 2] {
                assert!(
                    !ll(&spec, &applied(abi, &[(PRIVATE, R::PRIVATE)]), &env)
                        .contains(G::WriteBoundary)
                );
            }
            assert!(
                ll(&spec, &applied(3, &[(PRIVATE, R::PRIVATE)]), &env).contains(G::WriteBoundary)
            );
            // A write right on anything but a private directory or a device node loses it.
            let wide = applied(7, &[(PRIVATE, R::PRIVATE), ("/ws", R::PRIVATE)]);
            assert!(!ll(&spec, &wide, &env).contains(G::WriteBoundary));
            // A secret-looking variable not named by the operator loses the scrubbed bit.
            let leaked = vec![("AWS_SECRET_ACCESS_KEY".into(), "x".into())];
            assert!(!ll(&spec, &ok, &leaked).contains(G::EnvironmentScrubbed));
            // Never the process or read boundary, nor a filtered network.
            for g in [G::ProcessBoundary, G::ReadBoundary, G::NetworkFiltered] {
                assert!(!ll(&spec, &ok, &env).contains(g));
            }
        }

        #[test]
        fn a_networked_profile_is_not_closed() {
            let spec = spec(&[C::Network]);
            let a = applied(7, &[(PRIVATE, R::PRIVATE)]);
            assert!(!ll(&spec, &a, &[]).contains(G::NetworkClosed));
        }

        #[test]
        fn the_host_s_offer_follows_the_abi_and_the_cgroup() {
            assert_eq!(landlock_host(0, true), GuaranteeSet::EMPTY);
            assert_eq!(
                landlock_host(2, false),
                GuaranteeSet::of(&[G::EnvironmentScrubbed, G::NetworkClosed, G::TargetPolicy])
            );
            assert_eq!(
                landlock_host(7, true),
                GuaranteeSet::of(&[
                    G::WriteBoundary,
                    G::EnvironmentScrubbed,
                    G::NetworkClosed,
                    G::ResourceLimits,
                    G::TargetPolicy
                ])
            );
        }
    }
}
