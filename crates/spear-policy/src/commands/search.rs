//! Searchers: find, fd, grep, rg, ag, jq, yq. Their roots are searched recursively and must lie
//! in the project (or a path the operator named); their options can write files or run programs.

use crate::analysis::{Analysis, Cwd};
use crate::commands::options::{Item, OptionSpec, has, operands, scan, values};
use crate::commands::{Call, Programs};
use crate::shell::walk::Stdin;
use crate::shell::word::Arg;

/// The searchers. find, fd, rg and yq have options that run programs or write files, so an option
/// they do not know is `SHELL_COMPLEX`; grep, ag and jq have none beyond those handled.
pub(crate) const PROGRAMS: &[Programs] = &[
    Programs::complex(&["find", "gfind"], find),
    Programs::complex(&["fd", "fdfind"], fd),
    Programs::harmless(
        &[
            "grep", "egrep", "fgrep", "rgrep", "zgrep", "zegrep", "zfgrep", "bzgrep", "xzgrep",
        ],
        grep,
    ),
    Programs::complex(&["rg"], rg),
    Programs::harmless(&["ag", "ack", "ack-grep"], ag),
    Programs::harmless(&["jq", "gojq", "jaq"], jq),
    Programs::complex(&["yq"], yq),
    Programs::harmless(&["locate", "plocate", "mlocate", "slocate"], |a, c, _| {
        a.refuse(spear_core::Refusal::project_scope(format!(
            "{} searches the whole host",
            c.name
        )));
    }),
];

/// find's tests and options that take one value.
const FIND_ONE_VALUE: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-type",
    "-xtype",
    "-size",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-inum",
    "-links",
    "-maxdepth",
    "-mindepth",
    "-fstype",
    "-printf",
    "-used",
    "-context",
    "-regextype",
    "-lname",
    "-ilname",
    "-samefile",
    "-newer",
    "-anewer",
    "-cnewer",
];
/// Tests, actions and options without a value that only select or print.
const FIND_NO_VALUE: &[&str] = &[
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-empty",
    "-executable",
    "-readable",
    "-writable",
    "-nouser",
    "-nogroup",
    "-depth",
    "-mount",
    "-xdev",
    "-noleaf",
    "-daystart",
    "-follow",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-warn",
    "-nowarn",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "-help",
    "--help",
    "-version",
    "--version",
    "-d",
    "-x",
    "-E",
    "-s",
];

/// find: starting points are search roots; `-exec`/`-execdir`/`-ok`/`-okdir` run a command per
/// file (analysed, with the file name known only at run time); `-delete` removes under the roots;
/// `-fprint`/`-fprint0`/`-fprintf`/`-fls` write a file.
fn find(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let mut i = 0;
    // Global options.
    while let Some(t) = args.get(i).and_then(Arg::lit) {
        match t {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut roots = Vec::new();
    while let Some(arg) = args.get(i) {
        match arg.lit() {
            Some(t) if t.starts_with('-') || t == "(" || t == "!" || t == "," => break,
            None if arg.could_be_option() => break,
            Some(_) | None => roots.push(arg.clone()),
        }
        i += 1;
    }
    if roots.is_empty() {
        roots.push(Arg::Lit(".".into()));
    }
    for root in &roots {
        a.search_root(root, cwd);
    }
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(t) = arg.lit() else {
            if arg.could_be_option() {
                a.complex(format!(
                    "`{}` is known only at run time and could be a find action that runs or deletes",
                    arg.display()
                ));
            }
            continue;
        };
        match t {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[i..]
                    .iter()
                    .position(|x| matches!(x.lit(), Some(";" | "+")))
                    .map_or(args.len(), |p| i + p);
                let inner = crate::commands::with_placeholders(&args[i..end], "{}");
                a.complex(format!("`find {t}` runs a command for every file it finds"));
                let mut inner_cwd = if t.ends_with("dir") {
                    Cwd::Unknown
                } else {
                    cwd.clone()
                };
                a.run_words(inner, &mut inner_cwd, Stdin::Inherited);
                i = end + 1;
            }
            "-delete" => {
                for root in &roots {
                    a.write_path(root, cwd, "find -delete");
                }
                a.mutates("find -delete removes what it finds");
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                if let Some(file) = args.get(i) {
                    a.write_path(file, cwd, &format!("find {t}"));
                }
                i += if t == "-fprintf" { 2 } else { 1 };
            }
            "-files0-from" => {
                if let Some(file) = args.get(i) {
                    a.read_path(file, cwd);
                }
                a.complex("find -files0-from takes its starting points from a file");
                i += 1;
            }
            "-newer" | "-anewer" | "-cnewer" | "-samefile" => {
                if let Some(file) = args.get(i) {
                    a.read_path(file, cwd);
                }
                i += 1;
            }
            _ if t.starts_with("-newer") && t.len() == 8 => i += 1,
            _ if FIND_ONE_VALUE.contains(&t) => i += 1,
            _ if t.starts_with('-') && !FIND_NO_VALUE.contains(&t) => c.unknown_option(a, t),
            _ => {}
        }
    }
}

