//! The web pair through the router against the hermetic test network: run inside
//! `scripts/test-host.sh run cargo test -p spear-tools --test web_net` (as spear-test:
//! scripts/test-unprivileged.sh); outside it every test fails, saying so.
//!
//! What a model meets: an HTML page read as text; a generated PDF of 35 pages and a long text
//! read in small slices by following the continuation each result names, from the start, until
//! one names none (every page, every character, once and in order); `save_as` refused in SAFE,
//! asked in ASK, written, checkpointed and undone in AUTO, and refused over the save cap; a
//! redirect to a refused address denied by `web_refused` with its listener untouched and the
//! audit record naming the rule and the address; `search_internet` against a fake `SearXNG` (the
//! web host's `/searxng/search`). Every negative case has a positive control.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::fmt::Write as _;
use std::time::Duration;

use common::{Answer, Env, Opts, router, tree};
use serde_json::{Value, json};
use spear_core::ExecutionMode::{Ask, Auto, Safe};
use spear_core::{RefusalRule, ToolStatus};
use spear_policy::Confirmation;
use spear_policy::web::{SearchSettings, WebSettings};
use spear_testkit::listener::Counter;
use spear_testkit::net::{self, METADATA, PRIVATE};
use spear_testkit::pdf;
use spear_testkit::web_file::WebFile;
use spear_tools::{ToolResultEnvelope, ToolRouter, WebPair};

/// The pair as an operator's `[web]` with `ports` and short time limits gives it.
fn settings(ports: &[u16]) -> WebSettings {
    WebSettings {
        ports: ports.to_vec(),
        connect_timeout: Some(Duration::from_secs(3)),
        first_byte_timeout: Some(Duration::from_secs(10)),
        timeout: Some(Duration::from_secs(60)),
        ..WebSettings::default()
    }
}

fn pair(ports: &[u16]) -> WebPair {
    WebPair::from_settings(&settings(ports))
}

/// A workspace, after checking that this process is inside the test network.
fn setup() -> Env {
    spear_testkit::require_test_network!();
    Env::new()
}

fn fetch(r: &ToolRouter, args: Value) -> ToolResultEnvelope {
    r.call("fetch_url", args)
}

/// The envelope as a client receives it (JSON).
fn wire(e: &ToolResultEnvelope) -> Value {
    serde_json::to_value(e).unwrap()
}

fn ok(e: &ToolResultEnvelope) -> Value {
    assert_eq!(e.result.status, ToolStatus::Ok, "{e:?}");
    wire(e)
}

/// The continuation a result names, read as a model would: the argument in the text's
/// "[more follows: ...]" line, which must agree with the structured `web.next`. `None` when the
/// result names none (and then neither says more follows).
fn continuation(e: &ToolResultEnvelope) -> Option<(&'static str, Value)> {
    let v = wire(e);
    let next = &v["web"]["next"];
    let stdout = &e.result.stdout;
    let line = stdout.lines().find(|l| l.starts_with("[more follows: "));
    let Some(line) = line else {
        assert!(
            next.is_null(),
            "web.next {next} but the text says nothing: {stdout}"
        );
        assert!(!e.result.truncated, "{e:?}");
        return None;
    };
    assert!(
        stdout.ends_with(&format!("{line}\n")),
        "the continuation is the last line: {stdout}"
    );
    assert!(e.result.truncated, "{e:?}");
    let arg = line
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no argument in {line}"));
    let (name, value) = arg.split_once(": ").unwrap();
    let (name, value) = match name {
        "offset" => ("offset", json!(value.parse::<u64>().unwrap())),
        "pages" => ("pages", json!(value.trim_matches('"'))),
        other => panic!("a continuation by `{other}`: {line}"),
    };
    assert_eq!(next, &json!({ name: value.clone() }), "{stdout}");
    Some((name, value))
}

