//! ReplayGain: read from the tags of every format at import and rescan, measured where there
//! are none (against ffmpeg's `ebur128` filter, track and album), never over what the tags
//! said; the measurement's job yields to imports and keeps why a file cannot be measured.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::backend_test;
use crate::support::*;
use musiclib_core::catalog::TrackFilter;
use musiclib_core::domain::{Page, ReplayGain, Source, Track};
use musiclib_core::testing::{drain_jobs, enqueue_raw, queue, write_tag_fields};

const FLAC: &str = "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac";
const FLAC_2: &str = "library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac";
const MP3_V24: &str =
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3";
const MP3_V23: &str = "library/月光オーケストラ/夜明けの歌 (2020)/02 桜の雨.mp3";
const OGG: &str = "library/Various Artists/Summer Mix 2022/CD 1/01 - Sunset Boulevard.ogg";
const OPUS: &str = "library/Opus Collective/Field Recordings & Drones/02 - Static Bloom.opus";
const M4A: &str = "library/Mira Kowalczyk/Łódź Sessions (2018)/04 - Epilog.m4a";
const WAV: &str = "library/Unsorted/field take 01.wav";
const UNTAGGED_MP3: &str = "library/Incoming/untitled.mp3";

/// A copy of corpus file `source` under `dir` as `name`, with `fields` written into its tags.
fn tagged_copy(dir: &Path, name: &str, source: &str, fields: &[(&str, &str)]) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, corpus_file(&corpus(), source)).unwrap();
    if !fields.is_empty() {
        write_tag_fields(&path, fields);
    }
    path
}

