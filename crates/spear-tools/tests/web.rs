//! The web pair through the router, with no network: which sessions list it, how a withdrawn tool
//! is answered, the write gate of `save_as` (which runs before anything is fetched), refusals of
//! the URL guard and the address policy (decided before any connection), and what the audit log
//! records. Fetches that connect are tested inside the hermetic test network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Answer, Env, Opts, router};
use serde_json::json;
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::Confirmation;
use spear_policy::web::{SearchSettings, WebSettings};
use spear_tools::{Role, ToolResultEnvelope, WebPair};

/// The pair as an empty operator configuration gives it: on, no search backend.
fn web_on() -> WebPair {
    WebPair::from_settings(&WebSettings::default())
}

/// The pair with a Brave backend whose key variable is unset: searching fails before anything
/// is connected to.
fn web_with_search() -> WebPair {
    WebPair::from_settings(&WebSettings {
        search: Some(SearchSettings::Brave {
            endpoint: None,
            key_env: "SPEAR_TEST_SURELY_UNSET_BRAVE_KEY".into(),
        }),
        ..WebSettings::default()
    })
}

fn listed(r: &spear_tools::ToolRouter) -> Vec<&'static str> {
    r.tools()
        .iter()
        .map(|s| s.name)
        .filter(|n| ["fetch_url", "search_internet"].contains(n))
        .collect()
}

fn rule(e: &ToolResultEnvelope) -> Option<RefusalRule> {
    e.result.rule()
}

/// A URL whose host cannot resolve, on a port the guard refuses: a call that reaches the fetch is
/// refused by the port rule, before any name is resolved; one refused earlier never gets there.
const UNFETCHABLE: &str = "http://no-such-host.invalid:6379/x.bin";

#[test]
fn the_pair_is_listed_where_the_session_has_the_web() {
    let env = Env::new();
    for mode in [Safe, Ask, Auto] {
        for role in Role::ALL {
            for (web, no_network, want) in [
                (WebPair::off(), false, &[][..]),
                (web_on(), false, &["fetch_url"][..]),
                (
                    web_with_search(),
                    false,
                    &["fetch_url", "search_internet"][..],
                ),
                (web_on(), true, &[][..]),
                (web_with_search(), true, &[][..]),
            ] {
                let mut o = Opts::web(mode, web);
                o.role = role;
                o.no_network = no_network;
                let r = router(&env, o);
                assert_eq!(listed(&r), want, "{mode:?} {role} no_network={no_network}");
            }
        }
    }
}

