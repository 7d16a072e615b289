//! Recommendations on a library built so the right answers are known: two genres (rock and
//! jazz, spelled several ways), artists whose play histories connect them across genres,
//! and tracks whose audio is near-identical.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::seq::IndexedRandom;
use rand::RngExt;

use musiclib_core::admin::ServiceState;
use musiclib_core::auth::Caller;
use musiclib_core::catalog::TrackMetadata;
use musiclib_core::playlists::NewPlaylist;
use musiclib_core::recommend::{
    ArtistReason, ExternalPlugin, ExternalRecommender, ExternalRequest, ExternalStatus,
    ExternalSuggestion, RadioRequest, Reason,
};
use musiclib_core::social::{NewLike, NewPlay};
use musiclib_core::Timestamp;
use musiclib_core::{ErrorKind, Library, TrackId};

use crate::backend_test;
use crate::support::*;

/// A 16-bit mono WAV at 22,050 Hz: `seconds` of a tone at `hz` pulsing `beats` times a
/// second, with a little of a second tone at `overtone` Hz; `seed` changes the last sample
/// only (distinct bytes, the same sound).
fn wav(hz: f64, overtone: f64, beats: f64, seconds: u32, seed: u16) -> Vec<u8> {
    let rate = 22_050u32;
    let samples = rate * seconds;
    musiclib_core::testing::wav_mono(
        rate,
        (0..samples).map(|index| {
            if index == samples - 1 {
                return seed as i16;
            }
            let t = f64::from(index) / f64::from(rate);
            let envelope = 0.55 + 0.45 * (std::f64::consts::TAU * beats * t).sin().abs();
            let value = envelope
                * (0.8 * (std::f64::consts::TAU * hz * t).sin()
                    + 0.2 * (std::f64::consts::TAU * overtone * t).sin());
            (value * 14_000.0) as i16
        }),
    )
}

struct Fixture {
    library: TestLibrary,
    ann: Caller,
    /// Track ids by a short name (`r1a`: rock artist 1, track a).
    tracks: HashMap<&'static str, TrackId>,
}

/// (name, artist, genre, year, hz, overtone, beats)
const TRACKS: [(&str, &str, &str, i64, f64, f64, f64); 15] = [
    ("r1a", "Rock One", "Rock", 1991, 220.0, 660.0, 2.0),
    ("r1b", "Rock One", "rock", 1992, 247.0, 740.0, 2.1),
    ("r1c", "Rock One", "Rock", 1993, 262.0, 786.0, 2.2),
    ("r2a", "Rock Two", "ROCK", 1990, 294.0, 880.0, 2.3),
    ("r2b", "Rock Two", "Rock", 2015, 330.0, 990.0, 2.4),
    ("r2c", "Rock Two", "Rock", 1994, 349.0, 1047.0, 2.5),
    ("r3a", "Rock Three", "Rock", 1995, 392.0, 1176.0, 2.6),
    ("r3b", "Rock Three", "Rock", 1996, 440.0, 1320.0, 2.7),
    ("j1a", "Jazz One", "Jazz", 1960, 523.0, 1569.0, 0.5),
    ("j1b", "Jazz One", "jazz", 1961, 587.0, 1761.0, 0.6),
    ("j1c", "Jazz One", "Jazz", 1962, 659.0, 1977.0, 0.7),
    ("j2a", "Jazz Two", "Jazz", 1963, 698.0, 2094.0, 0.8),
    ("j2b", "Jazz Two", "Jazz", 1964, 784.0, 2352.0, 0.9),
    // The same sound as r1a, by another artist in another genre.
    ("twin", "Jazz Two", "Jazz", 1965, 220.0, 660.0, 2.0),
    ("j2c", "Jazz Two", "Jazz", 1966, 880.0, 2640.0, 1.0),
];

/// Uploads a track of the fixture's sound family with these tags.
async fn upload(
    library: &Library,
    caller: &Caller,
    name: &str,
    metadata: TrackMetadata,
    tone: u16,
) -> TrackId {
    let bytes = wav(300.0 + f64::from(tone), 900.0, 1.5, 6, tone);
    let track = library
        .ingest()
        .upload_track(caller, Some(&format!("{name}.wav")), bytes.as_slice())
        .await
        .unwrap()
        .track;
    library
        .catalog()
        .set_track_metadata(caller, &track.id, &metadata)
        .await
        .unwrap();
    track.id
}

async fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, |_| {}).await
}

