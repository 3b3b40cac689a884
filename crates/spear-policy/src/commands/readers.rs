//! Programs that only read, each with the options that make it write, read another file or run a
//! program.
//!
//! A program here is `READ_ONLY` unless one of its listed options is used. An option spear does not
//! list is assumed to be a harmless flag; the lists are of options that write, read a named file,
//! or run code, which are what matter.

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, scan};
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
}

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
    }
}

const fn text(names: &'static [&'static str]) -> Reader {
    Reader {
        operands: Operands::Text,
        ..reader(names, "", &[])
    }
}

/// The table. Option names are written as they are canonicalised: `-o`, `--output`.
pub(crate) static READERS: &[Reader] = &[
    reader(
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
    ),
    reader(&["fmt"], "wpg", &["width", "prefix", "goal"]),
    reader(
        &["head", "tail"],
        "nc",
        &[
            "lines",
            "bytes",
            "pid",
            "sleep-interval",
            "max-unchanged-stats",
        ],
    ),
    Reader {
        reads: &["--files0-from"],
        ..reader(&["wc"], "", &["files0-from"])
    },
    reader(
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
    ),
    reader(
        &["cut"],
        "bcdf",
        &[
            "bytes",
            "characters",
            "delimiter",
            "fields",
            "output-delimiter",
        ],
    ),
    reader(&["paste"], "d", &["delimiters"]),
    reader(&["fold"], "w", &["width"]),
    reader(&["expand", "unexpand"], "t", &["tabs"]),
    reader(
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
    ),
    reader(
        &["od"],
        "AjNSt",
        &[
            "address-radix",
            "skip-bytes",
            "read-bytes",
            "format",
            "endian",
        ],
    ),
    reader(
        &["strings"],
        "nteT",
        &["bytes", "radix", "encoding", "target", "output-separator"],
    ),
    reader(&["base64", "base32", "basenc"], "w", &["wrap"]),
    reader(
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
    ),
    reader(&["stat"], "ct", &["format", "printf", "cached"]),
    Reader {
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
    },
    Reader {
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
    },
    reader(&["df"], "Btx", &["block-size", "type", "exclude-type"]),
    Reader {
        writes: &["-o"],
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
    },
    Reader {
        reads: &["--relative-to", "--relative-base"],
        ..reader(&["realpath"], "", &["relative-to", "relative-base"])
    },
    reader(&["readlink", "namei", "lsattr", "getfacl"], "", &[]),
    Reader {
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
    },
    Reader {
        exec: &["--diff-program"],
        writes: &["-o", "--output"],
        ..reader(
            &["sdiff", "diff3"],
            "owL",
            &["output", "width", "diff-program", "label"],
        )
    },
    reader(&["cmp"], "in", &["ignore-initial", "bytes"]),
    reader(&["join"], "aejot12v", &[]),
    Reader {
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
            ),
            ..reader(&["sort"], "", &[])
        }
    },
    Reader {
        operands: Operands::ReadThenWrite,
        ..reader(
            &["uniq"],
            "fsw",
            &["skip-fields", "skip-chars", "check-chars"],
        )
    },
    Reader {
        operands: Operands::ReadThenWrite,
        ..reader(
            &["xxd"],
            "cglnosC",
            &["cols", "groupsize", "len", "name", "seek"],
        )
    },
    Reader {
        reads: &["-f"],
        ..reader(&["hexdump", "hd"], "efns", &[])
    },
    Reader {
        writes: &["-o", "--output"],
        ..reader(&["iconv"], "fto", &["from-code", "to-code", "output"])
    },
    Reader {
        writes: &["-o", "-O", "--log-file", "--LOG-FILE"],
        reads: &["-k", "--lesskey-file", "-T", "--tag-file"],
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
            ],
        )
    },
    Reader {
        reads: &["-l"],
        exec: &[
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
    },
    Reader {
        writes: &["--output"],
        ..reader(
            &["xmllint"],
            "",
            &[
                "output", "path", "xpath", "schema", "relaxng", "dtdvalid", "encode",
            ],
        )
    },
    reader(
        &["nm", "size", "readelf", "objdump", "addr2line", "c++filt"],
        "",
        &[
            "target",
            "section",
            "disassemble",
            "start-address",
            "stop-address",
            "format",
        ],
    ),
    reader(&["wdiff", "colordiff"], "", &[]),
    reader(
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
    ),
    reader(
        &["bat", "batcat"],
        "lpmHrL",
        &[
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
    ),
    reader(
        &["eza", "exa", "lsd"],
        "LIT",
        &["level", "ignore-glob", "sort", "time", "time-style"],
    ),
    reader(
        &["tokei", "cloc", "scc"],
        "tecs",
        &[
            "type",
            "exclude",
            "columns",
            "sort",
            "output",
            "exclude-dir",
            "include-lang",
            "report-file",
            "out",
        ],
    ),
    text(&[
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
        "info",
        "help",
        "tput",
        "clear",
        "reset",
        "tr",
        "envsubst",
        "getent",
        "lsof",
        "ss",
        "netstat",
        "jobs",
        "wait",
        "times",
        "dirs",
        "umask",
        "ulimit",
        "shift",
        "getopts",
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
        "hash",
        "stty",
        "sync",
        "cowsay",
        "figlet",
        "lolcat",
        "banner",
        "xdg-user-dir",
        "systemd-detect-virt",
        "uuidgen",
        "mcookie",
        "lsb_release",
        "neofetch",
        "fastfetch",
        "screenfetch",
        "sensors",
        "acpi",
    ]),
];

/// Finds the reader entry for `name`.
pub(crate) fn find(name: &str) -> Option<&'static Reader> {
    READERS.iter().find(|r| r.names.contains(&name))
}

/// Analyses a read-only program by its table entry.
pub(crate) fn analyse(a: &mut Analysis<'_>, name: &str, spec: &Reader, args: &[Arg], cwd: &Cwd) {
    let items = scan(args, &spec.opts);
    let risky_options = !spec.writes.is_empty() || !spec.exec.is_empty();
    let mut operands = Vec::new();
    for item in &items {
        match item {
            Item::Opt { name: opt, value } => {
                if spec.exec.contains(&opt.as_str()) {
                    a.complex(format!("`{name} {opt}` runs another program"));
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
}
