//! Programs no mode runs: they change the host (kernel, devices, services, users, packages), mount
//! or enter namespaces, or need capabilities no mode grants (containers, cloud credentials).

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{OptionSpec, scan, values};
use crate::commands::{Call, Naming, Programs};
use crate::shell::word::Arg;

/// The host-changing programs. Their options are judged by what they change, and most of them are
/// refused whatever the options.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::harmless(
        &[
            "mount",
            "umount",
            "unshare",
            "nsenter",
            "chroot",
            "pivot_root",
            "switch_root",
            "bwrap",
            "firejail",
            "systemd-nspawn",
            "losetup",
            "fusermount",
            "fusermount3",
            "newuidmap",
            "newgidmap",
            "lxc-attach",
            "lxc-execute",
        ],
        mount_or_namespace,
    ),
    Programs::harmless(
        &[
            "insmod",
            "rmmod",
            "modprobe",
            "depmod",
            "kexec",
            "mkswap",
            "swapon",
            "swapoff",
            "fdisk",
            "sfdisk",
            "cfdisk",
            "gdisk",
            "sgdisk",
            "parted",
            "partprobe",
            "wipefs",
            "hdparm",
            "sdparm",
            "blkdiscard",
            "cryptsetup",
            "dmsetup",
            "mdadm",
            "pvcreate",
            "vgcreate",
            "lvcreate",
            "lvremove",
            "vgremove",
            "pvremove",
            "lvextend",
            "shutdown",
            "reboot",
            "poweroff",
            "halt",
            "init",
            "telinit",
            "setcap",
            "chcpu",
            "rtcwake",
            "efibootmgr",
            "grub-install",
            "update-grub",
            "update-initramfs",
            "dracut",
            "mknod",
            "iptables",
            "ip6tables",
            "nft",
            "ebtables",
            "tc",
            "brctl",
            "iw",
            "iwconfig",
            "nmcli",
            "ethtool",
        ],
        kernel_or_device,
    ),
    Programs::harmless(&["mkfs", "mke2fs", "fsck."], kernel_or_device).named(Naming::Prefix),
    Programs::harmless(&["sysctl"], |a, c, _| sysctl(a, c.args)),
    Programs::harmless(&["sensors"], sensors),
    Programs::harmless(&["dmesg"], dmesg),
    Programs::harmless(&["ip"], ip),
    Programs::harmless(&["ifconfig", "route", "arp"], network_config),
    Programs::harmless(&["hostname"], hostname),
    Programs::harmless(&["date"], date),
    Programs::harmless(
        &["hwclock", "timedatectl", "hostnamectl", "localectl"],
        clock_and_locale,
    ),
    Programs::harmless(
        &[
            "systemctl",
            "service",
            "loginctl",
            "journalctl",
            "crontab",
            "at",
            "batch",
            "atrm",
            "useradd",
            "userdel",
            "usermod",
            "groupadd",
            "groupdel",
            "groupmod",
            "adduser",
            "deluser",
            "addgroup",
            "delgroup",
            "passwd",
            "chpasswd",
            "chage",
            "chsh",
            "chfn",
            "visudo",
            "vipw",
            "vigr",
            "update-alternatives",
            "ldconfig",
            "launchctl",
            "rc-service",
            "rc-update",
            "sv",
            "initctl",
        ],
        services,
    ),
    Programs::harmless(
        &[
            "apt",
            "apt-get",
            "aptitude",
            "dpkg",
            "dnf",
            "yum",
            "rpm",
            "zypper",
            "pacman",
            "apk",
            "snap",
            "flatpak",
            "brew",
            "port",
            "emerge",
            "nix-env",
            "pkg",
            "xbps-install",
            "yay",
            "paru",
            "dpkg-reconfigure",
            "apt-mark",
            "gem",
        ],
        packages,
    ),
    Programs::harmless(
        &[
            "docker",
            "podman",
            "nerdctl",
            "buildah",
            "crictl",
            "ctr",
            "kubectl",
            "k3s",
            "kind",
            "minikube",
            "helm",
            "docker-compose",
            "podman-compose",
            "lxc",
            "lxd",
            "incus",
            "virsh",
            "vagrant",
            "skopeo",
            "k9s",
            "kubectx",
            "kubens",
            "oc",
        ],
        containers,
    ),
    Programs::harmless(
        &[
            "gpg",
            "gpg2",
            "pass",
            "gopass",
            "keyctl",
            "secret-tool",
            "security",
            "op",
            "bw",
            "lpass",
            "vault",
            "aws",
            "gcloud",
            "gsutil",
            "az",
            "doctl",
            "heroku",
            "gh",
            "glab",
            "hub",
            "netlify",
            "vercel",
            "fly",
            "flyctl",
            "firebase",
            "wrangler",
            "terraform",
            "tofu",
            "pulumi",
            "sops",
            "kubeseal",
            "twine",
            "age-keygen",
        ],
        secrets,
    ),
];