async fn fixture_with(
    backend: Backend,
    change: impl FnOnce(&mut musiclib_core::Config) + Send + 'static,
) -> Fixture {
    let library = TestLibrary::builder(backend).config(change).build().await;
    let ann = user(&library, "ann").await;
    let mut tracks = HashMap::new();
    for (index, (name, artist, genre, year, hz, overtone, beats)) in TRACKS.into_iter().enumerate()
    {
        let bytes = wav(hz, overtone, beats, 6, index as u16 + 1);
        let track = library
            .ingest()
            .upload_track(&ann, Some(&format!("{name}.wav")), bytes.as_slice())
            .await
            .unwrap()
            .track;
        library
            .catalog()
            .set_track_metadata(
                &ann,
                &track.id,
                &TrackMetadata {
                    title: name.to_string(),
                    artist: Some(artist.to_string()),
                    album: Some(format!("{artist} Album")),
                    genre: Some(genre.to_string()),
                    year: Some(year),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        tracks.insert(name, track.id);
    }
    musiclib_core::testing::drain_jobs(&library).await;
    Fixture {
        library,
        ann,
        tracks,
    }
}

impl Fixture {
    fn id(&self, name: &str) -> TrackId {
        self.tracks[name].clone()
    }

    fn name(&self, id: &str) -> &'static str {
        self.tracks
            .iter()
            .find(|(_, track)| track.as_str() == id)
            .map(|(name, _)| *name)
            .unwrap_or("?")
    }

    /// Ann plays `a` then `b` five minutes later, `times` times on different days.
    async fn play_together(&self, a: &str, b: &str, times: i64) {
        for day in 0..times {
            let start = Timestamp::now().as_micros() - (day + 1) * 86_400_000_000;
            for (offset, name) in [(0, a), (300_000_000, b)] {
                self.library
                    .social()
                    .record_play(
                        &self.ann,
                        NewPlay {
                            track_id: self.id(name).to_string(),
                            played_at: Timestamp::from_micros(start + offset),
                            seconds_played: Some(180.0),
                            client_event_id: format!("play-{a}-{b}-{day}-{name}"),
                        },
                    )
                    .await
                    .unwrap();
            }
        }
    }

    async fn like(&self, caller: &Caller, name: &str) {
        self.library
            .social()
            .record_like(
                caller,
                NewLike {
                    track_id: self.id(name).to_string(),
                    liked: true,
                    client_event_id: format!("like-{name}"),
                    event_time: Timestamp::now(),
                },
            )
            .await
            .unwrap();
    }
}

/// Every track of the library.
async fn all_tracks(library: &Library) -> Vec<musiclib_core::domain::Track> {
    let mut tracks = Vec::new();
    loop {
        let page = library
            .catalog()
            .list_tracks(
                &musiclib_core::catalog::TrackFilter::default(),
                None,
                musiclib_core::domain::Page::clamped(200, tracks.len() as i64, 200),
            )
            .await
            .unwrap();
        let done = page.items.len() < 200;
        tracks.extend(page.items);
        if done {
            return tracks;
        }
    }
}

fn request(seed: Option<&TrackId>, exclude: &[String], count: usize) -> RadioRequest {
    RadioRequest {
        seed_track_id: seed.map(|id| id.to_string()),
        exclude_ids: exclude.to_vec(),
        count: Some(count),
    }
}

backend_test! {
    async fn radio_follows_artist_genre_and_listening(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        // Rock One and Jazz One are played together.
        f.play_together("r1a", "j1a", 4).await;
        f.play_together("r1b", "j1b", 2).await;
        let report = library.recommend().compute_similarity().await.unwrap();
        assert!(report.pairs > 0);

        // Similar artists: Jazz One by listening, Rock Two and Three by genre.
        let rock_one = library.catalog().get_track(&f.id("r1a")).await.unwrap().artist_id.unwrap();
        let similar = library.recommend().similar_artists(&rock_one, 10).await.unwrap();
        let names: Vec<&str> = similar.iter().map(|s| s.artist.name.as_str()).collect();
        assert_eq!(names[0], "Jazz One", "{names:?}");
        assert_eq!(similar[0].reasons, [ArtistReason::ListenedTogether]);
        assert!(names.contains(&"Rock Two") && names.contains(&"Rock Three"), "{names:?}");
        let rock_two = similar.iter().find(|s| s.artist.name == "Rock Two").unwrap();
        assert_eq!(rock_two.reasons, [ArtistReason::SharedGenre]);
        assert!(!names.contains(&"Jazz Two"), "no signal links Rock One and Jazz Two: {names:?}");

        // Similar tracks of r1a: its artist, its genre (any spelling), what was played with it.
        let items = library.recommend().similar_tracks_of(&f.ann, &f.id("r1a"), 20).await.unwrap();
        let reasons: HashMap<&str, Vec<Reason>> = items
            .iter()
            .map(|item| (f.name(item.track.id.as_str()), item.reasons.clone()))
            .collect();
        assert!(!reasons.contains_key("r1a"));
        assert!(reasons["r1b"].contains(&Reason::SameArtist), "{reasons:?}");
        assert!(reasons["r2a"].contains(&Reason::SameGenre), "ROCK is rock: {reasons:?}");
        assert!(reasons["r2a"].contains(&Reason::SameEra), "{reasons:?}");
        assert!(!reasons["r2b"].contains(&Reason::SameEra), "2015 is not 1991's era: {reasons:?}");
        assert!(reasons["j1a"].contains(&Reason::ListenedTogether), "{reasons:?}");
        assert!(reasons["j1b"].contains(&Reason::SimilarArtist), "{reasons:?}");
        // Ranked: scores never rise.
        assert!(items.windows(2).all(|pair| pair[0].score >= pair[1].score));

        // The radio from r1a: a full batch under every rule.
        let batch = library.recommend().radio(&f.ann, &request(Some(&f.id("r1a")), &[], 10)).await.unwrap();
        assert_eq!(batch.len(), 10);
        let ids: HashSet<String> = batch.iter().map(|item| item.track.id.to_string()).collect();
        assert_eq!(ids.len(), 10, "no track twice");
        assert!(!ids.contains(f.id("r1a").as_str()), "never the seed");
        assert!(batch.iter().all(|item| !item.reasons.is_empty()));
        let mut per_artist: HashMap<String, usize> = HashMap::new();
        for item in &batch {
            *per_artist.entry(item.track.artist_name.clone().unwrap()).or_default() += 1;
        }
        // Five artists in the library: at most 1 per 10 each would leave the batch short, so
        // the cap (1 in 10) gives way only after every artist has had its turn.
        assert!(per_artist.len() >= 5, "{per_artist:?}");

        // Next batches exclude what came before, until the library is used up, never
        // answering an excluded id; the last answers hold what is left.
        let mut seen: Vec<String> = ids.into_iter().collect();
        loop {
            let next = library
                .recommend()
                .radio(&f.ann, &request(Some(&f.id("r1a")), &seen, 4))
                .await
                .unwrap();
            for item in &next {
                assert!(!seen.contains(&item.track.id.to_string()), "an excluded id came back");
            }
            let left = TRACKS.len() - 1 - seen.len();
            assert_eq!(next.len(), left.min(4), "the feed ran dry with {left} tracks left");
            if next.is_empty() {
                break;
            }
            seen.extend(next.iter().map(|item| item.track.id.to_string()));
        }

        // Bad requests.
        for bad in [0, 101] {
            let error = library.recommend().radio(&f.ann, &request(None, &[], bad)).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput);
        }
        let many: Vec<String> = (0..5001).map(|n| format!("x{n}")).collect();
        let error = library.recommend().radio(&f.ann, &request(None, &many, 10)).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        let unknown = TrackId::new();
        let error = library.recommend().radio(&f.ann, &request(Some(&unknown), &[], 10)).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
    }
}

