//! `spear mcp` driven over stdio by the Python MCP SDK (the pinned `mcp` of
//! scripts/setup-test-clients.sh), on both protocol generations: "legacy" negotiates 2025-11-25
//! through initialize (ASK asks with `elicitation/create`), "modern" negotiates 2026-07-28 through
//! server/discover (ASK answers with an input-required result and a sealed request state).
//!
//! The client is `tests/mcp_python/client.py`: this file writes a config (workspaces, server
//! flags, calls), runs one Python process per test with the runs of both generations side by
//! side, and asserts on the JSON it prints. This side owns the workspaces and the host checks:
//! files written or not, processes left (by a unique token in their command line), cgroups left
//! (`spear-<server pid>-<n>`).
//!
//! The clients are found at /opt/spear-test-clients (or `$SPEAR_TEST_CLIENTS`); without them
//! every test fails and says to run scripts/setup-test-clients.sh.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod python_client;
mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use python_client::{
    BOTH, Generation, Legacy, Modern, Server, answered, call, client, envelope, reason, results,
    rule, status, stdout,
};
use serde_json::{Value, json};
use spear_testkit::cgroup;
use spear_testkit::process::processes_with;
use spear_testkit::wait::wait_for;
use support::{TOOLS, audit_records};

const WRITING_TOOLS: [&str; 3] = ["delete_file", "patch", "write_file"];
const READ_ONLY_TOOLS: [&str; 4] = [
    "read_file",
    "read_output",
    "search_files",
    "terminal_output",
];

/// A server of each generation, a unique token for each, and each one's run with `flags` and
/// the `extra` its token gives.
fn runs_with_tokens(
    flags: &[&str],
    extra: impl Fn(&str) -> Value,
) -> (Vec<Server>, Vec<String>, Vec<Value>) {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let tokens: Vec<String> = servers.iter().map(|_| token()).collect();
    let runs = servers
        .iter()
        .zip(&tokens)
        .map(|(s, t)| s.run(flags, extra(t)))
        .collect();
    (servers, tokens, runs)
}

/// A token no other process has in its command line: the test's commands sleep for
/// `300.<token digits>` seconds, so the sandbox, the shell and the sleep all carry it.
fn token() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "300.{}{:03}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Cgroup directories named `spear-<pid>-<n>`: the ones server `pid` made for its commands.
fn cgroups_of(pid: u64) -> Vec<PathBuf> {
    cgroup::named("/sys/fs/cgroup", &format!("spear-{pid}-"))
}

/// Asserts, polling up to 5 s, that nothing with `token` in its command line is alive.
fn assert_no_process_with(token: &str) {
    wait_for(Duration::from_secs(5), || processes_with(token).is_empty());
    let left = processes_with(token);
    assert!(left.is_empty(), "processes left: {left:?}");
}

