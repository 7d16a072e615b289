//! Smart playlists: rules in Navidrome's `.nsp` form, checked field by field, evaluated in the
//! database with every value bound, following the library and the owner's listening.

use musiclib_core::playlists::{NewPlaylist, PlaylistChanges, Rules};
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::{ErrorKind, Library, Timestamp, TrackId};
use serde_json::json;

use crate::backend_test;
use crate::support::*;

async fn ids_where(library: &Library, sql: &'static str) -> Vec<TrackId> {
    let ids: Vec<String> = sqlx::query_scalar(sql)
        .fetch_all(musiclib_core::testing::pool(library))
        .await
        .unwrap();
    ids.into_iter()
        .map(|id| TrackId::parse(&id).unwrap())
        .collect()
}

fn rules(value: serde_json::Value) -> Rules {
    Rules::parse(&value).unwrap()
}

/// An `.nsp` file as Navidrome users keep them: playlist keys beside the rules, camelCase
/// field names.
const NSP: &str = r#"{
  "name": "Eighties rock",
  "comment": "Imported from Navidrome",
  "all": [
    {"inTheRange": {"year": [1980, 1989]}},
    {"any": [{"is": {"genre": "Rock"}}, {"startsWith": {"title": "Track 1"}}]}
  ],
  "sort": "year,title",
  "order": "desc",
  "limit": 25
}"#;

backend_test! {
    async fn smart_playlists_select_by_their_rules(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 300).await;
        let alice = user(&library, "alice").await;

        let by_hand = rules(json!({"all": [
            {"inTheRange": {"year": [1980, 1989]}},
            {"any": [{"is": {"genre": "Rock"}}, {"startsWith": {"title": "Track 1"}}]}
        ], "sort": "-year,-title", "limit": 25}));
        let hand = library.playlists().create(&alice, NewPlaylist { name: "By hand".into(), rules: Some(by_hand.clone()), ..Default::default() }).await.unwrap();
        let expected = ids_where(&library, "SELECT id FROM tracks WHERE year BETWEEN 1980 AND 1989
            AND (LOWER(genre) = 'rock' OR LOWER(title) LIKE 'track 1%')
            ORDER BY year DESC, LOWER(title) DESC, id LIMIT 25").await;
        assert!(expected.len() >= 5, "the library has matches: {}", expected.len());
        assert_eq!(hand.track_ids, expected);
        assert!(hand.rules.is_some());

        // The same rules imported from an .nsp file: equal contents, equal canonical rules.
        let nsp: serde_json::Value = serde_json::from_str(NSP).unwrap();
        let imported = library.playlists().create(&alice, NewPlaylist { name: "Imported".into(), rules: Some(rules(nsp)), ..Default::default() }).await.unwrap();
        assert_eq!(imported.track_ids, hand.track_ids);
        assert_eq!(imported.rules, hand.rules);

        // A preview counts without saving.
        let (count, sample) = library.playlists().preview_rules(&alice, &by_hand, 5).await.unwrap();
        assert_eq!((count, sample.as_slice()), (expected.len(), &expected[..5]));

        // Its tracks cannot be edited; its rules can.
        let refused = library.playlists().add_tracks(&alice, &hand.id, vec![expected[0].clone()], None, None).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Conflict);
        let refused = library.playlists().remove_tracks(&alice, &hand.id, vec![0], None).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Conflict);
        let changed = library.playlists().update(&alice, &hand.id, PlaylistChanges { rules: Some(rules(json!({"all": [{"is": {"year": 1975}}], "sort": "title"}))), ..Default::default() }).await.unwrap();
        let seventies = ids_where(&library, "SELECT id FROM tracks WHERE year = 1975 ORDER BY LOWER(title), id").await;
        assert_eq!(changed.track_ids, seventies);
        assert!(changed.version > hand.version);

        // Rules and track ids together are refused, and nothing is created.
        let both = library.playlists().create(&alice, NewPlaylist { name: "Both".into(), rules: Some(by_hand), track_ids: vec![expected[0].clone()], ..Default::default() }).await.unwrap_err();
        assert_eq!(both.field(), Some("track_ids"));
        assert_eq!(library.playlists().list(&alice, Default::default()).await.unwrap().total, 2);
    }
}

