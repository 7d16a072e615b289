//! The enrichment pipeline against a mock AcoustID and Cover Art Archive (wiremock) with the
//! shared fixtures: every row of the metadata_status table, both sides of the trust score,
//! gap-filling, degraded services, batching and the throttle, covers.

use std::time::{Duration, Instant};

use base64::Engine as _;
use musiclib_core::domain::MetadataStatus;
use musiclib_core::enrichment::acoustid::{self, LookupQuery};
use musiclib_core::testing::RateLimitedAcoustId;
use musiclib_core::{Config, Library, TrackId};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::backend_test;
use crate::support::*;

const POLAR_DRIFT_MP3: &str = "library/Incoming/Aurora Lane - Polar Drift.mp3";
const FIRST_LIGHT_FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const UNTITLED_MP3: &str = "library/Incoming/untitled.mp3";
const NO_ALBUM_OGG: &str = "library/Incoming/Some Artist - Song Without Album.ogg";
/// The file name is in NFD on disk (the tags are NFC).
const CAFE_NOIR_MP3: &str = "library/Incoming/Cafe\u{301} Noir \u{2013} Nuit Blanche.mp3";
const VOICE_MEMO_WAV: &str = "library/Unsorted/voice memo 2024-03-01.wav";
const TIDAL_HUM_OPUS: &str =
    "library/Opus Collective/Field Recordings & Drones/01 - Tidal Hum.opus";
/// The mock's rate window: the real one is 1 s; 800 ms leaves room for the jitter of a
/// loaded test machine (requests leave ≥ 350 ms apart) while still refusing 4 per second.
const TEST_WINDOW: Duration = Duration::from_millis(800);
const NORTHERN_LIGHTS_RG: &str = "0071b7aa-2cea-433f-89ce-4851fb983174";

fn fixture(relative: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn json_response(status: u16, fixture_file: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("Content-Type", "application/json; charset=UTF-8")
        .set_body_string(fixture(fixture_file))
}

/// The 250-pixel JPEG of the fixtures.
fn front_image() -> Vec<u8> {
    let doc: serde_json::Value =
        serde_json::from_str(&fixture("coverartarchive/front_image_250.json")).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(doc["body_base64"].as_str().unwrap())
        .unwrap()
}

/// Mocks of both services, and a library configured to use them.
struct Services {
    acoustid: MockServer,
    archive: MockServer,
}

impl Services {
    async fn start() -> Services {
        Services {
            acoustid: MockServer::start().await,
            archive: MockServer::start().await,
        }
    }

    async fn library(
        &self,
        backend: Backend,
        change: impl FnOnce(&mut Config) + Send + 'static,
    ) -> TestLibrary {
        let acoustid = self.acoustid.uri();
        let archive = self.archive.uri();
        TestLibrary::builder(backend)
            .config(move |config| {
                config.enrichment.acoustid_api_key = Some("test-key".into());
                config.enrichment.acoustid_base_url = acoustid;
                config.enrichment.coverart_base_url = archive;
                config.enrichment.acoustid_retry_base = Duration::from_millis(10);
                config.enrichment.acoustid_requests_per_second = 50.0;
                change(config);
            })
            .build()
            .await
    }

    /// AcoustID answers every lookup with `fixture_file`.
    async fn acoustid_answers(&self, status: u16, fixture_file: &str) {
        Mock::given(method("POST"))
            .and(path("/v2/lookup"))
            .respond_with(json_response(status, fixture_file))
            .mount(&self.acoustid)
            .await;
    }

    /// The archive serves the fixture JPEG for the Northern Lights release group, through a
    /// redirect as the real one does.
    async fn archive_has_front(&self) {
        Mock::given(method("GET"))
            .and(path(format!("/release-group/{NORTHERN_LIGHTS_RG}/front")))
            .respond_with(ResponseTemplate::new(307).insert_header(
                "Location",
                format!(
                    "{}/download/mbid-b681feb9/mbid-b681feb9-37482910561.jpg",
                    self.archive.uri()
                ),
            ))
            .mount(&self.archive)
            .await;
        Mock::given(method("GET"))
            .and(path(
                "/download/mbid-b681feb9/mbid-b681feb9-37482910561.jpg",
            ))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Content-Type", "image/jpeg")
                    .set_body_bytes(front_image()),
            )
            .mount(&self.archive)
            .await;
    }

    async fn lookups(&self) -> usize {
        self.acoustid
            .received_requests()
            .await
            .expect("the mock records requests")
            .len()
    }

    async fn archive_requests(&self) -> usize {
        self.archive
            .received_requests()
            .await
            .expect("the mock records requests")
            .len()
    }
}

