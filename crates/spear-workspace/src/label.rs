//! Audit labels: how a location is named in the audit log and in messages. Pure.

use std::path::Path;

/// The label of `rel` in a root: `rel/path` in the primary root (`root_name` is `None`),
/// `name:rel/path` in another; `.` and `name:.` for the roots themselves.
pub(crate) fn format_label(root_name: Option<&str>, rel: &Path) -> String {
    let rel = if rel.as_os_str().is_empty() {
        ".".into()
    } else {
        rel.to_string_lossy()
    };
    match root_name {
        None => rel.into_owned(),
        Some(name) => format!("{name}:{rel}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_label_table() {
        let cases: &[(Option<&str>, &str, &str)] = &[
            (None, "", "."),
            (None, "a", "a"),
            (None, "src/lib.rs", "src/lib.rs"),
            (Some("lib"), "", "lib:."),
            (Some("lib"), "a", "lib:a"),
            (Some("proj-2"), "src/x.rs", "proj-2:src/x.rs"),
        ];
        for (name, rel, want) in cases {
            assert_eq!(format_label(*name, Path::new(rel)), *want, "{name:?} {rel}");
        }
    }
}
