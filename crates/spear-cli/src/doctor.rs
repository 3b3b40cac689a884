//! `spear doctor`: every mechanism the sandbox relies on, usable or not, why, and the fix.

use crate::out::outln;
use serde::Serialize;
use std::sync::Arc;

use spear_runtime::{CommandRunner, RunnerConfig};
use spear_sandbox::{Mechanism, Sandbox, SandboxConfig, probe_mechanisms};
use spear_workspace::{Workspace, WorkspaceConfig};

/// `spear doctor [--json]`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Report as a session with `--no-network` would run: the network path unused, the web pair
    /// withdrawn.
    #[arg(long)]
    no_network: bool,
    /// The operator configuration file (default: ~/.config/spear/config.toml), for the web pair.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

#[derive(Serialize)]
struct Row<'a> {
    name: &'a str,
    usable: bool,
    required: bool,
    detail: &'a str,
    fix: Option<&'a str>,
}

#[derive(Serialize)]
struct Report<'a> {
    ready: bool,
    network: &'static str,
    mechanisms: Vec<Row<'a>>,
    guarantees: Vec<GuaranteeRow>,
    /// The backend commands run under, and what each backend gives on this host.
    backend: BackendReport,
    web: spear_tools::WebReport,
    /// The limits commands and sessions run with, from the operator's `[limits]`.
    limits: Option<LimitsReport>,
    /// What spear's own stores hold, against their quotas (as `spear gc` reports it).
    state: Option<crate::gc::StateReport>,
    /// Why the state could not be reported.
    state_error: Option<String>,
}

/// The limits one command and one session run with (the operator's `[limits]` over the
/// built-in values), as `spear exec` and `spear mcp` would without flags.
#[derive(Serialize)]
struct LimitsReport {
    command_memory_bytes: u64,
    command_tasks: u32,
    command_cpu_percent: u32,
    session_memory_bytes: u64,
    session_tasks: u32,
    changes_per_command: u64,
}

/// The limits report, or why the configuration cannot give one.
fn limits_report(
    host: &spear_runtime::HostSnapshot,
    config: Option<&std::path::Path>,
) -> Result<LimitsReport, String> {
    use spear_policy::limits::{LimitFlags, Limits};
    let (operator, name) = crate::gc::operator(host, config)?;
    let mut limits = Limits::resolve(&operator.limits, &name, &LimitFlags::default())
        .map_err(|e| e.to_string())?;
    limits
        .resolve_session(&name, &LimitFlags::default(), &crate::context::BUILT_IN)
        .map_err(|e| e.to_string())?;
    let built_in = spear_sandbox::CgroupLimits::default();
    Ok(LimitsReport {
        command_memory_bytes: limits.memory_bytes.unwrap_or(built_in.memory_max_bytes),
        command_tasks: limits.tasks.unwrap_or(built_in.tasks_max),
        command_cpu_percent: limits.cpu_percent.unwrap_or(built_in.cpu_percent),
        session_memory_bytes: limits
            .session_memory_bytes
            .unwrap_or(crate::context::BUILT_IN.session_memory_bytes),
        session_tasks: limits
            .session_tasks
            .unwrap_or(crate::context::BUILT_IN.session_tasks),
        changes_per_command: limits
            .changes
            .unwrap_or(u64::try_from(spear_runtime::MAX_COMMITTED_CHANGES).unwrap_or(u64::MAX)),
    })
}

/// Prints `l` as text.
fn print_limits(l: &LimitsReport) {
    use spear_policy::limits::show_bytes;
    outln!(
        "limits: each command {} memory, {} tasks, {:.1} CPUs; each session (its commands and background jobs together) {} memory, {} tasks; each command's commit at most {} changes",
        show_bytes(l.command_memory_bytes),
        l.command_tasks,
        f64::from(l.command_cpu_percent) / 100.0,
        show_bytes(l.session_memory_bytes),
        l.session_tasks,
        l.changes_per_command
    );
}

