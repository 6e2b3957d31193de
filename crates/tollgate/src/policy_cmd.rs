//! `tollgate policy validate|test`: check a policy directory before it is
//! deployed. Both exit non-zero on any problem.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

/// Policy tooling.
#[derive(Subcommand)]
pub(crate) enum PolicyCommand {
    /// Validate the schema and every `*.cedar` file against it.
    Validate {
        /// The policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
    },
    /// Run the test tables under `<policies>/tests/` and print
    /// `N passed, N failed`.
    Test {
        /// The policy directory.
        #[arg(long, default_value = "policies")]
        policies: PathBuf,
    },
}

/// Run a policy command.
pub(crate) fn run(command: &PolicyCommand) -> ExitCode {
    match command {
        PolicyCommand::Validate { policies } => match tollgate_policy::validate(policies) {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(errors) => {
                for e in &errors {
                    eprintln!("error: {e}");
                }
                ExitCode::from(2)
            }
        },
        PolicyCommand::Test { policies } => {
            let report = tollgate_policy::run_tests(policies);
            println!("{report}");
            if report.failed() == 0 && report.passed() > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