backend_test! {
    async fn a_feed_without_a_seed_starts_from_likes_and_skips_placeholders(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        let bob = user(library, "bob").await;
        f.like(&bob, "j2a").await;
        // A placeholder (no audio) is never recommended.
        musiclib_core::testing::make_placeholder(library, &f.id("j2b")).await;

        let batch = library.recommend().radio(&bob, &request(None, &[], 14)).await.unwrap();
        let names: Vec<&str> = batch.iter().map(|item| f.name(item.track.id.as_str())).collect();
        assert!(!names.contains(&"j2b"), "a placeholder: {names:?}");
        assert_eq!(batch.len(), TRACKS.len() - 1, "every playable track: {names:?}");
        let liked = batch.iter().find(|item| f.name(item.track.id.as_str()) == "j2a").unwrap();
        assert!(liked.reasons.contains(&Reason::Liked), "{:?}", liked.reasons);
        // Jazz Two's other playable tracks come by artist, from the like.
        let twin = batch.iter().find(|item| f.name(item.track.id.as_str()) == "j2c").unwrap();
        assert!(twin.reasons.contains(&Reason::SameArtist), "{:?}", twin.reasons);

        // Without likes or seed: exploration and filler only, still a full batch.
        let carol = user(library, "carol").await;
        let batch = library.recommend().radio(&carol, &request(None, &[], 10)).await.unwrap();
        assert_eq!(batch.len(), 10);
        assert!(batch.iter().all(|item| item.reasons == [Reason::Exploration] || item.reasons == [Reason::Filler]));
        assert_eq!(batch.iter().filter(|item| item.reasons == [Reason::Exploration]).count(), 2);
    }
}

