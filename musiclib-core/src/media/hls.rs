//! HLS (spec: Streaming, rules 2–4): a track as a VOD playlist of AAC-in-MPEG-TS segments,
//! for players that want segmented audio.
//!
//! A cold request must not wait for the whole encode (about 40× real time here: 15 s for
//! ten minutes). So the playlist is written from the track's known duration at once: the
//! segments are cut at fixed times (every [`SEGMENT_SECONDS`], the last one taking the
//! remainder), which ffmpeg's segment muxer honours exactly (`-segment_times`), so the
//! playlist names the very segments the encoder will produce. One ffmpeg process per track
//! encodes them in order into a private staging directory, ahead of the player; a segment
//! request waits until that segment is complete, so a reader never receives a partial one.
//! When the encode ends, the segments and the playlist are stored in the blob store and
//! only then is the rendition's row inserted: rule 3, atomic publication. Later requests are
//! answered from the stored rendition, which is evicted with the Opus ones (LRU) and removed
//! with its track.
//!
//! Timestamps run on across segments (one encoder, one muxer), so decoding the playlist
//! end to end is continuous. Several replicas may each encode a cold track once; the first
//! to publish wins and the others delete their copy.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use super::Media;
use crate::auth::Caller;
use crate::storage::layout;
use crate::{Error, Result, TrackId};

/// Target length of a segment, in seconds.
pub const SEGMENT_SECONDS: f64 = 6.0;

/// The most segments a playlist has: segment names carry five digits.
pub const MAX_SEGMENTS: usize = 100_000;

/// The longest audio that is segmented, in seconds (about 166 hours): [`MAX_SEGMENTS`] of
/// [`SEGMENT_SECONDS`].
pub const MAX_SEGMENTED_SECONDS: f64 = MAX_SEGMENTS as f64 * SEGMENT_SECONDS;

/// The last segment is at least this long: a cut closer to the end than this is dropped, so
/// a duration that is a few milliseconds off never predicts a segment the encoder will not
/// produce.
const TAIL_MARGIN_SECONDS: f64 = 0.5;

/// AAC bitrate of the segments.
const AAC_BITRATE: &str = "160k";

/// How long a segment request waits for the encoder before giving up.
const SEGMENT_WAIT: Duration = Duration::from_secs(120);

/// How often a running encode's progress is read.
const PROGRESS_POLL: Duration = Duration::from_millis(20);

/// How long an encode started for listeners goes on with no request for its playlist or
/// segments: then nobody is listening, and it stops (a later request starts it again).
const IDLE_ENCODE: Duration = Duration::from_secs(60);

/// How often a running encode checks that the disk has room for the rest of it.
const ROOM_CHECK: Duration = Duration::from_secs(1);

/// Bytes a second of segments take: 160 kbit/s of AAC, and MPEG-TS's overhead.
const SEGMENT_BYTES_PER_SECOND: f64 = 22_000.0;

/// Most cut times given to ffmpeg as one `-segment_times` argument (each at most 8 bytes with
/// its comma: 64 KiB, half of Linux's 128 KiB bound on one argument). A track with more cuts
/// (over 13 hours) is cut by ffmpeg itself every [`SEGMENT_SECONDS`].
const MAX_LISTED_CUTS: usize = 8_000;

const HLS: &str = "hls";
const HLS_QUALITY: &str = "aac";
const PLAYLIST: &str = "playlist.m3u8";

/// The name of segment `index`.
pub fn segment_name(index: usize) -> String {
    format!("seg-{index:05}.ts")
}

/// The index of a segment from its name: exactly `seg-NNNNN.ts`, nothing else (no paths,
/// no other extensions).
pub fn parse_segment_name(name: &str) -> Result<usize> {
    let invalid = || Error::invalid("segment", "must be a segment name such as seg-00000.ts");
    let digits = name
        .strip_prefix("seg-")
        .and_then(|rest| rest.strip_suffix(".ts"))
        .ok_or_else(invalid)?;
    if digits.len() != 5 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(invalid());
    }
    digits.parse().map_err(|_| invalid())
}

