use std::ffi::OsString;
use std::path::PathBuf;

use spear_core::{Capability, CapabilitySet, ExecutionProfile};

use super::build_argv;
use crate::spec::{
    Bind, BwrapSpec, Etc, Mask, NetworkSpec, Overlay, ScratchDirs, SpecError, SystemDir, TmpfsSizes,
};

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn staging() -> Overlay {
    Overlay {
        lower: p("/work/proj"),
        upper: p("/home/u/.local/state/spear/staging/1-1/0.upper"),
        work: p("/home/u/.local/state/spear/staging/1-1/0.work"),
    }
}

fn profile(write: bool) -> ExecutionProfile {
    let mut granted = CapabilitySet::of(&[Capability::FilesystemRead]);
    if write {
        granted.insert(Capability::WorkspaceWrite);
    }
    ExecutionProfile::from_granted(granted, Vec::new())
}

/// `s` with `caps` granted on top of what its profile holds.
fn grant(s: &mut BwrapSpec, caps: &[Capability]) {
    let granted = s.profile.granted().union(CapabilitySet::of(caps));
    s.profile = ExecutionProfile::from_granted(granted, s.profile.host_read_paths().to_vec());
}

/// `s` with `cap` taken away from its profile.
fn revoke(s: &mut BwrapSpec, cap: Capability) {
    s.profile = s.profile.without(cap);
}

/// `s` reading `path` of the host too (`host:read` granted).
fn read_host(s: &mut BwrapSpec, path: PathBuf) {
    let mut paths = s.profile.host_read_paths().to_vec();
    paths.push(path);
    let granted = s
        .profile
        .granted()
        .union(CapabilitySet::of(&[Capability::HostRead]));
    s.profile = ExecutionProfile::from_granted(granted, paths);
}

fn spec(write: bool) -> BwrapSpec {
    BwrapSpec {
        profile: profile(write),
        command: vec!["/bin/sh".into(), "-c".into(), "true".into()],
        cwd: p("/work/proj"),
        home: p("/home/u"),
        system: vec![
            SystemDir::Bind(p("/usr")),
            SystemDir::Symlink {
                path: p("/bin"),
                target: p("usr/bin"),
            },
        ],
        etc: Etc::Entries(vec![p("/etc/passwd"), p("/etc/ssl/certs")]),
        toolchains: vec![p("/home/u/.cargo")],
        roots: vec![Bind {
            host: p("/work/proj"),
            mount: p("/work/proj"),
        }],
        staged: if write { vec![staging()] } else { vec![] },
        masks: vec![
            Mask::File(p("/home/u/.cargo/credentials.toml")),
            Mask::Dir(p("/work/proj/.ssh")),
        ],
        empty_file: None,
        env: vec![
            ("HOME".into(), "/home/u".into()),
            ("PATH".into(), "/usr/bin".into()),
        ],
        tmpfs: TmpfsSizes {
            tmp: 100,
            home: 200,
            shm: 50,
        },
        scratch: None,
        git_config: None,
        env_named: vec![],
        seccomp_fd: 3,
        network: None,
        gpu: None,
    }
}

fn words(list: &str) -> Vec<OsString> {
    list.split_whitespace().map(OsString::from).collect()
}

#[test]
fn writable_workspace_exact_argv() {
    let argv = build_argv(&spec(true)).unwrap().flat();
    let expected = words(
        "--unshare-all --unshare-user --disable-userns \
         --die-with-parent --new-session --cap-drop ALL --clearenv \
         --ro-bind /usr /usr --symlink usr/bin /bin \
         --proc /proc --remount-ro /proc --dev /dev --size 50 --tmpfs /dev/shm \
         --ro-bind-try /etc/passwd /etc/passwd --ro-bind-try /etc/ssl/certs /etc/ssl/certs \
         --size 100 --tmpfs /tmp --size 100 --tmpfs /var/tmp --size 200 --tmpfs /home/u \
         --ro-bind-try /home/u/.cargo /home/u/.cargo \
         --bind /work/proj /work/proj \
         --ro-bind /dev/null /home/u/.cargo/credentials.toml \
         --tmpfs /work/proj/.ssh --remount-ro /work/proj/.ssh \
         --remount-ro / \
         --chdir /work/proj \
         --setenv HOME /home/u --setenv PATH /usr/bin \
         --seccomp 3 -- /bin/sh -c true",
    );
    assert_eq!(argv, expected);
}

