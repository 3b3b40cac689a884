//! Two sessions of one `spear mcp --listen` node, open at once, cannot reach each other: session
//! B tries to read and write session A's files (its workspace and its `/tmp`, by their host
//! paths), to see and signal A's background job (`ps`, `/proc`, `pkill`, `kill -9`), to use A's
//! job id with the job tools and A's stored output's reference with `read_output`; every attempt
//! fails and changes nothing on the host, and the same operation from A on its own thing succeeds
//! (the positive control: the probe would have seen the effect; for `ps`, `/proc` and `pkill`,
//! a process of B's own beside it, which each sees). Both for two tokens each kept to a
//! workspace of its own (where B's credential also gets 404 for A's session's URL) and for two
//! template sessions of one token.
//!
//! And what a session leaves: closing it (`DELETE`), its idle timeout and SIGTERM to the server
//! each leave no process, no cgroup, no mount and no file of it (its job, its job's and its own
//! cgroups, its template copy, that copy's mount and its checkpoints, its `/tmp` and home, its
//! stored outputs), while a session still open keeps all of its own.
//!
//! Each server runs with `XDG_RUNTIME_DIR` in the test's own directory, so that the sessions'
//! private directories (`run/spear/sessions`, `run/spear/staging`) are this test's alone.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod listening;
mod python_client;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use listening::{Listening, add_token_with, client, terminal};
use serde_json::{Value, json};
use spear_testkit::process::processes_with;
use spear_testkit::wait::wait_for;
use support::{Dirs, SpearCommands as _};

/// A node's test directories: the workspace (with a directory per workspace token), a template
/// beside it, and the runtime directory the server's private directories go in.
struct Node {
    d: Dirs,
    template: PathBuf,
    run: PathBuf,
}

impl Node {
    fn new() -> Node {
        let d = Dirs::with(&[
            ("README.md", "readme\n"),
            ("a/README.md", "a\n"),
            ("b/README.md", "b\n"),
            ("w/README.md", "w\n"),
        ]);
        let template = d.base.join("repo");
        std::fs::create_dir(&template).unwrap();
        std::fs::write(template.join("README.md"), "template\n").unwrap();
        let run = d.base.join("run");
        std::fs::create_dir(&run).unwrap();
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        Node { d, template, run }
    }

    /// A token kept to the workspace's directory `dir`.
    fn workspace_token(&self, name: &str, dir: &str) -> String {
        let dir = self.d.ws.join(dir);
        add_token_with(&self.d, name, &["--workspace", dir.to_str().unwrap()])
    }

    /// A token for the template.
    fn template_token(&self, name: &str) -> String {
        add_token_with(
            &self.d,
            name,
            &["--template", self.template.to_str().unwrap()],
        )
    }

    /// `spear mcp --listen 127.0.0.1:0 --auto --template REPO FLAGS`, its private directories in
    /// `run`.
    fn serve(&self, flags: &[&str]) -> Listening {
        let mut args = vec![
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--auto",
            "--template",
            self.template.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let mut command = self.d.spear(&args);
        command.env("XDG_RUNTIME_DIR", &self.run);
        Listening::spawn(command).0
    }

    /// Where the sessions' `/tmp`, `/var/tmp` and home are made.
    fn scratch_base(&self) -> PathBuf {
        self.run.join("spear/sessions")
    }

    /// Where template sessions' copies are made.
    fn rollouts(&self) -> PathBuf {
        self.d.state.join("spear-rollouts")
    }

    /// Where sessions' stored outputs are kept, a directory each.
    fn results(&self) -> PathBuf {
        self.d.state.join("spear/results")
    }

    /// The checkpoint stores whose records name a path under `root`.
    fn checkpoints_naming(&self, root: &Path) -> Vec<PathBuf> {
        let root = root.to_str().unwrap();
        let base = self.d.state.join("spear/checkpoints");
        entries(&base)
            .into_iter()
            .map(|e| base.join(e))
            .filter(|store| {
                let turns = store.join("turns");
                entries(&turns).iter().any(|t| {
                    std::fs::read_to_string(turns.join(t)).is_ok_and(|text| text.contains(root))
                })
            })
            .collect()
    }

    /// A session named in its URL, for `token`, asked for with `body`.
    fn open<'a>(
        &'a self,
        server: &Listening,
        name: &'static str,
        token: &str,
        body: &str,
    ) -> Session<'a> {
        let (status, made) = server.make_session(token, body);
        assert_eq!(status, 201, "session {name} was not made: {made}");
        Session {
            node: self,
            name,
            token: token.to_owned(),
            id: made["session"].as_str().unwrap().to_owned(),
            url: made["url"].as_str().unwrap().to_owned(),
            workspace: PathBuf::from(made["workspace"].as_str().unwrap()),
            template: made["template"] == json!(true),
        }
    }
}

