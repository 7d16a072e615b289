//! Playlists with versions, likes and plays, and the sync protocol: rules, property tests over
//! random interleavings, and (on PostgreSQL) writers racing readers.

use std::collections::{BTreeMap, HashSet};

use musiclib_core::auth::Caller;
use musiclib_core::playlists::{NewPlaylist, PlaylistChanges};
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::{Library, Timestamp, TrackId};
use proptest::prelude::*;

use crate::backend_test;
use crate::support::*;

async fn some_tracks(library: &Library, count: usize) -> Vec<TrackId> {
    musiclib_core::testing::insert_synthetic_tracks(library, count).await;
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(musiclib_core::testing::pool(library))
        .await
        .unwrap();
    ids.into_iter()
        .map(|id| TrackId::parse(&id).unwrap())
        .collect()
}

fn like(track: &TrackId, liked: bool, id: &str, at: i64) -> NewLike {
    NewLike {
        track_id: track.to_string(),
        liked,
        client_event_id: id.into(),
        event_time: Timestamp::from_micros(at),
    }
}

fn play(track: &str, id: &str, at: i64) -> NewPlay {
    NewPlay {
        track_id: track.into(),
        played_at: Timestamp::from_micros(at),
        seconds_played: Some(30.0),
        client_event_id: id.into(),
    }
}

/// Pulls until `has_more` is false; returns every like and play id seen (panicking on a
/// repeat) and the last cursor.
async fn pull_all(
    library: &Library,
    caller: &Caller,
    since: i64,
    limit: i64,
    seen: &mut HashSet<String>,
) -> i64 {
    let mut cursor = since;
    loop {
        let page = library
            .social()
            .sync_changes(caller, cursor, Some(limit))
            .await
            .unwrap();
        assert!(page.cursor >= cursor, "the cursor never goes back");
        for id in page
            .likes
            .iter()
            .map(|like| format!("like:{}", like.client_event_id))
            .chain(
                page.plays
                    .iter()
                    .map(|play| format!("play:{}", play.client_event_id)),
            )
        {
            assert!(seen.insert(id.clone()), "{id} was sent twice");
        }
        cursor = page.cursor;
        if !page.has_more {
            return cursor;
        }
    }
}

backend_test! {
    async fn playlists_count_their_versions_and_refuse_stale_writes(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let tracks = some_tracks(&library, 6).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;

        let created = library.playlists().create(&alice, NewPlaylist { name: " Road trip ".into(), track_ids: tracks[..2].to_vec(), ..Default::default() }).await.unwrap();
        assert_eq!((created.name.as_str(), created.version, created.track_ids.len()), ("Road trip", 1, 2));
        let id = created.id.clone();
        let added = library.playlists().add_tracks(&alice, &id, vec![tracks[2].clone(), tracks[3].clone()], Some(1), Some(1)).await.unwrap();
        assert_eq!(added.version, 2);
        assert_eq!(added.track_ids, vec![tracks[0].clone(), tracks[2].clone(), tracks[3].clone(), tracks[1].clone()]);
        // A second device still at version 1 is refused, not merged silently.
        let stale = library.playlists().add_tracks(&alice, &id, vec![tracks[4].clone()], None, Some(1)).await.unwrap_err();
        assert_eq!(stale.code(), "conflict");
        let removed = library.playlists().remove_tracks(&alice, &id, vec![0, 3], Some(2)).await.unwrap();
        assert_eq!((removed.version, removed.track_ids.clone()), (3, vec![tracks[2].clone(), tracks[3].clone()]));
        // Metadata edits are not adds or removes.
        let renamed = library.playlists().update(&alice, &id, PlaylistChanges { name: Some("Trip".into()), public: Some(true), ..Default::default() }).await.unwrap();
        assert_eq!((renamed.name.as_str(), renamed.version, renamed.public), ("Trip", 3, true));
        // Bad input names its field.
        let error = library.playlists().add_tracks(&alice, &id, vec![TrackId::new()], None, None).await.unwrap_err();
        assert_eq!(error.field(), Some("track_ids"));
        let error = library.playlists().remove_tracks(&alice, &id, vec![9], None).await.unwrap_err();
        assert_eq!(error.field(), Some("positions"));
        assert_eq!(library.playlists().create(&alice, NewPlaylist::default()).await.unwrap_err().field(), Some("name"));

        // Others read a public playlist but never change it; a private one does not exist for them.
        assert_eq!(library.playlists().get(&bob, &id).await.unwrap().version, 3);
        assert_eq!(library.playlists().add_tracks(&bob, &id, vec![tracks[5].clone()], None, None).await.unwrap_err().code(), "forbidden");
        library.playlists().update(&alice, &id, PlaylistChanges { public: Some(false), ..Default::default() }).await.unwrap();
        assert_eq!(library.playlists().get(&bob, &id).await.unwrap_err().code(), "not_found");
        assert_eq!(library.playlists().delete(&bob, &id).await.unwrap_err().code(), "not_found");
        assert_eq!(library.playlists().list(&bob, Default::default()).await.unwrap().total, 0);
        assert_eq!(library.playlists().list(&alice, Default::default()).await.unwrap().total, 1);

        // Covers: 404 before, the image after, refused when not an image.
        assert_eq!(library.playlists().cover(&alice, &id).await.unwrap_err().code(), "not_found");
        let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90wS\xde";
        library.playlists().set_cover(&alice, &id, bytes::Bytes::from_static(png)).await.unwrap();
        let cover = library.playlists().cover(&alice, &id).await.unwrap();
        assert_eq!((cover.bytes.as_ref(), cover.mime_type), (png, "image/png"));
        assert_eq!(library.playlists().set_cover(&alice, &id, bytes::Bytes::from_static(b"hello")).await.unwrap_err().field(), Some("image"));

        // Deleting a track removes it from the playlist as one more remove.
        library.delete_track(&user_admin(&library).await, &tracks[2]).await.unwrap();
        let after = library.playlists().get(&alice, &id).await.unwrap();
        assert_eq!((after.version, after.track_ids.clone()), (4, vec![tracks[3].clone()]));
        let changes: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM playlist_changes WHERE playlist_id = $1").bind(id.as_str()).fetch_one(musiclib_core::testing::pool(&library)).await.unwrap();
        assert_eq!(changes, 4, "one change record per add or remove");

        // Deleting the playlist reaches the owner's other devices.
        let before = library.social().sync_changes(&alice, 0, None).await.unwrap().cursor;
        library.playlists().delete(&alice, &id).await.unwrap();
        let pulled = library.social().sync_changes(&alice, before, None).await.unwrap();
        assert_eq!(pulled.deleted_playlists, vec![id.to_string()]);
        assert!(musiclib_core::testing::blob_keys(&library, "playlist-covers").await.is_empty());
    }
}

