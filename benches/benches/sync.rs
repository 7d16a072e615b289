//! Sync benchmarks on SQLite and (when `MUSICLIB_TEST_POSTGRES_URL` and the S3 test settings
//! are set) PostgreSQL, side by side:
//!
//! - `sync/changes`: `GET /sync/changes` (core `sync_changes`) for a delta of 1,000 events
//!   out of 1,000,000 stored for one user: p50/p95 of 200 pulls (goal p95 ≤ 20 ms).
//! - `sync/push`: `POST /sync/push` (core `push_events`) of 1,000 new events: p50/p95 of 20
//!   pushes (goal ≤ 100 ms).
//!
//! The million events are bulk-loaded with the stamping triggers off and stamps assigned in
//! order (then the clock is moved past them), which is what a million pushes would leave.
//!
//! `cargo bench -p musiclib-benches --bench sync`

use std::time::{Duration, Instant};

use musiclib_core::auth::Caller;
use musiclib_core::social::NewPlay;
use musiclib_core::testing::{pool, scale_out_configured, Backend, TestLibrary};
use musiclib_core::{DatabaseKind, Timestamp};

const STORED: i64 = 1_000_000;

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1000.0
}

async fn load(library: &TestLibrary, caller: &Caller, track: &str) {
    let db = pool(library);
    let user = caller.user.id.as_str();
    let kind = library.database_kind();
    let (disable, enable, series) = match kind {
        DatabaseKind::Postgres => (
            "ALTER TABLE play_events DISABLE TRIGGER play_events_stamp".to_string(),
            "ALTER TABLE play_events ENABLE TRIGGER play_events_stamp".to_string(),
            format!("SELECT g FROM generate_series(1, {STORED}) AS g"),
        ),
        DatabaseKind::Sqlite => (
            "DROP TRIGGER play_events_stamp".to_string(),
            "CREATE TRIGGER play_events_stamp AFTER INSERT ON play_events BEGIN
                UPDATE sync_clock SET last_stamp = MAX(last_stamp + 1, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) WHERE id = 1;
                UPDATE play_events SET synced_at = (SELECT last_stamp FROM sync_clock WHERE id = 1) WHERE id = new.id;
             END".to_string(),
            format!("WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {STORED}) SELECT g FROM s"),
        ),
    };
    let base: i64 = sqlx::query_scalar("SELECT last_stamp FROM sync_clock WHERE id = 1")
        .fetch_one(db)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(disable))
        .execute(db)
        .await
        .unwrap();
    let insert = format!(
        "INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at)
         SELECT $1, $2, g, 30.0, 'bulk-' || CAST(g AS TEXT), $3 + g FROM ({series}) AS numbers"
    );
    sqlx::query(sqlx::AssertSqlSafe(insert.as_str()))
        .bind(user)
        .bind(track)
        .bind(base)
        .execute(db)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(enable))
        .execute(db)
        .await
        .unwrap();
    sqlx::query("UPDATE sync_clock SET last_stamp = $1 WHERE id = 1")
        .bind(base + STORED)
        .execute(db)
        .await
        .unwrap();
    if kind == DatabaseKind::Postgres {
        sqlx::query("ANALYZE play_events")
            .execute(db)
            .await
            .unwrap();
    }
}

async fn run(backend: Backend, name: &str) {
    let library = TestLibrary::new(backend).await;
    musiclib_core::testing::insert_synthetic_tracks(&library, 1000).await;
    let track: String = sqlx::query_scalar("SELECT id FROM tracks LIMIT 1")
        .fetch_one(musiclib_core::testing::pool(&library))
        .await
        .unwrap();
    let user = library
        .accounts()
        .create_user("bench", "bench-password", false)
        .await
        .unwrap();
    let caller = Caller { user };
    let started = Instant::now();
    load(&library, &caller, &track).await;
    eprintln!(
        "{name}: loaded {STORED} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let clock: i64 = sqlx::query_scalar("SELECT last_stamp FROM sync_clock WHERE id = 1")
        .fetch_one(musiclib_core::testing::pool(&library))
        .await
        .unwrap();
    let since = clock - 1000;
    let mut pulls = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        let changes = library
            .social()
            .sync_changes(&caller, since, Some(1000))
            .await
            .unwrap();
        pulls.push(started.elapsed());
        assert_eq!(changes.plays.len(), 1000);
        assert!(!changes.has_more);
    }
    let mut pushes = Vec::new();
    for round in 0..20 {
        let plays: Vec<NewPlay> = (0..1000)
            .map(|n| NewPlay {
                track_id: track.clone(),
                played_at: Timestamp::from_micros(n),
                seconds_played: Some(30.0),
                client_event_id: format!("push-{round}-{n}"),
            })
            .collect();
        let started = Instant::now();
        let outcome = library
            .social()
            .push_events(&caller, Vec::new(), plays)
            .await
            .unwrap();
        pushes.push(started.elapsed());
        assert_eq!(outcome.accepted, 1000);
    }
    println!(
        "sync/changes/{name}: delta 1000 of {STORED}: p50 {:.2} ms, p95 {:.2} ms (goal p95 <= 20)",
        percentile(&mut pulls, 50),
        percentile(&mut pulls, 95)
    );
    println!(
        "sync/push/{name}: 1000 events: p50 {:.1} ms, p95 {:.1} ms (goal <= 100)",
        percentile(&mut pushes, 50),
        percentile(&mut pushes, 95)
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
