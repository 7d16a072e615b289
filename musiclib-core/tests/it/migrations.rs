//! Migrations on databases that hold data: each migration runs on the schema before it with
//! rows in every table that schema has, and must keep them (but for what it is meant to
//! change, asserted in [`MEANT`]); the newest release then opens the database and reads the old
//! data through its services. Also `schema_status` on an older and on a newer database.
//!
//! The rows are the seeds `migrations/seed/NNNN.sql`: what a release at schema NNNN wrote,
//! inserted once migration NNNN has run and before the next one. One file serves both engines
//! (portable SQL); `{argon2:PASSWORD}` and `{U+XXXX}` in it are filled in as it is read.
//! Storage is local disk on both backends: nothing here reads a blob.

use std::collections::BTreeMap;
use std::path::Path;

use musiclib_core::auth::legacy::LegacyCredentials;
use musiclib_core::catalog::{AlbumFilter, TrackFilter};
use musiclib_core::domain::{Availability, MetadataStatus, Source};
use musiclib_core::podcasts::EpisodeStatus;
use musiclib_core::settings::{ReplayGainMode, StreamingQuality};
use musiclib_core::shares::{ShareId, ShareTarget};
use musiclib_core::{
    Config, ErrorKind, Library, PlaylistId, PodcastId, SchemaStatus, Timestamp, TrackId,
};
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Row};

use crate::backend_test;
use crate::support::*;

static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// A seeded id (`id!("d001")`): the seeds' ids are these UUIDs, by the kind of row they name
/// (a… users, b… artists, c… albums, d… tracks, e… playlists, f… podcasts and stations).
macro_rules! id {
    ($suffix:literal) => {
        concat!("018b0000-0000-7000-8000-00000000", $suffix)
    };
}

/// Bob's app password, stored encrypted by the seed of schema 5.
const APP_PASSWORD: &str = "Kq7mXvB3nRt8HwPz4sYeLc2D";
/// The `LEGACY_SECRET_KEY` it is encrypted under.
const LEGACY_SECRET_KEY: &[u8] = b"migration-test legacy key";

/// What a migration is meant to do to the rows already there. Anything else must come
/// through it as it was: every row, with the values it had in the columns it had.
struct Meant {
    version: i64,
    /// Columns it rewrites in rows already there (`table.column`).
    rewrites: &'static [&'static str],
    /// Rows it deletes: table and primary key.
    deletes: &'static [(&'static str, &'static str)],
    /// What holds after it: a statement counting rows, and the count.
    checks: &'static [(&'static str, i64)],
    /// The same, on SQLite only.
    sqlite_checks: &'static [(&'static str, i64)],
}

const NOTHING: Meant = Meant {
    version: 0,
    rewrites: &[],
    deletes: &[],
    checks: &[],
    sqlite_checks: &[],
};

