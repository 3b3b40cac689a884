//! Programs that reach the network, and what they write on the way.

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::shell::word::Arg;

/// Handles `name` if it is a network program. Returns false otherwise.
pub(crate) fn analyse(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) -> bool {
    match name {
        "curl" => curl(a, args, cwd),
        "wget" | "wget2" => wget(a, name, args, cwd),
        "ping" | "ping6" | "traceroute" | "tracepath" | "mtr" | "dig" | "nslookup" | "host"
        | "whois" | "drill" | "kdig" | "delv" | "tldr" => a.needs(Capability::Network),
        "nc" | "ncat" | "netcat" | "socat" | "telnet" | "ftp" | "tftp" | "lftp" | "nmap"
        | "http" | "https" | "xh" | "aria2c" | "lynx" | "w3m" | "links" | "elinks" | "httpie"
        | "websocat" | "grpcurl" | "openssl" => {
            a.needs(Capability::Network);
            a.complex(format!(
                "`{name}` can run commands or write files on the network's behalf"
            ));
            for arg in args {
                a.unknown_operand(arg, cwd);
            }
        }
        "ssh" | "scp" | "sftp" | "sshfs" | "ssh-copy-id" | "ssh-keygen" | "ssh-add"
        | "ssh-agent" | "ssh-keyscan" | "mosh" | "autossh" | "sshpass" => {
            a.needs(Capability::Ssh);
            a.refuse(Refusal::no_mode_grants(Capability::Ssh, name));
        }
        _ => return false,
    }
    true
}

/// curl: writes `-o`/`--output`, `-O` (into the current directory or `--output-dir`), `-D`,
/// `-c`, `--trace` and friends; `-K` reads a config that can set all of these.
fn curl(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    let spec = OptionSpec {
        short_values: "oDcKTbdFHAeEuUXxrwYyzCQtmP",
        long_values: &[
            "output",
            "dump-header",
            "cookie-jar",
            "config",
            "upload-file",
            "cookie",
            "data",
            "data-binary",
            "data-raw",
            "data-ascii",
            "data-urlencode",
            "form",
            "form-string",
            "header",
            "user-agent",
            "referer",
            "cert",
            "cacert",
            "key",
            "user",
            "proxy-user",
            "request",
            "proxy",
            "range",
            "write-out",
            "speed-limit",
            "speed-time",
            "time-cond",
            "continue-at",
            "quote",
            "telnet-option",
            "max-time",
            "ftp-port",
            "trace",
            "trace-ascii",
            "libcurl",
            "stderr",
            "etag-save",
            "etag-compare",
            "hsts",
            "alt-svc",
            "output-dir",
            "connect-timeout",
            "retry",
            "max-redirs",
            "resolve",
            "connect-to",
            "interface",
            "unix-socket",
            "abstract-unix-socket",
            "netrc-file",
            "url",
            "json",
            "variable",
        ],
        long_flags: &["remote-name", "remote-name-all", "netrc", "netrc-optional"],
        gnu_prefixes: false,
        stop_at_operand: false,
    };
    a.needs(Capability::Network);
    let items = scan(args, &spec);
    for item in &items {
        if let Item::Unknown(arg) = item {
            a.complex(format!(
                "`{}` is known only at run time and could be a curl option that writes",
                arg.display()
            ));
        }
    }
    if has(&items, &["-K", "--config"]) {
        a.complex("`curl -K` reads options, including output files, from a config file");
    }
    if has(
        &items,
        &["-n", "--netrc", "--netrc-optional", "--netrc-file"],
    ) {
        a.needs(Capability::Secrets);
        a.refuse(Refusal::no_mode_grants(Capability::Secrets, "curl --netrc"));
    }
    for w in values(
        &items,
        &[
            "-o",
            "--output",
            "-D",
            "--dump-header",
            "-c",
            "--cookie-jar",
            "--trace",
            "--trace-ascii",
            "--libcurl",
            "--stderr",
            "--etag-save",
            "--hsts",
            "--alt-svc",
        ],
    ) {
        if w.lit() != Some("-") {
            a.write_path(w, cwd, "curl");
        }
    }
    for r in values(
        &items,
        &[
            "-T",
            "--upload-file",
            "-K",
            "--config",
            "--cacert",
            "--cert",
            "--key",
            "-E",
        ],
    ) {
        if r.lit() != Some("-") {
            a.read_path(r, cwd);
        }
    }
    for d in values(
        &items,
        &[
            "-d",
            "--data",
            "--data-binary",
            "--data-urlencode",
            "--json",
            "-F",
            "--form",
            "-b",
            "--cookie",
        ],
    ) {
        if let Some(t) = d.lit() {
            let file = t
                .rsplit_once('@')
                .map(|(_, f)| f)
                .filter(|f| !f.is_empty() && (t.starts_with('@') || t.contains("=@")));
            if let Some(f) = file.and_then(|f| f.split(';').next()) {
                a.read_path(&Arg::Lit(f.to_owned()), cwd);
            }
        }
    }
    local_urls(a, &operands(&items), cwd);
    if has(&items, &["-O", "--remote-name", "--remote-name-all"]) {
        let dir = values(&items, &["--output-dir"])
            .last()
            .cloned()
            .unwrap_or(Arg::Lit(".".into()));
        a.write_path(&dir, cwd, "curl -O");
    }
}

