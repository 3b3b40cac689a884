//! spear's SIGPIPE prelude: the function that [`super::pipe_status`]'s rewrite defines in front of
//! an agent's script and calls after each rewritten pipeline, and how the classifier knows it.
//!
//! The classifier judges the exact script bash runs, prelude included. The prelude is spear's
//! code, not the agent's: a script that begins with it byte for byte is judged as the function
//! known (a call to it computes a status and runs nothing) and the rest as the agent's. A script
//! that defines the name again gets its own definition judged like any other function.

/// The name of the function; a script that names `__spear_` anywhere is never rewritten.
pub(crate) const PIPEFAIL_FUNCTION: &str = "__spear_pipefail";

/// The function the rewrite calls, defined on the script's first line so that the line numbers
/// of bash's messages stay those of the script.
///
/// It assigns no local and expands nothing but its arguments; its one global, `__spear_r`, is
/// named so that no script meets it.
pub(crate) const PRELUDE: &str = "__spear_pipefail() { __spear_r=0; while [ \"$#\" -gt 1 ]; do \
[ \"$1\" -ne 0 ] && [ \"$1\" -ne 141 ] && __spear_r=$1; shift; done; \
[ \"$1\" -ne 0 ] && __spear_r=$1; return \"$__spear_r\"; }; ";

/// What follows spear's prelude in `script`, or `None` when `script` does not begin with it.
///
/// The prelude ends with `; ` after a complete command, so the rest parses alone as it parses
/// after the prelude: no word, quote or here-document crosses the boundary.
pub(crate) fn after_prelude(script: &str) -> Option<&str> {
    script.strip_prefix(PRELUDE)
}

#[cfg(test)]
mod tests {
    use spear_core::CommandClass;

    use super::*;
    use crate::shell::pipe_status::tolerate_sigpipe;
    use crate::tests_support::fixture;

    #[test]
    fn the_rewritten_script_is_judged_as_the_agents() {
        let fx = fixture();
        let script = "cat notes.txt | head -3 && ls | wc -l";
        let rewritten = tolerate_sigpipe(script).unwrap();
        assert!(rewritten.starts_with(PRELUDE), "{rewritten}");
        let original = fx.policy.classify_script(script, &fx.ws);
        assert_eq!(fx.policy.classify_script(&rewritten, &fx.ws), original);
        assert_eq!(original.reason, "only reads: cat, head, ls, wc");
        assert_eq!(original.executable, "cat (1 arg) + 3 more");
    }

    #[test]
    fn what_follows_the_prelude_is_judged_in_full() {
        let fx = fixture();
        // The rest of a script that begins with the prelude is the agent's, however it is made.
        let rest = fx
            .policy
            .classify_script(&format!("{PRELUDE}rm -rf src"), &fx.ws);
        assert_ne!(rest.class, CommandClass::ReadOnly, "{rest:?}");
        assert!(!rest.write_targets.is_empty(), "{rest:?}");
        // A definition of the name by the script itself is judged, and so is every call after it.
        let redefined = fx.policy.classify_script(
            &format!(
                "{PRELUDE}__spear_pipefail() {{ rm -rf src; }}; true | true || __spear_pipefail 1"
            ),
            &fx.ws,
        );
        assert_ne!(redefined.class, CommandClass::ReadOnly, "{redefined:?}");
        assert!(!redefined.write_targets.is_empty(), "{redefined:?}");
        // The redefined body and the call count as the agent's commands.
        assert_eq!(redefined.executable, "rm (2 args) + 3 more");
        // Without the prelude, the name is no function of spear's: an unknown program.
        let bare = fx.policy.classify_script("__spear_pipefail 0 1", &fx.ws);
        assert_ne!(bare.class, CommandClass::ReadOnly, "{bare:?}");
        assert_eq!(bare.executable, "__spear_pipefail (2 args)");
        // Positive control: with the prelude, the call is spear's status computation.
        let known = fx
            .policy
            .classify_script(&format!("{PRELUDE}__spear_pipefail 0 1"), &fx.ws);
        assert_eq!(known.class, CommandClass::ReadOnly, "{known:?}");
        assert_eq!(known.executable, "(empty)");
    }

    #[test]
    fn the_rest_after_the_prelude_parses_alone() {
        assert_eq!(after_prelude(&format!("{PRELUDE}echo a")), Some("echo a"));
        assert_eq!(after_prelude("echo a"), None);
        // One byte different is not the prelude.
        let near = PRELUDE.replacen("141", "142", 1);
        assert_eq!(after_prelude(&format!("{near}echo a")), None);
    }
}