backend_test! {
    async fn the_sound_finds_the_near_identical_track(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        let before = library.recommend().sound_status().await.unwrap();
        assert_eq!(before.pending, TRACKS.len() as i64);
        let report = library.recommend().analyze_pending(library.storage(), 100).await.unwrap();
        assert_eq!((report.analyzed, report.failed), (TRACKS.len(), 0), "{report:?}");
        let after = library.recommend().sound_status().await.unwrap();
        assert_eq!((after.analyzed, after.pending), (TRACKS.len() as i64, 0));

        // r1a's nearest sound is its twin (another artist, another genre).
        let near = library.recommend().sonic_similar(&f.id("r1a"), 5).await.unwrap();
        assert_eq!(f.name(near[0].track.id.as_str()), "twin", "{:?}", near.iter().map(|m| (f.name(m.track.id.as_str()), m.similarity)).collect::<Vec<_>>());
        assert!(near[0].similarity > 0.9 && near[0].similarity > near[1].similarity);
        assert!(near.iter().all(|m| m.track.id != f.id("r1a")));

        // It comes as sounds_like among r1a's similar tracks.
        let items = library.recommend().similar_tracks_of(&f.ann, &f.id("r1a"), 20).await.unwrap();
        let twin = items.iter().find(|item| f.name(item.track.id.as_str()) == "twin").unwrap();
        assert!(twin.reasons.contains(&Reason::SoundsLike), "{:?}", twin.reasons);

        // A path from r1a to j2c: both ends, distinct tracks between.
        let path = library.recommend().sonic_path(&f.id("r1a"), &f.id("j2c"), 5).await.unwrap();
        assert_eq!(path.len(), 5);
        assert_eq!(path[0].track.id, f.id("r1a"));
        assert_eq!(path[4].track.id, f.id("j2c"));
        let distinct: HashSet<_> = path.iter().map(|m| m.track.id.clone()).collect();
        assert_eq!(distinct.len(), 5);
    }
}

/// Suggests the track in `suggested`; never answers when `slow`.
struct LateSuggestion {
    suggested: Arc<std::sync::Mutex<Option<String>>>,
    slow: Arc<std::sync::atomic::AtomicBool>,
    calls: Arc<AtomicUsize>,
    /// Calls answered (a slow one never is).
    answered: Arc<AtomicUsize>,
}

impl LateSuggestion {
    fn new(slow: bool) -> LateSuggestion {
        LateSuggestion {
            suggested: Arc::default(),
            slow: Arc::new(std::sync::atomic::AtomicBool::new(slow)),
            calls: Arc::default(),
            answered: Arc::default(),
        }
    }

    fn handles(&self) -> LateSuggestion {
        LateSuggestion {
            suggested: self.suggested.clone(),
            slow: self.slow.clone(),
            calls: self.calls.clone(),
            answered: self.answered.clone(),
        }
    }
}

#[async_trait::async_trait]
impl ExternalRecommender for LateSuggestion {
    async fn suggest(&self, _request: &ExternalRequest) -> Result<Vec<ExternalSuggestion>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.slow.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
        let suggested = self.suggested.lock().unwrap().clone();
        Ok(suggested
            .map(|track| ExternalSuggestion {
                track_id: Some(track),
                score: Some(1.0),
                ..Default::default()
            })
            .into_iter()
            .collect())
    }
}

