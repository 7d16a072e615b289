//! Reading what a file is: container and codec facts and embedded tags (lofty), and a check
//! that the audio really is there to the end (symphonia), so a truncated file is refused at
//! ingest rather than discovered by a listener.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use lofty::config::ParseOptions;
use lofty::file::{AudioFile, FileType, TaggedFile, TaggedFileExt};
use lofty::probe::Probe;
use lofty::tag::{Accessor, ItemKey, Tag};
use serde::{Deserialize, Serialize};

use crate::domain::ReplayGain;

/// File extensions the scanner considers audio. Anything else is skipped, not failed.
pub const AUDIO_EXTENSIONS: &[&str] = &[
    "mp3", "flac", "ogg", "oga", "opus", "m4a", "m4b", "mp4", "aac", "wav", "aif", "aiff", "ape",
    "wv", "mpc", "spx",
];

/// Whether `path` has an audio extension.
pub fn has_audio_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .map(|ext| {
            AUDIO_EXTENSIONS
                .iter()
                .any(|known| known.eq_ignore_ascii_case(ext))
        })
        .unwrap_or(false)
}

/// Embedded tags, as far as the file has them. Serialised on the track row so enrichment can
/// gap-fill from them later without reading the file again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedTags {
    /// Title.
    pub title: Option<String>,
    /// First track artist.
    pub artist: Option<String>,
    /// Every track artist value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artists: Vec<String>,
    /// Album title.
    pub album: Option<String>,
    /// Album artist.
    pub album_artist: Option<String>,
    /// Genre.
    pub genre: Option<String>,
    /// Year.
    pub year: Option<i64>,
    /// Track number.
    pub track_number: Option<i64>,
    /// Disc number.
    pub disc_number: Option<i64>,
    /// Compilation flag.
    #[serde(default)]
    pub compilation: bool,
    /// MusicBrainz recording id.
    pub musicbrainz_recording_id: Option<String>,
    /// MusicBrainz release id.
    pub musicbrainz_album_id: Option<String>,
    /// MusicBrainz release-group id.
    pub musicbrainz_releasegroup_id: Option<String>,
    /// MusicBrainz artist id.
    pub musicbrainz_artist_id: Option<String>,
}

impl EmbeddedTags {
    /// Whether the tags identify the track (a title and an artist).
    pub fn identifies_track(&self) -> bool {
        self.title.is_some() && self.artist.is_some()
    }
}

/// What a probe learns about an audio file.
#[derive(Debug, Clone)]
pub struct AudioFacts {
    /// Short format name: `mp3`, `flac`, `ogg`, `opus`, `m4a`, `wav`, …
    pub format: &'static str,
    /// MIME type to serve it with.
    pub mime_type: &'static str,
    /// Duration in milliseconds.
    pub duration_ms: i64,
    /// Average bitrate in kbit/s.
    pub bitrate_kbps: Option<i64>,
    /// Sample rate in Hz.
    pub sample_rate: Option<i64>,
    /// Channels.
    pub channels: Option<i64>,
    /// Tags.
    pub tags: EmbeddedTags,
    /// Whether the file embeds a picture.
    pub has_embedded_cover: bool,
    /// The ReplayGain its tags carry ([`ReplayGain::NONE`] when they carry none; see
    /// `replay_gain_of`).
    pub replay_gain: ReplayGain,
}