/// The first argument, or nothing.
fn first_word(args: &[Arg]) -> &str {
    args.first().and_then(Arg::lit).unwrap_or("")
}

/// Whether any argument is one of `set`.
fn any_word(args: &[Arg], set: &[&str]) -> bool {
    args.iter()
        .any(|x| x.lit().is_some_and(|t| set.contains(&t)))
}

/// Mounting or entering namespaces: refused (`mount` alone only lists).
fn mount_or_namespace(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    if !(matches!(name, "mount") && args.is_empty()) {
        a.refuse(Refusal::mount_or_namespace(name));
    }
}

/// Kernel modules, disks, boot, firewall and devices: refused.
fn kernel_or_device(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    a.refuse(Refusal::kernel_or_device(name));
}

/// sensors reads the hardware monitors; setting their limits is refused.
fn sensors(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let args = c.args;
    // `sensors -s` writes the limits of its configuration into the hardware monitors.
    let setting = args.iter().any(|x| {
        x.lit().is_some_and(|t| {
            t == "--set" || (t.starts_with('-') && !t.starts_with("--") && t.contains('s'))
        })
    });
    if setting {
        a.refuse(Refusal::kernel_or_device(
            "sensors -s (setting the hardware monitors' limits)",
        ));
    }
}

/// dmesg reads the kernel log; clearing it or changing the console level is refused.
fn dmesg(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let args = c.args;
    let any = |set: &[&str]| any_word(args, set);
    if any(&[
        "-c",
        "-C",
        "--clear",
        "--read-clear",
        "-n",
        "--console-level",
        "-D",
        "--console-off",
        "-E",
        "--console-on",
    ]) {
        a.refuse(Refusal::kernel_or_device("dmesg (changing the kernel log)"));
    }
}

/// ip: showing is harmless; changing links, addresses, routes or namespaces is refused.
fn ip(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let args = c.args;
    let first = first_word(args);
    let changing = args.iter().any(|x| {
        matches!(
            x.lit(),
            Some(
                "add"
                    | "del"
                    | "delete"
                    | "change"
                    | "replace"
                    | "set"
                    | "flush"
                    | "append"
                    | "prepend"
                    | "exec"
                    | "up"
                    | "down"
                    | "restore"
                    | "deleteall"
                    | "update"
            )
        )
    });
    if changing || first == "netns" && args.len() > 1 {
        a.refuse(Refusal::kernel_or_device(
            "ip (changing network configuration)",
        ));
    }
    // `ip -batch FILE` (`-b`, `-ba`...) runs the ip commands of a file, which may change it.
    let batch = args.iter().any(|x| {
        x.lit().is_some_and(|t| {
            let o = t.trim_start_matches('-');
            t.starts_with('-') && !o.is_empty() && "batch".starts_with(o)
        })
    });
    if batch {
        a.complex("`ip -batch` runs the ip commands of a file, which spear does not read");
    }
}

/// ifconfig, route, arp: with more than one argument they change the network.
fn network_config(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    if args.len() > 1 {
        a.refuse(Refusal::kernel_or_device(format!(
            "{name} (changing network configuration)"
        )));
    }
}

/// hostname: printing is harmless; setting the host name is refused.
fn hostname(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let args = c.args;
    let any = |set: &[&str]| any_word(args, set);
    let setting = args.iter().any(|x| !x.display().starts_with('-'))
        || any(&["-F", "--file", "-b", "--boot"]);
    if setting {
        a.refuse(Refusal::kernel_or_device(
            "hostname (setting the host name)",
        ));
    }
}

/// date: printing is harmless; setting the clock is refused.
fn date(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let any = |set: &[&str]| any_word(args, set);
    let setting = any(&["-s", "--set"])
        || args.iter().any(|x| x.display().starts_with("--set="))
        || args.iter().any(|x| {
            x.lit().is_some_and(|t| {
                !t.starts_with(['+', '-']) && t.chars().all(|c| c.is_ascii_digit() || c == '.')
            })
        });
    if setting {
        a.refuse(Refusal::kernel_or_device("date (setting the clock)"));
    }
    // `-f FILE` prints a date for each line of FILE (quoting the lines it cannot read);
    // `-r FILE` reads its modification time.
    let items = scan(
        args,
        &OptionSpec::gnu("dfrs", &["date", "file", "reference", "set"], &[]),
    );
    for f in values(&items, &["-f", "--file", "-r", "--reference"]) {
        if f.lit() != Some("-") {
            a.read_path(f, cwd);
        }
    }
}