/// An operator's GPU grant binds exactly its device nodes, right after bwrap's minimal /dev, and
/// the driver's files read-only; without one, nothing of the host's /dev is bound (positive
/// control: the same spec without the grant).
#[test]
fn a_gpu_grant_binds_exactly_its_nodes() {
    let mut s = spec(false);
    let without = build_argv(&s).unwrap().flat();
    assert!(
        !without
            .iter()
            .any(|w| w.to_string_lossy().starts_with("/dev/nvidia")),
        "{without:?}"
    );
    s.gpu = Some(crate::GpuBinds {
        devices: vec![p("/dev/nvidia1"), p("/dev/nvidiactl")],
        driver: vec![p("/usr/lib/x86_64-linux-gnu/libcuda.so.1")],
    });
    let argv = build_argv(&s).unwrap().flat();
    let at = argv.iter().position(|w| w == "/dev").unwrap();
    assert_eq!(
        argv[at + 1..at + 11],
        words(
            "--dev-bind /dev/nvidia1 /dev/nvidia1 --dev-bind /dev/nvidiactl /dev/nvidiactl \
             --ro-bind-try /usr/lib/x86_64-linux-gnu/libcuda.so.1 \
             /usr/lib/x86_64-linux-gnu/libcuda.so.1 --size"
        )[..]
    );
    let dev_binds = argv.iter().filter(|w| *w == "--dev-bind").count();
    assert_eq!(dev_binds, 2);
    // A sandbox with another grant is another sandbox: no warm one made for the other serves it.
    assert!(!s.same_sandbox(&spec(false)));
}

/// A masked file is covered by the spec's empty file when it has one (it then reads as empty),
/// by `/dev/null` otherwise; a masked directory by an empty tmpfs either way. A mask may hide a
/// host-read path whole, and one inside `/usr` is under a bind too.
#[test]
fn masked_files_are_covered_by_the_empty_file() {
    let mut s = spec(false);
    s.empty_file = Some(p("/run/user/0/spear/masks/empty"));
    read_host(&mut s, p("/srv/pip.conf"));
    s.masks.push(Mask::File(p("/srv/pip.conf")));
    s.masks.push(Mask::File(p("/usr/local/etc/npmrc")));
    let argv = build_argv(&s).unwrap().flat();
    for (source, dest) in [
        (
            "/run/user/0/spear/masks/empty",
            "/home/u/.cargo/credentials.toml",
        ),
        ("/run/user/0/spear/masks/empty", "/srv/pip.conf"),
        ("/run/user/0/spear/masks/empty", "/usr/local/etc/npmrc"),
    ] {
        assert!(
            argv.windows(3).any(|w| w == ["--ro-bind", source, dest]),
            "{dest}: {argv:?}"
        );
    }
    assert!(!argv.iter().any(|w| w == "/dev/null"), "{argv:?}");
    // An empty file that is a credential store, or relative, is refused.
    for bad in ["/home/u/.ssh/empty", "empty"] {
        s.empty_file = Some(p(bad));
        assert!(build_argv(&s).is_err(), "{bad}");
    }
}

#[test]
fn read_only_workspace_and_host_reads_before_roots() {
    let mut s = spec(false);
    read_host(&mut s, p("/data"));
    s.roots.push(Bind {
        host: p("/data/nested"),
        mount: p("/data/nested"),
    });
    s.masks.clear();
    let argv = build_argv(&s).unwrap().flat();
    let text: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let joined = text.join(" ");
    assert!(
        joined.contains(
            "--ro-bind-try /home/u/.cargo /home/u/.cargo --ro-bind-try /data /data \
         --ro-bind /work/proj /work/proj --ro-bind /data/nested /data/nested --remount-ro /"
        ),
        "{joined}"
    );
    assert!(
        !text.iter().any(|a| a == "--bind"),
        "no writable bind in a read-only profile"
    );
}