async fn upload(library: &Library, relative: &str) -> TrackId {
    let corpus = corpus();
    let alice = match library.accounts().find_user_by_name("alice").await {
        Ok(Some(user)) => musiclib_core::auth::Caller { user },
        _ => user(library, "alice").await,
    };
    let bytes = corpus_file(&corpus, relative);
    let name = relative.rsplit('/').next().unwrap();
    library
        .ingest()
        .upload_track(&alice, Some(name), bytes.as_slice())
        .await
        .expect("upload")
        .track
        .id
}

backend_test! {
    #[services]
    async fn a_trusted_match_wins_and_the_archive_cover_is_stored(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_high_score.json").await;
        services.archive_has_front().await;
        let library = services.library(backend, |_| {}).await;
        let id = upload(&library, POLAR_DRIFT_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;

        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched, "{:?}", track.metadata_error);
        assert_eq!(track.title, "Polar Drift");
        assert_eq!(track.artist_name.as_deref(), Some("Aurora Lane"));
        assert_eq!(track.album_title.as_deref(), Some("Northern Lights"));
        // Of the two recordings, the one as long as the file (142 s, not the 139.5 s edit).
        assert_eq!(track.musicbrainz_recording_id.as_deref(), Some("864455ce-3586-4f6f-8caf-9c6eba11d576"));
        assert_eq!(track.acoustid_id.as_deref(), Some("3f1c2a9e-5b7d-4e61-a0c4-8d2b6e9f7a13"));
        assert!(track.enriched_at.is_some());
        let album = library.catalog().get_album(track.album_id.as_ref().unwrap()).await.unwrap();
        assert_eq!(album.musicbrainz_releasegroup_id.as_deref(), Some(NORTHERN_LIGHTS_RG));
        assert_eq!(album.cover_uri.as_deref(), Some(format!("covers/{}.jpg", album.id).as_str()));
        assert!(track.has_cover);
        let cover = library.media().album_cover(&album.id, None).await.unwrap();
        assert_eq!(cover.mime_type, "image/jpeg");
        assert_eq!(cover.bytes.as_ref(), front_image().as_slice());

        // The lookup sent what AcoustID expects: the key, whole seconds, the compressed print.
        let requests = services.acoustid.received_requests().await.unwrap();
        let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&requests[0].body).unwrap();
        let value = |key: &str| form.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        assert_eq!(value("client").as_deref(), Some("test-key"));
        assert_eq!(value("duration").as_deref(), Some("142"));
        assert_eq!(value("meta").as_deref(), Some("recordings releasegroups compress"));
        assert!(value("fingerprint").unwrap().starts_with("AQAD"), "a compressed fingerprint");
    }
}

