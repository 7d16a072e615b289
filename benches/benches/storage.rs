//! Library statistics (`GET /storage`, core `Maintenance::statistics`) on 100,000 tracks, on
//! SQLite and (when `MUSICLIB_TEST_POSTGRES_URL` and the S3 test settings are set) PostgreSQL,
//! side by side: criterion's estimate, then p50/p95 of 200 calls (goal p95 <= 50 ms).
//!
//! Duplicate detection (`GET /storage/duplicates`) on 10,000 and 20,000 tracks with
//! fingerprints of full length (120 s, 950 items; the large corpus' clips are 3–5 s, too short
//! to compare), one in a hundred a re-encode of another (1% of bits flipped): time per call and
//! groups found, to show it grows with the library, not with its square.
//!
//! `cargo bench -p musiclib-benches --bench storage`

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};

use musiclib_core::auth::Caller;
use musiclib_core::testing::{pool, scale_out_configured, Backend, TestLibrary};
use musiclib_core::DatabaseKind;

const TRACKS: usize = 100_000;

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1000.0
}

/// A library of `TRACKS` synthetic tracks on `backend` and a signed-in caller.
async fn load(backend: Backend, name: &str) -> (TestLibrary, Caller) {
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
    (library, Caller { user })
}

/// `GET /storage` in core: criterion's estimate, then p50/p95 of 200 calls (criterion
/// reports means; the goal is on the 95th percentile).
fn statistics(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut backends = vec![(Backend::Embedded, "sqlite")];
    if scale_out_configured() {
        backends.push((Backend::ScaleOut, "postgres"));
    } else {
        eprintln!("MUSICLIB_TEST_POSTGRES_URL / S3 settings not set: PostgreSQL skipped");
    }
    let mut group = c.benchmark_group("storage/statistics");
    group.sample_size(30);
    for (backend, name) in backends {
        let (library, caller) = runtime.block_on(load(backend, name));
        group.bench_function(format!("{name}/{TRACKS}"), |b| {
            b.to_async(&runtime)
                .iter(|| async { library.maintenance().statistics(&caller).await.unwrap() })
        });
        let mut times = runtime.block_on(async {
            let mut times = Vec::new();
            for _ in 0..200 {
                let started = Instant::now();
                let stats = library.maintenance().statistics(&caller).await.unwrap();
                times.push(started.elapsed());
                assert_eq!(stats.tracks, TRACKS as i64);
                assert_eq!(stats.top_genres.len(), 10);
            }
            times
        });
        println!(
            "storage/statistics/{name}: {TRACKS} tracks: p50 {:.2} ms, p95 {:.2} ms (goal p95 <= 50)",
            percentile(&mut times, 50),
            percentile(&mut times, 95)
        );
    }
    group.finish();
}

/// A reproducible fingerprint of 950 items shaped like Chromaprint's: each item differs from
/// the one before in a few bits (about six), as consecutive frames of music do.
fn fingerprint(seed: u64) -> Vec<u32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut item = next() as u32;
    (0..950)
        .map(|_| {
            let random = next();
            // Six random bit positions.
            let flips = (0..6).fold(0u32, |bits, k| bits | 1 << ((random >> (k * 5)) & 31));
            item ^= flips;
            item
        })
        .collect()
}

async fn duplicates(tracks: usize) {
    let library = TestLibrary::new(Backend::Embedded).await;
    musiclib_core::testing::insert_synthetic_tracks(&library, tracks).await;
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(pool(&library))
        .await
        .unwrap();
    let started = Instant::now();
    let mut previous = Vec::new();
    for (index, id) in ids.iter().enumerate() {
        let raw = if index % 100 == 99 {
            // A re-encode of the previous track: about 1% of its bits differ.
            previous
                .iter()
                .enumerate()
                .map(|(position, item): (usize, &u32)| {
                    if position % 3 == 0 {
                        item ^ (1 << (position % 32))
                    } else {
                        *item
                    }
                })
                .collect()
        } else {
            fingerprint(index as u64)
        };
        let text = musiclib_fingerprint::Fingerprint {
            raw: raw.clone(),
            duration: 120.0,
        }
        .compressed();
        musiclib_core::testing::execute(
            &library,
            "UPDATE tracks SET fingerprint = $2 WHERE id = $1",
            &[id, &text],
        )
        .await;
        previous = raw;
    }
    eprintln!(
        "duplicates: stored {tracks} fingerprints in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let user = library
        .accounts()
        .create_user("bench", "bench-password", false)
        .await
        .unwrap();
    let caller = Caller { user };
    let mut times = Vec::new();
    let mut groups = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let found = library
            .maintenance()
            .duplicates(
                &caller,
                musiclib_core::domain::Page::new(Some(200), None).unwrap(),
            )
            .await
            .unwrap();
        times.push(started.elapsed());
        groups = found.total;
    }
    println!(
        "storage/duplicates/sqlite: {tracks} tracks with fingerprints: p50 {:.0} ms, max {:.0} ms; {groups} groups (expected {})",
        percentile(&mut times, 50),
        percentile(&mut times, 100),
        tracks / 100
    );
}

fn duplicate_detection(_: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for tracks in [10_000, 20_000] {
        runtime.block_on(duplicates(tracks));
    }
}

criterion_group!(benches, duplicate_detection, statistics);

fn main() {
    // `cargo test --all-targets` starts benches once: loading 100,000 tracks is for
    // `cargo bench` only.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
