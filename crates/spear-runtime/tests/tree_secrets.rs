//! Credentials inside the toolchain trees a sandbox binds, at any depth (issue 31, part 6), against
//! the real sandbox: each case of the issue is masked in SAFE's read-only profile (it reads as an
//! empty file), a twin file that holds no secret is shown, and the same probe with the masks switched off reads the secret (the
//! positive control). The decision layer's view masks exactly the same files. Ordinary toolchain
//! use still runs with the host's own trees bound and scanned.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{read_only, runner_for};
use spear_core::ToolStatus;
use spear_runtime::{CommandLine, CommandRequest, CommandRunner, RunnerConfig, sandbox_view};
use spear_sandbox::{BwrapSpec, Watch};
use spear_workspace::{Workspace, WorkspaceConfig};

const TOKEN: &str = "spear-issue31-token-7f3a9c";

/// One case: where the secret lies under the home, what the file holds, and a twin in the same
/// kind of place that holds no secret (and must stay readable).
struct Case {
    what: &'static str,
    path: &'static str,
    text: String,
    twin: &'static str,
    twin_text: &'static str,
}

fn cases() -> Vec<Case> {
    let t = TOKEN;
    vec![
        Case {
            what: "cargo's config.toml with a [registry] token",
            path: ".cargo/config.toml",
            text: format!("[registry]\ntoken = \"{t}\"\n"),
            twin: ".cargo/registry/src/index/a-1.0.0/.cargo/config.toml",
            twin_text: "[build]\njobs = 2\n",
        },
        Case {
            what: "cargo's legacy config with a [registries.*] token",
            path: ".cargo/config",
            text: format!(
                "[registries.corp]\nindex = \"sparse+https://r.corp/\"\ntoken = \"{t}\"\n"
            ),
            twin: ".cargo/registry/src/index/a-1.0.0/src/lib.rs",
            twin_text: "pub fn a() {}\n",
        },
        Case {
            what: "pyenv-virtualenv's pip.conf under versions/*/envs/*",
            path: ".pyenv/versions/3.12.1/envs/venv/pip.conf",
            text: format!("[global]\nindex-url = https://user:{t}@pypi.corp/simple\n"),
            twin: ".pyenv/versions/3.11.0/envs/clean/pip.conf",
            twin_text: "[global]\nindex-url = https://pypi.org/simple\n",
        },
        Case {
            what: "npm's own npmrc inside nvm's tree",
            path: ".nvm/versions/node/v20.1.0/lib/node_modules/npm/npmrc",
            text: format!("//registry.npmjs.org/:_authToken={t}\n"),
            twin: ".nvm/versions/node/v18.0.0/lib/node_modules/npm/npmrc",
            twin_text: "globalconfig=/x/etc/npmrc\n",
        },
        Case {
            what: "a conda environment's .condarc",
            path: "miniconda3/envs/corp/.condarc",
            text: format!("channels:\n  - https://conda.anaconda.org/t/{t}/corp\n"),
            twin: "miniconda3/envs/plain/.condarc",
            twin_text: "channels:\n  - conda-forge\n",
        },
        Case {
            what: "a conda environment's pip.conf",
            path: "miniconda3/envs/corp/pip.conf",
            text: format!("[global]\nextra-index-url = https://u:{t}@pypi.corp/simple\n"),
            twin: "miniconda3/envs/plain/pip.conf",
            twin_text: "[global]\ntimeout = 60\n",
        },
        Case {
            what: ".git-credentials one level down",
            path: ".pyenv/plugins/.git-credentials",
            text: format!("https://u:{t}@github.com\n"),
            twin: ".pyenv/plugins/README.md",
            twin_text: "plugins\n",
        },
        Case {
            what: ".netrc one level down",
            path: ".cargo/git/.netrc",
            text: format!("machine github.com login u password {t}\n"),
            twin: ".cargo/git/README",
            twin_text: "checkouts\n",
        },
        Case {
            what: "uv's uv.toml",
            path: ".local/share/uv/uv.toml",
            text: format!("[[index]]\nname = \"corp\"\nurl = \"https://u:{t}@pypi.corp/simple\"\n"),
            twin: ".local/share/uv/python/.lock",
            twin_text: "lock\n",
        },
        Case {
            what: "a uv tool's pip.conf",
            path: ".local/share/uv/tools/ruff/pip.conf",
            text: format!("[global]\nindex-url = https://u:{t}@pypi.corp/simple\n"),
            twin: ".local/share/uv/tools/black/pip.conf",
            twin_text: "[global]\nindex-url = https://pypi.org/simple\n",
        },
        Case {
            what: "a credential file at depth ten",
            path: ".cargo/registry/src/index/b-2.0.0/a/b/c/d/e/f/.git-credentials",
            text: format!("https://u:{t}@host\n"),
            twin: ".cargo/registry/src/index/b-2.0.0/a/b/c/d/e/f/notes.txt",
            twin_text: "notes\n",
        },
    ]
}

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: Arc<Workspace>,
    config: RunnerConfig,
    runner: CommandRunner,
}

