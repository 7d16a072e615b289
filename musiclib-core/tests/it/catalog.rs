//! Upload, browse, edit, delete, search.

use crate::backend_test;
use crate::support::*;
use musiclib_core::catalog::{TrackFilter, TrackMetadata};
use musiclib_core::domain::{MetadataStatus, Page, Source};
use musiclib_core::ErrorKind;

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const MP3: &str = "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3";

backend_test! {
    async fn upload_is_idempotent_and_validated(backend: Backend) {
        let Some(corpus) = corpus() else { return };
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bytes = corpus_file(&corpus, FLAC);

        let first = library.upload_track(&alice, Some("01 - First Light.flac"), bytes.as_slice()).await.unwrap();
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
        assert!(library.blobs().head(&track.storage_uri).await.unwrap().is_some());

        let again = library.upload_track(&alice, Some("copy.flac"), bytes.as_slice()).await.unwrap();
        assert!(!again.created);
        assert_eq!(again.track.id, track.id);
        let all = library.list_tracks(&TrackFilter::default(), None, Page::default()).await.unwrap();
        assert_eq!(all.total, 1);

        let text = library.upload_track(&alice, Some("notes.mp3"), &b"just some text, not audio"[..]).await.unwrap_err();
        assert_eq!((text.kind(), text.field()), (ErrorKind::InvalidInput, Some("file")));
        let truncated = corpus_file(&corpus, "library/Damaged Files/truncated.flac");
        let damaged = library.upload_track(&alice, Some("t.flac"), truncated.as_slice()).await.unwrap_err();
        assert_eq!(damaged.kind(), ErrorKind::InvalidInput);

        // Enrichment from tags.
        musiclib_core::testing::drain_jobs(&library).await;
        let enriched = library.get_track(&track.id).await.unwrap();
        assert_eq!(enriched.metadata_status, MetadataStatus::Enriched);
        assert!(enriched.enriched_at.is_some());

        // Nothing was left in staging.
        let staging: Vec<_> = std::fs::read_dir(library.staging_dir()).unwrap().collect();
        assert!(staging.is_empty(), "staging files left behind: {staging:?}");
    }
}

backend_test! {
    async fn upload_over_the_limit_is_refused(backend: Backend) {
        let Some(corpus) = corpus() else { return };
        let library = TestLibrary::builder(backend).config(|config| config.max_upload_bytes = 100_000).build().await;
        let alice = user(&library, "alice").await;
        let bytes = corpus_file(&corpus, FLAC);
        let error = library.upload_track(&alice, Some("big.flac"), bytes.as_slice()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TooLarge);
        assert_eq!(library.list_tracks(&TrackFilter::default(), None, Page::default()).await.unwrap().total, 0);
    }
}

backend_test! {
    async fn edits_resolve_artists_and_deletion_cleans_up(backend: Backend) {
        let Some(corpus) = corpus() else { return };
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let bob = user(&library, "bob").await;
        let flac = library.upload_track(&alice, Some("a.flac"), corpus_file(&corpus, FLAC).as_slice()).await.unwrap().track;
        let mp3 = library.upload_track(&alice, Some("b.mp3"), corpus_file(&corpus, MP3).as_slice()).await.unwrap().track;

        // One artist whatever the case, accents or Unicode form.
        let metadata = TrackMetadata {
            title: "Mañana Dorada".into(),
            artist: Some("LOS SENORES DEL RITMO".into()),
            album: Some("cancion de manana".into()),
            album_artist: Some("Los Señores del Ritmo".into()),
            year: Some(2021),
            ..Default::default()
        };
        let edited = library.set_track_metadata(&alice, &mp3.id, &metadata).await.unwrap();
        assert_eq!(edited.metadata_status, MetadataStatus::Manual);
        assert_eq!(edited.artist_id, mp3.artist_id, "same artist by case and accents");
        assert_eq!(edited.album_id, mp3.album_id, "same album by case and accents");

        // Manual tracks are skipped by enrichment.
        musiclib_core::testing::drain_jobs(&library).await;
        assert_eq!(library.get_track(&mp3.id).await.unwrap().metadata_status, MetadataStatus::Manual);

        // Only the uploader or an admin changes a track.
        let denied = library.delete_track(&bob, &flac.id).await.unwrap_err();
        assert_eq!(denied.kind(), ErrorKind::Forbidden);

        // Search is case- and accent-insensitive over titles, artists and albums.
        let found = library.search_library("MANANA", 20).await.unwrap();
        assert_eq!(found.tracks.len(), 1);
        assert_eq!(found.albums.len(), 1);
        let found = library.search_library("aurora", 20).await.unwrap();
        assert_eq!((found.tracks.len(), found.artists.len()), (1, 1));
        assert!(library.search_library("", 20).await.is_err());
        // Short queries (under a trigram), quotes and LIKE wildcards are plain text.
        assert_eq!(library.search_library("ña", 20).await.unwrap().tracks.len(), 1);
        assert!(library.search_library("ma\"na", 20).await.unwrap().tracks.is_empty());
        assert!(library.search_library("%", 20).await.unwrap().tracks.is_empty());
        assert!(library.search_library("m_nana", 20).await.unwrap().tracks.is_empty());
        // An edited title is found by its new words (the index follows updates).
        let retitled = library
            .patch_track(&alice, &mp3.id, &musiclib_core::catalog::TrackPatch { title: Some("Zebra Crossing".into()), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(library.search_library("zebra cross", 20).await.unwrap().tracks[0].id, retitled.id);
        assert!(library.search_library("MANANA DORADA", 20).await.unwrap().tracks.is_empty());

        // Deleting removes the blob, and the album and artist left empty.
        library.delete_track(&alice, &flac.id).await.unwrap();
        assert_eq!(library.get_track(&flac.id).await.unwrap_err().kind(), ErrorKind::NotFound);
        assert!(library.blobs().head(&flac.storage_uri).await.unwrap().is_none());
        let album = flac.album_id.clone().unwrap();
        assert_eq!(library.get_album(&album).await.unwrap_err().kind(), ErrorKind::NotFound);
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
    async fn forged_mp4_sample_tables_are_refused_not_crashed(backend: Backend) {
        let Some(corpus) = corpus() else { return };
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let original = corpus_file(&corpus, "library/Mira Kowalczyk/Łódź Sessions (2018)/01 - Żółta Łódka.m4a");
        let stsc = original.windows(4).position(|window| window == b"stsc").expect("an stsc box");
        // Found by fuzzing: an entry count far beyond the box (symphonia would try to
        // allocate it all), and a chunk numbered 0 (symphonia would underflow).
        let mut huge = original.clone();
        huge[stsc + 8..stsc + 12].copy_from_slice(&0x7FFF_FFFFu32.to_be_bytes());
        let mut zero = original.clone();
        zero[stsc + 12..stsc + 16].copy_from_slice(&0u32.to_be_bytes());
        for forged in [huge, zero] {
            let error = library.upload_track(&alice, Some("forged.m4a"), forged.as_slice()).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
            assert!(error.to_string().contains("stsc"), "{error}");
        }
        // The real file still goes in.
        library.upload_track(&alice, Some("real.m4a"), original.as_slice()).await.unwrap();
    }
}
