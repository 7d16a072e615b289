//! Upload, browse, edit, delete, search.

use crate::backend_test;
use crate::support::*;
use musiclib_core::catalog::{TrackFilter, TrackMetadata};
use musiclib_core::domain::{MetadataStatus, Page, Source};
use musiclib_core::ErrorKind;

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const MP3: &str = "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3";

backend_test! {
    #[services]
    async fn upload_is_idempotent_and_validated(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bytes = corpus_file(&corpus, FLAC);

        let first = library.ingest().upload_track(&alice, Some("01 - First Light.flac"), bytes.as_slice()).await.unwrap();
        assert!(first.created);
        let track = &first.track;
        assert_eq!(track.title, "First Light");
        assert_eq!(track.artist_name.as_deref(), Some("Aurora Lane"));
        assert_eq!(track.album_title.as_deref(), Some("Northern Lights"));
        assert_eq!(track.format.as_deref(), Some("flac"));
        assert_eq!(track.duration_ms, Some(187_000));
        assert_eq!(track.source, Source::Upload);
        assert_eq!(track.source_id.len(), 64, "source_id is the sha256");
        assert_eq!(track.metadata_status, MetadataStatus::Pending);
        assert!(musiclib_core::testing::blob_exists(&library, &track.storage_uri).await);

        let again = library.ingest().upload_track(&alice, Some("copy.flac"), bytes.as_slice()).await.unwrap();
        assert!(!again.created);
        assert_eq!(again.track.id, track.id);
        let all = library.catalog().list_tracks(&TrackFilter::default(), None, Page::default()).await.unwrap();
        assert_eq!(all.total, 1);

        let text = library.ingest().upload_track(&alice, Some("notes.mp3"), &b"just some text, not audio"[..]).await.unwrap_err();
        assert_eq!((text.kind(), text.field()), (ErrorKind::InvalidInput, Some("file")));
        let truncated = corpus_file(&corpus, "library/Damaged Files/truncated.flac");
        let damaged = library.ingest().upload_track(&alice, Some("t.flac"), truncated.as_slice()).await.unwrap_err();
        assert_eq!(damaged.kind(), ErrorKind::InvalidInput);

        // Enrichment from tags.
        musiclib_core::testing::drain_jobs(&library).await;
        let enriched = library.catalog().get_track(&track.id).await.unwrap();
        assert_eq!(enriched.metadata_status, MetadataStatus::Enriched);
        assert!(enriched.enriched_at.is_some());

        // Nothing was left in staging.
        let staging: Vec<_> = std::fs::read_dir(musiclib_core::testing::staging_dir(&library)).unwrap().collect();
        assert!(staging.is_empty(), "staging files left behind: {staging:?}");
    }
}

backend_test! {
    #[services]
    async fn upload_over_the_limit_is_refused(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::builder(backend).config(|config| config.max_upload_bytes = 100_000).build().await;
        let alice = user(&library, "alice").await;
        let bytes = corpus_file(&corpus, FLAC);
        let error = library.ingest().upload_track(&alice, Some("big.flac"), bytes.as_slice()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TooLarge);
        assert_eq!(library.catalog().list_tracks(&TrackFilter::default(), None, Page::default()).await.unwrap().total, 0);
    }
}