/// One named session and what the node said of it.
struct Session<'a> {
    node: &'a Node,
    name: &'static str,
    token: String,
    id: String,
    url: String,
    /// Its workspace on the host: a directory of the server's, or its template copy's view.
    workspace: PathBuf,
    template: bool,
}

impl Session<'_> {
    /// `calls` in one run of the client, in this session: each call's structured result.
    fn calls(&self, calls: &[Value]) -> Vec<Value> {
        let out = client(
            &self.node.d,
            &json!({"url": self.url, "token": self.token, "generation": "modern", "calls": calls}),
        );
        let results = out["results"].as_array().unwrap().clone();
        assert_eq!(
            results.len(),
            calls.len(),
            "session {}: not every call was answered: {out}",
            self.name
        );
        results
    }

    /// A request on the session that does nothing (`GET .../patch`, 409 for a workspace
    /// session), so that its idle time starts again now.
    fn touch(&self, server: &Listening) {
        let (status, response) = server.with_token(
            "GET",
            &format!("/mcp/sessions/{}/patch", self.id),
            &self.token,
            &[],
        );
        assert!(
            status == 200 || status == 409,
            "session {} does not answer: {response}",
            self.name
        );
    }

    /// `DELETE /mcp/sessions/ID`.
    fn close(&self, server: &Listening) {
        let (status, response) = server.with_token(
            "DELETE",
            &format!("/mcp/sessions/{}", self.id),
            &self.token,
            &[],
        );
        assert_eq!(
            status, 200,
            "session {} was not closed: {response}",
            self.name
        );
    }
}

fn call(tool: &str, args: &Value) -> Value {
    json!({"tool": tool, "args": args})
}

fn background(command: &str) -> Value {
    json!({"tool": "terminal", "args": {"command": command, "background": true}})
}

fn status(r: &Value) -> &str {
    r["status"].as_str().unwrap_or("")
}

/// Everything a result says, for a check that a secret is in none of it.
fn said(r: &Value) -> String {
    format!(
        "{}{}{}",
        r["stdout"].as_str().unwrap_or(""),
        r["stderr"].as_str().unwrap_or(""),
        r["reason"].as_str().unwrap_or("")
    )
}

/// Asserts every result of `results` is ok; `what` names the step.
fn all_ok(results: &[Value], calls: &[&str], what: &str) {
    for (r, c) in results.iter().zip(calls) {
        assert_eq!(status(r), "ok", "{what}: {c} failed: {r}");
    }
}

/// The live processes whose command line holds `sleep ARG` (the test's jobs, and the sandboxes
/// around them), `PID: LINE` each.
fn sleeping(arg: &str) -> Vec<String> {
    processes_with(&format!("sleep {arg}"))
}

/// The pid of the one live `sleep ARG` itself (not of the sandbox around it, whose command line
/// may name it too).
fn pid_of(arg: &str) -> u32 {
    let own = format!(": sleep {arg} ");
    let find = || -> Vec<String> {
        sleeping(arg)
            .into_iter()
            .filter(|l| l.contains(&own))
            .collect()
    };
    assert!(
        wait_for(Duration::from_secs(10), || !find().is_empty()),
        "the job `sleep {arg}` never ran"
    );
    let found = find();
    assert_eq!(found.len(), 1, "one job expected: {found:?}");
    found[0].split(':').next().unwrap().parse().unwrap()
}

