//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// musiclib: a self-hosted music library server.
///
/// Settings come from environment variables (docs/configuration.md), optionally from a TOML
/// file.
#[derive(Debug, Parser)]
#[command(name = "musiclib", version = version_text(), about)]
pub struct Cli {
    /// TOML file of settings (same names as the environment variables, any case).
    #[arg(long, global = true, env = "MUSICLIB_CONFIG")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `--version`: the release and the database schema it makes (its newest migration).
fn version_text() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{} (schema {})",
            env!("CARGO_PKG_VERSION"),
            musiclib_core::schema_version()
        )
    });
    &TEXT
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
    Migrate {
        /// Change nothing: list the migrations this release would apply (exit status 1
        /// when there are any, 0 when the database is up to date).
        #[arg(long)]
        check: bool,
    },
    /// Copy the library (database, generated secrets, local media) into the new or empty
    /// folder DIR while the server keeps running. The last line printed is DIR.
    Backup {
        /// Where to write the backup.
        dir: PathBuf,
    },
    /// Put a backup made by `backup` into the configured DATA_DIR and database.
    Restore {
        /// The backup's folder.
        dir: PathBuf,
        /// Replace a library already there.
        #[arg(long)]
        force: bool,
    },
    /// Ask the server running with these settings for its `/health` (on BIND_ADDRESS; a
    /// wildcard address is asked on loopback) and print the answer: exit status 0 when it
    /// is healthy, 1 when it answers otherwise or not within 5 seconds. The container
    /// image's HEALTHCHECK.
    Healthcheck,
    /// Manage accounts.
    User {
        /// What to do with accounts.
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Import LOCAL_MEDIA_IMPORT_PATH now, with a progress bar and a summary.
    Scan,
    /// Print the effective configuration (secrets redacted) and exit.
    Config {
        /// Print instead a settings file listing every setting, commented out, with what it
        /// does and its default (needs no settings).
        #[arg(long)]
        template: bool,
    },
    /// Print the OpenAPI document of `/api/v1` (what `/api/v1/openapi.json` serves; the web
    /// player's types are generated from it). Needs no settings.
    Openapi,
    /// Print Chromaprint fingerprints of audio files, as `fpcalc` does (same options, also
    /// spelled with one dash: `-raw`, `-json`, `-plain`, `-length`). Needs no settings.
    Fingerprint {
        /// Print the raw fingerprint (comma-separated integers) instead of the compressed one.
        #[arg(long)]
        raw: bool,
        /// Print one JSON object per file.
        #[arg(long, conflicts_with = "plain")]
        json: bool,
        /// Print only the fingerprint.
        #[arg(long)]
        plain: bool,
        /// Seconds of audio to fingerprint.
        #[arg(long, default_value_t = 120.0)]
        length: f64,
        /// Audio files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Options `fpcalc` spells with one dash; `musiclib fingerprint` takes them both ways.
const FPCALC_OPTIONS: &[&str] = &["-raw", "-json", "-plain", "-length"];

/// Rewrites fpcalc-style options after the `fingerprint` subcommand into clap's `--long`
/// form (`-text`, fpcalc's default format, is dropped).
pub fn fpcalc_style(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut in_fingerprint = false;
    args.into_iter()
        .filter_map(|arg| {
            if arg == "fingerprint" {
                in_fingerprint = true;
            } else if in_fingerprint {
                match arg.to_str() {
                    Some("-text") => return None,
                    Some(text) if FPCALC_OPTIONS.contains(&text) => {
                        return Some(std::ffi::OsString::from(format!("-{text}")))
                    }
                    _ => {}
                }
            }
            Some(arg)
        })
        .collect()
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