/// One guarantee bit and whether this host can give it: what gives it, or why not.
#[derive(Serialize)]
struct GuaranteeRow {
    name: &'static str,
    can_give: bool,
    detail: String,
}

/// Every guarantee bit, as `sandbox` can give it on this host ([`Sandbox::can_give`]).
fn guarantee_rows(sandbox: &Sandbox) -> Vec<GuaranteeRow> {
    spear_core::Guarantee::ALL
        .into_iter()
        .map(|g| {
            let (can_give, detail) = match sandbox.can_give(g) {
                Ok(how) => (true, how),
                Err(why) => (false, why),
            };
            GuaranteeRow {
                name: g.as_str(),
                can_give,
                detail,
            }
        })
        .collect()
}

/// The backend `spear` will use on this host with the operator's `[sandbox]`, or why none, and
/// what bubblewrap and the landlock backend each give here.
#[derive(Serialize)]
struct BackendReport {
    /// `bubblewrap` or `landlock`; `None` when the choice refuses.
    chosen: Option<&'static str>,
    /// Why no backend was chosen, with both fixes.
    refusal: Option<String>,
    /// The kernel's Landlock ABI (0: none).
    landlock_abi: u32,
    /// Guarantees bubblewrap gives here.
    bubblewrap: Vec<&'static str>,
    /// Guarantees the landlock backend gives here.
    landlock: Vec<&'static str>,
}

/// The sandbox configuration of the operator's `[sandbox]` (backend and `require`); the built-in
/// one when the configuration cannot be read (the limits report says why).
fn sandbox_config(
    host: &spear_runtime::HostSnapshot,
    config: Option<&std::path::Path>,
) -> SandboxConfig {
    let mut c = SandboxConfig {
        backend: spear_sandbox::BackendChoice::Auto,
        ..SandboxConfig::default()
    };
    if let Ok((operator, _)) = crate::gc::operator(host, config) {
        c.backend = match operator.sandbox.backend {
            spear_policy::SandboxBackend::Auto => spear_sandbox::BackendChoice::Auto,
            spear_policy::SandboxBackend::Bubblewrap => spear_sandbox::BackendChoice::Bubblewrap,
            spear_policy::SandboxBackend::Landlock => spear_sandbox::BackendChoice::Landlock,
        };
        c.auto_require = operator.sandbox.require;
    }
    c
}

/// [`BackendReport`] of `sandbox`.
fn backend_report(sandbox: &Sandbox) -> BackendReport {
    let names =
        |set: spear_core::GuaranteeSet| set.iter().map(spear_core::Guarantee::as_str).collect();
    let (chosen, refusal) = match sandbox.confinement() {
        Ok(c) => (Some(c.name()), None),
        Err(e) => (None, Some(e.to_string())),
    };
    BackendReport {
        chosen,
        refusal,
        landlock_abi: spear_sandbox::landlock_abi(),
        bubblewrap: names(sandbox.bubblewrap_gives()),
        landlock: names(sandbox.landlock_gives()),
    }
}

/// Prints `b` as text: the backend, then each guarantee for both backends side by side.
fn print_backend(b: &BackendReport) {
    match (b.chosen, &b.refusal) {
        (Some(name), _) => {
            outln!("backend: {name} (`[sandbox] backend` chooses: auto, bubblewrap, landlock)");
        }
        (None, Some(why)) => outln!("backend: NONE: {why}"),
        (None, None) => {}
    }
    outln!(
        "guarantees by backend on this host (Landlock ABI {}):",
        b.landlock_abi
    );
    outln!("  {:<21} {:<11} landlock", "", "bubblewrap");
    for g in spear_core::Guarantee::ALL {
        let mark = |list: &[&str]| {
            if list.contains(&g.as_str()) {
                "yes"
            } else {
                "no"
            }
        };
        outln!(
            "  {:<21} {:<11} {}",
            g.as_str(),
            mark(&b.bubblewrap),
            mark(&b.landlock)
        );
    }
}