/// The `[what a-b of n]` line of a slice, as numbers.
fn position(stdout: &str, what: &str) -> (usize, usize, usize) {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("[{what} ")))
        .unwrap_or_else(|| panic!("no [{what} ...] line: {stdout}"));
    let (range, total) = line.trim_end_matches(']').split_once(" of ").unwrap();
    let (a, b) = range.split_once('-').unwrap();
    (
        a.parse().unwrap(),
        b.parse().unwrap(),
        total.parse().unwrap(),
    )
}

#[test]
fn an_html_page_reads_as_text() {
    let env = setup();
    let r = router(&env, Opts::web(Safe, pair(&[])));
    let e = fetch(&r, json!({"url": "http://public.test/html"}));
    let v = ok(&e);
    let text = &e.result.stdout;
    assert!(
        text.starts_with("http://public.test/html (HTTP 200, text/html; charset=utf-8, "),
        "{text}"
    );
    for want in [
        "spear test page",
        "# Spear test page",
        "## Second heading",
        "A paragraph of test text, with a link",
        "one",
        "two",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    for unwanted in ["script text", "document.write", "color: red", "<p>", "<a "] {
        assert!(!text.contains(unwanted), "{unwanted:?} in {text}");
    }
    assert_eq!(v["web"]["kind"], "fetch", "{v}");
    assert_eq!(v["web"]["http_status"], 200, "{v}");
    assert!(v["web"]["next"].is_null(), "{v}");
    assert!(continuation(&e).is_none());
    // Positive control: the page as sent holds the script and the style the text leaves out.
    let raw = String::from_utf8(net::raw_get("/html").unwrap()).unwrap();
    assert!(
        raw.contains("script text") && raw.contains("color: red"),
        "{raw}"
    );
    let last = env.audit().pop().unwrap();
    assert_eq!(last["tool"], "fetch_url");
    assert_eq!(last["status"], "ok");
    assert_eq!(last["web"]["connected"], "93.184.216.34:80", "{last}");
    assert_eq!(last["web"]["http_status"], 200, "{last}");
}

/// A relative link is shown resolved against the URL that answered (after redirects), so that a
/// model can fetch it as shown; and fetching it works.
#[test]
fn links_are_shown_resolved_against_the_page() {
    let env = setup();
    let r = router(&env, Opts::web(Safe, pair(&[])));
    for (url, link) in [
        (
            "http://public.test/html".to_owned(),
            "http://public.test/text",
        ),
        (
            net::redirect("http://public.test", "http://second.test/html", 302),
            "http://second.test/text",
        ),
    ] {
        let e = fetch(&r, json!({"url": url}));
        ok(&e);
        let shown = format!("a link [{link}]");
        assert!(
            e.result.stdout.contains(&shown),
            "{shown}: {}",
            e.result.stdout
        );
        let e = fetch(&r, json!({"url": link}));
        ok(&e);
        assert!(e.result.stdout.contains("plain text, caf\u{e9}"), "{e:?}");
    }
}

/// A 35-page PDF read from the start in slices of a small `max_chars`, each call passing what the
/// previous result named: every page once, in order, the text of each under its own header; the
/// last slice names no continuation.
#[test]
fn a_long_pdf_reads_in_slices_covering_every_page_once() {
    const PAGES: usize = 35;
    let env = setup();
    let file = WebFile::new("slices", "pdf", &pdf::make_pdf(35));
    let r = router(&env, Opts::web(Safe, pair(&[])));
    for max_chars in [150, 400, 1500] {
        let mut seen: Vec<usize> = Vec::new();
        let mut args = json!({"url": file.url(), "max_chars": max_chars});
        let mut calls = 0;
        loop {
            calls += 1;
            assert!(calls <= PAGES, "no progress at max_chars {max_chars}");
            let e = fetch(&r, args.clone());
            let v = ok(&e);
            assert_eq!(v["web"]["content_type"], "application/pdf", "{v}");
            let text = &e.result.stdout;
            let (first, last, total) = position(text, "pages");
            assert_eq!(total, PAGES, "{text}");
            let mut here = Vec::new();
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix("--- page ") {
                    assert!(line.ends_with(&format!(" of {PAGES} ---")), "{line}");
                    here.push(rest.split(' ').next().unwrap().parse::<usize>().unwrap());
                }
                if let Some(rest) = line.strip_prefix("This is page ") {
                    let n: usize = rest.split(' ').next().unwrap().parse().unwrap();
                    assert_eq!(Some(&n), here.last(), "text under the wrong header: {text}");
                }
            }
            assert_eq!(here, (first..=last).collect::<Vec<_>>(), "{text}");
            for n in &here {
                assert!(
                    text.contains(&format!("This is page {n} of {PAGES}\n"))
                        && text.contains(&format!("line two of page {n}.")),
                    "page {n}'s text: {text}"
                );
            }
            seen.extend(here);
            match continuation(&e) {
                None => break,
                Some(("pages", range)) => {
                    let range = range.as_str().unwrap();
                    assert_eq!(range, format!("{}-{PAGES}", last + 1), "{text}");
                    args = json!({"url": file.url(), "max_chars": max_chars, "pages": range});
                }
                Some(other) => panic!("a PDF continued by {other:?}"),
            }
        }
        assert_eq!(
            seen,
            (1..=PAGES).collect::<Vec<_>>(),
            "max_chars {max_chars}"
        );
        assert!(calls > 1, "max_chars {max_chars} read it in one call");
        if max_chars == 150 {
            assert!(calls >= PAGES / 3, "{calls} calls at max_chars 150");
        }
    }
}

