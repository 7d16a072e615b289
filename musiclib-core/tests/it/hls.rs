//! HLS: a cold track's playlist at once, segments produced ahead of the player and never
//! served partial, one encoder however many requests arrive, publication whole, eviction and
//! deletion.

use std::os::unix::fs::PermissionsExt;

use crate::backend_test;
use crate::support::*;
use musiclib_core::media::hls::{parse_segment_name, segment_name};

/// 187 s of FLAC: 32 segments, the last one 1 s long.
const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";

/// An ffmpeg that logs each invocation's arguments before running the real one.
fn counting_ffmpeg(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = dir.join("calls.log");
    let script = dir.join("ffmpeg");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec ffmpeg \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

fn segment_uris(playlist: &str) -> Vec<String> {
    playlist
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// A complete MPEG-TS file: whole 188-byte packets, each starting with the sync byte.
fn assert_whole_ts(bytes: &[u8], what: &str) {
    assert!(!bytes.is_empty(), "{what} is empty");
    assert_eq!(bytes.len() % 188, 0, "{what} is not whole TS packets");
    assert!(
        bytes.chunks(188).all(|packet| packet[0] == 0x47),
        "{what} lost sync"
    );
}

async fn published(library: &musiclib_core::Library, id: &str) -> Option<(String, i64)> {
    sqlx::query_as(
        "SELECT storage_uri, size_bytes FROM renditions WHERE track_id = $1 AND kind = 'hls'",
    )
    .bind(id)
    .fetch_optional(musiclib_core::testing::pool(library))
    .await
    .unwrap()
}

backend_test! {
    #[services]
    async fn a_cold_track_streams_at_once_and_is_published_whole(backend: Backend) {
        let corpus = corpus();
        let tools = tempfile::tempdir().unwrap();
        let (ffmpeg, calls) = counting_ffmpeg(tools.path());
        let library = TestLibrary::builder(backend)
            .config(move |config| config.transcoding.ffmpeg = ffmpeg)
            .build()
            .await;
        let alice = user(&library, "alice").await;
        let track = library.ingest().upload_track(&alice, Some("a.flac"), corpus_file(&corpus, FLAC).as_slice()).await.unwrap().track;
        let id = track.id.clone();

        // The playlist comes at once, from the duration, with the token on every segment.
        let playlist = library.media().hls_playlist(&alice, &id, Some("secret-token")).await.unwrap();
        let uris = segment_uris(&playlist);
        assert_eq!(uris.len(), 32, "{playlist}");
        assert!(uris.iter().all(|uri| uri.ends_with(".ts?token=secret-token")), "{playlist}");
        assert!(playlist.contains("#EXT-X-PLAYLIST-TYPE:VOD") && playlist.ends_with("#EXT-X-ENDLIST\n"));

        // Readers racing the encoder: every segment they get is whole, and whatever the
        // stored rendition lists is there in full.
        let names: Vec<String> = (0..uris.len()).map(segment_name).collect();
        let watcher = {
            let (library, id, names) = (library.library.clone(), id.to_string(), names.clone());
            tokio::spawn(async move {
                loop {
                    if let Some((prefix, size)) = published(&library, &id).await {
                        let stored = musiclib_core::testing::blob_bytes(&library, &format!("{prefix}playlist.m3u8")).await;
                        let listed = segment_uris(std::str::from_utf8(&stored).unwrap());
                        assert_eq!(listed, names);
                        let mut total = stored.len() as i64;
                        for name in &listed {
                            let bytes = musiclib_core::testing::blob_bytes(&library, &format!("{prefix}{name}")).await;
                            assert_whole_ts(&bytes, name);
                            total += bytes.len() as i64;
                        }
                        assert_eq!(total, size);
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            })
        };
        let last = names.last().unwrap().clone();
        let requests = (0..8).map(|i| if i % 2 == 0 { names[0].clone() } else { last.clone() });
        let answers = futures::future::join_all(requests.map(|name| {
            let (library, id, alice) = (library.library.clone(), id.clone(), alice.clone());
            async move { (name.clone(), library.media().hls_segment(&alice, &id, &name).await.unwrap()) }
        }))
        .await;
        let live: std::collections::HashMap<String, bytes::Bytes> = answers.iter().cloned().collect();
        for (name, bytes) in &answers {
            assert_whole_ts(bytes, name);
            assert_eq!(bytes, &live[name], "{name} differs between concurrent readers");
        }

        // Published whole; the live segments are the stored ones, byte for byte.
        // Joins the encode the stream requests started (it does not start another).
        library.media().build_hls(&id).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(60), watcher).await.expect("published").unwrap();
        for (name, bytes) in &live {
            assert_eq!(&library.media().hls_segment(&alice, &id, name).await.unwrap(), bytes, "{name}");
        }
        let encodes = std::fs::read_to_string(&calls).unwrap().lines().filter(|line| line.contains("-segment_times")).count();
        assert_eq!(encodes, 1, "one encoder for every request");
        // The stored playlist carries the measured lengths, still with the caller's token.
        let stored = library.media().hls_playlist(&alice, &id, Some("t2")).await.unwrap();
        assert_eq!(segment_uris(&stored).len(), 32);
        assert!(segment_uris(&stored).iter().all(|uri| uri.ends_with("?token=t2")));
        let total: f64 = stored.lines().filter_map(|line| line.strip_prefix("#EXTINF:")).map(|rest| rest.trim_end_matches(',').parse::<f64>().unwrap()).sum();
        assert!((total - 187.0).abs() < 0.1, "{total}");
        assert_eq!(std::fs::read_dir(musiclib_core::testing::staging_dir(&library)).unwrap().count(), 0, "staging is cleaned");

        // Bad names are refused before anything is read.
        for bad in ["../seg-00000.ts", "seg-1.ts", "playlist.m3u8"] {
            assert!(parse_segment_name(bad).is_err());
            let error = library.media().hls_segment(&alice, &id, bad).await.unwrap_err();
            assert_eq!(error.code(), "validation_error", "{bad}");
        }
        let error = library.media().hls_segment(&alice, &id, "seg-00099.ts").await.unwrap_err();
        assert_eq!(error.code(), "not_found");

        // Evicted like any rendition: gone from storage, and the next request is cold again.
        library.media().evict_renditions(0).await.unwrap();
        assert!(published(&library, id.as_str()).await.is_none());
        assert!(musiclib_core::testing::blob_keys(&library, &format!("renditions/{id}")).await.is_empty());

        // Deleting the track removes a rebuilt rendition.
        assert!(library.media().build_hls(&id).await.unwrap());
        assert!(!musiclib_core::testing::blob_keys(&library, &format!("renditions/{id}/hls")).await.is_empty());
        library.delete_track(&alice, &id).await.unwrap();
        assert!(musiclib_core::testing::blob_keys(&library, &format!("renditions/{id}")).await.is_empty());
    }
}

backend_test! {
    #[services]
    async fn without_ffmpeg_hls_is_unavailable(backend: Backend) {
        let corpus = corpus();
        let library = TestLibrary::builder(backend)
            .config(|config| config.transcoding.ffmpeg = "/nonexistent/ffmpeg".into())
            .build()
            .await;
        let alice = user(&library, "alice").await;
        let track = library.ingest().upload_track(&alice, Some("a.flac"), corpus_file(&corpus, FLAC).as_slice()).await.unwrap().track;
        for error in [
            library.media().hls_playlist(&alice, &track.id, None).await.unwrap_err(),
            library.media().hls_segment(&alice, &track.id, "seg-00000.ts").await.unwrap_err(),
        ] {
            assert_eq!(error.code(), "transcoder_unavailable");
        }
    }
}