#[test]
fn an_etc_view_is_one_read_only_bind() {
    let mut s = spec(true);
    s.etc = Etc::View {
        files: p("/run/user/1/spear/etc/etc-0123"),
        dirs: vec![p("/etc/ssl/certs")],
    };
    let text: Vec<String> = build_argv(&s)
        .unwrap()
        .flat()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let joined = text.join(" ");
    assert!(
        joined.contains(
            "--tmpfs /dev/shm --ro-bind /run/user/1/spear/etc/etc-0123 /etc \
         --ro-bind-try /etc/ssl/certs /etc/ssl/certs --size"
        ),
        "{joined}"
    );
    assert!(!joined.contains("/etc/passwd"));
    s.etc = Etc::View {
        files: p("/x"),
        dirs: vec![p("/etc/shadow")],
    };
    assert!(matches!(build_argv(&s), Err(SpecError::CredentialStore(_))));
}

#[test]
fn network_mode_reports_holds_and_names_the_resolver() {
    let mut s = spec(true);
    grant(&mut s, &[Capability::Network]);
    assert_eq!(build_argv(&s), Err(SpecError::NetworkUnavailable));
    s.network = Some(NetworkSpec {
        resolv_conf: p("/run/spear/net/resolv.conf"),
    });
    let joined = build_argv(&s)
        .unwrap()
        .flat()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        joined.contains(
            "--ro-bind /run/spear/net/resolv.conf /etc/resolv.conf --size 100 --tmpfs /tmp"
        ),
        "{joined}"
    );
    assert!(
        joined.contains("--remount-ro / --info-fd 5 --chdir /work/proj"),
        "{joined}"
    );
    assert!(
        joined.starts_with("--unshare-all --unshare-user"),
        "the network namespace is unshared: {joined}"
    );
    let argv = build_argv(&s).unwrap();
    let tail: Vec<&str> = argv.command.iter().map(|a| a.to_str().unwrap()).collect();
    assert_eq!(
        tail,
        [
            "/bin/sh",
            "-c",
            crate::spec::NETWORK_HOLD,
            "spear-network-hold",
            "/bin/sh",
            "-c",
            "true"
        ],
        "the command runs behind the hold, verbatim"
    );
    // A closed profile gets neither, even with a network path configured.
    revoke(&mut s, Capability::Network);
    let closed = build_argv(&s).unwrap().flat();
    assert!(!closed.iter().any(|a| a == "--info-fd"));
    assert!(!closed.iter().any(|a| a == crate::spec::NETWORK_HOLD));
    assert!(!closed.iter().any(|a| a == "/etc/resolv.conf"));
}

#[test]
fn the_hold_uses_the_fds_the_spawner_places() {
    use crate::spec::{GO_CHILD_FD, NETWORK_HOLD, READY_CHILD_FD};
    assert!(NETWORK_HOLD.starts_with(&format!(
        "printf r >&{READY_CHILD_FD} && exec {READY_CHILD_FD}>&-"
    )));
    assert!(NETWORK_HOLD.contains(&format!("read -r go <&{GO_CHILD_FD}")));
    assert!(NETWORK_HOLD.contains(&format!("exec {GO_CHILD_FD}<&-; exec \"$@\"")));
}

