//! The `musiclib` binary: parse the command line, load settings, start logging, and hand over
//! to [`wiring`]. Any error ends the process with its chain printed and a non-zero code.

mod backup;
mod cli;
mod fingerprint;
mod health;
mod listener;
mod settings;
mod shutdown;
mod telemetry;
mod web;
mod wiring;

use clap::Parser;

use crate::cli::{Cli, Command, UserCommand};
use crate::settings::{RawSettings, Settings};

fn main() -> std::process::ExitCode {
    tune_allocator();
    let cli = Cli::parse_from(cli::fpcalc_style(std::env::args_os()));
    if let Command::Fingerprint {
        raw,
        json,
        plain,
        length,
        files,
    } = &cli.command
    {
        return fingerprint::run(files, *raw, *json, *plain, *length);
    }
    if let Command::Config { template: true } = &cli.command {
        print!("{}", musiclib_core::config::declared::toml_template(&[]));
        return std::process::ExitCode::SUCCESS;
    }
    if let Command::Openapi = &cli.command {
        return match musiclib_http::openapi().to_pretty_json() {
            Ok(json) => {
                println!("{json}");
                std::process::ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("musiclib: cannot write the OpenAPI document: {error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("musiclib: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// glibc's allocator gives threads that allocate at once arenas of their own (up to eight
/// per core) and keeps what each has freed, so a busy server holds several times the memory
/// it uses. Eight arenas, one per SQLite connection of the pool, keep the resident size near
/// the live heap while threads seldom wait for each other's arena (measured with
/// `benches/catalog-load.sh`, 100,000 tracks: after a full sync pull, 60 MB with two arenas,
/// 76 MB with eight, 148 MB unbounded; Subsonic album lists of 500 at 4 connections, 84
/// requests a second with two arenas, 149 with eight).
///
/// Large blocks (2 MiB and more: a password hash's 19 MiB, a decoded cover, a file read for
/// import) are mapped and unmapped each time, never kept in an arena: glibc otherwise raises
/// that threshold to the largest block freed, and every arena keeps a password hash's worth
/// of memory after one (ten wrong passwords in a row held 173 MB, `benches/attacks.sh
/// guesses`; 78 MB with the threshold fixed). `MALLOC_ARENA_MAX` and `MALLOC_MMAP_THRESHOLD_`
/// in the environment still decide.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets allocator parameters, before any other thread starts.
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 8);
            }
        }
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 2 * 1024 * 1024);
            }
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let raw = RawSettings::load(cli.config.as_deref())?;
    telemetry::init(raw.log_format()?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Before the settings are read: reading them makes the secrets a restore brings.
    if let Command::Restore { dir, force } = &cli.command {
        return runtime.block_on(backup::restore(&raw, dir, *force));
    }
    // Before the settings are read: they would make the secrets, and this only asks the
    // server that has them.
    if let Command::Healthcheck = &cli.command {
        return runtime.block_on(health::check(&raw));
    }
    let settings = Settings::try_from(raw)?;
    runtime.block_on(async move {
        match cli.command {
            Command::Serve { no_worker } => wiring::serve(settings, !no_worker).await,
            Command::Worker => wiring::worker(settings).await,
            Command::Migrate { check: false } => wiring::migrate(settings).await,
            Command::Migrate { check: true } => wiring::migrate_check(settings).await,
            Command::User {
                command: UserCommand::Create { username, admin },
            } => wiring::create_user(settings, &username, admin).await,
            Command::Scan => wiring::scan(settings).await,
            Command::Backup { dir } => backup::backup(settings, &dir).await,
            Command::Restore { .. } | Command::Healthcheck => {
                unreachable!("handled before the settings are read")
            }
            Command::Fingerprint { .. } | Command::Openapi => {
                unreachable!("handled before settings are read")
            }
            Command::Config { .. } => {
                // Every declared setting: the library's as GET /api/v1/admin/settings shows
                // them, then the program's; secrets redacted.
                for setting in settings.shown() {
                    println!("{}={}", setting.name, setting.value.unwrap_or_default());
                }
                Ok(())
            }
        }
    })
}
