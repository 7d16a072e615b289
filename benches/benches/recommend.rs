//! Recommendations on 100,000 tracks (1,000 artists, twelve genres, 20 listeners with 1,000
//! plays and 100 likes each, every track with a sound vector), on SQLite and (when the
//! scale-out test settings are set) PostgreSQL, side by side: p50/p95 of 200 calls of
//! `POST /radio` (core `Recommend::radio`, count 20, 100 excluded ids; goal p95 <= 30 ms),
//! of a feed from likes, and of similar tracks; and how long `compute_similarity` and the
//! first sound index take.
//!
//! Then the sound analysis of a 3-minute track (bliss-audio) next to plain decoding of the
//! same file (decode and resample, what the analysis starts with), as a ratio: needs ffmpeg
//! to make the file.
//!
//! Last, whether analysing slows an import: a library with 20 unanalysed 60-second tracks
//! and its workers running (the analysis busy) imports 20 more from its local folder; the
//! time until they are imported and enriched, next to the same import with the analysis
//! turned off, as a ratio (SQLite, local disk; needs ffmpeg).
//!
//! `cargo bench -p musiclib-benches --bench recommend`

use std::time::{Duration, Instant};

use musiclib_core::auth::Caller;
use musiclib_core::recommend::RadioRequest;
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::testing::{pool, scale_out_configured, Backend, TestLibrary};
use musiclib_core::{DatabaseKind, Timestamp};

const TRACKS: usize = 100_000;
const USERS: usize = 20;

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1000.0
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

