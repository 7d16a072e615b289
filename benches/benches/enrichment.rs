//! Enrichment throughput: import N tracks (default 1,000) from the large corpus, then run the
//! server's worker pool (2 general + `DEFAULT_ENRICH_CONCURRENCY` enrichment workers, as `musiclib serve` by default)
//! against a mock AcoustID that enforces 3 requests per second (429 above, as the real
//! one). Prints tracks/s, the number of lookup requests and how many the mock refused.
//!
//! ```text
//! shared/corpus/make-corpus.sh --large 10000 target/corpus-large
//! MUSICLIB_BENCH_CORPUS=target/corpus-large cargo bench -p musiclib-benches --bench enrichment
//! ```
//! Goal: ≥ 40 tracks/s (one-by-one lookups cap at 3/s).

use std::time::{Duration, Instant};

use musiclib_core::domain::{MetadataStatus, Page};
use musiclib_core::jobs::{Pool, Worker};
use musiclib_core::testing::RateLimitedAcoustId;
use musiclib_core::testing::{Backend, TestLibrary};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

fn main() {
    let Some(corpus) = std::env::var_os("MUSICLIB_BENCH_CORPUS") else {
        eprintln!("MUSICLIB_BENCH_CORPUS not set (make-corpus.sh --large N output): enrichment benchmark skipped");
        return;
    };
    let count: usize = std::env::var("MUSICLIB_BENCH_ENRICH_TRACKS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(std::path::PathBuf::from(corpus).join("library"), count));
}

async fn run(source: std::path::PathBuf, count: usize) {
    // The first `count` audio files of the corpus, copied into their own import folder.
    let folder = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = walk(&source)
        .into_iter()
        .filter(|path| musiclib_core::probe::has_audio_extension(path))
        .collect();
    files.sort();
    files.truncate(count);
    for (index, file) in files.iter().enumerate() {
        let name = format!("{index:05}.{}", file.extension().unwrap().to_string_lossy());
        std::fs::copy(file, folder.path().join(name)).unwrap();
    }

    let server = MockServer::start().await;
    let mock = RateLimitedAcoustId::new(Duration::from_secs(1));
    Mock::given(method("POST"))
        .and(path("/v2/lookup"))
        .respond_with(mock.clone())
        .mount(&server)
        .await;
    let import = folder.path().to_path_buf();
    let uri = server.uri();
    let library = TestLibrary::builder(Backend::Embedded)
        .config(move |config| {
            config.local_media_import_path = Some(import);
            config.enrichment.acoustid_api_key = Some("bench".into());
            config.enrichment.acoustid_base_url = uri;
            config.enrichment.coverart_enabled = false;
        })
        .build()
        .await;
    let report = library.ingest().scan_local_folder(|_| {}).await.unwrap();
    println!("imported {} of {} files", report.imported, files.len());

    let started = Instant::now();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut workers = Vec::new();
    for index in 0..2 + musiclib_core::jobs::DEFAULT_ENRICH_CONCURRENCY {
        let worker = if index >= 2 {
            Worker::for_pool(
                library.library.registry(),
                &format!("bench{index}"),
                Pool::Network,
            )
        } else {
            Worker::new(library.library.registry(), &format!("bench{index}"))
        };
        let mut stopped = stopped.clone();
        workers.push(tokio::spawn(worker.run(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        })));
    }
    let total = report.imported as i64;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if tracks_with(&library, MetadataStatus::Pending).await == 0 {
            break;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop.send(true);
    for worker in workers {
        let _ = worker.await;
    }
    let seen = mock.answered();
    let enriched = tracks_with(&library, MetadataStatus::Enriched).await;
    println!(
        "enrichment/throughput: {total} tracks in {elapsed:.1} s = {:.1} tracks/s; {} lookup requests (mean batch {:.1}); {} refused by the 3/s mock; {enriched} enriched",
        total as f64 / elapsed,
        seen.len(),
        seen.iter().map(|(_, size)| *size).sum::<usize>() as f64 / seen.len().max(1) as f64,
        mock.refused(),
    );
}

async fn tracks_with(library: &musiclib_core::Library, status: MetadataStatus) -> i64 {
    let filter = musiclib_core::catalog::TrackFilter {
        metadata_status: Some(status),
        ..Default::default()
    };
    library
        .catalog()
        .list_tracks(&filter, None, Page::new(Some(1), None).unwrap())
        .await
        .unwrap()
        .total
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
