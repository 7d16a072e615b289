//! Embeds musiclib-core in a program, with no HTTP: open a library on a temporary SQLite
//! database, import a folder of music, run the enrichment jobs, and list the albums.
//!
//! ```sh
//! cargo run -p musiclib-examples --example embed_core -- ~/Music
//! ```

use anyhow::{bail, Context, Result};
use musiclib_core::domain::Page;
use musiclib_core::jobs::{Outcome, Worker};
use musiclib_core::{Config, Library};

#[tokio::main]
async fn main() -> Result<()> {
    let Some(folder) = std::env::args().nth(1) else {
        bail!("usage: embed_core FOLDER");
    };
    let scratch = tempfile::tempdir()?;
    let mut config = Config::embedded(scratch.path());
    config.local_media_import_path = Some(folder.clone().into());
    let library = Library::open(config).await.context("open the library")?;

    let report = library.ingest().scan_local_folder(|_| {}).await?;
    println!(
        "imported {} of {} files from {folder} ({} failed)",
        report.imported, report.seen, report.failed
    );

    // Jobs normally run in a background worker; here we drain the queue in place.
    let worker = Worker::new(library.registry(), "example");
    while let Outcome::Ran(_) = worker.run_once().await? {}

    let albums = library
        .catalog()
        .list_albums(&Default::default(), None, Page::new(Some(200), None)?)
        .await?;
    println!("{} albums:", albums.total);
    for album in albums.items {
        println!(
            "  {} — {} ({} tracks{})",
            album.artist_name.as_deref().unwrap_or("Unknown artist"),
            album.title,
            album.track_count,
            album
                .year
                .map(|year| format!(", {year}"))
                .unwrap_or_default()
        );
    }
    if report.imported > 0
        && library
            .catalog()
            .list_albums(&Default::default(), None, Page::default())
            .await?
            .total
            == 0
    {
        bail!("tracks were imported but no album was resolved");
    }
    Ok(())
}