async fn user_admin(library: &Library) -> Caller {
    let user = library
        .accounts()
        .create_user("root", "root-password", true)
        .await
        .unwrap();
    Caller { user }
}

backend_test! {
    async fn likes_history_and_pushes_follow_the_rules(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let tracks = some_tracks(&library, 3).await;
        let alice = user(&library, "alice").await;

        // Last writer wins by event time, whatever order the events arrive in.
        library.social().push_events(&alice, vec![like(&tracks[0], false, "b", 2_000)], Vec::new()).await.unwrap();
        library.social().push_events(&alice, vec![like(&tracks[0], true, "a", 1_000)], Vec::new()).await.unwrap();
        let (event, created) = library.social().record_like(&alice, like(&tracks[1], true, "c", 5_000)).await.unwrap();
        assert!(created && event.liked);
        let (_, created) = library.social().record_like(&alice, like(&tracks[1], false, "c", 9_000)).await.unwrap();
        assert!(!created, "a repeated client id is ignored");
        let states = library.social().like_states(&alice, &[tracks[0].to_string(), tracks[1].to_string(), tracks[2].to_string()]).await.unwrap();
        assert_eq!(states.iter().map(|state| state.liked).collect::<Vec<_>>(), [false, true, false]);
        let liked = library.social().liked_tracks(&alice, Default::default()).await.unwrap();
        assert_eq!(liked.items.iter().map(|liked| liked.track_id.clone()).collect::<Vec<_>>(), [tracks[1].to_string()]);
        assert_eq!(library.social().record_like(&alice, like(&TrackId::new(), true, "x", 1)).await.unwrap_err().code(), "not_found");

        // A push: accepted, duplicates and skipped (unknown tracks) counted; nothing rejected.
        let outcome = library
            .social().push_events(&alice, vec![like(&tracks[2], true, "c", 1)], vec![play(tracks[0].as_str(), "p1", 10), play("not-a-track", "p2", 20), play(tracks[1].as_str(), "p3", 30)])
            .await
            .unwrap();
        assert_eq!((outcome.accepted, outcome.duplicates, outcome.skipped.clone()), (2, 1, vec!["p2".to_string()]));
        let again = library.social().push_events(&alice, Vec::new(), vec![play(tracks[0].as_str(), "p1", 10)]).await.unwrap();
        assert_eq!((again.accepted, again.duplicates), (0, 1));
        let error = library.social().push_events(&alice, Vec::new(), vec![play(tracks[0].as_str(), "", 10)]).await.unwrap_err();
        assert_eq!(error.field(), Some("plays[0].client_event_id"));

        // History, newest first.
        let history = library.social().history(&alice, Default::default()).await.unwrap();
        assert_eq!(history.items.iter().map(|play| play.client_event_id.as_str()).collect::<Vec<_>>(), ["p3", "p1"]);

        // A pull pages every event exactly once, in ingestion order, then nothing.
        let mut seen = HashSet::new();
        let cursor = pull_all(&library, &alice, 0, 2, &mut seen).await;
        assert_eq!(seen.len(), 5, "{seen:?}");
        let empty = library.social().sync_changes(&alice, cursor, None).await.unwrap();
        assert!(empty.likes.is_empty() && empty.plays.is_empty() && !empty.has_more);
        // An event with an old event time still reaches other devices.
        library.social().push_events(&alice, vec![like(&tracks[2], false, "old", 1)], Vec::new()).await.unwrap();
        let next = library.social().sync_changes(&alice, cursor, None).await.unwrap();
        assert_eq!(next.likes.len(), 1);
        // A bob sees none of alice's events.
        let bob = user(&library, "bob").await;
        let bobs = library.social().sync_changes(&bob, 0, None).await.unwrap();
        assert!(bobs.likes.is_empty() && bobs.plays.is_empty() && bobs.playlists.is_empty());
        assert_eq!(bobs.tracks.len(), 3, "the catalogue is everyone's");
        assert_eq!(library.social().sync_changes(&bob, 0, Some(0)).await.unwrap_err().field(), Some("limit"));
    }
}