backend_test! {
    async fn rules_never_become_sql(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 50).await;
        let alice = user(&library, "alice").await;
        // Unknown fields and operators, and structure hidden in names, are refused by path.
        for (bad, field) in [
            (json!({"all": [{"is": {"comment": "x"}}]}), "rules.all[0].is.comment"),
            (json!({"all": [{"is": {"title) OR 1=1; DROP TABLE tracks; --": "x"}}]}), "rules.all[0].is.title) OR 1=1; DROP TABLE tracks; --"),
            (json!({"any": [{"inPlaylist": {"id": "x"}}]}), "rules.any[0].inPlaylist"),
            (json!({"all": [{"is": {"year": 1}}], "sort": "title; DROP TABLE tracks"}), "rules.sort.title; DROP TABLE tracks"),
        ] {
            let error = Rules::parse(&bad).unwrap_err();
            assert_eq!((error.kind(), error.field()), (ErrorKind::InvalidInput, Some(field)), "{bad}");
        }
        // Values are bound: quotes and wildcards match literally.
        for value in ["x' OR '1'='1", "%", "_", "Track%"] {
            for op in ["is", "contains", "startsWith"] {
                let (count, _) = library.playlists().preview_rules(&alice, &rules(json!({"all": [{op: {"title": value}}]})), 1).await.unwrap();
                assert_eq!(count, 0, "{op} {value}");
            }
        }
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tracks").fetch_one(musiclib_core::testing::pool(&library)).await.unwrap();
        assert_eq!(left, 50);
    }
}