/// The session area (under `base`) whose `/tmp` holds `file`.
fn scratch_with(base: &Path, file: &str) -> PathBuf {
    let areas: Vec<PathBuf> = std::fs::read_dir(base)
        .unwrap_or_else(|e| panic!("no session areas in {}: {e}", base.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("tmp").join(file).exists())
        .collect();
    assert_eq!(
        areas.len(),
        1,
        "one session area with /tmp/{file} expected under {}",
        base.display()
    );
    areas[0].clone()
}

/// The entries of `dir` (none when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |it| {
            it.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        },
    )
}

/// Mount points of this process's mount namespace under `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    let dir = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(dir))
        .map(str::to_owned)
        .collect()
}

/// What an attack of B's must come to.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The call fails (refused, not found, a command's non-zero exit).
    Fails,
    /// The call runs and sees nothing of A's.
    SeesNothing,
    /// Whatever the call itself answers; what counts is what is left on the host after it.
    Anything,
}

/// Two sessions, A and B, open at once on one node: B's every attempt on A's files, `/tmp`,
/// job, job id and stored output fails and leaves A's thing as it was; A's own use of each
/// succeeds. Once for two tokens kept to two directories of the server's workspace, once for two
/// template sessions of one token.
#[test]
fn two_sessions_cannot_reach_each_others_files_processes_jobs_or_outputs() {
    let node = Node::new();
    let tok_a = node.workspace_token("a", "a");
    let tok_b = node.workspace_token("b", "b");
    let tok_t = node.template_token("t");
    let server = node.serve(&[]);
    let template = "{\"template\": \"repo\"}";
    let pairs = [
        ("two tokens, a workspace each", (&tok_a, ""), (&tok_b, "")),
        (
            "two template sessions of one token",
            (&tok_t, template),
            (&tok_t, template),
        ),
    ];
    for (n, (pair, (ta, ba), (tb, bb))) in pairs.into_iter().enumerate() {
        let a = node.open(&server, "A", ta, ba);
        let b = node.open(&server, "B", tb, bb);
        assert_ne!(a.workspace, b.workspace, "{pair}: one workspace for both");
        probe(
            &node,
            &server,
            pair,
            &a,
            &b,
            &format!("{}{n}", std::process::id()),
        );
    }
}

/// B's attacks on A, each with A's own use of the same thing as its control; `tag` makes the
/// markers unique (digits only: they are `sleep`'s arguments).
fn probe(node: &Node, server: &Listening, pair: &str, a: &Session<'_>, b: &Session<'_>, tag: &str) {
    let of_a = a_makes_its_things(node, pair, a, tag);
    b_attacks(pair, b, &of_a, tag);

    // B's own job tools work: the id B asked for is only not B's (B's own first job may well
    // have the same id as A's: ids are the session's own).
    let r = b.calls(&[background("echo b-job")]);
    all_ok(&r, &["background job"], &format!("{pair}: B's own"));
    let b_job_id = r[0]["job"]["id"].as_str().unwrap();
    let r = b.calls(&[call("terminal_output", &json!({"job_id": b_job_id}))]);
    all_ok(&r, &["terminal_output"], &format!("{pair}: B's own"));

    // Another credential cannot reach A's session by its URL at all (404, as for one that does
    // not exist), not even to end it; A's credential can (the control). Two sessions of one
    // credential are one principal's: its holder may use either.
    if a.token != b.token {
        let path = format!("/mcp/sessions/{}", a.id);
        let (status, response) = server.initialize_at(&path, Some(&b.token));
        assert_eq!(
            status, 404,
            "{pair}: B's credential reached A's session: {response}"
        );
        let (status, response) = server.with_token("DELETE", &path, &b.token, &[]);
        assert_eq!(
            status, 404,
            "{pair}: B's credential closed A's session: {response}"
        );
        let (status, response) = server.initialize_at(&path, Some(&a.token));
        assert_eq!(status, 200, "{pair}: A's own session: {response}");
    }

    a_reaches_its_things(pair, a, &of_a);
}

