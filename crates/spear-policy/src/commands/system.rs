//! Programs no mode runs: they change the host (kernel, devices, services, users, packages), mount
//! or enter namespaces, or need capabilities no mode grants (containers, cloud credentials).

use spear_core::{Capability, Refusal};

use crate::analysis::Analysis;
use crate::shell::word::Arg;

/// Handles `name` if it is one of the host-changing programs. Returns false otherwise.
pub(crate) fn analyse(a: &mut Analysis<'_>, name: &str, args: &[Arg]) -> bool {
    let first = args.first().and_then(Arg::lit).unwrap_or("");
    let any = |set: &[&str]| {
        args.iter()
            .any(|x| x.lit().is_some_and(|t| set.contains(&t)))
    };
    match name {
        "mount" | "umount" | "unshare" | "nsenter" | "chroot" | "pivot_root" | "switch_root"
        | "bwrap" | "firejail" | "systemd-nspawn" | "losetup" | "fusermount" | "fusermount3"
        | "newuidmap" | "newgidmap" | "lxc-attach" | "lxc-execute" => {
            if !(matches!(name, "mount") && args.is_empty()) {
                a.refuse(Refusal::mount_or_namespace(name));
            }
        }
        "insmod" | "rmmod" | "modprobe" | "depmod" | "kexec" | "mkswap" | "swapon" | "swapoff"
        | "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" | "partprobe"
        | "wipefs" | "hdparm" | "sdparm" | "blkdiscard" | "cryptsetup" | "dmsetup" | "mdadm"
        | "pvcreate" | "vgcreate" | "lvcreate" | "lvremove" | "vgremove" | "pvremove"
        | "lvextend" | "shutdown" | "reboot" | "poweroff" | "halt" | "init" | "telinit"
        | "setcap" | "chcpu" | "rtcwake" | "efibootmgr" | "grub-install" | "update-grub"
        | "update-initramfs" | "dracut" | "mknod" | "iptables" | "ip6tables" | "nft"
        | "ebtables" | "tc" | "brctl" | "iw" | "iwconfig" | "nmcli" | "ethtool" => {
            a.refuse(Refusal::kernel_or_device(name));
        }
        _ if name.starts_with("mkfs")
            || name.starts_with("mke2fs")
            || name.starts_with("fsck.") =>
        {
            a.refuse(Refusal::kernel_or_device(name));
        }
        "sysctl" => {
            if args.iter().any(|x| {
                x.display().contains('=')
                    || matches!(
                        x.lit(),
                        Some("-w" | "--write" | "-p" | "--load" | "--system")
                    )
            }) {
                a.refuse(Refusal::kernel_or_device(
                    "sysctl (writing kernel parameters)",
                ));
            }
        }
        "dmesg" => {
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
        "ip" => {
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
                    )
                )
            });
            if changing || first == "netns" && args.len() > 1 {
                a.refuse(Refusal::kernel_or_device(
                    "ip (changing network configuration)",
                ));
            }
        }
        "ifconfig" | "route" | "arp" => {
            if args.len() > 1 {
                a.refuse(Refusal::kernel_or_device(format!(
                    "{name} (changing network configuration)"
                )));
            }
        }
        "hostname" => {
            let setting = args.iter().any(|x| !x.display().starts_with('-'))
                || any(&["-F", "--file", "-b", "--boot"]);
            if setting {
                a.refuse(Refusal::kernel_or_device(
                    "hostname (setting the host name)",
                ));
            }
        }
        "date" => {
            let setting = any(&["-s", "--set"])
                || args.iter().any(|x| x.display().starts_with("--set="))
                || args.iter().any(|x| {
                    x.lit().is_some_and(|t| {
                        !t.starts_with(['+', '-'])
                            && t.chars().all(|c| c.is_ascii_digit() || c == '.')
                    })
                });
            if setting {
                a.refuse(Refusal::kernel_or_device("date (setting the clock)"));
            }
        }
        "hwclock" | "timedatectl" | "hostnamectl" | "localectl" => {
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
        "systemctl"
        | "service"
        | "loginctl"
        | "journalctl"
        | "crontab"
        | "at"
        | "batch"
        | "atrm"
        | "useradd"
        | "userdel"
        | "usermod"
        | "groupadd"
        | "groupdel"
        | "groupmod"
        | "adduser"
        | "deluser"
        | "addgroup"
        | "delgroup"
        | "passwd"
        | "chpasswd"
        | "chage"
        | "chsh"
        | "chfn"
        | "visudo"
        | "vipw"
        | "vigr"
        | "update-alternatives"
        | "ldconfig"
        | "launchctl"
        | "rc-service"
        | "rc-update"
        | "sv"
        | "initctl" => {
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
                "service" => {
                    any(&["--status-all"]) || args.get(1).and_then(Arg::lit) == Some("status")
                }
                "update-alternatives" => {
                    any(&["--display", "--query", "--list", "--get-selections"])
                }
                _ => false,
            };
            if !reading {
                a.refuse(Refusal::kernel_or_device(format!(
                    "{name} (changing the host's services, users or schedules)"
                )));
            }
        }
        "apt" | "apt-get" | "aptitude" | "dpkg" | "dnf" | "yum" | "rpm" | "zypper" | "pacman"
        | "apk" | "snap" | "flatpak" | "brew" | "port" | "emerge" | "nix-env" | "pkg"
        | "xbps-install" | "yay" | "paru" | "dpkg-reconfigure" | "apt-mark" | "gem" => {
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
                "pacman" => {
                    first.starts_with("-Q") || first.starts_with("-Ss") || first.starts_with("-Si")
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
        }
        "docker" | "podman" | "nerdctl" | "buildah" | "crictl" | "ctr" | "kubectl" | "k3s"
        | "kind" | "minikube" | "helm" | "docker-compose" | "podman-compose" | "lxc" | "lxd"
        | "incus" | "virsh" | "vagrant" | "skopeo" | "k9s" | "kubectx" | "kubens" | "oc" => {
            a.needs(Capability::ContainerRuntime);
            a.refuse(Refusal::no_mode_grants(Capability::ContainerRuntime, name));
        }
        "gpg" | "gpg2" | "pass" | "gopass" | "keyctl" | "secret-tool" | "security" | "op"
        | "bw" | "lpass" | "vault" | "aws" | "gcloud" | "gsutil" | "az" | "doctl" | "heroku"
        | "gh" | "glab" | "hub" | "netlify" | "vercel" | "fly" | "flyctl" | "firebase"
        | "wrangler" | "terraform" | "tofu" | "pulumi" | "sops" | "kubeseal" | "twine"
        | "age-keygen" => {
            a.needs(Capability::Secrets);
            a.refuse(Refusal::no_mode_grants(Capability::Secrets, name));
        }
        _ => return false,
    }
    true
}