async fn run(backend: Backend, name: &str) {
    let library = TestLibrary::new(backend).await;
    let started = Instant::now();
    musiclib_core::testing::insert_synthetic_tracks(&library, TRACKS).await;
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(pool(&library))
        .await
        .unwrap();
    // Sound vectors for every track (what analyze_sound would store), in batches.
    let mut rng = Rng(0x5eed);
    for chunk in ids.chunks(500) {
        let mut values = Vec::new();
        for id in chunk {
            let vector: Vec<String> = (0..bliss_audio::NUMBER_FEATURES)
                .map(|_| format!("{:.4}", (rng.below(2000) as f64 / 1000.0) - 1.0))
                .collect();
            values.push(format!(
                "('{id}', 2, '[{}]', NULL, NULL, 0)",
                vector.join(",")
            ));
        }
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO track_features (track_id, version, features, content_sha256, error, analyzed_at) VALUES {}",
            values.join(", ")
        )))
        .execute(pool(&library))
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO server_state (key, value, updated_at) VALUES ('sound_features_stamp', '1', 0)",
    )
    .execute(pool(&library))
    .await
    .unwrap();
    // Listeners: sessions of ten plays, some likes.
    let mut callers = Vec::new();
    for user in 0..USERS {
        let created = library
            .accounts()
            .create_user(&format!("listener{user}"), "bench-password", false)
            .await
            .unwrap();
        let caller = Caller { user: created };
        let mut at = Timestamp::now().as_micros() - 400 * 86_400_000_000;
        let mut plays = Vec::new();
        for play in 0..1000 {
            at += if play % 10 == 0 {
                86_400_000_000
            } else {
                240_000_000
            };
            plays.push(NewPlay {
                track_id: ids[rng.below(ids.len())].clone(),
                played_at: Timestamp::from_micros(at),
                seconds_played: Some(200.0),
                client_event_id: format!("p{user}-{play}"),
            });
        }
        let likes = (0..100)
            .map(|like| NewLike {
                track_id: ids[rng.below(ids.len())].clone(),
                liked: true,
                client_event_id: format!("l{user}-{like}"),
                event_time: Timestamp::from_micros(at + like),
            })
            .collect();
        library
            .social()
            .push_events(&caller, likes, plays)
            .await
            .unwrap();
        callers.push(caller);
    }
    if library.database_kind() == DatabaseKind::Postgres {
        sqlx::query("VACUUM ANALYZE")
            .execute(pool(&library))
            .await
            .unwrap();
    }
    eprintln!("{name}: loaded in {:.1} s", started.elapsed().as_secs_f64());

    let started = Instant::now();
    let report = library.recommend().compute_similarity().await.unwrap();
    println!(
        "recommend/compute_similarity/{name}: {:.2} s ({} artists, {} pairs kept)",
        started.elapsed().as_secs_f64(),
        report.artists,
        report.pairs
    );
    let started = Instant::now();
    let seed = musiclib_core::TrackId::parse(&ids[0]).unwrap();
    library
        .recommend()
        .similar_tracks_of(&callers[0], &seed, 20)
        .await
        .unwrap();
    println!(
        "recommend/first_sound_index/{name}: {:.2} s (loads and builds the k-d tree of {TRACKS} vectors)",
        started.elapsed().as_secs_f64()
    );

    let mut radio = Vec::new();
    let mut liked = Vec::new();
    let mut similar = Vec::new();
    for call in 0..200 {
        let caller = &callers[call % USERS];
        let seed = &ids[rng.below(ids.len())];
        let exclude: Vec<String> = (0..100)
            .map(|_| ids[rng.below(ids.len())].clone())
            .collect();
        let request = RadioRequest {
            seed_track_id: Some(seed.clone()),
            exclude_ids: exclude.clone(),
            count: Some(20),
        };
        let started = Instant::now();
        let batch = library.recommend().radio(caller, &request).await.unwrap();
        radio.push(started.elapsed());
        assert_eq!(batch.len(), 20);

        let request = RadioRequest {
            seed_track_id: None,
            exclude_ids: exclude,
            count: Some(20),
        };
        let started = Instant::now();
        let batch = library.recommend().radio(caller, &request).await.unwrap();
        liked.push(started.elapsed());
        assert_eq!(batch.len(), 20);

        let seed = musiclib_core::TrackId::parse(seed).unwrap();
        let started = Instant::now();
        library
            .recommend()
            .similar_tracks_of(caller, &seed, 20)
            .await
            .unwrap();
        similar.push(started.elapsed());
    }
    for (what, times) in [
        ("radio (seed, 100 excluded)", &mut radio),
        ("radio (from likes)", &mut liked),
        ("similar tracks", &mut similar),
    ] {
        println!(
            "recommend/{what}/{name}: {TRACKS} tracks: p50 {:.2} ms, p95 {:.2} ms (goal p95 <= 30)",
            percentile(times, 50),
            percentile(times, 95)
        );
    }
}

/// Analysis of a 3-minute FLAC next to decoding it (median of 3 each).
fn analysis_cost() {
    use bliss_audio::decoder::symphonia::SymphoniaDecoder;
    use bliss_audio::decoder::Decoder as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("three-minutes.flac");
    let made = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-f", "lavfi", "-i"])
        .arg("sine=frequency=220:duration=180,volume=0.5[a];anoisesrc=d=180:c=pink:a=0.1[b];[a][b]amix=inputs=2")
        .args(["-ac", "2", "-ar", "44100"])
        .arg(&path)
        .status();
    if !made.is_ok_and(|status| status.success()) {
        eprintln!("ffmpeg could not make the 3-minute file: analysis benchmark skipped");
        return;
    }
    let median = |f: &dyn Fn()| {
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[1]
    };
    let decode = median(&|| {
        SymphoniaDecoder::decode(&path).unwrap();
    });
    let analyse = median(&|| {
        SymphoniaDecoder::song_from_path(&path).unwrap();
    });
    println!(
        "recommend/analysis of a 3-minute FLAC: decode {decode:.2} s, decode + analysis {analyse:.2} s (ratio {:.2}; the analysis alone {:.2} s)",
        analyse / decode,
        analyse - decode
    );
}