backend_test! {
    #[services]
    async fn a_weak_match_only_fills_gaps(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_low_score.json").await;
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;

        // Tags say title and artist: they stay; the missing album comes from the lookup.
        let tagged = upload(&library, NO_ALBUM_OGG).await;
        // No tags at all: everything comes from the lookup.
        let untagged = upload(&library, UNTITLED_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;

        let tagged = library.catalog().get_track(&tagged).await.unwrap();
        assert_eq!(tagged.metadata_status, MetadataStatus::Enriched);
        assert_eq!(tagged.title, "Song Without Album");
        assert_eq!(tagged.artist_name.as_deref(), Some("Some Artist"));
        assert_eq!(tagged.album_title.as_deref(), Some("Harbour Lights"));

        let untagged = library.catalog().get_track(&untagged).await.unwrap();
        assert_eq!(untagged.metadata_status, MetadataStatus::Enriched, "{:?}", untagged.metadata_error);
        assert_eq!(untagged.title, "Sunrise Parade");
        assert_eq!(untagged.artist_name.as_deref(), Some("Marta Vel & Oskar Lind"));
        assert_eq!(untagged.album_title.as_deref(), Some("Harbour Lights"));
    }
}

backend_test! {
    #[services]
    async fn the_trust_score_is_inclusive_and_configurable(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_at_threshold.json").await;
        // Exactly 0.85 with the default trust score 0.85: the lookup wins over the tags.
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.title, "Tidal Hum");
        assert_eq!(track.artist_name.as_deref(), Some("Opus Collective"));
        assert_eq!(track.album_title.as_deref(), Some("Field Recordings & Drones"));
        // The lookup has no year: the tags' year stays.
        assert_eq!(track.year, Some(2017));

        // With the trust score raised above it, the tags win and nothing is erased.
        let library = services.library(backend, |config| {
            config.enrichment.coverart_enabled = false;
            config.enrichment.acoustid_trust_score = 0.86;
        }).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched);
        assert_eq!(track.title, "Nuit Blanche");
        assert_eq!(track.artist_name.as_deref(), Some("Café Noir"));
        assert_eq!(track.album_title.as_deref(), Some("Rive Gauche"));
        assert_eq!(track.track_number, Some(7));
        // The recording id was a gap: the lookup fills it.
        assert_eq!(track.musicbrainz_recording_id.as_deref(), Some("4c82f515-257a-45b2-93f2-6c139b0ee163"));
    }
}

backend_test! {
    #[services]
    async fn no_identity_fails_with_a_readable_reason(backend: Backend) {
        let services = Services::start().await;
        // A match with no MusicBrainz recording identifies nothing.
        Mock::given(method("POST")).and(body_string_contains("duration=9"))
            .respond_with(json_response(200, "acoustid/lookup_no_recordings.json"))
            .mount(&services.acoustid).await;
        Mock::given(method("POST")).and(body_string_contains("duration=5"))
            .respond_with(json_response(200, "acoustid/lookup_empty.json"))
            .mount(&services.acoustid).await;
        let library = services.library(backend, |_| {}).await;
        let memo = upload(&library, VOICE_MEMO_WAV).await;
        let untitled = upload(&library, UNTITLED_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        for id in [memo, untitled] {
            let track = library.catalog().get_track(&id).await.unwrap();
            assert_eq!(track.metadata_status, MetadataStatus::Failed);
            assert_eq!(
                track.metadata_error.as_deref(),
                Some("the file has no title or artist tags, and no fingerprint match was found")
            );
            assert!(track.enriched_at.is_some());
            assert!(track.artist_id.is_none() && track.album_id.is_none());
        }

        // Without an API key the lookup is skipped, not failed, and the reason says so.
        let library = TestLibrary::new(backend).await;
        let id = upload(&library, UNTITLED_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Failed);
        assert!(track.metadata_error.unwrap().contains("fingerprint lookup is off"));
    }
}

backend_test! {
    #[services]
    async fn a_failing_acoustid_degrades_to_the_tags(backend: Backend) {
        // 500 on every try: retried with backoff, then the tags decide.
        let services = Services::start().await;
        services.acoustid_answers(500, "acoustid/error_internal.json").await;
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        let job = musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(job, 1);
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched);
        assert_eq!(track.title, "Nuit Blanche");
        assert_eq!(services.lookups().await, 4, "1 try + 3 retries");

        // A bad API key is not retried.
        let services = Services::start().await;
        services.acoustid_answers(400, "acoustid/error_invalid_api_key.json").await;
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(library.catalog().get_track(&id).await.unwrap().metadata_status, MetadataStatus::Enriched);
        assert_eq!(services.lookups().await, 1);

        // Rate limited once (429), then fine: the retry succeeds.
        let services = Services::start().await;
        Mock::given(method("POST")).respond_with(json_response(429, "acoustid/error_rate_limited.json"))
            .up_to_n_times(1).mount(&services.acoustid).await;
        services.acoustid_answers(200, "acoustid/lookup_at_threshold.json").await;
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(library.catalog().get_track(&id).await.unwrap().title, "Tidal Hum");
        assert_eq!(services.lookups().await, 2);
    }
}

