//! Programs that only read, each with the options that make it write, read another file or run a
//! program.
//!
//! A program here is `READ_ONLY` unless one of its listed options is used. An option spear does not
//! list is assumed to be a harmless flag; the lists are of options that write, read a named file,
//! or run code, which are what matter. What a list cannot say (an option whose meaning depends on
//! its value, a subcommand, `@FILE`) is the entry's own `extra` check.
//!
//! Attacks stopped: an output file is a write target like any other (`info -o .git/hooks/x`,
//! `sort -o ~/.bashrc`, `ss -D`, `cloc --out`, `tree -R` in every directory); a lesskey file's
//! `#env` section sets LESSOPEN (`less --lesskey-src=F`, `-k F`), man's configuration names its
//! pager (`man -C F`), `bat --pager`, `nm --plugin`, a cow file is Perl (`cowsay -f ./x.cow`).

use spear_core::Refusal;

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, scan, values};
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// What the operands of a program are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operands {
    /// Files it reads.
    Read,
    /// Not paths (text, numbers, names).
    Text,
    /// `[input [output]]`: the second operand is written.
    ReadThenWrite,
}

/// A read-only program.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader {
    pub names: &'static [&'static str],
    pub opts: OptionSpec,
    /// Options whose value is a file it writes.
    pub writes: &'static [&'static str],
    /// Options whose value is a file it reads.
    pub reads: &'static [&'static str],
    /// Options that make it run another program or code.
    pub exec: &'static [&'static str],
    pub operands: Operands,
    /// What the option lists cannot say (an option whose meaning depends on its value, a
    /// subcommand), checked after them.
    pub extra: Option<Extra>,
}

/// A reader's own check of its scanned options and operands.
pub(crate) type Extra = fn(&mut Analysis<'_>, &str, &[Item], &[Arg], &Cwd);

const fn reader(
    names: &'static [&'static str],
    short: &'static str,
    long: &'static [&'static str],
) -> Reader {
    Reader {
        names,
        opts: OptionSpec::gnu(short, long, &[]),
        writes: &[],
        reads: &[],
        exec: &[],
        operands: Operands::Read,
        extra: None,
    }
}

const fn text(names: &'static [&'static str]) -> Reader {
    Reader {
        operands: Operands::Text,
        ..reader(names, "", &[])
    }
}