/// The ReplayGain of a file's tags.
///
/// Read from every tag the file has, the primary one first: Vorbis comments (FLAC, Ogg) and
/// APE `REPLAYGAIN_TRACK_GAIN`, `_TRACK_PEAK`, `_ALBUM_GAIN`, `_ALBUM_PEAK`; ID3v2
/// `TXXX:REPLAYGAIN_*` (any case); MP4 freeform `----:com.apple.iTunes:replaygain_*` (any
/// case); and in Opus files `R128_TRACK_GAIN`/`R128_ALBUM_GAIN` (RFC 7845: a signed Q7.8
/// number of dB towards -23 LUFS, so ReplayGain's is 5 dB more), which win there over
/// `REPLAYGAIN_*`. Values are read leniently ("-6.54 dB", "+1,2 dB", "0.98"); one that is
/// not a number, or absurd (a gain past ±[`MAX_GAIN_DB`], a peak outside 0 to
/// [`MAX_PEAK`]), is left out, never an error. Tags count only with a track gain: peaks or
/// an album gain alone are left out too.
fn replay_gain_of<'a>(tags: impl Iterator<Item = &'a Tag> + Clone, opus: bool) -> ReplayGain {
    let first = |key: ItemKey, parse: fn(&str) -> Option<f64>| {
        tags.clone()
            .find_map(|tag| tag.get_strings(key).find_map(parse))
    };
    let r128 = |key: ItemKey| {
        if opus {
            first(key, parse_r128_gain)
        } else {
            None
        }
    };
    let found = ReplayGain {
        track_gain: r128(ItemKey::R128TrackGain)
            .or_else(|| first(ItemKey::ReplayGainTrackGain, parse_gain)),
        track_peak: first(ItemKey::ReplayGainTrackPeak, parse_peak),
        album_gain: r128(ItemKey::R128AlbumGain)
            .or_else(|| first(ItemKey::ReplayGainAlbumGain, parse_gain)),
        album_peak: first(ItemKey::ReplayGainAlbumPeak, parse_peak),
    };
    if found.is_present() {
        found
    } else {
        ReplayGain::NONE
    }
}

/// The largest gain taken from a tag, in dB either way.
pub const MAX_GAIN_DB: f64 = 64.0;
/// The largest peak taken from a tag (linear; 1.0 is full scale).
pub const MAX_PEAK: f64 = 16.0;

/// A number as taggers write it: trimmed, an optional `+`, a decimal comma taken as a
/// point, and a trailing unit (`dB`, `LU`) dropped; `None` when not a finite number.
fn lenient_number(text: &str) -> Option<f64> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let without_unit = ["db", "lufs", "lu"]
        .iter()
        .find_map(|unit| lower.strip_suffix(unit))
        .unwrap_or(&lower)
        .trim();
    let number = without_unit.strip_prefix('+').unwrap_or(without_unit);
    let number = if number.contains('.') {
        number.to_string()
    } else {
        number.replacen(',', ".", 1)
    };
    if number.is_empty()
        || !number
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | 'e'))
    {
        return None;
    }
    number.parse::<f64>().ok().filter(|value| value.is_finite())
}

/// A ReplayGain gain tag's value in dB ("-6.54 dB"), within ±[`MAX_GAIN_DB`].
pub fn parse_gain(text: &str) -> Option<f64> {
    lenient_number(text).filter(|gain| gain.abs() <= MAX_GAIN_DB)
}

/// A ReplayGain peak tag's value (linear, "0.988553"), within 0 to [`MAX_PEAK`].
pub fn parse_peak(text: &str) -> Option<f64> {
    lenient_number(text).filter(|peak| (0.0..=MAX_PEAK).contains(peak))
}

/// An Opus `R128_*_GAIN` value as a ReplayGain gain in dB: the tag is a signed 16-bit
/// integer in decimal, Q7.8 fixed point (dB × 256), towards -23 LUFS; ReplayGain 2.0's
/// reference is -18 LUFS, so the gain is 5 dB more.
pub fn parse_r128_gain(text: &str) -> Option<f64> {
    let text = text.trim();
    let value: i16 = text.strip_prefix('+').unwrap_or(text).parse().ok()?;
    Some(f64::from(value) / 256.0 + 5.0).filter(|gain| gain.abs() <= MAX_GAIN_DB)
}

/// Probes audio held in memory. `name_hint` (a file name) helps only for formats that cannot
/// be told apart by content.
pub fn probe_bytes(bytes: &[u8], name_hint: &str) -> Result<AudioFacts, String> {
    probe_shared(&bytes::Bytes::copy_from_slice(bytes), name_hint)
}

