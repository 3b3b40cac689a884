//! GPUs in the sandbox: which device nodes and driver files an operator's grant binds, planned
//! from what the host shows (pure), and a refusal that names what is missing.
//!
//! The sandbox's `/dev` is bwrap's minimal one: no GPU is visible unless its nodes are bound. A
//! grant ([`GpuSelection`]: every GPU, or some by index) binds, for NVIDIA, the chosen
//! `/dev/nvidiaN` and the driver's control nodes as present (`nvidiactl`, `nvidia-uvm`,
//! `nvidia-uvm-tools`, `nvidia-caps/*`), and for AMD `/dev/kfd` with the chosen render nodes
//! (`/dev/dri/renderD128` is GPU 0); and, read-only, the driver's libraries as the dynamic
//! linker's cache lists them (what NVIDIA's container toolkit binds) and its tools. Nothing else
//! of the host's `/dev` is bound.
//!
//! Attack stopped: a command reaching a device it was not given. The grant is the operator's
//! alone (a mode never grants `gpu`), and the binds are exactly the chosen nodes.
//!
//! What else decides whether the GPU works in the sandbox:
//! - **The device cgroup.** spear makes no device rules of its own: a command's cgroup is below
//!   spear's, so whatever device cgroup spear runs under (cgroup v1's `devices.list`, the device
//!   program a container runtime attaches on v2) applies to the command too. The CLI opens each
//!   node once at start ([`GpuHost::refused`]), so a node that cgroup refuses is a refusal of the
//!   grant naming it, before anything runs, not a CUDA error later.
//! - **The seccomp filter** refuses no `ioctl` but `TIOCSTI` and `TIOCLINUX`, so the driver's
//!   ioctls, `mmap` of its nodes and the UVM driver pass. What it refuses that GPU tools may ask
//!   for: `perf_event_open` (profilers' hardware counters: Nsight Systems, CUPTI's) and `bpf`;
//!   those fail with `EPERM` in the sandbox, by design.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The GPUs an operator grants (`--gpu all` or `--gpu 0,1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSelection {
    /// Every GPU the host has.
    All,
    /// These GPUs, by index (`/dev/nvidiaN`, or the Nth render node).
    Only(Vec<u32>),
}

impl FromStr for GpuSelection {
    type Err = GpuError;

    fn from_str(text: &str) -> Result<Self, GpuError> {
        let text = text.trim();
        if text == "all" {
            return Ok(GpuSelection::All);
        }
        let mut indices = Vec::new();
        for part in text.split(',') {
            let index = part.trim().parse::<u32>().map_err(|_| {
                GpuError::Invalid(format!(
                    "`{text}` is not `all` or a list of GPU indices such as `0,1`"
                ))
            })?;
            if !indices.contains(&index) {
                indices.push(index);
            }
        }
        Ok(GpuSelection::Only(indices))
    }
}

/// What the host shows of GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuHost {
    /// Entries under `/dev`, relative (`nvidia0`, `nvidiactl`, `nvidia-caps/nvidia-cap1`,
    /// `kfd`, `dri/renderD128`).
    pub devices: Vec<String>,
    /// The driver's libraries and tools, host paths.
    pub driver: Vec<PathBuf>,
    /// Device entries (as in `devices`) spear could not open for reading and writing, and why:
    /// the device cgroup of spear's own cgroup (a container given no GPU, cgroup v1's
    /// `devices.list` or v2's device program) or the node's permissions refuse it, and so would
    /// they the command.
    pub refused: Vec<(String, String)>,
}

/// What a grant binds into the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuBinds {
    /// Device nodes, bound as devices at the same path.
    pub devices: Vec<PathBuf>,
    /// Driver files, bound read-only at the same path.
    pub driver: Vec<PathBuf>,
}

