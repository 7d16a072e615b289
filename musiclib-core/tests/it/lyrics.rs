//! Lyrics from the files themselves: tags written here with lofty (ID3v2 SYLT and USLT, two
//! USLT languages, Vorbis LYRICS and UNSYNCEDLYRICS, MP4 ©lyr) and sidecar files next to
//! local-folder tracks, in their order (embedded, then sidecar, then LRCLIB: a mock LRCLIB
//! that has lyrics for everything is asked only for the track with neither). The LRCLIB
//! source and the cache rules are tested over HTTP (`musiclib-http/tests/it/lyrics.rs`).

use std::path::Path;

use lofty::config::{ParseOptions, WriteOptions};
use lofty::file::{AudioFile, TaggedFileExt};
use lofty::id3::v2::{
    BinaryFrame, Frame, FrameId, Id3v2Tag, SyncTextContentType, SynchronizedTextFrame,
    TimestampFormat, UnsynchronizedTextFrame,
};
use lofty::tag::{ItemKey, TagExt};
use lofty::TextEncoding;
use musiclib_core::domain::Track;
use musiclib_core::lyrics::{LyricsSource, LyricsStatus};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::backend_test;
use crate::support::*;

const MP3S: [&str; 4] = [
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
    "library/Incoming/Aurora Lane - Polar Drift.mp3",
    "library/Incoming/untitled.mp3",
];
const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const OGG: &str = "library/Various Artists/Summer Mix 2022/CD 1/01 - Sunset Boulevard.ogg";
const M4A: &str = "library/Mira Kowalczyk/Łódź Sessions (2018)/01 - Żółta Łódka.m4a";

fn with_id3v2(path: &Path, frames: Vec<Frame<'static>>) {
    let mut file = lofty::mpeg::MpegFile::read_from(
        &mut std::fs::File::open(path).unwrap(),
        ParseOptions::new(),
    )
    .unwrap();
    if file.id3v2().is_none() {
        file.set_id3v2(Id3v2Tag::new());
    }
    let tag = file.id3v2_mut().unwrap();
    for frame in frames {
        tag.insert(frame);
    }
    file.save_to_path(path, WriteOptions::default()).unwrap();
}

fn uslt(text: &str) -> Frame<'static> {
    uslt_in(*b"eng", "", text)
}

fn uslt_in(language: [u8; 3], description: &str, text: &str) -> Frame<'static> {
    Frame::UnsynchronizedText(UnsynchronizedTextFrame::new(
        TextEncoding::UTF8,
        language,
        description.to_string(),
        text.to_string(),
    ))
}

/// An LRCLIB answer of `shared/fixtures/lrclib`.
fn lrclib_fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/lrclib")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn sylt(format: TimestampFormat, lines: &[(u32, &str)]) -> Frame<'static> {
    let frame = SynchronizedTextFrame::new(
        TextEncoding::UTF8,
        *b"spa",
        format,
        SyncTextContentType::Lyrics,
        None,
        lines
            .iter()
            .map(|(at, text)| (*at, text.to_string()))
            .collect(),
    );
    let bytes = frame.as_bytes(WriteOptions::default()).unwrap();
    Frame::Binary(BinaryFrame::new(FrameId::Valid("SYLT".into()), bytes))
}

fn with_item(path: &Path, key: ItemKey, text: &str) {
    let mut tagged = lofty::read_from_path(path).unwrap();
    let tag = match tagged.primary_tag_mut() {
        Some(tag) => tag,
        None => {
            let kind = tagged.primary_tag_type();
            tagged.insert_tag(lofty::tag::Tag::new(kind));
            tagged.primary_tag_mut().unwrap()
        }
    };
    assert!(tag.insert_text(key, text.to_string()));
    tag.save_to_path(path, WriteOptions::default()).unwrap();
}

