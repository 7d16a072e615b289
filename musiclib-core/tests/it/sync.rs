//! Playlists with versions, likes and plays, and the sync protocol: rules, property tests over
//! random interleavings, and (on PostgreSQL) writers racing readers.

use std::collections::{BTreeMap, HashSet};

use musiclib_core::auth::Caller;
use musiclib_core::playlists::{NewPlaylist, PlaylistChanges};
use musiclib_core::sync::{NewLike, NewPlay};
use musiclib_core::{Library, Timestamp, TrackId};
use proptest::prelude::*;

use crate::backend_test;
use crate::support::*;

async fn some_tracks(library: &Library, count: usize) -> Vec<TrackId> {
    musiclib_core::testing::insert_synthetic_tracks(library, count).await;
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM tracks ORDER BY id")
        .fetch_all(library.db().pool())
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

        let created = library.create_playlist(&alice, NewPlaylist { name: " Road trip ".into(), track_ids: tracks[..2].to_vec(), ..Default::default() }).await.unwrap();
        assert_eq!((created.name.as_str(), created.version, created.track_ids.len()), ("Road trip", 1, 2));
        let id = created.id.clone();
        let added = library.add_playlist_tracks(&alice, &id, vec![tracks[2].clone(), tracks[3].clone()], Some(1), Some(1)).await.unwrap();
        assert_eq!(added.version, 2);
        assert_eq!(added.track_ids, vec![tracks[0].clone(), tracks[2].clone(), tracks[3].clone(), tracks[1].clone()]);
        // A second device still at version 1 is refused, not merged silently.
        let stale = library.add_playlist_tracks(&alice, &id, vec![tracks[4].clone()], None, Some(1)).await.unwrap_err();
        assert_eq!(stale.code(), "conflict");
        let removed = library.remove_playlist_tracks(&alice, &id, vec![0, 3], Some(2)).await.unwrap();
        assert_eq!((removed.version, removed.track_ids.clone()), (3, vec![tracks[2].clone(), tracks[3].clone()]));
        // Metadata edits are not adds or removes.
        let renamed = library.update_playlist(&alice, &id, PlaylistChanges { name: Some("Trip".into()), public: Some(true), ..Default::default() }).await.unwrap();
        assert_eq!((renamed.name.as_str(), renamed.version, renamed.public), ("Trip", 3, true));
        // Bad input names its field.
        let error = library.add_playlist_tracks(&alice, &id, vec![TrackId::new()], None, None).await.unwrap_err();
        assert_eq!(error.field(), Some("track_ids"));
        let error = library.remove_playlist_tracks(&alice, &id, vec![9], None).await.unwrap_err();
        assert_eq!(error.field(), Some("positions"));
        assert_eq!(library.create_playlist(&alice, NewPlaylist::default()).await.unwrap_err().field(), Some("name"));

        // Others read a public playlist but never change it; a private one does not exist for them.
        assert_eq!(library.get_playlist(&bob, &id).await.unwrap().version, 3);
        assert_eq!(library.add_playlist_tracks(&bob, &id, vec![tracks[5].clone()], None, None).await.unwrap_err().code(), "forbidden");
        library.update_playlist(&alice, &id, PlaylistChanges { public: Some(false), ..Default::default() }).await.unwrap();
        assert_eq!(library.get_playlist(&bob, &id).await.unwrap_err().code(), "not_found");
        assert_eq!(library.delete_playlist(&bob, &id).await.unwrap_err().code(), "not_found");
        assert_eq!(library.list_playlists(&bob, Default::default()).await.unwrap().total, 0);
        assert_eq!(library.list_playlists(&alice, Default::default()).await.unwrap().total, 1);

        // Covers: 404 before, the image after, refused when not an image.
        assert_eq!(library.playlist_cover(&alice, &id).await.unwrap_err().code(), "not_found");
        let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90wS\xde";
        library.set_playlist_cover(&alice, &id, bytes::Bytes::from_static(png)).await.unwrap();
        let (cover, mime) = library.playlist_cover(&alice, &id).await.unwrap();
        assert_eq!((cover.as_ref(), mime), (png, "image/png"));
        assert_eq!(library.set_playlist_cover(&alice, &id, bytes::Bytes::from_static(b"hello")).await.unwrap_err().field(), Some("image"));

        // Deleting a track removes it from the playlist as one more remove.
        library.delete_track(&user_admin(&library).await, &tracks[2]).await.unwrap();
        let after = library.get_playlist(&alice, &id).await.unwrap();
        assert_eq!((after.version, after.track_ids.clone()), (4, vec![tracks[3].clone()]));
        let changes: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM playlist_changes WHERE playlist_id = $1").bind(id.as_str()).fetch_one(library.db().pool()).await.unwrap();
        assert_eq!(changes, 4, "one change record per add or remove");

        // Deleting the playlist reaches the owner's other devices.
        let before = library.sync_changes(&alice, 0, None).await.unwrap().cursor;
        library.delete_playlist(&alice, &id).await.unwrap();
        let pulled = library.sync_changes(&alice, before, None).await.unwrap();
        assert_eq!(pulled.deleted_playlists, vec![id.to_string()]);
        assert!(library.blobs().list("playlist-covers").await.unwrap().is_empty());
    }
}

