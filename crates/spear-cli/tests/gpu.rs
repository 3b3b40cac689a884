//! `spear exec --gpu`: a GPU is the operator's grant, bound exactly; on a host without one the
//! grant is a refusal at start that names what is missing and runs nothing.
//!
//! Each test holds on every host: where the host has an NVIDIA GPU it shows the GPU given and
//! withheld, and where it has none it shows the refusal (this project's machines have none; the
//! device host has one).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::{Output, Stdio};

use support::{Dirs, SpearCommands as _};

fn spear(args: &[&str], d: &Dirs) -> Output {
    d.spear(args)
        .stdin(Stdio::null())
        .output()
        .expect("spear runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn host_has_nvidia() -> bool {
    Path::new("/dev/nvidiactl").exists() && Path::new("/dev/nvidia0").exists()
}

#[test]
fn a_gpu_is_given_only_by_the_grant() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let list = "ls /dev; echo ran > ran.txt";
    // Positive control: the same command without the grant runs, and sees no GPU.
    let plain = spear(&["exec", "--auto", "-c", list], &d);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert!(
        !text(&plain.stdout).contains("nvidia"),
        "{}",
        text(&plain.stdout)
    );
    assert!(d.ws.join("ran.txt").exists());
    std::fs::remove_file(d.ws.join("ran.txt")).unwrap();

    let granted = spear(&["exec", "--auto", "--gpu", "all", "-c", list], &d);
    if host_has_nvidia() {
        assert_eq!(granted.status.code(), Some(0), "{}", text(&granted.stderr));
        let seen = text(&granted.stdout);
        assert!(
            seen.contains("nvidia0") && seen.contains("nvidiactl"),
            "{seen}"
        );
        assert!(!seen.contains("sda") && !seen.contains("nvme"), "{seen}");
    } else {
        // Refused at start: exit 2, the reason names what is missing, and nothing ran.
        assert_eq!(granted.status.code(), Some(2), "{}", text(&granted.stderr));
        let why = text(&granted.stderr);
        assert!(
            why.contains("--gpu all: no GPU to give the sandbox"),
            "{why}"
        );
        assert!(why.contains("/dev/nvidia0"), "{why}");
        assert!(!d.ws.join("ran.txt").exists(), "the command ran");
        assert!(granted.stdout.is_empty());
    }
}

/// `spear mcp --gpu`: the same grant for every sandbox of the session; on a host without a GPU
/// the server refuses to start, before a single protocol message.
#[test]
fn an_mcp_server_is_refused_a_gpu_the_host_lacks() {
    let d = Dirs::with(&[]);
    let out = d
        .spear_mcp(&["--auto", "--gpu", "all"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // The banner is the session opened (the grant resolved); no client follows, so the server
    // then ends at its stdin's end either way.
    let opened = |o: &Output| text(&o.stderr).contains("spear mcp: AUTO mode");
    if host_has_nvidia() {
        assert!(opened(&out), "{}", text(&out.stderr));
    } else {
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("spear: --gpu all: no GPU to give the sandbox"),
            "{}",
            text(&out.stderr)
        );
        assert!(!opened(&out), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    }
    // Positive control: without the grant the session opens (and the banner says so).
    let plain = d
        .spear_mcp(&["--auto"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(opened(&plain), "{}", text(&plain.stderr));
}

#[test]
fn a_selection_that_is_not_one_is_a_usage_error() {
    let d = Dirs::with(&[]);
    let out = spear(&["exec", "--gpu", "first", "--", "true"], &d);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--gpu first: `first` is not `all` or a list of GPU indices"),
        "{}",
        text(&out.stderr)
    );
    // A GPU the host does not have, by index.
    let out = spear(&["exec", "--gpu", "7", "--", "true"], &d);
    assert_eq!(out.status.code(), Some(2));
    if host_has_nvidia() {
        assert!(
            text(&out.stderr).contains("there is no GPU 7"),
            "{}",
            text(&out.stderr)
        );
    } else {
        assert!(
            text(&out.stderr).contains("no GPU to give the sandbox"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// `[sandbox] gpu` grants what `--gpu` does, for every session; the result and the audit record
/// say a GPU was in the sandbox, and a run without one says nothing of a GPU.
#[test]
fn the_operators_gpu_setting_is_the_grant_and_is_reported() {
    let d = Dirs::with(&[("README.md", "readme\n")]);
    let cfg = support::config("[sandbox]\ngpu = \"all\"\n");
    let script = "ls /dev; echo ran > ran.txt";
    let json = |o: &Output| -> serde_json::Value {
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {} {}", text(&o.stdout), text(&o.stderr)))
    };
    // Positive control: without it the command runs, and its result names no GPU.
    let plain = spear(&["exec", "--auto", "--json", "-c", script], &d);
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    let v = json(&plain);
    assert!(v["guarantees"]["enforced"].is_array(), "{v}");
    assert_eq!(v["guarantees"].get("gpu"), None, "{v}");
    std::fs::remove_file(d.ws.join("ran.txt")).unwrap();

    let granted = spear(
        &[
            "exec", "--config", &cfg.path, "--auto", "--json", "-c", script,
        ],
        &d,
    );
    if host_has_nvidia() {
        assert_eq!(granted.status.code(), Some(0), "{}", text(&granted.stderr));
        let v = json(&granted);
        assert_eq!(v["guarantees"]["gpu"], true, "{v}");
        assert!(
            v["stdout"].as_str().unwrap_or("").contains("nvidiactl"),
            "{v}"
        );
        // The audit record names the GPU among the capabilities of the command.
        let audit = spear(&["audit", "--tail", "1"], &d);
        let last = text(&audit.stdout);
        assert!(last.contains("\"gpu\""), "{last}");
    } else {
        assert_eq!(granted.status.code(), Some(2), "{}", text(&granted.stderr));
        let why = text(&granted.stderr);
        assert!(
            why.contains("[sandbox] gpu = all: no GPU to give the sandbox"),
            "{why}"
        );
        assert!(!d.ws.join("ran.txt").exists(), "the command ran");
        assert!(granted.stdout.is_empty());
    }
    // The flag wins over the setting: a selection that is not one is refused as the flag's.
    let flag = spear(
        &[
            "exec", "--config", &cfg.path, "--gpu", "first", "--", "true",
        ],
        &d,
    );
    assert_eq!(flag.status.code(), Some(2));
    assert!(
        text(&flag.stderr).contains("--gpu first:"),
        "{}",
        text(&flag.stderr)
    );
}