/// A text of about 7500 characters (multi-byte ones, lines long and short, a line longer than a
/// slice, no final newline) read from offset 0 by following each `offset` the result names: the
/// slices, as each result's position line bounds them, are the text exactly.
#[test]
fn a_long_text_reads_in_offset_slices_covering_it_once() {
    let env = setup();
    let mut text = String::new();
    for i in 0..120 {
        let _ = writeln!(
            text,
            "line {i}: caf\u{e9} \u{1F980} na\u{ef}ve {}",
            "x".repeat(i % 37)
        );
    }
    text.push_str(&"word ".repeat(200));
    text.push_str(&"\u{e9}".repeat(700));
    text.push_str("\nthe end");
    let total = text.chars().count();
    let file = WebFile::new("long", "txt", text.as_bytes());
    let r = router(&env, Opts::web(Safe, pair(&[])));
    let mut read = String::new();
    let mut offset = 0;
    let mut calls = 0;
    loop {
        calls += 1;
        assert!(calls <= total / 100 + 2, "no progress");
        let mut args = json!({"url": file.url(), "max_chars": 300});
        if offset > 0 {
            args["offset"] = json!(offset);
        }
        let e = fetch(&r, args);
        ok(&e);
        let out = &e.result.stdout;
        let (start, end, of) = position(out, "characters");
        assert_eq!((start, of), (offset, total), "{out}");
        assert!(end > start && end - start <= 300, "{out}");
        let marker = format!("[characters {start}-{end} of {of}]\n\n");
        let body = &out[out.find(&marker).unwrap() + marker.len()..];
        let slice: String = body.chars().take(end - start).collect();
        let rest = &body[slice.len()..];
        read.push_str(&slice);
        let next = continuation(&e);
        let tail = if slice.ends_with('\n') { "" } else { "\n" };
        match next {
            None => {
                assert_eq!(end, total, "{out}");
                assert_eq!(rest, tail, "{out}");
                break;
            }
            Some(("offset", n)) => {
                assert_eq!(n, json!(end), "{out}");
                assert!(
                    rest.starts_with(&format!("{tail}\n[more follows: ")),
                    "{out}"
                );
                offset = end;
            }
            Some(other) => panic!("text continued by {other:?}"),
        }
    }
    assert_eq!(read, text);
    assert!(calls > 20, "{calls}");
    // Past the end: refused with the length, not an empty slice.
    let e = fetch(&r, json!({"url": file.url(), "offset": total}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(
        e.result
            .reason
            .unwrap()
            .contains(&format!("the text has {total} characters"))
    );
}

/// Every byte value, so that a save that decoded or re-encoded anything would differ.
fn binary_body() -> Vec<u8> {
    (0..=255u8).cycle().take(5000).collect()
}

#[test]
fn save_as_is_refused_in_safe_and_written_in_auto() {
    let env = setup();
    let body = binary_body();
    let file = WebFile::new("save", "bin", &body);
    let args = json!({"url": file.url(), "save_as": "dl/x.bin"});
    let r = router(&env, Opts::web(Safe, pair(&[])));
    let before = tree(&env.ws);
    let e = fetch(&r, args.clone());
    assert_eq!(e.result.status, ToolStatus::Denied, "{e:?}");
    assert_eq!(e.result.rule(), Some(RefusalRule::ModeForbids), "{e:?}");
    assert!(e.web.is_none(), "{e:?}");
    assert_eq!(tree(&env.ws), before);
    // Positive control: the same call in AUTO fetches and writes the bytes as served.
    let r = router(&env, Opts::web(Auto, pair(&[])));
    let e = fetch(&r, args);
    let v = ok(&e);
    assert_eq!(std::fs::read(env.path("dl/x.bin")).unwrap(), body);
    assert_eq!(e.result.changed_paths, ["dl/x.bin"]);
    assert_eq!(v["web"]["saved_as"], "dl/x.bin", "{v}");
    assert_eq!(v["web"]["bytes"], 5000, "{v}");
    assert!(
        e.result.stdout.contains("created dl/x.bin (5000 bytes"),
        "{e:?}"
    );
}

#[test]
fn ask_writes_what_a_person_approved_and_nothing_they_declined() {
    let env = setup();
    let body = binary_body();
    let file = WebFile::new("ask", "bin", &body);
    let args = json!({"url": file.url(), "save_as": "asked.bin"});
    let before = tree(&env.ws);
    let (no, seen) = Answer::new(Confirmation::Declined);
    let mut o = Opts::web(Ask, pair(&[]));
    o.confirmer = Some(no);
    let e = fetch(&router(&env, o), args.clone());
    assert_eq!(e.result.rule(), Some(RefusalRule::Declined), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(tree(&env.ws), before, "nothing written");
    let (yes, seen) = Answer::new(Confirmation::Approved);
    let mut o = Opts::web(Ask, pair(&[]));
    o.confirmer = Some(yes);
    let e = fetch(&router(&env, o), args);
    ok(&e);
    let asked = seen.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with(&format!("fetch_url {} -> save_as asked.bin", file.url())),
        "{asked:?}"
    );
    assert_eq!(std::fs::read(env.path("asked.bin")).unwrap(), body);
}

/// In AUTO a save is checkpointed like any write: undoing the turn removes a file it made and
/// puts back the content of one it replaced.
#[test]
fn a_save_is_undone_with_its_turn() {
    let env = setup();
    let body = binary_body();
    let file = WebFile::new("undo", "bin", &body);
    env.write("doc.txt", "previous\n");
    let r = router(&env, Opts::web(Auto, pair(&[])));
    for (target, previous) in [("new/made.bin", None), ("doc.txt", Some("previous\n"))] {
        let before = tree(&env.ws);
        let turn = r.begin_turn(None).unwrap();
        let e = fetch(&r, json!({"url": file.url(), "save_as": target}));
        ok(&e);
        assert_eq!(std::fs::read(env.path(target)).unwrap(), body, "{target}");
        let report = env.undo_last();
        assert_eq!(report.turn, turn, "{report}");
        let undone = if previous.is_some() {
            &report.restored
        } else {
            &report.removed
        };
        assert!(undone.iter().any(|l| l == target), "{target}: {report}");
        assert_eq!(env.read(target).as_deref(), previous, "{target}");
        assert_eq!(tree(&env.ws), before, "{target}: undone whole");
    }
}

/// A body over the 64 MiB save cap is refused, and nothing is written (a file it would replace
/// keeps its content); one under it is saved whole.
#[test]
fn a_body_over_the_save_cap_writes_nothing() {
    let env = setup();
    env.write("keep.bin", "kept\n");
    let r = router(&env, Opts::web(Auto, pair(&[])));
    // Positive control: 2 MiB from the same path is saved whole.
    let e = fetch(
        &r,
        json!({"url": "http://public.test/big?mib=2", "save_as": "two.bin"}),
    );
    ok(&e);
    let saved = std::fs::read(env.path("two.bin")).unwrap();
    assert_eq!(saved.len(), 2 << 20);
    assert!(saved.iter().all(|b| *b == b'a'));
    let before = tree(&env.ws);
    for (url, target) in [
        ("http://public.test/big?mib=70", "big.bin"),
        ("http://public.test/big?mib=70&length=0", "keep.bin"),
    ] {
        let e = fetch(&r, json!({"url": url, "save_as": target}));
        assert_eq!(e.result.status, ToolStatus::Failed, "{url}: {e:?}");
        let reason = e.result.reason.clone().unwrap();
        assert!(
            reason.contains("larger than 64 MiB") && reason.contains("nothing was written"),
            "{reason}"
        );
        assert!(e.result.changed_paths.is_empty(), "{e:?}");
        assert_eq!(tree(&env.ws), before, "{url}");
    }
    assert_eq!(env.read("keep.bin").unwrap(), "kept\n");
}

/// A public page redirecting to an address of a refused kind (on a port `[web] ports` allows, so
/// that the address rule is what refuses it): denied as `web_refused`, naming the address; its
/// listener sees nothing; the audit record names the rule and the address. Positive controls: the
/// listener counts a direct connection, and the same redirect to a public page is followed.
#[test]
fn a_redirect_to_a_refused_address_is_denied_and_audited() {
    let env = setup();
    for (ip, kind, words) in [
        (PRIVATE, "private", "private network"),
        (METADATA, "metadata", "metadata"),
    ] {
        let listener = Counter::bind(ip, 0);
        let r = router(&env, Opts::web(Safe, pair(&[listener.port()])));
        let url = net::redirect("http://public.test", &listener.url(), 302);
        let e = fetch(&r, json!({"url": url}));
        assert_eq!(e.result.status, ToolStatus::Denied, "{ip}: {e:?}");
        assert_eq!(
            e.result.rule(),
            Some(RefusalRule::WebRefused),
            "{ip}: {e:?}"
        );
        let reason = e.result.reason.clone().unwrap();
        assert!(reason.contains(ip) && reason.contains(words), "{reason}");
        assert_eq!(listener.count(), 0, "{ip}: the listener saw a connection");
        let last = env.audit().pop().unwrap();
        assert_eq!(last["tool"], "fetch_url", "{last}");
        assert_eq!(last["status"], "denied", "{last}");
        assert_eq!(last["rule"], "web_refused", "{last}");
        assert_eq!(last["web"]["refused"], kind, "{last}");
        assert_eq!(last["web"]["address"], ip, "{last}");
        assert_eq!(
            last["web"]["url"], "http://public.test/redirect?to=REDACTED&status=REDACTED",
            "{last}"
        );
        // Positive controls.
        drop(std::net::TcpStream::connect(listener.addr()).unwrap());
        assert_eq!(listener.count(), 1, "{ip}: a direct connection is counted");
        let url = net::redirect("http://public.test", "http://second.test/json", 302);
        let e = fetch(&r, json!({"url": url}));
        let v = ok(&e);
        assert_eq!(v["web"]["url"], "http://second.test/json", "{v}");
        assert!(e.result.stdout.contains("\"spear\""), "{e:?}");
        let last = env.audit().pop().unwrap();
        assert_eq!(last["web"]["connected"], "93.184.216.35:80", "{last}");
        assert_eq!(
            last["web"]["hops"][0]["connected"], "93.184.216.34:80",
            "{last}"
        );
    }
}

/// The pair with the web host's fake `SearXNG` as its backend.
fn searxng(base: &str) -> WebPair {
    WebPair::from_settings(&WebSettings {
        search: Some(SearchSettings::Searxng { url: base.into() }),
        ..settings(&[])
    })
}

/// `search_internet` against a `SearXNG` JSON API: the hits as title, url and snippet (markup made
/// plain), a result whose url is not http(s) dropped, the query sent as the backend reads it
/// (echoed back) and never recorded.
#[test]
fn search_internet_reads_a_searxng_answer() {
    let env = setup();
    let r = router(
        &env,
        Opts::web(Safe, searxng("http://public.test/searxng/")),
    );
    let query = "rust & serde?";
    let e = r.call("search_internet", json!({"query": query}));
    let v = ok(&e);
    assert_eq!(v["web"]["kind"], "search", "{v}");
    assert_eq!(v["web"]["backend"], "searxng", "{v}");
    assert_eq!(
        v["web"]["hits"],
        json!([
            {
                "title": "First result for rust & serde?",
                "url": "http://public.test/html",
                "snippet": "A snippet about rust & serde? & more",
            },
            {
                "title": "Second result for rust & serde?",
                "url": "https://second.test/text",
                "snippet": "",
            },
        ]),
        "{v}"
    );
    let text = &e.result.stdout;
    assert!(text.starts_with("2 results from searxng"), "{text}");
    assert!(
        text.contains("1. First result for rust & serde?\n   http://public.test/html\n"),
        "{text}"
    );
    for dropped in ["javascript:", "file:///etc/passwd", "never shown"] {
        assert!(!text.contains(dropped), "{dropped} in {text}");
        assert!(!v.to_string().contains(dropped), "{dropped} in {v}");
    }
    // Positive control: the backend's answer does hold the results that were dropped.
    let raw = String::from_utf8(net::raw_get("/searxng/search?q=x&format=json").unwrap()).unwrap();
    assert!(
        raw.contains("javascript:alert(1)") && raw.contains("file:///etc/passwd"),
        "{raw}"
    );
    // max_results bounds the hits.
    let e = r.call("search_internet", json!({"query": query, "max_results": 1}));
    let v = ok(&e);
    assert_eq!(v["web"]["hits"].as_array().unwrap().len(), 1, "{v}");
    // The audit log has the endpoint and the query's length, never the query.
    let log = std::fs::read_to_string(env.audit_path()).unwrap();
    assert!(!log.contains("serde"), "{log}");
    let last = env.audit().pop().unwrap();
    assert_eq!(last["tool"], "search_internet");
    assert_eq!(last["target"], "a query of 13 characters", "{last}");
    assert_eq!(
        last["web"]["url"], "http://public.test/searxng/search",
        "{last}"
    );
    assert_eq!(last["web"]["results"], 1, "{last}");
    // A backend that is not there is a failure naming the status.
    let r = router(&env, Opts::web(Safe, searxng("http://public.test/nowhere")));
    let e = r.call("search_internet", json!({"query": query}));
    assert_eq!(e.result.status, ToolStatus::Failed, "{e:?}");
    assert!(
        e.result
            .reason
            .clone()
            .unwrap()
            .contains("answered HTTP 404"),
        "{e:?}"
    );
}

#[test]
fn a_slow_download_holds_up_no_other_write() {
    let env = setup();
    let mut slow = settings(&[]);
    slow.timeout = Some(Duration::from_secs(4));
    let r = router(&env, Opts::web(Auto, WebPair::from_settings(&slow)));
    let started = std::time::Instant::now();
    let (download, written) = std::thread::scope(|s| {
        // One byte a second: the download lasts until the fetch's 4 s limit.
        let download = s.spawn(|| {
            let e = fetch(
                &r,
                json!({"url": "http://public.test/slow/body", "save_as": "slow.bin"}),
            );
            (e, started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(500));
        let e = r.call(
            "write_file",
            json!({"path": "other.txt", "content": "written meanwhile\n"}),
        );
        let written = (e, started.elapsed());
        (download.join().unwrap(), written)
    });
    let ((slow_e, slow_took), (write_e, write_took)) = (download, written);
    assert_eq!(write_e.result.status, ToolStatus::Ok, "{write_e:?}");
    assert_eq!(
        env.read("other.txt").as_deref(),
        Some("written meanwhile\n")
    );
    // The write did not wait for the download: it finished well before the download ended.
    assert!(
        write_took < Duration::from_secs(2),
        "write_file waited {write_took:?} behind a download"
    );
    // Positive control: the download really was still running then, and ended at its limit,
    // writing nothing.
    assert!(slow_took >= Duration::from_secs(4), "{slow_took:?}");
    assert_eq!(slow_e.result.status, ToolStatus::Timeout, "{slow_e:?}");
    assert!(!env.path("slow.bin").exists());
}

/// Terminal control sequences in what the web returns are data: a page's text (plain and HTML)
/// and a search backend's titles and snippets come back with their C0 and C1 controls shown
/// escaped, and `escaped` names the fields. Positive control: the same pages and query without
/// them come back exact, and `escaped` is `null`.
#[test]
fn control_sequences_from_the_web_come_back_escaped() {
    let env = setup();
    let r = router(&env, Opts::web(Safe, pair(&[])));
    let osc52 = "x\u{1b}]52;c;aGVsbG8=\u{7}y\u{1b}[2Jz\u{9b}31mw";
    let shown = "x\\u{1b}]52;c;aGVsbG8=\\u{7}y\\u{1b}[2Jz\\u{9b}31mw";
    let plain = "x]52;c;aGVsbG8=y[2Jz31mw";
    for (ct, body) in [
        ("text/plain; charset=utf-8", format!("{osc52}\n")),
        (
            "text/html; charset=utf-8",
            format!("<html><body><p>{osc52}</p></body></html>"),
        ),
    ] {
        for (text, want, says) in [
            (body.clone(), shown, true),
            (body.replace(osc52, plain), plain, false),
        ] {
            let url = format!(
                "http://public.test/echo?ct={}&body={}",
                url_escape(ct),
                url_escape(&text)
            );
            let e = fetch(&r, json!({"url": url}));
            let v = ok(&e);
            assert!(
                e.result.stdout.contains(want),
                "{ct}: {:?}",
                e.result.stdout
            );
            assert_eq!(v["escaped"].is_object(), says, "{ct}: {v}");
            if says {
                assert_eq!(v["escaped"]["stdout"], 4, "{ct}: {v}");
            }
            let mut strings = Vec::new();
            collect_strings(&v, &mut strings);
            for s in strings {
                assert!(!spear_core::visible::has_controls(&s), "{s:?} in {v}");
            }
        }
    }
    let r = router(
        &env,
        Opts::web(Safe, searxng("http://public.test/searxng/")),
    );
    for (query, want, says) in [(osc52, shown, true), (plain, plain, false)] {
        let e = r.call("search_internet", json!({"query": query}));
        let v = ok(&e);
        let title = v["web"]["hits"][0]["title"].as_str().unwrap();
        assert_eq!(title, format!("First result for {want}"), "{v}");
        assert!(e.result.stdout.contains(want), "{}", e.result.stdout);
        assert_eq!(v["escaped"].is_object(), says, "{v}");
        if says {
            assert!(v["escaped"]["web"].as_u64().unwrap() >= 8, "{v}");
            assert!(v["escaped"]["stdout"].as_u64().unwrap() >= 4, "{v}");
        }
        let mut strings = Vec::new();
        collect_strings(&v, &mut strings);
        for s in strings {
            assert!(!spear_core::visible::has_controls(&s), "{s:?} in {v}");
        }
    }
}

/// Percent-encodes a query value.
fn url_escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Every string of a JSON value.
fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}