/// Segment lengths, in seconds, for audio lasting `duration` seconds; at most
/// [`MAX_SEGMENTS`] of them, so a duration past [`MAX_SEGMENTED_SECONDS`] (which
/// [`Media::hls_playlist`] refuses before it plans) is planned as that long.
///
/// Up to [`MAX_LISTED_CUTS`] cuts, ffmpeg is given every cut ([`cut_arguments`]), and the last
/// segment takes in a remainder shorter than [`TAIL_MARGIN_SECONDS`]. Past that, ffmpeg
/// cuts every [`SEGMENT_SECONDS`] by itself, so a remainder shorter than the margin is left
/// out of the encode (`-t` at the planned end) rather than predicted as a segment it might
/// not produce.
pub fn plan_segments(duration: f64) -> Vec<f64> {
    let duration = if duration.is_finite() {
        duration.clamp(0.0, MAX_SEGMENTED_SECONDS)
    } else {
        0.0
    };
    let count = ((duration - TAIL_MARGIN_SECONDS) / SEGMENT_SECONDS)
        .ceil()
        .max(1.0) as usize;
    if count - 1 <= MAX_LISTED_CUTS {
        let mut lengths = vec![SEGMENT_SECONDS; count];
        lengths[count - 1] = duration - SEGMENT_SECONDS * (count - 1) as f64;
        return lengths;
    }
    let whole = ((duration / SEGMENT_SECONDS).floor() as usize).min(MAX_SEGMENTS);
    let tail = duration - SEGMENT_SECONDS * whole as f64;
    let mut lengths = vec![SEGMENT_SECONDS; whole];
    if tail >= TAIL_MARGIN_SECONDS && whole < MAX_SEGMENTS {
        lengths.push(tail);
    }
    lengths
}

/// The arguments of ffmpeg's segment muxer that cut the encode as `lengths` (from
/// [`plan_segments`]) says; never one argument longer than [`MAX_LISTED_CUTS`] cuts.
pub fn cut_arguments(lengths: &[f64]) -> Vec<String> {
    let cuts = lengths.len().saturating_sub(1);
    if cuts == 0 {
        return vec!["-segment_time".into(), "86400".into()];
    }
    if cuts <= MAX_LISTED_CUTS {
        let times: Vec<String> = (1..lengths.len())
            .map(|index| format!("{}", SEGMENT_SECONDS * index as f64))
            .collect();
        return vec!["-segment_times".into(), times.join(",")];
    }
    let end: f64 = lengths.iter().sum();
    vec![
        "-segment_time".into(),
        format!("{SEGMENT_SECONDS}"),
        "-t".into(),
        format!("{end:.3}"),
    ]
}

/// Renders a VOD playlist of segments with `lengths`; `token` (percent-encoded) is appended
/// to every segment URI for players that cannot send headers (rule 2).
pub fn render_playlist(lengths: &[f64], token: Option<&str>) -> String {
    let query = token
        .map(|token| {
            let encoded: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
            format!("?token={encoded}")
        })
        .unwrap_or_default();
    let target = lengths
        .iter()
        .fold(SEGMENT_SECONDS, |max, length| max.max(*length))
        .ceil() as u64;
    let mut text = format!(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-TARGETDURATION:{target}\n\
         #EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-INDEPENDENT-SEGMENTS\n"
    );
    for (index, length) in lengths.iter().enumerate() {
        text.push_str(&format!(
            "#EXTINF:{length:.3},\n{}{query}\n",
            segment_name(index)
        ));
    }
    text.push_str("#EXT-X-ENDLIST\n");
    text
}

/// The segment lengths of a stored playlist (what [`render_playlist`] wrote).
pub(crate) fn parse_playlist(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|line| line.strip_prefix("#EXTINF:"))
        .filter_map(|rest| rest.split(',').next()?.trim().parse().ok())
        .collect()
}

/// What an encode has produced so far.
#[derive(Debug, Clone, Default)]
struct Progress {
    /// Segments fully written, in order.
    complete: usize,
    /// `Some` once ffmpeg has exited: how it ended.
    ended: Option<std::result::Result<(), String>>,
    /// The encode is over and its rendition stored (or not): it has left [`LiveEncodes`].
    settled: bool,
}

/// An encode in progress in this process.
#[derive(Debug)]
pub(crate) struct LiveEncode {
    dir: tempfile::TempDir,
    progress: watch::Receiver<Progress>,
    born: Instant,
    /// Milliseconds after `born` of the last request that wanted it.
    wanted_at: AtomicU64,
    /// A job builds the rendition with it: it runs to the end whoever listens.
    kept: AtomicBool,
}