backend_test! {
    async fn an_external_recommender_is_mixed_in_and_left_out_when_slow(backend: Backend) {
        let plugin = LateSuggestion::new(false);
        let late = plugin.handles();
        let f = fixture_with(backend, move |config| {
            config.recommend.external = Some(ExternalPlugin(Arc::new(plugin)));
            // All the time in the world: an answer that waited for it would never come.
            config.recommend.external_timeout = Duration::from_secs(3600);
            // An answer at once is in, however loaded the machine (not the 20 ms default).
            config.recommend.external_grace = Duration::from_secs(10);
        })
        .await;

        // Answers at once: its suggestion is in the batch with the reason `external`.
        *late.suggested.lock().unwrap() = Some(f.id("j2c").to_string());
        let batch = f.library.recommend().radio(&f.ann, &request(Some(&f.id("r1a")), &[], 10)).await.unwrap();
        let item = batch.iter().find(|item| item.track.id == f.id("j2c"));
        assert!(item.is_some_and(|item| item.reasons.contains(&Reason::External)), "{batch:?}");
        assert_eq!(late.calls.load(Ordering::SeqCst), 1);

        assert_eq!(f.library.recommend().external_status(), ExternalStatus::Configured);

        // Slow (it never answers, and may take an hour): the batch comes without it, as soon
        // as the heuristics are done, while the recommender has still not answered. (The
        // deadline only guards against a hang: a radio that waited would wait the hour.)
        late.slow.store(true, Ordering::SeqCst);
        let asked = request(Some(&f.id("r1a")), &[], 10);
        let radio = f.library.recommend().radio(&f.ann, &asked);
        let batch = tokio::time::timeout(Duration::from_secs(60), radio)
            .await
            .expect("the radio waited for a slow recommender")
            .unwrap();
        assert_eq!(batch.len(), 10);
        assert!(batch.iter().all(|item| !item.reasons.contains(&Reason::External)));
        assert_eq!(late.calls.load(Ordering::SeqCst), 2, "it was asked");
        assert_eq!(late.answered.load(Ordering::SeqCst), 1, "it has not answered");
        // Its call has its hour: it is not left out yet.
        assert_eq!(f.library.recommend().external_status(), ExternalStatus::Configured);

        // With a timeout of 1 s, once the call times out it is paused: the next request does
        // not ask it again, and the service report shows it paused, with why.
        let plugin = LateSuggestion::new(true);
        let late = plugin.handles();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.recommend.external = Some(ExternalPlugin(Arc::new(plugin)));
                config.recommend.external_timeout = Duration::from_secs(1);
            })
            .build()
            .await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 30).await;
        let listener = user(&library, "listener").await;
        let seed = library
            .catalog()
            .list_tracks(&Default::default(), None, musiclib_core::domain::Page::new(Some(1), None).unwrap())
            .await
            .unwrap()
            .items
            .remove(0)
            .id;
        let batch = library.recommend().radio(&listener, &request(Some(&seed), &[], 10)).await.unwrap();
        assert_eq!(batch.len(), 10);
        assert!(batch.iter().all(|item| !item.reasons.contains(&Reason::External)));
        let paused = async {
            while !matches!(library.recommend().external_status(), ExternalStatus::Paused { .. }) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), paused).await.expect("paused after its timeout");
        let batch = library.recommend().radio(&listener, &request(Some(&seed), &[], 10)).await.unwrap();
        assert_eq!(batch.len(), 10);
        assert_eq!(late.calls.load(Ordering::SeqCst), 1, "paused after the timeout");
        assert_eq!(late.answered.load(Ordering::SeqCst), 0);

        let admin = Caller {
            user: library.accounts().create_user("root", "admin-password", true).await.unwrap(),
        };
        let services = library.admin().services(&admin).await.unwrap();
        let recommender = services.iter().find(|service| service.name == "recommender").unwrap();
        assert_eq!(recommender.state, ServiceState::Unavailable, "{recommender:?}");
        assert!(recommender.detail.contains("no answer within 1000 ms"), "{recommender:?}");
    }
}

backend_test! {
    async fn same_artist_includes_the_album_artist(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        // A guest on Rock One's album (album artist Rock One), in another genre and era.
        let guest = upload(
            library,
            &f.ann,
            "guest",
            TrackMetadata {
                title: "guest".into(),
                artist: Some("Guest Star".into()),
                album: Some("Rock One Album".into()),
                album_artist: Some("Rock One".into()),
                genre: Some("Polka".into()),
                year: Some(2020),
                ..Default::default()
            },
            90,
        )
        .await;
        let reasons_of = |items: &[musiclib_core::recommend::RadioItem], id: &TrackId| {
            items
                .iter()
                .find(|item| &item.track.id == id)
                .map(|item| item.reasons.clone())
                .unwrap_or_default()
        };
        // From Rock One's track: the guest is on its artist's album.
        let items = library.recommend().similar_tracks_of(&f.ann, &f.id("r1a"), 30).await.unwrap();
        assert_eq!(reasons_of(&items, &guest), [Reason::SameArtist], "{items:?}");
        // From the guest's track: Rock One's tracks are by its album's artist.
        let items = library.recommend().similar_tracks_of(&f.ann, &guest, 30).await.unwrap();
        for name in ["r1a", "r1b", "r1c"] {
            assert!(reasons_of(&items, &f.id(name)).contains(&Reason::SameArtist), "{name}: {items:?}");
        }
        assert!(!reasons_of(&items, &f.id("r2a")).contains(&Reason::SameArtist));
        // And once each, not twice (by artist and by album).
        let ids: Vec<&TrackId> = items.iter().map(|item| &item.track.id).collect();
        assert_eq!(ids.len(), ids.iter().collect::<HashSet<_>>().len());
    }
}