/// hwclock, timedatectl, hostnamectl, localectl: reading is harmless; changing is refused.
fn clock_and_locale(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let first = first_word(args);
    let reading = args.is_empty()
        || matches!(
            first,
            "status"
                | "show"
                | "list-timezones"
                | "list-locales"
                | "-r"
                | "--show"
                | "--get"
                | "timesync-status"
        );
    if !reading {
        a.refuse(Refusal::kernel_or_device(name));
    }
}

/// Services, users, logins and schedules: reading is harmless; changing is refused.
fn services(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let first = first_word(args);
    let any = |set: &[&str]| any_word(args, set);
    let reading = match name {
        "systemctl" => args
            .iter()
            .filter_map(Arg::lit)
            .find(|t| !t.starts_with('-'))
            .is_none_or(|verb| {
                matches!(
                    verb,
                    "status"
                        | "show"
                        | "cat"
                        | "is-active"
                        | "is-enabled"
                        | "is-failed"
                        | "is-system-running"
                        | "get-default"
                        | "help"
                ) || verb.starts_with("list-")
            }),
        "journalctl" => {
            !any(&[
                "--vacuum-size",
                "--vacuum-time",
                "--vacuum-files",
                "--rotate",
                "--flush",
                "--sync",
                "--relinquish-var",
                "--smart-relinquish-var",
                "--setup-keys",
                "--update-catalog",
            ]) && !args.iter().any(|x| x.display().starts_with("--vacuum"))
        }
        "crontab" => any(&["-l"]),
        "loginctl" => {
            args.is_empty()
                || first.starts_with("list-")
                || matches!(
                    first,
                    "show-session" | "show-user" | "session-status" | "user-status"
                )
        }
        "service" => any(&["--status-all"]) || args.get(1).and_then(Arg::lit) == Some("status"),
        "update-alternatives" => any(&["--display", "--query", "--list", "--get-selections"]),
        _ => false,
    };
    if !reading {
        a.refuse(Refusal::kernel_or_device(format!(
            "{name} (changing the host's services, users or schedules)"
        )));
    }
    if name == "journalctl" {
        // `--cursor-file=FILE` starts after the cursor in FILE and writes the last one back.
        let items = scan(
            args,
            &OptionSpec::gnu(
                "DcuSUnpoMbt",
                &["cursor-file", "file", "directory", "root", "image"],
                &[],
            ),
        );
        for f in values(&items, &["--cursor-file"]) {
            a.write_path(f, cwd, "journalctl --cursor-file");
        }
        for f in values(
            &items,
            &["--file", "-D", "--directory", "--root", "--image"],
        ) {
            a.read_path(f, cwd);
        }
    }
}

/// System package managers: queries are harmless; installing or removing is refused.
fn packages(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let first = first_word(args);
    let any = |set: &[&str]| any_word(args, set);
    let reading = match name {
        "apt" | "apt-get" => matches!(
            first,
            "list"
                | "show"
                | "search"
                | "policy"
                | "depends"
                | "rdepends"
                | "changelog"
                | "moo"
                | "-v"
                | "--version"
                | "help"
        ),
        "dpkg" => any(&[
            "-l",
            "-L",
            "-s",
            "-S",
            "-p",
            "--list",
            "--listfiles",
            "--status",
            "--search",
            "--print-architecture",
            "--version",
            "-c",
            "--contents",
            "-I",
            "--info",
            "--get-selections",
        ]),
        "rpm" => first.starts_with("-q") || any(&["--query", "--version"]),
        // `-Q...` queries the local database; `-S` only with search and information
        // letters (`-Ssy` would refresh the databases, `-Sc` clean the cache).
        "pacman" => {
            first.starts_with("-Q")
                || first.strip_prefix("-S").is_some_and(|rest| {
                    !rest.is_empty()
                        && rest
                            .chars()
                            .all(|c| matches!(c, 's' | 'i' | 'l' | 'g' | 'q' | 'v'))
                })
        }
        "apk" => matches!(first, "info" | "search" | "list" | "policy" | "--version"),
        "snap" | "flatpak" | "brew" | "dnf" | "yum" | "zypper" | "gem" => matches!(
            first,
            "list"
                | "info"
                | "search"
                | "show"
                | "--version"
                | "version"
                | "outdated"
                | "config"
                | "leaves"
                | "deps"
                | "env"
                | "contents"
                | "which"
        ),
        _ => false,
    };
    if !reading {
        a.refuse(Refusal::system_packages(
            format!("{name} {first}").trim_end().to_owned(),
        ));
    }
    if name == "rpm" {
        // Macros run shell commands (`%(cmd)`), and a query can pipe its output to one.
        let runs = args.iter().any(|x| {
            let t = x.display();
            [
                "--pipe", "-E", "--eval", "-D", "--define", "--macros", "--rcfile", "--load",
            ]
            .iter()
            .any(|o| t == *o || t.starts_with(&format!("{o}=")))
                || t.contains("%(")
        });
        if runs {
            a.complex("`rpm --pipe`, `--eval` and macros run shell commands");
        }
    }
    if matches!(name, "apt" | "apt-get") && first == "changelog" {
        a.needs(Capability::Network);
    }
}