#[test]
fn the_command_follows_the_separator_verbatim() {
    let mut s = spec(true);
    s.command = vec!["--help".into(), "--bind".into(), "/".into(), "/".into()];
    let argv = build_argv(&s).unwrap();
    assert_eq!(argv.command, s.command);
    assert!(!argv.options.iter().any(|a| a == "--"));
    assert_eq!(&argv.flat()[argv.options.len() + 1..], &s.command[..]);
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a table: one case per spec the argv builder refuses, with the error expected"
)]
fn refusals() {
    type Edit = fn(&mut BwrapSpec);
    type Check = fn(&SpecError) -> bool;
    let cases: Vec<(&str, Edit, Check)> = vec![
        (
            "gpu",
            |s| grant(s, &[Capability::Gpu]),
            |e| matches!(e, SpecError::Unimplemented(v) if v == &[Capability::Gpu]),
        ),
        (
            "ssh+secrets",
            |s| grant(s, &[Capability::Ssh, Capability::Secrets]),
            |e| matches!(e, SpecError::Unimplemented(v) if v.len() == 2),
        ),
        (
            "container",
            |s| grant(s, &[Capability::ContainerRuntime]),
            |e| matches!(e, SpecError::Unimplemented(_)),
        ),
        (
            "remote write",
            |s| grant(s, &[Capability::RemoteWrite]),
            |e| matches!(e, SpecError::Unimplemented(v) if v == &[Capability::RemoteWrite]),
        ),
        (
            "network",
            |s| grant(s, &[Capability::Network]),
            |e| *e == SpecError::NetworkUnavailable,
        ),
        (
            "empty command",
            |s| s.command.clear(),
            |e| *e == SpecError::EmptyCommand,
        ),
        (
            "stdio seccomp fd",
            |s| s.seccomp_fd = 2,
            |e| *e == SpecError::SeccompFd(2),
        ),
        (
            "relative cwd",
            |s| s.cwd = p("work"),
            |e| matches!(e, SpecError::NotAbsolute { .. }),
        ),
        (
            "dotdot root",
            |s| s.roots[0].host = p("/work/../etc"),
            |e| matches!(e, SpecError::NotAbsolute { .. }),
        ),
        (
            "ssh toolchain",
            |s| s.toolchains.push(p("/home/u/.ssh")),
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "aws host read",
            |s| read_host(s, p("/home/u/.aws/config")),
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "gh config",
            |s| s.toolchains.push(p("/home/u/.config/gh")),
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "shadow via etc",
            |s| s.etc = Etc::Entries(vec![p("/etc/shadow")]),
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "etc outside etc",
            |s| s.etc = Etc::Entries(vec![p("/root")]),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "whole etc",
            |s| s.etc = Etc::Entries(vec![p("/etc")]),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "etc view of /",
            |s| {
                s.etc = Etc::View {
                    files: p("/"),
                    dirs: vec![],
                }
            },
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "relative etc view",
            |s| {
                s.etc = Etc::View {
                    files: p("v"),
                    dirs: vec![],
                }
            },
            |e| matches!(e, SpecError::NotAbsolute { .. }),
        ),
        (
            "etc view in a credential store",
            |s| {
                s.etc = Etc::View {
                    files: p("/home/u/.ssh/etc"),
                    dirs: vec![],
                }
            },
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "host read of /",
            |s| read_host(s, p("/")),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "host read of home",
            |s| read_host(s, p("/home/u")),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "host read of /home",
            |s| read_host(s, p("/home")),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "toolchain /usr",
            |s| s.toolchains.push(p("/usr")),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "root at home",
            |s| s.roots[0].host = p("/home/u"),
            |e| matches!(e, SpecError::RootCoversHome(_)),
        ),
        (
            "root above home",
            |s| s.roots[0].mount = p("/home"),
            |e| matches!(e, SpecError::RootCoversHome(_)),
        ),
        (
            "root at /tmp",
            |s| s.roots[0].host = p("/tmp"),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "root at /",
            |s| s.roots[0].mount = p("/"),
            |e| matches!(e, SpecError::RootCoversHome(_)),
        ),
        (
            "root /etc",
            |s| s.roots[0].host = p("/etc"),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
        (
            "writable root not staged",
            |s| s.staged.clear(),
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "writable root staged twice",
            |s| s.staged.push(staging()),
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "staged root that is not a root",
            |s| {
                let mut o = staging();
                o.lower = p("/elsewhere");
                s.staged.push(o);
            },
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "upper layer inside the root",
            |s| s.staged[0].upper = p("/work/proj/.stage"),
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "work layer holding the root",
            |s| s.staged[0].work = p("/work"),
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "relative upper layer",
            |s| s.staged[0].upper = p("up"),
            |e| matches!(e, SpecError::NotAbsolute { .. }),
        ),
        (
            "staged in a read-only profile",
            |s| revoke(s, Capability::WorkspaceWrite),
            |e| matches!(e, SpecError::Staging(_)),
        ),
        (
            "unbound mask",
            |s| s.masks.push(Mask::Dir(p("/x/.ssh"))),
            |e| matches!(e, SpecError::Unbound(_)),
        ),
        (
            "secret env",
            |s| s.env.push(("OPENAI_API_KEY".into(), "x".into())),
            |e| matches!(e, SpecError::SecretInEnvironment(n) if n == "OPENAI_API_KEY"),
        ),
        (
            "secret value",
            |s| s.env.push(("X".into(), "ghp_0123456789abcdefghij".into())),
            |e| matches!(e, SpecError::SecretInEnvironment(_)),
        ),
        (
            "secret env named under another name",
            |s| {
                s.env.push(("X".into(), "ghp_0123456789abcdefghij".into()));
                s.env_named.push("Y".into());
            },
            |e| matches!(e, SpecError::SecretInEnvironment(n) if n == "X"),
        ),
        (
            "session dir inside a root",
            |s| s.scratch = Some(scratch_dirs("/work/proj/.tmp")),
            |e| matches!(e, SpecError::ScratchOverlap { .. }),
        ),
        (
            "session dir holding a root",
            |s| {
                let mut d = scratch_dirs("/run/s");
                d.tmp = p("/work");
                s.scratch = Some(d);
            },
            |e| matches!(e, SpecError::ScratchOverlap { .. }),
        ),
        (
            "session dir inside a staging layer",
            |s| {
                s.scratch = Some(scratch_dirs(
                    "/home/u/.local/state/spear/staging/1-1/0.upper",
                ));
            },
            |e| matches!(e, SpecError::ScratchOverlap { .. }),
        ),
        (
            "session dir inside a toolchain",
            |s| s.scratch = Some(scratch_dirs("/home/u/.cargo/s")),
            |e| matches!(e, SpecError::ScratchOverlap { .. }),
        ),
        (
            "session dirs nested in each other",
            |s| {
                let mut d = scratch_dirs("/run/s");
                d.home = p("/run/s/tmp/home");
                s.scratch = Some(d);
            },
            |e| matches!(e, SpecError::ScratchOverlap { .. }),
        ),
        (
            "relative session dir",
            |s| s.scratch = Some(scratch_dirs("run/s")),
            |e| matches!(e, SpecError::NotAbsolute { .. }),
        ),
        (
            "git config in a credential store",
            |s| s.git_config = Some(p("/home/u/.ssh/gitconfig")),
            |e| matches!(e, SpecError::CredentialStore(_)),
        ),
        (
            "host read covering /var/tmp",
            |s| read_host(s, p("/var")),
            |e| matches!(e, SpecError::Reserved { .. }),
        ),
    ];
    for (name, edit, check) in cases {
        let mut s = spec(true);
        edit(&mut s);
        match build_argv(&s) {
            Err(e) => assert!(check(&e), "{name}: unexpected error {e}"),
            Ok(argv) => panic!("{name}: accepted: {argv:?}"),
        }
    }
}

/// What spear sets itself is not judged by its shape: a home or working directory of
/// random-looking name builds; the same value under a name spear does not own is refused (the
/// positive control).
#[test]
fn spears_own_variables_are_paths_not_secrets() {
    let random = "/home/u/q7Xv2LpR9sKd3WmZ8tNc4YbH";
    for name in ["HOME", "PWD", "OLDPWD", "TMPDIR"] {
        let mut s = spec(true);
        s.env.retain(|(n, _)| n != name);
        s.env.push((name.into(), random.into()));
        assert!(build_argv(&s).is_ok(), "{name}");
    }
    let mut s = spec(true);
    s.env.push(("APP_DIR".into(), random.into()));
    assert!(matches!(
        build_argv(&s),
        Err(SpecError::SecretInEnvironment(n)) if n == "APP_DIR"
    ));
}

/// The sandbox refuses every granted capability it does not implement, naming it; each one it
/// implements, granted the same way, is built (the positive control). `remote:write` was dropped
/// silently before the profile carried every grant.
#[test]
fn a_granted_capability_the_sandbox_does_not_implement_is_refused() {
    for cap in Capability::ALL {
        let mut s = spec(true);
        s.network = Some(NetworkSpec {
            resolv_conf: p("/run/spear/net/resolv.conf"),
        });
        grant(&mut s, &[cap]);
        let built = build_argv(&s);
        if cap.is_implemented_by_sandbox() {
            assert!(built.is_ok(), "{cap} is implemented: {built:?}");
        } else {
            assert_eq!(built, Err(SpecError::Unimplemented(vec![cap])), "{cap}");
        }
    }
    let mut s = spec(false);
    grant(&mut s, &[Capability::RemoteWrite, Capability::Gpu]);
    assert_eq!(
        build_argv(&s),
        Err(SpecError::Unimplemented(vec![
            Capability::Gpu,
            Capability::RemoteWrite
        ]))
    );
    revoke(&mut s, Capability::RemoteWrite);
    revoke(&mut s, Capability::Gpu);
    assert!(
        build_argv(&s).is_ok(),
        "the same spec without them is built"
    );
}

fn scratch_dirs(base: &str) -> ScratchDirs {
    ScratchDirs {
        tmp: p(&format!("{base}/tmp")),
        var_tmp: p(&format!("{base}/var-tmp")),
        home: p(&format!("{base}/home")),
    }
}

#[test]
fn a_session_binds_its_directories_where_the_tmpfs_mounts_were() {
    let mut s = spec(true);
    s.scratch = Some(scratch_dirs("/run/user/1/spear/sessions/7-1-ab"));
    s.git_config = Some(p("/run/user/1/spear/git/config-1"));
    let joined = build_argv(&s)
        .unwrap()
        .flat()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        joined.contains(
            "--ro-bind-try /etc/ssl/certs /etc/ssl/certs \
             --ro-bind /run/user/1/spear/git/config-1 /run/spear/gitconfig \
             --bind /run/user/1/spear/sessions/7-1-ab/tmp /tmp \
             --bind /run/user/1/spear/sessions/7-1-ab/var-tmp /var/tmp \
             --bind /run/user/1/spear/sessions/7-1-ab/home /home/u \
             --ro-bind-try /home/u/.cargo /home/u/.cargo"
        ),
        "{joined}"
    );
    assert!(!joined.contains("--tmpfs /tmp"), "{joined}");
}

#[test]
fn a_secret_named_exactly_by_the_operator_is_passed() {
    let mut s = spec(true);
    s.env.push(("HF_TOKEN".into(), "hf_abc".into()));
    s.env_named.push("HF_TOKEN".into());
    let argv = build_argv(&s).unwrap().flat();
    assert!(
        argv.windows(3)
            .any(|w| w[0] == "--setenv" && w[1] == "HF_TOKEN")
    );
}

#[test]
fn error_messages_say_what_to_do() {
    let mut s = spec(true);
    s.roots[0].host = p("/home/u");
    let msg = build_argv(&s).unwrap_err().to_string();
    assert!(msg.contains("start spear in a project directory"), "{msg}");
    let mut s = spec(true);
    grant(&mut s, &[Capability::Gpu]);
    assert!(
        build_argv(&s)
            .unwrap_err()
            .to_string()
            .contains("does not implement gpu")
    );
}