#[test]
fn a_withdrawn_tool_is_answered_by_why() {
    let env = Env::new();
    // --no-network: refused after its arguments are read, as a tool not in the mode is.
    let mut o = Opts::web(Auto, web_with_search());
    o.no_network = true;
    let r = router(&env, o);
    for (tool, args) in [
        ("fetch_url", json!({"url": "https://docs.rs/"})),
        ("search_internet", json!({"query": "serde"})),
    ] {
        let e = r.call(tool, args);
        assert_eq!(e.result.status, ToolStatus::Denied, "{tool}: {e:?}");
        assert_eq!(rule(&e), Some(RefusalRule::NetworkRemoved), "{tool}");
        let reason = e.result.reason.unwrap();
        assert!(
            reason.contains("--no-network") && reason.contains(tool),
            "{reason}"
        );
    }
    // Bad arguments are still named as such.
    let e = r.call("fetch_url", json!({"url": "x", "pages": "0"}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    // The operator turned it off: a tool this session does not have, and where it would come from.
    let r = router(&env, Opts::web(Auto, WebPair::off()));
    let e = r.call("fetch_url", json!({"url": "https://docs.rs/"}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert_eq!(rule(&e), None);
    let reason = e.result.reason.unwrap();
    assert!(reason.contains("[web] enabled = false"), "{reason}");
    assert!(reason.contains("the tools are: "), "{reason}");
    assert!(
        !reason.contains("fetch_url,"),
        "not listed as a tool: {reason}"
    );
    // No search backend.
    let r = router(&env, Opts::web(Safe, web_on()));
    let e = r.call("search_internet", json!({"query": "serde"}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    let reason = e.result.reason.unwrap();
    assert!(reason.contains("[web.search]"), "{reason}");
    assert!(reason.contains("fetch_url"), "the tools listed: {reason}");
}

/// SAFE refuses `save_as` with the refusal of any write, in the gate: the call never reaches the
/// fetch (the same URL read instead is refused by the port rule, which only the fetch applies).
#[test]
fn safe_refuses_save_as_before_anything_is_fetched() {
    let env = Env::new();
    let r = router(&env, Opts::web(Safe, web_on()));
    let e = r.call("fetch_url", json!({"url": UNFETCHABLE, "save_as": "x.bin"}));
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(rule(&e), Some(RefusalRule::ModeForbids), "{e:?}");
    let reason = e.result.reason.clone().unwrap();
    assert!(reason.contains("SAFE mode refuses"), "{reason}");
    assert!(reason.contains("save_as x.bin"), "{reason}");
    assert!(e.web.is_none(), "nothing was fetched: {e:?}");
    assert!(!env.path("x.bin").exists());
    // Positive control: the same URL, read, reaches the fetch, whose guard refuses the port
    // before resolving the name.
    let e = r.call("fetch_url", json!({"url": UNFETCHABLE}));
    assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{e:?}");
    assert!(e.result.reason.unwrap().contains("port 6379"));
    let log = env.audit();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["rule"], "mode_forbids");
    assert_eq!(log[0]["target"], "x.bin");
    assert!(log[0]["web"].is_null(), "{}", log[0]);
    assert_eq!(log[1]["rule"], "web_refused");
    assert_eq!(log[1]["web"]["refused"], "port");
    assert_eq!(
        log[1]["web"]["url"],
        "http://no-such-host.invalid:6379/x.bin"
    );
    assert!(log[1]["web"]["connected"].is_null());
}

/// ASK asks before anything is fetched, showing the URL and the file; a decline fetches nothing.
/// The target policy applies to `save_as` as to any write.
#[test]
fn ask_confirms_save_as_showing_the_url_and_the_target() {
    let env = Env::new();
    let (no, seen) = Answer::new(Confirmation::Declined);
    let mut o = Opts::web(Ask, web_on());
    o.confirmer = Some(no);
    let r = router(&env, o);
    let e = r.call(
        "fetch_url",
        json!({"url": UNFETCHABLE, "save_as": "docs/x.bin"}),
    );
    assert_eq!(rule(&e), Some(RefusalRule::Declined), "{e:?}");
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with(&format!("fetch_url {UNFETCHABLE} -> save_as docs/x.bin")),
        "{asked:?}"
    );
    assert!(!env.path("docs").exists());
    // Approved, the fetch runs (and here refuses the port): nothing is written.
    let (yes, seen) = Answer::new(Confirmation::Approved);
    let mut o = Opts::web(Ask, web_on());
    o.confirmer = Some(yes);
    let r = router(&env, o);
    let e = r.call(
        "fetch_url",
        json!({"url": UNFETCHABLE, "save_as": "docs/x.bin"}),
    );
    assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(!env.path("docs").exists());
    // Reading asks nobody.
    let e = r.call("fetch_url", json!({"url": UNFETCHABLE}));
    assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 1, "reading was not asked about");
    // The target policy: a protected entry is refused before anyone is asked.
    let e = r.call(
        "fetch_url",
        json!({"url": UNFETCHABLE, "save_as": ".spear/policy.toml"}),
    );
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(rule(&e), Some(RefusalRule::ProtectedEntry), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "a refused target is not asked about"
    );
    // Host-run configuration as the target is asked about (here approved: the fetch then runs
    // and refuses the port, so nothing is written).
    let e = r.call(
        "fetch_url",
        json!({"url": UNFETCHABLE, "save_as": ".git/hooks/pre-commit"}),
    );
    assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{e:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "host-run configuration is asked about"
    );
    assert!(!env.path(".git/hooks/pre-commit").exists());
    // And request scope: outside the workspace is an invalid path.
    let e = r.call(
        "fetch_url",
        json!({"url": UNFETCHABLE, "save_as": "../outside.bin"}),
    );
    assert_eq!(e.result.status, ToolStatus::InvalidPath, "{e:?}");
}

/// The read-only roles read the web in every mode; their `save_as` runs as a write in SAFE, and
/// is refused like one, even in an AUTO session.
#[test]
fn read_only_roles_read_and_cannot_save() {
    let env = Env::new();
    for role in [Role::Planning, Role::Explorer, Role::Reviewer] {
        let mut o = Opts::web(Auto, web_on());
        o.role = role;
        let r = router(&env, o);
        assert_eq!(listed(&r), ["fetch_url"], "{role}");
        let e = r.call("fetch_url", json!({"url": UNFETCHABLE, "save_as": "x.bin"}));
        assert_eq!(rule(&e), Some(RefusalRule::ModeForbids), "{role}: {e:?}");
        let e = r.call("fetch_url", json!({"url": UNFETCHABLE}));
        assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{role}: {e:?}");
    }
    assert!(!env.path("x.bin").exists());
}

/// Refusals of the guard and of the address policy are `denied`, name the rule and the address,
/// and are audited with both; nothing connects (an address literal never meets the resolver and
/// is judged before the connection). A query's values never reach the result or the log.
#[test]
fn refusals_name_the_rule_and_the_address() {
    let env = Env::new();
    let r = router(&env, Opts::web(Safe, web_on()));
    for (url, refused, address, words) in [
        (
            "http://127.0.0.1:80/?token=s3cret",
            "loopback",
            Some("127.0.0.1"),
            "loopback",
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            "metadata",
            Some("169.254.169.254"),
            "metadata",
        ),
        (
            "http://10.1.2.3/",
            "private",
            Some("10.1.2.3"),
            "private network",
        ),
        (
            "http://[::ffff:127.0.0.1]/",
            "loopback",
            Some("::ffff:127.0.0.1"),
            "embeds 127.0.0.1",
        ),
        ("http://0x7f.1/", "loopback", Some("127.0.0.1"), "loopback"),
        ("file:///etc/passwd", "scheme", None, "`file:`"),
        (
            "http://user:s3cret@example.com/",
            "userinfo",
            None,
            "user name or password",
        ),
        ("http://example.com:22/", "port", None, "port 22"),
    ] {
        let e = r.call("fetch_url", json!({"url": url}));
        assert_eq!(e.result.status, ToolStatus::Denied, "{url}: {e:?}");
        assert_eq!(rule(&e), Some(RefusalRule::WebRefused), "{url}");
        let reason = e.result.reason.clone().unwrap();
        assert!(reason.contains(words), "{url}: {reason}");
        if let Some(a) = address {
            assert!(reason.contains(a), "{url}: {reason}");
        }
        let text = serde_json::to_string(&e).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
        let log = env.audit();
        let last = log.last().unwrap();
        assert_eq!(last["tool"], "fetch_url");
        assert_eq!(last["status"], "denied");
        assert_eq!(last["rule"], "web_refused");
        assert_eq!(last["web"]["refused"], refused, "{url}: {last}");
        assert_eq!(last["web"]["address"].as_str(), address, "{url}: {last}");
        assert!(last["web"]["connected"].is_null(), "{url}: {last}");
    }
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert!(!log.contains("s3cret"), "{log}");
    assert!(
        log.contains("?token="),
        "the name is kept, its value not: {log}"
    );
}

/// A search's query is not recorded (metadata only: its length), nor is an API key; a backend
/// whose key is missing says which variable to set.
#[test]
fn searches_are_audited_without_the_query_or_a_key() {
    let env = Env::new();
    let r = router(&env, Opts::web(Safe, web_with_search()));
    let e = r.call(
        "search_internet",
        json!({"query": "my private project codename"}),
    );
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    let reason = e.result.reason.unwrap();
    assert!(
        reason.contains("SPEAR_TEST_SURELY_UNSET_BRAVE_KEY"),
        "{reason}"
    );
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert!(!log.contains("codename"), "{log}");
    let last = env.audit().pop().unwrap();
    assert_eq!(last["target"], "a query of 27 characters");
    assert_eq!(last["web"]["query_chars"], 27);
    assert_eq!(
        last["web"]["url"],
        "https://api.search.brave.com/res/v1/web/search"
    );
}

/// The published specs: both open-world; `fetch_url` not read-only (`save_as` writes), the search
/// read-only.
#[test]
fn the_specs_say_what_the_tools_may_do() {
    let env = Env::new();
    let r = router(&env, Opts::web(Auto, web_with_search()));
    let spec = |name: &str| *r.tools().iter().find(|s| s.name == name).unwrap();
    let fetch = spec("fetch_url").annotations;
    assert!(fetch.open_world && !fetch.read_only && fetch.destructive);
    let search = spec("search_internet").annotations;
    assert!(search.open_world && search.read_only && !search.destructive);
    for name in ["fetch_url", "search_internet"] {
        assert_eq!(
            spec(name).input_schema["additionalProperties"],
            json!(false),
            "{name}"
        );
    }
}