/// Container and VM runtimes need a capability no mode grants.
fn containers(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    a.needs(Capability::ContainerRuntime);
    a.refuse(Refusal::no_mode_grants(Capability::ContainerRuntime, name));
}

/// Secret stores and cloud or forge clients need credentials no mode grants.
fn secrets(a: &mut Analysis<'_>, c: &Call<'_>, _cwd: &mut Cwd) {
    let name = c.name;
    a.needs(Capability::Secrets);
    a.refuse(Refusal::no_mode_grants(Capability::Secrets, name));
}

/// sysctl: reading parameters is harmless; `-w`/`--write`, `-p`/`-f`/`--load` (settings from a
/// file), `--system` (from every system directory) and any `NAME=VALUE` write the host kernel's
/// parameters, which no mode allows (`--dry-run` only prints). Short options bundle (`-qw`,
/// `-pFILE`) and long ones may be abbreviated (`--wr`), so a prefix of a writing option writes.
fn sysctl(a: &mut Analysis<'_>, args: &[Arg]) {
    const WRITING: &[&str] = &["write", "load", "system"];
    let mut writing: Option<String> = None;
    let mut dry_run = false;
    let mut options_done = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let Some(t) = arg.lit() else {
            if arg.display().contains('=') {
                writing.get_or_insert_with(|| arg.display().to_owned());
            } else {
                a.complex(format!(
                    "`sysctl {}` is known only at run time and could write a kernel parameter",
                    arg.display()
                ));
            }
            continue;
        };
        if options_done || !t.starts_with('-') || t == "-" {
            if t.contains('=') {
                writing.get_or_insert_with(|| t.to_owned());
            }
            continue;
        }
        if t == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            if WRITING.iter().any(|w| w.starts_with(name)) {
                writing.get_or_insert_with(|| t.to_owned());
            } else if name.len() >= 2 && "dry-run".starts_with(name) {
                dry_run = true;
            } else if name.len() >= 2 && "pattern".starts_with(name) && !long.contains('=') {
                i += 1;
            }
            continue;
        }
        for (pos, c) in t[1..].char_indices() {
            match c {
                'w' | 'p' | 'f' => {
                    writing.get_or_insert_with(|| t.to_owned());
                    break;
                }
                // `-r PATTERN`: the rest of the word, or the next one, is the pattern.
                'r' => {
                    if t[1 + pos + 1..].is_empty() {
                        i += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if let (Some(what), false) = (writing, dry_run) {
        a.refuse(Refusal::kernel_or_device(format!(
            "sysctl {what} (writing the host kernel's parameters)"
        )));
    }
}

#[cfg(test)]
mod tests {
    use spear_core::{CommandClass, RefusalRule};

    use crate::tests_support::fixture;

    #[test]
    fn sysctl_writes_say_why_and_what_to_do_instead() {
        let fx = fixture();
        for script in [
            "sysctl -w vm.swappiness=10",
            "sysctl -p",
            "sysctl -f x.conf",
            "sysctl -qw a=1",
            "sysctl --sys",
            "sysctl a.b=1",
        ] {
            let a = fx.policy.classify_script(script, &fx.ws);
            assert_eq!(a.class, CommandClass::Dangerous, "{script}");
            let refusal = a.refusal.expect("a refusal");
            assert_eq!(refusal.rule(), RefusalRule::KernelOrDevice, "{script}");
            let message = refusal.message();
            assert!(
                message.contains("writing the host kernel's parameters"),
                "{message}"
            );
            assert!(message.contains("ask the user"), "{message}");
            assert!(message.contains("`sysctl NAME`"), "{message}");
        }
        for script in ["sysctl -a", "sysctl -n kernel.ostype", "sysctl -N -a"] {
            let a = fx.policy.classify_script(script, &fx.ws);
            assert_eq!(a.class, CommandClass::ReadOnly, "{script}");
        }
    }
}