impl LiveEncode {
    fn wanted(&self) {
        self.wanted_at
            .store(self.born.elapsed().as_millis() as u64, Ordering::Release);
    }

    /// Whether listeners stopped asking for it (and no job keeps it).
    fn abandoned(&self) -> bool {
        let idle = (self.born.elapsed().as_millis() as u64)
            .saturating_sub(self.wanted_at.load(Ordering::Acquire));
        !self.kept.load(Ordering::Acquire) && Duration::from_millis(idle) >= IDLE_ENCODE
    }
}

/// Who starts an encode.
#[derive(Clone, Copy)]
enum Starter<'a> {
    /// A listener: the encode takes one of the live encodes ([`super::Transcoder`]'s
    /// budget), and stops when nobody asks for it.
    Listener(&'a Caller),
    /// The `transcode_track` job: the encode takes a CPU slot and runs to the end.
    Job,
}

/// The encodes running in this process, by track.
pub(crate) type LiveEncodes = Mutex<HashMap<String, Arc<LiveEncode>>>;

#[derive(sqlx::FromRow)]
struct HlsRow {
    id: String,
    storage_uri: String,
}

impl Media {
    /// The track's HLS playlist: the stored one, or on a cold track one
    /// predicted from the duration while the encode starts.
    ///
    /// Starting an encode takes one of the live encodes (`MAX_LIVE_ENCODES`, per user
    /// `MAX_LIVE_ENCODES_PER_USER`): past them, [`Error::Busy`].
    pub async fn hls_playlist(
        &self,
        caller: &Caller,
        id: &TrackId,
        token: Option<&str>,
    ) -> Result<String> {
        if let Some(row) = self.published_hls(id).await? {
            let text = self
                .storage
                .blobs()
                .get_bytes(&format!("{}{PLAYLIST}", row.storage_uri))
                .await?;
            let lengths = parse_playlist(&String::from_utf8_lossy(&text));
            return Ok(render_playlist(&lengths, token));
        }
        let duration = self.hls_source_duration(id).await?;
        self.live_encode(id, duration, Starter::Listener(caller))
            .await?;
        Ok(render_playlist(&plan_segments(duration), token))
    }

    /// One HLS segment, complete. On a cold track this waits
    /// for the encoder to get there (starting it as [`Media::hls_playlist`] does).
    pub async fn hls_segment(&self, caller: &Caller, id: &TrackId, name: &str) -> Result<Bytes> {
        let bytes = self.find_segment(caller, id, name).await?;
        crate::metrics::stream_bytes("hls", bytes.len());
        Ok(bytes)
    }

    async fn find_segment(&self, caller: &Caller, id: &TrackId, name: &str) -> Result<Bytes> {
        let index = parse_segment_name(name)?;
        // The live encode first, then the stored rendition: an encode publishes before it
        // leaves the map, so a request that misses both is truly cold.
        let live = self
            .state
            .live_encodes
            .lock()
            .expect("poisoned")
            .get(id.as_str())
            .cloned();
        if let Some(live) = live {
            live.wanted();
            return self.read_live_segment(&live, index, name).await;
        }
        if let Some(row) = self.published_hls(id).await? {
            return match self
                .storage
                .blobs()
                .get_bytes(&format!("{}{name}", row.storage_uri))
                .await
            {
                Err(Error::NotFound { .. }) => Err(Error::not_found("segment", name)),
                other => other,
            };
        }
        let duration = self.hls_source_duration(id).await?;
        let live = self
            .live_encode(id, duration, Starter::Listener(caller))
            .await?;
        self.read_live_segment(&live, index, name).await
    }

    /// Builds and publishes the HLS rendition of `id` unless it exists (the
    /// `transcode_track` job, after [`Media::request_optimize`]). Returns whether it was
    /// built now.
    pub async fn build_hls(&self, id: &TrackId) -> Result<bool> {
        if self.published_hls(id).await?.is_some() {
            return Ok(false);
        }
        let duration = self.hls_source_duration(id).await?;
        let live = self.live_encode(id, duration, Starter::Job).await?;
        let mut progress = live.progress.clone();
        // Until the encode is over and its rendition stored.
        let settled = progress
            .wait_for(|progress| progress.settled)
            .await
            .map_err(|_| Error::internal("the HLS encoder went away"))?
            .clone();
        match settled.ended {
            Some(Err(message)) => Err(Error::internal(message)),
            _ => Ok(true),
        }
    }

