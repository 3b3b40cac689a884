//! The mode flags every subcommand that runs or decides something shares.

use spear_core::{CapabilityPolicy, ExecutionMode};

/// `--safe` (default), `--ask`, `--auto`, and `--no-network`.
// clap flags are booleans by nature; `mode()` turns the three exclusive ones into one value.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModeArgs {
    /// Read-only: nothing that changes files runs (the default).
    #[arg(long, group = "mode")]
    safe: bool,
    /// Ask before anything that changes files, reaches the network or cannot be analysed.
    #[arg(long, visible_alias = "confirm", alias = "no-bypass", group = "mode")]
    ask: bool,
    /// Allow what the capability matrix grants without asking; the sandbox confines it.
    #[arg(
        long,
        short = 'y',
        visible_alias = "yolo",
        alias = "bypass-permissions",
        group = "mode"
    )]
    auto: bool,
    /// Take the network away in every mode.
    #[arg(long)]
    pub no_network: bool,
}

impl ModeArgs {
    /// ASK, with or without the network: the mode of `spear grant` and `spear exec --grant`.
    pub fn ask(no_network: bool) -> Self {
        ModeArgs {
            ask: true,
            no_network,
            ..ModeArgs::default()
        }
    }

    /// `mode`, with or without the network: a session narrowed to what a credential grants.
    pub fn of(mode: ExecutionMode, no_network: bool) -> Self {
        ModeArgs {
            safe: mode == ExecutionMode::Safe,
            ask: mode == ExecutionMode::Ask,
            auto: mode == ExecutionMode::Auto,
            no_network,
        }
    }

    /// The selected mode.
    pub fn mode(&self) -> ExecutionMode {
        if self.auto {
            ExecutionMode::Auto
        } else if self.ask {
            ExecutionMode::Ask
        } else {
            ExecutionMode::Safe
        }
    }

    /// The capability policy of `mode` under these flags.
    pub fn policy_for(&self, mode: ExecutionMode) -> CapabilityPolicy {
        let policy = CapabilityPolicy::for_mode(mode);
        if self.no_network {
            policy.without_network()
        } else {
            policy
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        mode: ModeArgs,
    }

    fn mode(args: &[&str]) -> Result<(ExecutionMode, bool), clap::Error> {
        let cli = Cli::try_parse_from(std::iter::once("spear").chain(args.iter().copied()))?;
        Ok((cli.mode.mode(), cli.mode.no_network))
    }

    #[test]
    fn flags_and_aliases() {
        use ExecutionMode::{Ask, Auto, Safe};
        for (args, expected) in [
            (&[][..], Safe),
            (&["--safe"][..], Safe),
            (&["--ask"][..], Ask),
            (&["--confirm"][..], Ask),
            (&["--no-bypass"][..], Ask),
            (&["--auto"][..], Auto),
            (&["-y"][..], Auto),
            (&["--yolo"][..], Auto),
            (&["--bypass-permissions"][..], Auto),
        ] {
            assert_eq!(mode(args).unwrap(), (expected, false), "{args:?}");
        }
        assert_eq!(mode(&["--auto", "--no-network"]).unwrap(), (Auto, true));
    }

    #[test]
    fn one_mode_at_a_time() {
        assert!(mode(&["--safe", "--auto"]).is_err());
        assert!(mode(&["--ask", "--yolo"]).is_err());
    }

    #[test]
    fn no_network_narrows_every_mode() {
        let cli = Cli::try_parse_from(["spear", "--auto", "--no-network"]).unwrap();
        for m in ExecutionMode::ALL {
            assert!(cli.mode.policy_for(m).network_removed());
        }
    }
}