/// A home holding every case and its twin, a workspace beside it, and a runner whose host
/// environment names that home (its toolchain trees are found where each tool keeps them).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    for c in cases() {
        for (rel, text) in [(c.path, c.text.as_str()), (c.twin, c.twin_text)] {
            let path = home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }
    let mut config = RunnerConfig::from_host();
    config.home.clone_from(&home);
    config.host_env = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), home.clone().into_os_string()),
    ];
    config.default_timeout = Duration::from_secs(30);
    config.staging = vec![base.join("staging")];
    let mut wc = WorkspaceConfig::new(&ws);
    wc.single_root = true;
    let workspace = Arc::new(Workspace::open(&wc).unwrap());
    let runner = runner_for(&ws, config.clone(), None);
    Fixture {
        _dir: dir,
        home,
        workspace,
        config,
        runner,
    }
}

fn cat(path: &Path) -> CommandRequest {
    CommandRequest::new(
        CommandLine::Argv(vec!["/bin/cat".into(), path.into()]),
        read_only(),
    )
}

/// `spec` with the credential masks under `home` left out: the protection switched off.
fn unmasked(spec: &BwrapSpec, home: &Path) -> BwrapSpec {
    BwrapSpec::builder(
        spec.profile().clone(),
        spec.command().to_vec(),
        spec.cwd().to_path_buf(),
        spec.home().to_path_buf(),
    )
    .system(spec.system().to_vec())
    .etc(spec.etc().clone())
    .toolchains(spec.toolchains().to_vec())
    .roots(spec.roots().to_vec())
    .masks(
        spec.masks()
            .iter()
            .filter(|m| !m.path().starts_with(home))
            .cloned()
            .collect(),
    )
    .env(spec.env().to_vec(), Vec::new())
    .build()
    .unwrap()
}

/// What `spec`'s command prints on stdout, run by `runner`'s sandbox.
fn stdout_of(runner: &CommandRunner, spec: &BwrapSpec) -> String {
    let watch = Watch {
        timeout: Duration::from_secs(30),
        output_cap: 1 << 20,
        flood_bytes: 1 << 30,
        cancel: None,
        tee: None,
        stdin: None,
    };
    let outcome = runner.sandbox().run(spec, &watch).unwrap();
    assert!(outcome.setup_error.is_none(), "{:?}", outcome.setup_error);
    outcome.finished.stdout.text
}

