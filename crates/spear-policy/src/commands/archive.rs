//! Archivers and compressors: what they extract or rewrite, and the options that run programs.

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::writers::is_remote_spec;
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// The archivers and compressors: each can write files through its options, so an option they do
/// not know is `SHELL_COMPLEX` (the readers of compressed files excepted).
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::complex(&["tar", "gtar", "bsdtar"], tar),
    Programs::complex(&["unzip"], unzip),
    Programs::complex(&["zip"], zip),
    Programs::harmless(&["7z", "7za", "7zr"], seven_zip),
    Programs::complex(
        &[
            "gzip",
            "gunzip",
            "bzip2",
            "bunzip2",
            "xz",
            "unxz",
            "lzma",
            "unlzma",
            "zstd",
            "unzstd",
            "lz4",
            "lzop",
            "compress",
            "uncompress",
            "pigz",
            "unpigz",
            "brotli",
        ],
        compressor,
    ),
    Programs::harmless(
        &[
            "zcat", "bzcat", "xzcat", "zstdcat", "lz4cat", "zless", "zmore", "zdiff", "zcmp",
        ],
        |a, c, cwd| {
            for op in operands(&scan(c.args, &OptionSpec::gnu("", &[], &[]))) {
                a.read_path(&op, cwd);
            }
        },
    ),
];

const TAR_EXEC: &[&str] = &[
    "--to-command",
    "--checkpoint-action",
    "-I",
    "--use-compress-program",
    "-F",
    "--info-script",
    "--new-volume-script",
    "--rsh-command",
    "--rmt-command",
];

/// tar's options: the ones that take a value, then the flags.
const TAR_OPTIONS: OptionSpec = OptionSpec::gnu(
    "fCbIFgHKLNTVX",
    &[
        "file",
        "directory",
        "blocking-factor",
        "use-compress-program",
        "info-script",
        "new-volume-script",
        "listed-incremental",
        "starting-file",
        "tape-length",
        "newer",
        "after-date",
        "newer-mtime",
        "files-from",
        "volno-file",
        "label",
        "exclude",
        "exclude-from",
        "to-command",
        "checkpoint-action",
        "rsh-command",
        "rmt-command",
        "owner",
        "group",
        "mode",
        "mtime",
        "transform",
        "xform",
        "format",
        "record-size",
        "index-file",
        "strip-components",
        "suffix",
        "quoting-style",
        "sort",
        "warning",
        "level",
        "exclude-tag",
        "exclude-tag-all",
        "exclude-tag-under",
        "pax-option",
        "hole-detection",
        "xattrs-include",
        "xattrs-exclude",
    ],
    &[],
)
// Options with an optional argument (`--checkpoint`, `--backup`...) never take the next word;
// they are flags here, with the others.
.flags(
    "AcdrtuxzjJZavkmoOpPsSUWwhiBGMRln",
    &[
        "checkpoint",
        "backup",
        "occurrence",
        "one-top-level",
        "atime-preserve",
        "extract",
        "get",
        "create",
        "append",
        "update",
        "list",
        "diff",
        "compare",
        "delete",
        "to-stdout",
        "force-local",
        "remove-files",
        "verbose",
        "gzip",
        "gunzip",
        "ungzip",
        "bzip2",
        "xz",
        "lzma",
        "lzip",
        "lzop",
        "zstd",
        "auto-compress",
        "no-auto-compress",
        "keep-old-files",
        "keep-newer-files",
        "skip-old-files",
        "overwrite",
        "overwrite-dir",
        "no-overwrite-dir",
        "unlink-first",
        "recursive-unlink",
        "preserve-permissions",
        "same-permissions",
        "preserve",
        "same-owner",
        "no-same-owner",
        "no-same-permissions",
        "numeric-owner",
        "touch",
        "absolute-names",
        "dereference",
        "hard-dereference",
        "ignore-zeros",
        "ignore-case",
        "no-ignore-case",
        "wildcards",
        "no-wildcards",
        "wildcards-match-slash",
        "no-wildcards-match-slash",
        "anchored",
        "no-anchored",
        "recursion",
        "no-recursion",
        "null",
        "no-null",
        "verbatim-files-from",
        "no-verbatim-files-from",
        "totals",
        "utc",
        "verify",
        "show-transformed-names",
        "show-stored-names",
        "show-defaults",
        "show-omitted-dirs",
        "sparse",
        "seek",
        "no-seek",
        "interactive",
        "confirmation",
        "multi-volume",
        "incremental",
        "check-device",
        "no-check-device",
        "exclude-vcs",
        "exclude-vcs-ignores",
        "exclude-backups",
        "exclude-caches",
        "exclude-caches-all",
        "exclude-caches-under",
        "full-time",
        "block-number",
        "check-links",
        "delay-directory-restore",
        "no-delay-directory-restore",
        "ignore-failed-read",
        "xattrs",
        "no-xattrs",
        "acls",
        "no-acls",
        "selinux",
        "no-selinux",
        "restrict",
        "unquote",
        "no-unquote",
        "portability",
        "posix",
        "old-archive",
        "concatenate",
        "catenate",
        "test-label",
        "keep-directory-symlink",
        "one-file-system",
        "preserve-order",
        "same-order",
        "read-full-records",
        "no-recursion",
    ],
);