/// fd's options: the ones that take a value, then the flags.
const FD_OPTIONS: OptionSpec = OptionSpec::gnu(
    "dEtecjS",
    &[
        "max-depth",
        "min-depth",
        "exact-depth",
        "exclude",
        "type",
        "extension",
        "color",
        "threads",
        "size",
        "changed-within",
        "changed-before",
        "owner",
        "search-path",
        "base-directory",
        "path-separator",
        "max-results",
        "ignore-file",
        "batch-size",
        "format",
        "and",
        "hyperlink",
    ],
    &[],
)
.flags(
    "HIusigFalLp01qhV",
    &[
        "exec",
        "exec-batch",
        "hidden",
        "no-hidden",
        "no-ignore",
        "ignore",
        "no-ignore-vcs",
        "ignore-vcs",
        "no-ignore-parent",
        "no-require-git",
        "require-git",
        "unrestricted",
        "case-sensitive",
        "ignore-case",
        "glob",
        "regex",
        "fixed-strings",
        "absolute-path",
        "relative-path",
        "list-details",
        "follow",
        "no-follow",
        "full-path",
        "print0",
        "quiet",
        "show-errors",
        "strip-cwd-prefix",
        "one-file-system",
        "prune",
        "no-global-ignore-file",
        "ignore-contain",
    ],
);

/// fd: `-x`/`--exec` and `-X`/`--exec-batch` run a command per result; paths are search roots.
fn fd(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = FD_OPTIONS;
    let exec_at = args
        .iter()
        .position(|x| matches!(x.lit(), Some("-x" | "-X" | "--exec" | "--exec-batch")));
    let (own, exec) = match exec_at {
        Some(p) => (&args[..p], Some(&args[p + 1..])),
        None => (args, None),
    };
    let items = scan(own, &spec);
    c.check_options(a, &items, &spec);
    for item in &items {
        if let Item::Unknown(arg) = item {
            a.complex(format!(
                "`{}` is known only at run time and could be {name} --exec",
                arg.display()
            ));
        }
    }
    for f in values(&items, &["--ignore-file"]) {
        a.read_path(f, cwd);
    }
    let mut roots: Vec<Arg> = values(&items, &["--search-path"]).cloned().collect();
    let ops = operands(&items);
    roots.extend(ops.iter().skip(1).cloned());
    if let Some(base) = values(&items, &["--base-directory"]).last() {
        roots.push(base.clone());
    }
    if roots.is_empty() {
        roots.push(Arg::Lit(".".into()));
    }
    for root in &roots {
        a.search_root(root, cwd);
    }
    if let Some(cmd) = exec {
        a.complex(format!(
            "`{name} --exec` runs a command for every file it finds"
        ));
        let end = cmd
            .iter()
            .position(|x| x.lit() == Some(";"))
            .unwrap_or(cmd.len());
        // fd's placeholders: {}, {/}, {//}, {.}, {/.}.
        let inner = crate::commands::with_placeholders(&cmd[..end], "{");
        let mut inner_cwd = cwd.clone();
        a.run_words(inner, &mut inner_cwd, Stdin::Inherited);
    }
}

