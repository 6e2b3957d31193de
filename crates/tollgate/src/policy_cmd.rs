//! `tollgate policy validate|test|check`: check a policy directory before
//! it is deployed (both exit non-zero on any problem), and ask it whether
//! one call would be allowed — the console's "would this be allowed?" from
//! the command line.

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
    /// Would this call be allowed? Prints the decision and the text of
    /// the policies that decided it; exits 0 when allowed, 1 when denied.
    Check(CheckArgs),
}

/// One call to decide.
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// The policy directory.
    #[arg(long, default_value = "policies")]
    policies: PathBuf,
    /// The caller's subject.
    #[arg(long)]
    sub: String,
    /// The caller's team.
    #[arg(long)]
    team: Option<String>,
    /// A group of the caller (repeatable).
    #[arg(long = "group")]
    groups: Vec<String>,
    /// The token's scopes, space-separated.
    #[arg(long, default_value = "")]
    scope: String,
    /// The server (route) called.
    #[arg(long)]
    server: String,
    /// The JSON-RPC method, e.g. `tools/call`, `resources/read`, `tools/list`.
    #[arg(long, default_value = "tools/call")]
    method: String,
    /// The tool or prompt name, or resource URI.
    #[arg(long)]
    name: Option<String>,
    /// The call came through this virtual server.
    #[arg(long = "virtual-server")]
    virtual_server: Option<String>,
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
        PolicyCommand::Check(args) => check(args),
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

/// `policy check`: decide one call as the gateway would (modern era, no
/// client address, the tool's annotations unknown).
fn check(args: &CheckArgs) -> ExitCode {
    let engine = match tollgate_policy::PolicyEngine::load(tollgate_policy::Settings::new(&args.policies)) {
        Ok(e) => e,
        Err(errors) => {
            eprintln!("error: {errors}");
            return ExitCode::from(2);
        }
    };
    let principal = tollgate_core::Principal {
        team: args.team.clone(),
        groups: args.groups.clone(),
        scopes: args.scope.split_whitespace().map(str::to_owned).collect(),
        ..tollgate_core::Principal::bare("cli", &*args.sub, tollgate_core::PrincipalKind::User)
    };
    let request = tollgate_policy::CallRequest::new(&args.server, &args.method)
        .name(args.name.as_deref())
        .virtual_server(args.virtual_server.as_deref());
    let d = engine.decide(&std::sync::Arc::new(principal), &request);
    println!("{} ({})", if d.allowed { "allow" } else { "deny" }, d.reason.as_str());
    for id in &d.determining_policy_ids {
        if let Some(p) = engine.policy(id) {
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            println!("\n{id} ({}{line})\n{}", p.file.display(), p.source.trim_end());
        }
    }
    if d.allowed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