/// Why a GPU grant cannot be given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// The host has no GPU spear can bind.
    NoGpu(String),
    /// A GPU asked for by index is not there.
    NoSuchGpu {
        /// The index asked for.
        asked: u32,
        /// The indices the host has.
        present: Vec<u32>,
    },
    /// The selection does not parse.
    Invalid(String),
    /// A node the grant needs is there but refused to spear.
    Refused {
        /// The node (`/dev/nvidia0`).
        node: String,
        /// What opening it said.
        why: String,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoGpu(what) => write!(
                f,
                "no GPU to give the sandbox: {what}; install the driver (its device nodes appear \
                 in /dev), or run without --gpu"
            ),
            GpuError::NoSuchGpu { asked, present } => {
                let present: Vec<String> = present.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "there is no GPU {asked} on this host (it has: {})",
                    if present.is_empty() {
                        "none".to_owned()
                    } else {
                        present.join(", ")
                    }
                )
            }
            GpuError::Invalid(why) => write!(f, "{why}"),
            GpuError::Refused { node, why } => write!(
                f,
                "{node} is there but this host refuses it to spear ({why}): the device cgroup \
                 spear runs in (a container given no GPU) or the node's permissions; give spear's \
                 container or user the device (docker run --gpus, --device), or run without --gpu"
            ),
        }
    }
}

impl std::error::Error for GpuError {}

/// NVIDIA's control nodes, bound with any of its GPUs when present.
const NVIDIA_CONTROL: [&str; 3] = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"];

/// The binds that give a sandbox the GPUs `selection` names on `host`.
pub fn gpu_binds(selection: &GpuSelection, host: &GpuHost) -> Result<GpuBinds, GpuError> {
    let has = |name: &str| host.devices.iter().any(|d| d == name);
    let indexed = |prefix: &str, base: u32| -> Vec<u32> {
        let mut found: Vec<u32> = host
            .devices
            .iter()
            .filter_map(|d| d.strip_prefix(prefix)?.parse::<u32>().ok())
            .filter_map(|n| n.checked_sub(base))
            .collect();
        found.sort_unstable();
        found
    };
    let nvidia = indexed("nvidia", 0);
    let amd = indexed("dri/renderD", 128);
    let (present, node): (Vec<u32>, Box<dyn Fn(u32) -> String>) = if !nvidia.is_empty() {
        if !has("nvidiactl") {
            return Err(GpuError::NoGpu(
                "/dev/nvidiactl is missing (the NVIDIA driver is not loaded)".into(),
            ));
        }
        (nvidia, Box::new(|n| format!("nvidia{n}")))
    } else if has("kfd") && !amd.is_empty() {
        (amd, Box::new(|n| format!("dri/renderD{}", n + 128)))
    } else {
        return Err(GpuError::NoGpu(
            "no /dev/nvidia0 (NVIDIA) and no /dev/kfd with a /dev/dri render node (AMD)".into(),
        ));
    };
    let chosen = match selection {
        GpuSelection::All => present.clone(),
        GpuSelection::Only(indices) => {
            if let Some(&asked) = indices.iter().find(|i| !present.contains(i)) {
                return Err(GpuError::NoSuchGpu { asked, present });
            }
            indices.clone()
        }
    };
    let dev = Path::new("/dev");
    let mut devices: Vec<PathBuf> = chosen.iter().map(|&n| dev.join(node(n))).collect();
    let control = host.devices.iter().filter(|d| {
        NVIDIA_CONTROL.contains(&d.as_str()) || d.starts_with("nvidia-caps/") || *d == "kfd"
    });
    devices.extend(control.map(|d| dev.join(d)));
    // A node the host refuses would fail the command as it failed spear: say so now, not after.
    if let Some((name, why)) = host
        .refused
        .iter()
        .find(|(name, _)| devices.contains(&dev.join(name)))
    {
        return Err(GpuError::Refused {
            node: dev.join(name).display().to_string(),
            why: why.clone(),
        });
    }
    Ok(GpuBinds {
        devices,
        driver: host.driver.clone(),
    })
}

