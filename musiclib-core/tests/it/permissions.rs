//! The permission table, without an adapter: each operation that needs a permission, called
//! through core by the owner of the thing, another user and an admin. (An anonymous caller
//! cannot call these at all: every one takes a `Caller`, which only authentication makes.
//! `musiclib-http`'s table adds that column.)

use futures::future::BoxFuture;
use musiclib_core::auth::Caller;
use musiclib_core::catalog::{TrackMetadata, TrackPatch};
use musiclib_core::domain::Page;
use musiclib_core::playlists::{NewPlaylist, PlaylistChanges};
use musiclib_core::{JobId, Library, PlaylistId, TrackId};

use crate::backend_test;
use crate::support::*;

/// What one row's operation needs, per caller (each gets its own copy of what it destroys).
struct World {
    tracks: Vec<TrackId>,
    job: JobId,
    private: Vec<PlaylistId>,
    public: PlaylistId,
    owner: Caller,
    /// Accounts to disable and delete, one per caller.
    accounts: Vec<musiclib_core::UserId>,
    /// The owner's shares, one per caller.
    shares: Vec<musiclib_core::shares::ShareId>,
    /// Internet radio stations, one per caller.
    stations: Vec<musiclib_core::ids::StationId>,
}

type Operation = for<'a> fn(
    &'a Library,
    &'a World,
    &'a Caller,
    usize,
) -> BoxFuture<'a, musiclib_core::Result<()>>;

/// Outcomes: `ok`, or an error code.
const OK: &str = "ok";