/// tar: `-c`/`-r`/`-u` write the archive (`-f`), `-x` writes into the current directory or `-C
/// DIR`, `-t` only reads. The old form `tar xzf a.tgz` is read as `tar -xzf a.tgz`.
fn tar(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let mut args = args.to_vec();
    if let Some(first) = args.first().and_then(Arg::lit)
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        args[0] = Arg::Lit(format!("-{first}"));
    }
    let spec = TAR_OPTIONS;
    let items = scan(&args, &spec);
    c.check_options(a, &items, &spec);
    for item in &items {
        match item {
            Item::Opt { name, .. } if TAR_EXEC.contains(&name.as_str()) => {
                a.complex(format!("`tar {name}` runs another program"));
            }
            Item::Unknown(arg) => a.complex(format!(
                "`{}` is known only at run time and could be a tar option that runs a program",
                arg.display()
            )),
            _ => {}
        }
    }
    for f in values(&items, &["-T", "--files-from", "-X", "--exclude-from"]) {
        a.read_path(f, cwd);
    }
    // Whatever the mode: the verbose listing and the volume number go to files.
    for f in values(&items, &["--index-file", "--volno-file"]) {
        a.write_path(f, cwd, "tar");
    }
    let extract = has(&items, &["-x", "--extract", "--get"]);
    let create = has(
        &items,
        &[
            "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--delete",
        ],
    );
    let to_stdout = has(&items, &["-O", "--to-stdout"]);
    let archives: Vec<Arg> = values(&items, &["-f", "--file"]).cloned().collect();
    let force_local = has(&items, &["--force-local"]);
    for archive in &archives {
        if archive.lit() == Some("-") {
            continue;
        }
        if !force_local && archive.lit().is_some_and(is_remote_spec) {
            a.complex("a tar archive of the form host:file is opened through a remote shell");
        }
        if create {
            a.write_path(archive, cwd, "tar");
        } else {
            a.read_path(archive, cwd);
        }
    }
    let dirs: Vec<Arg> = values(&items, &["-C", "--directory"]).cloned().collect();
    if extract && !to_stdout {
        if dirs.is_empty() {
            a.write_path(&Arg::Lit(".".into()), cwd, "tar -x");
        }
        for d in &dirs {
            a.write_path(d, cwd, "tar -x");
        }
    }
    if create {
        if archives.is_empty() {
            // No -f: the archive goes to stdout (or $TAPE); nothing named is written.
        }
        // `--remove-files` deletes what it archived; `-g FILE` writes the snapshot file.
        let removing = has(&items, &["--remove-files"]);
        for op in operands(&items) {
            if removing {
                a.write_path(&op, cwd, "tar --remove-files");
            } else {
                a.read_path(&op, cwd);
            }
        }
        for f in values(&items, &["-g", "--listed-incremental"]) {
            a.write_path(f, cwd, "tar -g");
        }
    } else {
        for f in values(&items, &["-g", "--listed-incremental"]) {
            a.read_path(f, cwd);
        }
    }
}

/// unzip: extracts into the current directory or `-d DIR` unless listing, testing or piping.
fn unzip(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec =
        OptionSpec::gnu("dxPIO", &[], &[]).flags("ltvZpczfunoqjaabCLMVXKWDTUs0123456789", &[]);
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    let ops = operands(&items);
    if let Some(archive) = ops.first() {
        a.read_path(archive, cwd);
    }
    let read_only = has(&items, &["-l", "-t", "-v", "-Z", "-p", "-c", "-z"]);
    if read_only {
        return;
    }
    match values(&items, &["-d"]).last() {
        Some(d) => a.write_path(d, cwd, "unzip"),
        None => a.write_path(&Arg::Lit(".".into()), cwd, "unzip"),
    }
}

