//! Library statistics (`GET /storage`, core `Maintenance::statistics`) on 100,000 tracks, on
//! SQLite and (when `MUSICLIB_TEST_POSTGRES_URL` and the S3 test settings are set) PostgreSQL,
//! side by side: p50/p95 of 200 calls (goal p95 <= 50 ms).
//!
//! `cargo bench -p musiclib-benches --bench storage`

use std::time::{Duration, Instant};

use musiclib_core::auth::Caller;
use musiclib_core::testing::{pool, scale_out_configured, Backend, TestLibrary};
use musiclib_core::DatabaseKind;

const TRACKS: usize = 100_000;

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1000.0
}

async fn run(backend: Backend, name: &str) {
    let library = TestLibrary::new(backend).await;
    let started = Instant::now();
    musiclib_core::testing::insert_synthetic_tracks(&library, TRACKS).await;
    if library.database_kind() == DatabaseKind::Postgres {
        sqlx::query("VACUUM ANALYZE tracks")
            .execute(pool(&library))
            .await
            .unwrap();
    }
    eprintln!(
        "{name}: loaded {TRACKS} tracks in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let user = library
        .accounts()
        .create_user("bench", "bench-password", false)
        .await
        .unwrap();
    let caller = Caller { user };
    let mut times = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let stats = library.maintenance().statistics(&caller).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(stats.tracks, TRACKS as i64);
        assert_eq!(stats.top_genres.len(), 10);
    }
    println!(
        "storage/statistics/{name}: {TRACKS} tracks: p50 {:.2} ms, p95 {:.2} ms (goal p95 <= 50)",
        percentile(&mut times, 50),
        percentile(&mut times, 95)
    );
}

fn main() {
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(run(Backend::Embedded, "sqlite"));
    if scale_out_configured() {
        runtime.block_on(run(Backend::ScaleOut, "postgres"));
    } else {
        eprintln!("MUSICLIB_TEST_POSTGRES_URL / S3 settings not set: PostgreSQL skipped");
    }
}