/// [`probe_bytes`] of audio already held as [`bytes::Bytes`]: the decoder check reads the same
/// buffer (a file in memory is never copied to be probed).
pub(crate) fn probe_shared(bytes: &bytes::Bytes, name_hint: &str) -> Result<AudioFacts, String> {
    let options = ParseOptions::new().read_cover_art(true);
    let tagged = Probe::new(Bounded::new(Cursor::new(bytes), bytes.len() as u64))
        .options(options)
        .guess_file_type()
        .map_err(|error| format!("cannot read the file: {error}"))?
        .read()
        .map_err(|error| describe_lofty_error(error, name_hint))?;
    let facts = facts_of(&tagged)?;
    musiclib_fingerprint::mp4::check_sample_tables_in_bytes(bytes)
        .map_err(|reason| format!("the file is damaged: {reason}"))?;
    guard_decoder(|| check_decodable(Cursor::new(bytes.clone()), &facts, name_hint))?;
    Ok(facts)
}

/// Probes an audio file on disk (for files too large to hold in memory).
pub fn probe_path(path: &Path) -> Result<AudioFacts, String> {
    probe_file(path, &path.to_string_lossy())
}

/// Probes an audio file on disk whose user-facing name is `name_hint` (an upload in staging:
/// messages name the upload, never the server's path).
pub fn probe_file(path: &Path, name_hint: &str) -> Result<AudioFacts, String> {
    let options = ParseOptions::new().read_cover_art(true);
    let tagged = probe_at(path)
        .map_err(|error| format!("cannot open the file: {error}"))?
        .options(options)
        .guess_file_type()
        .map_err(|error| format!("cannot read the file: {error}"))?
        .read()
        .map_err(|error| describe_lofty_error(error, name_hint))?;
    let facts = facts_of(&tagged)?;
    let file =
        std::fs::File::open(path).map_err(|error| format!("cannot open the file: {error}"))?;
    musiclib_fingerprint::mp4::check_sample_tables_in_file(path)
        .map_err(|reason| format!("the file is damaged: {reason}"))?;
    guard_decoder(|| check_decodable(file, &facts, name_hint))?;
    Ok(facts)
}

/// The embedded picture to use as a cover: the front cover when the file has one, else the
/// first picture of any type. `None` when the file has no picture or cannot be read.
pub fn cover_picture(path: &Path) -> Option<Vec<u8>> {
    use lofty::picture::PictureType;
    let options = ParseOptions::new()
        .read_cover_art(true)
        .read_properties(false);
    let tagged = read_tagged(path, options)?;
    let pictures: Vec<_> = tagged
        .tags()
        .iter()
        .flat_map(|tag| tag.pictures().iter())
        .collect();
    pictures
        .iter()
        .find(|picture| picture.pic_type() == PictureType::CoverFront)
        .or_else(|| pictures.first())
        .map(|picture| picture.data().to_vec())
}

/// The file's tags (and properties, as `options` say), `None` when it cannot be read.
pub(crate) fn read_tagged(path: &Path, options: ParseOptions) -> Option<TaggedFile> {
    probe_at(path)
        .ok()?
        .options(options)
        .guess_file_type()
        .ok()?
        .read()
        .ok()
}

/// lofty's probe of the file at `path` (its type first guessed from the extension, as
/// `Probe::open` does), its reads bounded by [`Bounded`].
fn probe_at(path: &Path) -> std::io::Result<Probe<Bounded<BufReader<File>>>> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let probe = Probe::new(Bounded::new(BufReader::new(file), size));
    Ok(match FileType::from_path(path) {
        Some(file_type) => probe.set_file_type(file_type),
        None => probe,
    })
}

/// A reader that fails once far more has been read than the file holds. lofty re-reads a
/// little of a file, never all of it many times, except in a loop it cannot leave: lofty
/// 0.25's ADTS (raw AAC) reader steps by each frame's length, and a frame whose length field
/// is 0 keeps it on the same frame forever (found by the `probe_bytes` fuzz target, a 47-byte
/// upload). Past the budget every read fails, so the probe ends with an error.
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R> Bounded<R> {
    /// Reads allowed for a file of `size` bytes: 32 times it, and 4 MiB for small files.
    fn new(inner: R, size: u64) -> Bounded<R> {
        Bounded {
            inner,
            left: size.saturating_mul(32).saturating_add(4 << 20),
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other(
                "reading the file does not end (a damaged stream)",
            ));
        }
        let read = self.inner.read(buf)?;
        self.left = self.left.saturating_sub(read as u64);
        Ok(read)
    }
}