/// What the probe reads of a file's ReplayGain.
fn probed(path: &Path) -> ReplayGain {
    musiclib_core::probe::probe_path(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .replay_gain
}

const FULL: [(&str, &str); 4] = [
    ("REPLAYGAIN_TRACK_GAIN", "-6.54 dB"),
    ("REPLAYGAIN_TRACK_PEAK", "0.988553"),
    ("REPLAYGAIN_ALBUM_GAIN", "-7.10 dB"),
    ("REPLAYGAIN_ALBUM_PEAK", "1.012000"),
];

const FULL_GAIN: ReplayGain = ReplayGain {
    track_gain: Some(-6.54),
    track_peak: Some(0.988553),
    album_gain: Some(-7.1),
    album_peak: Some(1.012),
};

/// Every tag format's ReplayGain, in the spellings taggers use, and what is refused.
#[test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
fn replaygain_tags_of_every_format_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let lower: Vec<(String, &str)> = FULL
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), *value))
        .collect();
    let lower: Vec<(&str, &str)> = lower
        .iter()
        .map(|(name, value)| (name.as_str(), *value))
        .collect();

    // Vorbis comments (FLAC, Ogg Vorbis): any case.
    assert_eq!(probed(&tagged_copy(dir, "a.flac", FLAC, &FULL)), FULL_GAIN);
    assert_eq!(probed(&tagged_copy(dir, "b.flac", FLAC, &lower)), FULL_GAIN);
    assert_eq!(probed(&tagged_copy(dir, "a.ogg", OGG, &FULL)), FULL_GAIN);
    // ID3v2 TXXX, named in upper or lower case (foobar2000, mp3gain, rsgain write either).
    assert_eq!(
        probed(&tagged_copy(dir, "a.mp3", MP3_V24, &FULL)),
        FULL_GAIN
    );
    assert_eq!(
        probed(&tagged_copy(dir, "b.mp3", MP3_V23, &lower)),
        FULL_GAIN
    );
    // MP4 freeform ----:com.apple.iTunes:replaygain_* (and in upper case).
    assert_eq!(probed(&tagged_copy(dir, "a.m4a", M4A, &lower)), FULL_GAIN);
    assert_eq!(probed(&tagged_copy(dir, "b.m4a", M4A, &FULL)), FULL_GAIN);

    // Opus: R128 gains, Q7.8 towards -23 LUFS, win over REPLAYGAIN_* gains; peaks are read
    // from REPLAYGAIN_* (R128 has none).
    let opus = tagged_copy(
        dir,
        "a.opus",
        OPUS,
        &[
            ("R128_TRACK_GAIN", "-1234"),
            ("R128_ALBUM_GAIN", "-2560"),
            ("REPLAYGAIN_TRACK_GAIN", "-3.00 dB"),
            ("REPLAYGAIN_TRACK_PEAK", "0.5"),
        ],
    );
    assert_eq!(
        probed(&opus),
        ReplayGain {
            track_gain: Some(-1234.0 / 256.0 + 5.0),
            track_peak: Some(0.5),
            album_gain: Some(-5.0),
            album_peak: None,
        }
    );
    // An Opus file tagged with REPLAYGAIN_* only.
    assert_eq!(probed(&tagged_copy(dir, "b.opus", OPUS, &FULL)), FULL_GAIN);

    // Lenient: a decimal comma, no unit, a plus sign.
    assert_eq!(
        probed(&tagged_copy(
            dir,
            "c.flac",
            FLAC,
            &[
                ("REPLAYGAIN_TRACK_GAIN", "+1,25"),
                ("REPLAYGAIN_TRACK_PEAK", " 0.75 ")
            ]
        )),
        ReplayGain {
            track_gain: Some(1.25),
            track_peak: Some(0.75),
            ..ReplayGain::NONE
        }
    );
    // A bad value is left out, never an error: a bad peak alone, or everything when the
    // track gain is bad (or absurd).
    assert_eq!(
        probed(&tagged_copy(
            dir,
            "d.flac",
            FLAC,
            &[
                ("REPLAYGAIN_TRACK_GAIN", "-2 dB"),
                ("REPLAYGAIN_TRACK_PEAK", "-1"),
                ("REPLAYGAIN_ALBUM_GAIN", "inf dB")
            ]
        )),
        ReplayGain {
            track_gain: Some(-2.0),
            ..ReplayGain::NONE
        }
    );
    for bad in ["NaN dB", "+80 dB", "loud", ""] {
        let path = tagged_copy(
            dir,
            "e.flac",
            FLAC,
            &[
                ("REPLAYGAIN_TRACK_GAIN", bad),
                ("REPLAYGAIN_TRACK_PEAK", "0.9"),
                ("REPLAYGAIN_ALBUM_GAIN", "-3 dB"),
            ],
        );
        assert_eq!(probed(&path), ReplayGain::NONE, "{bad:?}");
    }
    for bad in ["32768", "1.5", "x"] {
        let path = tagged_copy(dir, "c.opus", OPUS, &[("R128_TRACK_GAIN", bad)]);
        assert_eq!(probed(&path), ReplayGain::NONE, "{bad:?}");
    }
    // R128 tags count in Opus files only.
    assert_eq!(
        probed(&tagged_copy(
            dir,
            "f.flac",
            FLAC,
            &[("R128_TRACK_GAIN", "0")]
        )),
        ReplayGain::NONE
    );
    // Files without tags.
    assert_eq!(probed(&corpus().join(WAV)), ReplayGain::NONE);
    assert_eq!(probed(&corpus().join(UNTAGGED_MP3)), ReplayGain::NONE);
}

