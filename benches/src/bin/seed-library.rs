//! Seeds a musiclib database with a large library, quickly (rows only, no audio), for the
//! catalogue load test (`benches/catalog-load.sh`): `--tracks` tracks that read like a folder
//! library, and a superuser with listening history, likes and playlists, so every list the
//! API has is long.
//!
//! ```text
//! seed-library --data-dir DIR [--database-url URL] [--tracks 100000] [--user bench]
//!              [--password bench-password] [--plays 20000] [--likes 5000] [--playlists 500]
//! ```
//!
//! The database must be new (or seeded by an earlier run with the same `--tracks`, which is
//! then kept: seeding 1,000,000 tracks takes minutes).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use musiclib_core::auth::Caller;
use musiclib_core::playlists::NewPlaylist;
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::{Config, Library, Timestamp, TrackId};

struct Options {
    data_dir: PathBuf,
    database_url: Option<String>,
    tracks: usize,
    user: String,
    password: String,
    plays: usize,
    likes: usize,
    playlists: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut options = Options {
        data_dir: PathBuf::new(),
        database_url: None,
        tracks: 100_000,
        user: "bench".into(),
        password: "bench-password".into(),
        plays: 20_000,
        likes: 5_000,
        playlists: 500,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .with_context(|| format!("{flag}: {value:?} is not a count"))
        };
        match flag.as_str() {
            "--data-dir" => options.data_dir = PathBuf::from(&value),
            "--database-url" => options.database_url = Some(value.clone()),
            "--tracks" => options.tracks = number()?,
            "--user" => options.user = value.clone(),
            "--password" => options.password = value.clone(),
            "--plays" => options.plays = number()?,
            "--likes" => options.likes = number()?,
            "--playlists" => options.playlists = number()?,
            other => bail!("unknown option {other}"),
        }
    }
    if options.data_dir.as_os_str().is_empty() {
        bail!("--data-dir is required");
    }
    Ok(options)
}

/// Index `i` of `n`, spread (a multiplicative hash, so picks look random but repeat).
fn pick(i: usize, n: usize) -> usize {
    (i.wrapping_mul(2_654_435_761) ^ (i >> 3)) % n
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = options()?;
    std::fs::create_dir_all(&options.data_dir)?;
    let mut config = Config::embedded(&options.data_dir);
    if let Some(url) = &options.database_url {
        config.database_url = url.clone();
    }
    let library = Library::open(config).await?;
    let pool = musiclib_core::testing::pool(&library);
    let present: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tracks")
        .fetch_one(pool)
        .await?;
    let started = Instant::now();
    if present == 0 {
        musiclib_core::testing::insert_library_tracks(&library, options.tracks, 0x5eed).await;
    } else if present as usize != options.tracks {
        bail!(
            "the database already has {present} tracks, not {}",
            options.tracks
        );
    }
    let seeded = started.elapsed();
    let user = match library.accounts().find_user_by_name(&options.user).await? {
        Some(user) => user,
        None => {
            library
                .accounts()
                .create_user(&options.user, &options.password, true)
                .await?
        }
    };
    let caller = Caller { user };
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(pool)
        .await?;
    let has_history: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM play_events")
        .fetch_one(pool)
        .await?;
    if has_history == 0 && !ids.is_empty() {
        // A few years of listening, a play every few minutes.
        let start = Timestamp::now().as_micros() - options.plays as i64 * 300_000_000;
        let plays: Vec<NewPlay> = (0..options.plays)
            .map(|i| NewPlay {
                track_id: ids[pick(i, ids.len())].clone(),
                played_at: Timestamp::from_micros(start + i as i64 * 300_000_000),
                seconds_played: Some(180.0),
                client_event_id: format!("seed-play-{i}"),
            })
            .collect();
        let likes: Vec<NewLike> = (0..options.likes)
            .map(|i| NewLike {
                track_id: ids[pick(i * 7 + 3, ids.len())].clone(),
                liked: true,
                client_event_id: format!("seed-like-{i}"),
                event_time: Timestamp::from_micros(start + i as i64 * 1_000_000),
            })
            .collect();
        for chunk in plays.chunks(musiclib_core::social::MAX_PUSH_EVENTS) {
            library
                .social()
                .push_events(&caller, Vec::new(), chunk.to_vec())
                .await?;
        }
        for chunk in likes.chunks(musiclib_core::social::MAX_PUSH_EVENTS) {
            library
                .social()
                .push_events(&caller, chunk.to_vec(), Vec::new())
                .await?;
        }
        for i in 0..options.playlists {
            let track_ids = (0..20)
                .map(|j| TrackId::parse(&ids[pick(i * 31 + j, ids.len())]))
                .collect::<Result<_, _>>()?;
            library
                .playlists()
                .create(
                    &caller,
                    NewPlaylist {
                        name: format!("Mix {i:04}"),
                        description: None,
                        public: i % 2 == 0,
                        track_ids,
                        rules: None,
                    },
                )
                .await?;
        }
    }
    if library.database_kind() == musiclib_core::DatabaseKind::Postgres {
        // What autovacuum does to a library that has been running a while: statistics for
        // the planner and a visibility map for index-only scans (a server started right
        // after a bulk import plans without them until autovacuum comes by).
        sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    }
    eprintln!(
        "seeded {} tracks in {:.1} s; user {} with {} plays, {} likes, {} playlists",
        options.tracks,
        seeded.as_secs_f64(),
        options.user,
        options.plays,
        options.likes,
        options.playlists
    );
    Ok(())
}