impl<R: Seek> Seek for Bounded<R> {
    fn seek(&mut self, position: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(position)
    }
}

fn describe_lofty_error(error: lofty::error::FileParseError, _name: &str) -> String {
    if error.is_unknown_format() {
        "not a recognised audio file".to_string()
    } else {
        format!("not a readable audio file: {error}")
    }
}

fn format_of(file_type: FileType) -> (&'static str, &'static str) {
    match file_type {
        FileType::Mpeg => ("mp3", "audio/mpeg"),
        FileType::Flac => ("flac", "audio/flac"),
        FileType::Vorbis => ("ogg", "audio/ogg"),
        FileType::Opus => ("opus", "audio/ogg"),
        FileType::Speex => ("spx", "audio/ogg"),
        FileType::Mp4 => ("m4a", "audio/mp4"),
        FileType::Aac => ("aac", "audio/aac"),
        FileType::Wav => ("wav", "audio/wav"),
        FileType::Aiff => ("aiff", "audio/aiff"),
        FileType::Ape => ("ape", "audio/x-ape"),
        FileType::WavPack => ("wv", "audio/x-wavpack"),
        FileType::Mpc => ("mpc", "audio/x-musepack"),
        FileType::Custom(_) => ("bin", "application/octet-stream"),
        _ => ("bin", "application/octet-stream"),
    }
}

fn facts_of(tagged: &TaggedFile) -> Result<AudioFacts, String> {
    let (format, mime_type) = format_of(tagged.file_type());
    if format == "bin" {
        return Err("unsupported audio format".into());
    }
    let properties = tagged.properties();
    let duration_ms = properties.duration().as_millis() as i64;
    if duration_ms <= 0 {
        return Err("the file holds no audio (zero duration)".into());
    }
    let tag = tagged.primary_tag().or_else(|| tagged.first_tag());
    let tags = tag.map(tags_of).unwrap_or_default();
    let has_embedded_cover = tagged.tags().iter().any(|tag| !tag.pictures().is_empty());
    let others = tagged
        .tags()
        .iter()
        .filter(|other| tag.is_none_or(|tag| other.tag_type() != tag.tag_type()));
    let replay_gain = replay_gain_of(
        tag.into_iter().chain(others),
        tagged.file_type() == FileType::Opus,
    );
    Ok(AudioFacts {
        format,
        mime_type,
        duration_ms,
        bitrate_kbps: properties
            .audio_bitrate()
            .or(properties.overall_bitrate())
            .filter(|bitrate| *bitrate > 0)
            .map(i64::from),
        sample_rate: properties.sample_rate().map(i64::from),
        channels: properties.channels().map(i64::from),
        tags,
        has_embedded_cover,
        replay_gain,
    })
}

/// A tag's text: trimmed, without control characters (NULs included), and cut to
/// [`crate::text::MAX_TEXT_CHARS`] (a file may carry any length).
fn clean(value: Option<impl AsRef<str>>) -> Option<String> {
    value
        .map(|value| crate::text::cap(value.as_ref()))
        .filter(|value| !value.is_empty())
}

fn year_of(tag: &Tag) -> Option<i64> {
    let from_text = |key: ItemKey| {
        tag.get_string(key).and_then(|text| {
            let digits: String = text.trim().chars().take(4).collect();
            digits.parse::<i64>().ok().filter(|year| *year > 0)
        })
    };
    tag.date()
        .map(|date| i64::from(date.year))
        .filter(|year| *year > 0)
        .or_else(|| from_text(ItemKey::RecordingDate))
        .or_else(|| from_text(ItemKey::Year))
        .or_else(|| from_text(ItemKey::OriginalReleaseDate))
}

