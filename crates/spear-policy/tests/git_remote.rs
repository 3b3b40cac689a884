//! `git push`, `git fetch` and `git pull` to a remote the repository's configuration names: a
//! remote whose every URL is a path on this machine is a write (push) or read (fetch, pull) of
//! that path; any other, and any configuration spear does not follow, keeps the judgement of a
//! network remote (a push needs remote:write, which no mode grants; a fetch needs the network).
//!
//! Each case plants `.git/config` (and other files) in the red-team workspace. The runtime
//! control runs the real git with the same kind of configuration and shows the remote it
//! resolves is the one the table judges.

// A test fails loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::Fixture;
use spear_core::CommandClass::{self, Dangerous as D, ShellComplex as C, WorkspaceMutating as M};
use spear_core::{Capability, RefusalRule};

/// What to assert beyond the class.
#[derive(Debug, Clone, Copy)]
enum Check {
    Needs(Capability),
    Lacks(Capability),
    /// A write target, relative to the workspace.
    Writes(&'static str),
    Rule(RefusalRule),
}

use Check::{Lacks, Needs, Rule, Writes};

/// One case: `.git/config` (`{WS}` is the workspace), other files to plant (a name ending in
/// `/` is a directory), the script, its class and checks.
struct Case {
    config: &'static str,
    plant: &'static [(&'static str, &'static str)],
    script: &'static str,
    class: CommandClass,
    checks: &'static [Check],
}

const fn case(
    config: &'static str,
    plant: &'static [(&'static str, &'static str)],
    script: &'static str,
    class: CommandClass,
    checks: &'static [Check],
) -> Case {
    Case {
        config,
        plant,
        script,
        class,
        checks,
    }
}

const LOCAL: &str = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = ./origin.git\n";
const ABSOLUTE: &str = "[remote \"origin\"]\n\turl = {WS}/origin.git\n";
const NETWORK: &str = "[remote \"origin\"]\n\turl = https://github.com/x/y.git\n";
const TRACKING: &str = "[remote \"origin\"]\n\turl = ./origin.git\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";

/// A bare repository at `origin.git` in the workspace.
const BARE: &[(&str, &str)] = &[
    ("origin.git/HEAD", "ref: refs/heads/main\n"),
    ("origin.git/objects/", ""),
    ("origin.git/refs/", ""),
];

#[allow(
    clippy::too_many_lines,
    reason = "a table: the local remotes first, then every configuration that keeps the network \
              judgement"
)]
fn cases() -> Vec<Case> {
    vec![
        // Local: a remote whose URLs are paths.
        case(
            LOCAL,
            &[],
            "git push origin HEAD",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        case(
            ABSOLUTE,
            &[],
            "git push origin main",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        case(
            "[remote \"origin\"]\n\turl = file://{WS}/origin.git\n",
            &[],
            "git push origin main",
            M,
            &[Writes("origin.git")],
        ),
        // Relative URLs are relative to the top of the working tree, from a subdirectory too.
        case(
            LOCAL,
            &[],
            "cd sub/deeper && git push origin main",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        // No operand: branch.<current>.remote, then origin.
        case(
            TRACKING,
            &[],
            "git push",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        case(LOCAL, &[], "git push", M, &[Writes("origin.git")]),
        // The configured remote wins over one the script adds under its name (`remote add`
        // fails), and one added under another name is judged by its own URL.
        case(
            LOCAL,
            &[],
            "git remote add origin https://example.com/x.git; git push origin main",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        case(
            NETWORK,
            &[],
            "git remote add origin ./origin.git; git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            NETWORK,
            &[],
            "git remote add mine ./origin.git && git push mine main",
            M,
            &[Writes("origin.git")],
        ),
        case(TRACKING, &[], "git pull", M, &[Lacks(Capability::Network)]),
        case(
            LOCAL,
            &[],
            "git fetch origin",
            M,
            &[Lacks(Capability::Network), Lacks(Capability::HostRead)],
        ),
        case(
            LOCAL,
            &[],
            "git pull --rebase origin main",
            M,
            &[Lacks(Capability::Network)],
        ),
        // The only configured remote is the default when no branch names one (git 2.47).
        case(
            "[remote \"up\"]\n\turl = ./origin.git\n",
            &[],
            "git push",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        // A branch's remote may be a URL itself.
        case(
            "[branch \"main\"]\n\tremote = ./origin.git\n",
            &[],
            "git fetch",
            M,
            &[Lacks(Capability::Network)],
        ),
        // A bare word that names no remote and is a directory is a path.
        case(
            "[core]\n",
            BARE,
            "git push origin.git HEAD:main",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
            &[],
            "git push -u origin main",
            M,
            &[Writes("origin.git")],
        ),
        // A submodule's fetch goes to its own remote unless recursion is off.
        case(
            LOCAL,
            &[(
                ".gitmodules",
                "[submodule \"x\"]\n\tpath = x\n\turl = https://e.com/x\n",
            )],
            "git fetch --no-recurse-submodules origin",
            M,
            &[Lacks(Capability::Network)],
        ),
        // Not local: a network URL.
        case(
            NETWORK,
            &[],
            "git push origin main",
            D,
            &[
                Rule(RefusalRule::NoModeGrants),
                Needs(Capability::RemoteWrite),
            ],
        ),
        case(
            NETWORK,
            &[],
            "git fetch origin",
            M,
            &[Needs(Capability::Network)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\tpushurl = https://github.com/x/y.git\n",
            &[],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\turl = git@github.com:x/y.git\n",
            &[],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // The default remote of a push: pushRemote, then remote.pushDefault, before the branch's.
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n[remote \"up\"]\n\turl = https://github.com/x/y.git\n[branch \"main\"]\n\tremote = origin\n\tpushRemote = up\n",
            &[],
            "git push",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n[remote \"up\"]\n\turl = https://github.com/x/y.git\n[remote]\n\tpushDefault = up\n",
            &[],
            "git push",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // A remote named like a path, configured to the network: git takes the remote first.
        case(
            "[remote \"./origin.git\"]\n\turl = https://github.com/x/y.git\n",
            &[],
            "git push ./origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[remote \"origin.git\"]\n\turl = https://github.com/x/y.git\n",
            BARE,
            "git push origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // insteadOf and pushInsteadOf rewrite a local-looking URL to the network.
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n[url \"https://github.com/x/\"]\n\tinsteadOf = ./\n",
            &[],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[url \"https://github.com/x/\"]\n\tpushInsteadOf = ./\n",
            &[],
            "git push ./origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[url \"https://github.com/x/\"]\n\tinsteadOf = ./\n",
            &[],
            "git fetch ./origin.git",
            M,
            &[Needs(Capability::Network)],
        ),
        // An include could hold either; it is not followed.
        case(
            "[include]\n\tpath = ../extra.cfg\n[remote \"origin\"]\n\turl = ./origin.git\n",
            &[(
                "extra.cfg",
                "[url \"https://github.com/x/\"]\n\tinsteadOf = ./\n",
            )],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            "[includeIf \"onbranch:main\"]\n\tpath = ../extra.cfg\n",
            &[],
            "git push ./origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // The legacy `[remote.origin]` spelling, which git matches without case.
        case(
            "[remote.Origin]\n\turl = https://github.com/x/y.git\n",
            &[],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // A legacy remote file of the name.
        case(
            "[core]\n",
            &[
                ("origin.git/HEAD", "ref: refs/heads/main\n"),
                ("origin.git/objects/", ""),
                ("origin.git/refs/", ""),
                (
                    ".git/remotes/origin.git",
                    "URL: https://github.com/x/y.git\n",
                ),
            ],
            "git push origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // With two remotes and no branch naming one, the default is origin.
        case(
            "[remote \"origin\"]\n\turl = https://github.com/x/y.git\n[remote \"up\"]\n\turl = ./origin.git\n",
            &[],
            "git push",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // A default remote that is not configured.
        case(
            "[core]\n",
            &[],
            "git push",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // A program the remote names: SHELL_COMPLEX, and the push stays refused.
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\treceivepack = touch x\n",
            &[],
            "git push origin main",
            D,
            &[
                Needs(Capability::RemoteWrite),
                Needs(Capability::ShellComplex),
            ],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\tuploadpack = touch x\n",
            &[],
            "git fetch origin",
            C,
            &[Needs(Capability::Network)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n\tvcs = x\n",
            &[],
            "git fetch origin",
            C,
            &[Needs(Capability::Network)],
        ),
        // A local URL outside the roots is a write outside them.
        case(
            "[remote \"origin\"]\n\turl = ../elsewhere.git\n",
            &[],
            "git push origin main",
            D,
            &[
                Rule(RefusalRule::WriteOutsideRoots),
                Lacks(Capability::RemoteWrite),
            ],
        ),
        // Submodules fetch from their own remotes.
        case(
            LOCAL,
            &[(
                ".gitmodules",
                "[submodule \"x\"]\n\tpath = x\n\turl = https://e.com/x\n",
            )],
            "git fetch origin",
            M,
            &[Needs(Capability::Network)],
        ),
        case(
            "[remote \"origin\"]\n\turl = ./origin.git\n[push]\n\trecurseSubmodules = on-demand\n",
            &[],
            "git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // The script changes the remote before it pushes: the file on disk is not what git reads.
        case(
            LOCAL,
            &[],
            "git remote set-url origin https://github.com/x/y.git && git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            LOCAL,
            &[],
            "git config remote.origin.url https://github.com/x/y.git; git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            LOCAL,
            &[],
            "git -c remote.origin.url=https://github.com/x/y.git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            LOCAL,
            &[],
            "(cd sub && echo '[url \"https://github.com/\"]' >> ../.git/config); git push ./origin.git main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        case(
            LOCAL,
            &[],
            "python3 tool.py && git push origin main",
            D,
            &[Needs(Capability::RemoteWrite)],
        ),
        // A commit before the push changes no configuration.
        case(
            LOCAL,
            &[],
            "git add -A && git commit -qm x && git push origin HEAD:main",
            M,
            &[Writes("origin.git"), Lacks(Capability::RemoteWrite)],
        ),
    ]
}

fn plant(fx: &Fixture, config: &str, files: &[(&str, &str)]) {
    std::fs::write(fx.path(".git/config"), fx.sub(config)).unwrap();
    for (rel, text) in files {
        let path = fx.path(rel);
        if rel.ends_with('/') {
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, fx.sub(text)).unwrap();
        }
    }
}

#[test]
fn remotes_by_configuration() {
    let mut failures = Vec::new();
    let table = cases();
    for case in &table {
        // A fresh workspace per case: one case's planted files are not the next one's.
        let fx = Fixture::new();
        plant(&fx, case.config, case.plant);
        let a = fx.classify(case.script);
        let mut problems = Vec::new();
        if a.class != case.class {
            problems.push(format!("class {} (expected {})", a.class, case.class));
        }
        for check in case.checks {
            let problem = match *check {
                Check::Needs(cap) => {
                    (!a.capabilities.contains(cap)).then(|| format!("does not need {cap}"))
                }
                Check::Lacks(cap) => a.capabilities.contains(cap).then(|| format!("needs {cap}")),
                Check::Writes(rel) => {
                    let want = common::normalise(&fx.path(rel));
                    (!a.write_targets.iter().any(|w| common::normalise(w) == want))
                        .then(|| format!("write targets {:?} lack {rel}", a.write_targets))
                }
                Check::Rule(rule) => (a.refusal.as_ref().map(spear_core::Refusal::rule)
                    != Some(rule))
                .then(|| format!("refusal {:?} (expected {rule:?})", a.refusal)),
            };
            problems.extend(problem);
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{:?} with {:?}: {} — {}",
                case.script,
                case.config,
                problems.join("; "),
                a.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

/// The runtime control: the real git resolves the remotes the table judges the way the table
/// says. A configured remote named like a path wins over the path, `pushInsteadOf` rewrites a
/// path, a relative URL is relative to the top of the working tree from a subdirectory, and the
/// default remote of a push is `branch.<current>.pushRemote` before `branch.<current>.remote`
/// (`git push --dry-run --porcelain` prints the URL it would push to).
#[test]
fn real_git_resolves_remotes_as_the_table_says() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let git = |args: &[&str], cwd: &std::path::Path| {
        let out = Command::new("git")
            .args(args)
            .current_dir(cwd)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@b")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@b")
            .output()
            .expect("git runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    assert!(git(&["init", "-q", "-b", "main"], &ws).0);
    assert!(git(&["commit", "-q", "--allow-empty", "-m", "x"], &ws).0);
    assert!(git(&["init", "-q", "--bare", "origin.git"], &ws).0);
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    // From a subdirectory, `./origin.git` is the top's.
    let (ok, out) = git(&["push", "./origin.git", "HEAD:main"], &ws.join("sub"));
    assert!(ok, "{out}");
    let (ok, _) = git(
        &["--git-dir=origin.git", "rev-parse", "--verify", "main"],
        &ws,
    );
    assert!(ok, "the push from sub/ reached the top's origin.git");
    // A remote named like the path wins over the path.
    let config = ws.join(".git/config");
    let plain = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{plain}[remote \"./origin.git\"]\n\turl = https://example.invalid/x.git\n"),
    )
    .unwrap();
    let (_, out) = git(
        &["push", "--dry-run", "--porcelain", "./origin.git", "HEAD:x"],
        &ws,
    );
    assert!(out.contains("example.invalid"), "{out}");
    // pushInsteadOf rewrites a path.
    std::fs::write(
        &config,
        format!("{plain}[url \"https://example.invalid/\"]\n\tpushInsteadOf = ./\n"),
    )
    .unwrap();
    let (_, out) = git(
        &["push", "--dry-run", "--porcelain", "./origin.git", "HEAD:x"],
        &ws,
    );
    assert!(out.contains("example.invalid"), "{out}");
    // branch.<current>.pushRemote comes before branch.<current>.remote.
    std::fs::write(
        &config,
        format!(
            "{plain}[remote \"origin\"]\n\turl = ./origin.git\n[remote \"up\"]\n\turl = \
             https://example.invalid/up.git\n[branch \"main\"]\n\tremote = origin\n\tpushRemote \
             = up\n"
        ),
    )
    .unwrap();
    let (_, out) = git(&["push", "--dry-run", "--porcelain"], &ws);
    assert!(out.contains("example.invalid/up.git"), "{out}");
    // Positive control: without pushRemote, the push goes to the local origin.
    std::fs::write(
        &config,
        format!(
            "{plain}[remote \"origin\"]\n\turl = ./origin.git\n[branch \"main\"]\n\tremote = origin\n"
        ),
    )
    .unwrap();
    let (ok, out) = git(&["push", "--porcelain", "origin", "HEAD:y"], &ws);
    assert!(ok, "{out}");
    assert!(
        git(&["--git-dir=origin.git", "rev-parse", "--verify", "y"], &ws).0,
        "{out}"
    );
}