/// Each case: `cat` in SAFE's profile prints nothing of the secret; its twin prints what it
/// holds; the same `cat` with the masks switched off prints the secret.
#[test]
fn every_case_is_masked_in_safe() {
    let f = fixture();
    for c in cases() {
        let secret = f.home.join(c.path);
        let r = f.runner.run(&cat(&secret));
        assert!(
            !r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN),
            "{}: the secret was read: {r:?}",
            c.what
        );
        // It reads as an empty file: a program that reads its configuration runs without it.
        assert_eq!(
            (r.status, r.stdout.as_str()),
            (ToolStatus::Ok, ""),
            "{}: {r:?}",
            c.what
        );
        let twin = f.runner.run(&cat(&f.home.join(c.twin)));
        assert_eq!(twin.stdout, c.twin_text, "{}: the twin: {twin:?}", c.what);
        let spec = f.runner.spec(&cat(&secret), None).unwrap();
        assert!(
            spec.masks().iter().any(|m| m.path() == secret),
            "{}: {:?}",
            c.what,
            spec.masks()
        );
        let off = stdout_of(&f.runner, &unmasked(&spec, &f.home));
        assert!(
            off.contains(TOKEN),
            "{}: positive control, unmasked: {off:?}",
            c.what
        );
    }
}

/// A script that finds its files itself (no path the decision layer could see) reads nothing of
/// any secret in any bound tree, and still reads every twin.
#[test]
fn a_script_that_searches_the_trees_reads_no_secret() {
    let f = fixture();
    let script = "grep -rIl . ~/.cargo ~/.pyenv ~/.nvm ~/miniconda3 ~/.local/share/uv | sort; \
                  grep -rIh spear-issue31 ~ || echo none";
    let r = f.runner.run(&CommandRequest::new(
        CommandLine::Script(script.into()),
        read_only(),
    ));
    assert!(!r.stdout.contains(TOKEN), "{r:?}");
    assert!(r.stdout.ends_with("none\n"), "{r:?}");
    for c in cases() {
        assert!(
            r.stdout
                .contains(&f.home.join(c.twin).display().to_string()),
            "{}: the twin is listed: {}",
            c.what,
            r.stdout
        );
    }
}

/// The decision layer's view masks what the sandbox masks: each secret, none of the twins.
#[test]
fn the_view_masks_what_the_sandbox_masks() {
    let f = fixture();
    let view = sandbox_view(&f.workspace, &f.config);
    let spec = f.runner.spec(&cat(Path::new("/dev/null")), None).unwrap();
    for c in cases() {
        let secret = f.home.join(c.path);
        assert!(view.masks(&secret), "{}: {:?}", c.what, view.masked);
        assert!(view.shows(&secret), "{}: inside a shown tree", c.what);
        assert!(!view.masks(&f.home.join(c.twin)), "{}", c.what);
    }
    for masked in &view.masked {
        assert!(
            spec.masks().iter().any(|m| m.path() == masked),
            "{} is in the view but not masked",
            masked.display()
        );
    }
}

/// A token written into a twin after the runner was made is masked from the next command on
/// (each command looks at the files found again); the twin was readable before.
#[test]
fn a_token_written_in_place_is_masked_at_the_next_command() {
    let f = fixture();
    let twin = f.home.join(".pyenv/versions/3.11.0/envs/clean/pip.conf");
    let before = f.runner.run(&cat(&twin));
    assert!(before.stdout.contains("pypi.org"), "{before:?}");
    let text = std::fs::read_to_string(&twin).unwrap();
    let text = format!("{text}extra-index-url = https://u:{TOKEN}@h/simple\n");
    std::fs::write(&twin, text).unwrap();
    let after = f.runner.run(&cat(&twin));
    assert!(!after.stdout.contains(TOKEN), "{after:?}");
}