fn tags_of(tag: &Tag) -> EmbeddedTags {
    let artists: Vec<String> = tag
        .get_strings(ItemKey::TrackArtist)
        .flat_map(|value| value.split('\0'))
        .filter_map(|value| clean(Some(value)))
        .collect();
    let compilation = tag
        .get_string(ItemKey::FlagCompilation)
        .map(|value| matches!(value.trim(), "1" | "true" | "True" | "TRUE"))
        .unwrap_or(false);
    EmbeddedTags {
        title: clean(tag.title()),
        artist: artists.first().cloned().or_else(|| clean(tag.artist())),
        artists: if artists.len() > 1 {
            artists
        } else {
            Vec::new()
        },
        album: clean(tag.album()),
        album_artist: clean(tag.get_string(ItemKey::AlbumArtist)),
        genre: clean(tag.genre()),
        year: year_of(tag),
        track_number: tag.track().map(i64::from).filter(|n| *n > 0),
        disc_number: tag.disk().map(i64::from).filter(|n| *n > 0),
        compilation,
        musicbrainz_recording_id: clean(tag.get_string(ItemKey::MusicBrainzRecordingId)),
        musicbrainz_album_id: clean(tag.get_string(ItemKey::MusicBrainzReleaseId)),
        musicbrainz_releasegroup_id: clean(tag.get_string(ItemKey::MusicBrainzReleaseGroupId)),
        musicbrainz_artist_id: clean(tag.get_string(ItemKey::MusicBrainzArtistId)),
    }
}

/// Checks that audio can be read near the end of the stream, where a truncated file has
/// none. Formats symphonia cannot open (Opus, APE, …) pass: lofty already read them.
/// Runs a decoder check so that a decoder panic on a damaged file is that file's error.
fn guard_decoder(check: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check))
        .unwrap_or_else(|_| Err("the file is damaged: the decoder failed on it".into()))
}