backend_test! {
    #[services]
    async fn lyrics_come_from_tags_then_sidecars(backend: Backend) {
        let corpus = corpus();
        let import = tempfile::tempdir().unwrap();
        let copy = |from: &str, to: &str| {
            let path = import.path().join(to);
            std::fs::write(&path, corpus_file(&corpus, from)).unwrap();
            path
        };
        // SYLT in milliseconds beside a USLT: the synced frame wins, with its language.
        let sylt_ms = copy(MP3S[0], "sylt-ms.mp3");
        with_id3v2(&sylt_ms, vec![
            uslt("Plain words"),
            sylt(TimestampFormat::MS, &[(1_000, "Uno"), (2_500, "\nDos"), (4_000, "Tres")]),
        ]);
        // SYLT in MPEG frames, converted with the frame length; and a sidecar that loses.
        let sylt_frames = copy(MP3S[1], "sylt-frames.mp3");
        with_id3v2(&sylt_frames, vec![sylt(TimestampFormat::MPEG, &[(100, "Frame one hundred")])]);
        std::fs::write(import.path().join("sylt-frames.lrc"), "[00:01.00] the sidecar loses\n").unwrap();
        // USLT with LRC stamps counts as synced.
        let uslt_lrc = copy(MP3S[2], "uslt-lrc.mp3");
        with_id3v2(&uslt_lrc, vec![uslt("[ar:Aurora Lane]\n[00:12.40] White horizon\n[00:18.95] Only the hum\n")]);
        // Vorbis LYRICS (FLAC), UNSYNCEDLYRICS (Ogg), MP4 ©lyr with stamps.
        with_item(&copy(FLAC, "vorbis.flac"), ItemKey::Lyrics, "First light\non the water");
        with_item(&copy(OGG, "unsynced.ogg"), ItemKey::UnsyncLyrics, "Sunset words");
        with_item(&copy(M4A, "mp4.m4a"), ItemKey::Lyrics, "[00:03.50] Żółta łódka\n[00:07.00] płynie");
        // No tags: the sidecar .lrc, else the .txt.
        copy(MP3S[3], "sidecar.mp3");
        std::fs::write(import.path().join("sidecar.lrc"), "\u{feff}[offset:+150]\n[00:02.00] From the sidecar\n[00:05.00][00:09.00] Twice\n").unwrap();
        let txt = copy("library/Los Señores del Ritmo/Canción de Mañana (2021)/03 - Ñandú Bailarín.mp3", "text.mp3");
        std::fs::write(txt.with_extension("txt"), "\n[Chorus: Ñandú]\nOnly a text file  \n\nSecond verse\n\n").unwrap();
        // Two USLT frames, English and Spanish (and a description each): one entry per
        // language, the first read first.
        let languages = copy("library/Los Señores del Ritmo/Canción de Mañana (2021)/04 - Adiós, Verano.mp3", "languages.mp3");
        with_id3v2(&languages, vec![
            uslt_in(*b"eng", "English", "[Verse 1]\nGoodbye, summer\n\n[Chorus: Los Señores]\nSee you in June"),
            uslt_in(*b"spa", "Español", "Adiós, verano\n\nHasta junio"),
        ]);
        // Neither tags nor a sidecar: LRCLIB (the corpus names this file in NFD).
        copy("library/Incoming/Cafe\u{301} Noir \u{2013} Nuit Blanche.mp3", "lrclib.mp3");

        // LRCLIB has lyrics for everything; it is asked only when the files have none.
        let lrclib = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/api/get"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Content-Type", "application/json")
                    .set_body_string(lrclib_fixture("get_plain_only.json")),
            )
            .mount(&lrclib)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/search"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("Content-Type", "application/json")
                    .set_body_string(lrclib_fixture("search_results.json")),
            )
            .mount(&lrclib)
            .await;

        let folder = import.path().to_path_buf();
        let lrclib_url = lrclib.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.local_media_import_path = Some(folder);
                config.enrichment.lrclib_base_url = lrclib_url;
            })
            .build()
            .await;
        let report = library.ingest().scan_local_folder(|_| {}).await.expect("scan");
        assert_eq!(report.imported, 10, "{report:?}");
        let caller = user(&library, "reader").await;
        let tracks = library
            .catalog()
            .list_tracks(&Default::default(), None, musiclib_core::domain::Page::default())
            .await
            .unwrap()
            .items;
        let by_file = |name: &str| -> Track {
            tracks.iter().find(|track| track.source_id == name).unwrap_or_else(|| panic!("{name}")).clone()
        };
        let lyrics = |name: &'static str| {
            let (library, caller, track) = (library.clone(), caller.clone(), by_file(name));
            async move { library.lyrics().get(&caller, &track.id).await.unwrap() }
        };
        let starts = |record: &musiclib_core::lyrics::LyricsRecord| -> Vec<(u64, String)> {
            record.lines.iter().map(|line| (line.start_ms, line.text.clone())).collect()
        };

        let record = lyrics("sylt-ms.mp3").await;
        assert_eq!((record.status, record.source), (LyricsStatus::Found, Some(LyricsSource::Embedded)));
        assert_eq!(starts(&record), vec![(1_000, "Uno".into()), (2_500, "Dos".into()), (4_000, "Tres".into())]);
        assert_eq!(record.plain.as_deref(), Some("Uno\nDos\nTres"));
        assert_eq!(record.language.as_deref(), Some("spa"));

        let frames = by_file("sylt-frames.mp3");
        let record = lyrics("sylt-frames.mp3").await;
        assert_eq!(record.source, Some(LyricsSource::Embedded));
        let rate = frames.sample_rate.unwrap() as u64;
        let per_frame = if rate >= 32_000 { 1152 } else { 576 };
        assert_eq!(starts(&record), vec![(100 * per_frame * 1000 / rate, "Frame one hundred".into())]);

        let record = lyrics("uslt-lrc.mp3").await;
        assert!(record.synced());
        assert_eq!(starts(&record)[1], (18_950, "Only the hum".into()));
        assert_eq!(record.language.as_deref(), Some("eng"));

        let record = lyrics("vorbis.flac").await;
        assert_eq!((record.source, record.synced()), (Some(LyricsSource::Embedded), false));
        assert_eq!(record.plain.as_deref(), Some("First light\non the water"));
        let record = lyrics("unsynced.ogg").await;
        assert_eq!(record.plain.as_deref(), Some("Sunset words"));
        let record = lyrics("mp4.m4a").await;
        assert_eq!(starts(&record), vec![(3_500, "Żółta łódka".into()), (7_000, "płynie".into())]);

        let record = lyrics("sidecar.mp3").await;
        assert_eq!(record.source, Some(LyricsSource::Sidecar));
        assert_eq!(record.offset_ms, 150);
        assert_eq!(
            starts(&record),
            vec![(2_000, "From the sidecar".into()), (5_000, "Twice".into()), (9_000, "Twice".into())]
        );
        let record = lyrics("text.mp3").await;
        assert_eq!((record.source, record.synced()), (Some(LyricsSource::Sidecar), false));
        // A plain text as written: section marks, verse breaks; outer blank lines dropped.
        assert_eq!(record.plain.as_deref(), Some("[Chorus: Ñandú]\nOnly a text file\n\nSecond verse"));

        let record = lyrics("languages.mp3").await;
        assert_eq!((record.source, record.synced()), (Some(LyricsSource::Embedded), false));
        assert_eq!(record.language.as_deref(), Some("eng"));
        assert_eq!(
            record.plain.as_deref(),
            Some("[Verse 1]\nGoodbye, summer\n\n[Chorus: Los Señores]\nSee you in June")
        );
        assert_eq!(record.alternates.len(), 1, "{:?}", record.alternates);
        let spanish = &record.alternates[0];
        assert_eq!(spanish.language.as_deref(), Some("spa"));
        assert_eq!(spanish.plain, "Adiós, verano\n\nHasta junio");
        assert!(!spanish.synced());
        // The SYLT file's USLT is another language (eng beside spa): kept as well.
        let sylt_record = lyrics("sylt-ms.mp3").await;
        assert_eq!(sylt_record.alternates.len(), 1);
        assert_eq!(sylt_record.alternates[0].plain, "Plain words");
        assert_eq!(sylt_record.alternates[0].language.as_deref(), Some("eng"));

        // Only the track with neither tags nor a sidecar reached LRCLIB.
        let record = lyrics("lrclib.mp3").await;
        assert_eq!((record.status, record.source), (LyricsStatus::Found, Some(LyricsSource::Lrclib)));
        let fixture: serde_json::Value = serde_json::from_str(&lrclib_fixture("get_plain_only.json")).unwrap();
        assert_eq!(record.plain.as_deref(), fixture["plainLyrics"].as_str());
        let title = by_file("lrclib.mp3").title;
        let asked = lrclib.received_requests().await.unwrap();
        assert!(!asked.is_empty());
        for request in &asked {
            let params: Vec<(String, String)> = request.url.query_pairs().into_owned().collect();
            assert!(
                params.iter().any(|(key, value)| (key == "track_name" || key == "q") && value.starts_with(&title)),
                "LRCLIB asked for another track than {title:?}: {}", request.url
            );
        }

        // Cached: the record read back equals the one answered (alternates included), and
        // nothing more reached LRCLIB.
        for name in ["sidecar.mp3", "languages.mp3", "sylt-ms.mp3", "text.mp3"] {
            let again = library.lyrics().cached(&by_file(name).id).await.unwrap().unwrap();
            assert_eq!(again, lyrics(name).await, "{name}");
        }
        assert_eq!(lrclib.received_requests().await.unwrap().len(), asked.len());
    }
}

