//! Local-folder import against the generated corpus.

use std::collections::HashMap;
use std::path::Path;

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

        // Duplicates: exactly the manifest's pairs, each for its reason, the better copy kept.
        let caller = user(&library, "reader").await;
        let groups = library.maintenance().duplicates(&caller, Page::new(Some(200), None).unwrap()).await.unwrap();
        let path_of: HashMap<String, String> = tracks
            .items
            .iter()
            .map(|track| (track.id.to_string(), format!("library/{}", track.source_id)))
            .collect();
        let mut found: Vec<(Vec<String>, Vec<&str>, String)> = groups
            .items
            .iter()
            .map(|group| {
                let mut paths: Vec<String> = group.tracks.iter().map(|track| path_of[&track.id.to_string()].clone()).collect();
                paths.sort();
                let reasons = group.reasons.iter().map(|reason| reason.as_str()).collect();
                (paths, reasons, path_of[&group.keeper.to_string()].clone())
            })
            .collect();
        found.sort();
        let mut expected: Vec<(Vec<String>, &str)> = manifest["fingerprint_similarity"]["duplicate_pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| {
                let mut paths = vec![pair["a"].as_str().unwrap().to_string(), pair["b"].as_str().unwrap().to_string()];
                paths.sort();
                (paths, pair["kind"].as_str().unwrap())
            })
            .collect();
        expected.sort();
        assert_eq!(
            found.iter().map(|(paths, _, _)| paths.clone()).collect::<Vec<_>>(),
            expected.iter().map(|(paths, _)| paths.clone()).collect::<Vec<_>>(),
            "{found:#?}"
        );
        for ((paths, reasons, keeper), (_, kind)) in found.iter().zip(&expected) {
            match *kind {
                "identical-bytes" => assert!(reasons.contains(&"identical_bytes"), "{paths:?}: {reasons:?}"),
                _ => assert!(reasons.contains(&"same_audio"), "{paths:?} ({kind}): {reasons:?}"),
            }
            // Lossless over lossy.
            let lossless: Vec<&String> = paths.iter().filter(|path| path.ends_with(".flac")).collect();
            if lossless.len() == 1 {
                assert_eq!(keeper, lossless[0], "{paths:?}");
            }
        }
    }
}

/// Writes a corpus file (`source`, relative to the corpus) at `name` under `root`.
fn put_from_corpus(root: &Path) -> impl Fn(&str, &str) + '_ {
    let corpus = corpus();
    move |name, source| {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, corpus_file(&corpus, source)).unwrap();
    }
}

/// Tracks of the local folder by their relative path.
async fn folder_tracks(library: &TestLibrary) -> HashMap<String, musiclib_core::domain::Track> {
    library
        .catalog()
        .list_tracks(
            &TrackFilter {
                source: Some(Source::LocalFolder),
                ..Default::default()
            },
            None,
            Page::new(Some(200), None).unwrap(),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|track| (track.source_id.clone(), track))
        .collect()
}

