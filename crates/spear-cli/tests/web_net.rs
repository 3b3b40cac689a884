//! The web pair through the `spear` binary against the hermetic test network: run inside
//! `scripts/test-host.sh run cargo test -p spear-cli --test web_net` (as spear-test:
//! scripts/test-unprivileged.sh); outside it every test fails, saying so.
//!
//! `spear tool fetch_url` with `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` naming a counting
//! listener in its environment fetches directly (the proxy sees nothing); a redirect to a refused
//! address is denied and audited with the rule and the address; `spear mcp` driven by rmcp's client
//! lists `fetch_url` as open-world and fetches, saves and searches through the test network, and
//! driven by the Python MCP SDK (both protocol generations) lists it so and fetches.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod mcp_client;
mod python_client;
mod support;

use std::process::Stdio;

use python_client::{BOTH, Server};
use serde_json::{Value, json};
use spear_testkit::listener::Counter;
use spear_testkit::mcp::{Generation, User, envelope, within};
use spear_testkit::net::{self, PRIVATE, WEB_HOST_BODY};
use support::{Dirs, SpearCommands as _, audit_records, config};

/// `spear tool fetch_url --args ARGS` (SAFE), with `extra` flags, its environment as `env` leaves
/// it: its exit status and its envelope.
fn spear_fetch(
    d: &Dirs,
    args: &Value,
    extra: &[&str],
    env: impl FnOnce(&mut std::process::Command),
) -> (Option<i32>, Value) {
    let mut cmd = d.spear(&["tool", "fetch_url"]);
    cmd.args(extra)
        .arg("--args")
        .arg(args.to_string())
        .stdin(Stdio::null());
    env(&mut cmd);
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "spear tool's stdout is not an envelope ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v)
}

/// SSR-28 at the binary: every proxy variable, upper and lower case, names a counting listener in
/// `spear`'s environment; fetches of `http://public.test/` and `https://public.test/` answer
/// directly and the listener counts nothing. Positive control: it counts a direct connection.
#[test]
fn spear_tool_ignores_the_environments_proxies() {
    spear_testkit::require_test_network!();
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let proxy = Counter::bind("127.0.0.1", 0);
    let ca = net::web_ca();
    let proxy_url = format!("http://{}", proxy.addr());
    for url in ["http://public.test/", "https://public.test/"] {
        let (code, v) = spear_fetch(&d, &json!({"url": url}), &[], |cmd| {
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                cmd.env(name, &proxy_url)
                    .env(name.to_lowercase(), &proxy_url);
            }
            cmd.env_remove("NO_PROXY")
                .env_remove("no_proxy")
                .env("SSL_CERT_FILE", &ca);
        });
        assert_eq!(code, Some(0), "{url}: {v}");
        assert_eq!(v["status"], "ok", "{url}: {v}");
        assert_eq!(v["web"]["http_status"], 200, "{url}: {v}");
        let text = v["stdout"].as_str().unwrap();
        assert!(
            text.contains(std::str::from_utf8(WEB_HOST_BODY).unwrap().trim()),
            "{url}: {text}"
        );
        let port = if url.starts_with("https") { 443 } else { 80 };
        let last = audit_records(&d).pop().unwrap();
        assert_eq!(
            last["web"]["connected"],
            format!("93.184.216.34:{port}"),
            "{last}"
        );
        assert_eq!(proxy.count(), 0, "{url}: the proxy saw a connection");
    }
    drop(std::net::TcpStream::connect(proxy.addr()).unwrap());
    assert_eq!(proxy.count(), 1, "a direct connection is counted");
}

