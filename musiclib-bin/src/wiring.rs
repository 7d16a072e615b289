//! Wiring: build the library, then the workers and the router, and run them. Business rules
//! stay in musiclib-core.

use std::io::{IsTerminal, Read};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use musiclib_core::jobs::{spawn_workers, WorkerPlan};
use musiclib_core::Library;

use crate::settings::Settings;
use crate::shutdown::Shutdown;

async fn open(settings: &Settings) -> Result<Library> {
    let library = Library::open(settings.config.clone())
        .await
        .with_context(|| {
            format!(
                "cannot open the library at {}",
                musiclib_core::config::redact_url(&settings.config.database_url)
            )
        })?;
    Ok(library)
}

/// Creates `ADMIN_USERNAME` when the server has no user yet.
async fn ensure_admin(library: &Library, settings: &Settings) -> Result<()> {
    if let Some((username, password)) = &settings.admin {
        if library.accounts().user_count().await? == 0 {
            library
                .accounts()
                .create_user(username, password, true)
                .await
                .context("ADMIN_USERNAME: cannot create the admin")?;
            tracing::info!(%username, "created the admin account");
        }
    }
    Ok(())
}

/// Starts the process's workers: `WORKER_CONCURRENCY` that run any job, and
/// `ENRICH_CONCURRENCY` in the network pool, whose jobs mostly wait on outside services
/// (core decides which kinds each pool takes).
fn start_workers(
    library: &Library,
    settings: &Settings,
    shutdown: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    let plan = WorkerPlan {
        general: settings.worker_concurrency,
        network: settings.enrich_concurrency,
    };
    spawn_workers(library.registry(), plan, || shutdown.clone().wait())
}