/// One step of a random interleaving.
#[derive(Debug, Clone)]
enum Step {
    /// User `user` pushes likes `(event id, track index or unknown, liked, event time)` and
    /// plays `(event id, track index or unknown, played at)` from one of their devices.
    Push {
        user: usize,
        likes: Vec<(u8, Option<usize>, bool, i64)>,
        plays: Vec<(u8, Option<usize>, i64)>,
    },
    /// User `user`'s device `device` pulls everything, `limit` changes a page.
    Pull {
        user: usize,
        device: usize,
        limit: i64,
    },
    /// User `user` adds to (or removes from) their playlist, sending the version they last
    /// saw, or an older one (`stale`: a device that missed a change).
    Edit { user: usize, add: bool, stale: bool },
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let track = prop::option::weighted(0.85, 0usize..4);
    let like = (0u8..30, track.clone(), any::<bool>(), 0i64..50);
    let play = (0u8..30, track, 0i64..50);
    let push = (
        0usize..2,
        prop::collection::vec(like, 0..5),
        prop::collection::vec(play, 0..5),
    )
        .prop_map(|(user, likes, plays)| Step::Push { user, likes, plays });
    let pull = (0usize..2, 0usize..3, 1i64..4).prop_map(|(user, device, limit)| Step::Pull {
        user,
        device,
        limit,
    });
    let edit = (0usize..2, any::<bool>(), prop::bool::weighted(0.3))
        .prop_map(|(user, add, stale)| Step::Edit { user, add, stale });
    prop::collection::vec(prop_oneof![3 => push, 2 => pull, 2 => edit], 1..18)
}

/// What one user's pushes must have left: the events stored (by client id), per log.
#[derive(Debug, Default)]
struct Model {
    likes: BTreeMap<String, (usize, bool, i64)>,
    plays: BTreeMap<String, (usize, i64)>,
    /// Adds and removes that succeeded on the user's playlist, and the version each device
    /// last saw (a stale edit sends an older one).
    edits: i64,
}