fn make_flacs(dir: &std::path::Path, count: usize, seconds: u32, first_hz: u32) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    (0..count).all(|index| {
        let hz = first_hz + 37 * index as u32;
        std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-f", "lavfi", "-i"])
            .arg(format!("sine=frequency={hz}:duration={seconds}"))
            .args(["-ac", "2", "-ar", "44100", "-metadata"])
            .arg(format!("title=Tone {hz}"))
            .arg(dir.join(format!("{index:02}.flac")))
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// Seconds from starting the import of `folder` until every track is imported and enriched.
async fn timed_import(
    folder: std::path::PathBuf,
    backlog: &std::path::Path,
    analysis: bool,
) -> f64 {
    let library = TestLibrary::builder(Backend::Embedded)
        .config(move |config| {
            config.local_media_import_path = Some(folder);
            config.recommend.sound_analysis = analysis;
            config.recommend.sweep_interval = Duration::from_millis(200);
        })
        .build()
        .await;
    let admin = Caller {
        user: library
            .accounts()
            .create_user("admin", "bench-password", true)
            .await
            .unwrap(),
    };
    let mut entries: Vec<_> = std::fs::read_dir(backlog)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let bytes = std::fs::read(&path).unwrap();
        library
            .ingest()
            .upload_track(
                &admin,
                path.file_name().and_then(|name| name.to_str()),
                bytes.as_slice(),
            )
            .await
            .unwrap();
    }
    musiclib_core::testing::drain_jobs(&library).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let workers = musiclib_core::jobs::spawn_workers(
        library.registry(),
        musiclib_core::jobs::WorkerPlan {
            general: 2,
            network: 2,
        },
        move || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }
        },
    );
    if analysis {
        // Wait until the analysis is at work on the backlog.
        while library.recommend().sound_status().await.unwrap().analyzed == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let started = Instant::now();
    let job = library.ingest().start_local_scan(&admin).await.unwrap();
    loop {
        let state = library.jobs().get(&admin, &job).await.unwrap().state;
        let pending: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM tracks WHERE metadata_status = 'pending'")
                .fetch_one(pool(&library))
                .await
                .unwrap();
        if state == musiclib_core::jobs::JobState::Succeeded && pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed().as_secs_f64();
    stop.send(true).unwrap();
    for worker in workers {
        let _ = worker.await;
    }
    took
}

async fn import_alongside_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let (backlog, folder) = (dir.path().join("backlog"), dir.path().join("folder"));
    if !(make_flacs(&backlog, 20, 60, 200) && make_flacs(&folder, 20, 60, 1200)) {
        eprintln!("ffmpeg could not make the files: import benchmark skipped");
        return;
    }
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..3 {
        off.push(timed_import(folder.clone(), &backlog, false).await);
        on.push(timed_import(folder.clone(), &backlog, true).await);
    }
    off.sort_by(f64::total_cmp);
    on.sort_by(f64::total_cmp);
    println!(
        "recommend/import of 20 tracks beside the analysis: {:.2} s with it, {:.2} s without (median of 3; ratio {:.2})",
        on[1],
        off[1],
        on[1] / off[1]
    );
}

fn main() {
    // `cargo test` runs benchmarks once to check they start: this one takes minutes.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // MUSICLIB_BENCH_ONLY=sqlite|postgres|sound runs one part alone.
    let only = std::env::var("MUSICLIB_BENCH_ONLY").unwrap_or_default();
    let wanted = |part: &str| only.is_empty() || only == part;
    if wanted("sqlite") {
        runtime.block_on(run(Backend::Embedded, "sqlite"));
    }
    if wanted("postgres") {
        if scale_out_configured() {
            runtime.block_on(run(Backend::ScaleOut, "postgres"));
        } else {
            eprintln!("scale-out settings not set: PostgreSQL skipped");
        }
    }
    if wanted("sound") {
        analysis_cost();
        runtime.block_on(import_alongside_analysis());
    }
}