    async fn published_hls(&self, id: &TrackId) -> Result<Option<HlsRow>> {
        let row: Option<HlsRow> = self.db.sql("SELECT id, storage_uri FROM renditions WHERE track_id = $1 AND kind = $2 AND quality = $3")
        .bind(id.as_str())
        .bind(HLS)
        .bind(HLS_QUALITY)
        .fetch_optional(self.db.pool())
        .await?;
        if let Some(row) = &row {
            self.stamp_rendition_access(&row.id).await;
        }
        Ok(row)
    }

    /// Checks that `id` can be encoded (it has audio, ffmpeg runs) and returns its duration
    /// in seconds.
    async fn hls_source_duration(&self, id: &TrackId) -> Result<f64> {
        self.track_audio(id).await?;
        if !self.transcoder.ready().await {
            return Err(Error::TranscoderUnavailable);
        }
        let duration_ms: Option<i64> = self
            .db
            .sql("SELECT duration_ms FROM tracks WHERE id = $1")
            .bind(id.as_str())
            .fetch_scalar_optional(self.db.pool())
            .await?
            .flatten();
        match duration_ms {
            // A forged file or a remote source can claim years: the names of the segments
            // would run out, and planning them would take all the memory there is.
            Some(ms) if ms as f64 / 1000.0 > MAX_SEGMENTED_SECONDS => {
                Err(Error::Conflict(format!(
                    "track {id} lasts over {MAX_SEGMENTED_SECONDS} s, too long to be segmented"
                )))
            }
            Some(ms) if ms > 0 => Ok(ms as f64 / 1000.0),
            _ => Err(Error::Conflict(format!(
                "track {id} has no known duration, so it cannot be segmented"
            ))),
        }
    }

    /// The running encode of `id`, started when there is none.
    /// `duration` (seconds, from [`Media::hls_source_duration`]) plans the segments.
    async fn live_encode(
        &self,
        id: &TrackId,
        duration: f64,
        starter: Starter<'_>,
    ) -> Result<Arc<LiveEncode>> {
        let mut encodes = self.state.live_encodes.lock().expect("poisoned");
        if let Some(live) = encodes.get(id.as_str()) {
            live.wanted();
            if matches!(starter, Starter::Job) {
                live.kept.store(true, Ordering::Release);
            }
            return Ok(live.clone());
        }
        let slot = match starter {
            Starter::Listener(caller) => Some(self.state.live_budget.take(&caller.user.id)?),
            Starter::Job => None,
        };
        let dir = tempfile::Builder::new()
            .prefix("hls-")
            .tempdir_in(self.storage.staging_dir())
            .map_err(|error| Error::io(self.storage.staging_dir(), error))?;
        let (sender, progress) = watch::channel(Progress::default());
        let live = Arc::new(LiveEncode {
            dir,
            progress,
            born: Instant::now(),
            wanted_at: AtomicU64::new(0),
            kept: AtomicBool::new(matches!(starter, Starter::Job)),
        });
        encodes.insert(id.to_string(), live.clone());
        drop(encodes);
        let library = self.clone();
        let (id, task_live) = (id.clone(), live.clone());
        tokio::spawn(async move {
            // A listener's encode holds its live-encode place, a job's a CPU slot, to the end.
            let _cpu = match &slot {
                Some(_) => None,
                None => Some(library.cpu.acquire().await),
            };
            let outcome = library.encode_hls(&id, &task_live, duration, &sender).await;
            if let Err(error) = &outcome {
                tracing::warn!(track_id = %id, error = %crate::error_chain(error), "HLS encode failed");
                sender.send_modify(|progress| {
                    if progress.ended.is_none() {
                        progress.ended = Some(Err(error.to_string()));
                    }
                });
            }
            if outcome.is_ok() {
                if let Err(error) = library.publish_hls(&id, task_live.dir.path()).await {
                    tracing::warn!(track_id = %id, error = %crate::error_chain(&error), "could not store an HLS rendition");
                }
            }
            library
                .state
                .live_encodes
                .lock()
                .expect("poisoned")
                .remove(id.as_str());
            sender.send_modify(|progress| progress.settled = true);
            drop(slot);
        });
        Ok(live)
    }