/// Runs `spear doctor`; exit status 0 when every required mechanism is usable, 1 otherwise.
pub fn run(args: &Args, host: &spear_runtime::HostSnapshot) -> i32 {
    let sandbox = Sandbox::new(sandbox_config(host, args.config.as_deref()));
    let backend = backend_report(&sandbox);
    let mut found = probe_mechanisms(&sandbox);
    if backend.chosen == Some("landlock") {
        // Under the landlock backend bubblewrap is not needed, and Landlock is.
        for m in &mut found {
            match m.name {
                "bwrap" | "user namespaces" => m.required = false,
                "landlock" => m.required = true,
                _ => {}
            }
        }
    }
    found.push(rlimits_row(&spear_sandbox::ResourceLimits::default()));
    found.push(staging_preflight(host));
    found.push(session_area());
    found.push(git_identity(host));
    if !args.no_network {
        found.push(network_preflight(host));
    }
    let ready = found.iter().all(|m| m.usable || !m.required) && backend.chosen.is_some();
    let guarantees = guarantee_rows(&sandbox);
    let (web, config_path) = web_report(args, host);
    let state =
        crate::gc::quotas(host, args.config.as_deref()).and_then(|q| crate::gc::report(host, &q));
    let limits = limits_report(host, args.config.as_deref());
    if args.json {
        let report = Report {
            ready,
            network: network_state(args, &found),
            mechanisms: found.iter().map(row).collect(),
            guarantees,
            backend,
            web,
            limits: limits.ok(),
            state_error: state.as_ref().err().cloned(),
            state: state.ok(),
        };
        match serde_json::to_string_pretty(&report) {
            Ok(text) => outln!("{text}"),
            Err(e) => eprintln!("spear: cannot encode the report: {e}"),
        }
    } else {
        for m in &found {
            let mark = match (m.usable, m.required) {
                (true, _) => "ok     ",
                (false, true) => "MISSING",
                (false, false) => "absent ",
            };
            outln!("{mark} {:<16} {}", m.name, m.detail);
            if let Some(fix) = &m.fix {
                outln!("        {:<16} fix: {fix}", "");
            }
        }
        outln!("network: {}", network_state(args, &found));
        outln!("guarantees this host can give (`[sandbox] require` may name them):");
        for g in &guarantees {
            let mark = if g.can_give { "yes" } else { "NO " };
            outln!("  {mark} {:<21} {}", g.name, g.detail);
        }
        print_backend(&backend);
        print_web(&web, config_path.as_deref());
        match &limits {
            Ok(l) => print_limits(l),
            Err(e) => outln!("the limits cannot be read: {e}"),
        }
        match &state {
            Ok(report) => crate::gc::print_report(report),
            Err(e) => outln!("spear's state cannot be reported: {e}"),
        }
        outln!(
            "{}",
            if ready {
                "spear can confine commands on this machine."
            } else {
                "spear cannot confine commands on this machine: it will refuse to run them until the MISSING mechanisms are fixed."
            }
        );
    }
    i32::from(!ready)
}

/// What networked commands get: removed by `--no-network`, the network path, or nothing.
fn network_state(args: &Args, found: &[Mechanism]) -> &'static str {
    if args.no_network {
        "off (--no-network): no mode gives a network (at most a loopback of the sandbox's own)"
    } else if found
        .iter()
        .filter(|m| m.name.starts_with("network"))
        .all(|m| m.usable)
    {
        "on where the mode grants it (AUTO; ASK after confirmation; never in SAFE)"
    } else {
        "unavailable: networked commands fail (see the network path line)"
    }
}