/// The driver's libraries in the dynamic linker's cache (`ldconfig -p`'s output): NVIDIA's user
/// space (`libcuda`, `libnvidia-*`, `libnvcuvid`, `libnvoptix`, `libcudadebugger`), as its
/// container toolkit finds them.
pub fn driver_libraries(ldconfig: &str) -> Vec<PathBuf> {
    const PREFIXES: [&str; 5] = [
        "libcuda.",
        "libcudadebugger.",
        "libnvidia-",
        "libnvcuvid.",
        "libnvoptix.",
    ];
    let mut out: Vec<PathBuf> = ldconfig
        .lines()
        .filter_map(|line| {
            let (name, path) = line.trim().split_once(" => ")?;
            PREFIXES
                .iter()
                .any(|p| name.starts_with(p))
                .then(|| PathBuf::from(path.trim()))
        })
        .filter(|p| p.is_absolute())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(devices: &[&str]) -> GpuHost {
        GpuHost {
            devices: devices.iter().map(|d| (*d).to_owned()).collect(),
            driver: vec![PathBuf::from("/usr/lib/x86_64-linux-gnu/libcuda.so.1")],
            refused: Vec::new(),
        }
    }

    fn paths(binds: &GpuBinds) -> Vec<String> {
        binds
            .devices
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    #[test]
    fn selections_parse() {
        assert_eq!("all".parse::<GpuSelection>(), Ok(GpuSelection::All));
        assert_eq!(
            " 0, 1,1 ".parse::<GpuSelection>(),
            Ok(GpuSelection::Only(vec![0, 1]))
        );
        assert!(matches!(
            "gpu0".parse::<GpuSelection>(),
            Err(GpuError::Invalid(_))
        ));
        assert!("".parse::<GpuSelection>().is_err());
    }

    #[test]
    fn nvidia_binds_the_chosen_gpus_and_the_control_nodes_only() {
        let h = host(&[
            "null",
            "nvidia0",
            "nvidia1",
            "nvidiactl",
            "nvidia-uvm",
            "nvidia-uvm-tools",
            "nvidia-caps/nvidia-cap1",
            "nvidia-modeset",
            "sda",
        ]);
        let all = gpu_binds(&GpuSelection::All, &h).unwrap();
        assert_eq!(
            paths(&all),
            [
                "/dev/nvidia0",
                "/dev/nvidia1",
                "/dev/nvidiactl",
                "/dev/nvidia-uvm",
                "/dev/nvidia-uvm-tools",
                "/dev/nvidia-caps/nvidia-cap1"
            ]
        );
        assert_eq!(all.driver, h.driver);
        let one = gpu_binds(&GpuSelection::Only(vec![1]), &h).unwrap();
        assert_eq!(paths(&one)[0], "/dev/nvidia1");
        assert!(!paths(&one).contains(&"/dev/nvidia0".to_owned()));
        // Nothing else of /dev: not the disk, not the modeset node.
        assert!(
            !paths(&all)
                .iter()
                .any(|p| p == "/dev/sda" || p.ends_with("modeset"))
        );
    }

    #[test]
    fn amd_binds_kfd_and_the_render_nodes() {
        let h = host(&["kfd", "dri/renderD128", "dri/renderD129", "dri/card0"]);
        let one = gpu_binds(&GpuSelection::Only(vec![1]), &h).unwrap();
        assert_eq!(paths(&one), ["/dev/dri/renderD129", "/dev/kfd"]);
    }

    #[test]
    fn refusals_name_what_is_missing() {
        let none = gpu_binds(&GpuSelection::All, &host(&["null", "zero"])).unwrap_err();
        assert!(none.to_string().contains("no /dev/nvidia0"), "{none}");
        let no_driver = gpu_binds(&GpuSelection::All, &host(&["nvidia0"])).unwrap_err();
        assert!(
            no_driver.to_string().contains("/dev/nvidiactl is missing"),
            "{no_driver}"
        );
        let absent = gpu_binds(
            &GpuSelection::Only(vec![0, 3]),
            &host(&["nvidia0", "nvidiactl"]),
        )
        .unwrap_err();
        assert_eq!(
            absent.to_string(),
            "there is no GPU 3 on this host (it has: 0)"
        );
        // A node the device cgroup refuses, among those the grant binds: refused at start.
        let mut denied = host(&["nvidia0", "nvidia1", "nvidiactl"]);
        denied.refused = vec![(
            "nvidia1".into(),
            "Operation not permitted (os error 1)".into(),
        )];
        let e = gpu_binds(&GpuSelection::All, &denied)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/dev/nvidia1 is there but this host refuses it"),
            "{e}"
        );
        assert!(e.contains("device cgroup"), "{e}");
        // Positive control: a grant that does not bind the refused node is given.
        assert!(gpu_binds(&GpuSelection::Only(vec![0]), &denied).is_ok());
    }

    #[test]
    fn driver_libraries_come_from_the_linker_cache() {
        let text = "812 libs found in cache `/etc/ld.so.cache'\n\
            \tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n\
            \tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n\
            \tlibcuda.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so\n\
            \tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n\
            \tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n";
        assert_eq!(
            driver_libraries(text),
            [
                "/usr/lib/x86_64-linux-gnu/libcuda.so",
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
            ]
            .map(PathBuf::from)
        );
    }
}