/// zip: writes the archive (the first operand); `-T -TT cmd` runs a program; `-m` removes the
/// files it adds.
fn zip(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = OptionSpec::gnu(
        "bnitxPOs",
        &[
            "unzip-command",
            "temp-path",
            "password",
            "output-file",
            "suffixes",
            "exclude",
            "include",
            "split-size",
            "compression-method",
        ],
        &[],
    )
    .flags(
        "0123456789rRqvjJmufdeyTlDXAFgkoz@cS$",
        &[
            "recurse-paths",
            "quiet",
            "verbose",
            "junk-paths",
            "move",
            "update",
            "freshen",
            "delete",
            "encrypt",
            "symlinks",
            "test",
            "to-crlf",
            "from-crlf",
            "no-dir-entries",
            "no-extra",
            "fix",
            "fixfix",
            "grow",
            "fast",
            "best",
            "adjust-sfx",
            "filesync",
            "latest-time",
            "copy-entries",
            "la",
            "no-wild",
            "display-bytes",
            "display-counts",
            "display-dots",
            "display-globaldots",
            "display-usize",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    if has(&items, &["-T", "--test"])
        && args
            .iter()
            .any(|x| x.lit() == Some("-TT") || x.display().starts_with("--unzip-command"))
    {
        a.complex("`zip -TT` runs another program to test the archive");
    }
    let ops = operands(&items);
    let output = values(&items, &["-O", "--output-file"]).last().cloned();
    if let Some(archive) = output.as_ref().or(ops.first()) {
        a.write_path(archive, cwd, "zip");
    }
    let moving = has(&items, &["-m", "--move"]);
    for op in ops.iter().skip(1) {
        if moving {
            a.write_path(op, cwd, "zip -m");
        } else {
            a.read_path(op, cwd);
        }
    }
}

/// 7z: `x`/`e` extract (into `-oDIR` or here), `a`/`u`/`d`/`rn` write the archive, `l`/`t` read.
fn seven_zip(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let command = args.first().and_then(Arg::lit).unwrap_or("");
    let rest = args.get(1..).unwrap_or(&[]);
    let outdir = rest.iter().find_map(|x| {
        x.lit()
            .and_then(|t| t.strip_prefix("-o"))
            .map(|d| Arg::Lit(d.to_owned()))
    });
    let ops: Vec<&Arg> = rest
        .iter()
        .filter(|x| !x.display().starts_with('-'))
        .collect();
    match command {
        "x" | "e" => {
            if let Some(archive) = ops.first() {
                a.read_path(archive, cwd);
            }
            a.write_path(&outdir.unwrap_or(Arg::Lit(".".into())), cwd, name);
        }
        "a" | "u" | "d" | "rn" => {
            if let Some(archive) = ops.first() {
                a.write_path(archive, cwd, name);
            }
            for op in ops.iter().skip(1) {
                a.read_path(op, cwd);
            }
        }
        "l" | "t" | "h" | "i" | "b" => {
            for op in &ops {
                a.read_path(op, cwd);
            }
        }
        _ => a.complex(format!(
            "`{name} {command}` is not a 7z command spear knows"
        )),
    }
}

/// The options of gzip, bzip2, xz, zstd and friends: the ones that take a value, then the flags.
const COMPRESSOR_OPTIONS: OptionSpec = OptionSpec::gnu(
    "SoTMLDFb",
    &[
        "suffix",
        "output",
        "threads",
        "memlimit",
        "format",
        "patch-from",
        "dict",
    ],
    &[],
)
.flags(
    "cdfklLnNqrtvVhzHe0123456789",
    &[
        "stdout",
        "to-stdout",
        "test",
        "list",
        "keep",
        "decompress",
        "uncompress",
        "compress",
        "force",
        "license",
        "no-name",
        "name",
        "quiet",
        "recursive",
        "rsyncable",
        "verbose",
        "fast",
        "best",
        "rm",
        "no-keep",
        "synchronous",
        "ultra",
        "long",
        "sparse",
        "no-sparse",
        "check",
        "no-check",
        "extreme",
        "single-stream",
        "no-sparse",
        "robot",
        "keep-newer",
        "large",
        "format-check",
    ],
);

/// gzip and friends replace each operand with its (de)compressed form unless writing to stdout,
/// testing or listing.
fn compressor(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = COMPRESSOR_OPTIONS;
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    let ops = operands(&items);
    let read_only = has(
        &items,
        &[
            "-c",
            "--stdout",
            "--to-stdout",
            "-t",
            "--test",
            "-l",
            "--list",
        ],
    );
    if let Some(out) = values(&items, &["-o", "--output"]).last() {
        a.write_path(out, cwd, name);
    }
    let decompress = name.starts_with("gun")
        || name.starts_with("un")
        || name == "bunzip2"
        || has(&items, &["-d", "--decompress", "--uncompress"]);
    let suffix = values(&items, &["-S", "--suffix"])
        .last()
        .and_then(Arg::lit)
        .map_or_else(|| compressed_suffix(name).to_owned(), str::to_owned);
    for op in &ops {
        if op.lit() == Some("-") {
            continue;
        }
        if read_only {
            a.read_path(op, cwd);
            continue;
        }
        a.write_path(op, cwd, name);
        // The output beside it: FILE.gz when compressing, FILE without .gz when decompressing.
        if let Some(file) = op.lit() {
            let derived = if decompress {
                file.strip_suffix(suffix.as_str()).map(str::to_owned)
            } else {
                Some(format!("{file}{suffix}"))
            };
            if let Some(derived) = derived.filter(|d| !d.is_empty()) {
                a.write_path(&Arg::Lit(derived), cwd, name);
            }
        }
    }
    for item in &items {
        if let Item::Unknown(arg) = item {
            a.read_path(arg, cwd);
            if !read_only {
                a.mutates(format!("{name} rewrites files known only at run time"));
            }
        }
    }
}

/// The suffix a compressor gives its output.
fn compressed_suffix(name: &str) -> &'static str {
    match name.trim_start_matches("un").trim_start_matches("gun") {
        "bzip2" | "bunzip2" | "zip2" => ".bz2",
        "xz" => ".xz",
        "lzma" => ".lzma",
        "zstd" => ".zst",
        "lz4" => ".lz4",
        "lzop" => ".lzo",
        "compress" => ".Z",
        "brotli" => ".br",
        _ => ".gz",
    }
}