/// wget: saves into the current directory (or `-P DIR`) unless `-O -` or `--spider`; `-e` runs
/// wgetrc commands, which can change all of that.
fn wget(a: &mut Analysis<'_>, name: &str, args: &[Arg], cwd: &Cwd) {
    let items = scan(
        args,
        &OptionSpec::gnu(
            "OoaPieUtTwQlADIXRBh",
            &[
                "output-document",
                "output-file",
                "append-output",
                "directory-prefix",
                "input-file",
                "execute",
                "user-agent",
                "tries",
                "timeout",
                "wait",
                "quota",
                "level",
                "accept",
                "reject",
                "domains",
                "include-directories",
                "exclude-directories",
                "base",
                "post-file",
                "post-data",
                "body-file",
                "config",
                "header",
                "user",
                "password",
                "load-cookies",
                "save-cookies",
                "ca-certificate",
                "certificate",
                "private-key",
                "default-page",
                "referer",
                "limit-rate",
            ],
            &["spider"],
        ),
    );
    a.needs(Capability::Network);
    if has(&items, &["-e", "--execute", "--config"]) {
        a.complex(format!(
            "`{name} -e` runs wgetrc commands that can change where it writes"
        ));
    }
    for r in values(
        &items,
        &[
            "-i",
            "--input-file",
            "--post-file",
            "--body-file",
            "--load-cookies",
            "--ca-certificate",
            "--certificate",
            "--private-key",
        ],
    ) {
        a.read_path(r, cwd);
    }
    for w in values(
        &items,
        &[
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "--save-cookies",
        ],
    ) {
        a.write_path(w, cwd, name);
    }
    let document = values(&items, &["-O", "--output-document"]).last().cloned();
    match document {
        Some(d) if d.lit() == Some("-") => {}
        Some(d) => a.write_path(&d, cwd, name),
        None if has(&items, &["--spider"]) => {}
        None => {
            let dir = values(&items, &["-P", "--directory-prefix"])
                .last()
                .cloned()
                .unwrap_or(Arg::Lit(".".into()));
            a.write_path(&dir, cwd, name);
        }
    }
    local_urls(a, &operands(&items), cwd);
}

/// `file://` URLs read local files: each is vetted as a read (`curl file:///etc/shadow`).
pub(crate) fn local_urls(a: &mut Analysis<'_>, urls: &[Arg], cwd: &Cwd) {
    for url in urls {
        if let Some(path) = url.lit().and_then(|u| u.strip_prefix("file://")) {
            let path = path.split(['?', '#']).next().unwrap_or(path);
            a.read_path(
                &Arg::Lit(if path.starts_with('/') {
                    path.to_owned()
                } else {
                    format!("/{path}")
                }),
                cwd,
            );
        }
    }
}