    /// Runs ffmpeg for `id` into the encode's directory, reporting each finished segment
    /// through `sender`. Stops (killing ffmpeg) when nobody has asked for the encode for a
    /// while, or when the disk has no room left for the rest of it.
    async fn encode_hls(
        &self,
        id: &TrackId,
        live: &LiveEncode,
        duration: f64,
        sender: &watch::Sender<Progress>,
    ) -> Result<()> {
        let dir = live.dir.path();
        let audio = self.track_audio(id).await?;
        let lengths = plan_segments(duration);
        let room_for = |seconds: f64| (seconds.max(0.0) * SEGMENT_BYTES_PER_SECOND) as u64;
        crate::storage::ensure_room(dir, room_for(duration))?;
        let source = self.storage.local_file(&audio.key).await?;
        let list = dir.join("segments.csv");
        let mut command = self.transcoder.command();
        command
            .arg("-i")
            .arg(&source.path)
            .args(["-map", "0:a:0", "-vn", "-c:a", "aac", "-b:a", AAC_BITRATE])
            // Identical bytes from every replica and every run.
            .args(["-fflags", "+bitexact", "-flags:a", "+bitexact"])
            .args(["-f", "segment", "-segment_format", "mpegts"])
            .args(cut_arguments(&lengths))
            .args(["-segment_list_type", "csv", "-segment_list"])
            .arg(&list)
            .arg(dir.join("seg-%05d.ts"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|error| self.transcoder.start_error(error))?;
        let mut stderr = child.stderr.take().expect("piped");
        let stderr_task = tokio::spawn(async move {
            let mut text = String::new();
            let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text).await;
            text
        });
        // The segment muxer appends a segment's line to the list once it is written; a
        // segment is certainly closed once the next one is listed, or ffmpeg has exited.
        let mut room_checked = Instant::now();
        let status = loop {
            tokio::select! {
                status = child.wait() => break status.map_err(|error| Error::io(dir, error))?,
                _ = tokio::time::sleep(PROGRESS_POLL) => {
                    let listed = count_listed(&list).await;
                    let complete = listed.saturating_sub(1);
                    sender.send_if_modified(|progress| {
                        let changed = complete > progress.complete;
                        progress.complete = progress.complete.max(complete);
                        changed
                    });
                    if live.abandoned() {
                        let _ = child.kill().await;
                        return Err(Error::Unavailable(format!(
                            "the HLS encode was stopped: nobody asked for it for {} s",
                            IDLE_ENCODE.as_secs()
                        )));
                    }
                    if room_checked.elapsed() >= ROOM_CHECK {
                        room_checked = Instant::now();
                        let done: f64 = lengths.iter().take(listed).sum();
                        if let Err(error) = crate::storage::ensure_room(dir, room_for(duration - done)) {
                            let _ = child.kill().await;
                            return Err(error);
                        }
                    }
                }
            }
        };
        let stderr = stderr_task.await.unwrap_or_default();
        if !status.success() {
            return Err(Error::internal(format!(
                "ffmpeg could not encode the HLS segments: {}",
                stderr.trim()
            )));
        }
        let listed = count_listed(&list).await;
        if listed != lengths.len() {
            tracing::warn!(track_id = %id, predicted = lengths.len(), produced = listed,
                "the encoder produced another number of segments than the duration predicted");
        }
        sender.send_modify(|progress| {
            progress.complete = listed;
            progress.ended = Some(Ok(()));
        });
        Ok(())
    }

