//! A session's `/tmp`, `/var/tmp` and home, the toolchain trees, the git identity and the
//! environment, against the real sandbox.
//!
//! Every negative check has a positive control that would have seen the effect.

// Tests fail loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::Fixture;
use spear_core::ToolStatus;
use spear_runtime::GitIdentity;
use spear_runtime::ScratchMode;
use spear_sandbox::EnvPass;

fn session() -> Fixture {
    Fixture::with(|c| c.scratch = ScratchMode::Session)
}

/// A name no other test or process uses.
fn unique(tag: &str) -> String {
    format!(
        "spear-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )
    .replace(['(', ')'], "")
}

#[test]
fn tmp_and_home_persist_within_a_session_only_and_go_with_it() {
    let a = session();
    let b = session();
    let name = unique("persist");
    let area = a.runner.session_scratch().unwrap().area().to_path_buf();
    let r = a.auto(&format!(
        "echo t > /tmp/{name} && echo h > ~/{name} && echo v > /var/tmp/{name}"
    ));
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    let r = a.safe(&format!("cat /tmp/{name} ~/{name} /var/tmp/{name}"));
    assert_eq!(
        r.stdout, "t\nh\nv\n",
        "the next call of the same session: {r:?}"
    );

    let r = b.safe(&format!(
        "for f in /tmp/{name} ~/{name} /var/tmp/{name}; do test -e $f && echo SEEN $f; done; echo done"
    ));
    assert_eq!(r.stdout, "done\n", "another session saw the files: {r:?}");

    // Nothing of it on the host but in the session's own area.
    for host in [
        Path::new("/tmp").join(&name),
        Path::new("/var/tmp").join(&name),
        a.home.join(&name),
    ] {
        assert!(!host.exists(), "{} landed on the host", host.display());
    }
    assert!(area.join("tmp").join(&name).is_file(), "positive control");
    for d in ["", "tmp", "var-tmp", "home"] {
        let mode = std::fs::metadata(area.join(d))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{d}");
    }
    let parent_mode = std::fs::metadata(area.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(parent_mode & 0o077, 0, "the base is private");

    drop(a);
    assert!(!area.exists(), "the area outlived its session");
}

#[test]
fn a_one_shot_runner_keeps_nothing_between_commands() {
    let f = Fixture::new();
    assert!(f.runner.session_scratch().is_none());
    let name = unique("oneshot");
    let r = f.auto(&format!("echo x > /tmp/{name} && cat /tmp/{name}"));
    assert_eq!(r.stdout, "x\n", "positive control: {r:?}");
    let r = f.safe(&format!("test -e /tmp/{name} && echo SEEN; echo done"));
    assert_eq!(r.stdout, "done\n", "{r:?}");
    assert!(!Path::new("/tmp").join(&name).exists());
}

#[test]
fn a_tmp_link_into_git_hooks_lands_no_hook() {
    let f = session();
    let ws = f.ws.display().to_string();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&f.ws)
        .status()
        .unwrap();
    assert!(git.success());
    let hook = f.ws.join(".git/hooks/pre-commit");
    let r = f.auto(&format!("ln -s {ws}/.git/hooks /tmp/hooks && echo linked"));
    assert_eq!(r.stdout, "linked\n", "{r:?}");
    let r = f.auto(
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > /tmp/hooks/pre-commit && chmod +x /tmp/hooks/pre-commit \
         && cat /tmp/hooks/pre-commit >/dev/null && echo plain > plain.txt && echo wrote",
    );
    assert!(r.stdout.contains("wrote"), "the write went through: {r:?}");
    assert!(
        !hook.exists(),
        "a hook landed through the session's /tmp: {r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("plain.txt"))
            .ok()
            .as_deref(),
        Some("plain\n"),
        "positive control: a plain write of the same command is committed: {r:?}"
    );
}

#[test]
fn a_link_planted_on_a_mount_point_does_not_move_a_toolchain() {
    let f = Fixture::with(|c| {
        c.scratch = ScratchMode::Session;
        let reg = c.home.join(".cargo/registry");
        std::fs::create_dir_all(&reg).unwrap();
        std::fs::write(reg.join("crate.txt"), "registry\n").unwrap();
    });
    let r = f.auto("rm -rf /tmp/fake && mkdir -p /tmp/fake && cat ~/.cargo/registry/crate.txt");
    assert_eq!(r.stdout, "registry\n", "{r:?}");
    // ~/.cargo/registry is a mount point now; the area holds its (empty) directory.
    let area = f.runner.session_scratch().unwrap().area().to_path_buf();
    let planted = area.join("home/.cargo");
    std::fs::remove_dir_all(&planted).unwrap();
    std::os::unix::fs::symlink("/tmp/fake", &planted).unwrap();
    let r = f.safe("cat ~/.cargo/registry/crate.txt; ls /tmp/fake");
    assert_eq!(r.stdout, "registry\n", "{r:?}");
}

/// What a probe of a file in the sandbox saw.
#[derive(Debug, PartialEq)]
enum Seen {
    Shown,
    Empty,
    Absent,
}

/// What a toolchain tree shows: its files, and each credential file in it as an empty file (a
/// store by its name, a configuration file that holds a secret); what is not bound (Maven's and
/// Gradle's settings beside their caches, `go/src`) is not there at all.
#[test]
fn toolchain_trees_are_readable_and_their_credentials_are_not() {
    use Seen::{Absent, Empty, Shown};
    let f = Fixture::with(|c| {
        let h = &c.home;
        let w = |rel: &str, text: &str| {
            let p = h.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            ".cargo/registry/src/idx/itoa-1.0/src/lib.rs",
            "pub fn itoa() {}\n",
        );
        w(".cargo/env", "plain-cargo\n");
        w(".cargo/credentials.toml", "SECRET-cargo\n");
        w(".cargo/credentials", "SECRET-cargo-old\n");
        w(".m2/repository/org/x/x.pom", "plain-m2\n");
        w(".m2/settings.xml", "<password>SECRET-m2</password>\n");
        w(".m2/settings-security.xml", "SECRET-m2-master\n");
        w(".gradle/caches/modules/x.jar", "plain-gradle\n");
        w(
            ".gradle/gradle.properties",
            "signing.password=SECRET-gradle\n",
        );
        w(
            ".nvm/versions/node/v20.0.0/etc/npmrc",
            "//registry.npmjs.org/:_authToken=SECRET-npm\n",
        );
        w(".nvm/versions/node/v20.0.0/etc/plain", "plain-nvm\n");
        w(".nvm/.npmrc", "SECRET-npm-home\n");
        w(
            ".pyenv/versions/3.12.0/pip.conf",
            "[global]\nindex-url = https://u:SECRET-pip@h/simple\n",
        );
        w(".pyenv/versions/3.12.0/lib/site.py", "plain-pyenv\n");
        w(
            ".local/lib/python3.12/site-packages/m.py",
            "plain-user-site\n",
        );
        w("go/pkg/mod/example.com/m@v1/m.go", "plain-go\n");
        w("go/src/other-project/main.go", "OTHER-PROJECT\n");
    });
    let probes = [
        (".cargo/registry/src/idx/itoa-1.0/src/lib.rs", Shown),
        (".cargo/env", Shown),
        (".cargo/credentials.toml", Empty),
        (".cargo/credentials", Empty),
        (".m2/repository/org/x/x.pom", Shown),
        (".m2/settings.xml", Absent),
        (".m2/settings-security.xml", Absent),
        (".gradle/caches/modules/x.jar", Shown),
        (".gradle/gradle.properties", Absent),
        (".nvm/versions/node/v20.0.0/etc/plain", Shown),
        (".nvm/versions/node/v20.0.0/etc/npmrc", Empty),
        (".nvm/.npmrc", Empty),
        (".pyenv/versions/3.12.0/lib/site.py", Shown),
        (".pyenv/versions/3.12.0/pip.conf", Empty),
        (".local/lib/python3.12/site-packages/m.py", Shown),
        ("go/pkg/mod/example.com/m@v1/m.go", Shown),
        ("go/src/other-project/main.go", Absent),
    ];
    let script: Vec<String> = probes
        .iter()
        .map(|(rel, _)| {
            format!("echo \"{rel}: $(cat ~/{rel} 2>/dev/null | wc -c || echo)\" ; test -e ~/{rel} || echo 'MISSING {rel}'")
        })
        .collect();
    let r = f.safe(&script.join("; "));
    for (rel, seen) in &probes {
        let missing = r.stdout.contains(&format!("MISSING {rel}\n"));
        let empty = r.stdout.contains(&format!("{rel}: 0\n"));
        let got = match (missing, empty) {
            (true, _) => Absent,
            (false, true) => Empty,
            (false, false) => Shown,
        };
        assert_eq!(got, *seen, "{rel}: {}", r.stdout);
    }
    let all: Vec<String> = probes.iter().map(|(rel, _)| format!("~/{rel}")).collect();
    let r = f.safe(&format!("cat {} 2>/dev/null; true", all.join(" ")));
    assert!(r.stdout.contains("plain-pyenv"), "{}", r.stdout);
    assert!(!r.stdout.contains("SECRET"), "{}", r.stdout);
    assert!(!r.stdout.contains("OTHER-PROJECT"), "{}", r.stdout);
    let r = f.safe("echo $CARGO_HOME $GOPATH $NVM_DIR");
    let h = f.home.display();
    assert_eq!(r.stdout, format!("{h}/.cargo {h}/go {h}/.nvm\n"), "{r:?}");
}

#[test]
fn git_commits_carry_the_hosts_identity_and_nothing_else_of_its_config() {
    let f = Fixture::with(|c| {
        c.git_identity = GitIdentity {
            name: Some("Ada Host".into()),
            email: Some("ada@host.example".into()),
        };
    });
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&f.ws)
        .status()
        .unwrap();
    assert!(git.success());
    let r = f.auto("git add -A && git commit -qm wip && git log -1 --format='%an <%ae>|%cn'");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.stdout, "Ada Host <ada@host.example>|Ada Host\n", "{r:?}");
    let r = f.safe("git config --system --list");
    assert_eq!(
        r.stdout, "user.name=Ada Host\nuser.email=ada@host.example\n",
        "{r:?}"
    );
    let r = f.auto(
        "git config user.name 'Repo Local' && git commit -q --allow-empty -m two && git log -1 --format=%an",
    );
    assert_eq!(
        r.stdout, "Repo Local\n",
        "a repository's own name wins: {r:?}"
    );
}