backend_test! {
    #[services]
    async fn rescan_follows_changes_in_the_folder(backend: Backend) {
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path().to_path_buf();
        let put = put_from_corpus(&root);
        let song = |n: u32| match n {
            1 => "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
            2 => "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
            3 => "library/Los Señores del Ritmo/Canción de Mañana (2021)/03 - Ñandú Bailarín.mp3",
            _ => "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
        };
        put("edited.mp3", song(1));
        put("retagged.mp3", song(2));
        put("deleted.mp3", song(3));
        put("moving.flac", song(4));
        let import = root.clone();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(import))
            .build()
            .await;
        let alice = user(&library, "alice").await;
        let admin = musiclib_core::auth::Caller {
            user: library.accounts().create_user("root", "root-password", true).await.unwrap(),
        };
        let first = library.ingest().scan_local_folder(|_| {}).await.expect("scan");
        assert_eq!(first.imported, 4, "{first:#?}");
        let before = folder_tracks(&library).await;

        // A manual edit, and a play of the track whose file will vanish.
        library
            .catalog()
            .set_track_metadata(&admin, &before["edited.mp3"].id, &musiclib_core::catalog::TrackMetadata {
                title: "Mine".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let deleted_id = before["deleted.mp3"].id.clone();
        library
            .social()
            .record_play(&alice, musiclib_core::social::NewPlay {
                track_id: deleted_id.to_string(),
                played_at: musiclib_core::Timestamp::from_micros(1_000_000),
                seconds_played: Some(120.0),
                client_event_id: "play-1".into(),
            })
            .await
            .unwrap();
        library
            .social()
            .record_like(&alice, musiclib_core::social::NewLike {
                track_id: deleted_id.to_string(),
                liked: true,
                client_event_id: "like-1".into(),
                event_time: musiclib_core::Timestamp::from_micros(1_000_000),
            })
            .await
            .unwrap();
        let playlist = library
            .playlists()
            .create(&alice, musiclib_core::playlists::NewPlaylist {
                name: "Keep".into(),
                description: None,
                public: false,
                track_ids: vec![deleted_id.clone()],
                rules: None,
            })
            .await
            .unwrap();

        // An unchanged rescan changes nothing.
        let unchanged = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(
            (unchanged.imported, unchanged.changed, unchanged.missing, unchanged.relinked),
            (0, 0, 0, 0),
            "{unchanged:#?}"
        );
        assert_eq!(unchanged.already_imported, 4);

        // Two files rewritten with other audio, one deleted, one moved.
        put("edited.mp3", song(3));
        put("retagged.mp3", song(3));
        std::fs::remove_file(root.join("deleted.mp3")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::rename(root.join("moving.flac"), root.join("sub/moved.flac")).unwrap();
        let second = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(second.changed, 2, "{second:#?}");
        assert_eq!(second.missing, 1, "{second:#?}");
        assert_eq!(second.relinked, 1, "{second:#?}");
        assert_eq!(second.imported, 0, "{second:#?}");
        assert!(second.warning.is_none());

        let after = folder_tracks(&library).await;
        assert_eq!(after.len(), 4);
        // The manual edit is kept; the other re-read file shows its new tags.
        let edited = &after["edited.mp3"];
        assert_eq!(edited.id, before["edited.mp3"].id);
        assert_eq!(edited.title, "Mine");
        assert_ne!(edited.size_bytes, before["edited.mp3"].size_bytes);
        let retagged = &after["retagged.mp3"];
        assert_eq!(retagged.id, before["retagged.mp3"].id);
        assert_eq!(retagged.title, "Ñandú Bailarín");
        assert_eq!(retagged.size_bytes, before["deleted.mp3"].size_bytes);
        assert_eq!(
            musiclib_core::testing::blob_bytes(&library, &retagged.storage_uri).await.len() as i64,
            retagged.size_bytes.unwrap()
        );
        // The vanished file's track stays, missing, with its play.
        let deleted = &after["deleted.mp3"];
        assert_eq!(deleted.id, deleted_id);
        assert_eq!(deleted.availability.as_str(), "missing");
        let history = library.social().history(&alice, Page::default()).await.unwrap();
        assert_eq!(history.items.len(), 1);
        let likes = library.social().liked_tracks(&alice, Page::default()).await.unwrap();
        assert_eq!(likes.items.len(), 1);
        assert_eq!(likes.items[0].track_id, deleted_id.to_string());
        let kept = library.playlists().get(&alice, &playlist.id).await.unwrap();
        assert_eq!(kept.track_ids, vec![deleted_id.clone()]);
        // The moved file is the same track at its new path.
        let moved = &after["sub/moved.flac"];
        assert_eq!(moved.id, before["moving.flac"].id);
        assert_eq!(moved.availability.as_str(), "available");
        assert!(!after.contains_key("moving.flac"));

        // The stored copy of a file still in the folder is lost: cleanup marks its track
        // missing, and the next rescan stores the file again before it is available.
        musiclib_core::testing::delete_blob(&library, &retagged.storage_uri).await;
        let cleanup = library.maintenance().start_cleanup(&admin, false).await.unwrap();
        musiclib_core::testing::drain_jobs(&library).await;
        let cleanup = library.jobs().get(&admin, &cleanup).await.unwrap();
        assert_eq!(cleanup.state, musiclib_core::jobs::JobState::Succeeded, "{cleanup:?}");
        assert_eq!(cleanup.result.unwrap()["missing_tracks"], 1);
        assert_eq!(library.catalog().get_track(&retagged.id).await.unwrap().availability.as_str(), "missing");

        // The files are back: available again, the lost copy stored again.
        put("deleted.mp3", song(3));
        let third = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(third.restored, 2, "{third:#?}");
        let back = folder_tracks(&library).await;
        assert_eq!(back["deleted.mp3"].availability.as_str(), "available");
        assert_eq!(back["retagged.mp3"].availability.as_str(), "available");
        assert_eq!(back["retagged.mp3"].title, "Ñandú Bailarín");
        assert_eq!(
            musiclib_core::testing::blob_bytes(&library, &back["retagged.mp3"].storage_uri).await.len() as i64,
            back["retagged.mp3"].size_bytes.unwrap()
        );

        // An emptied folder (an unmounted disk) marks nothing missing, and says why.
        for entry in std::fs::read_dir(&root).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                std::fs::remove_dir_all(path).unwrap();
            } else {
                std::fs::remove_file(path).unwrap();
            }
        }
        let empty = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(empty.missing, 0, "{empty:#?}");
        assert!(empty.warning.as_deref().is_some_and(|warning| warning.contains("unmounted")), "{empty:#?}");
        assert!(folder_tracks(&library).await.values().all(|track| track.availability.as_str() == "available"));
    }
}