const MEANT: &[Meant] = &[
    // SQLite's search index starts with the tracks already there.
    Meant {
        version: 3,
        sqlite_checks: &[
            ("SELECT COUNT(*) FROM track_search_ids", 4),
            ("SELECT COUNT(*) FROM tracks_search WHERE tracks_search MATCH 'owls'", 2),
        ],
        ..NOTHING
    },
    // Rows already there are stamped in the order they changed.
    Meant {
        version: 4,
        checks: &[
            ("SELECT COUNT(*) FROM tracks WHERE synced_at = updated_at", 4),
            ("SELECT COUNT(*) FROM playlists WHERE synced_at = updated_at", 2),
            ("SELECT COUNT(*) FROM tombstones WHERE synced_at = deleted_at", 1),
        ],
        ..NOTHING
    },
    // Accounts stay enabled, and tokens issued before (which carry no version: 0) valid.
    Meant {
        version: 6,
        checks: &[("SELECT COUNT(*) FROM users WHERE disabled_at IS NULL AND token_version = 0", 2)],
        ..NOTHING
    },
    // The lyrics cache's new columns: no language known, no offset, no provider error.
    Meant {
        version: 11,
        checks: &[("SELECT COUNT(*) FROM lyrics WHERE language IS NULL AND offset_ms = 0 AND error IS NULL", 4)],
        ..NOTHING
    },
    // Every track gets a random shuffle key. Writing it is a change to the track, which the
    // triggers of 0004 stamp again (and move the clock): sync clients pull every track once
    // more.
    Meant {
        version: 12,
        rewrites: &["tracks.synced_at", "sync_clock.last_stamp"],
        checks: &[
            ("SELECT COUNT(*) FROM tracks WHERE synced_at > updated_at", 4),
            (
                "SELECT COUNT(*) FROM (SELECT COUNT(DISTINCT shuffle_key) AS keys FROM tracks) spread WHERE keys > 1",
                1,
            ),
        ],
        ..NOTHING
    },
    // Playlists already there stay lists.
    Meant {
        version: 23,
        checks: &[("SELECT COUNT(*) FROM playlists WHERE rules IS NULL", 2)],
        ..NOTHING
    },
    // A queue saved before has no place (its current track's first place is meant); an entry
    // of now playing has no timeline and has counted nothing.
    Meant {
        version: 27,
        checks: &[
            ("SELECT COUNT(*) FROM play_queues WHERE current_index IS NULL", 1),
            (
                "SELECT COUNT(*) FROM now_playing WHERE state IS NULL AND position_ms IS NULL
                 AND playback_rate IS NULL AND listened_ms = 0 AND playback_id IS NULL AND scrobbled = 0",
                1,
            ),
        ],
        ..NOTHING
    },
    // Synced lyrics read from files go (they are read again, with their word timing);
    // LRCLIB's, and lyrics without times, stay.
    Meant {
        version: 28,
        deletes: &[("lyrics", id!("d001")), ("lyrics", id!("d004"))],
        ..NOTHING
    },
];

fn migrator(backend: Backend) -> &'static Migrator {
    match backend {
        Backend::Embedded => &SQLITE,
        Backend::ScaleOut => &POSTGRES,
    }
}

