//! Programs whose job is to create, change or remove files. Every path they write is a write
//! target, checked against the roots and the target policy.

use spear_core::{Capability, Refusal};

use crate::analysis::{Analysis, Cwd};
use crate::commands::backups;
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::{Call, Programs};
use crate::shell::word::Arg;

/// The writers. The ones with options that name other files to write or programs to run treat
/// an option they do not know as `SHELL_COMPLEX`.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::harmless(
        &[
            "rm", "rmdir", "unlink", "shred", "mkdir", "mkfifo", "touch", "truncate",
        ],
        remove_or_create,
    ),
    Programs::harmless(
        &["chmod", "chown", "chgrp", "chattr", "chcon"],
        change_attributes,
    ),
    Programs::harmless(&["setfacl"], setfacl),
    Programs::harmless(&["tee"], tee),
    Programs::harmless(&["dos2unix", "unix2dos", "mac2unix", "unix2mac"], dos2unix),
    Programs::complex(&["cp", "mv", "install", "ln", "link"], copy_like),
    Programs::complex(&["rsync"], rsync),
    Programs::harmless(&["dd"], |a, c, cwd| dd(a, c.args, cwd)),
    Programs::complex(&["split", "csplit"], split),
    Programs::complex(&["patch"], patch),
    Programs::complex(&["mktemp"], mktemp),
];

/// rm, rmdir, mkdir, touch...: every operand is written.
fn remove_or_create(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = match name {
        "touch" => OptionSpec::gnu("rdtB", &["reference", "date", "time"], &[]),
        "truncate" => OptionSpec::gnu("sr", &["size", "reference"], &[]),
        "mkdir" | "mkfifo" => OptionSpec::gnu("m", &["mode"], &[]),
        "shred" => OptionSpec::gnu("ns", &["iterations", "size", "random-source"], &[]),
        _ => OptionSpec::gnu("", &[], &[]),
    };
    let items = scan(args, &spec);
    for r in values(&items, &["-r", "--reference", "--random-source"]) {
        a.read_path(r, cwd);
    }
    write_all(a, name, &items, cwd);
}

/// chmod, chown...: the operands after the mode or owner are written.
fn change_attributes(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let items = scan(args, &OptionSpec::gnu("", &["reference", "from"], &[]));
    let reference: Vec<Arg> = values(&items, &["--reference"]).cloned().collect();
    for r in &reference {
        a.read_path(r, cwd);
    }
    let ops = operands(&items);
    let skip = usize::from(reference.is_empty());
    unknown_words(a, name, &items, cwd);
    for op in ops.iter().skip(skip) {
        a.write_path(op, cwd, name);
    }
}

/// setfacl: every operand is written; the ACL files are read.
fn setfacl(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let items = scan(
        args,
        &OptionSpec::gnu(
            "mMxX",
            &[
                "modify",
                "modify-file",
                "remove",
                "remove-file",
                "set",
                "set-file",
            ],
            &[],
        ),
    );
    for r in values(
        &items,
        &["-M", "-X", "--modify-file", "--remove-file", "--set-file"],
    ) {
        a.read_path(r, cwd);
    }
    write_all(a, name, &items, cwd);
}

/// tee: every operand is written.
fn tee(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let items = scan(args, &OptionSpec::gnu("", &["output-error"], &[]));
    write_all(a, name, &items, cwd);
}

/// dos2unix and friends rewrite their files (with `-n`, write the second of each pair).
fn dos2unix(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let items = scan(args, &OptionSpec::gnu("c", &["convmode"], &[]));
    unknown_words(a, name, &items, cwd);
    let new_file = has(&items, &["-n", "--newfile"]);
    for (i, op) in operands(&items).iter().enumerate() {
        if new_file && i % 2 == 0 {
            a.read_path(op, cwd);
        } else {
            a.write_path(op, cwd, name);
        }
    }
}

/// Every operand is written.
fn write_all(a: &mut Analysis<'_>, name: &str, items: &[Item], cwd: &Cwd) {
    let ops = operands(items);
    if ops.is_empty() && !items.iter().any(|i| matches!(i, Item::Unknown(_))) {
        // `rm -f` with nothing to remove, `tee` to stdout only.
        return;
    }
    for op in &ops {
        a.write_path(op, cwd, name);
    }
    unknown_words(a, name, items, cwd);
}

/// Words known only at run time where options or operands stand: they may name anything, so each
/// is a write target whose place is unknown (a credential name or an outside prefix in its known
/// part is still refused).
fn unknown_words(a: &mut Analysis<'_>, name: &str, items: &[Item], cwd: &Cwd) {
    for item in items {
        if let Item::Unknown(arg) = item {
            a.complex(format!(
                "`{}` is known only at run time and {name} writes it",
                arg.display()
            ));
            a.write_path(arg, cwd, name);
        }
    }
}