/// grep: the pattern is the first operand unless `-e`/`-f` give it; with `-r` the operands are
/// search roots. GNU grep has no option that writes or runs a program.
fn grep(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let spec = OptionSpec::gnu(
        "efmABCdD",
        &[
            "regexp",
            "file",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "include",
            "exclude",
            "exclude-dir",
            "exclude-from",
            "label",
            "binary-files",
            "devices",
            "directories",
            "group-separator",
        ],
        &["recursive", "dereference-recursive"],
    );
    let items = scan(args, &spec);
    for f in values(&items, &["-f", "--file", "--exclude-from"]) {
        a.read_path(f, cwd);
    }
    let recursive = name == "rgrep"
        || has(
            &items,
            &["-r", "-R", "--recursive", "--dereference-recursive"],
        )
        || values(&items, &["-d", "--directories"]).any(|v| v.lit() == Some("recurse"));
    let pattern_given = has(&items, &["-e", "--regexp", "-f", "--file"]);
    let mut ops: Vec<Arg> = items
        .iter()
        .filter_map(|it| match it {
            Item::Operand(x) | Item::Unknown(x) => Some(x.clone()),
            Item::Opt { .. } => None,
        })
        .collect();
    if !pattern_given && !ops.is_empty() {
        ops.remove(0);
    }
    if recursive && ops.is_empty() {
        ops.push(Arg::Lit(".".into()));
    }
    for op in &ops {
        if op.lit() == Some("-") {
            continue;
        }
        if recursive {
            a.search_root(op, cwd);
        } else {
            a.read_path(op, cwd);
        }
    }
}

/// ripgrep's options: the ones that take a value, then the flags.
const RG_OPTIONS: OptionSpec = OptionSpec {
    short_values: "efgtTmABCjMdErV",
    long_values: &[
        "regexp",
        "file",
        "glob",
        "iglob",
        "type",
        "type-not",
        "type-add",
        "type-clear",
        "max-count",
        "after-context",
        "before-context",
        "context",
        "threads",
        "max-columns",
        "max-depth",
        "maxdepth",
        "max-filesize",
        "encoding",
        "engine",
        "ignore-file",
        "replace",
        "sort",
        "sortr",
        "color",
        "colors",
        "path-separator",
        "context-separator",
        "field-match-separator",
        "field-context-separator",
        "dfa-size-limit",
        "regex-size-limit",
        "pre",
        "pre-glob",
        "hostname-bin",
        "generate",
        "hyperlink-format",
    ],
    long_flags: &[
        "search-zip",
        "files",
        "type-list",
        "binary",
        "block-buffered",
        "byte-offset",
        "case-sensitive",
        "column",
        "count",
        "count-matches",
        "crlf",
        "debug",
        "trace",
        "files-with-matches",
        "files-without-match",
        "fixed-strings",
        "follow",
        "glob-case-insensitive",
        "heading",
        "hidden",
        "ignore-case",
        "ignore-file-case-insensitive",
        "include-zero",
        "invert-match",
        "json",
        "line-buffered",
        "line-number",
        "line-regexp",
        "max-columns-preview",
        "mmap",
        "multiline",
        "multiline-dotall",
        "no-config",
        "null",
        "null-data",
        "one-file-system",
        "only-matching",
        "passthru",
        "passthrough",
        "pcre2",
        "pcre2-version",
        "pretty",
        "quiet",
        "smart-case",
        "sort-files",
        "stats",
        "stop-on-nonmatch",
        "text",
        "trim",
        "unrestricted",
        "vimgrep",
        "with-filename",
        "word-regexp",
        "auto-hybrid-regex",
        "unicode",
        "ignore",
        "messages",
        "ignore-messages",
        "ignore-dot",
        "ignore-exclude",
        "ignore-files",
        "ignore-global",
        "ignore-parent",
        "ignore-vcs",
        "require-git",
        "filename",
        "line-number",
        "help",
        "version",
    ],
    short_flags: "iSsFwxvnNlcoUPzLuHIabhpq0",
    gnu_prefixes: false,
    stop_at_operand: false,
};

/// ripgrep: recursive by default; `--pre`, `--hostname-bin` and `-z`/`--search-zip` run other
/// programs on the files it reads.
fn rg(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = RG_OPTIONS;
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    for item in &items {
        match item {
            Item::Opt { name, .. }
                if matches!(
                    name.as_str(),
                    "--pre" | "--hostname-bin" | "-z" | "--search-zip"
                ) =>
            {
                a.complex(format!(
                    "`rg {name}` runs another program on the files it searches"
                ));
            }
            Item::Unknown(arg) => a.complex(format!(
                "`{}` is known only at run time and could become `rg --pre`",
                arg.display()
            )),
            _ => {}
        }
    }
    for f in values(&items, &["-f", "--file", "--ignore-file"]) {
        a.read_path(f, cwd);
    }
    let mut ops = operands(&items);
    let listing = has(&items, &["--files", "--type-list"]);
    if !listing && !has(&items, &["-e", "--regexp", "-f", "--file"]) && !ops.is_empty() {
        ops.remove(0);
    }
    if ops.is_empty() {
        ops.push(Arg::Lit(".".into()));
    }
    for op in &ops {
        if op.lit() != Some("-") {
            a.search_root(op, cwd);
        }
    }
}

