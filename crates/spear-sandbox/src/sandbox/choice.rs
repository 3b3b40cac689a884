//! Which confinement runs a sandbox's commands ([`Confinement`]), decided purely ([`choose`])
//! from the operator's `[sandbox] backend` and what was probed. No silent fallback: `auto` takes
//! the landlock backend only where bubblewrap cannot make its namespaces and Landlock gives every
//! guarantee required; otherwise it refuses, naming what is missing and both ways out.

use spear_core::{Guarantee, GuaranteeSet};

use super::config::BackendChoice;

/// The confinement a sandbox resolved to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// bubblewrap: namespaces, the mount view, seccomp.
    Bubblewrap,
    /// The landlock backend (`landlock` module of this crate), at the kernel's Landlock ABI.
    Landlock {
        /// The ABI the kernel offers.
        abi: u32,
    },
}

impl Confinement {
    /// Its name in `spear doctor` and results.
    pub fn name(self) -> &'static str {
        match self {
            Confinement::Bubblewrap => "bubblewrap",
            Confinement::Landlock { .. } => "landlock",
        }
    }
}

/// Why `auto` took no backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoBackend {
    /// Required guarantees the landlock backend does not give.
    pub missing: GuaranteeSet,
    /// Why bubblewrap cannot run.
    pub bubblewrap: String,
}

/// Every guarantee bubblewrap gives where it works (all of them): what an unset `[sandbox]
/// require` asks of `auto`.
pub fn bubblewrap_gives_everywhere() -> GuaranteeSet {
    Guarantee::ALL.into_iter().collect()
}

/// The decision, pure: `userns` is whether bubblewrap can make its namespaces here (or why not),
/// `landlock` what the landlock backend gives here, `require` the operator's `[sandbox]
/// require` (`None`: unset, which asks for [`bubblewrap_gives_everywhere`]).
pub(crate) fn choose(
    choice: BackendChoice,
    userns: Result<(), String>,
    abi: u32,
    landlock: GuaranteeSet,
    require: Option<GuaranteeSet>,
) -> Result<Confinement, NoBackend> {
    match choice {
        BackendChoice::Bubblewrap => Ok(Confinement::Bubblewrap),
        BackendChoice::Landlock => Ok(Confinement::Landlock { abi }),
        BackendChoice::Auto => match userns {
            Ok(()) => Ok(Confinement::Bubblewrap),
            Err(bubblewrap) => {
                let missing = require
                    .unwrap_or_else(bubblewrap_gives_everywhere)
                    .unmet(landlock);
                if missing.is_empty() && abi > 0 {
                    Ok(Confinement::Landlock { abi })
                } else {
                    Err(NoBackend {
                        missing,
                        bubblewrap,
                    })
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::error::SandboxError;
    use Guarantee as G;

    fn set(gs: &[Guarantee]) -> GuaranteeSet {
        GuaranteeSet::of(gs)
    }

    const LANDLOCK: &[Guarantee] = &[
        G::WriteBoundary,
        G::EnvironmentScrubbed,
        G::NetworkClosed,
        G::ResourceLimits,
        G::TargetPolicy,
    ];

    #[test]
    fn forced_choices_are_taken_as_named() {
        let no = || Err("no userns".to_owned());
        assert_eq!(
            choose(BackendChoice::Bubblewrap, no(), 7, set(LANDLOCK), None),
            Ok(Confinement::Bubblewrap)
        );
        assert_eq!(
            choose(BackendChoice::Landlock, Ok(()), 7, set(LANDLOCK), None),
            Ok(Confinement::Landlock { abi: 7 })
        );
    }

    #[test]
    fn auto_takes_bubblewrap_where_it_works_whatever_is_required() {
        assert_eq!(
            choose(
                BackendChoice::Auto,
                Ok(()),
                7,
                set(LANDLOCK),
                Some(set(&[G::WriteBoundary]))
            ),
            Ok(Confinement::Bubblewrap)
        );
    }

    #[test]
    fn auto_without_userns_and_without_the_operator_s_word_refuses_naming_what_is_missing() {
        let err = choose(
            BackendChoice::Auto,
            Err("denied".into()),
            7,
            set(LANDLOCK),
            None,
        )
        .unwrap_err();
        assert_eq!(err.missing, set(&[G::ProcessBoundary, G::ReadBoundary]));
        assert_eq!(err.bubblewrap, "denied");
    }

    #[test]
    fn auto_without_userns_takes_landlock_when_it_gives_every_requirement() {
        let require = set(&[G::WriteBoundary, G::EnvironmentScrubbed]);
        assert_eq!(
            choose(
                BackendChoice::Auto,
                Err("denied".into()),
                7,
                set(LANDLOCK),
                Some(require)
            ),
            Ok(Confinement::Landlock { abi: 7 })
        );
        // An empty requirement is the operator's word too.
        assert_eq!(
            choose(
                BackendChoice::Auto,
                Err("d".into()),
                3,
                set(LANDLOCK),
                Some(GuaranteeSet::EMPTY)
            ),
            Ok(Confinement::Landlock { abi: 3 })
        );
        // One Landlock cannot give refuses.
        let err = choose(
            BackendChoice::Auto,
            Err("d".into()),
            7,
            set(LANDLOCK),
            Some(set(&[G::WriteBoundary, G::ProcessBoundary])),
        )
        .unwrap_err();
        assert_eq!(err.missing, set(&[G::ProcessBoundary]));
    }

    #[test]
    fn auto_never_takes_a_host_without_landlock() {
        let err = choose(
            BackendChoice::Auto,
            Err("d".into()),
            0,
            GuaranteeSet::EMPTY,
            Some(GuaranteeSet::EMPTY),
        )
        .unwrap_err();
        assert!(err.missing.is_empty());
    }

    #[test]
    fn the_refusal_names_the_missing_guarantees_and_both_fixes() {
        let e = SandboxError::NoBackend {
            missing: set(&[G::ProcessBoundary, G::ReadBoundary]),
            bubblewrap: "bwrap: No permissions to create a new namespace".into(),
        };
        let msg = e.to_string();
        for needle in [
            "process_boundary, read_boundary",
            "[sandbox] require",
            "user namespaces",
            "No permissions",
            "nothing ran",
        ] {
            assert!(msg.contains(needle), "{needle}: {msg}");
        }
    }
}