/// The seeds, by the schema they are written at (still to be [`fill`]ed in).
fn seeds() -> BTreeMap<i64, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/migrations/seed");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("read {}: {error}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let version = path
                .file_name()
                .and_then(|name| name.to_str()?.strip_suffix(".sql")?.parse().ok())
                .unwrap_or_else(|| panic!("{}: a seed is named NNNN.sql", path.display()));
            (version, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// `seed` with each `{argon2:PASSWORD}` replaced by a hash of the password made as core makes
/// them, and each `{U+XXXX}` by that character.
fn fill(seed: &str) -> String {
    let mut filled = String::with_capacity(seed.len());
    let mut rest = seed;
    while let Some(start) = [rest.find("{argon2:"), rest.find("{U+")]
        .into_iter()
        .flatten()
        .min()
    {
        filled.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').expect("a placeholder ends with }");
        let placeholder = &rest[start + 1..end];
        match placeholder.split_once(':') {
            Some(("argon2", password)) => {
                filled.push_str(&musiclib_core::auth::hash_password(password).unwrap())
            }
            _ => {
                let code = u32::from_str_radix(&placeholder["U+".len()..], 16).unwrap();
                filled.push(char::from_u32(code).unwrap());
            }
        }
        rest = &rest[end + 1..];
    }
    filled.push_str(rest);
    filled
}

/// Every row of every table, its values as text.
#[derive(Default)]
struct Snapshot(BTreeMap<String, Rows>);

/// A table's columns and its rows by primary key.
struct Rows {
    columns: Vec<String>,
    rows: BTreeMap<Vec<Option<String>>, Vec<Option<String>>>,
}

/// A fresh database, and the directory a library opened on it keeps its files in.
struct Scratch {
    backend: Backend,
    dir: tempfile::TempDir,
    url: String,
    pool: AnyPool,
}

impl Scratch {
    async fn new(backend: Backend) -> Scratch {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let (url, connect) = match backend {
            Backend::Embedded => {
                let url = format!("sqlite://{}", dir.path().join("musiclib.db").display());
                (url.clone(), format!("{url}?mode=rwc"))
            }
            Backend::ScaleOut => {
                let url = musiclib_core::testing::create_postgres_database().await;
                (url.clone(), url)
            }
        };
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .connect(&connect)
            .await
            .unwrap();
        Scratch {
            backend,
            dir,
            url,
            pool,
        }
    }

    /// Applies the migrations up to `through` one at a time, each by a migrator that knows
    /// no later one (as the release that added it), seeding each schema as it comes and
    /// checking what each migration did to the rows already there.
    async fn migrate_seeded(&self, through: i64) {
        let migrations: Vec<_> = migrator(self.backend)
            .iter()
            .filter(|migration| migration.version <= through)
            .cloned()
            .collect();
        let mut seeds = seeds();
        let mut before = Snapshot::default();
        for (index, migration) in migrations.iter().enumerate() {
            let (version, name) = (migration.version, &migration.description);
            Migrator::with_migrations(migrations[..=index].to_vec())
                .run(&self.pool)
                .await
                .unwrap_or_else(|error| {
                    panic!("migration {version} ({name}) fails on a database with data: {error}")
                });
            let meant = MEANT
                .iter()
                .find(|meant| meant.version == version)
                .unwrap_or(&NOTHING);
            let after = self.snapshot().await;
            let changes = differences(&before, &after, meant);
            assert!(
                changes.is_empty(),
                "migration {version} ({name}) changed rows it is not meant to:\n{}",
                changes.join("\n")
            );
            let sqlite_checks = match self.backend {
                Backend::Embedded => meant.sqlite_checks,
                Backend::ScaleOut => &[],
            };
            for (statement, expected) in meant.checks.iter().chain(sqlite_checks) {
                let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(*statement))
                    .fetch_one(&self.pool)
                    .await
                    .unwrap_or_else(|error| panic!("{statement}: {error}"));
                assert_eq!(
                    count, *expected,
                    "after migration {version} ({name}): {statement}"
                );
            }
            if let Some(seed) = seeds.remove(&version) {
                let mut tx = self.pool.begin().await.unwrap();
                sqlx::raw_sql(sqlx::AssertSqlSafe(fill(&seed)))
                    .execute(&mut *tx)
                    .await
                    .unwrap_or_else(|error| panic!("seed {version:04}.sql: {error}"));
                tx.commit().await.unwrap();
            }
            before = self.snapshot().await;
        }
    }

    /// Every table but the migrations' own and SQLite's search index (its shadow tables hold
    /// binary pages; the index is checked by count after 0003 and by the searches at the end).
    async fn snapshot(&self) -> Snapshot {
        let tables: Vec<String> = sqlx::query_scalar(match self.backend {
            Backend::Embedded => "SELECT name FROM sqlite_master WHERE type = 'table'",
            Backend::ScaleOut => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            }
        })
        .fetch_all(&self.pool)
        .await
        .unwrap();
        let mut snapshot = Snapshot::default();
        for table in tables {
            if table == "_sqlx_migrations"
                || table.starts_with("sqlite_")
                || table.starts_with("tracks_search")
            {
                continue;
            }
            let rows = self.rows(&table).await;
            snapshot.0.insert(table, rows);
        }
        snapshot
    }

    async fn rows(&self, table: &str) -> Rows {
        // Each column, and its place in the primary key (0: not in it).
        let columns: Vec<(String, i64)> = sqlx::query_as(match self.backend {
            Backend::Embedded => "SELECT name, pk FROM pragma_table_info($1) ORDER BY cid",
            Backend::ScaleOut => {
                "SELECT CAST(c.column_name AS TEXT), COALESCE((
                     SELECT CAST(k.ordinal_position AS BIGINT)
                     FROM information_schema.key_column_usage k
                     JOIN information_schema.table_constraints t
                       ON t.constraint_name = k.constraint_name AND t.table_schema = k.table_schema
                     WHERE t.constraint_type = 'PRIMARY KEY' AND k.table_schema = c.table_schema
                       AND k.table_name = c.table_name AND k.column_name = c.column_name), 0)
                 FROM information_schema.columns c
                 WHERE c.table_schema = current_schema() AND c.table_name = $1
                 ORDER BY c.ordinal_position"
            }
        })
        .bind(table)
        .fetch_all(&self.pool)
        .await
        .unwrap();
        let mut key: Vec<(i64, usize)> = columns
            .iter()
            .enumerate()
            .filter(|(_, (_, place))| *place > 0)
            .map(|(index, (_, place))| (*place, index))
            .collect();
        key.sort();
        // A table without a primary key is keyed by whole rows.
        let key: Vec<usize> = if key.is_empty() {
            (0..columns.len()).collect()
        } else {
            key.into_iter().map(|(_, index)| index).collect()
        };
        let select = columns
            .iter()
            .map(|(name, _)| format!("CAST(\"{name}\" AS TEXT)"))
            .collect::<Vec<_>>()
            .join(", ");
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {select} FROM \"{table}\""
        )))
        .fetch_all(&self.pool)
        .await
        .unwrap_or_else(|error| panic!("read {table}: {error}"))
        .into_iter()
        .map(|row| {
            let values: Vec<Option<String>> = (0..columns.len())
                .map(|index| row.try_get(index).unwrap())
                .collect();
            (
                key.iter().map(|&index| values[index].clone()).collect(),
                values,
            )
        })
        .collect();
        Rows {
            columns: columns.into_iter().map(|(name, _)| name).collect(),
            rows,
        }
    }

    /// The library the newest release opens on this database.
    async fn open(&self) -> musiclib_core::Result<Library> {
        let mut config = Config::embedded(self.dir.path());
        config.database_url = self.url.clone();
        config.legacy_secret_key = LEGACY_SECRET_KEY.to_vec();
        // No test reaches a public service by accident: a port nothing listens on.
        config.enrichment.lrclib_base_url = "http://127.0.0.1:9".into();
        config.scrobbling.lastfm_base_url = "http://127.0.0.1:9/2.0/".into();
        config.scrobbling.listenbrainz_base_url = "http://127.0.0.1:9".into();
        Library::open(config).await
    }
}