backend_test! {
    #[services]
    async fn sidecars_are_read_only_inside_the_folder_and_within_bounds(backend: Backend) {
        let corpus = corpus();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("jwt_secret");
        std::fs::write(&secret, "[00:01.00] sekrit-signing-key\n").unwrap();
        let import = tempfile::tempdir().unwrap();
        let copy = |from: &str, to: &str| {
            std::fs::write(import.path().join(to), corpus_file(&corpus, from)).unwrap();
        };
        // Sidecars that are links out of the folder: a secret beside the data, the process's
        // environment, an endless device.
        copy(MP3S[0], "secret.mp3");
        std::os::unix::fs::symlink(&secret, import.path().join("secret.lrc")).unwrap();
        copy(MP3S[1], "environ.mp3");
        std::os::unix::fs::symlink("/proc/self/environ", import.path().join("environ.txt")).unwrap();
        copy(MP3S[2], "zero.mp3");
        std::os::unix::fs::symlink("/dev/zero", import.path().join("zero.lrc")).unwrap();
        // A FIFO (an open of it would wait for a writer forever) and a sidecar far too large
        // to be lyrics.
        copy(MP3S[3], "fifo.mp3");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            import.path().join("fifo.lrc"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        copy(FLAC, "huge.flac");
        let mut huge = "[00:01.00] big\n".to_string();
        huge.push_str(&"x".repeat(2 * 1024 * 1024));
        std::fs::write(import.path().join("huge.lrc"), huge).unwrap();
        // A link that stays inside the folder is a sidecar like any other.
        copy(OGG, "inside.ogg");
        std::fs::write(import.path().join("real-lyrics.lrc"), "[00:02.00] Inside the folder\n").unwrap();
        std::os::unix::fs::symlink("real-lyrics.lrc", import.path().join("inside.lrc")).unwrap();

        let lrclib = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&lrclib)
            .await;
        let folder = import.path().to_path_buf();
        let lrclib_url = lrclib.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.local_media_import_path = Some(folder);
                config.enrichment.lrclib_base_url = lrclib_url;
            })
            .build()
            .await;
        let report = library.ingest().scan_local_folder(|_| {}).await.expect("scan");
        assert_eq!(report.imported, 6, "{report:?}");
        let caller = user(&library, "reader").await;
        let tracks = library
            .catalog()
            .list_tracks(&Default::default(), None, musiclib_core::domain::Page::default())
            .await
            .unwrap()
            .items;
        for name in ["secret.mp3", "environ.mp3", "zero.mp3", "fifo.mp3", "huge.flac"] {
            let track = tracks.iter().find(|track| track.source_id == name).unwrap();
            // Each answers at once (no hang on the FIFO or the device) and reads nothing.
            let record = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                library.lyrics().get(&caller, &track.id),
            )
            .await
            .unwrap_or_else(|_| panic!("{name}: the lyrics read hung"))
            .unwrap();
            assert_ne!(record.source, Some(LyricsSource::Sidecar), "{name}: {record:?}");
            let text = format!("{record:?}");
            assert!(!text.contains("sekrit") && !text.contains("PATH="), "{name}: {text}");
        }
        let inside = tracks.iter().find(|track| track.source_id == "inside.ogg").unwrap();
        let record = library.lyrics().get(&caller, &inside.id).await.unwrap();
        assert_eq!(record.source, Some(LyricsSource::Sidecar));
        assert_eq!(record.plain.as_deref(), Some("Inside the folder"));
    }
}
