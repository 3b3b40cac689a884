//! `spear mcp` keeps a session's `/tmp` between its calls and removes it when the session ends;
//! `spear exec --env` and `[env] pass` pass named variables, never a secret-looking glob match
//! or a name that loads code.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Dirs, SpearCommands as _};

#[test]
fn an_mcp_session_keeps_tmp_between_calls_and_removes_it_at_the_end() {
    let dirs = Dirs::with(&[]);
    let run = dirs.path("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let log = std::fs::File::create(dirs.path("server.log")).unwrap();
    let mut server = dirs
        .spear_mcp(&["--auto"])
        .env("XDG_RUNTIME_DIR", &run)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut send = |v: Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    assert_eq!(next()["id"], 0);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut call = |id: u64, command: &str| -> Value {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "terminal", "arguments": {"command": command}}}),
        );
        loop {
            let answer = next();
            if answer["id"] == id {
                return answer["result"]["structuredContent"].clone();
            }
        }
    };
    let first = call(1, "echo kept > \"$TMPDIR/probe\" && echo wrote");
    assert_eq!(first["stdout"], "wrote\n", "{first}");
    let second = call(2, "cat \"$TMPDIR/probe\"");
    assert_eq!(second["stdout"], "kept\n", "the next call: {second}");

    let sessions = run.join("spear/sessions");
    let prefix = format!("{}-", server.id());
    let areas = || -> Vec<String> {
        std::fs::read_dir(&sessions)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&prefix))
                    .collect()
            })
            .unwrap_or_default()
    };
    let live = areas();
    assert_eq!(live.len(), 1, "the session's area: {live:?}");
    assert_eq!(
        std::fs::read_to_string(sessions.join(&live[0]).join("tmp/probe")).unwrap(),
        "kept\n"
    );
    // Closing stdin ends the session.
    drop(stdin);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        areas(),
        Vec::<String>::new(),
        "the area outlived the session"
    );
}

fn exec(dirs: &Dirs, config: &str, args: &[&str]) -> std::process::Output {
    let file = dirs.path("config.toml");
    std::fs::write(&file, config).unwrap();
    Command::new(env!("CARGO_BIN_EXE_spear"))
        .arg("exec")
        .arg("--config")
        .arg(&file)
        .args(args)
        .current_dir(&dirs.ws)
        .env("HOME", &dirs.home)
        .env("XDG_STATE_HOME", &dirs.state)
        .env("MY_APP_MODE", "dev")
        .env("MY_APP_TOKEN", "tok-never-by-glob")
        .env("DEPLOY_KEY_ID", "named-exactly")
        .env("OPENAI_API_KEY", "sk-never-passed")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn exec_passes_named_variables_and_no_secret_by_a_glob() {
    let dirs = Dirs::with(&[]);
    let out = exec(
        &dirs,
        "[env]\npass = [\"MY_APP_*\"]\n",
        &["--env", "DEPLOY_KEY_ID", "--", "env"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("MY_APP_MODE=dev\n"), "{stdout}");
    assert!(stdout.contains("DEPLOY_KEY_ID=named-exactly\n"), "{stdout}");
    assert!(!stdout.contains("MY_APP_TOKEN"), "{stdout}");
    assert!(!stdout.contains("OPENAI_API_KEY"), "{stdout}");
}

#[test]
fn a_name_that_loads_code_is_refused_with_why() {
    let dirs = Dirs::with(&[]);
    for (config, args) in [
        ("", vec!["--env", "LD_PRELOAD", "--", "true"]),
        ("[env]\npass = [\"BASH_ENV\"]\n", vec!["--", "true"]),
    ] {
        let out = exec(&dirs, config, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("changes how programs load or run code and is never passed"),
            "{stderr}"
        );
    }
}

/// Issue 31, part 7, at the binary: `[env] pass = ["APP_*"]` passes none of the host's
/// secret-looking `APP_` variables (by a name a substring list did not know, or only by the value)
/// and passes the setting beside them; the positive control names each exactly with `--env`, and
/// the command then sees every one of them.
#[test]
fn a_glob_passes_no_secret_looking_variable_and_exact_names_pass_each() {
    let dirs = Dirs::with(&[]);
    let secrets: &[(&str, &str)] = &[
        ("APP_DB_CREDS", "app:s3cr3t-creds"),
        ("APP_SIGNING_PHRASE", "correct horse battery staple"),
        ("APP_SESSION_COOKIE", "c00kie-value-1"),
        ("APP_GH", "ghp_0123456789abcdefABCDEF0123456789abcd"),
        ("APP_DB", "postgres://app:hunter2@db:5432/app"),
        ("APP_BLOB", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl"),
    ];
    let file = dirs.path("config.toml");
    std::fs::write(&file, "[env]\npass = [\"APP_*\"]\n").unwrap();
    let run = |extra: &[&str]| -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_spear"))
            .arg("exec")
            .arg("--config")
            .arg(&file)
            .args(extra)
            .args(["--", "env"])
            .current_dir(&dirs.ws)
            .env("HOME", &dirs.home)
            .env("XDG_STATE_HOME", &dirs.state)
            .env("APP_MODE", "production")
            .envs(secrets.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let by_glob = run(&[]);
    assert!(by_glob.contains("APP_MODE=production\n"), "{by_glob}");
    for (name, value) in secrets {
        assert!(
            !by_glob.contains(name),
            "{name} passed by the glob: {by_glob}"
        );
        assert!(!by_glob.contains(value), "{name}'s value passed: {by_glob}");
    }
    let mut named = Vec::new();
    for (name, _) in secrets {
        named.extend(["--env", name]);
    }
    let by_name = run(&named);
    for (name, value) in secrets {
        assert!(
            by_name.contains(&format!("{name}={value}\n")),
            "{name} named exactly: {by_name}"
        );
    }
}
