//! Smart playlists on 100,000 tracks with a listener's history (20,000 plays, 2,000 likes),
//! on SQLite and (when the PostgreSQL and S3 test settings are set) PostgreSQL, side by side:
//! p50/p95 of 200 reads (`Playlists::get`, what `GET /playlists/{id}` and Subsonic
//! `getPlaylist` call) of
//!
//! - a plain playlist of 500 tracks (the peer),
//! - a smart playlist of about as many tracks, nothing changed since its last read (goal p95
//!   <= 20 ms, "as fast as a plain playlist"),
//! - the same after a play each time (only rules that read the listener's plays are evaluated
//!   again), and after a track's change each time (every rule set is evaluated again: the
//!   cost of following the library), for three rule sets: a year range, a text search, and
//!   the listener's own plays and likes.
//!
//! `cargo bench -p musiclib-benches --bench smart`

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use serde_json::json;

use musiclib_core::auth::Caller;
use musiclib_core::playlists::{NewPlaylist, Rules};
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::testing::{pool, scale_out_configured, Backend, TestLibrary};
use musiclib_core::{DatabaseKind, PlaylistId, Timestamp, TrackId};

const TRACKS: usize = 100_000;
const READS: usize = 200;

fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1000.0
}

async fn load(backend: Backend, name: &str) -> (TestLibrary, Caller, Vec<TrackId>) {
    let library = TestLibrary::new(backend).await;
    let started = Instant::now();
    musiclib_core::testing::insert_library_tracks(&library, TRACKS, 7).await;
    let user = library
        .accounts()
        .create_user("bench", "bench-password", false)
        .await
        .unwrap();
    let caller = Caller { user };
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(pool(&library))
        .await
        .unwrap();
    let ids: Vec<TrackId> = ids.iter().map(|id| TrackId::parse(id).unwrap()).collect();
    let base = Timestamp::now().as_micros() - 86_400_000_000;
    for chunk in 0..20 {
        let plays = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                NewPlay {
                    track_id: ids[(n * 7919) % ids.len()].to_string(),
                    played_at: Timestamp::from_micros(base + n as i64 * 1000),
                    seconds_played: Some(120.0),
                    client_event_id: format!("p{n}"),
                }
            })
            .collect();
        let likes = if chunk < 2 {
            (0..1000)
                .map(|i| {
                    let n = chunk * 1000 + i;
                    NewLike {
                        track_id: ids[(n * 104_729) % ids.len()].to_string(),
                        liked: true,
                        client_event_id: format!("l{n}"),
                        event_time: Timestamp::from_micros(base + n as i64 * 1000),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        library
            .social()
            .push_events(&caller, likes, plays)
            .await
            .unwrap();
    }
    if library.database_kind() == DatabaseKind::Postgres {
        for statement in [
            "VACUUM ANALYZE tracks",
            "VACUUM ANALYZE play_events",
            "VACUUM ANALYZE like_events",
        ] {
            sqlx::query(statement)
                .execute(pool(&library))
                .await
                .unwrap();
        }
    }
    eprintln!(
        "{name}: loaded {TRACKS} tracks and the history in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    (library, caller, ids)
}

async fn smart(
    library: &TestLibrary,
    caller: &Caller,
    name: &str,
    rules: serde_json::Value,
) -> PlaylistId {
    let rules = Rules::parse(&rules).unwrap();
    library
        .playlists()
        .create(
            caller,
            NewPlaylist {
                name: name.into(),
                rules: Some(rules),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id
}

/// What happens before each read.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    Nothing,
    /// The listener plays a track.
    Play,
    /// A track of the library changes (as a tag edit or a rescan would change it).
    TrackChange,
}

/// p50/p95 of READS reads of `id`, each after `before`.
async fn reads(
    library: &TestLibrary,
    caller: &Caller,
    id: &PlaylistId,
    before: Before,
    ids: &[TrackId],
) -> (f64, f64, usize) {
    let mut times = Vec::with_capacity(READS);
    let mut size = 0;
    for n in 0..READS {
        if before == Before::TrackChange {
            sqlx::query("UPDATE tracks SET title = title WHERE id = $1")
                .bind(ids[(n * 97) % ids.len()].as_str())
                .execute(pool(library))
                .await
                .unwrap();
        }
        if before == Before::Play {
            let at = Timestamp::now().as_micros();
            library
                .social()
                .push_events(
                    caller,
                    Vec::new(),
                    vec![NewPlay {
                        track_id: ids[(n * 31) % ids.len()].to_string(),
                        played_at: Timestamp::from_micros(at),
                        seconds_played: Some(100.0),
                        client_event_id: format!("bench-{}-{n}-{at}", id.as_str()),
                    }],
                )
                .await
                .unwrap();
        }
        let started = Instant::now();
        let playlist = library.playlists().get(caller, id).await.unwrap();
        times.push(started.elapsed());
        size = playlist.track_ids.len();
    }
    (percentile(&mut times, 50), percentile(&mut times, 95), size)
}

fn smart_playlists(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut backends = vec![(Backend::Embedded, "sqlite")];
    if scale_out_configured() {
        backends.push((Backend::ScaleOut, "postgres"));
    } else {
        eprintln!("MUSICLIB_TEST_POSTGRES_URL / S3 settings not set: PostgreSQL skipped");
    }
    let mut group = c.benchmark_group("playlists/smart");
    group.sample_size(20);
    for (backend, name) in backends {
        let (library, caller, ids) = runtime.block_on(load(backend, name));
        let (plain, years, words, listened) = runtime.block_on(async {
            let plain = library
                .playlists()
                .create(&caller, NewPlaylist { name: "plain".into(), track_ids: ids[..500].to_vec(), ..Default::default() })
                .await
                .unwrap()
                .id;
            let years = smart(&library, &caller, "years", json!({"all": [{"inTheRange": {"year": [1990, 1990]}}], "sort": "title", "limit": 500})).await;
            let words = smart(&library, &caller, "words", json!({"any": [{"contains": {"title": "river"}}, {"startsWith": {"album": "golden"}}], "sort": "-year,title", "limit": 500})).await;
            let listened = smart(&library, &caller, "listened", json!({"all": [{"gt": {"playcount": 0}}, {"any": [{"is": {"loved": true}}, {"inTheLast": {"lastplayed": 30}}]}], "sort": "-playcount,title", "limit": 500})).await;
            (plain, years, words, listened)
        });
        group.bench_function(format!("{name}/steady read"), |b| {
            b.to_async(&runtime)
                .iter(|| async { library.playlists().get(&caller, &years).await.unwrap() })
        });
        runtime.block_on(async {
            let (p50, p95, size) = reads(&library, &caller, &plain, Before::Nothing, &ids).await;
            println!("playlists/smart/{name}: plain playlist ({size} tracks): p50 {p50:.2} ms, p95 {p95:.2} ms");
            for (label, id) in [("year range", &years), ("text search", &words), ("plays and likes", &listened)] {
                let (p50, p95, size) = reads(&library, &caller, id, Before::Nothing, &ids).await;
                println!("playlists/smart/{name}: smart {label} ({size} tracks), unchanged: p50 {p50:.2} ms, p95 {p95:.2} ms (goal p95 <= 20)");
                let (p50, p95, size) = reads(&library, &caller, id, Before::Play, &ids).await;
                println!("playlists/smart/{name}: smart {label} ({size} tracks), after a play each: p50 {p50:.2} ms, p95 {p95:.2} ms");
                let (p50, p95, size) = reads(&library, &caller, id, Before::TrackChange, &ids).await;
                println!("playlists/smart/{name}: smart {label} ({size} tracks), after a track change each (evaluated again): p50 {p50:.2} ms, p95 {p95:.2} ms");
            }
        });
    }
    group.finish();
}

criterion_group!(benches, smart_playlists);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
