//! No survivors of the network path: after 50 sequential and 10 concurrent networked calls, no
//! slirp4netns or sandbox process, no namespace or pipe fd, and no cgroup of theirs remains. Its
//! own test binary, so that no other test's sandboxes are alive while it counts.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, networked};
use spear_core::ToolStatus;
use spear_testkit::process::processes_with;

/// Our own children that are slirp4netns or bwrap.
fn our_sandbox_processes() -> Vec<String> {
    let me = std::process::id().to_string();
    ["slirp4netns", "bwrap"]
        .iter()
        .flat_map(|m| processes_with(m))
        .filter(|p| {
            let pid = p.split(':').next().unwrap_or("");
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit(')').next().map(str::to_owned))
                .and_then(|rest| rest.split_whitespace().nth(1).map(str::to_owned))
                .is_some_and(|ppid| ppid == me)
        })
        .collect()
}

/// How many fds of this process are the tap device (`/dev/net/tun`, misc device 10:200).
fn tun_fds() -> usize {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::metadata(e.path()).ok())
        .filter(|m| m.file_type().is_char_device() && m.rdev() == rustix::fs::makedev(10, 200))
        .count()
}

/// Our children, as `pid state name`.
fn our_children() -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| {
            let (head, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            (fields.next()? == me).then(|| format!("{head}) {state}"))
        })
        .collect()
}

#[test]
fn no_survivors_after_many_networked_calls() {
    spear_testkit::net::require_test_host();
    let f = Fixture::with(|c| {
        c.sandbox.network.allow = vec!["203.0.113.10/32".parse().unwrap()];
        c.default_timeout = Duration::from_secs(30);
    });
    // Warm up (preflight, /etc view) before counting fds.
    assert_eq!(f.run(networked(), "true").status, ToolStatus::Ok);
    let fds_before = std::fs::read_dir("/proc/self/fd").unwrap().count();
    for i in 0..50 {
        let r = f.run(networked(), "true");
        assert_eq!(r.status, ToolStatus::Ok, "call {i}: {r:?}");
    }
    let f = Arc::new(f);
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            std::thread::spawn(move || {
                f.run(
                    networked(),
                    "curl -s -m 10 -o /dev/null -w '%{http_code}' http://203.0.113.10:8080/",
                )
            })
        })
        .collect();
    for h in handles {
        let r = h.join().unwrap();
        assert_eq!(r.stdout, "200", "{r:?}");
    }
    assert!(
        our_sandbox_processes().is_empty(),
        "{:?}",
        our_sandbox_processes()
    );
    let fds_after = std::fs::read_dir("/proc/self/fd").unwrap().count();
    assert!(
        fds_after <= fds_before,
        "namespace or pipe fds leaked: {fds_before} -> {fds_after}"
    );
    // spear holds each networked command's tap device for its teardown and lets go of it before
    // the result returns (a helper closes the last reference): none is held now...
    assert_eq!(tun_fds(), 0);
    // ...and every helper is reaped soon after.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !our_children().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(our_children().is_empty(), "{:?}", our_children());
    // Positive control of the tap probe: a tap device opened here is counted.
    let tun = std::fs::File::open("/dev/net/tun").unwrap();
    assert_eq!(tun_fds(), 1);
    drop(tun);
    let prefix = format!("spear-{}-", std::process::id());
    for ctrl in ["pids", "freezer", "cpu", "memory"] {
        let left = spear_testkit::cgroup::named(format!("/sys/fs/cgroup/{ctrl}"), &prefix);
        assert!(left.is_empty(), "{left:?}");
    }
    // Positive control: while a call runs, its slirp4netns is seen by the same probe.
    let g = f.clone();
    let running = std::thread::spawn(move || g.run(networked(), "sleep 2"));
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !our_sandbox_processes().is_empty(),
        "the probe sees a live sandbox"
    );
    assert!(!our_children().is_empty(), "the child probe sees it too");
    assert_eq!(running.join().unwrap().status, ToolStatus::Ok);
}
