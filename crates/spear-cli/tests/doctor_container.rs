//! `spear doctor` in a container: each condition a container runtime imposes is made here, in a
//! namespace the test makes around one `spear doctor --json`, and the doctor must name it and the
//! setting that fixes it:
//! - a seccomp filter refusing the namespace system calls (a runtime's default profile);
//! - a masked `/proc` (a file under it covered, as runc covers `/proc/kcore` and `/proc/keys`);
//! - no `/dev/net/tun` (the device not given to the container).
//!
//! Each has its positive control: the same doctor, without the condition, finds the mechanism
//! usable. Run as root and as a user (then inside a user namespace of its own, as a rootless
//! container is).

#![allow(clippy::unwrap_used, unsafe_code)]

mod support;

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::{Dirs, SpearCommands as _};

/// The row named `name` of a doctor's JSON report.
fn row(out: &Output, name: &str) -> Value {
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    report["mechanisms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} row: {report}"))
        .clone()
}

/// `spear doctor --json` run by `sh -c SETUP; exec spear doctor --json` in a mount namespace of
/// its own (and, for a user, a user namespace mapping it to root, as a rootless container).
fn doctor_in_namespace(d: &Dirs, setup: &str) -> Output {
    let doctor = d.spear(&["doctor", "--json"]);
    let program = doctor.get_program().to_owned();
    let mut unshare = Command::new("unshare");
    if !rustix::process::geteuid().is_root() {
        unshare.args(["--user", "--map-root-user"]);
    }
    unshare
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!("{setup} && exec \"$0\" doctor --json"))
        .arg(program)
        .envs(doctor.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .stdin(Stdio::null());
    if let Some(dir) = doctor.get_current_dir() {
        unshare.current_dir(dir);
    }
    unshare.output().unwrap()
}

#[test]
fn a_seccomp_filter_refusing_namespaces_is_named_with_the_profile_that_fixes_it() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    let [eperm, enosys] = support::no_namespaces();
    let mut doctor = d.spear(&["doctor", "--json"]);
    doctor.stdin(Stdio::null());
    // SAFETY: between fork and exec, only seccomp with programs built before the fork.
    unsafe {
        doctor.pre_exec(move || {
            seccompiler::apply_filter(&eperm).map_err(std::io::Error::other)?;
            seccompiler::apply_filter(&enosys).map_err(std::io::Error::other)?;
            Ok(())
        });
    }
    let out = doctor.output().unwrap();
    let userns = row(&out, "user namespaces");
    assert_eq!(userns["usable"], false, "{userns}");
    let detail = userns["detail"].as_str().unwrap();
    let fix = userns["fix"].as_str().unwrap();
    assert!(detail.contains("seccomp filter"), "{detail}");
    assert!(
        fix.contains("seccompProfile") && fix.contains("seccomp=unconfined"),
        "{fix}"
    );

    // The positive control: without the filter, user namespaces work here.
    let out = d
        .spear(&["doctor", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(row(&out, "user namespaces")["usable"], true);
}

#[test]
fn a_masked_proc_is_named_with_the_setting_that_unmasks_it() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    // A file runc masks with /dev/null, whichever this kernel has.
    let masked = [
        "/proc/kcore",
        "/proc/keys",
        "/proc/timer_list",
        "/proc/sched_debug",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .unwrap();
    let out = doctor_in_namespace(&d, &format!("mount --bind /dev/null {masked}"));
    let userns = row(&out, "user namespaces");
    assert_eq!(userns["usable"], false, "{userns}");
    let detail = userns["detail"].as_str().unwrap();
    let fix = userns["fix"].as_str().unwrap();
    assert!(
        detail.contains("/proc is masked") && detail.contains(masked),
        "{detail}"
    );
    assert!(fix.contains("procMount: Unmasked"), "{fix}");

    // The positive control: the same namespace without the mask.
    let out = doctor_in_namespace(&d, "true");
    assert_eq!(
        row(&out, "user namespaces")["usable"],
        true,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_container_without_the_tun_device_is_told_how_to_give_it() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    let out = doctor_in_namespace(&d, "mount -t tmpfs none /dev/net");
    let network = row(&out, "network path");
    assert_eq!(network["usable"], false, "{network}");
    let detail = network["detail"].as_str().unwrap();
    let fix = network["fix"].as_str().unwrap();
    assert!(detail.contains("/dev/net/tun is missing"), "{detail}");
    assert!(
        fix.contains("--device /dev/net/tun") && fix.contains("CharDevice"),
        "{fix}"
    );

    // The positive control: the device is there.
    let out = doctor_in_namespace(&d, "true");
    let network = row(&out, "network path");
    assert!(
        !network["detail"]
            .as_str()
            .unwrap()
            .contains("/dev/net/tun is missing"),
        "{network}"
    );
}