/// What A made, and where the host keeps it.
struct OfA {
    /// In every file and output of A's, and in nothing any command of B's names (so that an
    /// error quoting a path does not count as seeing it).
    secret: String,
    /// A's file in its workspace, its host path.
    file: PathBuf,
    /// That file's content.
    content: String,
    /// A's file in its `/tmp`, as A's commands name it.
    tmp: String,
    /// The same file on the host (in A's session area).
    tmp_on_host: PathBuf,
    /// `sleep JOB` is A's background job.
    job: String,
    /// Its id, and the pid of its `sleep` on the host.
    job_id: String,
    pid: u32,
    /// A's stored output's reference, and the stored file on the host.
    output_ref: String,
    stored: PathBuf,
}

/// A makes a file, a file in its `/tmp`, a job and a stored output, and reads each back; each is
/// found on the host.
fn a_makes_its_things(node: &Node, pair: &str, a: &Session<'_>, tag: &str) -> OfA {
    let secret = format!("hush-{tag}");
    let tmp = format!("/tmp/a-{tag}");
    let job = format!("300.{tag}1");
    let file = a.workspace.join("mine.txt");
    let content = format!("A's own {secret}\n");
    let steps = [
        "write_file",
        "read_file (absolute)",
        "echo > /tmp",
        "background job",
        "stored output",
        "cat /tmp",
    ];
    let r = a.calls(&[
        call(
            "write_file",
            &json!({"path": "mine.txt", "content": content}),
        ),
        call("read_file", &json!({"path": file})),
        terminal(&format!("echo {secret} > {tmp} && cat {tmp}")),
        background(&format!("sleep {job}")),
        terminal(&format!("echo out-{secret}; seq 1 200000")),
        terminal(&format!("cat {tmp}")),
    ]);
    all_ok(&r, &steps, &format!("{pair}: A's own"));
    assert!(
        said(&r[1]).contains(&secret),
        "{pair}: A's read_file of its own file: {}",
        r[1]
    );
    assert!(
        said(&r[5]).contains(&secret),
        "{pair}: A's /tmp does not last from one call to the next: {}",
        r[5]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), content);
    let output_ref = r[4]["output_ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{pair}: A's long output was not stored: {}", r[4]))
        .to_owned();
    let stored = node.results().join(&a.id).join(&output_ref);
    assert!(stored.is_file(), "{pair}: A's output is not in its store");
    let area = scratch_with(&node.scratch_base(), &format!("a-{tag}"));
    OfA {
        tmp_on_host: area.join("tmp").join(format!("a-{tag}")),
        job_id: r[3]["job"]["id"].as_str().unwrap().to_owned(),
        pid: pid_of(&job),
        secret,
        file,
        content,
        tmp,
        job,
        output_ref,
        stored,
    }
}