    /// Stores the encoded segments, then the playlist, then the row (the publication).
    async fn publish_hls(&self, id: &TrackId, dir: &Path) -> Result<()> {
        let list = tokio::fs::read_to_string(dir.join("segments.csv"))
            .await
            .map_err(|error| Error::io(dir, error))?;
        let mut lengths = Vec::new();
        for line in list.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            let (Some(start), Some(end)) = (
                fields.get(1).and_then(|field| field.parse::<f64>().ok()),
                fields.get(2).and_then(|field| field.parse::<f64>().ok()),
            ) else {
                return Err(Error::internal(format!(
                    "unexpected segment list line {line:?}"
                )));
            };
            lengths.push(end - start);
        }
        let prefix = layout::hls_build(id);
        let stored = self.store_hls(&prefix, dir, &lengths).await;
        let size = match stored {
            Ok(size) => size,
            Err(error) => {
                let _ = self.storage.blobs().delete_tree(&prefix).await;
                return Err(error);
            }
        };
        let inserted = self
            .insert_rendition(id, HLS, HLS_QUALITY, &prefix, size)
            .await;
        match inserted {
            Ok(true) => {
                crate::metrics::rendition_built(HLS);
                self.evict_renditions(self.cache_max_bytes).await
            }
            // Another replica published first.
            Ok(false) => self.storage.blobs().delete_tree(&prefix).await,
            Err(error) => {
                let _ = self.storage.blobs().delete_tree(&prefix).await;
                if self.catalog.find_track(id).await?.is_none() {
                    return Ok(());
                }
                Err(error)
            }
        }
    }

    async fn store_hls(&self, prefix: &str, dir: &Path, lengths: &[f64]) -> Result<u64> {
        let mut size = 0;
        for index in 0..lengths.len() {
            let name = segment_name(index);
            size += self
                .storage
                .blobs()
                .put_file(&format!("{prefix}{name}"), &dir.join(&name))
                .await?;
        }
        let playlist = render_playlist(lengths, None);
        size += playlist.len() as u64;
        self.storage
            .blobs()
            .put_bytes(&format!("{prefix}{PLAYLIST}"), Bytes::from(playlist))
            .await?;
        Ok(size)
    }

    async fn read_live_segment(
        &self,
        live: &LiveEncode,
        index: usize,
        name: &str,
    ) -> Result<Bytes> {
        let mut progress = live.progress.clone();
        let waited = tokio::time::timeout(
            SEGMENT_WAIT,
            progress.wait_for(|progress| progress.complete > index || progress.ended.is_some()),
        )
        .await
        .map_err(|_| Error::Unavailable(format!("segment {name} is still being encoded")))?
        .map_err(|_| Error::internal("the HLS encoder went away"))?
        .clone();
        if waited.complete <= index {
            return match waited.ended {
                Some(Err(message)) => Err(Error::internal(message)),
                _ => Err(Error::not_found("segment", name)),
            };
        }
        let path = live.dir.path().join(name);
        tokio::fs::read(&path)
            .await
            .map(Bytes::from)
            .map_err(|error| Error::io(&path, error))
    }
}