fn table() -> Vec<(&'static str, Operation, [&'static str; 3])> {
    vec![
        (
            "ask for a track's enrichment (it rewrites the metadata)",
            |l, w, c, _| {
                Box::pin(async move {
                    l.enrichment()
                        .request_enrichment(c, &w.tracks[1])
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", OK],
        ),
        (
            "edit a track",
            |l, w, c, _| {
                Box::pin(async move {
                    l.catalog()
                        .patch_track(
                            c,
                            &w.tracks[0],
                            &TrackPatch {
                                title: Some("Edited".into()),
                                ..Default::default()
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", OK],
        ),
        (
            "set a track's metadata",
            |l, w, c, _| {
                Box::pin(async move {
                    l.catalog()
                        .set_track_metadata(
                            c,
                            &w.tracks[0],
                            &TrackMetadata {
                                title: "Manual".into(),
                                ..Default::default()
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", OK],
        ),
        (
            "delete a track",
            |l, w, c, role| Box::pin(async move { l.delete_track(c, &w.tracks[role + 1]).await }),
            [OK, "forbidden", OK],
        ),
        (
            "read a job",
            |l, w, c, _| Box::pin(async move { l.jobs().get(c, &w.job).await.map(drop) }),
            [OK, "not_found", OK],
        ),
        (
            "scan a source",
            |l, _, c, _| Box::pin(async move { l.ingest().start_local_scan(c).await.map(drop) }),
            ["forbidden", "forbidden", OK],
        ),
        (
            "rotate the owner's app password",
            |l, w, c, _| {
                Box::pin(async move {
                    l.accounts()
                        .rotate_legacy_password(c, &w.owner.user.id)
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", OK],
        ),
        (
            "change server settings",
            |l, _, c, _| Box::pin(async move { l.admin().change_settings(c).map(drop) }),
            ["forbidden", "forbidden", "not_supported"],
        ),
        (
            "read the service report",
            |l, _, c, _| Box::pin(async move { l.admin().services(c).await.map(drop) }),
            ["forbidden", "forbidden", OK],
        ),
        (
            "read server settings",
            |l, _, c, _| Box::pin(async move { l.admin().settings(c).map(drop) }),
            ["forbidden", "forbidden", OK],
        ),
        (
            "read the metrics",
            |l, _, c, _| Box::pin(async move { l.admin().metrics(c).await.map(drop) }),
            ["forbidden", "forbidden", OK],
        ),
        (
            "check every stored file",
            |l, _, c, _| {
                Box::pin(async move { l.maintenance().start_file_check(c).await.map(drop) })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "clean up storage",
            |l, _, c, _| {
                Box::pin(async move { l.maintenance().start_cleanup(c, true).await.map(drop) })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "reindex",
            |l, _, c, _| Box::pin(async move { l.admin().reindex(c).await.map(drop) }),
            ["forbidden", "forbidden", OK],
        ),
        (
            "read a private playlist",
            |l, w, c, _| {
                Box::pin(async move { l.playlists().get(c, &w.private[0]).await.map(drop) })
            },
            [OK, "not_found", "not_found"],
        ),
        (
            "read a public playlist",
            |l, w, c, _| Box::pin(async move { l.playlists().get(c, &w.public).await.map(drop) }),
            [OK, OK, OK],
        ),
        (
            "rename a public playlist",
            |l, w, c, _| {
                Box::pin(async move {
                    l.playlists()
                        .update(
                            c,
                            &w.public,
                            PlaylistChanges {
                                name: Some("Renamed".into()),
                                ..Default::default()
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", "forbidden"],
        ),
        (
            "add to a public playlist",
            |l, w, c, _| {
                Box::pin(async move {
                    l.playlists()
                        .add_tracks(c, &w.public, vec![w.tracks[0].clone()], None, None)
                        .await
                        .map(drop)
                })
            },
            [OK, "forbidden", "forbidden"],
        ),
        (
            "delete a private playlist",
            |l, w, c, role| {
                Box::pin(async move { l.playlists().delete(c, &w.private[role]).await })
            },
            [OK, "not_found", "not_found"],
        ),
        (
            "share the owner's private playlist",
            |l, w, c, _| {
                Box::pin(async move {
                    l.shares()
                        .create(
                            c,
                            musiclib_core::shares::NewShare {
                                target: musiclib_core::shares::ShareTarget::Playlist(
                                    w.private[1].clone(),
                                ),
                                description: None,
                                expires_at: None,
                                downloadable: false,
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            // To anyone else it does not exist: a share of it names a field that is wrong.
            [OK, "validation_error", "validation_error"],
        ),
        (
            "read a share",
            |l, w, c, _| Box::pin(async move { l.shares().get(c, &w.shares[0]).await.map(drop) }),
            [OK, "not_found", OK],
        ),
        (
            "list every user's shares",
            |l, _, c, _| {
                Box::pin(async move { l.shares().list(c, true, Page::default()).await.map(drop) })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "change a share",
            |l, w, c, _| {
                Box::pin(async move {
                    l.shares()
                        .update(
                            c,
                            &w.shares[0],
                            musiclib_core::shares::ShareChanges {
                                description: Some(Some("changed".into())),
                                ..Default::default()
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            [OK, "not_found", OK],
        ),
        (
            "revoke a share",
            |l, w, c, role| Box::pin(async move { l.shares().revoke(c, &w.shares[role]).await }),
            [OK, "not_found", OK],
        ),
        (
            "list the internet radio stations",
            |l, _, c, _| Box::pin(async move { l.stations().list(c).await.map(drop) }),
            [OK, OK, OK],
        ),
        (
            "read an internet radio station",
            |l, w, c, _| {
                Box::pin(async move { l.stations().get(c, &w.stations[0]).await.map(drop) })
            },
            [OK, OK, OK],
        ),
        (
            "add an internet radio station",
            |l, _, c, _| {
                Box::pin(async move {
                    l.stations()
                        .create(
                            c,
                            musiclib_core::stations::StationFields {
                                name: "Added".into(),
                                stream_url: "https://radio.example/added.mp3".into(),
                                homepage_url: None,
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "change an internet radio station",
            |l, w, c, _| {
                Box::pin(async move {
                    l.stations()
                        .update(
                            c,
                            &w.stations[0],
                            musiclib_core::stations::StationChanges {
                                name: Some("Renamed".into()),
                                ..Default::default()
                            },
                        )
                        .await
                        .map(drop)
                })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "delete an internet radio station",
            |l, w, c, role| {
                Box::pin(async move { l.stations().delete(c, &w.stations[role]).await })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "list accounts",
            |l, _, c, _| {
                Box::pin(async move { l.accounts().list_users(c, Page::default()).await.map(drop) })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "add an account",
            |l, _, c, _| {
                Box::pin(async move {
                    l.accounts()
                        .add_user(c, "newcomer", "long enough", false)
                        .await
                        .map(drop)
                })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "disable an account",
            |l, w, c, role| {
                Box::pin(async move {
                    l.accounts()
                        .set_disabled(c, &w.accounts[role], true)
                        .await
                        .map(drop)
                })
            },
            ["forbidden", "forbidden", OK],
        ),
        (
            "disable one's own account",
            |l, _, c, _| {
                Box::pin(async move {
                    l.accounts()
                        .set_disabled(c, &c.user.id, true)
                        .await
                        .map(drop)
                })
            },
            ["forbidden", "forbidden", "conflict"],
        ),
        (
            "delete an account",
            |l, w, c, role| Box::pin(async move { l.delete_user(c, &w.accounts[role]).await }),
            ["forbidden", "forbidden", OK],
        ),
    ]
}

backend_test! {
    async fn core_decides_every_permission(backend: Backend) {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().to_path_buf();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(path))
            .build()
            .await;
        let owner = user(&library, "owner").await;
        let other = user(&library, "other").await;
        let admin = Caller { user: library.accounts().create_user("root", "root-password", true).await.unwrap() };
        musiclib_core::testing::insert_synthetic_tracks(&library, 4).await;
        musiclib_core::testing::set_uploader(&library, &owner.user.id).await;
        let tracks = library.catalog().list_tracks(&Default::default(), None, Page::default()).await.unwrap();
        let tracks: Vec<TrackId> = tracks.items.into_iter().map(|track| track.id).collect();
        let job = library.enrichment().request_enrichment(&owner, &tracks[0]).await.unwrap();
        let mut private = Vec::new();
        for name in ["a", "b", "c"] {
            private.push(library.playlists().create(&owner, NewPlaylist { name: name.into(), ..Default::default() }).await.unwrap().id);
        }
        let public = library.playlists().create(&owner, NewPlaylist { name: "shared".into(), public: true, ..Default::default() }).await.unwrap().id;
        let mut accounts = Vec::new();
        for name in ["x", "y", "z"] {
            accounts.push(user(&library, name).await.user.id);
        }
        let mut shares = Vec::new();
        for _ in 0..3 {
            let share = musiclib_core::shares::NewShare {
                target: musiclib_core::shares::ShareTarget::Tracks(vec![tracks[0].clone()]),
                description: None,
                expires_at: None,
                downloadable: false,
            };
            shares.push(library.shares().create(&owner, share).await.unwrap().id);
        }
        let mut stations = Vec::new();
        for name in ["one", "two", "three"] {
            let fields = musiclib_core::stations::StationFields {
                name: name.into(),
                stream_url: format!("https://radio.example/{name}.mp3"),
                homepage_url: None,
            };
            stations.push(library.stations().create(&admin, fields).await.unwrap().id);
        }
        let world = World { tracks, job, private, public, owner: owner.clone(), accounts, shares, stations };

        let callers = [("owner", &owner), ("other user", &other), ("admin", &admin)];
        let mut failures = Vec::new();
        for (operation, run, expected) in table() {
            for (role, (name, caller)) in callers.iter().enumerate() {
                let outcome = match run(&library, &world, caller, role).await {
                    Ok(()) => OK,
                    Err(error) => error.code(),
                };
                if outcome != expected[role] {
                    failures.push(format!("{operation} by {name}: {outcome} (expected {})", expected[role]));
                }
            }
        }
        assert!(failures.is_empty(), "permission table:\n{}", failures.join("\n"));
    }
}
