//! The web pair as users and clients meet it, with no network: what `spear mcp` lists (and with
//! which hints) for each `[web]` and `--no-network`, how a withdrawn tool is answered, SAFE
//! refusing `save_as`, `spear tool` refusing an address of this host, a `[web]` that cannot be
//! used refusing to start, and `spear doctor`'s report. Fetches that connect are tested inside the
//! hermetic test network.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod support;

use std::process::Stdio;

use serde_json::{Value, json};
use spear_testkit::mcp::{Generation, User, envelope, within};
use support::{Config, Dirs, SpearCommands as _, config};

const SEARXNG: &str = "[web.search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:9\"\n";

/// The web tools a session lists, with their annotations.
async fn web_tools(flags: &[&str]) -> Vec<(String, Value)> {
    let s = mcp_client::start(flags, User::mute(), Generation::Initialize).await;
    let tools = within("tools/list", s.client.list_all_tools())
        .await
        .unwrap();
    s.stop().await;
    tools
        .iter()
        .filter(|t| ["fetch_url", "search_internet"].contains(&t.name.as_ref()))
        .map(|t| {
            (
                t.name.to_string(),
                serde_json::to_value(t.annotations.as_ref().unwrap()).unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn mcp_lists_the_pair_as_the_session_has_it() {
    let searx = config(SEARXNG);
    let off = config("[web]\nenabled = false\n[web.search]\nbackend = \"brave\"\n");
    for mode in ["--safe", "--ask", "--auto"] {
        for role in ["implementation", "reviewer"] {
            let base = [mode, "--role", role];
            let with = |extra: &[&'static str], cfg: Option<&Config>| {
                let mut f: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
                f.extend(extra.iter().map(|s| (*s).to_owned()));
                if let Some(c) = cfg {
                    f.extend(["--config".to_owned(), c.path.clone()]);
                }
                f
            };
            for (flags, want) in [
                (with(&[], None), &["fetch_url"][..]),
                (
                    with(&[], Some(&searx)),
                    &["fetch_url", "search_internet"][..],
                ),
                (with(&["--no-network"], Some(&searx)), &[][..]),
                (with(&[], Some(&off)), &[][..]),
            ] {
                let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
                let tools = web_tools(&flags).await;
                let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(names, want, "{flags:?}");
                for (name, a) in &tools {
                    assert_eq!(a["openWorldHint"], true, "{name}: {a}");
                    let read_only = name == "search_internet";
                    assert_eq!(a["readOnlyHint"], read_only, "{name}: {a}");
                    assert_eq!(a["destructiveHint"], !read_only, "{name}: {a}");
                }
            }
        }
    }
}

#[tokio::test]
async fn withdrawn_tools_are_answered_through_mcp() {
    let searx = config(SEARXNG);
    let s = mcp_client::start(
        &["--auto", "--no-network", "--config", &searx.path],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    for (tool, args) in [
        (
            "fetch_url",
            json!({"url": "https://docs.rs/", "save_as": "d.html"}),
        ),
        ("search_internet", json!({"query": "serde"})),
    ] {
        let r = s.call(tool, args).await;
        let e = envelope(&r);
        assert_eq!(e["status"], "denied", "{tool}: {e}");
        assert_eq!(e["rule"], "network_removed", "{tool}: {e}");
    }
    assert!(!s.dirs.ws.join("d.html").exists());
    s.stop().await;
    // The operator turned the pair off: a tool this session does not have.
    let off = config("[web]\nenabled = false\n");
    let s = mcp_client::start(
        &["--safe", "--config", &off.path],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    let r = s
        .call("fetch_url", json!({"url": "https://docs.rs/"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "failed", "{e}");
    assert!(
        e["reason"]
            .as_str()
            .unwrap()
            .contains("[web] enabled = false"),
        "{e}"
    );
    s.stop().await;
}

#[tokio::test]
async fn safe_refuses_save_as_and_reads_are_refused_by_the_guard() {
    let s = mcp_client::start(&["--safe"], User::mute(), Generation::Initialize).await;
    let r = s
        .call(
            "fetch_url",
            json!({"url": "http://no-such-host.invalid:6379/x", "save_as": "x.bin"}),
        )
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert_eq!(e["rule"], "mode_forbids", "{e}");
    assert!(!s.dirs.ws.join("x.bin").exists());
    let r = s
        .call(
            "fetch_url",
            json!({"url": "http://169.254.169.254/latest/"}),
        )
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "denied", "{e}");
    assert_eq!(e["rule"], "web_refused", "{e}");
    assert!(e["reason"].as_str().unwrap().contains("metadata"), "{e}");
    s.stop().await;
}

fn spear(args: &[&str], d: &Dirs) -> std::process::Output {
    d.spear(args).stdin(Stdio::null()).output().unwrap()
}

#[test]
fn spear_tool_refuses_an_address_of_this_host() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let out = spear(
        &[
            "tool",
            "fetch_url",
            "--args",
            r#"{"url": "http://127.0.0.1:80/?key=s3cret"}"#,
        ],
        &d,
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(126), "{v}");
    assert_eq!(v["rule"], "web_refused", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("loopback"), "{v}");
    assert!(!v.to_string().contains("s3cret"), "{v}");
    let log = std::fs::read_to_string(d.state.join("spear").join("audit.jsonl")).unwrap();
    assert!(log.contains(r#""refused":"loopback""#), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
}

#[test]
fn a_web_table_that_cannot_be_used_refuses_to_start() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    for (text, want) in [
        ("[web]\ntimeout = 0\n", "[web] timeout: 0 is out of bounds"),
        (
            "[web.search]\nbackend = \"searxng\"\n",
            "[web] search.url: the searxng backend needs",
        ),
        ("[web]\nport = [1]\n", "unknown field `port`"),
    ] {
        let c = config(text);
        let out = spear(
            &[
                "tool",
                "read_file",
                "--config",
                &c.path,
                "--args",
                r#"{"path": "README.md"}"#,
            ],
            &d,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
        assert!(err.contains(&c.path), "names the file: {err}");
    }
}

#[test]
fn doctor_reports_the_web_pair() {
    let d = Dirs::with(&[]);
    let doctor = |extra: &[&str]| -> Value {
        let mut args = vec!["doctor", "--json"];
        args.extend_from_slice(extra);
        let out = d
            .spear(&args)
            .env("SPEAR_TEST_BRAVE_KEY", "sk-do-not-print-0123456789")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!text.contains("sk-do-not-print"), "{text}");
        serde_json::from_str::<Value>(&text).unwrap()["web"].clone()
    };
    let web = doctor(&[]);
    assert_eq!(web["state"], "on", "{web}");
    assert!(web["trusted_certificates"].is_u64(), "{web}");
    assert!(web["search"].is_null(), "{web}");
    assert!(
        web["add_search"].as_str().unwrap().contains("[web.search]"),
        "how to add a backend: {web}"
    );
    assert_eq!(doctor(&["--no-network"])["state"], "off");
    let off = config("[web]\nenabled = false\n");
    assert_eq!(doctor(&["--config", &off.path])["state"], "off");
    let brave = config(
        "[web]\nports = [8443]\n[web.search]\nbackend = \"brave\"\nkey_env = \"SPEAR_TEST_BRAVE_KEY\"\n",
    );
    let web = doctor(&["--config", &brave.path]);
    assert_eq!(web["ports"], json!([8443]), "{web}");
    assert_eq!(web["search"]["backend"], "brave", "{web}");
    assert_eq!(web["search"]["key_env"], "SPEAR_TEST_BRAVE_KEY", "{web}");
    assert_eq!(web["search"]["key_set"], true, "{web}");
    assert!(web["add_search"].is_null(), "{web}");
    let broken = config("[web]\ntimeout = -3\n");
    let web = doctor(&["--config", &broken.path]);
    assert_eq!(web["state"], "unavailable", "{web}");
    assert!(
        web["detail"].as_str().unwrap().contains("[web] timeout"),
        "{web}"
    );
    // The text report says the same, with the snippet to add a backend.
    let out = d.spear(&["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("web pair (fetch_url, search_internet): on"),
        "{text}"
    );
    assert!(text.contains("trusted certificates: "), "{text}");
    assert!(text.contains("backend = \"searxng\""), "{text}");
}