async fn user_admin(library: &Library) -> Caller {
    let user = library
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
        library.push_events(&alice, vec![like(&tracks[0], false, "b", 2_000)], Vec::new()).await.unwrap();
        library.push_events(&alice, vec![like(&tracks[0], true, "a", 1_000)], Vec::new()).await.unwrap();
        let (event, created) = library.record_like(&alice, like(&tracks[1], true, "c", 5_000)).await.unwrap();
        assert!(created && event.liked);
        let (_, created) = library.record_like(&alice, like(&tracks[1], false, "c", 9_000)).await.unwrap();
        assert!(!created, "a repeated client id is ignored");
        let states = library.like_states(&alice, &[tracks[0].to_string(), tracks[1].to_string(), tracks[2].to_string()]).await.unwrap();
        assert_eq!(states.iter().map(|state| state.liked).collect::<Vec<_>>(), [false, true, false]);
        let liked = library.liked_tracks(&alice, Default::default()).await.unwrap();
        assert_eq!(liked.items.iter().map(|liked| liked.track_id.clone()).collect::<Vec<_>>(), [tracks[1].to_string()]);
        assert_eq!(library.record_like(&alice, like(&TrackId::new(), true, "x", 1)).await.unwrap_err().code(), "not_found");

        // A push: accepted, duplicates and skipped (unknown tracks) counted; nothing rejected.
        let outcome = library
            .push_events(&alice, vec![like(&tracks[2], true, "c", 1)], vec![play(tracks[0].as_str(), "p1", 10), play("not-a-track", "p2", 20), play(tracks[1].as_str(), "p3", 30)])
            .await
            .unwrap();
        assert_eq!((outcome.accepted, outcome.duplicates, outcome.skipped.clone()), (2, 1, vec!["p2".to_string()]));
        let again = library.push_events(&alice, Vec::new(), vec![play(tracks[0].as_str(), "p1", 10)]).await.unwrap();
        assert_eq!((again.accepted, again.duplicates), (0, 1));
        let error = library.push_events(&alice, Vec::new(), vec![play(tracks[0].as_str(), "", 10)]).await.unwrap_err();
        assert_eq!(error.field(), Some("plays[0].client_event_id"));

        // History, newest first.
        let history = library.history(&alice, Default::default()).await.unwrap();
        assert_eq!(history.items.iter().map(|play| play.client_event_id.as_str()).collect::<Vec<_>>(), ["p3", "p1"]);

        // A pull pages every event exactly once, in ingestion order, then nothing.
        let mut seen = HashSet::new();
        let cursor = pull_all(&library, &alice, 0, 2, &mut seen).await;
        assert_eq!(seen.len(), 5, "{seen:?}");
        let empty = library.sync_changes(&alice, cursor, None).await.unwrap();
        assert!(empty.likes.is_empty() && empty.plays.is_empty() && !empty.has_more);
        // An event with an old event time still reaches other devices.
        library.push_events(&alice, vec![like(&tracks[2], false, "old", 1)], Vec::new()).await.unwrap();
        let next = library.sync_changes(&alice, cursor, None).await.unwrap();
        assert_eq!(next.likes.len(), 1);
        // A bob sees none of alice's events.
        let bob = user(&library, "bob").await;
        let bobs = library.sync_changes(&bob, 0, None).await.unwrap();
        assert!(bobs.likes.is_empty() && bobs.plays.is_empty() && bobs.playlists.is_empty());
        assert_eq!(bobs.tracks.len(), 3, "the catalogue is everyone's");
        assert_eq!(library.sync_changes(&bob, 0, Some(0)).await.unwrap_err().field(), Some("limit"));
    }
}

