//! `spear token`: the operator issues, lists and revokes the tokens a listening spear (`spear mcp
//! --listen`) accepts. A token's value is printed once, by `add`; the store keeps its hash only
//! ([`spear_runtime::TokenStore`], in spear's state directory).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use spear_core::ExecutionMode;
use spear_runtime::{HostSnapshot, TokenInfo, TokenSpec, TokenStore, rfc3339_seconds};

use crate::out::outln;

/// `spear token add|list|revoke`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Issue a token: its value is printed once, on stdout, and never stored (only its hash is).
    Add(AddArgs),
    /// List the tokens: name, scope, mode, sessions, calls, when issued, when they expire. Never a value.
    List {
        /// One JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: it is refused from the next request on, and a listening spear ends its
    /// open sessions within a second or two.
    Revoke {
        /// The token's name.
        name: String,
    },
}

/// `spear token add NAME [--workspace DIR]... [--template DIR]... [--mode safe|ask|auto]
/// [--no-network] [--sessions N] [--calls N] [--expires DUR]`.
#[derive(Debug, clap::Args)]
struct AddArgs {
    /// The token's name: 1 to 64 of the letters, digits, `_`, `.` and `-`.
    name: String,
    /// A workspace its sessions may open (repeatable; none: those the server serves).
    #[arg(long = "workspace", value_name = "DIR")]
    workspaces: Vec<PathBuf>,
    /// A template its sessions may take a copy-on-write copy of (repeatable).
    #[arg(long = "template", value_name = "DIR")]
    templates: Vec<PathBuf>,
    /// The most its sessions may run in (default: the server's mode).
    #[arg(long, value_name = "safe|ask|auto", value_parser = parse_mode)]
    mode: Option<ExecutionMode>,
    /// Its sessions have no network, whatever the server allows.
    #[arg(long)]
    no_network: bool,
    /// How many sessions it may hold open at once (default: the server's limit).
    #[arg(long, value_name = "N")]
    sessions: Option<u32>,
    /// How many of its calls may be in flight at once over all its sessions (default, and at
    /// most: the server's --max-calls-per-token).
    #[arg(long, value_name = "N")]
    calls: Option<u32>,
    /// How long it stays valid: a number and a unit, `s`, `m`, `h`, `d` or `w` (`30m`, `12h`,
    /// `7d`). Default: until revoked.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    expires: Option<Duration>,
}

/// Runs `spear token`.
pub fn run(args: &Args, host: &HostSnapshot) -> Result<i32, String> {
    let store = TokenStore::at(&crate::state_home::state_dir(host)?);
    let now = SystemTime::now();
    match &args.command {
        Command::Add(add) => {
            let spec = TokenSpec {
                name: add.name.clone(),
                workspaces: add.workspaces.clone(),
                templates: add.templates.clone(),
                mode: add.mode,
                no_network: add.no_network,
                sessions: add.sessions,
                calls: add.calls,
                expires_in: add.expires,
            };
            let value = store.add(&spec, now).map_err(|e| e.to_string())?;
            // Shown once: a value nobody could read is taken back.
            let mut out = std::io::stdout().lock();
            if let Err(e) = writeln!(out, "{value}").and_then(|()| out.flush()) {
                let undone = match store.revoke(&add.name) {
                    Ok(()) => "it was revoked again".to_owned(),
                    Err(r) => format!("revoke it: {r}"),
                };
                return Err(format!("the token could not be printed ({e}); {undone}"));
            }
            // What it grants, as stored (canonical paths), for the operator to check.
            let grants = store
                .list()
                .ok()
                .and_then(|list| list.into_iter().find(|t| t.name == add.name))
                .map_or_else(
                    || "(the store cannot be read back)".to_owned(),
                    |t| grants(&t),
                );
            eprintln!(
                "spear: token {} issued; it is shown once, above, and not kept: store it now. It \
                 grants {grants}",
                add.name
            );
        }
        Command::List { json } => {
            let tokens = store.list().map_err(|e| e.to_string())?;
            if *json {
                let list: Vec<_> = tokens.iter().map(|t| to_json(t, now)).collect();
                outln!("{}", serde_json::Value::Array(list));
            } else if tokens.is_empty() {
                eprintln!("spear: no tokens; `spear token add NAME` issues one");
            } else {
                for line in table(&tokens, now) {
                    outln!("{line}");
                }
            }
        }
        Command::Revoke { name } => {
            store.revoke(name).map_err(|e| e.to_string())?;
            eprintln!(
                "spear: token {name} revoked; a listening spear refuses it from its next request and ends its sessions"
            );
        }
    }
    Ok(0)
}