/// The read-only programs. Option names are written as they are canonicalised: `-o`,
/// `--output`.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::reader(reader(
        &[
            "cat",
            "tac",
            "rev",
            "comm",
            "tsort",
            "sum",
            "cksum",
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
            "shasum",
            "md5",
        ],
        "a",
        &["algorithm"],
    )),
    Programs::reader(reader(&["fmt"], "wpg", &["width", "prefix", "goal"])),
    Programs::reader(reader(
        &["head", "tail"],
        "nc",
        &[
            "lines",
            "bytes",
            "pid",
            "sleep-interval",
            "max-unchanged-stats",
        ],
    )),
    Programs::reader(Reader {
        reads: &["--files0-from"],
        ..reader(&["wc"], "", &["files0-from"])
    }),
    Programs::reader(reader(
        &["nl"],
        "bdfhilnsvw",
        &[
            "body-numbering",
            "section-delimiter",
            "footer-numbering",
            "header-numbering",
            "line-increment",
            "join-blank-lines",
            "number-format",
            "number-separator",
            "starting-line-number",
            "number-width",
        ],
    )),
    Programs::reader(reader(
        &["cut"],
        "bcdf",
        &[
            "bytes",
            "characters",
            "delimiter",
            "fields",
            "output-delimiter",
        ],
    )),
    Programs::reader(reader(&["paste"], "d", &["delimiters"])),
    Programs::reader(reader(&["fold"], "w", &["width"])),
    Programs::reader(reader(&["expand", "unexpand"], "t", &["tabs"])),
    Programs::reader(reader(
        &["column"],
        "cstoONRHWEd",
        &[
            "columns",
            "separator",
            "output-separator",
            "table-columns",
            "table-name",
            "table-order",
            "table-right",
            "table-hide",
            "table-wrap",
            "table-noextreme",
        ],
    )),
    Programs::reader(reader(
        &["od"],
        "AjNSt",
        &[
            "address-radix",
            "skip-bytes",
            "read-bytes",
            "format",
            "endian",
        ],
    )),
    Programs::reader(Reader {
        extra: Some(response_files),
        ..reader(
            &["strings"],
            "nteT",
            &["bytes", "radix", "encoding", "target", "output-separator"],
        )
    }),
    // GNU's have no output option; the BSD and macOS ones take `-i IN` and `-o OUT`.
    Programs::reader(Reader {
        writes: &["-o", "--output"],
        reads: &["-i", "--input"],
        ..reader(
            &["base64", "base32", "basenc"],
            "wio",
            &["wrap", "input", "output"],
        )
    }),
    Programs::reader(reader(
        &["ls", "dir", "vdir"],
        "ITw",
        &[
            "ignore",
            "hide",
            "tabsize",
            "width",
            "format",
            "sort",
            "time",
            "time-style",
            "block-size",
            "indicator-style",
            "quoting-style",
        ],
    )),
    Programs::reader(reader(&["stat"], "ct", &["format", "printf", "cached"])),
    Programs::reader(Reader {
        reads: &["-m", "--magic-file", "-f", "--files-from"],
        exec: &["-C", "--compile"],
        ..reader(
            &["file"],
            "efFmP",
            &[
                "exclude",
                "exclude-quiet",
                "files-from",
                "separator",
                "magic-file",
                "parameter",
            ],
        )
    }),
    Programs::reader(Reader {
        reads: &["-X", "--exclude-from", "--files0-from"],
        ..reader(
            &["du"],
            "BdtX",
            &[
                "block-size",
                "max-depth",
                "threshold",
                "exclude",
                "exclude-from",
                "files0-from",
                "time-style",
            ],
        )
    }),
    Programs::reader(reader(
        &["df"],
        "Btx",
        &["block-size", "type", "exclude-type"],
    )),
    Programs::reader(Reader {
        writes: &["-o"],
        reads: &["--gitfile", "--infofile"],
        extra: Some(tree),
        ..reader(
            &["tree"],
            "LPIoHT",
            &[
                "charset",
                "filelimit",
                "timefmt",
                "sort",
                "gitfile",
                "infofile",
            ],
        )
    }),
    Programs::reader(Reader {
        reads: &["--relative-to", "--relative-base"],
        ..reader(&["realpath"], "", &["relative-to", "relative-base"])
    }),
    Programs::reader(reader(&["readlink", "namei", "lsattr", "getfacl"], "", &[])),
    Programs::reader(Reader {
        reads: &["-X", "--exclude-from", "--from-file", "--to-file"],
        ..reader(
            &["diff"],
            "CUFILSxXWD",
            &[
                "show-function-line",
                "ignore-matching-lines",
                "label",
                "starting-file",
                "exclude",
                "exclude-from",
                "width",
                "ifdef",
                "from-file",
                "to-file",
                "line-format",
                "old-line-format",
                "new-line-format",
                "unchanged-line-format",
                "old-group-format",
                "new-group-format",
                "changed-group-format",
                "unchanged-group-format",
                "palette",
                "horizon-lines",
                "tabsize",
            ],
        )
    }),
    Programs::reader(Reader {
        exec: &["--diff-program"],
        writes: &["-o", "--output"],
        ..reader(
            &["sdiff", "diff3"],
            "owL",
            &["output", "width", "diff-program", "label"],
        )
    }),
    Programs::reader(reader(&["cmp"], "in", &["ignore-initial", "bytes"])),
    Programs::reader(reader(&["join"], "aejot12v", &[])),
    Programs::strict_reader(Reader {
        writes: &["-o", "--output", "-T", "--temporary-directory"],
        reads: &["--files0-from", "--random-source"],
        exec: &["--compress-program"],
        ..Reader {
            opts: OptionSpec::gnu(
                "kotST",
                &[
                    "key",
                    "output",
                    "field-separator",
                    "buffer-size",
                    "temporary-directory",
                    "batch-size",
                    "compress-program",
                    "files0-from",
                    "random-source",
                    "parallel",
                    "sort",
                ],
                &[],
            )
            .flags(
                "bdfgiMhnRrcCmsuz",
                &[
                    "ignore-leading-blanks",
                    "dictionary-order",
                    "ignore-case",
                    "general-numeric-sort",
                    "ignore-nonprinting",
                    "month-sort",
                    "human-numeric-sort",
                    "numeric-sort",
                    "random-sort",
                    "reverse",
                    "version-sort",
                    "check",
                    "merge",
                    "stable",
                    "unique",
                    "zero-terminated",
                    "debug",
                ],
            ),
            ..reader(&["sort"], "", &[])
        }
    }),
    Programs::reader(Reader {
        operands: Operands::ReadThenWrite,
        ..reader(
            &["uniq"],
            "fsw",
            &["skip-fields", "skip-chars", "check-chars"],
        )
    }),
    Programs::reader(Reader {
        operands: Operands::ReadThenWrite,
        ..reader(
            &["xxd"],
            "cglnosC",
            &["cols", "groupsize", "len", "name", "seek"],
        )
    }),
    Programs::reader(Reader {
        reads: &["-f"],
        ..reader(&["hexdump", "hd"], "efns", &[])
    }),
    Programs::reader(Reader {
        writes: &["-o", "--output"],
        ..reader(&["iconv"], "fto", &["from-code", "to-code", "output"])
    }),
    // A lesskey file (compiled or source) has an `#env` section that can set LESSOPEN, which
    // names a program less runs on every file it opens.
    Programs::reader(Reader {
        writes: &["-o", "-O", "--log-file", "--LOG-FILE"],
        reads: &["-k", "--lesskey-file", "--lesskey-src", "-T", "--tag-file"],
        exec: &["-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"],
        ..reader(
            &["less", "more", "most", "pg"],
            "bhjkoOpPtTxyz#",
            &[
                "log-file",
                "LOG-FILE",
                "lesskey-file",
                "pattern",
                "prompt",
                "tag",
                "tag-file",
                "tabs",
                "max-back-scroll",
                "max-forw-scroll",
                "window",
                "shift",
                "buffers",
                "jump-target",
                "lesskey-src",
                "lesskey-content",
            ],
        )
    }),
    // man's configuration file defines the pager and formatters it runs.
    Programs::reader(Reader {
        reads: &["-l"],
        exec: &[
            "-C",
            "--config-file",
            "-P",
            "--pager",
            "-H",
            "--html",
            "-X",
            "--gxditview",
            "-t",
            "--troff",
            "-T",
            "--troff-device",
        ],
        ..reader(
            &["man"],
            "CMPLmSseRT",
            &[
                "config-file",
                "manpath",
                "pager",
                "locale",
                "systems",
                "sections",
                "extension",
                "recode",
                "html",
                "prompt",
            ],
        )
    }),
    // xmllint's `--shell` reads commands that save and write files.
    Programs::reader(Reader {
        writes: &["--output"],
        exec: &["--shell"],
        ..reader(
            &["xmllint"],
            "",
            &[
                "output", "path", "xpath", "schema", "relaxng", "dtdvalid", "encode",
            ],
        )
    }),
    // binutils read more options from `@FILE`; nm loads `--plugin` shared objects.
    Programs::reader(Reader {
        exec: &["--plugin"],
        extra: Some(response_files),
        ..reader(
            &["nm", "size", "readelf", "objdump", "addr2line", "c++filt"],
            "",
            &[
                "target",
                "section",
                "disassemble",
                "start-address",
                "stop-address",
                "format",
                "plugin",
            ],
        )
    }),
    Programs::reader(reader(&["wdiff", "colordiff"], "", &[])),
    Programs::reader(reader(
        &["shellcheck"],
        "efsSoPW",
        &[
            "exclude",
            "format",
            "shell",
            "severity",
            "enable",
            "source-path",
            "wiki-link-count",
            "rcfile",
        ],
    )),
    Programs::reader(Reader {
        exec: &["--pager"],
        extra: Some(bat),
        ..reader(
            &["bat", "batcat"],
            "lmHr",
            &[
                "pager",
                "source",
                "target",
                "language",
                "map-syntax",
                "highlight-line",
                "line-range",
                "theme",
                "style",
                "tabs",
                "wrap",
                "terminal-width",
                "color",
                "italic-text",
                "decorations",
                "file-name",
                "diff-context",
            ],
        )
    }),
    Programs::reader(reader(
        &["eza", "exa", "lsd"],
        "LIT",
        &["level", "ignore-glob", "sort", "time", "time-style"],
    )),
    // tokei's `-o` is a format, printed; tokei writes nothing.
    Programs::reader(reader(
        &["tokei"],
        "tecsoi",
        &[
            "type",
            "exclude",
            "columns",
            "sort",
            "output",
            "input",
            "languages",
        ],
    )),
    Programs::reader(Reader {
        writes: &[
            "--report-file",
            "--out",
            "--sql",
            "--write-lang-def",
            "--write-lang-def-incl-dup",
            "--categorized",
            "--counted",
            "--found",
            "--ignored",
            "--unique",
            "--xsl",
        ],
        reads: &[
            "--list-file",
            "--exclude-list-file",
            "--read-lang-def",
            "--force-lang-def",
            "--diff-list-file",
            "--config",
        ],
        exec: &["--extract-with", "--config"],
        extra: Some(cloc),
        ..reader(
            &["cloc"],
            "",
            &[
                "report-file",
                "out",
                "sql",
                "write-lang-def",
                "write-lang-def-incl-dup",
                "categorized",
                "counted",
                "found",
                "ignored",
                "unique",
                "xsl",
                "list-file",
                "exclude-list-file",
                "read-lang-def",
                "force-lang-def",
                "diff-list-file",
                "config",
                "extract-with",
                "vcs",
                "exclude-dir",
                "exclude-ext",
                "exclude-lang",
                "include-lang",
                "include-ext",
                "match-f",
                "not-match-f",
                "match-d",
                "not-match-d",
                "strip-comments",
                "strip-code",
                "original-dir",
                "timeout",
                "max-file-size",
                "csv-delimiter",
            ],
        )
    }),
    Programs::reader(Reader {
        writes: &["-o", "--output"],
        extra: Some(scc),
        ..reader(
            &["scc"],
            "fiMsxo",
            &[
                "format",
                "include-ext",
                "not-match",
                "sort",
                "exclude-ext",
                "exclude-dir",
                "output",
                "format-multi",
                "remap-all",
                "remap-unknown",
                "sql-project",
                "count-as",
            ],
        )
    }),
    Programs::reader(Reader {
        writes: &["-o", "--output", "--dribble"],
        reads: &[
            "-f",
            "--file",
            "-d",
            "--directory",
            "--restore",
            "--init-file",
        ],
        ..reader(
            &["info"],
            "dfknov",
            &[
                "apropos",
                "directory",
                "dribble",
                "file",
                "index-search",
                "node",
                "output",
                "restore",
                "variable",
                "init-file",
                "debug",
            ],
        )
    }),
    Programs::reader(Reader {
        writes: &["-D", "--diag"],
        reads: &["-F", "--filter"],
        operands: Operands::Text,
        extra: Some(ss),
        ..reader(
            &["ss"],
            "DFfAN",
            &["diag", "filter", "family", "query", "socket", "net"],
        )
    }),
    // A cow file is Perl code, which cowsay runs; the ones on COWPATH are the system's.
    Programs::reader(Reader {
        operands: Operands::Text,
        extra: Some(cowsay),
        ..reader(&["cowsay", "cowthink"], "efTW", &[])
    }),
    Programs::reader(reader(
        &["lolcat"],
        "pFSds",
        &["spread", "freq", "seed", "duration", "speed"],
    )),
    // neofetch's configuration file is a bash script it sources; fastfetch's can hold Command
    // modules; screenfetch takes screenshots with a command (`-s`, `-S CMD`) and uploads them.
    Programs::reader(Reader {
        reads: &["--ascii", "--source", "--image"],
        operands: Operands::Text,
        extra: Some(fetchers),
        ..reader(&["neofetch"], "", &["config", "ascii", "source", "image"])
    }),
    Programs::reader(Reader {
        exec: &["-c", "--config", "--load-config"],
        operands: Operands::Text,
        extra: Some(fetchers),
        ..reader(
            &["fastfetch"],
            "cls",
            &["config", "load-config", "logo", "structure"],
        )
    }),
    Programs::reader(Reader {
        exec: &["-s", "-S", "-u"],
        reads: &["-a"],
        operands: Operands::Text,
        ..reader(&["screenfetch"], "ADoSca", &[])
    }),
    Programs::reader(text(&[
        "echo",
        "true",
        "false",
        ":",
        "pwd",
        "whoami",
        "id",
        "uname",
        "nproc",
        "arch",
        "logname",
        "groups",
        "tty",
        "uptime",
        "free",
        "cal",
        "ncal",
        "seq",
        "yes",
        "sleep",
        "factor",
        "numfmt",
        "expr",
        "getconf",
        "locale",
        "printenv",
        "hostid",
        "users",
        "who",
        "w",
        "lscpu",
        "lsblk",
        "lsusb",
        "lspci",
        "lsmod",
        "ps",
        "pgrep",
        "pidof",
        "top",
        "htop",
        "btop",
        "vmstat",
        "iostat",
        "mpstat",
        "basename",
        "dirname",
        "which",
        "type",
        "whereis",
        "whatis",
        "apropos",
        "help",
        "tput",
        "clear",
        "reset",
        "tr",
        "envsubst",
        "getent",
        "lsof",
        "netstat",
        "times",
        "dirs",
        "umask",
        "ulimit",
        "shift",
        "return",
        "exit",
        "break",
        "continue",
        "caller",
        "disown",
        "bg",
        "fg",
        "suspend",
        "logout",
        "stty",
        "sync",
        "figlet",
        "banner",
        "xdg-user-dir",
        "systemd-detect-virt",
        "uuidgen",
        "mcookie",
        "lsb_release",
        "acpi",
    ])),
];

