//! The file functions of each language: which argument of which call is a path, and whether the
//! call reads or writes it. A call not listed here names no path (its strings are only strings).

use super::Lang;

/// What a call does with its arguments. Indexes count positional arguments from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Reads (opens, lists, tests, loads) the path at this index.
    Read(usize),
    /// Writes (creates, changes, removes) the path at this index.
    Write(usize),
    /// Writes every path from this index on (`os.rename(a, b)`, `unlink LIST`).
    WriteFrom(usize),
    /// Reads the first path and writes the last (`shutil.copy(src, dst)`).
    Copy,
    /// Loads a module: a path when it starts with `.` or `/` (`require('./x.json')`).
    Module,
    /// Opens `path`, for writing when `mode` (or `mode=`/`flags=`) says so or is not known.
    Open {
        /// The index of the path.
        path: usize,
        /// The index of the mode.
        mode: usize,
    },
    /// Perl's `open(FH, MODE, PATH)` or `open(FH, "MODE PATH")`.
    PerlOpen,
    /// Python's `Path(p)`: what happens to `p` is the method called on it.
    PathObject,
}

/// A known call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Call {
    /// What it does with its arguments.
    pub role: Role,
    /// Whether it may be called without parentheses (Perl's and Ruby's builtins).
    pub parens_optional: bool,
}

/// What a Python `Path`'s method does with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathUse {
    /// Reads it (or tests, lists or resolves it).
    Reads,
    /// Creates, changes or removes it.
    Writes,
    /// `.open(mode)`.
    Opens,
    /// `.rename(target)`, `.replace(target)`: both change.
    Renames,
}

/// The call `name` with receiver `receiver` (the dotted name before it; `None` when called
/// bare), if it is a file function of `lang`.
pub(crate) fn lookup(lang: Lang, receiver: Option<&str>, name: &str) -> Option<Call> {
    let role = match lang {
        Lang::Python => python(receiver, name),
        Lang::Node => node(receiver, name),
        Lang::Ruby => ruby(receiver, name),
        Lang::Perl => perl(receiver, name),
        Lang::Php => php(receiver, name),
    }?;
    Some(Call {
        role,
        parens_optional: matches!(lang, Lang::Perl | Lang::Ruby),
    })
}

/// What the method `name` of a Python `Path` does with its path.
pub(crate) fn path_method(name: &str) -> Option<PathUse> {
    Some(match name {
        "read_text" | "read_bytes" | "exists" | "is_file" | "is_dir" | "is_symlink" | "stat"
        | "lstat" | "iterdir" | "glob" | "rglob" | "resolve" | "samefile" | "readlink"
        | "owner" | "group" | "walk" | "absolute" => PathUse::Reads,
        "write_text" | "write_bytes" | "touch" | "mkdir" | "unlink" | "rmdir" | "chmod"
        | "lchmod" | "symlink_to" | "hardlink_to" => PathUse::Writes,
        "open" => PathUse::Opens,
        "rename" | "replace" => PathUse::Renames,
        _ => return None,
    })
}

fn python(receiver: Option<&str>, name: &str) -> Option<Role> {
    use Role::{Copy, Open, PathObject, Read, Write, WriteFrom};
    Some(match (receiver.unwrap_or(""), name) {
        ("" | "io" | "codecs" | "tarfile" | "os", "open") | ("" | "zipfile", "ZipFile") => {
            Open { path: 0, mode: 1 }
        }
        ("" | "pathlib", "Path" | "PurePath" | "PosixPath") => PathObject,
        (
            "os",
            "remove" | "unlink" | "rmdir" | "removedirs" | "mkdir" | "makedirs" | "chmod" | "chown"
            | "lchown" | "truncate" | "utime" | "mkfifo" | "mknod",
        )
        | ("shutil", "rmtree" | "make_archive")
        | ("np" | "numpy", "save" | "savetxt" | "savez" | "savez_compressed") => Write(0),
        ("os", "rename" | "replace" | "renames") | ("shutil", "move") => WriteFrom(0),
        ("os", "symlink" | "link") => Write(1),
        ("os", "listdir" | "scandir" | "walk" | "stat" | "lstat" | "access" | "readlink")
        | (
            "os.path",
            "exists" | "isfile" | "isdir" | "islink" | "getsize" | "getmtime" | "lexists",
        )
        | ("glob", "glob" | "iglob")
        | ("np" | "numpy", "load" | "loadtxt" | "genfromtxt" | "fromfile")
        | (
            "pd" | "pandas",
            "read_csv" | "read_json" | "read_excel" | "read_parquet" | "read_table" | "read_pickle"
            | "read_feather",
        )
        | ("sqlite3", "connect")
        | ("Image", "open")
        | ("ET" | "ElementTree" | "etree", "parse")
        | ("runpy", "run_path") => Read(0),
        (
            "shutil",
            "copy" | "copy2" | "copyfile" | "copytree" | "copymode" | "copystat" | "unpack_archive",
        ) => Copy,
        _ => return None,
    })
}