/// `DUR`: a positive whole number and a unit (`s`, `m`, `h`, `d`, `w`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("{text:?} is not a duration: write a number and a unit, as 30m, 12h or 7d");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(format!(
            "{text:?} is no time at all: a token must live a while"
        ));
    }
    n.checked_mul(unit_secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// `--mode`'s value.
fn parse_mode(text: &str) -> Result<ExecutionMode, String> {
    text.parse()
        .map_err(|e: spear_core::UnknownMode| e.to_string())
}

/// What `t` grants, in a sentence's words.
fn grants(t: &TokenInfo) -> String {
    let expires = t.expires.map_or_else(
        || "until revoked".to_owned(),
        |at| format!("until {}", rfc3339_seconds(at)),
    );
    let network = if t.no_network {
        ""
    } else {
        ", the network as the server allows"
    };
    format!(
        "{}; mode {}{network}; {}; {expires}.",
        scope(t),
        mode(t),
        sessions(t),
    )
}

fn scope(t: &TokenInfo) -> String {
    let paths = |ps: &[PathBuf]| {
        ps.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (t.workspaces.is_empty(), t.templates.is_empty()) {
        (true, true) => "the server's workspaces".to_owned(),
        (false, true) => format!("workspaces {}", paths(&t.workspaces)),
        (true, false) => format!("templates {}", paths(&t.templates)),
        (false, false) => format!(
            "workspaces {}, templates {}",
            paths(&t.workspaces),
            paths(&t.templates)
        ),
    }
}

fn mode(t: &TokenInfo) -> String {
    let mode = t
        .mode
        .map_or_else(|| "the server's".to_owned(), |m| m.as_str().to_owned());
    if t.no_network {
        format!("{mode}, no network")
    } else {
        mode
    }
}

fn sessions(t: &TokenInfo) -> String {
    let limit = |n: Option<u32>| {
        n.map_or_else(
            || "the server's limit".to_owned(),
            |n| format!("at most {n}"),
        )
    };
    format!(
        "sessions: {}; calls in flight: {}",
        limit(t.sessions),
        limit(t.calls)
    )
}

fn expires(t: &TokenInfo, now: SystemTime) -> String {
    match t.expires {
        _ if t.expired_at(now) => "expired".to_owned(),
        Some(at) => rfc3339_seconds(at),
        None => "never".to_owned(),
    }
}

/// `spear token list`: a header and a line per token, in aligned columns.
fn table(tokens: &[TokenInfo], now: SystemTime) -> Vec<String> {
    let mut rows = vec![[
        "NAME".to_owned(),
        "SCOPE".to_owned(),
        "MODE".to_owned(),
        "SESSIONS".to_owned(),
        "CALLS".to_owned(),
        "CREATED".to_owned(),
        "EXPIRES".to_owned(),
    ]];
    for t in tokens {
        rows.push([
            t.name.clone(),
            scope(t),
            mode(t),
            t.sessions.map_or_else(|| "-".to_owned(), |n| n.to_string()),
            t.calls.map_or_else(|| "-".to_owned(), |n| n.to_string()),
            rfc3339_seconds(t.created),
            expires(t, now),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

/// `spear token list --json`: one token.
fn to_json(t: &TokenInfo, now: SystemTime) -> serde_json::Value {
    serde_json::json!({
        "name": t.name,
        "workspaces": t.workspaces,
        "templates": t.templates,
        "mode": t.mode,
        "no_network": t.no_network,
        "sessions": t.sessions,
        "calls": t.calls,
        "created": rfc3339_seconds(t.created),
        "expires": t.expires.map(rfc3339_seconds),
        "expired": t.expired_at(now),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_table() {
        for (text, want) in [
            ("30m", Some(1800)),
            ("12h", Some(43_200)),
            ("7d", Some(604_800)),
            ("45s", Some(45)),
            ("2w", Some(1_209_600)),
            ("1d", Some(86_400)),
            ("0d", None),
            ("", None),
            ("30", None),
            ("m", None),
            ("-5m", None),
            ("1.5h", None),
            ("12 h", None),
            ("12H", None),
            ("7days", None),
            ("+7d", None),
            ("99999999999999999999d", None),
            ("18446744073709551615w", None),
        ] {
            assert_eq!(
                parse_duration(text).ok().map(|d| d.as_secs()),
                want,
                "{text:?}"
            );
        }
        assert!(parse_duration("7x").unwrap_err().contains("30m, 12h or 7d"));
    }

    #[test]
    fn modes() {
        assert_eq!(parse_mode("ask").unwrap(), ExecutionMode::Ask);
        assert!(
            parse_mode("yolo")
                .unwrap_err()
                .contains("safe, ask or auto")
        );
    }
}