/// The options of cp, mv, install and ln without a value (`--backup[=CONTROL]`, `--preserve[=LIST]`,
/// `--reflink[=WHEN]` and `--update[=WHEN]` take theirs attached).
const COPY_FLAGS: &[&str] = &[
    "archive",
    "attributes-only",
    "backup",
    "copy-contents",
    "dereference",
    "force",
    "interactive",
    "link",
    "no-dereference",
    "no-clobber",
    "parents",
    "recursive",
    "reflink",
    "remove-destination",
    "strip-trailing-slashes",
    "symbolic-link",
    "no-target-directory",
    "update",
    "verbose",
    "one-file-system",
    "context",
    "keep-directory-symlink",
    "debug",
    "preserve",
    "exchange",
    "no-copy",
    "compare",
    "directory",
    "preserve-timestamps",
    "strip",
    "preserve-context",
    "logical",
    "physical",
    "relative",
    "symbolic",
];

/// cp, mv, install, ln: the destination is `-t DIR`, or the last operand; sources are read (and,
/// for mv, removed).
fn copy_like(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = match name {
        "install" => OptionSpec::gnu(
            "tmogS",
            &[
                "target-directory",
                "mode",
                "owner",
                "group",
                "suffix",
                "strip-program",
            ],
            &[],
        )
        .flags("bcCdDpsvTZ", COPY_FLAGS),
        _ => OptionSpec::gnu(
            "tS",
            &["target-directory", "suffix", "sparse", "no-preserve"],
            &[],
        )
        .flags("abdfiHlLnPpRrsuvxTZFe", COPY_FLAGS),
    };
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    if has(&items, &["--strip-program"]) {
        a.complex("`install --strip-program` runs another program");
    }
    unknown_words(a, name, &items, cwd);
    let mut ops = operands(&items);
    let targets: Vec<Arg> = values(&items, &["-t", "--target-directory"])
        .cloned()
        .collect();
    let directories_only = name == "install" && has(&items, &["-d", "--directory"]);
    if directories_only {
        for op in &ops {
            a.write_path(op, cwd, name);
        }
        return;
    }
    let dest = if let Some(t) = targets.last() {
        Some(t.clone())
    } else if ops.len() >= 2 || (name == "ln" && ops.len() == 1) {
        if name == "ln" && ops.len() == 1 {
            // `ln -s TARGET` creates a link named after TARGET in the current directory.
            let base = ops[0].lit().and_then(|t| {
                std::path::Path::new(t)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
            });
            Some(base.map_or(Arg::unknown(ops[0].display().to_owned()), Arg::Lit))
        } else {
            ops.pop()
        }
    } else {
        None
    };
    // Sources are read; mv also removes them. A link's target is vetted as a read too: a hard
    // link shares its content and a symbolic link leads reads to it (`ln ~/.ssh/id_rsa k`).
    for src in &ops {
        if name == "mv" {
            a.write_path(src, cwd, name);
        } else {
            a.read_path(src, cwd);
        }
    }
    match dest {
        Some(d) => {
            a.write_path(&d, cwd, name);
            // `-b`/`--backup` keeps what it replaces as DEST~ (or DEST + `-S SUFFIX`); into a
            // directory, as DIR/SOURCE~ for each source.
            if has(&items, &["-b", "--backup"]) {
                let suffix = values(&items, &["-S", "--suffix"])
                    .last()
                    .and_then(Arg::lit);
                let suffix = backups::coreutils_suffix(suffix);
                let into_directory =
                    !targets.is_empty() || ops.len() > 1 || d.display().ends_with('/');
                if into_directory {
                    for src in &ops {
                        let base = src
                            .lit()
                            .and_then(|t| std::path::Path::new(t).file_name())
                            .map(|f| f.to_string_lossy().into_owned());
                        if let (Some(dir), Some(base)) = (d.lit(), base) {
                            let replaced =
                                Arg::Lit(format!("{}/{base}", dir.trim_end_matches('/')));
                            backups::write_backup(a, &replaced, &suffix, cwd, name);
                        } else {
                            a.complex(format!("{name} -b writes backups named at run time"));
                        }
                    }
                } else {
                    backups::write_backup(a, &d, &suffix, cwd, name);
                }
            }
        }
        None => a.mutates(format!("{name} writes without a destination spear can see")),
    }
}