backend_test! {
    #[services]
    async fn covers_come_from_the_file_first_and_are_never_overwritten(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_high_score.json").await;
        services.archive_has_front().await;
        let library = services.library(backend, |_| {}).await;

        // The FLAC embeds a PNG front cover: the album gets it, the archive is not asked.
        let flac = upload(&library, FIRST_LIGHT_FLAC).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let flac = library.catalog().get_track(&flac).await.unwrap();
        let album_id = flac.album_id.clone().unwrap();
        let cover = library.media().album_cover(&album_id, None).await.unwrap();
        assert_eq!(cover.mime_type, "image/png");
        assert_eq!(library.catalog().get_album(&album_id).await.unwrap().cover_uri, Some(format!("covers/{album_id}.png")));
        let first_bytes = cover.bytes.clone();

        // A second track of the same album, with a release group the archive has a cover
        // for: the album keeps its cover and the archive is never asked.
        let mp3 = upload(&library, POLAR_DRIFT_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let mp3 = library.catalog().get_track(&mp3).await.unwrap();
        assert_eq!(mp3.album_id.as_ref(), Some(&album_id));
        assert!(mp3.has_cover);
        assert_eq!(library.media().album_cover(&album_id, None).await.unwrap().bytes, first_bytes);
        assert_eq!(services.archive_requests().await, 0);

        // Thumbnails are cached and smaller.
        let thumb = library.media().album_cover(&album_id, Some(64)).await.unwrap();
        assert_eq!(thumb.mime_type, "image/png");
        let decoded = image_size(&thumb.bytes);
        assert_eq!(decoded, (64, 64));
        assert!(musiclib_core::testing::blob_exists(&library, &format!("covers/thumbs/{album_id}/64.png")).await);
        assert!(library.media().album_cover(&album_id, Some(5000)).await.is_err());

        // Deleting the album's last track drops the album, then its cover and thumbnails.
        let alice = musiclib_core::auth::Caller { user: library.accounts().find_user_by_name("alice").await.unwrap().unwrap() };
        library.delete_track(&alice, &flac.id).await.unwrap();
        assert!(!musiclib_core::testing::blob_keys(&library, "covers/").await.is_empty(), "the album still has a track");
        library.delete_track(&alice, &mp3.id).await.unwrap();
        assert_eq!(musiclib_core::testing::blob_keys(&library, "covers/").await, Vec::<String>::new());
    }
}

backend_test! {
    #[services]
    async fn a_picture_claiming_too_many_pixels_never_becomes_a_cover(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_high_score.json").await;
        let library = services.library(backend, |config| config.enrichment.coverart_enabled = false).await;
        // 12000 × 12000 pixels in a few dozen bytes: decoding it would take 432 MB.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.mp3");
        std::fs::copy(musiclib_core::testing::corpus().join(POLAR_DRIFT_MP3), &path).unwrap();
        musiclib_core::testing::add_front_cover(&path, musiclib_core::testing::png_claiming(12_000, 12_000), "image/png");
        let caller = user(&library, "alice").await;
        let id = library.ingest().upload_track(&caller, Some("bomb.mp3"), std::fs::read(&path).unwrap().as_slice())
            .await.unwrap().track.id;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched);
        assert!(!track.has_cover, "the picture was refused before it was stored");
        assert!(musiclib_core::testing::blob_keys(&library, "covers/").await.is_empty());
        // A cover that claims a sane size is taken from the same kind of file.
        let sane = dir.path().join("sane.flac");
        std::fs::copy(musiclib_core::testing::corpus().join(FIRST_LIGHT_FLAC), &sane).unwrap();
        let id = library.ingest().upload_track(&caller, Some("sane.flac"), std::fs::read(&sane).unwrap().as_slice())
            .await.unwrap().track.id;
        musiclib_core::testing::drain_jobs(&library).await;
        assert!(library.catalog().get_track(&id).await.unwrap().has_cover);
    }
}

