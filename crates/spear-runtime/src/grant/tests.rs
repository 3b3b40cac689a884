#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use spear_core::authority::GrantError;

use super::keyfile::{KEY_FILE, KeyFileError, user_key};
use super::ledger::{FileLedger, LEDGER_FILE, NonceLedger};
use super::*;

fn binding() -> Binding {
    Binding {
        execution: Some("s1:3".into()),
        command: command_digest(None, Some("rm -f a")),
        cwd: "/w".into(),
        cwd_identity: Some(Identity {
            dev: 1,
            ino: 2,
            kind: 'd',
        }),
        profile: "p".into(),
        network: NetworkRoute::Closed,
        guarantees: vec!["process_boundary".into()],
        class: Some("WORKSPACE_MUTATING".into()),
        targets: vec![TargetBinding {
            label: "a".into(),
            identity: None,
        }],
        sandbox: SandboxBinding {
            env: vec!["HOME".into(), "LANG".into(), "PATH".into()],
            roots: vec!["/w -> /w".into()],
            limits: vec!["timeout=45000ms".into(), "cgroup=memory 2G".into()],
            egress: Vec::new(),
            rules: "r".into(),
            digest: "d".into(),
        },
    }
}

fn session() -> GrantAuthority {
    GrantAuthority::for_session().unwrap()
}

#[test]
fn a_grant_runs_its_own_command_once() {
    let auth = session();
    let now = SystemTime::now();
    let token = auth.issue(&binding(), SESSION_GRANT_TTL, now).unwrap();
    let claims = auth.verify(&token, &binding(), now).unwrap();
    let mut keyed = binding();
    keyed.sandbox.digest = auth.key.keyed("d");
    assert_eq!(claims.binding, keyed);
    assert_ne!(
        keyed.sandbox.digest, "d",
        "the grant holds the digest keyed"
    );
    assert_eq!(claims.issuer, Issuer::Session);
    assert_eq!(
        auth.verify(&token, &binding(), now),
        Err(GrantError::Replayed)
    );
}

/// Every field of the binding, changed one at a time, fails with its own error; none of those
/// failures uses the grant up.
#[test]
fn every_changed_binding_is_its_own_failure() {
    type Change = fn(&mut Binding);
    let cases: [(&str, Change, &str); 16] = [
        (
            "execution",
            |b| b.execution = Some("s1:4".into()),
            "other_execution",
        ),
        ("no execution", |b| b.execution = None, "other_execution"),
        (
            "command",
            |b| b.command = command_digest(None, Some("rm -f b")),
            "other_command",
        ),
        ("cwd", |b| b.cwd = "/w/sub".into(), "other_directory"),
        (
            "cwd identity",
            |b| {
                b.cwd_identity = Some(Identity {
                    dev: 1,
                    ino: 3,
                    kind: 'l',
                });
            },
            "other_directory",
        ),
        ("profile", |b| b.profile = "q".into(), "other_profile"),
        (
            "network",
            |b| b.network = NetworkRoute::Filtered,
            "other_profile",
        ),
        ("guarantees", |b| b.guarantees.clear(), "other_profile"),
        (
            "class",
            |b| b.class = Some("SHELL_COMPLEX".into()),
            "other_profile",
        ),
        (
            "target",
            |b| {
                b.targets[0].identity = Some(Identity {
                    dev: 1,
                    ino: 9,
                    kind: 'l',
                });
            },
            "target_changed",
        ),
        (
            "a variable passed",
            |b| b.sandbox.env.push("APP_SECRET".into()),
            "other_profile",
        ),
        (
            "a root",
            |b| b.sandbox.roots.push("/srv -> /srv".into()),
            "other_profile",
        ),
        (
            "a limit",
            |b| b.sandbox.limits[1] = "cgroup=memory 8G".into(),
            "other_profile",
        ),
        (
            "an egress allowance",
            |b| b.sandbox.egress.push("203.0.113.0/24".into()),
            "other_profile",
        ),
        ("rules", |b| b.sandbox.rules = "s".into(), "other_profile"),
        (
            "a value",
            |b| b.sandbox.digest = "e".into(),
            "other_profile",
        ),
    ];
    let auth = session();
    let now = SystemTime::now();
    let token = auth.issue(&binding(), SESSION_GRANT_TTL, now).unwrap();
    for (what, change, want) in cases {
        let mut other = binding();
        change(&mut other);
        let err = auth.verify(&token, &other, now).unwrap_err();
        assert_eq!(err.as_str(), want, "{what}: {err}");
    }
    // Still good for its own command.
    auth.verify(&token, &binding(), now).unwrap();
}