/// Tracks of the local folder by their relative path.
async fn folder_tracks(library: &TestLibrary) -> HashMap<String, Track> {
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

/// A library importing `folder`.
async fn importing(backend: Backend, folder: &Path) -> TestLibrary {
    let import = folder.to_path_buf();
    TestLibrary::builder(backend)
        .config(move |config| config.local_media_import_path = Some(import))
        .build()
        .await
}

/// Gains measured to 0.01 dB: the loudness they come from, LUFS.
fn loudness(gain: Option<f64>) -> f64 {
    -18.0 - gain.expect("a gain")
}

backend_test! {
    #[services]
    async fn gains_from_tags_are_kept_and_the_others_measured(backend: Backend) {
        let folder = tempfile::tempdir().unwrap();
        let root = folder.path();
        // Two tracks of one album, one tagged; a track without an album.
        tagged_copy(root, "album/tagged.flac", FLAC, &FULL);
        tagged_copy(root, "album/plain.flac", FLAC_2, &[]);
        tagged_copy(root, "single.mp3", UNTAGGED_MP3, &[]);
        let library = importing(backend, root).await;
        let scan = library.ingest().scan_local_folder(|_| {}).await.unwrap();
        assert_eq!(scan.imported, 3, "{scan:#?}");
        let tracks = folder_tracks(&library).await;
        assert_eq!(tracks["album/tagged.flac"].replay_gain, FULL_GAIN);
        assert_eq!(tracks["album/plain.flac"].replay_gain, ReplayGain::NONE);
        let status = library.media().loudness_status().await.unwrap();
        assert_eq!((status.from_tags, status.measured, status.pending), (1, 0, 2), "{status:?}");

        let report = library.media().measure_loudness(10).await.unwrap();
        assert_eq!((report.measured, report.failed), (2, 0), "{report:?}");
        let again = library.media().measure_loudness(10).await.unwrap();
        assert_eq!((again.measured, again.failed), (0, 0), "measured once");
        let tracks = folder_tracks(&library).await;
        // The tags' gains are never measured over.
        assert_eq!(tracks["album/tagged.flac"].replay_gain, FULL_GAIN);
        let plain = tracks["album/plain.flac"].replay_gain;
        let gain = plain.track_gain.unwrap();
        assert!((-30.0..30.0).contains(&gain) && gain != 0.0, "{plain:?}");
        assert!((0.01..=1.5).contains(&plain.track_peak.unwrap()), "{plain:?}");
        // An album with a tagged track gets no measured album gain (its tags say the
        // album's loudness; measuring the rest alone would not).
        assert_eq!((plain.album_gain, plain.album_peak), (None, None));
        // A track without an album has none either.
        let single = tracks["single.mp3"].replay_gain;
        assert!(single.track_gain.is_some() && single.album_gain.is_none(), "{single:?}");
        let status = library.media().loudness_status().await.unwrap();
        assert_eq!((status.from_tags, status.measured, status.pending, status.failed), (1, 2, 0, 0));

        // A file re-tagged: the rescan takes the tags' gains in place of the measured ones.
        write_tag_fields(&root.join("album/plain.flac"), &[("REPLAYGAIN_TRACK_GAIN", "-3.21 dB")]);
        let rescan = library.ingest().scan_local_folder(|_| {}).await.unwrap();
        assert_eq!(rescan.changed, 1, "{rescan:#?}");
        let tracks = folder_tracks(&library).await;
        assert_eq!(
            tracks["album/plain.flac"].replay_gain,
            ReplayGain { track_gain: Some(-3.21), ..ReplayGain::NONE }
        );
        // Tags that lose their gains: the track waits for a measurement again.
        tagged_copy(root, "album/tagged.flac", FLAC, &[]);
        library.ingest().scan_local_folder(|_| {}).await.unwrap();
        let tracks = folder_tracks(&library).await;
        assert_eq!(tracks["album/tagged.flac"].replay_gain, ReplayGain::NONE);
        let status = library.media().loudness_status().await.unwrap();
        assert_eq!((status.from_tags, status.pending), (1, 1), "{status:?}");
        library.media().measure_loudness(10).await.unwrap();
        let tracks = folder_tracks(&library).await;
        assert!(tracks["album/tagged.flac"].replay_gain.track_gain.is_some());
    }
}

/// ffmpeg's `ebur128` filter on `inputs` played one after the other: the integrated loudness,
/// LUFS, as the filter's metadata gives it at the last frame (to 0.001 LU; its summary
/// prints 0.1). Each input is resampled to 48 kHz first (the filter's only rate; a single
/// input gets the same conversion automatically).
fn ffmpeg_loudness(inputs: &[PathBuf]) -> f64 {
    static CACHE: OnceLock<Mutex<BTreeMap<Vec<PathBuf>, f64>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(known) = cache.lock().unwrap().get(inputs) {
        return *known;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("loudness.txt");
    let mut command = std::process::Command::new("ffmpeg");
    command.args(["-nostdin", "-hide_banner", "-nostats", "-v", "error"]);
    for input in inputs {
        command.arg("-i").arg(input);
    }
    let streams: String = (0..inputs.len())
        .map(|index| format!("[{index}:a:0]aresample=48000[a{index}];"))
        .collect();
    let joined: String = (0..inputs.len())
        .map(|index| format!("[a{index}]"))
        .collect();
    let graph = format!(
        "{streams}{joined}concat=n={}:v=0:a=1,ebur128=peak=sample:metadata=1,ametadata=mode=print:key=lavfi.r128.I:file={}",
        inputs.len(),
        log.display()
    );
    let output = command
        .args(["-filter_complex", &graph, "-f", "null", "-"])
        .output()
        .expect("run ffmpeg");
    assert!(
        output.status.success(),
        "ffmpeg failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = std::fs::read_to_string(&log).expect("the filter's metadata");
    let value = printed
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("lavfi.r128.I="))
        .and_then(|number| number.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no integrated loudness in: {printed}"));
    cache.lock().unwrap().insert(inputs.to_vec(), value);
    value
}

backend_test! {
    #[services]
    async fn measured_loudness_matches_ffmpegs_ebur128_filter(backend: Backend) {
        let corpus = corpus();
        // An album of each format (FLAC at 44.1 and 48 kHz, MP3 with a mono track, Ogg
        // Vorbis on two discs, Opus decoded by ffmpeg, AAC in MP4), and untagged WAVs (16-
        // and 24-bit, stereo and mono, 44.1 and 48 kHz) without an album.
        let albums = [
            "library/Aurora Lane/Northern Lights (2019)",
            "library/月光オーケストラ/夜明けの歌 (2020)",
            "library/Various Artists/Summer Mix 2022",
            "library/Opus Collective/Field Recordings & Drones",
            "library/Mira Kowalczyk/Łódź Sessions (2018)",
            "library/Unsorted",
        ];
        let folder = tempfile::tempdir().unwrap();
        let mut sources: HashMap<String, PathBuf> = HashMap::new();
        for entry in manifest(&corpus)["files"].as_array().unwrap() {
            let path = entry["path"].as_str().unwrap();
            let audio = entry["classification"] == "ok"
                && !matches!(entry["format"].as_str(), Some("jpeg" | "image" | "text"));
            if !audio || !albums.iter().any(|album| path.starts_with(album)) {
                continue;
            }
            let relative = path.strip_prefix("library/").unwrap();
            let copy = folder.path().join(relative);
            std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
            std::fs::copy(corpus.join(path), &copy).unwrap();
            sources.insert(relative.to_string(), corpus.join(path));
        }
        assert_eq!(sources.len(), 24, "{sources:#?}");
        let library = importing(backend, folder.path()).await;
        let scan = library.ingest().scan_local_folder(|_| {}).await.unwrap();
        assert_eq!(scan.imported, sources.len() as u64, "{scan:#?}");
        let report = library.media().measure_loudness(100).await.unwrap();
        assert_eq!((report.measured, report.failed, report.albums), (24, 0, 5), "{report:?}");
        let tracks = folder_tracks(&library).await;

        let mut worst: f64 = 0.0;
        for (relative, source) in &sources {
            let track = &tracks[relative];
            let ours = loudness(track.replay_gain.track_gain);
            let reference = ffmpeg_loudness(std::slice::from_ref(source));
            let off = (ours - reference).abs();
            worst = worst.max(off);
            println!("{relative}: {ours:.2} LUFS, ffmpeg {reference:.3}");
            assert!(off <= 0.1, "{relative}: {ours:.2} LUFS, ffmpeg {reference:.3}");
            let peak = track.replay_gain.track_peak.unwrap();
            assert!(peak > 0.0 && peak <= 1.5, "{relative}: peak {peak}");
        }
        println!("tracks: at most {worst:.3} LU from ffmpeg's ebur128 (gains are kept to 0.01 dB)");

        // Album gains: each album's tracks together, against ffmpeg's on the album played
        // through (in track order; gating blocks spanning two tracks differ, a little).
        let mut by_album: BTreeMap<String, Vec<&Track>> = BTreeMap::new();
        for track in tracks.values() {
            if let Some(album) = &track.album_id {
                by_album.entry(album.to_string()).or_default().push(track);
            }
        }
        assert_eq!(by_album.len(), 5);
        for members in by_album.values_mut() {
            members.sort_by_key(|track| (track.disc_number, track.track_number));
            let gain = members[0].replay_gain.album_gain;
            let peak = members[0].replay_gain.album_peak;
            assert!(members.iter().all(|track| track.replay_gain.album_gain == gain && track.replay_gain.album_peak == peak));
            let loudest = members.iter().filter_map(|track| track.replay_gain.track_peak).fold(0.0, f64::max);
            assert_eq!(peak, Some(loudest));
            let inputs: Vec<PathBuf> = members.iter().map(|track| sources[&track.source_id].clone()).collect();
            let ours = loudness(gain);
            let reference = ffmpeg_loudness(&inputs);
            let album = members[0].album_title.clone().unwrap_or_default();
            println!("album {album}: {ours:.2} LUFS, ffmpeg {reference:.3}");
            assert!((ours - reference).abs() <= 0.1, "{album}: {ours:.2} LUFS, ffmpeg {reference:.3}");
        }
        // Untagged files without an album: track gains only.
        assert!(tracks["Unsorted/field take 01.wav"].replay_gain.album_gain.is_none());
    }
}

backend_test! {
    async fn the_measurement_yields_to_imports_and_keeps_why_a_file_failed(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        let alice = user(&library, "alice").await;
        let tone = library
            .ingest()
            .upload_track(&alice, Some("tone.wav"), musiclib_core::testing::wav_tone(3).as_slice())
            .await
            .unwrap()
            .track;
        let broken = library
            .ingest()
            .upload_track(&alice, Some("broken.wav"), musiclib_core::testing::wav_tone(2).as_slice())
            .await
            .unwrap()
            .track;
        // The second file's stored audio is damaged after its import.
        musiclib_core::testing::put_blob(&library, &broken.storage_uri, bytes::Bytes::from_static(&[7u8; 4000])).await;
        drain_jobs(&library).await;

        // An import running elsewhere: the sweep queues nothing, and a measurement already
        // queued stops before its first track.
        let import = enqueue_raw(&library, "enrich_task", serde_json::json!({"track_id": tone.id.to_string()}), None).await;
        let lease = Duration::from_secs(3600);
        let claimed = queue(&library).claim("elsewhere", lease).await.unwrap().expect("the import");
        assert_eq!(claimed.id, import);
        library.media().sweep_loudness().await.unwrap();
        assert_eq!(loudness_jobs(&library).await, 0);
        let job = enqueue_raw(&library, "analyze_loudness", serde_json::json!({}), Some("analyze_loudness")).await;
        drain_jobs(&library).await;
        let result = queue(&library).get(&job).await.unwrap().result.unwrap();
        assert_eq!((result["measured"].as_u64(), result["yielded"].as_bool()), (Some(0), Some(true)), "{result}");
        assert_eq!(library.media().loudness_status().await.unwrap().pending, 2);

        // The import done, the sweep queues the measurement, which measures both tracks:
        // one measured, one failed with its reason, not tried again.
        queue(&library).complete(&import, "elsewhere").await.unwrap();
        library.media().sweep_loudness().await.unwrap();
        assert_eq!(loudness_jobs(&library).await, 2);
        drain_jobs(&library).await;
        let status = library.media().loudness_status().await.unwrap();
        assert_eq!((status.measured, status.failed, status.pending), (1, 1, 0), "{status:?}");
        let tone = library.catalog().get_track(&tone.id).await.unwrap();
        // A 440 Hz sine at 12000/32768 in one channel: -8.73 dBFS peak, about -12.2 LUFS.
        let gain = tone.replay_gain.track_gain.unwrap();
        assert!((gain + 5.8).abs() < 0.3, "{:?}", tone.replay_gain);
        assert!((tone.replay_gain.track_peak.unwrap() - 12000.0 / 32768.0).abs() < 1e-4);
        let reason: Option<String> = sqlx::query_scalar("SELECT rg_error FROM tracks WHERE id = $1")
            .bind(broken.id.to_string())
            .fetch_one(musiclib_core::testing::pool(&library))
            .await
            .unwrap();
        assert!(reason.as_deref().is_some_and(|reason| reason.contains("decode")), "{reason:?}");
        library.media().sweep_loudness().await.unwrap();
        assert_eq!(loudness_jobs(&library).await, 2, "nothing left to measure");
        let again = library.media().measure_loudness(10).await.unwrap();
        assert_eq!((again.measured, again.failed), (0, 0));
    }
}

/// How many `analyze_loudness` jobs were ever queued.
async fn loudness_jobs(library: &TestLibrary) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE kind = 'analyze_loudness'")
        .fetch_one(musiclib_core::testing::pool(library))
        .await
        .unwrap()
}