/// Analyses a read-only program by its table entry.
pub(crate) fn analyse(a: &mut Analysis<'_>, c: &Call<'_>, spec: &Reader, cwd: &mut Cwd) {
    let name = c.name;
    let items = scan(c.args, &spec.opts);
    c.check_options(a, &items, &spec.opts);
    let risky_options = !spec.writes.is_empty() || !spec.exec.is_empty() || spec.extra.is_some();
    let mut operands = Vec::new();
    for item in &items {
        match item {
            Item::Opt { name: opt, value } => {
                if spec.exec.contains(&opt.as_str()) {
                    a.complex(format!(
                        "`{name} {opt}` can run another program or code spear cannot see"
                    ));
                }
                if let Some(v) = value {
                    if spec.writes.contains(&opt.as_str()) {
                        a.write_path(v, cwd, name);
                    } else if spec.reads.contains(&opt.as_str()) {
                        a.read_path(v, cwd);
                    }
                } else if spec.writes.contains(&opt.as_str()) {
                    a.mutates(format!("`{name} {opt}` writes a file"));
                }
            }
            Item::Unknown(arg) => {
                if risky_options {
                    a.complex(format!(
                        "`{}` is known only at run time and could become an option of {name} that \
                         writes or runs a program",
                        arg.display()
                    ));
                }
                operands.push(arg.clone());
            }
            Item::Operand(arg) => operands.push(arg.clone()),
        }
    }
    match spec.operands {
        Operands::Text => {}
        Operands::Read => {
            for op in &operands {
                if op.lit() != Some("-") {
                    a.read_path(op, cwd);
                }
            }
        }
        Operands::ReadThenWrite => {
            if let Some(input) = operands.first()
                && input.lit() != Some("-")
            {
                a.read_path(input, cwd);
            }
            if let Some(output) = operands.get(1)
                && output.lit() != Some("-")
            {
                a.write_path(output, cwd, name);
            }
        }
    }
    if matches!(name, "less" | "more" | "most" | "pg")
        && operands.iter().any(|o| o.display().starts_with('+'))
    {
        a.complex(format!(
            "`{name} +command` runs a {name} command, which can run a shell"
        ));
    }
    if let Some(extra) = spec.extra {
        extra(a, name, &items, &operands, cwd);
    }
}

