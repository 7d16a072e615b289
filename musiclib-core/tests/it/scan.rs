//! Local-folder import against the generated corpus.

use std::collections::HashMap;

use crate::backend_test;
use crate::support::*;
use musiclib_core::catalog::TrackFilter;
use musiclib_core::domain::{MetadataStatus, Page, Source};

backend_test! {
    #[services]
    async fn scan_of_corpus_matches_manifest(backend: Backend) {
        let corpus = corpus();
        let manifest = manifest(&corpus);
        let library_dir = corpus.join("library");
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(library_dir))
            .build()
            .await;

        let report = library.ingest().scan_local_folder(|_| {}).await.expect("scan");
        let counts = &manifest["counts"]["by_classification"];
        let expect = |key: &str| counts[key].as_u64().unwrap_or(0);
        assert_eq!(report.seen, manifest["counts"]["entries"].as_u64().unwrap(), "{report:#?}");
        assert_eq!(report.imported, expect("ok") + expect("duplicate-of"), "{report:#?}");
        assert_eq!(report.failed, expect("corrupt"), "{report:#?}");
        assert_eq!(report.skipped, expect("skip"), "{report:#?}");
        assert!(report.done);

        // Every corrupt file is reported by its path, and only those.
        let corrupt: Vec<&str> = manifest["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|file| file["classification"] == "corrupt")
            .map(|file| file["path"].as_str().unwrap().trim_start_matches("library/"))
            .collect();
        let mut failed: Vec<&str> = report.errors.iter().map(|error| error.path.as_str()).collect();
        failed.sort();
        let mut corrupt_sorted = corrupt.clone();
        corrupt_sorted.sort();
        assert_eq!(failed, corrupt_sorted);

        // Tags of imported tracks match the manifest.
        let tracks = library
            .catalog().list_tracks(&TrackFilter { source: Some(Source::LocalFolder), ..Default::default() }, None, Page::new(Some(200), None).unwrap())
            .await
            .unwrap();
        assert_eq!(tracks.total as u64, report.imported);
        let by_path: HashMap<&str, _> = tracks.items.iter().map(|track| (track.source_id.as_str(), track)).collect();
        for file in manifest["files"].as_array().unwrap() {
            let class = file["classification"].as_str().unwrap();
            if class != "ok" && class != "duplicate-of" {
                continue;
            }
            let path = file["path"].as_str().unwrap().trim_start_matches("library/");
            let track = by_path.get(path).unwrap_or_else(|| panic!("{path} not imported"));
            assert_eq!(track.metadata_status, MetadataStatus::Pending);
            let tags = &file["tags"];
            if let Some(title) = tags["title"].as_str() {
                assert_eq!(track.title, title, "{path}");
            }
            if let Some(artist) = tags["artist"].as_str() {
                assert_eq!(track.artist_name.as_deref(), Some(artist), "{path}");
            }
            if let Some(album) = tags["album"].as_str() {
                assert_eq!(track.album_title.as_deref(), Some(album), "{path}");
            }
            if let Some(year) = tags["year"].as_i64() {
                assert_eq!(track.year, Some(year), "{path}");
            }
            if let Some(number) = tags["track"].as_i64() {
                assert_eq!(track.track_number, Some(number), "{path}");
            }
            let expected_ms = file["audio"]["duration_s"].as_f64().unwrap() * 1000.0;
            let duration_ms = track.duration_ms.unwrap() as f64;
            assert!((duration_ms - expected_ms).abs() < 1500.0, "{path}: {duration_ms} vs {expected_ms}");
            assert!(musiclib_core::testing::blob_exists(&library, &track.storage_uri).await, "{path} blob");
        }

        // A second scan imports nothing.
        let again = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(again.imported, 0);
        assert_eq!(again.already_imported, report.imported);
        assert_eq!(again.failed, expect("corrupt"));

        // Enrichment from tags: tagged tracks become enriched, untagged ones failed with a reason.
        musiclib_core::testing::drain_jobs(&library).await;
        let tracks = library
            .catalog().list_tracks(&TrackFilter { source: Some(Source::LocalFolder), ..Default::default() }, None, Page::new(Some(200), None).unwrap())
            .await
            .unwrap();
        for track in &tracks.items {
            assert_ne!(track.metadata_status, MetadataStatus::Pending, "{}", track.source_id);
            assert!(track.enriched_at.is_some());
            if track.metadata_status == MetadataStatus::Failed {
                assert!(track.metadata_error.as_deref().is_some_and(|error| !error.is_empty()));
            }
        }
        let enriched = tracks.items.iter().filter(|track| track.metadata_status == MetadataStatus::Enriched).count();
        assert!(enriched >= 25, "only {enriched} enriched");
    }
}