/// rsync's options: the ones that take a value, then the flags.
const RSYNC_OPTIONS: OptionSpec = OptionSpec::gnu(
    "eTfB",
    &[
        "rsh",
        "rsync-path",
        "temp-dir",
        "filter",
        "exclude",
        "exclude-from",
        "include",
        "include-from",
        "files-from",
        "log-file",
        "log-file-format",
        "write-batch",
        "only-write-batch",
        "read-batch",
        "backup-dir",
        "partial-dir",
        "compare-dest",
        "copy-dest",
        "link-dest",
        "suffix",
        "chmod",
        "chown",
        "usermap",
        "groupmap",
        "password-file",
        "port",
        "sockopts",
        "out-format",
        "max-size",
        "min-size",
        "bwlimit",
        "timeout",
        "contimeout",
        "block-size",
        "checksum-choice",
        "compress-choice",
        "compress-level",
        "skip-compress",
        "info",
        "debug",
        "iconv",
        "outbuf",
        "protocol",
        "modify-window",
        "max-delete",
        "stop-after",
        "stop-at",
        "address",
    ],
    &[],
)
.flags(
    "avzrlptgoDhPnucqxHAXSWRbLkKmiCEOJUNys0468",
    &[
        "archive",
        "verbose",
        "compress",
        "recursive",
        "links",
        "perms",
        "times",
        "group",
        "owner",
        "devices",
        "specials",
        "human-readable",
        "progress",
        "partial",
        "dry-run",
        "update",
        "checksum",
        "quiet",
        "one-file-system",
        "hard-links",
        "acls",
        "xattrs",
        "sparse",
        "whole-file",
        "relative",
        "backup",
        "copy-links",
        "copy-dirlinks",
        "keep-dirlinks",
        "prune-empty-dirs",
        "itemize-changes",
        "cvs-exclude",
        "executability",
        "omit-dir-times",
        "omit-link-times",
        "atimes",
        "crtimes",
        "numeric-ids",
        "fuzzy",
        "delete",
        "delete-before",
        "delete-during",
        "delete-delay",
        "delete-after",
        "delete-excluded",
        "delete-missing-args",
        "ignore-missing-args",
        "ignore-existing",
        "ignore-times",
        "existing",
        "remove-source-files",
        "force",
        "inplace",
        "append",
        "append-verify",
        "size-only",
        "stats",
        "list-only",
        "no-motd",
        "safe-links",
        "copy-unsafe-links",
        "munge-links",
        "mkpath",
        "fsync",
        "ipv4",
        "ipv6",
        "8-bit-output",
        "from0",
        "protect-args",
        "secluded-args",
        "trust-sender",
        "copy-as",
        "preallocate",
        "open-noatime",
        "super",
        "fake-super",
        "delay-updates",
        "no-inc-recursive",
        "inc-recursive",
        "blocking-io",
        "ignore-errors",
        "msgs2stderr",
        "progress2",
        "no-implied-dirs",
        "implied-dirs",
        "old-dirs",
        "dirs",
        "no-whole-file",
        "no-compress",
    ],
);

/// rsync: local destinations are written; a remote operand (`host:path`) needs SSH, and
/// `rsync://` the network. `-e`/`--rsh` and `--rsync-path` run programs.
fn rsync(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = RSYNC_OPTIONS;
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    if has(&items, &["-e", "--rsh", "--rsync-path"]) {
        a.complex("rsync -e/--rsync-path runs another program");
    }
    for r in values(
        &items,
        &[
            "--exclude-from",
            "--include-from",
            "--files-from",
            "--read-batch",
            "--password-file",
        ],
    ) {
        a.read_path(r, cwd);
    }
    for w in values(
        &items,
        &[
            "--log-file",
            "--write-batch",
            "--only-write-batch",
            "--backup-dir",
            "--partial-dir",
            "-T",
            "--temp-dir",
        ],
    ) {
        a.write_path(w, cwd, "rsync");
    }
    unknown_words(a, "rsync", &items, cwd);
    let mut ops = operands(&items);
    let dest = ops.pop();
    for op in ops.iter().chain(dest.iter()) {
        if let Some(t) = op.lit() {
            if t.starts_with("rsync://") || t.contains("::") {
                a.needs(Capability::Network);
                continue;
            }
            if is_remote_spec(t) {
                a.needs(Capability::Ssh);
                a.refuse(Refusal::no_mode_grants(
                    Capability::Ssh,
                    format!("rsync {t}"),
                ));
            }
        }
    }
    for src in &ops {
        if !src
            .lit()
            .is_some_and(|t| is_remote_spec(t) || t.starts_with("rsync://"))
        {
            a.read_path(src, cwd);
        }
    }
    if let Some(d) = dest
        && !d
            .lit()
            .is_some_and(|t| is_remote_spec(t) || t.starts_with("rsync://"))
    {
        a.write_path(&d, cwd, "rsync");
    }
}