/// How `after` differs from `before` but for what `meant` says.
fn differences(before: &Snapshot, after: &Snapshot, meant: &Meant) -> Vec<String> {
    let mut found = Vec::new();
    for (table, old) in &before.0 {
        let Some(new) = after.0.get(table) else {
            found.push(format!("table {table} is gone"));
            continue;
        };
        let places: Vec<Option<usize>> = old
            .columns
            .iter()
            .map(|column| new.columns.iter().position(|name| name == column))
            .collect();
        for (column, place) in old.columns.iter().zip(&places) {
            if place.is_none() {
                found.push(format!("column {table}.{column} is gone"));
            }
        }
        for (key, row) in &old.rows {
            let deleted = meant
                .deletes
                .iter()
                .any(|(name, id)| name == table && key == &[Some(id.to_string())]);
            match (new.rows.get(key), deleted) {
                (None, true) => {}
                (Some(_), true) => found.push(format!("{table} {key:?} is still there")),
                (None, false) => found.push(format!("{table} {key:?} is gone")),
                (Some(now), false) => {
                    for ((column, value), place) in old.columns.iter().zip(row).zip(&places) {
                        let Some(place) = place else { continue };
                        if now[*place] != *value
                            && !meant
                                .rewrites
                                .contains(&format!("{table}.{column}").as_str())
                        {
                            found.push(format!(
                                "{table} {key:?}: {column} was {value:?}, is {:?}",
                                now[*place]
                            ));
                        }
                    }
                }
            }
        }
        for key in new.rows.keys().filter(|key| !old.rows.contains_key(*key)) {
            found.push(format!("{table} {key:?} appeared"));
        }
    }
    // What is meant to go must have been there: the seeds keep each migration's work tested.
    for (table, id) in meant.deletes {
        let key = vec![Some(id.to_string())];
        if !before
            .0
            .get(*table)
            .is_some_and(|old| old.rows.contains_key(&key))
        {
            found.push(format!(
                "no seed writes {table} {id}, which it should delete"
            ));
        }
    }
    found
}