/// In a session (the trees watched), a credential file created deep in a bound tree after the
/// runner was made is masked from the next command on; the positive control is the same file
/// read by the same runner just before it held a secret.
#[test]
fn a_session_masks_a_credential_file_created_during_it() {
    let mut f = fixture();
    f.config.watch_trees = true;
    let runner = runner_for(f.workspace.roots()[0].host_path(), f.config.clone(), None);
    let deep = f
        .home
        .join(".pyenv/versions/3.11.0/lib/python3.11/site-packages/pkg/sub/pip.conf");
    std::fs::create_dir_all(deep.parent().unwrap()).unwrap();
    std::fs::write(&deep, "[global]\ntimeout = 5\n").unwrap();
    let before = runner.run(&cat(&deep));
    assert_eq!(before.stdout, "[global]\ntimeout = 5\n", "{before:?}");
    let netrc = deep.with_file_name(".netrc");
    std::fs::write(&netrc, format!("machine h password {TOKEN}\n")).unwrap();
    std::fs::write(
        &deep,
        format!("[global]\nindex-url = https://u:{TOKEN}@h/s\n"),
    )
    .unwrap();
    for path in [&netrc, &deep] {
        let r = runner.run(&cat(path));
        assert!(!r.stdout.contains(TOKEN), "{}: {r:?}", path.display());
    }
}

/// Ordinary work with the host's own toolchain trees bound (and scanned): `cargo --version` and
/// `python3 -c 'import json'` print in the sandbox what they print on the host, for whichever of
/// them this host has on its PATH (python3 at least).
#[test]
fn ordinary_toolchain_use_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let mut config = RunnerConfig::from_host();
    config.host_env = std::env::vars_os()
        .filter(|(n, _)| n != "OPENAI_API_KEY" && n != "GITHUB_TOKEN")
        .collect::<Vec<(OsString, OsString)>>();
    let runner = runner_for(&ws, config, None);
    let mut ran = 0;
    for argv in [
        vec!["cargo", "--version"],
        vec!["python3", "-c", "import json; print(json.dumps({'a': 1}))"],
    ] {
        let Ok(host) = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .output()
        else {
            continue;
        };
        if !host.status.success() {
            continue;
        }
        ran += 1;
        let script = argv
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
            .collect::<Vec<_>>()
            .join(" ");
        let r = runner.run(&CommandRequest::new(
            CommandLine::Script(script),
            read_only(),
        ));
        assert_eq!(
            r.stdout,
            String::from_utf8_lossy(&host.stdout),
            "{argv:?}: {r:?}"
        );
    }
    assert!(ran >= 1, "python3 is on this host's PATH");
}

/// A session keeps its `/tmp` between commands although credential files inside the toolchain
/// trees under the home directory are masked: those masks lie inside binds that every sandbox of
/// the session makes read-only over their mount points, where no job can plant a link.
#[test]
fn a_session_keeps_its_tmp_with_masks_in_toolchain_trees() {
    let mut f = fixture();
    f.config.scratch = spear_runtime::ScratchMode::Session;
    let runner = runner_for(f.workspace.roots()[0].host_path(), f.config.clone(), None);
    let secret = f.home.join(".cargo/config.toml");
    let spec = runner.spec(&cat(&secret), None).unwrap();
    assert!(
        spec.masks().iter().any(|m| m.path() == secret),
        "the case holds a mask under the home directory: {:?}",
        spec.masks()
    );
    assert!(spec.scratch().is_some(), "the session's own /tmp and home");
    let run = |script: &str| {
        runner.run(&CommandRequest::new(
            CommandLine::Script(script.into()),
            read_only(),
        ))
    };
    let r = run("echo kept > /tmp/note");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let r = run("cat /tmp/note");
    assert_eq!(r.stdout, "kept\n", "{r:?}");
    // Positive control: a mask under the home directory in no toolchain tree (a host-read path
    // the operator named) still gives the command fresh private places.
    let notes = f.home.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join(".netrc"),
        format!("machine h password {TOKEN}\n"),
    )
    .unwrap();
    let request = CommandRequest::new(
        CommandLine::Argv(vec!["/bin/true".into()]),
        common::reading_host(&read_only(), vec![notes.clone()]),
    );
    let spec = runner.spec(&request, None).unwrap();
    assert!(
        spec.masks()
            .iter()
            .any(|m| m.path() == notes.join(".netrc"))
    );
    assert!(spec.scratch().is_none());
}