/// `host:path` or `user@host:path`: a colon before the first slash.
pub(crate) fn is_remote_spec(t: &str) -> bool {
    match (t.find(':'), t.find('/')) {
        (Some(c), Some(s)) => c < s && c > 0,
        (Some(c), None) => c > 0,
        _ => false,
    }
}

/// dd: `if=` is read, `of=` is written (a device is refused).
fn dd(a: &mut Analysis<'_>, args: &[Arg], cwd: &Cwd) {
    for arg in args {
        let Some(t) = arg.lit() else {
            a.complex(format!(
                "`{}` is known only at run time and could be dd's of=",
                arg.display()
            ));
            a.mutates("dd writes a path known only at run time");
            continue;
        };
        if let Some(input) = t.strip_prefix("if=") {
            a.read_path(&Arg::Lit(input.to_owned()), cwd);
        } else if let Some(output) = t.strip_prefix("of=") {
            a.write_path(&Arg::Lit(output.to_owned()), cwd, "dd");
        }
    }
}

/// split and csplit write pieces named by a prefix (default `x`/`xx`) in the current directory.
fn split(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = if name == "split" {
        OptionSpec::gnu(
            "abClnt",
            &[
                "suffix-length",
                "additional-suffix",
                "bytes",
                "line-bytes",
                "lines",
                "number",
                "separator",
                "filter",
            ],
            &[],
        )
        .flags(
            "dxeu",
            &[
                "numeric-suffixes",
                "hex-suffixes",
                "elide-empty-files",
                "unbuffered",
                "verbose",
            ],
        )
    } else {
        OptionSpec::gnu("bfn", &["suffix-format", "prefix", "digits"], &[]).flags(
            "ksqz",
            &[
                "keep-files",
                "quiet",
                "silent",
                "elide-empty-files",
                "suppress-matched",
            ],
        )
    };
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    if has(&items, &["--filter"]) {
        a.complex("`split --filter` runs a shell command for each piece");
    }
    unknown_words(a, name, &items, cwd);
    let ops = operands(&items);
    if let Some(input) = ops.first()
        && input.lit() != Some("-")
    {
        a.read_path(input, cwd);
    }
    let prefix = if name == "split" {
        ops.get(1).cloned().unwrap_or(Arg::Lit("x".into()))
    } else {
        values(&items, &["-f", "--prefix"])
            .last()
            .cloned()
            .unwrap_or(Arg::Lit("xx".into()))
    };
    a.write_path(&prefix, cwd, name);
}