fn track(id: &str) -> TrackId {
    TrackId::parse(id).unwrap()
}

backend_test! {
    async fn every_migration_keeps_the_data_written_before_it(backend: Backend) {
        let newest = musiclib_core::schema_version();
        let versions: Vec<i64> = migrator(backend).iter().map(|migration| migration.version).collect();
        assert_eq!(versions, (1..=newest).collect::<Vec<_>>(), "migrations are numbered 1 to {newest}");
        assert!(seeds().keys().all(|version| versions.contains(version)), "a seed is named after a migration");
        assert!(MEANT.iter().all(|meant| versions.contains(&meant.version)), "MEANT names migrations");

        let db = Scratch::new(backend).await;
        db.migrate_seeded(newest).await;
        db.pool.close().await;
        let status = musiclib_core::schema_status(&db.url).await.unwrap();
        assert_eq!(status, SchemaStatus { applied: newest, pending: Vec::new(), unknown: Vec::new() });
        let library = db.open().await.expect("the newest release opens the migrated database");

        // The password hashed by the first release signs in; the app password stored at
        // schema 5 opens the legacy interface, by name and as an OpenSubsonic apiKey.
        let accounts = library.accounts();
        let token = accounts.login("alice", "alice-password", None).await.unwrap();
        let alice = accounts.authenticate(&token.token).await.unwrap();
        assert_eq!((alice.user.id.as_str(), alice.user.username.as_str(), alice.user.is_admin), (id!("a001"), "Alice", true));
        assert_eq!(alice.user.created_at, Timestamp::from_micros(1_700_000_000_000_000));
        assert_eq!(accounts.login("alice", "bob-password", None).await.unwrap_err().kind(), ErrorKind::Unauthenticated);
        let bob = accounts.authenticate_legacy("bob", &LegacyCredentials::Password(APP_PASSWORD.into()), None).await.unwrap();
        assert_eq!(bob.user.id.as_str(), id!("a002"));
        assert_eq!(accounts.authenticate_api_key(APP_PASSWORD, None).await.unwrap().user.id, bob.user.id);
        assert_eq!(accounts.login("bob", "bob-password", None).await.unwrap().user.id, bob.user.id);

        // The catalogue, its albums, and the search (SQLite's index was built by 0003).
        let catalog = library.catalog();
        let tracks = catalog.list_tracks(&TrackFilter::default(), None, Default::default()).await.unwrap();
        let titles: Vec<&str> = tracks.items.iter().map(|track| track.title.as_str()).collect();
        assert_eq!((titles, tracks.total), (vec!["Amanecer", "Headlights", "Lluvia", "Tunnel Vision"], 4));
        let headlights = &tracks.items[1];
        assert_eq!(headlights.id.as_str(), id!("d001"));
        assert_eq!((headlights.artist_name.as_deref(), headlights.album_id.as_ref().map(|id| id.as_str())), (Some("The Midnight Owls"), Some(id!("c001"))));
        assert_eq!((headlights.duration_ms, headlights.source, headlights.availability, headlights.metadata_status), (Some(214_000), Source::Upload, Availability::Available, MetadataStatus::Enriched));
        assert_eq!(headlights.added_by.as_ref(), Some(&alice.user.id));
        assert_eq!(tracks.items[2].source, Source::LocalFolder);
        let albums = catalog.list_albums(&AlbumFilter::default(), None, Default::default()).await.unwrap();
        let albums: Vec<_> = albums.items.iter().map(|album| (album.title.as_str(), album.artist_name.as_deref(), album.track_count)).collect();
        assert_eq!(albums, [("Canciones", Some("Los Señores"), 2), ("Night Drive", Some("The Midnight Owls"), 2)]);
        for (query, expected) in [("owls", ["Headlights", "Tunnel Vision"]), ("senores", ["Lluvia", "Amanecer"])] {
            let found = catalog.search_library(query, 10).await.unwrap();
            let titles: Vec<&str> = found.tracks.iter().map(|track| track.title.as_str()).collect();
            assert_eq!(titles, expected, "search {query:?}");
        }

        // Playlists: a list (a track twice), another user's public one, the smart one (its
        // rules evaluated again over the likes).
        let playlists = library.playlists();
        let road_trip = playlists.get(&alice, &PlaylistId::parse(id!("e001")).unwrap()).await.unwrap();
        assert_eq!(road_trip.track_ids, [track(id!("d001")), track(id!("d003")), track(id!("d001"))]);
        assert_eq!((road_trip.name.as_str(), road_trip.version, road_trip.public, road_trip.duration_ms), ("Road trip", 2, false, 214_000 + 243_500 + 214_000));
        let listed = playlists.list(&alice, Default::default()).await.unwrap();
        let names: Vec<&str> = listed.items.iter().map(|playlist| playlist.name.as_str()).collect();
        assert_eq!(names, ["Loved", "Quiet evenings", "Road trip"]);
        let loved = playlists.get(&alice, &PlaylistId::parse(id!("e003")).unwrap()).await.unwrap();
        assert!(loved.rules.is_some());
        assert_eq!(loved.track_ids, [track(id!("d003")), track(id!("d001"))]);

        // Likes (the newest event of each track wins), history, stars, the saved queue (its
        // place from the first place of its current track), a bookmark, settings.
        let social = library.social();
        let likes = social.liked_tracks(&alice, Default::default()).await.unwrap();
        let likes: Vec<(&str, i64)> = likes.items.iter().map(|like| (like.track_id.as_str(), like.liked_at.as_micros())).collect();
        assert_eq!(likes, [(id!("d003"), 1_700_002_300_000_000), (id!("d001"), 1_700_002_000_000_000)]);
        let history = social.history(&alice, Default::default()).await.unwrap();
        let plays: Vec<(&str, &str)> = history.items.iter().map(|play| (play.track_id.as_str(), play.client_event_id.as_str())).collect();
        assert_eq!(plays, [(id!("d001"), "play-0003"), (id!("d003"), "play-0002"), (id!("d001"), "play-0001")]);
        assert_eq!(history.total, 3);
        let starred = social.starred(&alice).await.unwrap();
        assert_eq!(starred.albums.iter().map(|album| album.title.as_str()).collect::<Vec<_>>(), ["Night Drive"]);
        let queue = social.play_queue(&alice).await.unwrap().expect("the saved queue");
        assert_eq!((queue.track_ids.len(), queue.current_index, queue.position_ms, queue.changed_by.as_deref()), (4, Some(1), 42_000, Some("Symfonium")));
        let bookmarks = social.bookmarks(&alice).await.unwrap();
        let bookmarks: Vec<_> = bookmarks.iter().map(|mark| (mark.track.title.as_str(), mark.position_ms, mark.comment.as_deref())).collect();
        assert_eq!(bookmarks, [("Tunnel Vision", 61_000, Some("the chorus"))]);
        let settings = library.settings().get(&alice).await.unwrap().settings;
        assert_eq!((settings.streaming_quality, settings.scrobbling, settings.replay_gain), (StreamingQuality::Low, false, ReplayGainMode::Off));

        // Lyrics: LRCLIB's synced ones and plain ones from tags are served from the cache.
        let lyrics = library.lyrics();
        let amanecer = lyrics.get(&alice, &track(id!("d003"))).await.unwrap();
        assert_eq!((amanecer.source.map(|source| source.as_str()), amanecer.lines.len()), (Some("lrclib"), 2));
        let tunnel = lyrics.cached(&track(id!("d002"))).await.unwrap().expect("plain lyrics kept");
        assert_eq!(tunnel.plain.as_deref(), Some("Into the tunnel\nOut into the light"));
        assert!(lyrics.cached(&track(id!("d001"))).await.unwrap().is_none());

        // Shares: a live one reaches its tracks; the expired and the revoked ones are gone.
        let shares = library.shares();
        let shared = ShareId::parse("SharedTracksOfAlice_01").unwrap();
        let share = shares.get(&alice, &shared).await.unwrap();
        assert_eq!(share.target, ShareTarget::Tracks(vec![track(id!("d001")), track(id!("d003"))]));
        assert_eq!((share.title.as_str(), share.description.as_deref(), share.tracks.len(), share.visit_count), ("Headlights and 1 more", Some("for the drive"), 2, 3));
        assert_eq!(shares.visit(&shared).await.unwrap().visit_count, 4);
        for gone in ["BobSharesAnAlbum_00001", "RevokedPlaylistShare01"] {
            let error = shares.visit(&ShareId::parse(gone).unwrap()).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Gone, "{gone}: {error}");
        }
        assert_eq!(shares.list(&alice, false, Default::default()).await.unwrap().total, 1);

        // The podcast subscription, its episodes and where Alice stopped; the radio station.
        let podcasts = library.podcasts();
        let channels = podcasts.channels(&alice).await.unwrap();
        let channels: Vec<_> = channels.iter().map(|channel| (channel.id.as_str(), channel.title.as_str(), channel.episode_count, channel.downloaded_count, channel.created_by.as_ref())).collect();
        assert_eq!(channels, [(id!("f001"), "Night Radio", 2, 1, Some(&alice.user.id))]);
        let episodes = podcasts.episodes(&alice, &PodcastId::parse(id!("f001")).unwrap(), None, Default::default()).await.unwrap();
        let episodes: Vec<_> = episodes.items.iter().map(|episode| (episode.title.as_str(), episode.status, episode.position_ms)).collect();
        assert_eq!(episodes, [("Episode 2: Midnight", EpisodeStatus::New, None), ("Episode 1: Dusk", EpisodeStatus::Downloaded, Some(600_000))]);
        let stations = library.stations().list(&alice).await.unwrap();
        assert_eq!(stations.iter().map(|station| station.name.as_str()).collect::<Vec<_>>(), ["Radio Nocturne"]);
    }
}