/// binutils: an operand `@FILE` is a file of more options (`--plugin` among them for nm).
fn response_files(a: &mut Analysis<'_>, name: &str, _items: &[Item], operands: &[Arg], cwd: &Cwd) {
    for op in operands {
        if let Some(file) = op.display().strip_prefix('@') {
            a.complex(format!(
                "`{name} @{file}` reads more options from a file spear does not read"
            ));
            a.read_path(&Arg::Lit(file.to_owned()), cwd);
        }
    }
}

/// `tree -R` runs tree again in every directory with `-o 00Tree.html`.
fn tree(a: &mut Analysis<'_>, _name: &str, items: &[Item], operands: &[Arg], cwd: &Cwd) {
    if has(items, &["-R"]) {
        if operands.is_empty() {
            a.write_path(&Arg::Lit(".".into()), cwd, "tree -R");
        }
        for dir in operands {
            a.write_path(dir, cwd, "tree -R");
        }
    }
}

/// bat: `--generate-config-file` writes the user's configuration; `bat cache --build` and
/// `--clear` write its cache, under `--target DIR` or in the home directory.
fn bat(a: &mut Analysis<'_>, name: &str, items: &[Item], operands: &[Arg], cwd: &Cwd) {
    if has(items, &["--generate-config-file"]) {
        a.refuse(Refusal::write_outside_roots(format!(
            "{name} --generate-config-file (the configuration in the home directory)"
        )));
    }
    if operands.first().and_then(Arg::lit) != Some("cache") {
        return;
    }
    for source in values(items, &["--source"]) {
        a.read_path(source, cwd);
    }
    if has(items, &["-b", "--build", "-c", "--clear"]) {
        match values(items, &["--target"]).last() {
            Some(target) => a.write_path(target, cwd, &format!("{name} cache")),
            None => a.refuse(Refusal::write_outside_roots(format!(
                "{name} cache (the cache in the home directory; pass --target inside the \
                 workspace)"
            ))),
        }
    }
}

