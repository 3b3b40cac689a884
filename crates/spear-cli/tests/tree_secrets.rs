//! Credentials inside the toolchain trees spear binds, at any depth (issue 31, part 6), through the
//! `spear` binary in SAFE: `cat` of each case is refused as a credential store before anything
//! runs, a script that reads the same file where the decision layer cannot see the path reads an
//! empty mask, and the twin that holds no secret is read both ways (the positive control).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::fmt::Write as _;
use std::process::Output;

use support::{Dirs, SpearCommands as _};

const TOKEN: &str = "spear-issue31-cli-token-51e0";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// (case, path under the home, what it holds, its twin, what the twin holds).
fn cases() -> Vec<(
    &'static str,
    &'static str,
    String,
    &'static str,
    &'static str,
)> {
    let t = TOKEN;
    vec![
        (
            "cargo's config.toml token",
            ".cargo/config.toml",
            format!("[registry]\ntoken = \"{t}\"\n"),
            ".cargo/registry/src/i/a-1.0.0/.cargo/config.toml",
            "[build]\njobs = 2\n",
        ),
        (
            "cargo's legacy config",
            ".cargo/config",
            format!("[registries.corp]\ntoken = \"{t}\"\n"),
            ".cargo/env",
            "export PATH\n",
        ),
        (
            "pyenv-virtualenv's pip.conf",
            ".pyenv/versions/3.12.1/envs/venv/pip.conf",
            format!("[global]\nindex-url = https://u:{t}@pypi.corp/simple\n"),
            ".pyenv/versions/3.11.0/envs/clean/pip.conf",
            "[global]\nindex-url = https://pypi.org/simple\n",
        ),
        (
            "npm's own npmrc in nvm's tree",
            ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
            format!("//registry.npmjs.org/:_authToken={t}\n"),
            ".nvm/versions/node/v18.0.0/lib/node_modules/npm/npmrc",
            "globalconfig=/x/etc/npmrc\n",
        ),
        (
            "a conda environment's .condarc",
            "miniconda3/envs/corp/.condarc",
            format!("channels:\n  - https://conda.anaconda.org/t/{t}/corp\n"),
            "miniconda3/envs/plain/.condarc",
            "channels:\n  - conda-forge\n",
        ),
        (
            ".git-credentials one level down",
            ".pyenv/plugins/.git-credentials",
            format!("https://u:{t}@github.com\n"),
            ".pyenv/plugins/README",
            "plugins\n",
        ),
        (
            "uv's tools' pip.conf",
            ".local/share/uv/tools/ruff/pip.conf",
            format!("[global]\nindex-url = https://u:{t}@pypi.corp/simple\n"),
            ".local/share/uv/tools/black/pip.conf",
            "[global]\nindex-url = https://pypi.org/simple\n",
        ),
    ]
}

/// `spear ARGS` with the home's trees where each tool keeps them by default (cargo and rustup,
/// which run the tests, name their own trees in the environment).
fn exec(d: &Dirs, args: &[&str]) -> Output {
    let mut cmd = d.spear(args);
    for var in ["CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "NVM_DIR"] {
        cmd.env_remove(var);
    }
    cmd.stdin(std::process::Stdio::null()).output().unwrap()
}

/// A Python script that reads `path`, spelled in hex (no word the decision layer could judge
/// names the file, and no literal it would take for a path).
fn python_reads(path: &std::path::Path) -> String {
    let hex = path
        .to_str()
        .unwrap()
        .bytes()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
    format!("/usr/bin/python3 -c 'print(open(bytes.fromhex(\"{hex}\").decode()).read(), end=\"\")'")
}

#[test]
fn every_case_is_hidden_in_safe() {
    let d = Dirs::with(&[("a.txt", "a\n")]);
    for (_, path, secret, twin, twin_text) in cases() {
        for (rel, content) in [(path, secret.as_str()), (twin, twin_text)] {
            let file = d.home.join(rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, content).unwrap();
        }
    }
    for (what, path, _, twin, twin_text) in cases() {
        let file = d.home.join(path);
        // Named: refused before anything runs.
        let out = exec(&d, &["exec", "--", "cat", file.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(126),
            "{what}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stdout).contains(TOKEN), "{what}");
        assert!(
            text(&out.stderr).contains("credential store"),
            "{what}: {}",
            text(&out.stderr)
        );
        // Not named: the script runs in SAFE and reads the mask, empty.
        let out = exec(&d, &["exec", "-c", &python_reads(&file)]);
        assert!(out.status.success(), "{what}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{what}");
        // Positive controls: the twin, named and not.
        let out = exec(
            &d,
            &["exec", "--", "cat", d.home.join(twin).to_str().unwrap()],
        );
        assert_eq!(
            text(&out.stdout),
            twin_text,
            "{what}: {}",
            text(&out.stderr)
        );
        let out = exec(&d, &["exec", "-c", &python_reads(&d.home.join(twin))]);
        assert_eq!(
            text(&out.stdout),
            twin_text,
            "{what}: {}",
            text(&out.stderr)
        );
    }
}