backend_test! {
    #[services]
    async fn a_rescan_walked_in_batches_tells_moves_from_copies(backend: Backend) {
        // The walk streams in batches of 512 files: a move is told from a new file while the
        // old path is still ahead in the walk, and the counts add up across batches.
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path().to_path_buf();
        let put = put_from_corpus(&root);
        // (A name with quotes, a backslash, braces and a comma: the files of a batch are
        // looked up as one bound list.)
        let kept = r#"z/kept "q" \ {b,c}.mp3"#;
        put("z/moving.flac", "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac");
        put(kept, "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3");
        put("z/gone.mp3", "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3");
        std::fs::create_dir_all(root.join("m")).unwrap();
        for n in 0..1200 {
            std::fs::write(root.join(format!("m/{n:04}.txt")), b"notes").unwrap();
        }
        let import = root.clone();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(import))
            .build()
            .await;
        let mut reports = Vec::new();
        let first = library
            .ingest()
            .scan_local_folder(|report| reports.push(report.clone()))
            .await
            .expect("scan");
        assert_eq!((first.seen, first.skipped, first.imported), (1203, 1200, 3), "{first:#?}");
        // Progress came batch by batch, never going back.
        assert!(reports.iter().filter(|report| !report.done).count() >= 3, "{reports:#?}");
        assert!(reports.windows(2).all(|pair| pair[0].seen <= pair[1].seen), "{reports:#?}");
        let before = folder_tracks(&library).await;

        // Moved to a path walked 1,200 files before its old one; copied; deleted.
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::rename(root.join("z/moving.flac"), root.join("a/moved.flac")).unwrap();
        std::fs::copy(root.join(kept), root.join("a/copy.mp3")).unwrap();
        std::fs::remove_file(root.join("z/gone.mp3")).unwrap();
        let second = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(
            (second.seen, second.relinked, second.imported, second.missing, second.already_imported),
            (1203, 1, 1, 1, 1),
            "{second:#?}"
        );
        let after = folder_tracks(&library).await;
        assert_eq!(after.len(), 4);
        assert_eq!(after["a/moved.flac"].id, before["z/moving.flac"].id);
        assert!(!after.contains_key("z/moving.flac"));
        assert_eq!(after[kept].id, before[kept].id);
        assert_ne!(after["a/copy.mp3"].id, before[kept].id);
        assert_eq!(after["a/copy.mp3"].availability.as_str(), "available");
        assert_eq!(after["z/gone.mp3"].availability.as_str(), "missing");

        // Nothing changed since: nothing to do.
        let third = library.ingest().scan_local_folder(|_| {}).await.expect("rescan");
        assert_eq!(
            (third.imported, third.changed, third.missing, third.relinked, third.already_imported),
            (0, 0, 0, 0, 3),
            "{third:#?}"
        );
    }
}

