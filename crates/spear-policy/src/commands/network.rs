//! Programs that reach the network, and what they write on the way.

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// The network programs.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::complex(&["curl"], curl),
    Programs::complex(&["wget", "wget2"], wget),
    Programs::harmless(
        &[
            "ping",
            "ping6",
            "traceroute",
            "tracepath",
            "mtr",
            "dig",
            "nslookup",
            "host",
            "whois",
            "drill",
            "kdig",
            "delv",
            "tldr",
        ],
        |a, _, _| a.needs(Capability::Network),
    ),
    Programs::harmless(
        &[
            "nc", "ncat", "netcat", "socat", "telnet", "ftp", "tftp", "lftp", "nmap", "http",
            "https", "xh", "aria2c", "lynx", "w3m", "links", "elinks", "httpie", "websocat",
            "grpcurl", "openssl",
        ],
        clients,
    ),
    Programs::harmless(
        &[
            "ssh",
            "scp",
            "sftp",
            "sshfs",
            "ssh-copy-id",
            "ssh-keygen",
            "ssh-add",
            "ssh-agent",
            "ssh-keyscan",
            "mosh",
            "autossh",
            "sshpass",
        ],
        |a, c, _| {
            a.needs(Capability::Ssh);
            a.refuse(Refusal::no_mode_grants(Capability::Ssh, c.name));
        },
    ),
];

/// Clients that can run commands or write files on the network's behalf: `SHELL_COMPLEX`.
fn clients(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    a.needs(Capability::Network);
    a.complex(format!(
        "`{}` can run commands or write files on the network's behalf",
        c.name
    ));
    for arg in c.args {
        a.unknown_operand(arg, cwd);
    }
}

/// curl's options: the ones that take a value, then the flags.
const CURL_OPTIONS: OptionSpec = OptionSpec {
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
    long_flags: &[
        "remote-name",
        "remote-name-all",
        "netrc",
        "netrc-optional",
        "silent",
        "show-error",
        "location",
        "location-trusted",
        "fail",
        "fail-with-body",
        "fail-early",
        "head",
        "include",
        "insecure",
        "verbose",
        "remote-header-name",
        "compressed",
        "http1.0",
        "http1.1",
        "http2",
        "http2-prior-knowledge",
        "http3",
        "ipv4",
        "ipv6",
        "globoff",
        "get",
        "junk-session-cookies",
        "list-only",
        "manual",
        "proxytunnel",
        "remote-time",
        "parallel",
        "append",
        "use-ascii",
        "no-progress-meter",
        "progress-bar",
        "create-dirs",
        "ssl",
        "ssl-reqd",
        "tlsv1",
        "tlsv1.0",
        "tlsv1.1",
        "tlsv1.2",
        "tlsv1.3",
        "raw",
        "no-buffer",
        "no-keepalive",
        "retry-all-errors",
        "retry-connrefused",
        "styled-output",
        "no-styled-output",
        "digest",
        "basic",
        "ntlm",
        "negotiate",
        "anyauth",
        "path-as-is",
        "disable",
        "no-sessionid",
        "tr-encoding",
        "ssl-no-revoke",
        "crlf",
        "sslv2",
        "sslv3",
        "no-alpn",
        "no-npn",
        "tcp-nodelay",
        "tcp-fastopen",
        "next",
        "trace-time",
        "trace-ids",
    ],
    short_flags: "sSLfIikvOJnN#0123456ghGjlMpqRZaBV",
    gnu_prefixes: false,
    stop_at_operand: false,
};

/// curl: writes `-o`/`--output`, `-O` (into the current directory or `--output-dir`), `-D`,
/// `-c`, `--trace` and friends; `-K` reads a config that can set all of these.
fn curl(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = CURL_OPTIONS;
    a.needs(Capability::Network);
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
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

/// wget's options: the ones that take a value, then the flags.
const WGET_OPTIONS: OptionSpec = OptionSpec::gnu(
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
        "max-threads",
    ],
    &[],
)
.flags(
    "qvcNrkpmbxSE46KHLFdnV",
    &[
        "spider",
        "quiet",
        "verbose",
        "no-verbose",
        "continue",
        "timestamping",
        "recursive",
        "convert-links",
        "page-requisites",
        "mirror",
        "background",
        "force-directories",
        "server-response",
        "adjust-extension",
        "html-extension",
        "inet4-only",
        "inet6-only",
        "backup-converted",
        "span-hosts",
        "relative",
        "force-html",
        "no-parent",
        "no-directories",
        "no-host-directories",
        "no-clobber",
        "no-check-certificate",
        "content-disposition",
        "trust-server-names",
        "ignore-case",
        "no-cookies",
        "keep-session-cookies",
        "show-progress",
        "progress",
        "no-config",
        "delete-after",
        "no-dns-cache",
        "https-only",
        "retry-connrefused",
        "random-wait",
        "compression",
        "ask-password",
        "auth-no-challenge",
        "no-http-keep-alive",
    ],
);

/// wget: saves into the current directory (or `-P DIR`) unless `-O -` or `--spider`; `-e` runs
/// wgetrc commands, which can change all of that.
fn wget(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = WGET_OPTIONS;
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
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