/// Issue 31, part 5: a refusal for another sandbox says what widened (never a value).
#[test]
fn a_wider_sandbox_is_refused_saying_what_changed() {
    type Change = fn(&mut Binding);
    let rows: [(Change, &str); 6] = [
        (
            |b| b.sandbox.env.push("APP_SECRET".into()),
            "the variables passed into the sandbox changed: now APP_SECRET",
        ),
        (
            |b| b.sandbox.roots.push("/srv -> /srv".into()),
            "the workspace roots changed: now /srv -> /srv",
        ),
        (
            |b| b.sandbox.limits[1] = "cgroup=memory 8G".into(),
            "the limits changed: now cgroup=memory 8G; approved with cgroup=memory 2G",
        ),
        (
            |b| b.sandbox.egress.push("203.0.113.0/24".into()),
            "the network's egress allowances changed: now 203.0.113.0/24",
        ),
        (
            |b| b.sandbox.rules = "s".into(),
            "other rules for what it may read or write",
        ),
        (
            |b| b.sandbox.digest = "e".into(),
            "another value of a variable passed",
        ),
    ];
    let auth = session();
    let now = SystemTime::now();
    let token = auth.issue(&binding(), SESSION_GRANT_TTL, now).unwrap();
    for (change, want) in rows {
        let mut wider = binding();
        change(&mut wider);
        let err = auth.verify(&token, &wider, now).unwrap_err().to_string();
        assert!(err.contains(want), "{err}");
    }
    auth.verify(&token, &binding(), now).unwrap();
}

#[test]
fn an_operator_grant_leaves_the_execution_open() {
    let dir = tempfile::tempdir().unwrap();
    let auth = GrantAuthority::for_operator(dir.path()).unwrap();
    let mut b = binding();
    b.execution = None;
    let now = SystemTime::now();
    let token = auth.issue(&b, OPERATOR_GRANT_TTL, now).unwrap();
    // Verified by another process: a second authority over the same state directory.
    let other = GrantAuthority::for_operator(dir.path()).unwrap();
    let mut running = b.clone();
    running.execution = Some("exec-1".into());
    other.verify(&token, &running, now).unwrap();
    assert_eq!(auth.verify(&token, &b, now), Err(GrantError::Replayed));
}

#[test]
fn expired_forged_malformed_and_rotated() {
    let dir = tempfile::tempdir().unwrap();
    let auth = GrantAuthority::for_operator(dir.path()).unwrap();
    let now = SystemTime::now();
    let token = auth
        .issue(&binding(), Duration::from_secs(60), now)
        .unwrap();
    let later = now + Duration::from_secs(61);
    assert!(matches!(
        auth.verify(&token, &binding(), later),
        Err(GrantError::Expired { .. })
    ));
    // A flipped byte of the claims or the MAC.
    let (head, tag) = token.rsplit_once('.').unwrap();
    let mut forged_tag = tag.to_owned().into_bytes();
    forged_tag[0] = if forged_tag[0] == b'A' { b'B' } else { b'A' };
    let forged = format!("{head}.{}", String::from_utf8(forged_tag).unwrap());
    assert_eq!(
        auth.verify(&forged, &binding(), now),
        Err(GrantError::BadMac)
    );
    // Claims re-sealed by a key of the attacker's: the MAC does not verify under ours.
    let mine = GrantKey::random().unwrap();
    let mut claims = auth.key.open(&token).unwrap();
    claims.binding.command = command_digest(None, Some("touch /x"));
    assert_eq!(
        auth.verify(&mine.seal(&claims), &claims.binding, now),
        Err(GrantError::BadMac)
    );
    assert!(matches!(
        auth.verify("not a grant", &binding(), now),
        Err(GrantError::Malformed { .. })
    ));
    // Rotating the key voids what it sealed.
    rotate_user_key(dir.path()).unwrap();
    let rotated = GrantAuthority::for_operator(dir.path()).unwrap();
    assert_eq!(
        rotated.verify(&token, &binding(), now),
        Err(GrantError::BadMac)
    );
}

#[test]
fn the_key_file_is_owner_only_and_stable() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("spear");
    let a = user_key(&state).unwrap();
    let b = user_key(&state).unwrap();
    assert_eq!(a.id(), b.id());
    let mode = std::fs::metadata(state.join(KEY_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Readable by others: refused, not used.
    std::fs::set_permissions(state.join(KEY_FILE), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(matches!(user_key(&state), Err(KeyFileError::Unsafe { .. })));
    // Positive control: put back, it loads again.
    std::fs::set_permissions(state.join(KEY_FILE), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(user_key(&state).unwrap().id(), a.id());
    assert_ne!(rotate_user_key(&state).unwrap().id(), a.id());
}

#[test]
fn the_file_ledger_forgets_expired_nonces_and_is_shared() {
    let dir = tempfile::tempdir().unwrap();
    let one = FileLedger::new(dir.path().join(LEDGER_FILE));
    let two = FileLedger::new(dir.path().join(LEDGER_FILE));
    one.consume("n1", 100, 10).unwrap();
    assert_eq!(two.consume("n1", 100, 10), Err(GrantError::Replayed));
    two.consume("n2", 50, 10).unwrap();
    // After n2 expired, it is forgotten (it no longer verifies anyway); n1 is kept.
    one.consume("n3", 200, 60).unwrap();
    let text = std::fs::read_to_string(dir.path().join(LEDGER_FILE)).unwrap();
    assert!(
        text.contains("n1 ") && text.contains("n3 ") && !text.contains("n2 "),
        "{text}"
    );
    // A ledger that cannot be written refuses (fail closed).
    let broken = FileLedger::new(dir.path().join("missing-dir").join(LEDGER_FILE));
    assert!(matches!(
        broken.consume("n4", 100, 10),
        Err(GrantError::Ledger { .. })
    ));
}