backend_test! {
    async fn artists_are_similar_by_likes_and_playlists(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        let bob = user(library, "bob").await;
        // Ann and Bob like tracks of Rock Three and Jazz Two (nothing else links them).
        f.like(&f.ann, "r3a").await;
        f.like(&f.ann, "j2a").await;
        for name in ["r3b", "j2b"] {
            library
                .social()
                .record_like(
                    &bob,
                    NewLike {
                        track_id: f.id(name).to_string(),
                        liked: true,
                        client_event_id: format!("bob-like-{name}"),
                        event_time: Timestamp::now(),
                    },
                )
                .await
                .unwrap();
        }
        // One playlist holds Rock Two and Jazz One.
        library
            .playlists()
            .create(
                &f.ann,
                NewPlaylist {
                    name: "mix".into(),
                    track_ids: vec![f.id("r2a"), f.id("j1c")],
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        library.recommend().compute_similarity().await.unwrap();
        let artist_of = |name: &str| {
            let id = f.id(name);
            async move { library.catalog().get_track(&id).await.unwrap().artist_id.unwrap() }
        };

        // Two people like both: 2 / (2 + 1) at weight 0.7.
        let similar = library.recommend().similar_artists(&artist_of("r3a").await, 10).await.unwrap();
        let jazz_two = similar.iter().find(|s| s.artist.name == "Jazz Two").unwrap_or_else(|| panic!("{similar:?}"));
        assert_eq!(jazz_two.reasons, [ArtistReason::LikedTogether]);
        assert!((jazz_two.score - 0.7 * 2.0 / 3.0).abs() < 1e-3, "{jazz_two:?}");
        assert!(!similar.iter().any(|s| s.artist.name == "Jazz One"), "{similar:?}");

        // One shared playlist: 1 / (1 + 1) at weight 0.6.
        let similar = library.recommend().similar_artists(&artist_of("r2a").await, 10).await.unwrap();
        let jazz_one = similar.iter().find(|s| s.artist.name == "Jazz One").unwrap_or_else(|| panic!("{similar:?}"));
        assert_eq!(jazz_one.reasons, [ArtistReason::SamePlaylist]);
        assert!((jazz_one.score - 0.3).abs() < 1e-3, "{jazz_one:?}");
        assert!(!similar.iter().any(|s| s.artist.name == "Jazz Two"), "{similar:?}");

        // The radio from Rock Three's track plays Jazz Two's as a similar artist's.
        let items = library.recommend().similar_tracks_of(&f.ann, &f.id("r3a"), 30).await.unwrap();
        let j2c = items.iter().find(|item| item.track.id == f.id("j2c")).unwrap_or_else(|| panic!("{items:?}"));
        assert!(j2c.reasons.contains(&Reason::SimilarArtist), "{:?}", j2c.reasons);
    }
}

backend_test! {
    async fn the_sound_index_is_rebuilt_in_the_background_at_most_every_few_seconds(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        let recommend = library.recommend();
        // No features yet: no request builds an index.
        assert!(recommend.sonic_similar(&f.id("r1a"), 3).await.unwrap().is_empty());
        recommend.similar_tracks_of(&f.ann, &f.id("r1a"), 5).await.unwrap();
        assert_eq!(recommend.sound_index_builds(), 0);

        // Five tracks analysed (the first uploaded): the first request builds the index.
        let report = recommend.analyze_pending(library.storage(), 5).await.unwrap();
        assert_eq!(report.analyzed, 5);
        assert!(!recommend.sonic_similar(&f.id("r1a"), 3).await.unwrap().is_empty());
        assert_eq!(recommend.sound_index_builds(), 1);

        // One more analysed: a request about it does not rebuild the index itself (it gets
        // no neighbours until the background rebuild, which waits the rebuild interval: an
        // hour here, so no clock decides what the test sees).
        recommend.set_sound_rebuild_interval(Duration::from_secs(3600));
        recommend.analyze_pending(library.storage(), 1).await.unwrap();
        let fresh = recommend.sonic_similar(&f.id("r2c"), 3).await.unwrap();
        let builds = recommend.sound_index_builds();
        assert!(
            fresh.is_empty() && builds == 1,
            "rebuilt on the request path: {builds} builds, {} neighbours",
            fresh.len()
        );

        // Requests while the analysis runs: the old index answers, and rebuilds stay few.
        let analysis = {
            let library = library.clone();
            tokio::spawn(async move {
                library.recommend().analyze_pending(library.storage(), 100).await.unwrap()
            })
        };
        let mut requests = 0;
        while !analysis.is_finished() {
            let near = recommend.radio(&f.ann, &request(Some(&f.id("r1a")), &[], 5)).await.unwrap();
            assert_eq!(near.len(), 5);
            requests += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(analysis.await.unwrap().analyzed, TRACKS.len() - 6);
        let builds = recommend.sound_index_builds();
        assert_eq!(builds, 1, "rebuilt within the interval ({requests} requests)");

        // The interval passes (here: it is cut to nothing): the background rebuild catches
        // up, and every analysed track gets neighbours. (The deadline only guards against a
        // hang.)
        recommend.set_sound_rebuild_interval(Duration::ZERO);
        let caught_up = async {
            loop {
                if !recommend.sonic_similar(&f.id("j2c"), 3).await.unwrap().is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), caught_up).await.expect("the index caught up");
        assert_eq!(recommend.sound_index_builds(), 2, "one rebuild caught up with everything");
        let near = recommend.sonic_similar(&f.id("r1a"), 1).await.unwrap();
        assert_eq!(f.name(near[0].track.id.as_str()), "twin");
    }
}

backend_test! {
    async fn sonic_answers_hold_only_playable_tracks(backend: Backend) {
        let f = fixture(backend).await;
        let library: &Library = &f.library;
        library.recommend().analyze_pending(library.storage(), 100).await.unwrap();
        // The twin (r1a's nearest sound) loses its audio after analysis.
        musiclib_core::testing::make_placeholder(library, &f.id("twin")).await;
        let near = library.recommend().sonic_similar(&f.id("r1a"), 5).await.unwrap();
        assert_eq!(near.len(), 5, "the tree is asked for more to fill the count");
        assert!(near.iter().all(|m| m.track.id != f.id("twin") && m.track.id != f.id("r1a")));
        let items = library.recommend().similar_tracks_of(&f.ann, &f.id("r1a"), 30).await.unwrap();
        assert!(items.iter().all(|item| item.track.id != f.id("twin")));

        // A path never steps on it, and its similarities are to the starting song: 1 at the
        // start, the end's as sonic_similar would say, and never the end hard-coded to 1.
        let path = library.recommend().sonic_path(&f.id("r1a"), &f.id("j2c"), 8).await.unwrap();
        assert_eq!(path.len(), 8);
        assert!(path.iter().all(|m| m.track.id != f.id("twin")));
        assert_eq!(path[0].track.id, f.id("r1a"));
        assert_eq!(path[0].similarity, 1.0);
        let end = path.last().unwrap();
        assert_eq!(end.track.id, f.id("j2c"));
        assert!(end.similarity < 1.0, "{end:?}");
        let all = library.recommend().sonic_similar(&f.id("r1a"), 20).await.unwrap();
        let direct = all.iter().find(|m| m.track.id == f.id("j2c")).unwrap();
        assert!((end.similarity - direct.similarity).abs() < 1e-3, "{} vs {}", end.similarity, direct.similarity);
    }
}

backend_test! {
    async fn only_playable_tracks_over_random_feeds(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 400).await;
        let ann = user(&library, "ann").await;
        let ids: Vec<TrackId> = all_tracks(&library).await.into_iter().map(|track| track.id).collect();
        assert_eq!(ids.len(), 400);
        let mut rng = rand::rng();
        let seed: u64 = rng.random();
        // A random third of the library without audio.
        let mut unplayable: HashSet<TrackId> = HashSet::new();
        for id in &ids {
            if rng.random_range(0..3) == 0 {
                musiclib_core::testing::make_placeholder(&library, id).await;
                unplayable.insert(id.clone());
            }
        }
        for _ in 0..25 {
            let seed_track = ids.choose(&mut rng).unwrap();
            let exclude: Vec<String> = (0..rng.random_range(0..150))
                .map(|_| ids.choose(&mut rng).unwrap().to_string())
                .collect();
            let count = rng.random_range(1..=50);
            let with_seed = rng.random_bool(0.8);
            let asked = request(with_seed.then_some(seed_track), &exclude, count);
            let batch = library.recommend().radio(&ann, &asked).await.unwrap();
            let mut seen = HashSet::new();
            for item in &batch {
                assert!(!unplayable.contains(&item.track.id), "unplayable {} (run {seed})", item.track.id);
                assert!(!exclude.contains(&item.track.id.to_string()), "excluded (run {seed})");
                assert!(!with_seed || &item.track.id != seed_track, "the seed (run {seed})");
                assert!(seen.insert(item.track.id.clone()), "twice (run {seed})");
            }
            let playable_left = ids
                .iter()
                .filter(|id| !unplayable.contains(*id) && !exclude.contains(&id.to_string()))
                .filter(|id| !with_seed || *id != seed_track)
                .count();
            assert_eq!(batch.len(), count.min(playable_left), "ran dry (run {seed})");
            let similar = library.recommend().similar_tracks_of(&ann, seed_track, 30).await.unwrap();
            assert!(similar.iter().all(|item| !unplayable.contains(&item.track.id)), "run {seed}");
        }
    }
}

backend_test! {
    async fn the_artist_cap_holds_in_a_library_dominated_by_one_artist(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 1000).await;
        let ann = user(&library, "ann").await;
        // One artist holds 960 tracks; 40 tracks are each by an artist of their own.
        musiclib_core::testing::execute(
            &library,
            "UPDATE tracks SET artist_id = NULL, artist_name = 'Small ' || source_id
             WHERE CAST(SUBSTR(source_id, 11) AS INTEGER) % 25 = 0",
            &[],
        )
        .await;
        musiclib_core::testing::execute(
            &library,
            "UPDATE tracks SET artist_id = (SELECT artist_id FROM tracks WHERE source_id = 'synthetic-1'),
               artist_name = 'Huge' WHERE artist_id IS NOT NULL",
            &[],
        )
        .await;
        let seed = all_tracks(&library)
            .await
            .iter()
            .find(|track| track.artist_name.as_deref() == Some("Huge"))
            .unwrap()
            .id
            .clone();
        for with_seed in [true, true, true, false, false] {
            let asked = request(with_seed.then_some(&seed), &[], 20);
            let batch = library.recommend().radio(&ann, &asked).await.unwrap();
            assert_eq!(batch.len(), 20);
            let mut per_artist: HashMap<String, usize> = HashMap::new();
            for item in &batch {
                *per_artist.entry(item.track.artist_name.clone().unwrap()).or_default() += 1;
            }
            assert!(per_artist.values().all(|&n| n <= 2), "{per_artist:?}");
        }
    }
}

backend_test! {
    async fn the_service_report_survives_an_unreadable_analysis_state(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let admin = Caller {
            user: library.accounts().create_user("root", "admin-password", true).await.unwrap(),
        };
        let services = library.admin().services(&admin).await.unwrap();
        let find = |services: &[musiclib_core::admin::ServiceStatus], name: &str| {
            services.iter().find(|service| service.name == name).cloned().unwrap()
        };
        assert_eq!(find(&services, "recommender").state, ServiceState::Disabled);
        assert_eq!(find(&services, "sound_analysis").state, ServiceState::Ok);
        // The features table gone: the report still answers, naming the problem.
        musiclib_core::testing::execute(&library, "DROP TABLE track_features", &[]).await;
        let services = library.admin().services(&admin).await.unwrap();
        let sound = find(&services, "sound_analysis");
        assert_eq!(sound.state, ServiceState::Unavailable, "{sound:?}");
        assert!(sound.detail.starts_with("cannot read the analysis state"), "{sound:?}");
    }
}

backend_test! {
    async fn a_track_too_long_to_hold_decoded_is_not_analysed(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let caller = user(&library, "dj").await;
        // Sixteen minutes (at 2 kHz, so the file stays small): over the analysis's bound.
        let long = musiclib_core::testing::wav_mono(2000, (0..2000 * 60 * 16).map(|i| ((i % 40) * 500) as i16));
        let track = library
            .ingest()
            .upload_track(&caller, Some("a long mix.wav"), long.as_slice())
            .await
            .unwrap()
            .track;
        assert!(track.duration_ms.unwrap() > 15 * 60 * 1000);
        let report = library.recommend().analyze_pending(library.storage(), 10).await.unwrap();
        assert_eq!((report.analyzed, report.failed), (0, 1), "{report:?}");
        let reason: Option<String> = sqlx::query_scalar("SELECT error FROM track_features WHERE track_id = $1")
            .bind(track.id.as_str())
            .fetch_one(musiclib_core::testing::pool(&library))
            .await
            .unwrap();
        assert!(reason.unwrap().starts_with("longer than 15 minutes"));
        // Recorded once: nothing is pending any more.
        assert_eq!(library.recommend().sound_status().await.unwrap().pending, 0);
    }
}