fn check_decodable<R>(reader: R, facts: &AudioFacts, name_hint: &str) -> Result<(), String>
where
    R: symphonia::core::io::MediaSource + 'static,
{
    use symphonia::core::formats::probe::Hint;
    use symphonia::core::formats::{FormatOptions, SeekMode, SeekTo, TrackType};
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::meta::MetadataOptions;
    use symphonia::core::units::Time;

    if !matches!(
        facts.format,
        "flac" | "mp3" | "ogg" | "m4a" | "wav" | "aiff"
    ) {
        return Ok(());
    }
    let stream = MediaSourceStream::new(Box::new(reader), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = Path::new(name_hint)
        .extension()
        .and_then(|ext| ext.to_str())
    {
        hint.with_extension(ext);
    }
    let Ok(mut format) = symphonia::default::get_probe().probe(
        &hint,
        stream,
        FormatOptions::default(),
        MetadataOptions::default(),
    ) else {
        // Symphonia's demuxers are stricter than lofty's reader on some valid files; trust lofty.
        return Ok(());
    };
    let Some(track) = format.default_track(TrackType::Audio) else {
        return Err("the file has no audio track".into());
    };
    let (track_id, time_base) = (track.id, track.time_base);
    let duration_s = facts.duration_ms as f64 / 1000.0;
    if duration_s > 2.0 {
        let target = duration_s - 1.0;
        let seeked = format
            .seek(
                SeekMode::Coarse,
                SeekTo::Time {
                    time: Time::from_millis(facts.duration_ms - 1000),
                    track_id: Some(track_id),
                },
            )
            .map_err(|_| truncated(duration_s))?;
        let reached = time_base.and_then(|time_base| time_base.calc_time(seeked.actual_ts));
        if let Some(reached) = reached {
            if reached.as_secs_f64() + 10.0 < target {
                return Err(truncated(duration_s));
            }
        }
    }
    // The end of the stream (no packet) right after that seek means the audio stops early.
    match format.next_packet() {
        Ok(Some(_)) => Ok(()),
        Ok(None) | Err(_) => Err(truncated(duration_s)),
    }
}

fn truncated(duration_s: f64) -> String {
    format!("the audio is truncated or damaged: it declares {duration_s:.1} s but cannot be read to the end")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `probe_bytes` fuzz target: 47 bytes read as raw AAC (ADTS) whose frame
    /// length field is 0 kept lofty on the same frame forever. The probe now ends, in memory
    /// and on disk, with a readable refusal.
    #[test]
    fn an_adts_frame_of_length_zero_ends_the_probe() {
        const CRASH: [u8; 47] = [
            0xff, 0xf9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00, 0x00,
            0xff, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00,
            0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        let started = std::time::Instant::now();
        for hint in ["upload.aac", "upload.mp3", "upload.m4a"] {
            assert!(probe_bytes(&CRASH, hint).is_err(), "{hint}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("upload.aac");
        std::fs::write(&path, CRASH).unwrap();
        assert!(probe_file(&path, "upload.aac").is_err());
        assert!(cover_picture(&path).is_none());
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    #[test]
    fn gains_are_read_leniently() {
        assert_eq!(parse_gain("-6.54 dB"), Some(-6.54));
        assert_eq!(parse_gain("  +1.20 dB "), Some(1.2));
        assert_eq!(parse_gain("-6.54dB"), Some(-6.54));
        assert_eq!(parse_gain("-6.54 DB"), Some(-6.54));
        assert_eq!(parse_gain("-7,25 dB"), Some(-7.25));
        assert_eq!(parse_gain("3"), Some(3.0));
        assert_eq!(parse_gain("-0.5 LU"), Some(-0.5));
        assert_eq!(parse_gain("64 dB"), Some(64.0));
    }

    #[test]
    fn bad_gains_and_peaks_are_left_out() {
        for bad in [
            "",
            "dB",
            "NaN",
            "nan dB",
            "inf",
            "-inf dB",
            "infinity",
            "1e999",
            "65 dB",
            "-64.01 dB",
            "loud",
            "-6.54 dB extra",
            "--3",
            "0x10",
            "1.2.3",
        ] {
            assert_eq!(parse_gain(bad), None, "{bad:?}");
        }
        for bad in ["", "-0.1", "16.5", "NaN", "inf", "peak", "1e3"] {
            assert_eq!(parse_peak(bad), None, "{bad:?}");
        }
        assert_eq!(parse_peak("0.988553"), Some(0.988553));
        assert_eq!(parse_peak("0"), Some(0.0));
        assert_eq!(parse_peak("1,5"), Some(1.5));
        assert_eq!(parse_peak("16"), Some(16.0));
    }

    /// RFC 7845: Q7.8 in a signed 16-bit decimal integer, towards -23 LUFS; ReplayGain 2.0
    /// is towards -18 LUFS, 5 dB more.
    #[test]
    fn opus_r128_gains_are_q7_8_towards_minus_23_lufs() {
        assert_eq!(parse_r128_gain("0"), Some(5.0));
        assert_eq!(parse_r128_gain("-2560"), Some(-5.0));
        assert_eq!(parse_r128_gain("256"), Some(6.0));
        assert_eq!(parse_r128_gain(" -1234 "), Some(-1234.0 / 256.0 + 5.0));
        assert_eq!(parse_r128_gain("+512"), Some(7.0));
        // -128 + 5 dB: past the bound.
        assert_eq!(parse_r128_gain("-32768"), None);
        for bad in ["", "1.5", "-6.54 dB", "32768", "-32769", "NaN", "0x100"] {
            assert_eq!(parse_r128_gain(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reads_past_the_budget_fail() {
        let mut reader = Bounded::new(Cursor::new(vec![7u8; 10]), 10);
        let mut buffer = [0u8; 4096];
        let mut total = 0;
        loop {
            match reader.read(&mut buffer) {
                Ok(0) => {
                    reader.seek(SeekFrom::Start(0)).unwrap();
                }
                Ok(read) => total += read,
                Err(_) => break,
            }
        }
        // The read that crosses the budget is the last one that succeeds.
        let budget = 10 * 32 + (4 << 20);
        assert!((budget..budget + 10).contains(&(total as u64)), "{total}");
    }
}