backend_test! {
    async fn schema_status_tells_an_older_database_from_a_newer_one(backend: Backend) {
        let newest = musiclib_core::schema_version();
        let last = migrator(backend).iter().last().unwrap();
        let db = Scratch::new(backend).await;
        db.migrate_seeded(newest - 1).await;
        let status = musiclib_core::schema_status(&db.url).await.unwrap();
        let pending = vec![(newest, last.description.to_string())];
        assert_eq!(status, SchemaStatus { applied: newest - 1, pending: pending.clone(), unknown: Vec::new() });

        // A migration of a newer release: reported, and this release refuses the database.
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES ($1, 'from a newer release', TRUE, $2, 0)",
        )
        .bind(newest + 1)
        .bind(vec![0u8; 48])
        .execute(&db.pool)
        .await
        .unwrap();
        db.pool.close().await;
        let status = musiclib_core::schema_status(&db.url).await.unwrap();
        assert_eq!(status, SchemaStatus { applied: newest + 1, pending, unknown: vec![newest + 1] });
        let refused = db.open().await.expect_err("a database of a newer release is refused");
        let refused = musiclib_core::error_chain(&refused);
        assert!(refused.contains(&(newest + 1).to_string()), "{refused}");
        let status = musiclib_core::schema_status(&db.url).await.unwrap();
        assert_eq!(status.applied, newest + 1, "refusing changed nothing");
        assert_eq!(status.pending.len(), 1, "refusing changed nothing");
    }
}
