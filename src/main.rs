//! The drainwatch binary: parse, validate, dispatch, and map the result to an exit code
//! (0 report written, 1 policy missed, 2 tool or infrastructure failure, 130 interrupted).

mod cmd;

use std::process::ExitCode;

use cmd::EXIT_TOOL;
use drainwatch::cli::{Cli, Command};
use drainwatch::console;

fn main() -> ExitCode {
    let cli = Cli::parse_explicit();
    console::configure(cli.quiet);
    let result = match cli.command {
        Command::Probe => return cmd::probe::run_probe(),
        Command::Run(args) => cmd::run::cmd_run(*args),
        Command::Client(args) if args.attach.attach => cmd::attach::cmd_attach(args),
        Command::Client(args) => cmd::client::cmd_client(args),
        Command::Report(args) => cmd::report::cmd_report(args),
        Command::Manifests(args) => cmd::manifests::cmd_manifests(args),
        Command::Rbac(args) => cmd::rbac::cmd_rbac(&args),
        Command::Cleanup(args) => cmd::cleanup::cmd_cleanup(args),
        Command::Ci(args) => cmd::ci::cmd_ci(args),
        Command::Compare(args) => cmd::compare::cmd_compare(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            console::failure!("drainwatch: {e:#}");
            ExitCode::from(EXIT_TOOL)
        }
    }
}