/// ag and ack: recursive; ack's `--pager` runs a program.
fn ag(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let (name, args) = (c.name, c.args);
    let items = scan(
        args,
        &OptionSpec::gnu(
            "ABCGgmp",
            &[
                "after",
                "before",
                "context",
                "file-search-regex",
                "ignore",
                "ignore-dir",
                "max-count",
                "path-to-ignore",
                "depth",
                "pager",
                "ackrc",
                "type-set",
                "type-add",
                "match",
            ],
            &[],
        ),
    );
    if has(&items, &["--pager"]) {
        a.complex(format!("`{name} --pager` runs another program"));
    }
    // An ackrc holds options, `--pager` among them.
    if name != "ag" && has(&items, &["--ackrc"]) {
        a.complex(format!(
            "`{name} --ackrc` reads options, a pager among them, from a file"
        ));
    }
    for f in values(&items, &["-p", "--path-to-ignore"]) {
        a.read_path(f, cwd);
    }
    let mut ops = operands(&items);
    if !ops.is_empty() {
        ops.remove(0);
    }
    if ops.is_empty() {
        ops.push(Arg::Lit(".".into()));
    }
    for op in &ops {
        a.search_root(op, cwd);
    }
}

/// jq: the filter is the first operand unless `-f FILE`; `--arg NAME VALUE` and friends take two
/// values; `--rawfile`/`--slurpfile NAME FILE` read FILE. jq cannot write files or run programs.
fn jq(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let mut i = 0;
    let mut filter_from_file = false;
    let mut ops = Vec::new();
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        match arg.lit() {
            Some("--arg" | "--argjson") => i += 2,
            Some("--rawfile" | "--slurpfile") => {
                if let Some(f) = args.get(i + 1) {
                    a.read_path(f, cwd);
                }
                i += 2;
            }
            Some("-f" | "--from-file") => {
                if let Some(f) = args.get(i) {
                    a.read_path(f, cwd);
                }
                filter_from_file = true;
                i += 1;
            }
            Some("--indent" | "-L") => i += 1,
            Some("--args" | "--jsonargs") => break,
            Some(t) if t.starts_with('-') && t.len() > 1 => {}
            _ => ops.push(arg.clone()),
        }
    }
    if !filter_from_file && !ops.is_empty() {
        ops.remove(0);
    }
    for op in &ops {
        a.read_path(op, cwd);
    }
}

/// yq: `-i` (`--inplace` in Go's yq, `--in-place` in Python's) rewrites its files; Go's
/// `-s`/`--split-exp EXPR` writes each result to a file named by EXPR at run time. The expression is
/// the first operand.
fn yq(a: &mut Analysis<'_>, c: &Call<'_>, cwd: &mut Cwd) {
    let args = c.args;
    let spec = OptionSpec::gnu(
        "pIoes",
        &[
            "input-format",
            "output-format",
            "indent",
            "expression",
            "from-file",
            "front-matter",
            "split-exp",
        ],
        &[],
    )
    .flags(
        "iPrjCMNv",
        &[
            "inplace",
            "in-place",
            "prettyPrint",
            "unwrapScalar",
            "null-input",
            "exit-status",
            "colors",
            "no-colors",
            "no-doc",
            "nul-output",
            "verbose",
            "raw-output",
            "yaml-output",
            "yaml-roundtrip",
            "tojson",
            "toml-output",
            "xml-output",
            "sort-keys",
            "width",
            "compact-output",
            "slurp",
        ],
    );
    let items = scan(args, &spec);
    c.check_options(a, &items, &spec);
    let in_place = has(&items, &["-i", "--inplace", "--in-place"]);
    if has(&items, &["-s", "--split-exp"]) {
        a.complex("`yq --split-exp` writes files whose names are computed at run time");
        a.mutates("yq --split-exp writes files named at run time");
    }
    let mut ops = operands(&items);
    if matches!(
        ops.first().and_then(Arg::lit),
        Some("eval" | "e" | "eval-all" | "ea")
    ) {
        ops.remove(0);
    }
    if !has(&items, &["--from-file", "--expression"]) && !ops.is_empty() {
        ops.remove(0);
    }
    for f in values(&items, &["--from-file"]) {
        a.read_path(f, cwd);
    }
    for op in &ops {
        if in_place {
            a.write_path(op, cwd, "yq -i");
        } else {
            a.read_path(op, cwd);
        }
    }
}
