//! Sharing links: what a link reaches (only its tracks, until it expires or is revoked), who
//! manages a share, the throttle.

use musiclib_core::auth::Caller;
use musiclib_core::playlists::NewPlaylist;
use musiclib_core::shares::{NewShare, ShareChanges, ShareId, ShareTarget, SHARES_PER_HOUR};
use musiclib_core::{ErrorKind, Library, Timestamp, TrackId};

use crate::backend_test;
use crate::support::*;

async fn upload(library: &Library, caller: &Caller, seconds: u32) -> TrackId {
    let wav = musiclib_core::testing::wav_tone(seconds);
    library
        .ingest()
        .upload_track(caller, Some(&format!("Tone {seconds}.wav")), wav.as_slice())
        .await
        .unwrap()
        .track
        .id
}

fn tracks(ids: &[&TrackId]) -> NewShare {
    NewShare {
        target: ShareTarget::Tracks(ids.iter().map(|id| (*id).clone()).collect()),
        description: Some("for you".into()),
        expires_at: None,
        downloadable: false,
    }
}

fn hours(n: i64) -> Timestamp {
    Timestamp::from_micros(Timestamp::now().as_micros() + n * 3_600_000_000)
}

backend_test! {
    async fn a_share_reaches_its_tracks_until_it_expires_or_is_revoked(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let admin = Caller { user: library.accounts().create_user("root", "root-password", true).await.unwrap() };
        let one = upload(&library, &alice, 1).await;
        let two = upload(&library, &alice, 2).await;
        let shares = library.shares();

        let share = shares.create(&alice, NewShare { expires_at: Some(hours(1)), ..tracks(&[&one]) }).await.unwrap();
        assert_eq!(share.id.as_str().len(), 22, "128 random bits, base64url");
        assert_eq!(share.tracks.len(), 1);
        assert_eq!(share.title, "Tone 1");
        let again = shares.create(&alice, tracks(&[&one])).await.unwrap();
        assert_ne!(again.id, share.id);

        // A visitor reaches the share's track, and nothing else.
        let visited = shares.visit(&share.id).await.unwrap();
        assert_eq!((visited.visit_count, visited.description.as_deref()), (1, Some("for you")));
        shares.audio(&share.id, &one, true).await.unwrap();
        shares.audio(&share.id, &one, false).await.unwrap();
        assert_eq!(shares.audio(&share.id, &two, true).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(shares.track_cover(&share.id, &two, None).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(shares.lyrics(&share.id, &two).await.unwrap_err().kind(), ErrorKind::NotFound);
        // Downloads only when allowed.
        assert_eq!(shares.download(&share.id, &one).await.unwrap_err().kind(), ErrorKind::Forbidden);
        shares.update(&alice, &share.id, ShareChanges { downloadable: Some(true), ..Default::default() }).await.unwrap();
        shares.download(&share.id, &one).await.unwrap();
        let seen = shares.get(&alice, &share.id).await.unwrap();
        assert_eq!((seen.visit_count, seen.play_count, seen.downloadable), (1, 1, true));
        assert!(seen.last_visited_at.is_some());

        // An unknown or malformed id is not found.
        let unknown = ShareId::parse("AAAAAAAAAAAAAAAAAAAAAA").unwrap();
        assert_eq!(shares.visit(&unknown).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(ShareId::parse("../etc").unwrap_err().kind(), ErrorKind::NotFound);

        // Only the owner (and admins) see and change a share.
        assert_eq!(shares.get(&bob, &share.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(shares.revoke(&bob, &share.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(shares.list(&bob, false, Default::default()).await.unwrap().total, 0);
        assert_eq!(shares.list(&bob, true, Default::default()).await.unwrap_err().kind(), ErrorKind::Forbidden);
        assert_eq!(shares.list(&admin, true, Default::default()).await.unwrap().total, 2);
        assert_eq!(shares.list(&alice, false, Default::default()).await.unwrap().total, 2);

        // Expired: gone for visitors, still listed for the owner.
        shares.update(&alice, &share.id, ShareChanges { expires_at: Some(Some(hours(-1))), ..Default::default() }).await.unwrap();
        let gone = shares.visit(&share.id).await.unwrap_err();
        assert_eq!(gone.kind(), ErrorKind::Gone);
        assert!(gone.to_string().contains("expired"), "{gone}");
        assert_eq!(shares.audio(&share.id, &one, true).await.unwrap_err().kind(), ErrorKind::Gone);
        assert_eq!(shares.download(&share.id, &one).await.unwrap_err().kind(), ErrorKind::Gone);
        assert!(shares.get(&alice, &share.id).await.unwrap().expired);

        // Revoked: gone for good, and no longer listed.
        shares.revoke(&admin, &again.id).await.unwrap();
        let gone = shares.visit(&again.id).await.unwrap_err();
        assert_eq!(gone.kind(), ErrorKind::Gone);
        assert!(gone.to_string().contains("revoked"), "{gone}");
        assert_eq!(shares.track_cover(&again.id, &one, None).await.unwrap_err().kind(), ErrorKind::Gone);
        assert_eq!(shares.list(&alice, false, Default::default()).await.unwrap().total, 1);
        assert_eq!(shares.get(&alice, &again.id).await.unwrap_err().kind(), ErrorKind::NotFound);

        // Bad input names its field and leaves nothing behind.
        let error = shares.create(&alice, tracks(&[])).await.unwrap_err();
        assert_eq!(error.field(), Some("track_ids"));
        let error = shares.create(&alice, tracks(&[&TrackId::new()])).await.unwrap_err();
        assert_eq!(error.field(), Some("track_ids"));
        let error = shares.create(&alice, NewShare { expires_at: Some(hours(-1)), ..tracks(&[&one]) }).await.unwrap_err();
        assert_eq!(error.field(), Some("expires_at"));
        let error = shares.create(&alice, NewShare { description: Some("x".repeat(1001)), ..tracks(&[&one]) }).await.unwrap_err();
        assert_eq!(error.field(), Some("description"));
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM shares").fetch_one(musiclib_core::testing::pool(&library)).await.unwrap();
        assert_eq!(count, 2);
    }
}

backend_test! {
    async fn a_shared_playlist_follows_it_and_is_gone_with_it(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let one = upload(&library, &alice, 1).await;
        let two = upload(&library, &alice, 2).await;
        let three = upload(&library, &alice, 3).await;
        let playlist = library.playlists().create(&alice, NewPlaylist { name: "Mix".into(), track_ids: vec![one.clone(), two.clone()], ..Default::default() }).await.unwrap();

        // Another user may not share a private playlist (it does not exist for them).
        let refused = library.shares().create(&bob, NewShare { target: ShareTarget::Playlist(playlist.id.clone()), ..tracks(&[]) }).await.unwrap_err();
        assert_eq!(refused.field(), Some("playlist_id"));

        let share = library.shares().create(&alice, NewShare { target: ShareTarget::Playlist(playlist.id.clone()), ..tracks(&[]) }).await.unwrap();
        assert_eq!(share.title, "Mix");
        assert_eq!(library.shares().visit(&share.id).await.unwrap().tracks.len(), 2);
        assert_eq!(library.shares().audio(&share.id, &three, true).await.unwrap_err().kind(), ErrorKind::NotFound);
        library.playlists().add_tracks(&alice, &playlist.id, vec![three.clone()], None, None).await.unwrap();
        let ids: Vec<TrackId> = library.shares().visit(&share.id).await.unwrap().tracks.into_iter().map(|track| track.id).collect();
        assert_eq!(ids, vec![one.clone(), two.clone(), three.clone()]);
        library.shares().audio(&share.id, &three, true).await.unwrap();

        library.playlists().delete(&alice, &playlist.id).await.unwrap();
        assert_eq!(library.shares().visit(&share.id).await.unwrap_err().kind(), ErrorKind::Gone);
        assert_eq!(library.shares().audio(&share.id, &one, true).await.unwrap_err().kind(), ErrorKind::Gone);
        // The owner still sees it (empty) and may revoke it.
        assert!(library.shares().get(&alice, &share.id).await.unwrap().tracks.is_empty());
        library.shares().revoke(&alice, &share.id).await.unwrap();
    }
}

backend_test! {
    async fn creating_shares_is_throttled_per_user(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let one = upload(&library, &alice, 1).await;
        for _ in 0..SHARES_PER_HOUR {
            library.shares().create(&alice, tracks(&[&one])).await.unwrap();
        }
        let refused = library.shares().create(&alice, tracks(&[&one])).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::RateLimited);
        assert!(refused.retry_after_seconds().is_some_and(|seconds| seconds > 0 && seconds <= 3600));
        // Another user has their own budget.
        library.shares().create(&bob, tracks(&[&one])).await.unwrap();
    }
}
