//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// musiclib: a self-hosted music library server.
///
/// Settings come from environment variables (see the README), optionally from a TOML file.
#[derive(Debug, Parser)]
#[command(name = "musiclib", version, about)]
pub struct Cli {
    /// TOML file of settings (same names as the environment variables, any case).
    #[arg(long, global = true, env = "MUSICLIB_CONFIG")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API, with an in-process job worker.
    Serve {
        /// Do not run jobs in this process (scale-out: run `musiclib worker` instead).
        #[arg(long)]
        no_worker: bool,
    },
    /// Run background jobs only.
    Worker,
    /// Apply database migrations and exit.
    Migrate,
    /// Manage accounts.
    User {
        /// What to do with accounts.
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Import LOCAL_MEDIA_IMPORT_PATH now, with a progress bar and a summary.
    Scan,
    /// Print the effective configuration (secrets redacted) and exit.
    Config,
}

/// Account subcommands.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create an account; the password is read from stdin, or prompted on a terminal.
    Create {
        /// User name.
        #[arg(long)]
        username: String,
        /// Make it a superuser.
        #[arg(long)]
        admin: bool,
    },
}
