//! Root names: short, unique, and safe to put in a mount path and an audit label. Pure.

use std::path::{Path, PathBuf};

/// A root's base name made safe: ASCII letters, digits, `.`, `_` and `-` are kept, anything else
/// becomes `_`; the root directory, or a name that would be `.` or `..`, becomes `root`.
///
/// Attack: a name is spliced into `/workspaces/<name>` and into `name:rel/path` labels; a `/`,
/// `:`, control character or a bare `..` there would forge another path or another label.
pub(crate) fn sanitize_name(host_path: &Path) -> String {
    let Some(base) = host_path.file_name() else {
        return "root".to_owned();
    };
    let name: String = base
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name == "." || name == ".." {
        "root".to_owned()
    } else {
        name
    }
}

/// Names for roots in order: each one's sanitised base name, made unique with `-2`, `-3`...
pub(crate) fn unique_names(roots: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(roots.len());
    for root in roots {
        let base = sanitize_name(root);
        let mut candidate = base.clone();
        let mut n = 2u32;
        while names.contains(&candidate) {
            candidate = format!("{base}-{n}");
            n += 1;
        }
        names.push(candidate);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn sanitize_name_table() {
        let cases: &[(&str, &str)] = &[
            ("/home/u/proj", "proj"),
            ("/home/u/my-proj_2.0", "my-proj_2.0"),
            ("/home/u/a b", "a_b"),
            ("/home/u/a:b", "a_b"),
            ("/home/u/a\nb", "a_b"),
            ("/home/u/caf\u{e9}", "caf_"),
            ("/home/u/.hidden", ".hidden"),
            ("/", "root"),
            ("", "root"),
        ];
        for (path, want) in cases {
            assert_eq!(sanitize_name(Path::new(path)), *want, "{path:?}");
        }
        let non_utf8 = Path::new(OsStr::from_bytes(b"/home/u/a\xffb"));
        assert_eq!(sanitize_name(non_utf8), "a_b");
    }

    #[test]
    fn unique_names_table() {
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&["/a/proj"], &["proj"]),
            (&["/a/proj", "/b/lib"], &["proj", "lib"]),
            (
                &["/a/proj", "/b/proj", "/c/proj"],
                &["proj", "proj-2", "proj-3"],
            ),
            // A real name that looks like a suffixed one does not collide.
            (
                &["/a/proj", "/b/proj-2", "/c/proj"],
                &["proj", "proj-2", "proj-3"],
            ),
            // Names that sanitise to the same text are made unique too.
            (&["/a/x y", "/b/x:y"], &["x_y", "x_y-2"]),
        ];
        for (roots, want) in cases {
            let roots: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
            let want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(unique_names(&roots), want, "{roots:?}");
        }
    }
}