/// One attempt of B's: what it is, the call, what it must come to.
type Attack = (&'static str, Value, Expect);

/// B's attempts on A's things, each with what it must come to.
fn attacks(of_a: &OfA, tag: &str) -> Vec<Attack> {
    let mut all = file_attacks(of_a);
    all.extend(process_attacks(of_a, tag));
    all.extend([
        (
            "terminal_output of A's job id",
            call("terminal_output", &json!({"job_id": of_a.job_id})),
            Expect::Fails,
        ),
        (
            "terminal_kill of A's job id",
            call("terminal_kill", &json!({"job_id": of_a.job_id})),
            Expect::Fails,
        ),
        (
            "read_output of A's stored output",
            call("read_output", &json!({"ref": of_a.output_ref})),
            Expect::Fails,
        ),
    ]);
    all
}

/// B's attempts on A's files: its workspace's and its `/tmp`'s.
fn file_attacks(of_a: &OfA) -> Vec<Attack> {
    let file = of_a.file.to_str().unwrap();
    let tmp = &of_a.tmp;
    let tmp_on_host = of_a.tmp_on_host.to_str().unwrap();
    vec![
        (
            "read_file of A's file by its host path",
            call("read_file", &json!({"path": file})),
            Expect::Fails,
        ),
        (
            "write_file over A's file by its host path",
            call(
                "write_file",
                &json!({"path": file, "content": "B was here\n"}),
            ),
            Expect::Fails,
        ),
        (
            "cat of A's file by its host path",
            terminal(&format!("cat {file}")),
            Expect::Fails,
        ),
        (
            "echo > A's file by its host path",
            terminal(&format!("echo B was here > {file}")),
            Expect::Fails,
        ),
        (
            "ls of B's own workspace",
            terminal("ls -a"),
            Expect::SeesNothing,
        ),
        (
            "cat of A's /tmp file",
            terminal(&format!("cat {tmp}")),
            Expect::Fails,
        ),
        (
            "echo > A's /tmp file",
            terminal(&format!("echo B was here > {tmp} && ls /tmp")),
            Expect::Anything,
        ),
        (
            "cat of A's /tmp file by its host path",
            terminal(&format!("cat {tmp_on_host}")),
            Expect::Fails,
        ),
        (
            "echo > A's /tmp file by its host path",
            terminal(&format!("echo B was here > {tmp_on_host}")),
            Expect::Fails,
        ),
        (
            "read_file of A's /tmp file by its host path",
            call("read_file", &json!({"path": tmp_on_host})),
            Expect::Fails,
        ),
    ]
}

/// B's attempts on A's job's process.
fn process_attacks(of_a: &OfA, tag: &str) -> Vec<Attack> {
    let (b_ps, b_proc, b_kill) = b_processes(tag);
    let kill_all = "for p in /proc/[0-9]*; do p=${p#/proc/}; \
                    if [ \"$p\" != \"$$\" ] && kill -9 \"$p\" 2>/dev/null; then echo \"killed $p\"; fi; \
                    done; exit 0";
    vec![
        // Each beside a process of B's own, which it must see (and pkill kill): the control.
        // The script names B's process through a variable and the patterns with `[.]`, so that
        // no command line matches but the sleeps' own.
        (
            "ps of every process",
            terminal(&format!("s={b_ps}; sleep $s & sleep 0.3; ps -eo args")),
            Expect::SeesNothing,
        ),
        (
            "every command line in /proc",
            terminal(&format!(
                "s={b_proc}; sleep $s & sleep 0.3; \
                 for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done"
            )),
            Expect::SeesNothing,
        ),
        (
            "pkill of A's job",
            terminal(&format!(
                "s={b_kill}; sleep $s & sleep 0.3; pkill -KILL -f 'sleep {}'; echo A=$?; \
                 pkill -KILL -f 'sleep {}'; echo B=$?",
                of_a.job.replace('.', "[.]"),
                b_kill.replace('.', "[.]")
            )),
            Expect::SeesNothing,
        ),
        (
            "kill -9 of A's job's host pid",
            terminal(&format!("kill -9 {}", of_a.pid)),
            Expect::Fails,
        ),
        (
            "kill -9 of every pid in /proc",
            terminal(kill_all),
            Expect::Anything,
        ),
    ]
}

/// The `sleep` arguments of B's own processes beside its `ps`, `/proc` and `pkill` attempts.
fn b_processes(tag: &str) -> (String, String, String) {
    (
        format!("297.{tag}2"),
        format!("298.{tag}3"),
        format!("299.{tag}4"),
    )
}

/// B's attacks, in one client run: each fails or sees nothing, and nothing of A's changed on
/// the host after them all; B's own processes were seen and killed.
fn b_attacks(pair: &str, b: &Session<'_>, of_a: &OfA, tag: &str) {
    let attacks = attacks(of_a, tag);
    let calls: Vec<Value> = attacks.iter().map(|(_, c, _)| c.clone()).collect();
    let r = b.calls(&calls);
    let a_job = format!("sleep {}", of_a.job);
    for ((what, _, expect), r) in attacks.iter().zip(&r) {
        eprintln!("{pair}: B's {what}: {} {}", status(r), said(r).trim());
        let seen = said(r);
        assert!(
            !seen.contains(&of_a.secret) && !seen.contains(&a_job),
            "{pair}: B's {what} saw A's: {r}"
        );
        match expect {
            Expect::Fails => assert_ne!(status(r), "ok", "{pair}: B's {what} succeeded: {r}"),
            Expect::SeesNothing => {
                assert_eq!(status(r), "ok", "{pair}: B's {what} did not run: {r}");
            }
            Expect::Anything => {}
        }
    }
    let answer = |what: &str| {
        let i = attacks.iter().position(|(w, _, _)| *w == what).unwrap();
        said(&r[i])
    };
    assert!(
        !answer("ls of B's own workspace").contains("mine.txt"),
        "{pair}: A's file is in B's workspace"
    );
    let (b_ps, b_proc, b_kill) = b_processes(tag);
    for (what, own) in [
        ("ps of every process", &b_ps),
        ("every command line in /proc", &b_proc),
    ] {
        let out = answer(what);
        assert!(
            out.lines().any(|l| l.trim() == format!("sleep {own}")),
            "{pair}: B's {what} did not see B's own process: the probe is blind: {out}"
        );
    }
    let out = answer("pkill of A's job");
    assert!(
        out.contains("A=1\n") && out.contains("B=0\n"),
        "{pair}: B's pkill found A's job (A=0), or did not kill B's own process (B=1): {out}"
    );
    for own in [&b_ps, &b_proc, &b_kill] {
        assert!(
            wait_for(Duration::from_secs(10), || sleeping(own).is_empty()),
            "{pair}: B's own `sleep {own}` outlived its command"
        );
    }
    // Nothing of A's changed on the host.
    assert_eq!(
        std::fs::read_to_string(&of_a.file).unwrap(),
        of_a.content,
        "{pair}: B changed A's file"
    );
    assert_eq!(
        std::fs::read_to_string(&of_a.tmp_on_host).unwrap(),
        format!("{}\n", of_a.secret),
        "{pair}: B changed A's /tmp file"
    );
    assert!(of_a.stored.is_file(), "{pair}: B removed A's stored output");
    let left = sleeping(&of_a.job);
    assert!(
        left.iter()
            .any(|l| l.starts_with(&format!("{}:", of_a.pid))),
        "{pair}: B killed A's job (pid {}): {left:?}",
        of_a.pid
    );
}

/// A's controls: each thing B failed to reach, A reaches; its job ends by its own kill.
fn a_reaches_its_things(pair: &str, a: &Session<'_>, of_a: &OfA) {
    let steps = [
        "read_file",
        "cat (absolute)",
        "cat /tmp",
        "terminal_output",
        "read_output",
    ];
    let r = a.calls(&[
        call("read_file", &json!({"path": of_a.file})),
        terminal(&format!("cat {}", of_a.file.display())),
        terminal(&format!("cat {}", of_a.tmp)),
        call("terminal_output", &json!({"job_id": of_a.job_id})),
        call(
            "read_output",
            &json!({"ref": of_a.output_ref, "limit": 100}),
        ),
        call("terminal_kill", &json!({"job_id": of_a.job_id})),
    ]);
    all_ok(&r, &steps, &format!("{pair}: A's own, after B"));
    for (i, what) in [(0, "read_file"), (1, "cat"), (2, "cat /tmp")] {
        assert!(
            said(&r[i]).contains(&of_a.secret),
            "{pair}: A's {what} of its own file: {}",
            r[i]
        );
    }
    assert_eq!(
        r[3]["job"]["state"], "running",
        "{pair}: A's terminal_output of its own job: {}",
        r[3]
    );
    assert!(
        said(&r[4]).starts_with(&format!("out-{}\n", of_a.secret)),
        "{pair}: A's read_output of its own output: {}",
        r[4]
    );
    assert_eq!(
        (status(&r[5]), &r[5]["job"]["state"]),
        ("cancelled", &json!("exited")),
        "{pair}: A's terminal_kill of its own job: {}",
        r[5]
    );
    assert!(
        wait_for(Duration::from_secs(10), || sleeping(&of_a.job).is_empty()),
        "{pair}: A's job outlived A's terminal_kill: {:?}",
        sleeping(&of_a.job)
    );
}

/// What one session left on the host while it ran, found there: each must be gone once it
/// ends, and is there until then.
struct Traces {
    name: String,
    /// The marker of its job, `sleep MARKER`.
    job: String,
    /// The cgroups its job ran in (the session's and the command's), by name.
    cgroups: Vec<String>,
    /// Its `/tmp`, `/var/tmp` and home.
    area: PathBuf,
    /// Its stored outputs.
    results: PathBuf,
    /// Its template copy (the directory that holds the view), if it is a template session.
    rollout: Option<PathBuf>,
    /// The checkpoint store of its template copy, if it is a template session (a workspace
    /// session's checkpoints are the workspace's undo history, and stay).
    checkpoints: Option<PathBuf>,
}

/// A job, a file in `/tmp` and in home, a stored output and a file in its workspace, made in
/// `s` (of the server whose pid is `server`), and found on the host.
fn leave_traces(node: &Node, server: u32, s: &Session<'_>, tag: &str) -> Traces {
    let job = format!("300.{tag}");
    let r = s.calls(&[
        background(&format!("sleep {job}")),
        terminal(&format!(
            "echo {tag} > /tmp/t-{tag} && echo {tag} > ~/h-{tag}"
        )),
        terminal("seq 1 200000"),
        call("write_file", &json!({"path": "made.txt", "content": tag})),
    ]);
    all_ok(
        &r,
        &[
            "background job",
            "/tmp and home",
            "stored output",
            "write_file",
        ],
        s.name,
    );
    let pid = pid_of(&job);
    let cgroups: Vec<String> = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap()
        .lines()
        .flat_map(|l| l.rsplit(':').next().unwrap().split('/'))
        .filter(|c| {
            c.starts_with(&format!("spear-{server}-"))
                || c.starts_with(&format!("spear-session-{server}-"))
        })
        .map(str::to_owned)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let area = scratch_with(&node.scratch_base(), &format!("t-{tag}"));
    assert!(
        area.join("home").join(format!("h-{tag}")).is_file(),
        "{}: its home is not beside its /tmp",
        s.name
    );
    let results = node.results().join(&s.id);
    assert!(
        !entries(&results).is_empty(),
        "{}: no stored output in {}",
        s.name,
        results.display()
    );
    let rollout = s.template.then(|| s.workspace.parent().unwrap().to_owned());
    let checkpoints = s.template.then(|| {
        let found = node.checkpoints_naming(&s.workspace);
        assert_eq!(
            found.len(),
            1,
            "{}: its write_file was not checkpointed",
            s.name
        );
        found[0].clone()
    });
    assert!(
        s.workspace.join("made.txt").is_file(),
        "{}: its write_file did not land in its workspace",
        s.name
    );
    Traces {
        name: s.name.to_owned(),
        job,
        cgroups,
        area,
        results,
        rollout,
        checkpoints,
    }
}

/// The cgroup directories named in `names`, in every hierarchy.
fn cgroups_named(names: &[String]) -> Vec<PathBuf> {
    spear_testkit::cgroup::find("/sys/fs/cgroup", usize::MAX, |n| {
        names.iter().any(|c| c == n)
    })
}

impl Traces {
    /// What of it is left now, each named.
    fn left(&self) -> Vec<String> {
        let mut left = Vec::new();
        let procs = sleeping(&self.job);
        if !procs.is_empty() {
            left.push(format!("its job's process {procs:?}"));
        }
        let cgroups = cgroups_named(&self.cgroups);
        if !cgroups.is_empty() {
            left.push(format!("its cgroups {cgroups:?}"));
        }
        if self.area.exists() {
            left.push(format!("its /tmp and home {}", self.area.display()));
        }
        if self.results.exists() {
            left.push(format!("its stored outputs {}", self.results.display()));
        }
        if let Some(rollout) = &self.rollout {
            let mounts = mounts_under(rollout);
            if !mounts.is_empty() {
                left.push(format!("the mount of its template copy {mounts:?}"));
            }
            if rollout.exists() {
                left.push(format!("its template copy {}", rollout.display()));
            }
        }
        if let Some(dir) = self.checkpoints.as_ref().filter(|d| d.exists()) {
            left.push(format!(
                "the checkpoints of its template copy {}",
                dir.display()
            ));
        }
        left
    }

    /// Asserts that nothing of it is left within a few seconds of `how` ending it.
    fn assert_gone(&self, how: &str) {
        wait_for(Duration::from_secs(10), || self.left().is_empty());
        let left = self.left();
        assert!(
            left.is_empty(),
            "{how} left, of session {}: {}",
            self.name,
            left.join("; ")
        );
    }

    /// Asserts that all of it is there (the control: the checks see each thing).
    fn assert_there(&self, while_: &str) {
        let mut missing = Vec::new();
        if sleeping(&self.job).is_empty() {
            missing.push("its job");
        }
        if cgroups_named(&self.cgroups).is_empty() {
            missing.push("its cgroups");
        }
        if !self.area.exists() {
            missing.push("its /tmp and home");
        }
        if !self.results.exists() {
            missing.push("its stored outputs");
        }
        if let Some(rollout) = &self.rollout {
            if mounts_under(rollout).is_empty() {
                missing.push("the mount of its template copy");
            }
            if !rollout.exists() {
                missing.push("its template copy");
            }
        }
        if self.checkpoints.as_ref().is_some_and(|d| !d.exists()) {
            missing.push("the checkpoints of its template copy");
        }
        assert!(
            missing.is_empty(),
            "{while_}, session {} lost {}",
            self.name,
            missing.join(", ")
        );
    }
}

/// Closing a session, its idle timeout and SIGTERM to the server each leave nothing of the
/// session on the host: no process, no cgroup, no mount, no file; a session still open keeps
/// all of its own meanwhile. At the end nothing at all is left of the server's sessions.
#[test]
fn closing_idle_timeout_and_sigterm_leave_no_process_cgroup_mount_or_file() {
    let node = Node::new();
    let tok_t = node.template_token("t");
    let tok_w = node.workspace_token("w", "w");
    // Long enough for the Python client to start and reach the session it was given, and for
    // the checks after one session is closed to run while the other is not yet idle.
    let server = node.serve(&["--session-idle", "6"]);
    let pid = server.child.id();
    let tag = |n: u32| format!("{}{n}", std::process::id());
    let template = "{\"template\": \"repo\"}";

    // Closed: a template session; idle: a workspace session.
    let closed = node.open(&server, "closed", &tok_t, template);
    let closed_traces = leave_traces(&node, pid, &closed, &tag(1));
    let idle = node.open(&server, "idle", &tok_w, "");
    let idle_traces = leave_traces(&node, pid, &idle, &tag(2));
    closed_traces.assert_there("before it was closed");
    idle.touch(&server);
    closed.close(&server);
    closed_traces.assert_gone("closing the session (DELETE)");
    idle_traces.assert_there("while another session was closed");

    // Idle: ends by itself.
    assert!(
        wait_for(Duration::from_secs(30), || idle_traces.left().is_empty()),
        "the idle timeout left, of session idle: {}",
        idle_traces.left().join("; ")
    );
    let (status, response) =
        server.initialize_at(&format!("/mcp/sessions/{}", idle.id), Some(&tok_w));
    assert_eq!(status, 404, "the idle session still answers: {response}");

    // SIGTERM: a template session and a workspace session, each with its job running.
    let t = node.open(&server, "template at SIGTERM", &tok_t, template);
    let t_traces = leave_traces(&node, pid, &t, &tag(3));
    let w = node.open(&server, "workspace at SIGTERM", &tok_w, "");
    let w_traces = leave_traces(&node, pid, &w, &tag(4));
    t.touch(&server);
    t_traces.assert_there("before SIGTERM");
    w_traces.assert_there("before SIGTERM");
    drop(server);
    t_traces.assert_gone("SIGTERM");
    w_traces.assert_gone("SIGTERM");

    // Nothing at all of the server's sessions is left.
    let cgroups: Vec<PathBuf> = [format!("spear-{pid}-"), format!("spear-session-{pid}-")]
        .iter()
        .flat_map(|p| spear_testkit::cgroup::named("/sys/fs/cgroup", p))
        .collect();
    assert!(cgroups.is_empty(), "the server left cgroups: {cgroups:?}");
    for (what, dir) in [
        ("sessions' /tmp and home", node.scratch_base()),
        ("commands' staging areas", node.run.join("spear/staging")),
        ("template copies", node.rollouts()),
        ("stored outputs", node.results()),
    ] {
        let left = entries(&dir);
        assert!(
            left.is_empty(),
            "the server left {what} in {}: {left:?}",
            dir.display()
        );
    }
    let mounts = mounts_under(&node.rollouts());
    assert!(mounts.is_empty(), "the server left mounts: {mounts:?}");
    let stores = node.checkpoints_naming(&node.rollouts());
    assert!(
        stores.is_empty(),
        "the server left checkpoints of template copies: {stores:?}"
    );
}