backend_test! {
    #[services]
    async fn long_tags_are_cut_and_one_refused_file_never_stops_its_batch(backend: Backend) {
        let corpus = corpus();
        let folder = tempfile::tempdir().unwrap();
        let sources = [
            "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
            "library/Incoming/Aurora Lane - Polar Drift.mp3",
            "library/Los Señores del Ritmo/Canción de Mañana (2021)/04 - Adiós, Verano.mp3",
            "library/Various Artists/Summer Mix 2022/CD 1/01 - Sunset Boulevard.ogg",
        ];
        for (index, source) in sources.iter().enumerate() {
            let extension = Path::new(source).extension().unwrap().to_str().unwrap();
            let path = folder.path().join(format!("{index}.{extension}"));
            std::fs::copy(corpus.join(source), &path).unwrap();
            // 2,000 characters of four-byte letters (no two alike: PostgreSQL cannot compress
            // them): a title and an artist far past what an index row holds.
            let long: String = (0..2000u32).map(|at| char::from_u32(0x1D400 + (at * 7919) % 900).unwrap_or('x')).collect();
            let title = match index {
                2 => "Poison".to_string(),
                _ => format!("{index} {long}"),
            };
            set_text_tags(&path, &title, &long);
        }
        let root = folder.path().to_path_buf();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(root))
            .build()
            .await;
        // The database refuses one of the files (a trigger, as a constraint of its own would).
        let refuse = match backend {
            Backend::Embedded => vec![
                "CREATE TRIGGER poison BEFORE INSERT ON tracks WHEN NEW.title = 'Poison'
                 BEGIN SELECT RAISE(ABORT, 'poisoned row'); END",
            ],
            Backend::ScaleOut => vec![
                "CREATE FUNCTION poison() RETURNS trigger AS $$ BEGIN
                     IF NEW.title = 'Poison' THEN RAISE EXCEPTION 'poisoned row'; END IF;
                     RETURN NEW; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER poison BEFORE INSERT ON tracks FOR EACH ROW EXECUTE FUNCTION poison()",
            ],
        };
        for statement in refuse {
            musiclib_core::testing::execute(&library, statement, &[]).await;
        }
        let report = library.ingest().scan_local_folder(|_| {}).await.expect("the scan goes on");
        assert_eq!(report.imported, 3, "{report:#?}");
        assert_eq!(report.failed, 1, "{report:#?}");
        assert_eq!(report.errors[0].path, "2.mp3", "{report:#?}");
        let tracks = folder_tracks(&library).await;
        assert_eq!(tracks.len(), 3);
        for track in tracks.values() {
            assert_eq!(track.title.chars().count(), musiclib_core::text::MAX_TEXT_CHARS, "{}", track.source_id);
            let artist = track.artist_name.as_deref().unwrap();
            assert_eq!(artist.chars().count(), musiclib_core::text::MAX_TEXT_CHARS);
        }
        // The refused file's blob did not stay behind.
        let blobs = musiclib_core::testing::blob_keys(&library, "audio/").await;
        assert_eq!(blobs.len(), 3, "{blobs:?}");
        // A second scan tries the refused file again, and only it.
        let again = library.ingest().scan_local_folder(|_| {}).await.expect("the scan goes on");
        assert_eq!((again.imported, again.failed, again.already_imported), (0, 1, 3), "{again:#?}");
    }
}

/// Sets the title and artist (and album artist, album) tags of the file at `path`.
fn set_text_tags(path: &Path, title: &str, artist: &str) {
    use lofty::config::WriteOptions;
    use lofty::prelude::*;
    use lofty::tag::Tag;
    let mut tagged = lofty::read_from_path(path).unwrap();
    if tagged.primary_tag().is_none() {
        tagged.insert_tag(Tag::new(tagged.primary_tag_type()));
    }
    let tag = tagged.primary_tag_mut().unwrap();
    tag.set_title(title.to_string());
    tag.set_artist(artist.to_string());
    tag.set_album(artist.to_string());
    tag.save_to_path(path, WriteOptions::default()).unwrap();
}
