//! The recommendation methods against a library whose answers are known: the corpus tracks
//! re-tagged as two rock and two jazz artists, with a listening history linking Rock One and
//! Jazz One (the core tests' library, `musiclib-core/tests/it/recommend.rs`, in small).

use std::collections::HashSet;

use musiclib_core::catalog::TrackMetadata;
use musiclib_core::social::NewPlay;
use musiclib_core::testing::Backend;
use musiclib_core::{Timestamp, TrackId};
use serde_json::Value;

use crate::both_backends;
use crate::harness::Fixture;

/// (artist, genre) of the fixture's tracks, in upload order.
const TAGS: [(&str, &str); 6] = [
    ("Rock One", "Rock"),
    ("Rock One", "rock"),
    ("Rock Two", "ROCK"),
    ("Jazz One", "Jazz"),
    ("Jazz Two", "Jazz"),
    ("Jazz Two", "jazz"),
];

/// The fixture re-tagged (see [`TAGS`]); Ann played track 0 then track 3 on four days.
async fn known_library(app: &Fixture) {
    let library = &app.library;
    for (index, (artist, genre)) in TAGS.into_iter().enumerate() {
        let id = TrackId::parse(&app.track_ids[index]).unwrap();
        library
            .catalog()
            .set_track_metadata(
                &app.caller,
                &id,
                &TrackMetadata {
                    title: format!("song {index}"),
                    artist: Some(artist.into()),
                    album: Some(format!("{artist} Album")),
                    genre: Some(genre.into()),
                    year: Some(2000),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    for day in 0..4i64 {
        let start = Timestamp::now().as_micros() - (day + 1) * 86_400_000_000;
        for (offset, index) in [(0, 0), (300_000_000, 3)] {
            library
                .social()
                .record_play(
                    &app.caller,
                    NewPlay {
                        track_id: app.track_ids[index].clone(),
                        played_at: Timestamp::from_micros(start + offset),
                        seconds_played: Some(180.0),
                        client_event_id: format!("play-{day}-{index}"),
                    },
                )
                .await
                .unwrap();
        }
    }
    library.recommend().compute_similarity().await.unwrap();
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_string())
        .collect()
}

fn ids(list: &Value) -> HashSet<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_string())
        .collect()
}

both_backends!(
    known_similar_artists_and_songs,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        known_library(&app).await;
        let song = &app.track_ids[0];
        let track = app.json("getSong", &format!("id={song}")).await["song"].clone();
        assert_eq!(track["artist"], "Rock One", "{track}");
        let rock_one = track["artistId"].as_str().unwrap().to_string();

        // Similar artists of Rock One: Jazz One (played together: 0.9 × 4/6 = 0.6) before Rock
        // Two (the same genre, spelled otherwise: 0.5); nothing links Jazz Two.
        app.xml("getArtistInfo2", &format!("id={rock_one}")).await;
        let info = app.json("getArtistInfo2", &format!("id={rock_one}")).await;
        assert_eq!(
            names(&info["artistInfo2"]["similarArtist"]),
            ["Jazz One", "Rock Two"],
            "{info}"
        );
        let info = app
            .json("getArtistInfo", &format!("id={rock_one}&count=1"))
            .await;
        assert_eq!(
            names(&info["artistInfo"]["similarArtist"]),
            ["Jazz One"],
            "{info}"
        );

        // Similar songs of track 0: its artist's other track, Rock Two's (genre, similar
        // artist) and Jazz One's (played together, similar artist); never itself or Jazz Two's.
        app.xml("getSimilarSongs2", &format!("id={song}&count=10"))
            .await;
        let similar = app
            .json("getSimilarSongs2", &format!("id={song}&count=10"))
            .await;
        let expected: HashSet<String> = [1, 2, 3]
            .into_iter()
            .map(|index| app.track_ids[index].clone())
            .collect();
        assert_eq!(
            ids(&similar["similarSongs2"]["song"]),
            expected,
            "{similar}"
        );
        // For the artist: the tracks of its similar artists, never its own.
        let similar = app
            .json("getSimilarSongs", &format!("id={rock_one}&count=10"))
            .await;
        let expected: HashSet<String> = [2, 3]
            .into_iter()
            .map(|index| app.track_ids[index].clone())
            .collect();
        assert_eq!(ids(&similar["similarSongs"]["song"]), expected, "{similar}");

        // Top songs of Rock One: the played one first.
        let top = app
            .json("getTopSongs", &format!("artist={}", "Rock%20One"))
            .await;
        let top: Vec<&str> = top["topSongs"]["song"]
            .as_array()
            .unwrap()
            .iter()
            .map(|song| song["id"].as_str().unwrap())
            .collect();
        assert_eq!(top, [app.track_ids[0].as_str(), app.track_ids[1].as_str()]);
    }
);

/// The names of the advertised extensions.
async fn extension_names(app: &Fixture) -> Vec<String> {
    let extensions = app.json_as("", "getOpenSubsonicExtensions", "").await;
    names(&extensions["openSubsonicExtensions"])
}

both_backends!(
    sonic_similarity_is_advertised_with_sound_analysis,
    |backend: Backend| async move {
        let on = Fixture::new(backend).await;
        assert!(extension_names(&on)
            .await
            .contains(&"sonicSimilarity".to_string()));
        let off =
            Fixture::with_config(backend, |config| config.recommend.sound_analysis = false).await;
        let names = extension_names(&off).await;
        assert!(!names.contains(&"sonicSimilarity".to_string()), "{names:?}");
        assert!(
            names.contains(&"topSongsByArtistId".to_string()),
            "{names:?}"
        );
    }
);