/// patch writes the files its patch names, relative to the current directory (or `-d DIR`);
/// GNU patch refuses names that climb out. `-o` names the output; `-i` the patch file.
fn patch(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = OptionSpec::gnu(
        "BdDFioprVYzg",
        &[
            "prefix",
            "directory",
            "ifdef",
            "fuzz",
            "input",
            "output",
            "strip",
            "reject-file",
            "version-control",
            "basename-prefix",
            "suffix",
            "get",
            "quoting-style",
            "reject-format",
            "read-only",
        ],
        &[],
    )
    .flags(
        "bceEflnNRstTuvZ",
        &[
            "backup",
            "context",
            "ed",
            "remove-empty-files",
            "force",
            "ignore-whitespace",
            "normal",
            "forward",
            "reverse",
            "silent",
            "quiet",
            "batch",
            "set-time",
            "set-utc",
            "unified",
            "verbose",
            "dry-run",
            "posix",
            "binary",
            "merge",
            "follow-symlinks",
            "backup-if-mismatch",
            "no-backup-if-mismatch",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    unknown_words(a, "patch", &items, cwd);
    for p in values(&items, &["-i", "--input"]) {
        a.read_path(p, cwd);
    }
    let dir = values(&items, &["-d", "--directory"]).last().cloned();
    let here = dir.unwrap_or(Arg::Lit(".".into()));
    let ops = operands(&items);
    if let Some(out) = values(&items, &["-o", "--output"]).last().cloned() {
        a.write_path(&out, cwd, "patch");
    } else if let Some(original) = ops.first() {
        a.write_path(original, cwd, "patch");
    } else {
        a.write_path(&here, cwd, "patch");
    }
    // Backups: `-B PREFIX` and `-Y PREFIX` put them under a path prefix (`-B .git/hooks/` would
    // plant hooks); `-b` with `-z SUFFIX` beside the original.
    for prefix in values(&items, &["-B", "--prefix", "-Y", "--basename-prefix"]) {
        a.write_path(prefix, cwd, "patch");
    }
    if let (Some(original), true) = (ops.first(), has(&items, &["-b", "--backup"])) {
        let suffix = values(&items, &["-z", "--suffix"])
            .last()
            .and_then(Arg::lit)
            .unwrap_or(".orig");
        if let Some(name) = original.lit() {
            a.write_path(&Arg::Lit(format!("{name}{suffix}")), cwd, "patch -b");
        }
    }
    if let Some(reject) = values(&items, &["-r", "--reject-file"]).last().cloned() {
        a.write_path(&reject, cwd, "patch");
    }
    if let Some(patchfile) = ops.get(1) {
        a.read_path(patchfile, cwd);
    }
}

/// mktemp creates a new file or directory: from its template, under `-p DIR`/`--tmpdir`, or in
/// `$TMPDIR` (`/tmp`, the sandbox's private tmpfs). The target is the new entry
/// (`/tmp/tmp.XXXXXXXXXX`), never the directory that holds it.
fn mktemp(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let items = scan(c.args, &mktemp_options());
    c.check_options(a, &items, &mktemp_options());
    if has(&items, &["-u", "--dry-run"]) {
        return;
    }
    unknown_words(a, "mktemp", &items, cwd);
    if let Some(target) = mktemp_target(&items) {
        a.write_path(&target, cwd, "mktemp");
    }
}

/// mktemp's options.
fn mktemp_options() -> OptionSpec {
    OptionSpec::gnu("p", &["tmpdir", "suffix"], &[])
        .flags("dqut", &["directory", "quiet", "dry-run"])
}

/// What `mktemp` with these options and operands creates: the new entry, its random part as the
/// template's `X`s. `None` when it creates nothing (`-u`).
fn mktemp_target(items: &[Item]) -> Option<Arg> {
    if has(items, &["-u", "--dry-run"]) {
        return None;
    }
    let dir = values(items, &["-p", "--tmpdir"]).last().cloned();
    let template = operands(items).first().cloned();
    let in_dir = |d: &Arg, name: &str| match d {
        Arg::Lit(d) => Arg::Lit(format!("{}/{name}", d.trim_end_matches('/'))),
        other => other.clone(),
    };
    let default = "tmp.XXXXXXXXXX";
    Some(match (dir, template) {
        (Some(d), Some(Arg::Lit(t))) if !t.contains('/') => in_dir(&d, &t),
        (Some(d), None) => in_dir(&d, default),
        (Some(d), Some(_)) => d,
        (None, Some(t)) if t.display().contains('/') => t,
        (None, Some(Arg::Lit(t))) if has(items, &["-t"]) => Arg::Lit(format!("/tmp/{t}")),
        (None, Some(_)) if has(items, &["-t"]) => Arg::Lit("/tmp".into()),
        (None, Some(t)) => t,
        (None, None) => Arg::Lit(format!("/tmp/{default}")),
    })
}

/// What `$(mktemp ARGS)` prints, when `script` is exactly that with literal words (`mktemp -d`,
/// `mktemp -t build.XXXXXX`, `mktemp -d -p /tmp`): the path of the new entry, its random part as
/// the template's `X`s. `None` for anything else: quoting, expansions, a second command.
pub(crate) fn mktemp_output(script: &str) -> Option<String> {
    let words: Vec<&str> = script.split_ascii_whitespace().collect();
    let (first, rest) = words.split_first()?;
    let plain = |w: &str| {
        w.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '=' | '+'))
    };
    if *first != "mktemp" || !rest.iter().all(|w| plain(w)) {
        return None;
    }
    let args: Vec<Arg> = rest.iter().map(|w| Arg::Lit((*w).to_owned())).collect();
    let spec = mktemp_options();
    let items = scan(&args, &spec);
    let known = items.iter().all(|i| match i {
        Item::Opt { name, .. } => spec.knows(name),
        Item::Operand(_) => true,
        Item::Unknown(_) => false,
    });
    if !known || operands(&items).len() > 1 {
        return None;
    }
    match mktemp_target(&items)? {
        Arg::Lit(path) => Some(path),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::is_remote_spec;

    #[test]
    fn remote_specs() {
        for (t, remote) in [
            ("host:/x", true),
            ("u@host:x", true),
            ("host:", true),
            ("./a:b", false),
            ("/abs/a:b", false),
            ("a", false),
            (":x", false),
        ] {
            assert_eq!(is_remote_spec(t), remote, "{t}");
        }
    }
}