/// Lines in the segment list so far (0 before the first segment ends).
async fn count_listed(list: &Path) -> usize {
    match tokio::fs::read_to_string(list).await {
        Ok(text) => text.lines().filter(|line| line.contains(',')).count(),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_are_strict() {
        assert_eq!(parse_segment_name("seg-00000.ts").unwrap(), 0);
        assert_eq!(parse_segment_name("seg-00042.ts").unwrap(), 42);
        for bad in [
            "seg-0.ts",
            "seg-000000.ts",
            "../seg-00000.ts",
            "seg-00000.ts/..",
            "seg-0000a.ts",
            "seg-+0000.ts",
            "playlist.m3u8",
            "seg-00000.mp4",
            "",
        ] {
            assert!(parse_segment_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn plans_cover_the_duration_with_a_tail_of_at_least_the_margin() {
        assert_eq!(plan_segments(600.0).len(), 100);
        let plan = plan_segments(600.3);
        assert_eq!(plan.len(), 100);
        assert!((plan[99] - 6.3).abs() < 1e-9);
        let plan = plan_segments(600.6);
        assert_eq!(plan.len(), 101);
        assert!((plan.iter().sum::<f64>() - 600.6).abs() < 1e-9);
        assert_eq!(plan_segments(0.2), vec![0.2]);
        assert_eq!(plan_segments(f64::NAN).len(), 1);
        for tenths in 1..2000 {
            let duration = tenths as f64 / 10.0;
            let plan = plan_segments(duration);
            assert!((plan.iter().sum::<f64>() - duration).abs() < 1e-6);
            let last = *plan.last().unwrap();
            assert!(last <= SEGMENT_SECONDS + TAIL_MARGIN_SECONDS + 1e-9);
            assert!(last > TAIL_MARGIN_SECONDS - 1e-9 || plan.len() == 1);
        }
    }

    /// Found by the `hls_names` fuzz target: a stored duration of 12,420,124,000 ms planned
    /// a segment `seg-100000.ts` that no request can name, and longer ones took all memory.
    #[test]
    fn durations_past_the_segment_names_are_capped() {
        for duration_ms in [12_420_124_000_i64, 600_000_001, i64::MAX] {
            let plan = plan_segments(duration_ms as f64 / 1000.0);
            assert_eq!(plan.len(), MAX_SEGMENTS, "{duration_ms}");
            let playlist = render_playlist(&plan, Some("t"));
            let last = playlist
                .lines()
                .rfind(|line| !line.starts_with('#'))
                .unwrap();
            assert_eq!(last, "seg-99999.ts?token=t");
            assert_eq!(
                parse_segment_name("seg-99999.ts").unwrap(),
                MAX_SEGMENTS - 1
            );
            assert_eq!(parse_playlist(&playlist).len(), MAX_SEGMENTS);
        }
        assert_eq!(plan_segments(MAX_SEGMENTED_SECONDS).len(), MAX_SEGMENTS);
        assert!(parse_segment_name("seg-100000.ts").is_err());
        assert_eq!(plan_segments(f64::INFINITY), vec![0.0]);
    }

    /// A 26-hour recording has 15,600 cuts: written into one `-segment_times` argument they
    /// would pass Linux's 128 KiB bound on an argument, and ffmpeg would not start.
    #[test]
    fn long_tracks_are_cut_by_ffmpeg_itself_never_in_one_long_argument() {
        for duration in [
            10.0,
            600.3,
            48_000.7,
            93_600.2,
            MAX_SEGMENTED_SECONDS,
            599_999.7,
        ] {
            let lengths = plan_segments(duration);
            let arguments = cut_arguments(&lengths);
            let longest = arguments.iter().map(String::len).max().unwrap();
            assert!(
                longest <= 64 * 1024,
                "{duration}: an argument of {longest} bytes"
            );
            assert!(lengths.len() <= MAX_SEGMENTS);
            if lengths.len() - 1 > MAX_LISTED_CUTS {
                // Cut every six seconds, the end at the plan's end.
                assert_eq!(
                    arguments[..2],
                    ["-segment_time".to_string(), "6".to_string()]
                );
                let end: f64 = arguments[3].parse().unwrap();
                assert!((end - lengths.iter().sum::<f64>()).abs() < 0.001);
                assert!(lengths[..lengths.len() - 1]
                    .iter()
                    .all(|length| *length == SEGMENT_SECONDS));
                let last = *lengths.last().unwrap();
                assert!(
                    (TAIL_MARGIN_SECONDS..=SEGMENT_SECONDS).contains(&last),
                    "{duration}: {last}"
                );
            } else {
                assert_eq!(arguments[0], "-segment_times");
                assert_eq!(arguments[1].split(',').count(), lengths.len() - 1);
            }
        }
        // A tail under the margin is left out of a long encode, never predicted.
        let lengths = plan_segments(93_600.2);
        assert_eq!(lengths.len(), 15_600);
        assert_eq!(*lengths.last().unwrap(), SEGMENT_SECONDS);
    }

    #[test]
    fn playlists_carry_the_token_on_every_segment() {
        let text = render_playlist(&[6.0, 6.0, 2.5], Some("a.b-c_d"));
        assert!(text.starts_with("#EXTM3U\n"));
        assert!(text.ends_with("#EXT-X-ENDLIST\n"));
        assert!(text.contains("#EXT-X-TARGETDURATION:6\n"));
        let uris: Vec<&str> = text.lines().filter(|line| !line.starts_with('#')).collect();
        assert_eq!(
            uris,
            [
                "seg-00000.ts?token=a.b-c_d",
                "seg-00001.ts?token=a.b-c_d",
                "seg-00002.ts?token=a.b-c_d"
            ]
        );
        assert_eq!(parse_playlist(&text), vec![6.0, 6.0, 2.5]);
        let encoded = render_playlist(&[1.0], Some("a b&c"));
        assert!(encoded.contains("seg-00000.ts?token=a+b%26c\n"));
    }
}