/// Runs `steps` for two users with three devices each, checking every push's counts and
/// every edit's answer against the model, then that every device converges on exactly its
/// user's events, each once.
async fn converge(backend: Backend, steps: Vec<Step>) {
    let library = TestLibrary::new(backend).await;
    let tracks = some_tracks(&library, 4).await;
    let users = [user(&library, "alice").await, user(&library, "bob").await];
    let mut playlists = Vec::new();
    for user in &users {
        playlists.push(
            library
                .playlists()
                .create(
                    user,
                    NewPlaylist {
                        name: "p".into(),
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
                .id,
        );
    }
    let mut models = [Model::default(), Model::default()];
    let mut devices: Vec<Vec<(i64, HashSet<String>)>> = vec![vec![(0, HashSet::new()); 3]; 2];
    let track_id = |track: &Option<usize>| {
        track.map_or_else(
            || TrackId::new().to_string(),
            |index| tracks[index].to_string(),
        )
    };
    for step in steps {
        match step {
            Step::Push { user, likes, plays } => {
                let model = &mut models[user];
                let new_likes: Vec<NewLike> = likes
                    .iter()
                    .map(|(id, track, liked, at)| NewLike {
                        track_id: track_id(track),
                        liked: *liked,
                        client_event_id: format!("l{id}"),
                        event_time: Timestamp::from_micros(*at),
                    })
                    .collect();
                let new_plays: Vec<NewPlay> = plays
                    .iter()
                    .map(|(id, track, at)| play(&track_id(track), &format!("p{id}"), *at))
                    .collect();
                // The model: unknown tracks are skipped; a client id stored before (or earlier in
                // this push) is a duplicate; anything else is stored.
                let (mut accepted, mut duplicates, mut skipped) = (0, 0, Vec::new());
                for (event, (_, track, liked, at)) in new_likes.iter().zip(&likes) {
                    match track {
                        None => skipped.push(event.client_event_id.clone()),
                        Some(_) if model.likes.contains_key(&event.client_event_id) => {
                            duplicates += 1
                        }
                        Some(index) => {
                            model
                                .likes
                                .insert(event.client_event_id.clone(), (*index, *liked, *at));
                            accepted += 1;
                        }
                    }
                }
                for (event, (_, track, at)) in new_plays.iter().zip(&plays) {
                    match track {
                        None => skipped.push(event.client_event_id.clone()),
                        Some(_) if model.plays.contains_key(&event.client_event_id) => {
                            duplicates += 1
                        }
                        Some(index) => {
                            model
                                .plays
                                .insert(event.client_event_id.clone(), (*index, *at));
                            accepted += 1;
                        }
                    }
                }
                let outcome = library
                    .social()
                    .push_events(&users[user], new_likes.clone(), new_plays.clone())
                    .await
                    .unwrap();
                assert_eq!(
                    (outcome.accepted, outcome.duplicates, outcome.skipped),
                    (accepted, duplicates, skipped),
                    "push of {likes:?} and {plays:?}"
                );
                // The same push again stores nothing: every known event is a duplicate.
                let again = library
                    .social()
                    .push_events(&users[user], new_likes, new_plays)
                    .await
                    .unwrap();
                assert_eq!(again.accepted, 0);
                assert_eq!(
                    again.duplicates,
                    likes.iter().filter(|l| l.1.is_some()).count()
                        + plays.iter().filter(|p| p.1.is_some()).count()
                );
            }
            Step::Pull {
                user,
                device,
                limit,
            } => {
                let (cursor, seen) = &mut devices[user][device];
                *cursor = pull_all(&library, &users[user], *cursor, limit, seen).await;
            }
            Step::Edit { user, add, stale } => {
                let (caller, id) = (&users[user], &playlists[user]);
                let current = library.playlists().get(caller, id).await.unwrap();
                if stale && current.version == 0 {
                    continue;
                }
                let sent = if stale {
                    current.version - 1
                } else {
                    current.version
                };
                let result = if add || current.track_ids.is_empty() {
                    library
                        .playlists()
                        .add_tracks(
                            caller,
                            id,
                            vec![tracks[(sent as usize) % 4].clone()],
                            None,
                            Some(sent),
                        )
                        .await
                } else {
                    library
                        .playlists()
                        .remove_tracks(caller, id, vec![0], Some(sent))
                        .await
                };
                match result {
                    Ok(playlist) => {
                        assert!(!stale, "a stale version was accepted");
                        models[user].edits += 1;
                        assert_eq!(playlist.version, models[user].edits);
                    }
                    Err(error) => {
                        assert!(stale, "a current version was refused: {error}");
                        assert_eq!(error.code(), "conflict");
                        assert_eq!(
                            library.playlists().get(caller, id).await.unwrap().version,
                            models[user].edits,
                            "a refused edit changed the version"
                        );
                    }
                }
            }
        }
    }
    for (user, model) in models.iter().enumerate() {
        let expected: HashSet<String> = model
            .likes
            .keys()
            .map(|id| format!("like:{id}"))
            .chain(model.plays.keys().map(|id| format!("play:{id}")))
            .collect();
        for (cursor, seen) in &mut devices[user] {
            pull_all(&library, &users[user], *cursor, 3, seen).await;
            assert_eq!(seen, &expected, "user {user} converged on other events");
        }
        assert_eq!(
            library
                .playlists()
                .get(&users[user], &playlists[user])
                .await
                .unwrap()
                .version,
            model.edits
        );
        let history = library
            .social()
            .history(
                &users[user],
                musiclib_core::domain::Page::new(Some(200), None).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(history.total, model.plays.len() as i64);
        for (index, track) in tracks.iter().enumerate() {
            let latest = model
                .likes
                .iter()
                .filter(|(_, (t, _, _))| *t == index)
                .max_by(|(a_id, (_, _, a_at)), (b_id, (_, _, b_at))| {
                    a_at.cmp(b_at).then(a_id.cmp(b_id))
                })
                .map(|(_, (_, liked, _))| *liked)
                .unwrap_or(false);
            let state = library
                .social()
                .like_states(&users[user], &[track.to_string()])
                .await
                .unwrap();
            assert_eq!(state[0].liked, latest, "user {user}, track {index}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random interleavings of pushes (repeated ids, old event times, unknown tracks, likes
    /// and plays), pulls from three devices of each of two users, and playlist edits with
    /// current and stale versions, on SQLite: every push's accepted/duplicate/skipped counts
    /// are the model's, every device converges on exactly its user's events (each once), a
    /// stale edit is a 409 that changes nothing, and versions count the adds and removes.
    #[test]
    fn sync_converges_whatever_the_interleaving(steps in steps()) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(converge(Backend::Embedded, steps));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The same on PostgreSQL + S3 (a fresh database per case).
    #[test]
    #[cfg_attr(not(musiclib_services), ignore = "needs PostgreSQL and S3: run the README test command")]
    fn sync_converges_whatever_the_interleaving_on_postgres(steps in steps()) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(converge(Backend::ScaleOut, steps));
    }
}

/// On PostgreSQL, writers push while readers pull in a loop: every reader ends with every
/// event, none twice, even events whose transactions began before a pull and committed after.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL: run the README test command"
)]
async fn concurrent_pushes_never_slip_past_a_pull() {
    let library = TestLibrary::new(Backend::ScaleOut).await;
    let tracks = some_tracks(&library, 2).await;
    let alice = user(&library, "alice").await;
    let writers = (0..4).map(|writer| {
        let (library, alice, track) = (
            library.library.clone(),
            alice.clone(),
            tracks[writer % 2].to_string(),
        );
        tokio::spawn(async move {
            for batch in 0..25 {
                let plays = (0..4)
                    .map(|n| play(&track, &format!("w{writer}-{batch}-{n}"), batch))
                    .collect();
                library
                    .social()
                    .push_events(&alice, Vec::new(), plays)
                    .await
                    .unwrap();
            }
        })
    });
    let writers: Vec<_> = writers.collect();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (library, alice) = (library.library.clone(), alice.clone());
            tokio::spawn(async move {
                let (mut cursor, mut seen) = (0, HashSet::new());
                while seen.len() < 400 {
                    cursor = pull_all(&library, &alice, cursor, 7, &mut seen).await;
                    tokio::task::yield_now().await;
                }
                seen.len()
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    for reader in readers {
        let seen = tokio::time::timeout(std::time::Duration::from_secs(60), reader)
            .await
            .expect("a reader missed an event and never caught up")
            .unwrap();
        assert_eq!(seen, 400);
    }
}

backend_test! {
    /// The classic hole of timestamp cursors: an event whose transaction took its stamp before
    /// a pull and commits after it. The pull's cursor stays below the uncommitted stamp, so
    /// the next pull returns the event.
    async fn an_event_committed_after_a_pull_is_not_skipped(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let tracks = some_tracks(&library, 1).await;
        let alice = user(&library, "alice").await;
        let mut tx = musiclib_core::testing::pool(&library).begin().await.unwrap();
        sqlx::query("INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at) VALUES ($1, $2, 1, 1.0, 'late', 0)")
            .bind(alice.user.id.as_str())
            .bind(tracks[0].as_str())
            .execute(&mut *tx)
            .await
            .unwrap();
        let stamp: i64 = sqlx::query_scalar("SELECT synced_at FROM play_events WHERE client_event_id = 'late'").fetch_one(&mut *tx).await.unwrap();
        // A pull while the writer is still open (on PostgreSQL it would wait on nothing: the
        // pull reads the clock's committed value).
        let during = library.social().sync_changes(&alice, 0, None).await.unwrap();
        assert!(during.plays.is_empty());
        assert!(during.cursor < stamp, "the cursor {} passed the uncommitted stamp {stamp}", during.cursor);
        tx.commit().await.unwrap();
        let after = library.social().sync_changes(&alice, during.cursor, None).await.unwrap();
        assert_eq!(after.plays.iter().map(|play| play.client_event_id.as_str()).collect::<Vec<_>>(), ["late"]);
    }
}