/// The web pair as a session would have it: the operator's `[web]` (a configuration that cannot
/// be read or used is reported here, not fatal), one fetcher built from it, `--no-network`. Also
/// the configuration file's path, for the advice.
fn web_report(
    args: &Args,
    host: &spear_runtime::HostSnapshot,
) -> (spear_tools::WebReport, Option<String>) {
    let path = args.config.clone().or_else(|| {
        let home = spear_runtime::host_home(host).ok().flatten();
        let xdg = spear_runtime::host_xdg_config_home(host).ok().flatten();
        spear_policy::OperatorConfig::default_path(xdg.as_deref(), home.as_deref())
    });
    let shown = path.as_ref().map(|p| p.display().to_string());
    let settings = match &path {
        Some(p) => spear_policy::OperatorConfig::load(p)
            .map_err(|e| e.to_string())
            .and_then(|c| {
                c.web
                    .settings()
                    .map_err(|e| format!("in {}: {e}", p.display()))
            }),
        None => Ok(spear_policy::web::WebSettings::default()),
    };
    let report = match settings {
        Ok(s) => spear_tools::WebPair::from_settings(&s).report(args.no_network),
        Err(e) => spear_tools::WebReport {
            state: "unavailable",
            detail: format!("the operator configuration cannot be used, so no session opens: {e}"),
            trusted_certificates: None,
            ports: Vec::new(),
            search: None,
            search_problem: None,
            add_search: None,
        },
    };
    (report, shown)
}

/// The web pair's lines of the text report.
fn print_web(web: &spear_tools::WebReport, config: Option<&str>) {
    outln!("web pair (fetch_url, search_internet): {}", web.state);
    outln!("  {}", web.detail);
    if let Some(n) = web.trusted_certificates {
        outln!("  trusted certificates: {n}");
    }
    if !web.ports.is_empty() {
        let ports: Vec<String> = web.ports.iter().map(ToString::to_string).collect();
        outln!("  ports besides 80 and 443: {}", ports.join(", "));
    }
    if let Some(s) = &web.search {
        let key = match (&s.key_env, s.key_set) {
            (Some(var), Some(true)) => format!(", its key in {var} (set)"),
            (Some(var), _) => format!(", its key in {var}, which is NOT SET: searches fail"),
            (None, _) => String::new(),
        };
        outln!("  search_internet: {} at {}{key}", s.backend, s.endpoint);
    }
    if let Some(problem) = &web.search_problem {
        outln!("  search_internet: not offered: {problem}");
    }
    if let Some(snippet) = web.add_search {
        outln!(
            "  search_internet: not offered, no search backend; to add one, put this in {}:",
            config.unwrap_or("~/.config/spear/config.toml")
        );
        for line in snippet.lines() {
            outln!("    {line}");
        }
    }
}

/// The rlimits commands get: spear's own, or lower where spear inherited a lower hard limit
/// (commands run all the same, under the stricter limit).
fn rlimits_row(limits: &spear_sandbox::ResourceLimits) -> Mechanism {
    let lowered = limits.lowered();
    let detail = if lowered.is_empty() {
        "spear's per-process limits (open files, file size, data, no core files) can be set"
            .to_owned()
    } else {
        format!(
            "lowered to the hard limits spear inherited, so commands run under these instead: {}",
            lowered
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    Mechanism {
        name: "rlimits",
        usable: true,
        required: true,
        detail,
        fix: (!lowered.is_empty()).then(|| {
            "raise the hard limit in the shell that starts spear (`ulimit -H`) if commands need more"
                .to_owned()
        }),
    }
}

/// The staging of writable commands, for real: a writable `/bin/true` in a scratch workspace,
/// its root seen through an overlay whose upper layer is in spear's staging directory.
fn staging_preflight(host: &spear_runtime::HostSnapshot) -> Mechanism {
    let outcome = tempfile::tempdir()
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            let mut wc = WorkspaceConfig::new(dir.path());
            wc.single_root = true;
            let ws = Arc::new(Workspace::open(&wc).map_err(|e| e.to_string())?);
            let config = RunnerConfig::from_snapshot(host);
            let copies = spear_runtime::Staging::create(&config.staging, &ws)
                .map_err(|e| e.to_string())?
                .copies();
            let runner = CommandRunner::new(ws, config);
            let profile = spear_core::ExecutionProfile::from_granted(
                spear_core::CapabilitySet::of(&[
                    spear_core::Capability::FilesystemRead,
                    spear_core::Capability::WorkspaceWrite,
                ]),
                Vec::new(),
            );
            runner
                .ensure_sandbox(&profile)
                .map(|()| copies)
                .map_err(|e| e.to_string())
        });
    let (usable, detail, fix) = match outcome {
        Ok(copies) => (
            true,
            format!(
                "a writable /bin/true ran on an overlay of its workspace; commits {}",
                if copies {
                    "copy files (the staging directory is on another filesystem than this one)"
                } else {
                    "rename files into place"
                }
            ),
            None,
        ),
        Err(e) => (
            false,
            e,
            Some("writable commands are refused until overlayfs can stage them: set XDG_STATE_HOME to a directory on ext4, xfs or btrfs".to_owned()),
        ),
    };
    Mechanism {
        name: "staged writes",
        usable,
        required: false,
        detail,
        fix,
    }
}