/// With `METRICS_BIND_ADDRESS`, starts the listener serving `/metrics` without
/// authentication on that address (and nothing else). It binds before anything else is
/// served, so a bad address stops the process at once.
async fn start_metrics(
    library: &Library,
    settings: &Settings,
    shutdown: &Shutdown,
) -> Result<Option<tokio::task::JoinHandle<()>>> {
    let Some(address) = settings.metrics_bind_address else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("METRICS_BIND_ADDRESS: cannot listen on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, "metrics are served without authentication");
    let app = musiclib_http::metrics::private_router(library.clone());
    let shutdown = shutdown.clone();
    let limits = listener_limits(settings);
    Ok(Some(tokio::spawn(async move {
        if let Err(error) = crate::listener::serve(listener, app, limits, shutdown).await {
            tracing::error!(%error, "the metrics listener failed");
        }
    })))
}

/// What bounds the connections of a listener, from the settings.
fn listener_limits(settings: &Settings) -> crate::listener::Limits {
    crate::listener::Limits {
        header_timeout: settings.header_timeout,
        idle_timeout: settings.idle_timeout,
        max_per_address: settings.max_connections_per_address,
        trusted_proxies: settings.config.trusted_proxies.clone(),
    }
}

/// `musiclib serve`.
pub async fn serve(settings: Settings, run_worker: bool) -> Result<()> {
    // First, so everything the process does is counted.
    musiclib_http::metrics::install_recorder();
    let library = open(&settings).await?;
    ensure_admin(&library, &settings).await?;
    let shutdown = Shutdown::listen();
    let metrics = start_metrics(&library, &settings, &shutdown).await?;
    let workers = if run_worker {
        start_workers(&library, &settings, &shutdown)
    } else {
        Vec::new()
    };
    let listener = tokio::net::TcpListener::bind(settings.bind_address)
        .await
        .with_context(|| format!("BIND_ADDRESS: cannot listen on {}", settings.bind_address))?;
    tracing::info!(
        address = %listener.local_addr()?,
        database = library.database_kind().as_str(),
        storage = library.storage().kind().as_str(),
        workers = workers.len(),
        web_player = crate::web::built(),
        "musiclib is listening"
    );
    let more =
        musiclib_subsonic::router(library.clone()).merge(crate::web::router(library.clone()));
    let app = musiclib_http::router_with(library, more);
    // Each request carries its connection's address (`ConnectInfo`): failed sign-ins are
    // throttled per client address as well as per account.
    crate::listener::serve(listener, app, listener_limits(&settings), shutdown.clone()).await?;
    for worker in workers {
        let _ = tokio::time::timeout(Duration::from_secs(30), worker).await;
    }
    if let Some(metrics) = metrics {
        let _ = tokio::time::timeout(Duration::from_secs(5), metrics).await;
    }
    Ok(())
}

/// `musiclib worker`.
pub async fn worker(settings: Settings) -> Result<()> {
    musiclib_http::metrics::install_recorder();
    let library = open(&settings).await?;
    let shutdown = Shutdown::listen();
    let metrics = start_metrics(&library, &settings, &shutdown).await?;
    tracing::info!(
        workers = settings.worker_concurrency,
        enrichment_workers = settings.enrich_concurrency,
        "musiclib worker is running jobs"
    );
    for worker in start_workers(&library, &settings, &shutdown) {
        let _ = worker.await;
    }
    if let Some(metrics) = metrics {
        let _ = tokio::time::timeout(Duration::from_secs(5), metrics).await;
    }
    Ok(())
}

/// `musiclib migrate`.
pub async fn migrate(settings: Settings) -> Result<()> {
    open(&settings).await?;
    println!(
        "database is up to date (schema {})",
        musiclib_core::schema_version()
    );
    Ok(())
}

/// `musiclib migrate --check`: what `migrate` would apply, changing nothing; exits 1 when
/// there is something to apply, and fails for a database a newer release has migrated.
pub async fn migrate_check(settings: Settings) -> Result<()> {
    let url = musiclib_core::config::redact_url(&settings.config.database_url);
    let status = musiclib_core::schema_status(&settings.config.database_url)
        .await
        .with_context(|| format!("cannot read the schema of {url}"))?;
    let ours = musiclib_core::schema_version();
    if !status.unknown.is_empty() {
        bail!(
            "the database at {url} has migrations this release does not know ({}): a newer \
             release made it; run that release, or restore a backup made before the upgrade",
            status
                .unknown
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if status.pending.is_empty() {
        println!("database is up to date (schema {ours})");
        return Ok(());
    }
    println!(
        "database at schema {}; `musiclib migrate` would apply {} migration(s) to reach schema {ours}:",
        status.applied,
        status.pending.len()
    );
    for (version, description) in &status.pending {
        println!("  {version:04} {description}");
    }
    std::process::exit(1);
}

/// `musiclib user create`.
pub async fn create_user(settings: Settings, username: &str, admin: bool) -> Result<()> {
    let password = if std::io::stdin().is_terminal() {
        let password = rpassword::prompt_password("Password: ")?;
        let again = rpassword::prompt_password("Password again: ")?;
        if password != again {
            bail!("the passwords differ");
        }
        password
    } else {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the password from stdin")?;
        input.lines().next().unwrap_or("").to_string()
    };
    let library = open(&settings).await?;
    let user = library
        .accounts()
        .create_user(username, &password, admin)
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    println!(
        "created {} {} ({})",
        if user.is_admin { "admin" } else { "user" },
        user.username,
        user.id
    );
    Ok(())
}

/// `musiclib scan`.
pub async fn scan(settings: Settings) -> Result<()> {
    let Some(folder) = settings.config.local_media_import_path.clone() else {
        bail!("LOCAL_MEDIA_IMPORT_PATH: not set; point it at your music folder");
    };
    let library = open(&settings).await?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} files {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = std::time::Instant::now();
    let report = library
        .ingest()
        .scan_local_folder(|report| {
            bar.set_length(report.seen);
            bar.set_position(report.imported + report.skipped + report.failed);
            bar.set_message(format!(
                "{} imported, {} failed",
                report.imported, report.failed
            ));
        })
        .await
        .map_err(|error| anyhow::anyhow!("{}", musiclib_core::error_chain(&error)))?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    println!("Scanned {} in {elapsed:.1} s", folder.display());
    println!("  files seen        {}", report.seen);
    println!("  imported          {}", report.imported);
    println!("  already imported  {}", report.already_imported);
    println!(
        "  skipped (other)   {}",
        report.skipped - report.already_imported
    );
    println!("  failed            {}", report.failed);
    for error in &report.errors {
        println!("    {}: {}", error.path, error.error);
    }
    if report.imported > 0 {
        println!(
            "{} enrichment jobs are queued; they run while `musiclib serve` or `musiclib worker` is running.",
            report.enrichment_jobs_queued
        );
    }
    if report.seen > 0 && elapsed > 0.0 {
        println!(
            "  throughput        {:.0} files/s",
            report.seen as f64 / elapsed
        );
    }
    Ok(())
}