fn node(receiver: Option<&str>, name: &str) -> Option<Role> {
    use Role::{Copy, Module, Open, Read, Write, WriteFrom};
    // A method of a string (`'a'.replace(...)`) is never a file function.
    if receiver == Some("''") {
        return None;
    }
    Some(match name {
        "require" | "import" if receiver.is_none() => Module,
        "readFileSync" | "readFile" | "readdirSync" | "readdir" | "existsSync" | "exists"
        | "statSync" | "stat" | "lstatSync" | "lstat" | "accessSync" | "access"
        | "createReadStream" | "realpathSync" | "readlinkSync" | "readlink" | "opendirSync"
        | "opendir" | "watch" | "watchFile" => Read(0),
        "writeFileSync" | "writeFile" | "appendFileSync" | "appendFile" | "mkdirSync" | "mkdir"
        | "rmSync" | "rm" | "rmdirSync" | "rmdir" | "unlinkSync" | "unlink" | "truncateSync"
        | "truncate" | "createWriteStream" | "chmodSync" | "chmod" | "chownSync" | "chown"
        | "utimesSync" | "utimes" | "mkdtempSync" | "mkdtemp" | "lchmodSync" | "lutimesSync" => {
            Write(0)
        }
        "symlinkSync" | "symlink" | "linkSync" | "link" => Write(1),
        "renameSync" | "rename" => WriteFrom(0),
        "copyFileSync" | "copyFile" | "cpSync" | "cp" => Copy,
        "openSync" | "open" if receiver.is_some() => Open { path: 0, mode: 1 },
        _ => return None,
    })
}

fn ruby(receiver: Option<&str>, name: &str) -> Option<Role> {
    use Role::{Copy, Module, Open, Read, Write, WriteFrom};
    let receiver = receiver.map(|r| r.trim_start_matches('.'));
    Some(match (receiver, name) {
        (None, "require") => Module,
        (None, "require_relative" | "load")
        | (
            Some("File" | "IO"),
            "read" | "readlines" | "foreach" | "binread" | "exist?" | "exists?" | "file?"
            | "directory?" | "size" | "size?" | "stat" | "lstat" | "readlink" | "mtime" | "zero?"
            | "empty?" | "readable?",
        )
        | (
            Some("Dir"),
            "entries" | "children" | "glob" | "exist?" | "exists?" | "each_child" | "foreach"
            | "empty?",
        )
        | (Some("YAML" | "Psych"), "load_file" | "safe_load_file" | "unsafe_load_file")
        | (Some("JSON"), "load_file")
        | (Some("CSV"), "read" | "foreach" | "readlines" | "table") => Read(0),
        (Some("File" | "CSV"), "open" | "new") => Open { path: 0, mode: 1 },
        (Some("File" | "IO"), "write" | "binwrite" | "truncate" | "mkfifo")
        | (Some("Dir"), "mkdir" | "rmdir" | "delete" | "unlink") => Write(0),
        (Some("File"), "delete" | "unlink" | "rename")
        | (
            Some("FileUtils"),
            "rm" | "rm_f" | "rm_r" | "rm_rf" | "remove" | "remove_dir" | "remove_entry"
            | "remove_file" | "rmdir" | "mkdir" | "mkdir_p" | "makedirs" | "mkpath" | "touch"
            | "rmtree" | "mv" | "move",
        ) => WriteFrom(0),
        (Some("File"), "symlink" | "link")
        | (Some("FileUtils"), "ln" | "ln_s" | "ln_sf" | "symlink" | "link") => Write(1),
        (Some("File" | "FileUtils"), "chmod") => WriteFrom(1),
        (Some("File"), "chown" | "utime") => WriteFrom(2),
        (Some("FileUtils"), "cp" | "copy" | "cp_r" | "copy_file" | "copy_entry" | "install") => {
            Copy
        }
        _ => return None,
    })
}

fn perl(receiver: Option<&str>, name: &str) -> Option<Role> {
    use Role::{Copy, PerlOpen, Read, Write, WriteFrom};
    Some(match (receiver, name) {
        (None, "open") => PerlOpen,
        (None, "unlink" | "make_path" | "mkpath" | "remove_tree" | "rmtree" | "rename")
        | (None | Some("File.Copy"), "move" | "mv") => WriteFrom(0),
        (None, "mkdir" | "rmdir" | "truncate") => Write(0),
        (None, "symlink" | "link") => Write(1),
        (None, "chmod") => WriteFrom(1),
        (None, "chown" | "utime") => WriteFrom(2),
        (None, "opendir") => Read(1),
        (None, "do" | "require") => Read(0),
        (None | Some("File.Copy"), "copy" | "cp") => Copy,
        _ => return None,
    })
}

fn php(receiver: Option<&str>, name: &str) -> Option<Role> {
    use Role::{Copy, Open, Read, Write, WriteFrom};
    if receiver.is_some() {
        return None;
    }
    Some(match name {
        "file_get_contents"
        | "file"
        | "readfile"
        | "is_file"
        | "file_exists"
        | "is_dir"
        | "scandir"
        | "glob"
        | "filesize"
        | "parse_ini_file"
        | "simplexml_load_file" => Read(0),
        "fopen" => Open { path: 0, mode: 1 },
        "file_put_contents" | "unlink" | "mkdir" | "rmdir" | "touch" | "chmod" | "chown" => {
            Write(0)
        }
        "rename" => WriteFrom(0),
        "symlink" | "link" => Write(1),
        "copy" => Copy,
        _ => return None,
    })
}
