#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;

use proptest::prelude::*;

use super::*;

/// A store in a fresh state directory (`<tmp>/state/spear`, not made yet), and a directory
/// beside it to name as a workspace.
fn store() -> (tempfile::TempDir, TokenStore, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let store = TokenStore::at(&tmp.path().join("state/spear"));
    (tmp, store, ws)
}

fn named(name: &str) -> TokenSpec {
    TokenSpec {
        name: name.into(),
        ..TokenSpec::default()
    }
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

const NOW: u64 = 1_800_000_000;

#[test]
fn names_table() {
    let long = "a".repeat(64);
    let too_long = "a".repeat(65);
    for (name, ok) in [
        ("ci", true),
        ("rollout-7.eval_2", true),
        ("A", true),
        (long.as_str(), true),
        ("...", true),
        ("", false),
        (too_long.as_str(), false),
        ("a b", false),
        ("a/b", false),
        ("é", false),
        ("a\n", false),
        (".", false),
        ("..", false),
        ("a:b", false),
    ] {
        assert_eq!(check_name(name).is_ok(), ok, "{name:?}");
    }
}

#[test]
fn shapes_table() {
    let body = "A".repeat(43);
    for (value, ok) in [
        (format!("spear_{body}"), true),
        (format!("spear_{}", "_-".repeat(21) + "A"), true),
        (format!("spear_{}", "A".repeat(42)), false),
        (format!("spear_{}", "A".repeat(44)), false),
        (format!("Spear_{body}"), false),
        (format!("spear-{body}"), false),
        (body.clone(), false),
        (format!("spear_{}=", "A".repeat(42)), false),
        (format!("spear_{}+", "A".repeat(42)), false),
        // Stray trailing bits: 43 characters carry 258 bits, the last two must be zero.
        (format!("spear_{}B", "A".repeat(42)), false),
        (format!("spear_{}E", "A".repeat(42)), true),
        (format!(" spear_{body}"), false),
        (format!("spear_{body}\n"), false),
        (String::new(), false),
    ] {
        assert_eq!(well_formed(&value), ok, "{value:?}");
    }
}

#[test]
fn a_value_has_its_shape_and_is_hashed_as_written() {
    let (value, hash) = new_value().unwrap();
    assert!(well_formed(&value), "{value}");
    assert_eq!(value.len(), TOKEN_PREFIX.len() + 43);
    // SHA-256 of the whole text, lower-case hex; a known vector pins the function.
    assert_eq!(hash, hex_digest(&sha2::Sha256::digest(value.as_bytes())));
    assert_eq!(
        hex_digest(&sha2::Sha256::digest(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let (other, _) = new_value().unwrap();
    assert_ne!(value, other, "random");
}

#[test]
#[allow(clippy::too_many_lines)]
fn verify_table() {
    let (_tmp, store, ws) = store();
    let (_other_tmp, other_store, _) = self::store();
    let right = store
        .add(
            &TokenSpec {
                workspaces: vec![ws.clone()],
                mode: Some(ExecutionMode::Ask),
                sessions: Some(4),
                no_network: true,
                ..named("right")
            },
            at(NOW),
        )
        .unwrap();
    let short = store
        .add(
            &TokenSpec {
                expires_in: Some(Duration::from_secs(60)),
                ..named("short")
            },
            at(NOW),
        )
        .unwrap();
    let revoked = store.add(&named("gone"), at(NOW)).unwrap();
    store.revoke("gone").unwrap();
    let elsewhere = other_store.add(&named("right"), at(NOW)).unwrap();
    let (never, _) = new_value().unwrap();
    let mut flipped = right.clone().into_bytes();
    let last = flipped.len() - 2;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();

    let ok = |name: &'static str| Ok::<&str, TokenRefusal>(name);
    let cases: Vec<(&str, &str, u64, Result<&str, TokenRefusal>)> = vec![
        ("right token", &right, NOW, ok("right")),
        (
            "right token, a year on",
            &right,
            NOW + 31_536_000,
            ok("right"),
        ),
        ("short-lived, in time", &short, NOW + 59, ok("short")),
        (
            "short-lived, expired",
            &short,
            NOW + 60,
            Err(TokenRefusal::Expired {
                name: "short".into(),
                at: at(NOW + 60),
            }),
        ),
        ("revoked", &revoked, NOW, Err(TokenRefusal::Unknown)),
        (
            "another store's",
            &elsewhere,
            NOW,
            Err(TokenRefusal::Unknown),
        ),
        ("never issued", &never, NOW, Err(TokenRefusal::Unknown)),
        (
            "one character changed",
            &flipped,
            NOW,
            Err(TokenRefusal::Unknown),
        ),
        ("empty", "", NOW, Err(TokenRefusal::Malformed)),
        (
            "the prefix alone",
            "spear_",
            NOW,
            Err(TokenRefusal::Malformed),
        ),
        (
            "a grant",
            "spear-grant-1.abc",
            NOW,
            Err(TokenRefusal::Malformed),
        ),
    ];
    for (what, presented, now, want) in cases {
        let got = store.verify(presented, at(now));
        match (&got, &want) {
            (Ok(info), Ok(name)) => assert_eq!(info.name, *name, "{what}"),
            _ => assert_eq!(got.map(|i| i.name), want.map(str::to_owned), "{what}"),
        }
    }
    // The stored hash is not a token either.
    let text = std::fs::read_to_string(store.path()).unwrap();
    let hash = hex_digest(&sha2::Sha256::digest(right.as_bytes()));
    assert!(text.contains(&hash));
    assert_eq!(
        store.verify(&hash, at(NOW)).unwrap_err(),
        TokenRefusal::Malformed
    );
    // What the right token grants, as issued.
    let info = store.verify(&right, at(NOW)).unwrap();
    assert_eq!(
        info,
        TokenInfo {
            name: "right".into(),
            workspaces: vec![ws.canonicalize().unwrap()],
            templates: vec![],
            mode: Some(ExecutionMode::Ask),
            no_network: true,
            sessions: Some(4),
            calls: None,
            created: at(NOW),
            expires: None,
        }
    );
    // The other store still knows its own.
    assert_eq!(
        other_store.verify(&elsewhere, at(NOW)).unwrap().name,
        "right"
    );
}

#[test]
fn the_refusals_say_why_and_what_to_do() {
    let expired = TokenRefusal::Expired {
        name: "ci".into(),
        at: at(NOW),
    }
    .to_string();
    assert!(
        expired.contains("ci expired at 2027-01-15T08:00:00Z"),
        "{expired}"
    );
    assert!(expired.contains("spear token add"), "{expired}");
    assert!(TokenRefusal::Unknown.to_string().contains("revoked"));
    assert!(TokenRefusal::Malformed.to_string().contains("Bearer"));
}

#[test]
fn the_file_is_owner_only_and_holds_no_value() {
    let (_tmp, store, ws) = store();
    let mut values = Vec::new();
    for name in ["a", "b", "c"] {
        let spec = TokenSpec {
            workspaces: vec![ws.clone()],
            ..named(name)
        };
        values.push(store.add(&spec, at(NOW)).unwrap());
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(store.path().parent().unwrap()), 0o700);
    let text = std::fs::read_to_string(store.path()).unwrap();
    for value in &values {
        let body = value.strip_prefix(TOKEN_PREFIX).unwrap();
        assert!(!text.contains(body), "{text}");
        // Nor any long piece of it.
        for piece in body.as_bytes().windows(12) {
            assert!(!text.contains(std::str::from_utf8(piece).unwrap()));
        }
    }
    // Positive control: the file is the store, and names what each grants.
    assert!(
        text.contains("\"a\"") && text.contains(ws.to_str().unwrap()),
        "{text}"
    );
    // No temporary file is left beside it.
    let mut names: Vec<_> = std::fs::read_dir(store.path().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["tokens.json", "tokens.lock"]);
}

#[test]
fn a_store_others_may_read_is_refused_and_accepts_nothing() {
    let (_tmp, store, _) = store();
    let value = store.add(&named("a"), at(NOW)).unwrap();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = store.list().unwrap_err();
    assert!(matches!(err, TokenError::Unsafe { .. }), "{err}");
    assert!(err.to_string().contains("chmod 600"), "{err}");
    assert!(matches!(
        store.verify(&value, at(NOW)),
        Err(TokenRefusal::Store { .. })
    ));
    // Positive control: owner-only again, it is accepted.
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(store.verify(&value, at(NOW)).unwrap().name, "a");
}

#[test]
fn a_link_in_place_of_the_store_is_not_followed() {
    let (tmp, store, _) = store();
    store.add(&named("a"), at(NOW)).unwrap();
    let real = tmp.path().join("elsewhere.json");
    std::fs::rename(store.path(), &real).unwrap();
    std::os::unix::fs::symlink(&real, store.path()).unwrap();
    assert!(matches!(store.list(), Err(TokenError::Io { .. })));
    assert!(matches!(
        store.add(&named("b"), at(NOW)),
        Err(TokenError::Io { .. })
    ));
    assert!(!std::fs::read_to_string(&real).unwrap().contains("\"b\""));
}

#[test]
fn a_corrupt_store_is_named_and_accepts_nothing() {
    let (_tmp, store, _) = store();
    let value = store.add(&named("a"), at(NOW)).unwrap();
    for text in ["{", "{\"version\": 2, \"tokens\": []}", "[]"] {
        std::fs::write(store.path(), text).unwrap();
        let err = store.list().unwrap_err();
        assert!(matches!(err, TokenError::Corrupt { .. }), "{text}: {err}");
        assert!(err.to_string().contains("move it aside"), "{err}");
        assert!(matches!(
            store.verify(&value, at(NOW)),
            Err(TokenRefusal::Store { .. })
        ));
        // A change does not write over what it cannot read.
        assert!(store.add(&named("b"), at(NOW)).is_err());
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), text);
    }
}

#[test]
fn add_list_revoke() {
    let (_tmp, store, ws) = store();
    assert_eq!(store.list().unwrap(), vec![], "no file: no tokens");
    assert!(matches!(
        store.verify(&new_value().unwrap().0, at(NOW)),
        Err(TokenRefusal::Unknown)
    ));
    let spec = TokenSpec {
        name: "eval".into(),
        // Named twice and through `..`: stored once, canonical.
        workspaces: vec![ws.clone(), ws.join("../ws")],
        templates: vec![ws.clone()],
        mode: Some(ExecutionMode::Auto),
        no_network: false,
        sessions: Some(64),
        calls: Some(16),
        expires_in: Some(Duration::from_secs(7 * 86_400)),
    };
    store
        .add(&spec, at(NOW) + Duration::from_millis(700))
        .unwrap();
    store.add(&named("second"), at(NOW + 1)).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    let canonical = ws.canonicalize().unwrap();
    assert_eq!(
        list[0],
        TokenInfo {
            name: "eval".into(),
            workspaces: vec![canonical.clone()],
            templates: vec![canonical],
            mode: Some(ExecutionMode::Auto),
            no_network: false,
            sessions: Some(64),
            calls: Some(16),
            created: at(NOW),
            expires: Some(at(NOW + 7 * 86_400)),
        }
    );
    assert!(!list[0].expired_at(at(NOW + 7 * 86_400 - 1)));
    assert!(list[0].expired_at(at(NOW + 7 * 86_400)));
    assert_eq!(list[1].name, "second");
    // A name present is refused, and the store is unchanged.
    let err = store.add(&named("eval"), at(NOW)).unwrap_err();
    assert!(matches!(err, TokenError::Duplicate(_)), "{err}");
    assert!(err.to_string().contains("spear token revoke eval"), "{err}");
    assert_eq!(store.list().unwrap(), list);
    // Revoking: the named one goes, an unknown name is an error.
    store.revoke("eval").unwrap();
    let err = store.revoke("eval").unwrap_err();
    assert!(matches!(err, TokenError::UnknownName(_)), "{err}");
    assert_eq!(store.list().unwrap(), vec![list[1].clone()]);
    // The name is free again.
    store.add(&named("eval"), at(NOW)).unwrap();
}

#[test]
fn specs_refused_at_add() {
    let (tmp, store, ws) = store();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let state = store.path().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(state.join("inner")).unwrap();
    let cases: Vec<(TokenSpec, &str)> = vec![
        (named("a b"), "cannot name a token"),
        (
            TokenSpec {
                workspaces: vec![tmp.path().join("missing")],
                ..named("a")
            },
            "the workspace",
        ),
        (
            TokenSpec {
                templates: vec![file],
                ..named("a")
            },
            "not a directory",
        ),
        (
            TokenSpec {
                workspaces: vec![state.join("inner")],
                ..named("a")
            },
            "lies inside spear's own state directory",
        ),
        (
            TokenSpec {
                templates: vec![tmp.path().to_path_buf()],
                ..named("a")
            },
            "holds spear's own state directory",
        ),
        (
            TokenSpec {
                sessions: Some(0),
                ..named("a")
            },
            "--sessions 1",
        ),
        (
            TokenSpec {
                calls: Some(0),
                ..named("a")
            },
            "--calls 1",
        ),
        (
            TokenSpec {
                expires_in: Some(Duration::ZERO),
                ..named("a")
            },
            "--expires",
        ),
        (
            TokenSpec {
                expires_in: Some(Duration::from_secs(u64::MAX / 2)),
                ..named("a")
            },
            "clock",
        ),
    ];
    for (spec, says) in cases {
        let err = store.add(&spec, at(NOW)).unwrap_err();
        assert!(err.to_string().contains(says), "{spec:?}: {err}");
    }
    assert_eq!(store.list().unwrap(), vec![], "nothing was added");
    // Positive control: the same name with a good workspace is added.
    store
        .add(
            &TokenSpec {
                workspaces: vec![ws],
                ..named("a")
            },
            at(NOW),
        )
        .unwrap();
}

#[test]
fn concurrent_adds_all_land() {
    let (_tmp, store, _) = store();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || store.add(&named(&format!("t{i}")), at(NOW)).unwrap())
        })
        .collect();
    let values: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(store.list().unwrap().len(), 8);
    for (i, value) in values.iter().enumerate() {
        assert_eq!(store.verify(value, at(NOW)).unwrap().name, format!("t{i}"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// No string but the issued one is accepted: arbitrary text, well-formed values, and the
    /// issued value with one character replaced, cut or extended.
    #[test]
    fn verify_accepts_only_the_issued_value(
        any_text in ".{0,80}",
        shaped in "spear_[A-Za-z0-9_-]{43}",
        index in 0usize..49,
        replacement in "[A-Za-z0-9_=+/ -]",
        cut in 0usize..49,
    ) {
        thread_local! {
            static ISSUED: (tempfile::TempDir, TokenStore, String) = {
                let (tmp, store, _) = store();
                let value = store.add(&named("only"), at(NOW)).unwrap();
                (tmp, store, value)
            };
        }
        ISSUED.with(|(_, store, value)| {
            let mut changed = value.clone();
            changed.replace_range(index..=index, &replacement);
            let candidates = [
                any_text.clone(),
                shaped.clone(),
                changed,
                value[..cut].to_owned(),
                format!("{value}{replacement}"),
                format!("{replacement}{value}"),
                value.to_uppercase(),
            ];
            for candidate in candidates {
                let got = store.verify(&candidate, at(NOW));
                if candidate == *value {
                    prop_assert_eq!(got.map(|i| i.name), Ok("only".to_owned()));
                } else {
                    prop_assert!(got.is_err(), "{candidate:?} accepted");
                }
            }
            prop_assert!(store.verify(value, at(NOW)).is_ok());
            Ok(())
        })?;
    }
}

/// A store written before tokens had `calls` reads as it did: no limit of the token's own.
#[test]
fn a_store_without_calls_reads_as_before() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_tmp, store, _ws) = store();
    std::fs::create_dir_all(store.path().parent().unwrap()).unwrap();
    let hash = "0".repeat(64);
    std::fs::write(
        store.path(),
        format!(
            r#"{{"version": 1, "tokens": [{{"name": "old", "sha256": "{hash}", "workspaces": [],
               "templates": [], "mode": null, "no_network": false, "sessions": 2,
               "created": {NOW}, "expires": null}}]}}"#
        ),
    )
    .unwrap();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let list = store.list().unwrap();
    assert_eq!((list[0].sessions, list[0].calls), (Some(2), None));
}