#[derive(Debug, Clone)]
enum Step {
    /// A device pushes events `(event id, track index or unknown, liked, event time)`.
    Push(Vec<(u8, Option<usize>, bool, i64)>),
    /// Device `device` pulls everything with page size `limit`.
    Pull(usize, i64),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let event = (
        0u8..40,
        prop::option::weighted(0.85, 0usize..4),
        any::<bool>(),
        0i64..50,
    );
    let push = prop::collection::vec(event, 1..6).prop_map(Step::Push);
    let pull = (0usize..3, 1i64..4).prop_map(|(device, limit)| Step::Pull(device, limit));
    prop::collection::vec(prop_oneof![push, pull], 1..14)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random interleavings of pushes (repeated ids, old event times, unknown tracks) and
    /// pulls from three devices of one user: every device that keeps pulling ends with exactly
    /// the accepted events, never one twice; a repeated push changes nothing; the like state is
    /// the latest event by event time; playlist versions count adds and removes.
    #[test]
    fn sync_converges_whatever_the_interleaving(steps in steps()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let library = TestLibrary::new(Backend::Embedded).await;
            let tracks = some_tracks(&library, 4).await;
            let alice = user(&library, "alice").await;
            let playlist = library.create_playlist(&alice, NewPlaylist { name: "p".into(), ..Default::default() }).await.unwrap();
            let mut operations = 0;
            let mut accepted: BTreeMap<String, (usize, bool, i64)> = BTreeMap::new();
            let mut devices: Vec<(i64, HashSet<String>)> = vec![(0, HashSet::new()); 3];
            for step in steps {
                match step {
                    Step::Push(events) => {
                        let likes: Vec<NewLike> = events.iter().map(|(id, track, liked, at)| NewLike {
                            track_id: track.map_or_else(|| TrackId::new().to_string(), |index| tracks[index].to_string()),
                            liked: *liked,
                            client_event_id: format!("e{id}"),
                            event_time: Timestamp::from_micros(*at),
                        }).collect();
                        let outcome = library.push_events(&alice, likes.clone(), Vec::new()).await.unwrap();
                        let mut expected_new = 0;
                        for (event, (_, track, liked, at)) in likes.iter().zip(&events) {
                            if let Some(index) = track {
                                if !accepted.contains_key(&event.client_event_id) {
                                    accepted.insert(event.client_event_id.clone(), (*index, *liked, *at));
                                    expected_new += 1;
                                }
                            }
                        }
                        assert_eq!(outcome.accepted, expected_new);
                        assert_eq!(outcome.skipped.len(), events.iter().filter(|(_, track, _, _)| track.is_none()).count());
                        // The same push again changes nothing.
                        let again = library.push_events(&alice, likes, Vec::new()).await.unwrap();
                        assert_eq!(again.accepted, 0);
                        // Every push also adds to or removes from the playlist.
                        let current = library.get_playlist(&alice, &playlist.id).await.unwrap();
                        if current.track_ids.is_empty() || operations % 2 == 0 {
                            library.add_playlist_tracks(&alice, &playlist.id, vec![tracks[operations % 4].clone()], None, Some(current.version)).await.unwrap();
                        } else {
                            library.remove_playlist_tracks(&alice, &playlist.id, vec![0], Some(current.version)).await.unwrap();
                        }
                        operations += 1;
                    }
                    Step::Pull(device, limit) => {
                        let (cursor, seen) = &mut devices[device];
                        *cursor = pull_all(&library, &alice, *cursor, limit, seen).await;
                    }
                }
            }
            let expected: HashSet<String> = accepted.keys().map(|id| format!("like:{id}")).collect();
            for (cursor, seen) in &mut devices {
                pull_all(&library, &alice, *cursor, 3, seen).await;
                assert_eq!(seen, &expected);
            }
            let version = library.get_playlist(&alice, &playlist.id).await.unwrap().version;
            assert_eq!(version, operations as i64);
            for (index, track) in tracks.iter().enumerate() {
                let latest = accepted
                    .iter()
                    .filter(|(_, (t, _, _))| *t == index)
                    .max_by(|(a_id, (_, _, a_at)), (b_id, (_, _, b_at))| a_at.cmp(b_at).then(a_id.cmp(b_id)))
                    .map(|(_, (_, liked, _))| *liked)
                    .unwrap_or(false);
                let state = library.like_states(&alice, &[track.to_string()]).await.unwrap();
                assert_eq!(state[0].liked, latest, "track {index}");
            }
        });
    }
}

/// On PostgreSQL, writers push while readers pull in a loop: every reader ends with every
/// event, none twice, even events whose transactions began before a pull and committed after.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_pushes_never_slip_past_a_pull() {
    if !musiclib_core::testing::scale_out_available() {
        return;
    }
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
        let mut tx = library.db().begin().await.unwrap();
        sqlx::query("INSERT INTO play_events (user_id, track_id, played_at, seconds_played, client_event_id, synced_at) VALUES ($1, $2, 1, 1.0, 'late', 0)")
            .bind(alice.user.id.as_str())
            .bind(tracks[0].as_str())
            .execute(&mut *tx)
            .await
            .unwrap();
        let stamp: i64 = sqlx::query_scalar("SELECT synced_at FROM play_events WHERE client_event_id = 'late'").fetch_one(&mut *tx).await.unwrap();
        // A pull while the writer is still open (on PostgreSQL it would wait on nothing: the
        // pull reads the clock's committed value).
        let during = library.sync_changes(&alice, 0, None).await.unwrap();
        assert!(during.plays.is_empty());
        assert!(during.cursor < stamp, "the cursor {} passed the uncommitted stamp {stamp}", during.cursor);
        tx.commit().await.unwrap();
        let after = library.sync_changes(&alice, during.cursor, None).await.unwrap();
        assert_eq!(after.plays.iter().map(|play| play.client_event_id.as_str()).collect::<Vec<_>>(), ["late"]);
    }
}