/// cloc: `--vcs` names a program unless it is git or svn; `--strip-comments`, `--strip-code` and
/// `--original-dir` write stripped copies into the current directory.
fn cloc(a: &mut Analysis<'_>, _name: &str, items: &[Item], _operands: &[Arg], cwd: &Cwd) {
    for vcs in values(items, &["--vcs"]) {
        if !matches!(vcs.lit(), Some("git" | "svn" | "auto")) {
            a.complex(format!(
                "`cloc --vcs={}` runs that command to list the files",
                vcs.display()
            ));
        }
    }
    if has(
        items,
        &["--strip-comments", "--strip-code", "--original-dir"],
    ) {
        a.write_path(&Arg::Lit(".".into()), cwd, "cloc --strip-comments");
    }
}

/// scc: `--format-multi "tabular:stdout,html:FILE"` writes each FILE.
fn scc(a: &mut Analysis<'_>, _name: &str, items: &[Item], _operands: &[Arg], cwd: &Cwd) {
    for spec in values(items, &["--format-multi"]) {
        let Some(text) = spec.lit() else {
            a.complex("`scc --format-multi` writes files named at run time");
            a.mutates("scc --format-multi writes files named at run time");
            continue;
        };
        for output in text
            .split(',')
            .filter_map(|f| f.split_once(':').map(|(_, o)| o))
        {
            if !matches!(output, "stdout" | "") {
                a.write_path(&Arg::Lit(output.to_owned()), cwd, "scc --format-multi");
            }
        }
    }
}