/// Asserts that the server of `run` (its `server_pid`) left no cgroup of its commands.
fn assert_no_cgroup_of(run: &Value) {
    let pid = run["server_pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("the client did not find the server's pid: {run}"));
    let left = cgroups_of(pid);
    assert!(left.is_empty(), "cgroups left: {left:?}");
}

/// The questions the client was asked during one call, each checked to have come the way its
/// generation asks: a server request (`elicitation/create`, with a JSON-RPC id) on legacy, the
/// `spear_confirm` entry of an input-required result on modern.
fn questions(entry: &Value, g: Generation) -> Vec<&str> {
    entry["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let how = &q["asked_as"];
            match g {
                Legacy => assert!(how.is_number(), "not an elicitation/create request: {q}"),
                Modern => assert_eq!(how, "spear_confirm", "not an input-required entry: {q}"),
            }
            q["message"].as_str().unwrap()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn tools_are_listed_per_role_with_schemas_and_every_annotation() {
    let servers: Vec<(Server, &str)> = [
        (Legacy, "implementation"),
        (Modern, "implementation"),
        (Legacy, "reviewer"),
        (Modern, "reviewer"),
    ]
    .into_iter()
    .map(|(g, role)| (Server::new(g), role))
    .collect();
    let runs: Vec<Value> = servers
        .iter()
        .map(|(s, role)| {
            s.run(
                &["--auto", "--role", role],
                json!({"list": true, "calls": [
                    call("write_file", json!({"path": "w.txt", "content": "w"})),
                ]}),
            )
        })
        .collect();
    let out = client("calls", &runs);
    for ((server, role), run) in servers.iter().zip(&out) {
        let g = server.generation;
        let tools = run["tools"].as_array().unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        names.sort_unstable();
        let want: Vec<&str> = if *role == "implementation" {
            TOOLS.to_vec()
        } else {
            TOOLS
                .into_iter()
                .filter(|n| !WRITING_TOOLS.contains(n))
                .collect()
        };
        assert_eq!(names, want, "{g:?} {role}");
        for t in tools {
            let name = t["name"].as_str().unwrap();
            assert_eq!(t["inputSchema"]["type"], "object", "{g:?} {name}: {t}");
            assert!(
                t["outputSchema"]["properties"]["status"].is_object(),
                "{g:?} {name} outputSchema: {t}"
            );
            let a = &t["annotations"];
            for hint in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ] {
                assert!(a[hint].is_boolean(), "{g:?} {name}: {hint} not set: {t}");
            }
            let read_only = READ_ONLY_TOOLS.contains(&name);
            assert_eq!(a["readOnlyHint"], read_only, "{g:?} {name}: {t}");
            assert_eq!(a["destructiveHint"], !read_only, "{g:?} {name}: {t}");
            assert_eq!(
                a["openWorldHint"],
                ["terminal", "fetch_url"].contains(&name),
                "{g:?} {name}: {t}"
            );
        }
        // A writing tool the role does not list cannot be called either; implementation's can.
        let w = &results(run)[0];
        if *role == "implementation" {
            assert_eq!(status(w), "ok", "{g:?}: {w}");
            assert_eq!(std::fs::read_to_string(server.file("w.txt")).unwrap(), "w");
        } else {
            assert_eq!(status(w), "failed", "{g:?}: {w}");
            assert!(reason(w).contains("no tool named `write_file`"), "{w}");
            assert!(!server.file("w.txt").exists(), "{g:?} reviewer wrote");
        }
    }
}

/// Calls every tool once; the writes go to w.txt, p.txt, t.txt and remove d.txt.
fn every_tool(token: &str) -> Vec<Value> {
    vec![
        call("read_file", json!({"path": "README.md"})),
        call("search_files", json!({"pattern": "readme"})),
        call(
            "write_file",
            json!({"path": "w.txt", "content": "written\n"}),
        ),
        call(
            "patch",
            json!({"patch": "*** Begin Patch\n*** Add File: p.txt\n+patched\n*** End Patch\n"}),
        ),
        call("delete_file", json!({"path": "d.txt"})),
        call("terminal", json!({"command": "echo hi"})),
        call("terminal", json!({"command": "echo t > t.txt"})),
        call("terminal", json!({"command": "seq 1 30000"})),
        call(
            "read_output",
            json!({"ref": "$ref", "offset": 0, "limit": 20}),
        ),
        call(
            "terminal",
            json!({"command": format!("echo bg; sleep {token}"), "background": true}),
        ),
        call("terminal_output", json!({"job_id": "$job"})),
        call("terminal_kill", json!({"job_id": "$job"})),
    ]
}

/// Runs [`every_tool`] on both generations in `flag`'s mode and checks each answer; `writes`
/// says whether the mode lets the writes through, `asks` whether they were asked about first.
fn every_tool_in(flag: &str, writes: bool, asks: bool) {
    let (servers, tokens, runs) = runs_with_tokens(
        &[flag],
        |t| json!({"answer": "accept", "calls": every_tool(t)}),
    );
    for s in &servers {
        std::fs::write(s.file("d.txt"), "delete me\n").unwrap();
    }
    let out = client("calls", &runs);
    for ((server, token), run) in servers.iter().zip(&tokens).zip(&out) {
        let g = server.generation;
        let r = results(run);
        let [
            read,
            search,
            write,
            patch,
            delete,
            echo,
            redirect,
            seq,
            more,
            bg,
            output,
            kill,
        ] = r.as_slice()
        else {
            panic!("{g:?}: {run}")
        };
        // Reads run in every mode, and nothing asks about them.
        assert_eq!(
            (status(read), stdout(read)),
            ("ok", "     1\treadme\n"),
            "{read}"
        );
        assert_eq!(status(search), "ok", "{search}");
        assert!(stdout(search).contains("README.md:1:readme"), "{search}");
        assert_eq!((status(echo), stdout(echo)), ("ok", "hi\n"), "{g:?} {echo}");
        assert_eq!(echo["structured"]["exit_code"], 0, "{echo}");
        assert_eq!(echo["structured"]["class"], "READ_ONLY", "{echo}");
        // A cut output names its ref, and read_output reads it.
        assert_eq!(status(seq), "ok", "{seq}");
        assert_eq!(seq["structured"]["truncated"], true, "{seq}");
        assert!(seq["structured"]["output_ref"].is_string(), "{seq}");
        assert_eq!(status(more), "ok", "{more}");
        assert!(stdout(more).starts_with("1\n2\n3\n"), "{more}");
        // A read-only background job runs in every mode; terminal_kill ends it.
        assert_eq!(status(bg), "ok", "{g:?} {bg}");
        assert_eq!(bg["structured"]["job"]["state"], "running", "{bg}");
        assert_eq!(status(output), "ok", "{output}");
        assert_eq!(output["structured"]["job"]["state"], "running", "{output}");
        assert_eq!(kill["structured"]["job"]["state"], "exited", "{kill}");
        assert_eq!(status(kill), "cancelled", "{kill}");
        for entry in [read, search, echo, seq, more, bg, output, kill] {
            assert!(questions(entry, g).is_empty(), "{g:?}: asked about {entry}");
        }
        // The writes: each reports what it changed, or says how to get it done.
        check_writes([write, patch, delete, redirect], g, flag, writes, asks);
        check_written_files(server, g, flag, writes);
        assert_no_process_with(token);
        assert_no_cgroup_of(run);
    }
}

/// The answers to [`every_tool`]'s writes (`write_file`, `patch`, `delete_file`, a redirection):
/// each changed its path, or was refused with a way forward; each was asked about when `asks`,
/// the question naming the change.
fn check_writes(entries: [&Value; 4], g: Generation, flag: &str, writes: bool, asks: bool) {
    let [write, patch, delete, redirect] = entries;
    for (entry, path) in [
        (write, "w.txt"),
        (patch, "p.txt"),
        (delete, "d.txt"),
        (redirect, "t.txt"),
    ] {
        if writes {
            assert_eq!(status(entry), "ok", "{g:?} {flag}: {entry}");
            assert_eq!(
                entry["structured"]["changed_paths"],
                json!([path]),
                "{g:?}: {entry}"
            );
        } else {
            assert_eq!(status(entry), "denied", "{g:?} {flag}: {entry}");
            assert_eq!(entry["structured"]["changed_paths"], json!([]), "{entry}");
            assert!(
                matches!(rule(entry), "mode_forbids" | "tool_not_in_mode"),
                "{g:?}: {entry}"
            );
            assert!(
                reason(entry).contains("--ask") || reason(entry).contains("--auto"),
                "{g:?}: the refusal says no way forward: {entry}"
            );
        }
        let asked = questions(entry, g);
        if asks {
            assert_eq!(asked.len(), 1, "{g:?}: {entry}");
        } else {
            assert!(asked.is_empty(), "{g:?}: {entry}");
        }
    }
    if asks {
        assert!(
            questions(write, g)[0].contains("write_file w.txt"),
            "{write}"
        );
        assert!(
            questions(patch, g)[0].contains("*** Add File: p.txt"),
            "{patch}"
        );
        assert!(
            questions(delete, g)[0].contains("delete_file d.txt"),
            "{delete}"
        );
        assert!(
            questions(redirect, g)[0].contains("\n\necho t > t.txt\n\n"),
            "{redirect}"
        );
    }
}

/// The files [`every_tool`]'s writes name: written (and `d.txt` deleted) when the mode lets writes
/// through, untouched otherwise.
fn check_written_files(server: &Server, g: Generation, flag: &str, writes: bool) {
    let read_file = |name: &str| std::fs::read_to_string(server.file(name)).ok();
    if writes {
        assert_eq!(read_file("w.txt").as_deref(), Some("written\n"), "{g:?}");
        assert_eq!(read_file("p.txt").as_deref(), Some("patched\n"), "{g:?}");
        assert_eq!(read_file("t.txt").as_deref(), Some("t\n"), "{g:?}");
        assert_eq!(read_file("d.txt"), None, "{g:?}");
    } else {
        for name in ["w.txt", "p.txt", "t.txt"] {
            assert_eq!(read_file(name), None, "{g:?} {flag} wrote {name}");
        }
        assert_eq!(read_file("d.txt").as_deref(), Some("delete me\n"), "{g:?}");
    }
}

#[test]
fn safe_runs_the_reads_and_refuses_every_write() {
    every_tool_in("--safe", false, false);
}

#[test]
fn ask_with_an_approving_client_asks_then_runs_every_write() {
    every_tool_in("--ask", true, true);
}

#[test]
fn auto_runs_every_tool_without_asking() {
    every_tool_in("--auto", true, false);
}

#[test]
fn bad_arguments_are_error_results_that_name_the_field() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([
        call("read_file", json!({"pat": "README.md"})),
        call("read_file", json!({})),
        call(
            "terminal",
            json!({"command": "echo x > bad1.txt", "timeout_secs": 5})
        ),
        call("write_file", json!({"path": "bad2.txt"})),
        call("nonexistent_tool", json!({})),
        // Positive control: the same server answers a good call.
        call("terminal", json!({"command": "echo x > good.txt"})),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--auto"], json!({"calls": calls})))
        .collect();
    let out = client("calls", &runs);
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let r = results(run);
        for (entry, field) in [
            (&r[0], "`pat`"),
            (&r[1], "missing field `path`"),
            (&r[2], "`timeout_secs`"),
            (&r[3], "missing field `content`"),
            (&r[4], "no tool named `nonexistent_tool`"),
        ] {
            assert_eq!(entry["is_error"], true, "{g:?}: {entry}");
            assert_eq!(status(entry), "failed", "{g:?}: {entry}");
            assert!(reason(entry).contains(field), "{g:?} {field}: {entry}");
        }
        assert!(!server.file("bad1.txt").exists(), "{g:?}");
        assert!(!server.file("bad2.txt").exists(), "{g:?}");
        assert_eq!(status(&r[5]), "ok", "{g:?}: {}", r[5]);
        assert!(server.file("good.txt").exists(), "{g:?}");
    }
}

/// An argument of the wrong type is an isError tool result that names the field (serde alone
/// says only `invalid type: integer 5, expected a string`), and nothing runs.
#[test]
fn a_wrong_type_is_an_error_result_that_names_the_field() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([
        call("read_file", json!({"path": 5})),
        call(
            "terminal",
            json!({"command": "echo x > typed.txt", "timeout": "soon"})
        ),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--auto"], json!({"calls": calls})))
        .collect();
    let out = client("calls", &runs);
    let mut unnamed = Vec::new();
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let r = results(run);
        for (entry, field) in [(&r[0], "path"), (&r[1], "timeout")] {
            assert_eq!(entry["is_error"], true, "{g:?}: {entry}");
            assert_eq!(status(entry), "failed", "{g:?}: {entry}");
            assert!(reason(entry).contains("invalid type"), "{g:?}: {entry}");
            if !reason(entry).contains(&format!("`{field}`")) {
                unnamed.push(format!("{g:?} {field}: {}", reason(entry)));
            }
        }
        assert!(!server.file("typed.txt").exists(), "{g:?}");
    }
    assert!(
        unnamed.is_empty(),
        "the wrong-type reason does not name the field: {unnamed:?}"
    );
}

#[test]
fn ask_runs_what_was_accepted_and_nothing_that_was_declined() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([
        answered(
            "terminal",
            json!({"command": "echo yes > yes.txt"}),
            "accept"
        ),
        answered(
            "terminal",
            json!({"command": "echo no > declined.txt"}),
            "decline"
        ),
        answered(
            "terminal",
            json!({"command": "echo no > unticked.txt"}),
            "accept_false"
        ),
        answered(
            "terminal",
            json!({"command": "echo no > dismissed.txt"}),
            "cancel"
        ),
        answered(
            "write_file",
            json!({"path": "declined_w.txt", "content": "no"}),
            "decline"
        ),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--ask"], json!({"calls": calls})))
        .collect();
    let out = client("calls", &runs);
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let r = results(run);
        // Accepted: asked once, with the command exactly as it runs, and it ran.
        let yes = &r[0];
        assert_eq!(status(yes), "ok", "{g:?}: {yes}");
        let asked = questions(yes, g);
        assert_eq!(asked.len(), 1, "{g:?}: {yes}");
        assert!(asked[0].contains("\n\necho yes > yes.txt\n\n"), "{asked:?}");
        assert!(asked[0].contains("class: WORKSPACE_MUTATING"), "{asked:?}");
        assert_eq!(
            std::fs::read_to_string(server.file("yes.txt")).unwrap(),
            "yes\n",
            "{g:?}: the accepted command ran"
        );
        // Declined three ways, and a declined write: denied, the user named, nothing ran.
        for (entry, file) in [
            (&r[1], "declined.txt"),
            (&r[2], "unticked.txt"),
            (&r[3], "dismissed.txt"),
            (&r[4], "declined_w.txt"),
        ] {
            assert_eq!(questions(entry, g).len(), 1, "{g:?}: {entry}");
            assert_eq!(status(entry), "denied", "{g:?}: {entry}");
            assert_eq!(rule(entry), "declined", "{g:?}: {entry}");
            assert!(!server.file(file).exists(), "{g:?}: {file} was written");
        }
    }
}

#[test]
fn ask_without_an_elicitation_capability_waits_for_spear_approve_then_is_cancelled() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([
        call("terminal", json!({"command": "echo no > unasked.txt"})),
        call(
            "write_file",
            json!({"path": "unasked_w.txt", "content": "no"})
        ),
        // Positive control: what needs no confirmation still runs.
        call("terminal", json!({"command": "echo fine"})),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| {
            s.run(
                &["--ask", "--approval-wait", "1"],
                json!({"answer": "none", "calls": calls}),
            )
        })
        .collect();
    let out = client("calls", &runs);
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let r = results(run);
        for (entry, file) in [(&r[0], "unasked.txt"), (&r[1], "unasked_w.txt")] {
            // Nobody ran `spear approve` within the wait.
            assert_eq!(status(entry), "cancelled", "{g:?}: {entry}");
            assert_eq!(rule(entry), "unapproved", "{g:?}: {entry}");
            assert!(!server.file(file).exists(), "{g:?}: {file} was written");
        }
        assert_eq!((status(&r[2]), stdout(&r[2])), ("ok", "fine\n"), "{g:?}");
    }
}

/// Characters that change what a terminal shows: a right-to-left override, an escape sequence
/// that hides what follows, a zero-width space.
const HIDDEN: [char; 3] = ['\u{202e}', '\u{1b}', '\u{200b}'];

/// Asks about a command with [`HIDDEN`] characters in its redirect target and its comment (on
/// both generations), declines, checks that nothing ran, and returns each generation's question.
fn hidden_character_questions() -> Vec<(Generation, String)> {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    // The override turns the end of the file name around on screen; the escape sequence would
    // hide the rest of the line.
    let command = "echo hidden > 'bidi\u{202e}hs.\u{1b}[8mtxt' # \u{200b}";
    let calls = json!([answered("terminal", json!({"command": command}), "decline")]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--ask"], json!({"calls": calls})))
        .collect();
    let out = client("calls", &runs);
    servers
        .iter()
        .zip(&out)
        .map(|(server, run)| {
            let g = server.generation;
            let entry = &results(run)[0];
            assert_eq!(status(entry), "denied", "{g:?}: {entry}");
            assert_eq!(
                std::fs::read_dir(&server.dirs.ws).unwrap().count(),
                1,
                "{g:?}"
            );
            let asked = questions(entry, g);
            assert_eq!(asked.len(), 1, "{g:?}: {entry}");
            (g, asked[0].to_owned())
        })
        .collect()
}

#[test]
fn ask_shows_the_command_with_control_and_bidi_characters_escaped() {
    for (g, q) in hidden_character_questions() {
        // The command block: between the heading and the warning of hidden characters (or the
        // line of where it runs, or the class).
        let block = q
            .split_once("runs:\n\n")
            .and_then(|(_, rest)| {
                rest.split_once("\n\nwarning:")
                    .or_else(|| rest.split_once("\n\nruns:"))
                    .or_else(|| rest.split_once("\n\nclass:"))
            })
            .map_or_else(
                || panic!("{g:?}: no command block in {q:?}"),
                |(block, _)| block,
            );
        for raw in HIDDEN {
            assert!(
                !block.contains(raw),
                "{g:?}: U+{:04X} shown raw: {block:?}",
                u32::from(raw)
            );
        }
        assert_eq!(
            block, "echo hidden > 'bidi\\u{202e}hs.\\u{1b}[8mtxt' # \\u{200b}",
            "{g:?}"
        );
    }
}

/// No hidden character reaches the screen raw anywhere in the question: the `why:` line quotes
/// the redirect target, whose name can hold them too ("a redirection writes bidi<U+202E>hs.txt").
#[test]
fn ask_shows_no_hidden_character_raw_anywhere_in_the_question() {
    let mut raw_in = Vec::new();
    for (g, q) in hidden_character_questions() {
        for raw in HIDDEN {
            if let Some(line) = q.lines().find(|l| l.contains(raw)) {
                raw_in.push(format!("{g:?} U+{:04X} in {line:?}", u32::from(raw)));
            }
        }
    }
    assert!(
        raw_in.is_empty(),
        "a hidden character is shown raw in the question: {raw_in:?}"
    );
}

#[test]
fn modern_request_states_bind_to_one_call_and_one_use() {
    let server = Server::new(Modern);
    let commands = json!({
        "ok": "echo ok >> ok.txt",
        "other": "echo other > other.txt",
        "forged": "echo forged > forged.txt",
        "declined": "echo declined > declined.txt",
        "unanswered": "echo unanswered > unanswered.txt",
    });
    let out = client(
        "input_required",
        &[server.run(&["--ask"], json!({"commands": commands}))],
    );
    let run = &out[0];
    // The first round asks: one elicitation form, the command as it runs, and a sealed state.
    let first = &run["first"];
    assert_eq!(first["input_required"], true, "{first}");
    let ask = &first["input_requests"]["spear_confirm"];
    assert_eq!(ask["method"], "elicitation/create", "{first}");
    assert!(
        ask["params"]["message"]
            .as_str()
            .unwrap()
            .contains("\n\necho ok >> ok.txt\n\n"),
        "{first}"
    );
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["approve"]["type"], "boolean",
        "{first}"
    );
    assert!(first["request_state"].is_string(), "{first}");
    // States that do not verify: altered (middle, tail), made up, minted for other arguments,
    // or used once already. Each is refused and runs nothing.
    for key in [
        "forged",
        "forged_tail",
        "made_up",
        "other_args",
        "replayed",
        "forged_fresh",
    ] {
        let entry = &run[key];
        envelope(entry, "terminal");
        assert_eq!(status(entry), "denied", "{key}: {entry}");
        assert_eq!(rule(entry), "request_state_refused", "{key}: {entry}");
        assert!(reason(entry).contains("requestState"), "{key}: {entry}");
        assert!(reason(entry).contains("Nothing ran"), "{key}: {entry}");
    }
    assert!(reason(&run["replayed"]).contains("already used"), "{run}");
    // The state it was minted for, answered accept: it ran, once (the replay added nothing).
    let approved = &run["approved"];
    envelope(approved, "terminal");
    assert_eq!(status(approved), "ok", "{approved}");
    assert_eq!(
        std::fs::read_to_string(server.file("ok.txt")).unwrap(),
        "ok\n"
    );
    // Declined through inputResponses; a state with no answer.
    assert_eq!(run["declined_first"]["input_required"], true, "{run}");
    let declined = &run["declined"];
    envelope(declined, "terminal");
    assert_eq!(status(declined), "denied", "{declined}");
    assert_eq!(rule(declined), "declined", "{declined}");
    let unanswered = &run["unanswered"];
    envelope(unanswered, "terminal");
    assert_eq!(status(unanswered), "cancelled", "{unanswered}");
    assert_eq!(rule(unanswered), "no_answer", "{unanswered}");
    for name in ["other.txt", "forged.txt", "declined.txt", "unanswered.txt"] {
        assert!(!server.file(name).exists(), "{name} was written");
    }
}

#[test]
fn cancelling_a_call_kills_its_whole_process_tree() {
    let (servers, tokens, runs) = runs_with_tokens(
        &["--auto"],
        |t| json!({"token": t, "command": format!("sleep {t}; echo MARKER_{t}")}),
    );
    let out = client("cancel", &runs);
    for ((server, token), run) in servers.iter().zip(&tokens).zip(&out) {
        let g = server.generation;
        // Positive controls: the command ran, and the probes saw it and its cgroups.
        assert!(run["seen_after"].is_number(), "{g:?} never ran: {run}");
        assert!(
            !run["alive_before"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        assert!(
            !run["cgroups_before"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        // The client's cancel (notifications/cancelled) ended the call and its tree, the server
        // lives on and answers.
        assert_eq!(run["call_cancelled"], true, "{g:?}: {run}");
        let gone = run["gone_after"].as_f64();
        assert!(gone.is_some_and(|s| s < 5.0), "{g:?}: {run}");
        assert_eq!(run["survivors"], json!([]), "{g:?}");
        assert_eq!(run["cgroups_after"], json!([]), "{g:?}");
        assert_eq!(run["server_alive"], true, "{g:?}");
        let followup = &run["followup"];
        envelope(followup, "read_file");
        assert_eq!(status(followup), "ok", "{g:?}: {followup}");
        assert_no_process_with(token);
        assert_no_cgroup_of(run);
    }
}

#[test]
fn progress_is_reported_while_a_command_runs() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([{
        "tool": "terminal",
        "args": {"command": "for i in 1 2 3 4 5 6; do echo p$i; sleep 0.5; done"},
        "progress": true,
    }]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--auto"], json!({"calls": calls})))
        .collect();
    let out = client("calls", &runs);
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        let entry = &results(run)[0];
        assert_eq!(status(entry), "ok", "{g:?}: {entry}");
        assert_eq!(stdout(entry), "p1\np2\np3\np4\np5\np6\n", "{g:?}");
        let progress = entry["progress"].as_array().unwrap();
        assert!(progress.len() >= 2, "{g:?}: {entry}");
        let values: Vec<f64> = progress
            .iter()
            .map(|p| p["progress"].as_f64().unwrap())
            .collect();
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "{g:?}: not increasing: {values:?}"
        );
        for p in progress {
            let message = p["message"].as_str().unwrap_or("");
            assert!(message.contains("bytes"), "{g:?}: {p}");
        }
    }
}

#[test]
fn a_background_job_prints_each_byte_once_and_dies_with_terminal_kill() {
    let (servers, tokens, runs) = runs_with_tokens(&["--auto"], |t| {
        json!({
            "token": t,
            "command": format!(
                "for i in 1 2 3; do echo line$i; sleep 0.4; done; sleep {t}"
            ),
        })
    });
    let out = client("job", &runs);
    for ((server, token), run) in servers.iter().zip(&tokens).zip(&out) {
        let g = server.generation;
        let started = &run["started"];
        envelope(started, "terminal");
        assert_eq!(status(started), "ok", "{g:?}: {started}");
        assert_eq!(
            started["structured"]["job"]["state"], "running",
            "{started}"
        );
        let reads = run["reads"].as_array().unwrap();
        let mut printed = String::new();
        for read in reads {
            envelope(read, "terminal_output");
            assert_eq!(status(read), "ok", "{g:?}: {read}");
            assert_eq!(read["structured"]["job"]["state"], "running", "{read}");
            printed.push_str(stdout(read));
        }
        assert_eq!(printed, "line1\nline2\nline3\n", "{g:?}: {reads:?}");
        // Positive control: the job's sleep was alive before the kill.
        assert!(run["sleeping_before_kill"].is_number(), "{g:?}: {run}");
        assert!(
            !run["alive_before_kill"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        assert!(
            !run["cgroups_before_kill"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        let killed = &run["killed"];
        envelope(killed, "terminal_kill");
        assert_eq!(killed["structured"]["job"]["state"], "exited", "{killed}");
        assert_eq!(status(killed), "cancelled", "{killed}");
        assert!(reason(killed).contains("killed"), "{killed}");
        assert!(run["gone_after"].is_number(), "{g:?}: {run}");
        assert_eq!(run["survivors"], json!([]), "{g:?}");
        assert_eq!(run["cgroups_after"], json!([]), "{g:?}");
        // Its end was reported once; the id is gone.
        let after = &run["after_kill"];
        envelope(after, "terminal_output");
        assert_eq!(status(after), "not_found", "{after}");
        assert_no_process_with(token);
        assert_no_cgroup_of(run);
    }
}

#[test]
fn closing_the_client_ends_its_background_jobs() {
    let (servers, tokens, runs) = runs_with_tokens(
        &["--auto"],
        |t| json!({"token": t, "command": format!("sleep {t}")}),
    );
    let out = client("close", &runs);
    for ((server, token), run) in servers.iter().zip(&tokens).zip(&out) {
        let g = server.generation;
        assert_eq!(status(&run["started"]), "ok", "{g:?}: {run}");
        // Positive control: the job ran, and the probes saw it and its cgroups.
        assert!(run["seen_after"].is_number(), "{g:?}: {run}");
        assert!(
            !run["alive_before"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        assert!(
            !run["cgroups_before"].as_array().unwrap().is_empty(),
            "{g:?}: {run}"
        );
        assert!(
            !run["session_cgroups_before"].as_array().unwrap().is_empty(),
            "{g:?}: the session's cgroup: {run}"
        );
        // The server exited on stdin EOF by itself: the SDK signals its process group only
        // after 2 s, so the jobs died by the server's doing, not the client's.
        let close = run["close_seconds"].as_f64().unwrap();
        assert!(
            close < 2.0,
            "{g:?}: the server took {close} s to exit: {run}"
        );
        assert_eq!(run["server_alive"], false, "{g:?}");
        assert_eq!(run["survivors"], json!([]), "{g:?}");
        assert_eq!(run["cgroups_after"], json!([]), "{g:?}");
        // The session's cgroup goes with the server.
        assert_eq!(run["session_cgroups_after"], json!([]), "{g:?}");
        assert_no_process_with(token);
        assert_no_cgroup_of(run);
    }
}

// ---------------------------------------------------------------------------------------------
// Justified escalation: a SAFE session's terminal may ask, with a justification, to run one call
// with a wider sandbox; the user is asked through the client on either generation.

const WHY: &str = "the task asks for the fixture file to be written";

fn escalating(command: &str, caps: &[&str]) -> Value {
    json!({"command": command, "sandbox_permissions": caps, "justification": WHY})
}

/// The escalation records of a log: (event, rule, reason).
fn escalation_records(log: &[Value]) -> Vec<(String, String, String)> {
    log.iter()
        .filter(|r| r["event"].as_str().unwrap().starts_with("escalation_"))
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            (text("event"), text("rule"), text("reason"))
        })
        .collect()
}

/// The listed terminal tool of a run.
fn terminal_tool(run: &Value) -> &Value {
    run["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "terminal")
        .unwrap()
}

/// Accepted: a real denial first, then the same command once with `workspace:write`; the user is
/// asked (the question says it is an escalation and shows the justification), the write happens
/// once, and the next write is refused again. The audit log holds the request and the approval.
#[test]
fn a_safe_escalation_accepted_writes_once_and_the_next_write_is_refused() {
    let servers: Vec<Server> = BOTH.into_iter().map(Server::new).collect();
    let calls = json!([
        call("terminal", json!({"command": "echo once >> once.txt"})),
        answered(
            "terminal",
            escalating("echo once >> once.txt", &["workspace:write"]),
            "accept"
        ),
        call("terminal", json!({"command": "echo twice >> once.txt"})),
        call("terminal", json!({"command": "echo twice > twice.txt"})),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|s| s.run(&["--safe"], json!({"list": true, "calls": calls})))
        .collect();
    let out = client("calls", &runs);
    let reason = format!("escalate sandbox to workspace:write: {WHY}");
    for (server, run) in servers.iter().zip(&out) {
        let g = server.generation;
        // SAFE's terminal offers exactly what SAFE may be given once, and teaches the flow.
        let terminal = terminal_tool(run);
        let props = &terminal["inputSchema"]["properties"];
        assert_eq!(
            props["sandbox_permissions"]["items"]["enum"],
            json!(["workspace:write", "network"]),
            "{g:?}: {terminal}"
        );
        assert_eq!(props["justification"]["type"], "string", "{g:?}");
        let description = terminal["description"].as_str().unwrap();
        assert!(
            description.contains("Never ask in advance"),
            "{description}"
        );
        let r = results(run);
        // The real denial: refused by the mode, nobody asked.
        assert_eq!(
            (status(&r[0]), rule(&r[0])),
            ("denied", "mode_forbids"),
            "{g:?}: {}",
            r[0]
        );
        assert!(questions(&r[0], g).is_empty(), "{g:?}");
        // The escalation: asked once, as an escalation, with the justification; it ran.
        let e = &r[1];
        assert_eq!(status(e), "ok", "{g:?}: {e}");
        let asked = questions(e, g);
        assert_eq!(asked.len(), 1, "{g:?}: {e}");
        assert!(
            asked[0].starts_with("spear asks to escalate the sandbox"),
            "{asked:?}"
        );
        assert!(
            asked[0].contains("with workspace:write beyond"),
            "{asked:?}"
        );
        assert!(asked[0].contains(WHY), "{asked:?}");
        assert!(
            asked[0].contains("\n\necho once >> once.txt\n\n"),
            "{asked:?}"
        );
        // The next writes are confined again, and nobody is asked.
        for next in &r[2..] {
            assert_eq!(
                (status(next), rule(next)),
                ("denied", "mode_forbids"),
                "{g:?}: {next}"
            );
            assert!(questions(next, g).is_empty(), "{g:?}");
        }
        assert_eq!(
            std::fs::read_to_string(server.file("once.txt")).unwrap(),
            "once\n",
            "{g:?}: written exactly once"
        );
        assert!(!server.file("twice.txt").exists(), "{g:?}");
        // The audit pair: the request, then the approval, with the reason; modern's first
        // round (the question handed to the client) is recorded as awaiting the answer.
        let records = escalation_records(&audit_records(&server.dirs));
        let want: Vec<(&str, &str)> = match g {
            Legacy => vec![("escalation_requested", ""), ("escalation_approved", "")],
            Modern => vec![
                ("escalation_requested", ""),
                ("escalation_refused", "awaiting_confirmation"),
                ("escalation_requested", ""),
                ("escalation_approved", ""),
            ],
        };
        let got: Vec<(&str, &str)> = records
            .iter()
            .map(|(e, r, _)| (e.as_str(), r.as_str()))
            .collect();
        assert_eq!(got, want, "{g:?}: {records:?}");
        assert!(
            records.iter().all(|(_, _, r)| *r == reason),
            "{g:?}: {records:?}"
        );
    }
}

/// Declined, then the same escalation again (final for that command in this turn: refused at
/// once, nobody asked), dismissed, and a client that cannot ask: each fails closed with its own
/// rule, and nothing is written. A command that needs nothing wider still runs.
#[test]
fn a_safe_escalation_declined_or_cancelled_writes_nothing() {
    let servers: Vec<(Server, bool)> = [
        (Legacy, true),
        (Modern, true),
        (Legacy, false),
        (Modern, false),
    ]
    .into_iter()
    .map(|(g, asks)| (Server::new(g), asks))
    .collect();
    let asking = json!([
        answered(
            "terminal",
            escalating("echo no > declined.txt", &["workspace:write"]),
            "decline"
        ),
        answered(
            "terminal",
            escalating("echo no > declined.txt", &["workspace:write"]),
            "accept"
        ),
        answered(
            "terminal",
            escalating("echo no > cancelled.txt", &["workspace:write"]),
            "cancel"
        ),
        call("terminal", json!({"command": "echo fine"})),
    ]);
    let unasking = json!([
        call(
            "terminal",
            escalating("echo no > unasked.txt", &["workspace:write"])
        ),
        call("terminal", json!({"command": "echo fine"})),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|(s, asks)| {
            if *asks {
                s.run(&["--safe"], json!({"calls": asking}))
            } else {
                s.run(&["--safe"], json!({"answer": "none", "calls": unasking}))
            }
        })
        .collect();
    let out = client("calls", &runs);
    for ((server, asks), run) in servers.iter().zip(&out) {
        let g = server.generation;
        let r = results(run);
        let log = escalation_records(&audit_records(&server.dirs));
        let refused: Vec<&str> = log
            .iter()
            .filter(|(e, _, _)| e == "escalation_refused")
            .map(|(_, rule, _)| rule.as_str())
            .filter(|rule| *rule != "awaiting_confirmation")
            .collect();
        if *asks {
            let want = [
                ("denied", "escalation_declined", 1),
                ("denied", "escalation_rejected_before", 0),
                ("cancelled", "escalation_unanswered", 1),
            ];
            for (entry, (st, ru, asked)) in r.iter().zip(want) {
                assert_eq!((status(entry), rule(entry)), (st, ru), "{g:?}: {entry}");
                assert_eq!(questions(entry, g).len(), asked, "{g:?}: {entry}");
                assert!(reason(entry).contains("nothing ran"), "{g:?}: {entry}");
            }
            assert_eq!((status(&r[3]), stdout(&r[3])), ("ok", "fine\n"), "{g:?}");
            assert!(!server.file("declined.txt").exists(), "{g:?}");
            assert!(!server.file("cancelled.txt").exists(), "{g:?}");
            assert_eq!(
                refused,
                [
                    "escalation_declined",
                    "escalation_rejected_before",
                    "escalation_unanswered"
                ],
                "{g:?}: {log:?}"
            );
        } else {
            assert_eq!(
                (status(&r[0]), rule(&r[0])),
                ("cancelled", "escalation_unavailable"),
                "{g:?}: {}",
                r[0]
            );
            assert!(reason(&r[0]).contains("nobody could be asked"), "{}", r[0]);
            assert_eq!((status(&r[1]), stdout(&r[1])), ("ok", "fine\n"), "{g:?}");
            assert!(!server.file("unasked.txt").exists(), "{g:?}");
            assert_eq!(refused, ["escalation_unavailable"], "{g:?}: {log:?}");
        }
    }
}

/// A request that widens nothing cannot be written: the schema refuses it (checked with the
/// SDK's own jsonschema), and spear, since clients do not validate, answers it as invalid
/// arguments and runs nothing; an AUTO session's terminal has no such field at all.
#[test]
fn a_non_widening_escalation_cannot_be_expressed() {
    let servers: Vec<(Server, &str)> = [
        (Legacy, "--safe"),
        (Modern, "--safe"),
        (Legacy, "--auto"),
        (Modern, "--auto"),
    ]
    .into_iter()
    .map(|(g, flag)| (Server::new(g), flag))
    .collect();
    let checked = |args: Value| {
        let mut c = answered("terminal", args, "accept");
        c["check_schema"] = json!(true);
        c
    };
    let calls = json!([
        checked(escalating("echo no > read.txt", &["filesystem:read"])),
        checked(escalating("echo no > shell.txt", &["shell:complex"])),
        checked(
            json!({"command": "echo no > alone.txt", "sandbox_permissions": ["workspace:write"]})
        ),
        // Positive control: what the set holds is valid, asked about and runs.
        checked(escalating("echo yes > yes.txt", &["workspace:write"])),
    ]);
    let runs: Vec<Value> = servers
        .iter()
        .map(|(s, flag)| s.run(&[flag], json!({"list": true, "calls": calls})))
        .collect();
    let out = client("calls", &runs);
    for ((server, flag), run) in servers.iter().zip(&out) {
        let g = server.generation;
        let terminal = terminal_tool(run);
        let props = &terminal["inputSchema"]["properties"];
        let r = results(run);
        if *flag == "--auto" {
            assert!(
                props.get("sandbox_permissions").is_none(),
                "{g:?}: {terminal}"
            );
            assert!(props.get("justification").is_none(), "{g:?}: {terminal}");
            let description = terminal["description"].as_str().unwrap();
            assert!(
                !description.contains("sandbox_permissions"),
                "{description}"
            );
        }
        for (entry, file) in r[..3].iter().zip(["read.txt", "shell.txt", "alone.txt"]) {
            assert_eq!(entry["schema_valid"], false, "{g:?} {flag}: {entry}");
            assert_eq!(status(entry), "failed", "{g:?} {flag}: {entry}");
            assert!(
                reason(entry).contains("invalid arguments for terminal"),
                "{g:?} {flag}: {entry}"
            );
            assert!(questions(entry, g).is_empty(), "{g:?} {flag}");
            assert!(!server.file(file).exists(), "{g:?} {flag}: {file}");
        }
        let control = &r[3];
        if *flag == "--safe" {
            assert_eq!(control["schema_valid"], true, "{g:?}: {control}");
            assert_eq!(status(control), "ok", "{g:?}: {control}");
            assert_eq!(questions(control, g).len(), 1, "{g:?}");
            assert!(server.file("yes.txt").exists(), "{g:?}");
        } else {
            // AUTO: no such field, so even this is invalid, and nobody is asked.
            assert_eq!(control["schema_valid"], false, "{g:?}: {control}");
            assert_eq!(status(control), "failed", "{g:?}: {control}");
            assert!(questions(control, g).is_empty(), "{g:?}");
            assert!(!server.file("yes.txt").exists(), "{g:?}");
        }
    }
}