/// A public page redirecting to a private address on a port `[web] ports` allows: `spear tool`
/// exits 126 with `web_refused` naming the address, the listener sees nothing, the audit log
/// names the rule and the address. Positive controls: the listener counts a direct connection;
/// the same redirect to a public page is followed.
#[test]
fn spear_tool_denies_a_redirect_to_a_refused_address() {
    spear_testkit::require_test_network!();
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let listener = Counter::bind(PRIVATE, 0);
    let cfg = config(&format!("[web]\nports = [{}]\n", listener.port()));
    let flags = ["--config", cfg.path.as_str()];
    let url = net::redirect("http://public.test", &listener.url(), 307);
    let (code, v) = spear_fetch(&d, &json!({"url": url}), &flags, |_| {});
    assert_eq!(code, Some(126), "{v}");
    assert_eq!(v["status"], "denied", "{v}");
    assert_eq!(v["rule"], "web_refused", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains(PRIVATE), "{reason}");
    assert_eq!(listener.count(), 0, "the listener saw a connection");
    let last = audit_records(&d).pop().unwrap();
    assert_eq!(last["rule"], "web_refused", "{last}");
    assert_eq!(last["web"]["refused"], "private", "{last}");
    assert_eq!(last["web"]["address"], PRIVATE, "{last}");
    drop(std::net::TcpStream::connect(listener.addr()).unwrap());
    assert_eq!(listener.count(), 1, "a direct connection is counted");
    let url = net::redirect("http://public.test", "http://public.test/json", 307);
    let (code, v) = spear_fetch(&d, &json!({"url": url}), &flags, |_| {});
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["web"]["url"], "http://public.test/json", "{v}");
}

/// `spear mcp` with rmcp's client: `fetch_url` (and, with a backend, `search_internet`) listed
/// open-world; a page read, a page saved in AUTO (the bytes as served), a search answered.
#[tokio::test]
async fn mcp_fetches_saves_and_searches_through_the_test_network() {
    spear_testkit::require_test_network!();
    let cfg = config("[web.search]\nbackend = \"searxng\"\nurl = \"http://public.test/searxng\"\n");
    let s = mcp_client::start(
        &["--auto", "--config", &cfg.path],
        User::mute(),
        Generation::Initialize,
    )
    .await;
    let tools = within("tools/list", s.client.list_all_tools())
        .await
        .unwrap();
    for name in ["fetch_url", "search_internet"] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let hints = serde_json::to_value(tool.annotations.as_ref().unwrap()).unwrap();
        assert_eq!(hints["openWorldHint"], true, "{name}: {hints}");
    }
    let r = s
        .call("fetch_url", json!({"url": "http://public.test/html"}))
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "ok", "{e}");
    assert_eq!(e["web"]["http_status"], 200, "{e}");
    let text = e["stdout"].as_str().unwrap();
    assert!(text.contains("Second heading"), "{text}");
    assert!(!text.contains("script text"), "{text}");
    let r = s
        .call(
            "fetch_url",
            json!({"url": "http://public.test/html", "save_as": "page.html"}),
        )
        .await;
    let e = envelope(&r);
    assert_eq!(e["status"], "ok", "{e}");
    assert_eq!(e["changed_paths"], json!(["page.html"]), "{e}");
    let saved = std::fs::read_to_string(s.dirs.ws.join("page.html")).unwrap();
    let raw = String::from_utf8(net::raw_get("/html").unwrap()).unwrap();
    assert!(raw.ends_with(&saved), "the bytes as served: {saved}");
    assert!(saved.contains("<script>"), "{saved}");
    let r = s.call("search_internet", json!({"query": "spear"})).await;
    let e = envelope(&r);
    assert_eq!(e["status"], "ok", "{e}");
    let hits = e["web"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{e}");
    assert_eq!(hits[0]["title"], "First result for spear", "{e}");
    assert_eq!(hits[0]["url"], "http://public.test/html", "{e}");
    s.stop().await;
}

/// `spear mcp` driven by the Python MCP SDK on both protocol generations: `fetch_url` listed with
/// `openWorldHint`, and a page of the test network read through it.
#[test]
fn the_python_sdk_lists_fetch_url_open_world_and_fetches() {
    spear_testkit::require_test_network!();
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| {
            s.run(
                &["--safe"],
                json!({
                    "list": true,
                    "calls": [python_client::call("fetch_url", json!({"url": "http://public.test/html"}))],
                }),
            )
        })
        .collect();
    let out = python_client::client("calls", &runs);
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let tool = run["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "fetch_url")
            .unwrap_or_else(|| panic!("{g:?}: fetch_url not listed: {run}"));
        assert_eq!(tool["annotations"]["openWorldHint"], true, "{g:?}: {tool}");
        let entry = &python_client::results(run)[0];
        let e = python_client::envelope(entry, "fetch_url");
        assert_eq!(e["status"], "ok", "{g:?}: {e}");
        assert_eq!(e["web"]["http_status"], 200, "{g:?}: {e}");
        let text = python_client::stdout(entry);
        assert!(text.contains("## Second heading"), "{g:?}: {text}");
        assert!(!text.contains("script text"), "{g:?}: {text}");
    }
}
