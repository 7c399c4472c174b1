//! `drainwatch probe`: validate the environment before the runtime starts, serve, and exit
//! with the behaviour's code after flushing every event line.

use std::process::ExitCode;

use drainwatch::host;
use drainwatch::probe::{self, config::ProbeConfig, emit::Emitter};

use super::{EXIT_TOOL, runtime};
use drainwatch::console;
use drainwatch::evidence::event::EventName;

pub fn run_probe() -> ExitCode {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let cfg = match ProbeConfig::from_lookup(|k| std::env::var(k).ok(), host::hostname().ok(), cpus)
    {
        Ok(c) => c,
        Err(e) => {
            console::failure!("drainwatch probe: {e}");
            return ExitCode::from(EXIT_TOOL);
        }
    };
    let emitter = Emitter::start(std::io::stdout(), cfg.behavior);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            console::failure!("drainwatch probe: {e:#}");
            return ExitCode::from(EXIT_TOOL);
        }
    };
    let result = rt.block_on(probe::run(cfg, emitter.clone()));
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            emitter.emit(EventName::Fatal, None, Some(format!("{e}")));
            console::failure!("drainwatch probe: {e}");
            i32::from(EXIT_TOOL)
        }
    };
    emitter.flush();
    // Exit now: do not wait for connection tasks, exactly as a process exit would.
    std::process::exit(code)
}