/// `ss -K` closes sockets (only the sandbox's own are visible).
fn ss(a: &mut Analysis<'_>, _name: &str, items: &[Item], _operands: &[Arg], _cwd: &Cwd) {
    if has(items, &["-K", "--kill"]) {
        a.complex("`ss -K` closes sockets (only the sandbox's own are visible)");
    }
}

/// cowsay and cowthink: `-f FILE` with a path runs that cow file's Perl code; a bare name is looked
/// up on COWPATH, among the system's cows.
fn cowsay(a: &mut Analysis<'_>, name: &str, items: &[Item], _operands: &[Arg], cwd: &Cwd) {
    for cow in values(items, &["-f"]) {
        if cow.lit().is_none_or(|c| c.contains('/')) {
            a.complex(format!(
                "`{name} -f {}` runs the Perl code of a cow file",
                cow.display()
            ));
            a.read_path(cow, cwd);
        }
    }
}

/// neofetch sources its `--config` (a bash script) unless it is `none`; fastfetch's `--command-*`
/// options are shell commands it runs, and `--gen-config` writes a configuration file.
fn fetchers(a: &mut Analysis<'_>, name: &str, items: &[Item], _operands: &[Arg], cwd: &Cwd) {
    for item in items {
        let Item::Opt { name: opt, value } = item else {
            continue;
        };
        match (name, opt.as_str()) {
            ("neofetch", "--config") => {
                if let Some(config) = value
                    && !matches!(config.lit(), Some("none" | "off"))
                {
                    a.complex(format!(
                        "`neofetch --config {}` runs that file as a bash script",
                        config.display()
                    ));
                    a.read_path(config, cwd);
                }
            }
            ("fastfetch", o) if o.starts_with("--command") => {
                a.complex(format!("`fastfetch {o}` runs shell commands"));
            }
            ("fastfetch", "--gen-config" | "--gen-config-force") => match value {
                Some(file) => a.write_path(file, cwd, "fastfetch --gen-config"),
                None => a.refuse(Refusal::write_outside_roots(
                    "fastfetch --gen-config (the configuration in the home directory; write \
                     one inside the workspace with --gen-config=FILE)",
                )),
            },
            // Every other option only chooses what is printed.
            _ => {}
        }
    }
}
