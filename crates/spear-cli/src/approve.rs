//! `spear approve`: a person, in another terminal, answers the ASK confirmations that this user's
//! running `spear mcp` servers wait on (for clients that cannot ask their user). It talks to each
//! server over its socket in spear's state directory, which no sandbox and no tool can see.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use spear_mcp::{
    ApproveRequest, NO_SUCH_PENDING, PendingItem, approvals_client as client, is_valid_id,
    socket_dir,
};

/// `spear approve [--json] [--wait SECS] [--refuse] [ID]`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 done (or something is pending), 1 nothing is pending or \
    no such id, 2 usage.\n\nWithout ID, lists every pending confirmation of this user's running \
    servers: exactly what will run, with hidden characters shown escaped. `spear approve ID` \
    runs that one call once; `spear approve --refuse ID` refuses it, and nothing runs."
)]
pub struct Args {
    /// The pending confirmation to allow (or, with --refuse, to refuse). Without it, lists what
    /// is pending.
    #[arg(value_name = "ID")]
    id: Option<String>,
    /// Refuse ID: the call is denied and nothing runs.
    #[arg(long, requires = "id")]
    refuse: bool,
    /// Print JSON: the pending list, or the answer given.
    #[arg(long)]
    json: bool,
    /// Wait up to SECS for something to be pending (with ID: for ID to be pending).
    #[arg(long, value_name = "SECS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    wait: u64,
}

/// How often the servers are asked again while `--wait` waits.
const POLL: Duration = Duration::from_millis(100);

/// Lists, allows or refuses; returns the exit status.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> Result<i32, String> {
    if let Some(id) = &args.id
        && !is_valid_id(id)
    {
        return Err(format!(
            "`{}` is not a pending confirmation's id (12 lowercase hex digits, as `spear approve` lists them)",
            spear_policy::make_visible(id)
        ));
    }
    let dir = socket_dir(&crate::state_home::state_dir(host)?);
    let deadline = Instant::now() + Duration::from_secs(args.wait);
    let pending = loop {
        let pending = pending_in(&dir);
        let found = match &args.id {
            Some(id) => pending.iter().any(|(_, item)| &item.id == id),
            None => !pending.is_empty(),
        };
        if found || Instant::now() >= deadline {
            break pending;
        }
        std::thread::sleep(POLL);
    };
    match &args.id {
        None => Ok(list(&pending, args.json)),
        Some(id) => answer(&pending, id, args),
    }
}

/// Every running server's pending confirmations, with the socket each came from. A server that
/// does not answer (gone meanwhile) is skipped, and said so.
fn pending_in(dir: &std::path::Path) -> Vec<(PathBuf, PendingItem)> {
    let mut all = Vec::new();
    for (_, socket) in client::servers(dir) {
        match client::ask(&socket, &ApproveRequest::List) {
            Ok(reply) if reply.ok => {
                all.extend(reply.pending.into_iter().map(|i| (socket.clone(), i)));
            }
            Ok(reply) => eprintln!(
                "spear: {}: {}",
                socket.display(),
                reply.error.unwrap_or_default()
            ),
            Err(e) => tracing::debug!("{e}"),
        }
    }
    all
}

fn list(pending: &[(PathBuf, PendingItem)], json: bool) -> i32 {
    if json {
        let items: Vec<&PendingItem> = pending.iter().map(|(_, i)| i).collect();
        println!("{}", serde_json::json!({ "pending": items }));
    } else if pending.is_empty() {
        eprintln!("spear: nothing is waiting for approval");
    } else {
        for (_, item) in pending {
            println!("{}", shown(item));
        }
        println!("Allow one with `spear approve ID`, refuse it with `spear approve --refuse ID`.");
    }
    i32::from(pending.is_empty())
}

/// One pending confirmation as a person reads it. The server already escaped what it sent;
/// escaped again here, so that no server's text can drive the terminal.
fn shown(item: &PendingItem) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let question =
        spear_policy::make_visible(&item.question)
            .lines()
            .fold(String::new(), |mut out, l| {
                out.push_str("    ");
                out.push_str(l);
                out.push('\n');
                out
            });
    format!(
        "{}  {}  (server pid {}, session {}, asked {} s ago)\n{question}",
        item.id,
        spear_policy::make_visible(&item.tool),
        item.server_pid,
        spear_policy::make_visible(&item.session),
        now.saturating_sub(item.asked_at),
    )
}

fn answer(pending: &[(PathBuf, PendingItem)], id: &str, args: &Args) -> Result<i32, String> {
    let holders: Vec<&(PathBuf, PendingItem)> =
        pending.iter().filter(|(_, i)| i.id == id).collect();
    let (socket, item) = match holders.as_slice() {
        [one] => (&one.0, &one.1),
        [] => {
            eprintln!("spear: {NO_SUCH_PENDING}: {id}");
            return Ok(1);
        }
        _ => {
            // Attack stopped: one answer given to two calls. Ids are random; this is only
            // ever a collision, and nothing is answered.
            eprintln!("spear: two servers wait on {id}; answer nothing, and ask again");
            return Ok(1);
        }
    };
    let request = if args.refuse {
        ApproveRequest::Refuse { id: id.to_owned() }
    } else {
        ApproveRequest::Allow { id: id.to_owned() }
    };
    let reply = client::ask(socket, &request).map_err(|e| e.to_string())?;
    let verb = if args.refuse { "refused" } else { "allowed" };
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "ok": reply.ok,
                "id": id,
                "answer": verb,
                "error": reply.error,
                "item": item,
            })
        );
    }
    if !reply.ok {
        eprintln!(
            "spear: {}: {id}",
            reply.error.as_deref().unwrap_or(NO_SUCH_PENDING)
        );
        return Ok(1);
    }
    if !args.json {
        println!("{verb} {id}: {}", spear_policy::make_visible(&item.command));
    }
    Ok(0)
}
