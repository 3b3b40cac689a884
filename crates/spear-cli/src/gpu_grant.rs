//! `--gpu`: the operator's grant of GPUs, resolved at start against what the host shows (its
//! `/dev`, the dynamic linker's cache, the driver's tools), so that a host without them is a
//! refusal before anything runs, naming what is missing.

use std::path::{Path, PathBuf};

use spear_sandbox::{GpuBinds, GpuHost, GpuSelection, driver_libraries, gpu_binds};

/// The driver's tools, bound where the host has them.
const TOOLS: [&str; 5] = [
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
];

/// Where the tools and NVIDIA's container-toolkit layout keep them.
const TOOL_DIRS: [&str; 3] = ["/usr/bin", "/usr/local/nvidia/bin", "/usr/local/bin"];

/// The binds `selection` (`all`, `0,1`) gives on this host, or why it cannot; `source` names
/// where the selection came from (`--gpu`, `[sandbox] gpu =`) in the error.
pub fn resolve(source: &str, selection: &str) -> Result<GpuBinds, String> {
    let chosen: GpuSelection = selection
        .parse()
        .map_err(|e| format!("{source} {selection}: {e}"))?;
    let host = read_host(Path::new("/dev"));
    gpu_binds(&chosen, &host).map_err(|e| format!("{source} {selection}: {e}"))
}

/// What the host shows of GPUs: `/dev`'s entries (and those of `nvidia-caps/` and `dri/`), the
/// NVIDIA libraries in the linker's cache, and the driver's tools.
fn read_host(dev: &Path) -> GpuHost {
    let mut devices = names(dev, "");
    devices.extend(names(&dev.join("nvidia-caps"), "nvidia-caps/"));
    devices.extend(names(&dev.join("dri"), "dri/"));
    let mut driver = Vec::new();
    if devices.iter().any(|d| d == "nvidiactl") {
        let cache = std::process::Command::new("/sbin/ldconfig")
            .arg("-p")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        driver = driver_libraries(&cache);
        for dir in TOOL_DIRS {
            driver.extend(
                TOOLS
                    .iter()
                    .map(|t| PathBuf::from(dir).join(t))
                    .filter(|p| p.is_file()),
            );
        }
    }
    let refused = devices
        .iter()
        .filter(|d| is_gpu_node(d))
        .filter_map(|d| {
            let path = dev.join(d);
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .err()
                .map(|e| (d.clone(), e.to_string()))
        })
        .collect();
    GpuHost {
        devices,
        driver,
        refused,
    }
}

/// Whether `/dev`'s entry `name` is one of the nodes a grant may bind (opened once at start to
/// learn whether the host lets spear, and so the command, use it).
fn is_gpu_node(name: &str) -> bool {
    name.starts_with("nvidia") || name == "kfd" || name.starts_with("dri/renderD")
}

/// The entries of `dir`, each as `prefix` + its name; none when it cannot be read.
fn names(dir: &Path, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| format!("{prefix}{}", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
