//! Everything the user sees: messages on stderr at a level, data on stdout.
//!
//! stdout carries only what a command produces (templates, lists, JSON) so it can be piped;
//! progress, warnings and errors go to stderr.

pub mod deploy_report;
pub mod diff;
pub mod diff_json;
pub mod progress;
pub mod prompt;

use std::io::IsTerminal;

use crate::env;

/// Sets up `tracing` for `-v` (info) and `-vv` (debug); quiet otherwise except warnings.
pub fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CDKD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("cdkd={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour_enabled())
        .without_time()
        .with_target(false)
        .try_init();
}

/// Colour only on a terminal, and never when NO_COLOR is set.
pub fn colour_enabled() -> bool {
    std::env::var_os(env::NO_COLOR).is_none() && std::io::stderr().is_terminal()
}

pub fn warn(message: impl AsRef<str>) {
    progress::print_line(&format!("warning: {}", message.as_ref()));
}

pub fn error(message: impl AsRef<str>) {
    progress::print_line(&format!("error: {}", message.as_ref()));
}

pub fn info(message: impl AsRef<str>) {
    progress::print_line(message.as_ref());
}

/// Prints data to stdout. A reader that went away (`cdkd state show ... | head`) is not an
/// error worth a panic, and must not stop a command that holds a lock: the rest is dropped.
pub fn output(text: impl AsRef<str>) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{}", text.as_ref());
}