/// Where `spear mcp` keeps a session's `/tmp`, `/var/tmp` and home, for real: an area made and
/// removed again, and how its cap is kept.
fn session_area() -> Mechanism {
    let cap = spear_runtime::DEFAULT_SESSION_CAP;
    let made = spear_runtime::scratch_base()
        .ok_or_else(|| "spear's per-user directory cannot be made private".to_owned())
        .and_then(|base| {
            spear_runtime::SessionScratch::create(&base, cap)
                .map(|s| s.area().parent().map(|p| p.display().to_string()))
                .map_err(|e| e.to_string())
        });
    let (usable, detail, fix) = match made {
        Ok(base) => (
            true,
            format!(
                "kept between the calls of an MCP session under {} (private, 0700); measured after each call and emptied over {} MiB; removed when the session ends",
                base.unwrap_or_default(),
                cap >> 20
            ),
            None,
        ),
        Err(e) => (
            false,
            format!("{e}; every command gets fresh /tmp and home"),
            Some("set XDG_RUNTIME_DIR to a directory of your own (mode 0700)".to_owned()),
        ),
    };
    Mechanism {
        name: "session /tmp",
        usable,
        required: false,
        detail,
        fix,
    }
}

/// The git identity commits in the sandbox carry: the host's `user.name` and `user.email`.
fn git_identity(host: &spear_runtime::HostSnapshot) -> Mechanism {
    let config = RunnerConfig::from_snapshot(host);
    let id = &config.git_identity;
    let usable = id.name.is_some() && id.email.is_some();
    let detail = match (&id.name, &id.email) {
        (Some(n), Some(e)) => format!("commits in the sandbox are by {n} <{e}> (nothing else of the host's git configuration is given)"),
        _ => "the host's git configuration has no user.name or user.email: `git commit` in the sandbox fails unless the repository sets them".to_owned(),
    };
    Mechanism {
        name: "git identity",
        usable,
        required: false,
        detail,
        fix: (!usable).then(|| {
            "git config --global user.name 'Your Name' && git config --global user.email you@example.com".to_owned()
        }),
    }
}

/// The network preflight, for real: a networked `/bin/true` in a scratch workspace.
fn network_preflight(host: &spear_runtime::HostSnapshot) -> Mechanism {
    let outcome = tempfile::tempdir()
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            let mut wc = WorkspaceConfig::new(dir.path());
            wc.single_root = true;
            let ws = Workspace::open(&wc).map_err(|e| e.to_string())?;
            let runner = CommandRunner::new(Arc::new(ws), RunnerConfig::from_snapshot(host));
            runner.ensure_network().map_err(|e| e.to_string())
        });
    let (usable, detail, fix) = match outcome {
        Ok(()) => (
            true,
            "a networked /bin/true got its network attached, its egress policy loaded and its teardown confirmed".to_owned(),
            None,
        ),
        Err(e) => (false, e, Some("see the network path line".to_owned())),
    };
    Mechanism {
        name: "network preflight",
        usable,
        required: false,
        detail,
        fix,
    }
}

fn row(m: &Mechanism) -> Row<'_> {
    Row {
        name: m.name,
        usable: m.usable,
        required: m.required,
        detail: &m.detail,
        fix: m.fix.as_deref(),
    }
}