fn image_size(bytes: &[u8]) -> (u32, u32) {
    // PNG: width and height are big-endian at bytes 16..24.
    assert!(bytes.starts_with(b"\x89PNG"));
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

backend_test! {
    #[services]
    async fn a_cover_failure_never_changes_the_status(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_high_score.json").await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(503).insert_header("Retry-After", "2").set_body_string("<html>busy</html>"))
            .mount(&services.archive).await;
        let library = services.library(backend, |_| {}).await;
        let id = upload(&library, POLAR_DRIFT_MP3).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched);
        assert!(!track.has_cover);
        assert_eq!(services.archive_requests().await, 1);
        let missing = library.media().track_cover(&id, None).await.unwrap_err();
        assert_eq!(missing.kind(), musiclib_core::ErrorKind::NotFound);
        // Nothing half-written in storage.
        assert!(musiclib_core::testing::blob_keys(&library, "covers/").await.is_empty());
    }
}

backend_test! {
    #[services]
    async fn opus_goes_through_ffmpeg_and_its_embedded_cover_is_used(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_at_threshold.json").await;
        let library = services.library(backend, |_| {}).await;
        let id = upload(&library, TIDAL_HUM_OPUS).await;
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Enriched);
        assert_eq!(track.acoustid_id.as_deref(), Some("7c2e9f4a-8b1d-4e63-9a57-0f3c6d8e2b15"), "the fingerprint was looked up");
        assert!(track.has_cover);
        let cover = library.media().track_cover(&id, None).await.unwrap();
        assert_eq!(cover.mime_type, "image/jpeg");
        assert_eq!(services.archive_requests().await, 0);
    }
}