backend_test! {
    #[services]
    async fn edits_resolve_artists_and_deletion_cleans_up(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let flac = library.ingest().upload_track(&alice, Some("a.flac"), corpus_file(&corpus, FLAC).as_slice()).await.unwrap().track;
        let mp3 = library.ingest().upload_track(&alice, Some("b.mp3"), corpus_file(&corpus, MP3).as_slice()).await.unwrap().track;

        // One artist whatever the case, accents or Unicode form.
        let metadata = TrackMetadata {
            title: "Mañana Dorada".into(),
            artist: Some("LOS SENORES DEL RITMO".into()),
            album: Some("cancion de manana".into()),
            album_artist: Some("Los Señores del Ritmo".into()),
            year: Some(2021),
            ..Default::default()
        };
        let edited = library.catalog().set_track_metadata(&alice, &mp3.id, &metadata).await.unwrap();
        assert_eq!(edited.metadata_status, MetadataStatus::Manual);
        assert_eq!(edited.artist_id, mp3.artist_id, "same artist by case and accents");
        assert_eq!(edited.album_id, mp3.album_id, "same album by case and accents");

        // Manual tracks are skipped by enrichment.
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(library.catalog().get_track(&mp3.id).await.unwrap().metadata_status, MetadataStatus::Manual);

        // Only the uploader or an admin changes a track.
        let denied = library.delete_track(&bob, &flac.id).await.unwrap_err();
        assert_eq!(denied.kind(), ErrorKind::Forbidden);

        // Search is case- and accent-insensitive over titles, artists and albums.
        let found = library.catalog().search_library("MANANA", 20).await.unwrap();
        assert_eq!(found.tracks.len(), 1);
        assert_eq!(found.albums.len(), 1);
        let found = library.catalog().search_library("aurora", 20).await.unwrap();
        assert_eq!((found.tracks.len(), found.artists.len()), (1, 1));
        assert!(library.catalog().search_library("", 20).await.is_err());
        // Short queries (under a trigram), quotes and LIKE wildcards are plain text.
        assert_eq!(library.catalog().search_library("ña", 20).await.unwrap().tracks.len(), 1);
        assert!(library.catalog().search_library("ma\"na", 20).await.unwrap().tracks.is_empty());
        assert!(library.catalog().search_library("%", 20).await.unwrap().tracks.is_empty());
        assert!(library.catalog().search_library("m_nana", 20).await.unwrap().tracks.is_empty());
        // An edited title is found by its new words (the index follows updates).
        let retitled = library
            .catalog().patch_track(&alice, &mp3.id, &musiclib_core::catalog::TrackPatch { title: Some("Zebra Crossing".into()), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(library.catalog().search_library("zebra cross", 20).await.unwrap().tracks[0].id, retitled.id);
        assert!(library.catalog().search_library("MANANA DORADA", 20).await.unwrap().tracks.is_empty());

        // Deleting removes the blob, and the album and artist left empty.
        library.delete_track(&alice, &flac.id).await.unwrap();
        assert_eq!(library.catalog().get_track(&flac.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert!(!musiclib_core::testing::blob_exists(&library, &flac.storage_uri).await);
        let album = flac.album_id.clone().unwrap();
        assert_eq!(library.catalog().get_album(&album).await.unwrap_err().kind(), ErrorKind::NotFound);
    }
}

#[test]
fn page_limits() {
    assert!(Page::new(Some(200), None).is_ok());
    assert_eq!(
        Page::new(Some(201), None).unwrap_err().field(),
        Some("limit")
    );
    assert_eq!(Page::new(Some(0), None).unwrap_err().field(), Some("limit"));
    assert_eq!(
        Page::new(None, Some(-1)).unwrap_err().field(),
        Some("offset")
    );
    assert_eq!(Page::new(None, None).unwrap().limit(), 50);
}

backend_test! {
    #[services]
    async fn forged_mp4_sample_tables_are_refused_not_crashed(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let original = corpus_file(&corpus, "library/Mira Kowalczyk/Łódź Sessions (2018)/01 - Żółta Łódka.m4a");
        let stsc = original.windows(4).position(|window| window == b"stsc").expect("an stsc box");
        // Found by fuzzing: an entry count far beyond the box (symphonia 0.5 tried to
        // allocate it all), and a chunk numbered 0 (symphonia 0.5 underflowed).
        let mut huge = original.clone();
        huge[stsc + 8..stsc + 12].copy_from_slice(&0x7FFF_FFFFu32.to_be_bytes());
        let mut zero = original.clone();
        zero[stsc + 12..stsc + 16].copy_from_slice(&0u32.to_be_bytes());
        for forged in [huge, zero] {
            let error = library.ingest().upload_track(&alice, Some("forged.m4a"), forged.as_slice()).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
            assert!(error.to_string().contains("stsc"), "{error}");
        }
        // The real file still goes in.
        library.ingest().upload_track(&alice, Some("real.m4a"), original.as_slice()).await.unwrap();
    }
}

backend_test! {
    /// A manual edit racing an enrichment of the same track: whichever starts first, the
    /// edit wins (the enrichment sees it and skips, or the edit waits for the enrichment and
    /// then applies). On PostgreSQL this needs the row lock both take.
    async fn a_manual_edit_always_wins_over_a_racing_enrichment(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_synthetic_tracks(&library, 40).await;
        let admin = musiclib_core::auth::Caller {
            user: library.accounts().create_user("root", "root-password", true).await.unwrap(),
        };
        let tracks = library.catalog().list_tracks(&Default::default(), None, Page::new(Some(40), None).unwrap()).await.unwrap();
        for (round, track) in tracks.items.iter().enumerate() {
            let edit = TrackMetadata {
                title: format!("Edited {round}"),
                artist: Some(format!("Editor {round}")),
                ..Default::default()
            };
            let (enriched, edited) = tokio::join!(
                library.enrichment().enrich_track(&track.id),
                library.catalog().set_track_metadata(&admin, &track.id, &edit),
            );
            enriched.unwrap();
            edited.unwrap();
            let after = library.catalog().get_track(&track.id).await.unwrap();
            assert_eq!(
                (after.metadata_status, after.title.as_str(), after.artist_name.as_deref()),
                (MetadataStatus::Manual, edit.title.as_str(), edit.artist.as_deref()),
                "round {round}: the enrichment overwrote the manual edit"
            );
        }
    }
}
