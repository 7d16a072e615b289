//! Opus renditions: a miss queues one build however many requests miss, the build is
//! published whole, hits are stamped for the LRU, eviction, deletion.

use crate::backend_test;
use crate::support::*;
use musiclib_core::media::Quality;

const SHORT_MP3: &str = "library/Incoming/untitled.mp3";
const SHORT_WAV: &str = "library/Unsorted/voice memo 2024-03-01.wav";

async fn transcode_jobs(library: &musiclib_core::Library) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'transcode_track'")
        .fetch_one(musiclib_core::testing::pool(library))
        .await
        .unwrap()
}

backend_test! {
    #[services]
    async fn a_miss_builds_once_then_hits(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::new(backend).await;
        assert!(library.media().transcoder_available(), "ffmpeg is installed by the test command");
        let alice = user(&library, "alice").await;
        let track = library.ingest().upload_track(&alice, Some("a.mp3"), corpus_file(&corpus, SHORT_MP3).as_slice()).await.unwrap().track;

        // Ten players miss at once: each is told to play the original, one job is queued.
        let misses = futures::future::join_all((0..10).map(|_| library.media().rendition_for_stream(&track.id, Quality::Medium))).await;
        assert!(misses.iter().all(|miss| matches!(miss, Ok(None))));
        assert_eq!(transcode_jobs(&library).await, 1);

        musiclib_core::testing::drain_jobs(&library).await;
        let hit = library.media().rendition_for_stream(&track.id, Quality::Medium).await.unwrap().expect("built");
        assert_eq!(hit.mime_type, "audio/ogg");
        assert_eq!(hit.key, format!("renditions/{}/medium.opus", track.id));
        let bytes = musiclib_core::testing::blob_bytes(&library, &hit.key).await;
        assert_eq!(bytes.len() as u64, hit.size);
        assert!(bytes.starts_with(b"OggS") && bytes.windows(8).any(|w| w == b"OpusHead"), "Opus in Ogg");
        // No job for a hit.
        assert_eq!(transcode_jobs(&library).await, 1);
        // Building again is a no-op (idempotent).
        assert!(library.media().build_renditions(&track.id, &[Quality::Medium]).await.unwrap().is_empty());
        // Nothing left in staging.
        assert_eq!(std::fs::read_dir(musiclib_core::testing::staging_dir(&library)).unwrap().count(), 0);

        // Deleting the track removes its renditions.
        library.delete_track(&alice, &track.id).await.unwrap();
        assert!(musiclib_core::testing::blob_keys(&library, &format!("renditions/{}", track.id)).await.is_empty());
    }
}

backend_test! {
    #[services]
    async fn the_least_recently_used_rendition_is_evicted(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let first = library.ingest().upload_track(&alice, Some("a.mp3"), corpus_file(&corpus, SHORT_MP3).as_slice()).await.unwrap().track;
        let second = library.ingest().upload_track(&alice, Some("b.wav"), corpus_file(&corpus, SHORT_WAV).as_slice()).await.unwrap().track;
        library.media().build_renditions(&first.id, &[Quality::Low]).await.unwrap();
        library.media().build_renditions(&second.id, &[Quality::Low]).await.unwrap();
        // Play the first again: the second is now the least recently used.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        let kept = library.media().rendition_for_stream(&first.id, Quality::Low).await.unwrap().unwrap();

        library.media().evict_renditions(kept.size).await.unwrap();
        assert!(library.media().rendition_for_stream(&first.id, Quality::Low).await.unwrap().is_some());
        assert!(library.media().rendition_for_stream(&second.id, Quality::Low).await.unwrap().is_none(), "evicted");
        assert!(musiclib_core::testing::blob_keys(&library, &format!("renditions/{}", second.id)).await.is_empty());
    }
}

backend_test! {
    #[services]
    async fn without_ffmpeg_originals_still_play(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::builder(backend)
            .config(|config| config.transcoding.ffmpeg = "/nonexistent/ffmpeg".into())
            .build()
            .await;
        assert!(!library.media().transcoder_available());
        assert!(!library.health().await.transcoder_available);
        let alice = user(&library, "alice").await;
        let track = library.ingest().upload_track(&alice, Some("a.mp3"), corpus_file(&corpus, SHORT_MP3).as_slice()).await.unwrap().track;
        // Quality falls back to the original, and no job is queued that could only fail.
        assert!(library.media().rendition_for_stream(&track.id, Quality::High).await.unwrap().is_none());
        assert_eq!(transcode_jobs(&library).await, 0);
        let optimize = library.media().request_optimize(&track.id, &alice.user.id).await.unwrap_err();
        assert_eq!(optimize.kind(), musiclib_core::ErrorKind::Unavailable);
        assert!(optimize.to_string().contains("ffmpeg"));
        // The original streams.
        let audio = library.media().track_audio(&track.id).await.unwrap();
        assert_eq!(audio.mime_type, "audio/mpeg");
    }
}

backend_test! {
    #[services]
    async fn the_cache_keeps_to_its_bound_by_itself(backend: Backend) {
        let corpus = corpus();
        // Measure the two renditions once, on a cache without a bound worth the name.
        let sizes = {
            let library = TestLibrary::new(backend).await;
            let alice = user(&library, "alice").await;
            let mut sizes = Vec::new();
            for (name, file) in [("a.mp3", SHORT_MP3), ("b.wav", SHORT_WAV)] {
                let track = library.ingest().upload_track(&alice, Some(name), corpus_file(&corpus, file).as_slice()).await.unwrap().track;
                library.media().build_renditions(&track.id, &[Quality::Low]).await.unwrap();
                sizes.push(library.media().rendition_for_stream(&track.id, Quality::Low).await.unwrap().unwrap().size);
            }
            sizes
        };
        // RENDITION_CACHE_MAX_BYTES one byte short of both: building the second evicts the
        // first, with no one asking.
        let bound = sizes[0] + sizes[1] - 1;
        let library = TestLibrary::builder(backend)
            .config(move |config| config.transcoding.rendition_cache_max_bytes = bound)
            .build()
            .await;
        let alice = user(&library, "alice").await;
        let first = library.ingest().upload_track(&alice, Some("a.mp3"), corpus_file(&corpus, SHORT_MP3).as_slice()).await.unwrap().track;
        let second = library.ingest().upload_track(&alice, Some("b.wav"), corpus_file(&corpus, SHORT_WAV).as_slice()).await.unwrap().track;
        library.media().build_renditions(&first.id, &[Quality::Low]).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        library.media().build_renditions(&second.id, &[Quality::Low]).await.unwrap();
        assert!(library.media().rendition_for_stream(&first.id, Quality::Low).await.unwrap().is_none(), "the older one was evicted");
        assert!(library.media().rendition_for_stream(&second.id, Quality::Low).await.unwrap().is_some());
        assert!(musiclib_core::testing::blob_keys(&library, &format!("renditions/{}", first.id)).await.is_empty());
    }
}
