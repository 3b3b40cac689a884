//! Whether bubblewrap can make its namespaces on this host: one real `bwrap --unshare-all ...
//! /bin/true`, for `spear doctor` and for `[sandbox] backend = "auto"`.

use std::fs;
use std::path::Path;
use std::process::Command;

/// Tries a real user namespace through bwrap, and reads the sysctls that commonly forbid it.
pub(crate) fn probe(bwrap: &Path) -> Result<String, (String, String)> {
    let read = |p: &str| fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    let max = read("/proc/sys/user/max_user_namespaces");
    let out = Command::new(bwrap)
        .args([
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--ro-bind",
            "/",
            "/",
            "--",
            "/bin/true",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => Ok(format!(
            "a user namespace can be created (user.max_user_namespaces = {})",
            max.as_deref().unwrap_or("?")
        )),
        Ok(o) => {
            let msg = String::from_utf8_lossy(&o.stderr).trim().to_owned();
            let mut fix = String::from(
                "allow unprivileged user namespaces: sysctl -w user.max_user_namespaces=15000",
            );
            if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
                fix.push_str("; sysctl -w kernel.unprivileged_userns_clone=1");
            }
            if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
                == Some("1")
            {
                fix.push_str("; add an AppArmor profile for bwrap (Ubuntu 24.04+) or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0");
            }
            Err((
                format!("bwrap could not create a user namespace: {msg}"),
                fix,
            ))
        }
        Err(e) => Err((
            format!("bwrap could not be run: {e}"),
            "install bubblewrap".to_owned(),
        )),
    }
}