backend_test! {
    async fn smart_playlists_follow_the_library_and_the_owners_listening(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 20).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let zebra = library.playlists().create(&alice, NewPlaylist { name: "Zebras".into(), public: true, rules: Some(rules(json!({"all": [{"contains": {"title": "zebra"}}]}))), ..Default::default() }).await.unwrap();
        assert!(zebra.track_ids.is_empty());
        let played = library.playlists().create(&alice, NewPlaylist { name: "Played".into(), rules: Some(rules(json!({"any": [{"gt": {"playcount": 0}}, {"is": {"loved": true}}], "sort": "-playcount,title"}))), ..Default::default() }).await.unwrap();
        assert!(played.track_ids.is_empty());
        let cursor = library.social().sync_cursor(&alice).await.unwrap();

        // A new matching upload appears without a refresh, for its owner and for readers.
        let wav = musiclib_core::testing::wav_tone(1);
        let upload = library.ingest().upload_track(&alice, Some("Zebra Crossing.wav"), wav.as_slice()).await.unwrap().track;
        assert_eq!(library.playlists().get(&alice, &zebra.id).await.unwrap().track_ids, vec![upload.id.clone()]);
        assert_eq!(library.playlists().get(&bob, &zebra.id).await.unwrap().track_ids, vec![upload.id.clone()]);

        // A play and a like of the owner's appear; another user's do not.
        let all = ids_where(&library, "SELECT id FROM tracks ORDER BY id").await;
        let now = Timestamp::now().as_micros();
        library.social().push_events(&bob, vec![], vec![NewPlay { track_id: all[1].to_string(), played_at: Timestamp::from_micros(now), seconds_played: Some(60.0), client_event_id: "b1".into() }]).await.unwrap();
        assert!(library.playlists().get(&alice, &played.id).await.unwrap().track_ids.is_empty());
        library.social().push_events(&alice, vec![], vec![
            NewPlay { track_id: all[3].to_string(), played_at: Timestamp::from_micros(now), seconds_played: Some(60.0), client_event_id: "a1".into() },
            NewPlay { track_id: all[3].to_string(), played_at: Timestamp::from_micros(now + 1), seconds_played: Some(60.0), client_event_id: "a2".into() },
            NewPlay { track_id: all[5].to_string(), played_at: Timestamp::from_micros(now), seconds_played: Some(60.0), client_event_id: "a3".into() },
        ]).await.unwrap();
        library.social().push_events(&alice, vec![NewLike { track_id: all[7].to_string(), liked: true, client_event_id: "l1".into(), event_time: Timestamp::from_micros(now) }], vec![]).await.unwrap();
        let now_played = library.playlists().get(&alice, &played.id).await.unwrap();
        assert_eq!(now_played.track_ids[0], all[3], "most played first");
        let mut got = now_played.track_ids.clone();
        got.sort();
        let mut want = vec![all[3].clone(), all[5].clone(), all[7].clone()];
        want.sort();
        assert_eq!(got, want);
        // Rules that hold only for played or liked tracks read those tracks first (the join
        // drives the query): the same answers as rules that read every track.
        library.social().push_events(&alice, vec![NewLike { track_id: all[3].to_string(), liked: true, client_event_id: "l0".into(), event_time: Timestamp::from_micros(now) }], vec![]).await.unwrap();
        for (driven, want) in [
            (json!({"all": [{"gt": {"playcount": 0}}]}), vec![&all[3], &all[5]]),
            (json!({"all": [{"is": {"playcount": 2}}]}), vec![&all[3]]),
            (json!({"all": [{"inTheRange": {"playcount": [1, 1]}}]}), vec![&all[5]]),
            (json!({"all": [{"inTheLast": {"lastplayed": 30}}]}), vec![&all[3], &all[5]]),
            (json!({"all": [{"is": {"loved": true}}]}), vec![&all[3], &all[7]]),
            (json!({"all": [{"isNot": {"loved": false}}]}), vec![&all[3], &all[7]]),
            (json!({"all": [{"gt": {"playcount": 0}}, {"is": {"loved": true}}]}), vec![&all[3]]),
            (json!({"all": [{"gt": {"playcount": 0}}, {"any": [{"is": {"loved": true}}, {"inTheLast": {"lastplayed": 30}}]}]}), vec![&all[3], &all[5]]),
            (json!({"any": [{"gt": {"playcount": 1}}, {"inTheLast": {"lastplayed": 1}}]}), vec![&all[3], &all[5]]),
            // Not only played or liked tracks: every track is read.
            (json!({"all": [{"lt": {"playcount": 1}}, {"contains": {"title": "zebra"}}]}), vec![&upload.id]),
            (json!({"all": [{"notInTheLast": {"lastplayed": 30}}, {"contains": {"title": "zebra"}}]}), vec![&upload.id]),
            (json!({"all": [{"is": {"loved": false}}, {"contains": {"title": "zebra"}}]}), vec![&upload.id]),
        ] {
            let playlist = library.playlists().create(&alice, NewPlaylist { name: "driven".into(), rules: Some(rules(driven.clone())), ..Default::default() }).await.unwrap();
            let mut got = playlist.track_ids.clone();
            got.sort();
            let mut want: Vec<_> = want.into_iter().cloned().collect();
            want.sort();
            assert_eq!(got, want, "{driven}");
        }
        library.social().push_events(&alice, vec![NewLike { track_id: all[3].to_string(), liked: false, client_event_id: "l0b".into(), event_time: Timestamp::from_micros(now + 5) }], vec![]).await.unwrap();

        // An unlike takes it out again.
        library.social().push_events(&alice, vec![NewLike { track_id: all[7].to_string(), liked: false, client_event_id: "l2".into(), event_time: Timestamp::from_micros(now + 10) }], vec![]).await.unwrap();
        assert_eq!(library.playlists().get(&alice, &played.id).await.unwrap().track_ids.len(), 2);

        // A sync client sees both smart playlists as changed, with their new tracks.
        let pulled = library.social().sync_changes(&alice, cursor, Some(500)).await.unwrap();
        let changed: Vec<_> = pulled.playlists.iter().map(|playlist| playlist.id.clone()).collect();
        assert!(changed.contains(&zebra.id) && changed.contains(&played.id), "{changed:?}");
        let synced = pulled.playlists.iter().find(|playlist| playlist.id == zebra.id).unwrap();
        assert_eq!(synced.track_ids, vec![upload.id.clone()]);
    }
}