#[test]
fn passed_variables_are_visible_and_secret_looking_glob_matches_are_not() {
    let f = Fixture::with(|c| {
        for (n, v) in [
            ("MY_APP_MODE", "dev"),
            ("MY_APP_TOKEN", "tok-should-not-pass"),
            ("MY_APP_URL", "https://user:pw@db.example/"),
            ("HF_TOKEN", "hf_named_exactly"),
            ("UNNAMED", "not-passed"),
        ] {
            c.host_env.push((n.into(), v.into()));
        }
        c.env_pass = vec![
            EnvPass::parse("MY_APP_*").unwrap(),
            EnvPass::parse("HF_TOKEN").unwrap(),
        ];
    });
    let r = f.safe("env");
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert!(r.stdout.contains("MY_APP_MODE=dev\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("HF_TOKEN=hf_named_exactly\n"),
        "{}",
        r.stdout
    );
    for absent in ["MY_APP_TOKEN", "MY_APP_URL", "UNNAMED", "OPENAI_API_KEY"] {
        assert!(!r.stdout.contains(absent), "{absent}: {}", r.stdout);
    }
    for present in ["USER=", "LOGNAME=", "LANG=", "TERM=dumb"] {
        assert!(r.stdout.contains(present), "{present}: {}", r.stdout);
    }
}
