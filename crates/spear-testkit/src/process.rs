//! The processes of this machine, as `/proc` shows them: who this test runs as, which processes
//! are alive (for "nothing outlives its call" checks, each with a positive control that sees a
//! live one), a process's descendants, and its resident memory.

/// Whether this test runs as root (its effective user id is 0): some checks hold only for an
/// unprivileged user (a file root may write anyway), others need root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Every live process, as its pid (the name of its `/proc` entry) and its command line with the
/// arguments joined by spaces. A process that ends while it is read is left out.
fn live() -> impl Iterator<Item = (String, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            Some((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
}

/// The command line of every live process, its arguments joined by spaces (so a command line
/// ends with a space).
pub fn command_lines() -> Vec<String> {
    live().map(|(_, line)| line).collect()
}

/// Live processes whose command line (arguments joined by spaces) contains `marker`, each as
/// `PID: COMMAND LINE`: empty when none is.
pub fn processes_with(marker: &str) -> Vec<String> {
    live()
        .filter(|(_, line)| line.contains(marker))
        .map(|(pid, line)| format!("{pid}: {line}"))
        .collect()
}

/// The processes under `pid`, all the way down (children of every thread), as `/proc` shows
/// them now; empty when `pid` has none or is gone.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// The resident memory of process `pid` now (`VmRSS`), in KiB. Panics when it cannot be read.
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS")
}

/// The peak resident memory of process `pid` so far (`VmHWM`), in KiB. Panics when it cannot be
/// read.
pub fn peak_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM")
}

/// The line `FIELD:` of `/proc/PID/status`, a size in kB.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}