backend_test! {
    #[services]
    async fn manual_tracks_are_skipped_and_crashes_end_failed(backend: Backend) {
        let services = Services::start().await;
        services.acoustid_answers(200, "acoustid/lookup_high_score.json").await;
        let library = services.library(backend, |_| {}).await;
        let id = upload(&library, CAFE_NOIR_MP3).await;
        let alice = musiclib_core::auth::Caller { user: library.accounts().find_user_by_name("alice").await.unwrap().unwrap() };
        let edit = musiclib_core::catalog::TrackMetadata {
            title: "Hand Edited".into(),
            artist: Some("Someone".into()),
            ..Default::default()
        };
        library.catalog().set_track_metadata(&alice, &id, &edit).await.unwrap();
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Manual);
        assert_eq!(track.title, "Hand Edited");
        assert_eq!(services.lookups().await, 0, "a manual track is not even looked up");

        // A crash inside the pipeline (here: the artists table is gone) is recorded as failed.
        let id = upload(&library, NO_ALBUM_OGG).await;
        sqlx::query("ALTER TABLE artists RENAME TO artists_gone").execute(musiclib_core::testing::pool(&library)).await.unwrap();
        musiclib_core::testing::drain_jobs(&library).await;
        let track = library.catalog().get_track(&id).await.unwrap();
        assert_eq!(track.metadata_status, MetadataStatus::Failed);
        assert!(track.metadata_error.unwrap().starts_with("enrichment crashed"));
        assert!(track.enriched_at.is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_are_batched_and_throttled_to_three_per_second() {
    let server = MockServer::start().await;
    let mock = RateLimitedAcoustId::new(TEST_WINDOW);
    Mock::given(method("POST"))
        .and(path("/v2/lookup"))
        .respond_with(mock.clone())
        .mount(&server)
        .await;
    let client = acoustid::Client::new(
        reqwest::Client::new(),
        acoustid::ClientConfig {
            base_url: server.uri(),
            api_key: "k".into(),
            requests_per_second: 3.0,
            attempts: 4,
            retry_base: Duration::from_millis(10),
            timeout: Duration::from_secs(10),
        },
    );
    let lookups = acoustid::Lookups::start(client);
    // 100 lookups at once: 5 full batches, at most 3 a second.
    let started = Instant::now();
    let tasks: Vec<_> = (0..100u32)
        .map(|duration| {
            let lookups = lookups.clone();
            tokio::spawn(async move {
                let query = LookupQuery {
                    fingerprint: format!("AQAD{duration}"),
                    duration,
                };
                (duration, lookups.lookup(query).await)
            })
        })
        .collect();
    for task in tasks {
        let (duration, answer) = task.await.unwrap();
        let matches = answer.expect("every lookup answered");
        // Each caller gets the answer to its own fingerprint.
        assert_eq!(matches[0].recordings[0].id, format!("rec-{duration}"));
    }
    let elapsed = started.elapsed();
    let seen = mock.answered();
    // Every fingerprint went in exactly one answered request, in batches.
    assert_eq!(
        seen.iter().map(|(_, size)| *size).sum::<usize>(),
        100,
        "{seen:?}"
    );
    assert!(seen.len() <= 6, "{} requests for 100 lookups", seen.len());
    assert!(seen.iter().all(|(_, size)| *size <= acoustid::MAX_BATCH));
    // The first request goes at once; every later one, answered or refused (the mock sees
    // arrivals, which a loaded machine can bunch up; a refused request is sent again), left
    // a third of a second after the one before: the client kept to three a second.
    let sent = seen.len() + mock.refused();
    assert!(
        elapsed >= Duration::from_millis(333 * (sent as u64 - 1)),
        "{sent} requests in {elapsed:?}"
    );
}

backend_test! {
    #[services]
    async fn concurrent_enrichment_jobs_share_lookup_requests(backend: Backend) {
        let server = MockServer::start().await;
        let mock = RateLimitedAcoustId::new(TEST_WINDOW);
        Mock::given(method("POST")).and(path("/v2/lookup")).respond_with(mock.clone()).mount(&server).await;
        let uri = server.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.enrichment.acoustid_api_key = Some("k".into());
                config.enrichment.acoustid_base_url = uri;
                config.enrichment.coverart_enabled = false;
                // One request every 10 s: the first goes alone, the others wait and batch
                // (decoding all six takes well under that, even on a loaded machine).
                config.enrichment.acoustid_requests_per_second = 0.1;
            })
            .build()
            .await;
        let files = [UNTITLED_MP3, VOICE_MEMO_WAV, NO_ALBUM_OGG, CAFE_NOIR_MP3, "library/Unsorted/sine sweep 20Hz-20kHz.wav", "library/Unsorted/field take 01.wav"];
        let mut ids = Vec::new();
        for file in files {
            ids.push(upload(&library, file).await);
        }
        musiclib_core::testing::drain_jobs_concurrently(&library, 8).await;
        for id in &ids {
            let track = library.catalog().get_track(id).await.unwrap();
            assert_eq!(track.metadata_status, MetadataStatus::Enriched, "{:?}", track.metadata_error);
            let seconds = (track.duration_ms.unwrap() as f64 / 1000.0).round() as i64;
            assert_eq!(track.musicbrainz_recording_id, Some(format!("rec-{seconds}")), "{}", track.title);
        }
        let seen = mock.answered();
        assert!(seen.len() <= 3, "{} requests for {} tracks: lookups were not batched", seen.len(), files.len());
        assert_eq!(mock.refused(), 0);
    }
}
