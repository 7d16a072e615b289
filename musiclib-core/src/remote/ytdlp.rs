//! The `remote` source: YouTube and YouTube Music through the yt-dlp program.
//!
//! Every call runs yt-dlp directly (never through a shell) with `--no-config`, so nothing on
//! the machine changes what it does, and `--` before the one positional argument:
//!
//! - search: `--flat-playlist -J --ignore-no-formats-error` of `ytsearchN:query` (`REMOTE_SEARCH=videos`, the default:
//!   "Artist - Title" video titles are read as such, [`split_video_title`]) or of YouTube
//!   Music's song search (`https://music.youtube.com/search?q=…#songs`, `REMOTE_SEARCH=music`,
//!   titles only);
//! - one item: `-j --no-playlist --ignore-no-formats-error` of `REMOTE_WATCH_URL` with the id
//!   in it (describing an item needs no format);
//! - download: `-f bestaudio/best -x` (the audio stream as it is, no re-encoding, where the
//!   container allows), `--max-filesize`, `--newline --progress --progress-template` for
//!   progress on stdout, `--print after_move:filepath` for the final file, into a staging
//!   directory; without `--ignore-no-formats-error`, so an item without a usable format is a
//!   permanent "not found", not a retried "finished without a file";
//! - health: `--version`.
//!
//! Each run is the leader of its own process group, and stopping a run (a cancelled
//! download, a search past its timeout) kills the whole group: yt-dlp and the ffmpeg it
//! starts for `-x`.
//!
//! yt-dlp rewrites its cookies file, so each run gets its own copy of `REMOTE_COOKIES_FILE`
//! (created with mode 0600 before a byte is written, removed after). Its errors are read from stderr and sorted: a sign-in or bot
//! check and expired cookies are refusals (the operator must act), a removed, private or
//! unknown video is not found, HTTP 429 is a rate limit (the source pauses: `pacer.rs`),
//! network failures and 5xx are temporary. The program's directory is put first on its
//! `PATH`, so a JavaScript runtime installed beside it (deno, from the `yt-dlp[deno]` extra)
//! is found.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use super::pacer::{Pacer, WAIT_AT_MOST};
use super::{DownloadRequest, Progress, RemoteHit, RemoteSource, SourceError, YTDLP};
use crate::config::{YtDlpConfig, YtSearch};

/// Marks progress lines on stdout.
const PROGRESS_MARK: &str = "musiclib-progress";
/// A download that prints nothing for this long is stopped.
const STALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Most stderr kept for error messages.
const STDERR_LIMIT: usize = 64 * 1024;

/// yt-dlp as a source.
#[derive(Debug)]
pub(crate) struct YtDlpSource {
    config: YtDlpConfig,
    ffmpeg: PathBuf,
    pacer: Pacer,
}

impl YtDlpSource {
    pub(crate) fn new(config: YtDlpConfig, ffmpeg: PathBuf) -> YtDlpSource {
        YtDlpSource {
            pacer: Pacer::new(config.min_interval),
            config,
            ffmpeg,
        }
    }

    /// The URL an id is fetched from.
    fn url_of(&self, source_id: &str) -> String {
        self.config.watch_url.replace("{id}", source_id)
    }

    /// A yt-dlp command with the options every call shares (and a cookies copy, kept alive by
    /// the returned guard).
    fn command(&self) -> Result<(Command, Option<tempfile::TempPath>), SourceError> {
        let mut command = Command::new(&self.config.program);
        command
            .arg("--no-config")
            .arg("--no-warnings")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so a stop reaches the ffmpeg it starts (`ProcessGroup`).
        command.process_group(0);
        // yt-dlp dies with this process, even one killed with SIGKILL (which runs no drop):
        // an orphan would go on writing into a staging directory a retry reuses.
        #[cfg(target_os = "linux")]
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call (prctl).
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)
            });
        }
        if let Some(dir) = self
            .config
            .program
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
        {
            let mut path = OsString::from(dir.as_os_str());
            if let Some(current) = std::env::var_os("PATH") {
                path.push(":");
                path.push(current);
            }
            command.env("PATH", path);
        }
        let cookies = match &self.config.cookies_file {
            Some(file) => {
                let copy = cookies_copy(file)?;
                command.arg("--cookies").arg(&copy);
                Some(copy)
            }
            None => None,
        };
        Ok((command, cookies))
    }

    /// Runs a call that answers JSON on stdout.
    async fn json(&self, args: &[&str], target: &str) -> Result<Value, SourceError> {
        if let Some(left) = self.pacer.paused_for() {
            return Err(paused(left));
        }
        self.pacer.slot().await;
        let (mut command, _cookies) = self.command()?;
        command
            .args(args)
            // Describing an item needs no downloadable format.
            .arg("--ignore-no-formats-error")
            .arg("--")
            .arg(target);
        let child = command.spawn().map_err(|error| self.not_runnable(error))?;
        let mut group = ProcessGroup::of(&child);
        let output = child
            .wait_with_output()
            .await
            .map_err(|error| SourceError::Failed(format!("yt-dlp did not finish: {error}")))?;
        group.ended();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(self.classified(&stderr));
        }
        self.pacer.worked();
        parse_answer(&output.stdout)
    }

    fn not_runnable(&self, error: std::io::Error) -> SourceError {
        SourceError::Refused(format!(
            "yt-dlp ({}) cannot be run: {error}; install it (.ci/serve.sh does when REMOTE_ENABLED is true) or set YTDLP_PATH",
            self.config.program.display()
        ))
    }

    /// Sorts a failed run by what it printed, and pauses the source on a rate limit.
    fn classified(&self, stderr: &str) -> SourceError {
        let error = classify(stderr);
        if let SourceError::RateLimited(_) = &error {
            let pause = self.pacer.rate_limited();
            tracing::warn!(
                pause_s = pause.as_secs(),
                "the yt-dlp source is rate-limited: pausing"
            );
        }
        error
    }
}

#[async_trait]
impl RemoteSource for YtDlpSource {
    fn name(&self) -> &'static str {
        YTDLP
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<RemoteHit>, SourceError> {
        let items = format!("1:{limit}");
        let answer = match self.config.search {
            YtSearch::Music => {
                let url = format!(
                    "https://music.youtube.com/search?q={}#songs",
                    form_urlencoded::byte_serialize(query.as_bytes()).collect::<String>()
                );
                self.json(&["--flat-playlist", "-J", "--playlist-items", &items], &url)
                    .await?
            }
            YtSearch::Videos => {
                self.json(
                    &["--flat-playlist", "-J"],
                    &format!("ytsearch{limit}:{query}"),
                )
                .await?
            }
        };
        Ok(hits_of_search(&answer))
    }

    async fn metadata(&self, source_id: &str) -> Result<RemoteHit, SourceError> {
        let answer = self
            .json(&["-j", "--no-playlist"], &self.url_of(source_id))
            .await?;
        let mut hit = hit_of(&answer).ok_or_else(|| {
            SourceError::Failed("yt-dlp described the item without an id or a title".into())
        })?;
        // The item is what was asked for, whatever id the extractor gives it.
        hit.source_id = source_id.to_string();
        Ok(hit)
    }

    async fn download(
        &self,
        source_id: &str,
        request: DownloadRequest<'_>,
    ) -> Result<PathBuf, SourceError> {
        if let Some(left) = self.pacer.paused_for() {
            if left > WAIT_AT_MOST {
                return Err(paused(left));
            }
            tokio::time::sleep(left).await;
        }
        self.pacer.slot().await;
        let (mut command, _cookies) = self.command()?;
        command
            .args(["--no-playlist", "-f", "bestaudio/best", "-x", "--no-mtime"])
            .args(["--newline", "--progress", "--progress-template"])
            .arg(format!(
                "download:{PROGRESS_MARK} %(progress.downloaded_bytes)s %(progress.total_bytes)s %(progress.total_bytes_estimate)s"
            ))
            .args(["--print", "after_move:filepath"])
            // `--print` implies `--quiet`, which would hide why no file came (max-filesize).
            .arg("--no-quiet")
            .arg("--max-filesize")
            .arg(request.max_bytes.to_string())
            .arg("--ffmpeg-location")
            .arg(&self.ffmpeg)
            .arg("-o")
            .arg(request.dir.join("audio.%(ext)s"))
            .arg("--")
            .arg(self.url_of(source_id));
        let mut child = command.spawn().map_err(|error| self.not_runnable(error))?;
        // Dropped (the download cancelled or failed early): yt-dlp and its ffmpeg are killed.
        let mut group = ProcessGroup::of(&child);
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let stderr_text = tokio::spawn(async move {
            let mut kept = Vec::new();
            let mut buffer = [0u8; 8192];
            while let Ok(read) = stderr.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                if kept.len() < STDERR_LIMIT {
                    kept.extend_from_slice(&buffer[..read]);
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        });
        let mut lines = BufReader::new(stdout).lines();
        let mut final_path = None;
        let mut screen = String::new();
        loop {
            let line = match tokio::time::timeout(STALL_TIMEOUT, lines.next_line()).await {
                Err(_) => {
                    return Err(SourceError::Unavailable(format!(
                        "yt-dlp made no progress for {} s",
                        STALL_TIMEOUT.as_secs()
                    )))
                }
                Ok(Err(error)) => {
                    return Err(SourceError::Failed(format!(
                        "cannot read yt-dlp's output: {error}"
                    )))
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(line))) => line,
            };
            if let Some(progress) = parse_progress(&line) {
                if progress.bytes > request.max_bytes {
                    return Err(too_large(request.max_bytes));
                }
                (request.progress)(progress);
            } else {
                let candidate = Path::new(line.trim());
                if candidate.is_absolute() && candidate.starts_with(request.dir) {
                    final_path = Some(candidate.to_path_buf());
                } else if screen.len() < STDERR_LIMIT {
                    screen.push_str(&line);
                    screen.push('\n');
                }
            }
        }
        let status = child
            .wait()
            .await
            .map_err(|error| SourceError::Failed(format!("yt-dlp did not finish: {error}")))?;
        group.ended();
        let stderr = stderr_text.await.unwrap_or_default();
        if !status.success() {
            return Err(self.classified(&stderr));
        }
        let said = format!("{screen}{stderr}").to_lowercase();
        if said.contains("larger than max-filesize") {
            return Err(too_large(request.max_bytes));
        }
        let Some(path) = final_path.filter(|path| path.is_file()) else {
            return Err(SourceError::Failed(format!(
                "yt-dlp finished without a file{}",
                last_error(&stderr)
                    .map(|line| format!(": {line}"))
                    .unwrap_or_default()
            )));
        };
        self.pacer.worked();
        Ok(path)
    }

    async fn health(&self) -> Result<(), SourceError> {
        let (mut command, _cookies) = self.command()?;
        command.arg("--version");
        let output = command
            .output()
            .await
            .map_err(|error| self.not_runnable(error))?;
        if !output.status.success() {
            return Err(SourceError::Failed(format!(
                "yt-dlp --version failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        if let Some(left) = self.pacer.paused_for() {
            return Err(paused(left));
        }
        Ok(())
    }
}

/// A private copy of the cookies file for one run: the file is created with mode 0600 and
/// only then are the cookies written into it (never a copy that carries the original's
/// mode, even for a moment).
fn cookies_copy(file: &Path) -> Result<tempfile::TempPath, SourceError> {
    use std::io::Write;
    let cannot_write = |error: std::io::Error| {
        SourceError::Failed(format!("cannot copy the cookies file: {error}"))
    };
    let cookies = std::fs::read(file).map_err(|error| {
        SourceError::Refused(format!(
            "the cookies file (REMOTE_COOKIES_FILE) cannot be read: {error}"
        ))
    })?;
    let mut copy = tempfile::Builder::new()
        .prefix("musiclib-cookies-")
        .suffix(".txt")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile()
        .map_err(cannot_write)?;
    copy.write_all(&cookies).map_err(cannot_write)?;
    copy.flush().map_err(cannot_write)?;
    Ok(copy.into_temp_path())
}

/// The process group of one yt-dlp run (it leads it: `process_group(0)`), killed when
/// dropped before the run ended, so the ffmpeg yt-dlp starts dies with it.
struct ProcessGroup(Option<rustix::process::Pid>);

impl ProcessGroup {
    fn of(child: &tokio::process::Child) -> ProcessGroup {
        ProcessGroup(
            child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id as i32)),
        )
    }

    /// yt-dlp ended by itself (and was reaped): nothing to kill, and its id may be reused.
    fn ended(&mut self) {
        self.0 = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

fn paused(left: Duration) -> SourceError {
    SourceError::RateLimited(format!(
        "YouTube rate-limited this server: the source pauses for {} more s",
        left.as_secs().max(1)
    ))
}

fn too_large(limit: u64) -> SourceError {
    SourceError::TooLarge(format!(
        "the audio is larger than the limit of {limit} bytes (MAX_UPLOAD_BYTES)"
    ))
}

/// What a successful JSON call printed on stdout (`-J`, `-j`), as JSON.
pub(crate) fn parse_answer(stdout: &[u8]) -> Result<Value, SourceError> {
    serde_json::from_slice(stdout).map_err(|error| {
        SourceError::Failed(format!(
            "yt-dlp printed something that is not JSON: {error}"
        ))
    })
}

/// A progress line: `musiclib-progress DOWNLOADED TOTAL ESTIMATE` (yt-dlp prints `NA` for
/// what it does not know, and numbers may be floats).
pub(crate) fn parse_progress(line: &str) -> Option<Progress> {
    let mut fields = line.trim().strip_prefix(PROGRESS_MARK)?.split_whitespace();
    let number = |text: Option<&str>| -> Option<u64> {
        let value: f64 = text?.parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value as u64)
    };
    let bytes = number(fields.next())?;
    let total = number(fields.next());
    let estimate = number(fields.next());
    Some(Progress {
        bytes,
        total: total.or(estimate),
    })
}

/// The last `ERROR:` line yt-dlp printed, without the "(caused by …)" that repeats it.
fn last_error(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .rev()
        .find(|line| line.starts_with("ERROR:"))
        .map(|line| {
            let line = line.trim_start_matches("ERROR:").trim();
            line.find(" (caused by ").map_or(line, |at| &line[..at])
        })
}

/// Sorts yt-dlp's complaint (its stderr) into what musiclib does about it.
pub(crate) fn classify(stderr: &str) -> SourceError {
    // A bare "ERROR:" says nothing: the last line that does speaks instead.
    let said = last_error(stderr)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty() && *line != "ERROR:")
                .unwrap_or("yt-dlp failed without a message")
                .to_string()
        });
    let text = stderr.to_lowercase().replace('\u{2019}', "'");
    let has = |needles: &[&str]| needles.iter().any(|needle| text.contains(needle));
    if has(&[
        "sign in to confirm",
        "not a bot",
        "confirm your age",
        "sign in to view",
    ]) {
        SourceError::Refused(format!(
            "YouTube asks to sign in (bot or age check): give REMOTE_COOKIES_FILE the cookies of a signed-in browser ({said})"
        ))
    } else if has(&[
        "cookies are no longer valid",
        "cookies have expired",
        "invalid cookies",
        "cookies file",
    ]) {
        SourceError::Refused(format!(
            "the cookies in REMOTE_COOKIES_FILE are no longer valid: export them again ({said})"
        ))
    } else if has(&[
        "http error 429",
        "too many requests",
        "rate-limit",
        "rate limit",
        "ratelimit",
    ]) {
        SourceError::RateLimited(format!("YouTube rate-limited this server ({said})"))
    } else if has(&[
        "video unavailable",
        "private video",
        "this video has been removed",
        "this video is not available",
        "is not available in your country",
        "members-only",
        "members only",
        "http error 404",
        "http error 410",
        "unsupported url",
        "does not exist",
        "no video formats found",
        "requested format is not available",
        "has been terminated",
        "account associated with this video has been",
    ]) {
        SourceError::NotFound(said)
    } else if has(&[
        "http error 5",
        "unable to download",
        "connection refused",
        "connection reset",
        "timed out",
        "name or service not known",
        "temporary failure in name resolution",
        "network is unreachable",
        "no route to host",
        "remote end closed connection",
        "incompleteread",
        "ssl",
    ]) {
        SourceError::Unavailable(said)
    } else {
        SourceError::Failed(said)
    }
}

/// The hits of a `--flat-playlist -J` search.
pub(crate) fn hits_of_search(answer: &Value) -> Vec<RemoteHit> {
    answer["entries"]
        .as_array()
        .map(|entries| entries.iter().filter_map(hit_of).collect())
        .unwrap_or_default()
}

/// One yt-dlp info dict (a flat search entry or a `-j` answer) as a hit. Music items carry
/// `track`, `artists` and `album`; plain videos only a title and a channel. A video titled
/// "Artist - Title" is read that way (see [`split_video_title`]); otherwise the channel's
/// name is the artist (a "Topic" channel's without the suffix). An entry without an id or a
/// title, or whose id could not travel safely, is no hit.
pub(crate) fn hit_of(info: &Value) -> Option<RemoteHit> {
    let text = |value: &Value| {
        value
            .as_str()
            .map(|text| text.trim().to_string())
            .filter(|text| !text.is_empty())
    };
    let source_id = text(&info["id"])?;
    super::check_id_chars(&source_id).ok()?;
    let list = |name: &str| -> Vec<String> {
        info[name]
            .as_array()
            .map(|items| items.iter().filter_map(text).collect())
            .unwrap_or_default()
    };
    let artists = list("artists");
    let creators = list("creators");
    let music_artist = (!artists.is_empty())
        .then(|| artists.join(", "))
        .or_else(|| text(&info["artist"]))
        .or_else(|| (!creators.is_empty()).then(|| creators.join(", ")))
        .or_else(|| text(&info["creator"]));
    let channel = text(&info["channel"])
        .or_else(|| text(&info["uploader"]))
        .map(|name| name.trim_end_matches(" - Topic").to_string());
    let (title, artist) = match (text(&info["track"]), music_artist) {
        (Some(track), artist) => (track, artist.or_else(|| channel.clone())),
        (None, Some(artist)) => (text(&info["title"])?, Some(artist)),
        (None, None) => {
            let title = text(&info["title"])?;
            let topic = text(&info["channel"]).is_some_and(|name| name.ends_with(" - Topic"));
            match split_video_title(&title, channel.as_deref()).filter(|_| !topic) {
                Some((artist, title)) => (title, Some(artist)),
                None => (title, channel.clone()),
            }
        }
    };
    // The channel's id is the artist's remote identity only when the artist is the channel
    // (its name, or read from a title that names it): an "Artist - Title" upload by a label,
    // a fan or a cover band must not tie that artist to the uploader.
    let artist_source_id = text(&info["channel_id"])
        .filter(|id| super::check_id_chars(id).is_ok())
        .filter(|_| {
            artist
                .as_deref()
                .zip(channel.as_deref())
                .is_some_and(|(artist, channel)| names_channel(artist, channel))
        });
    let album_artists = list("album_artists");
    let number = |value: &Value| {
        value
            .as_f64()
            .filter(|number| number.is_finite() && *number > 0.0)
    };
    let year = info["release_year"]
        .as_i64()
        .or_else(|| text(&info["release_date"]).and_then(|date| date.get(..4)?.parse().ok()))
        .filter(|year| *year > 0);
    let thumbnail = text(&info["thumbnail"]).or_else(|| {
        info["thumbnails"]
            .as_array()
            .and_then(|thumbnails| thumbnails.iter().rev().find_map(|item| text(&item["url"])))
    });
    Some(RemoteHit {
        source: YTDLP.to_string(),
        source_id,
        title,
        artist,
        artist_source_id,
        album: text(&info["album"]),
        album_source_id: None,
        album_artist: (!album_artists.is_empty())
            .then(|| album_artists.join(", "))
            .or_else(|| text(&info["album_artist"])),
        genre: info["genres"]
            .as_array()
            .and_then(|genres| genres.iter().find_map(text))
            .or_else(|| text(&info["genre"])),
        track_number: info["track_number"].as_i64().filter(|number| *number > 0),
        duration_ms: number(&info["duration"]).map(|seconds| (seconds * 1000.0).round() as i64),
        year,
        thumbnail,
        size_bytes: number(&info["filesize"])
            .or_else(|| number(&info["filesize_approx"]))
            .map(|size| size as i64),
    })
}

/// Reads a video title of the usual "Artist - Title (Official Video)" form: the side that
/// names the channel is the artist (a label's upload of "Title - Artist" is read right),
/// else the left one; marks such as "(Official Audio)", "[Lyric Video]" or "(HD)" are
/// dropped, while "(Live)", "(Radio Edit)" or "(cover)" stay. `None` when the title has no
/// " - " (or an en or em dash) between two non-empty sides.
pub(crate) fn split_video_title(title: &str, channel: Option<&str>) -> Option<(String, String)> {
    let (left, right) = [" - ", " – ", " — "]
        .iter()
        .find_map(|dash| title.split_once(dash))?;
    let (left, right) = (left.trim(), clean_video_title(right));
    if left.is_empty() || right.is_empty() {
        return None;
    }
    let names = |side: &str| channel.is_some_and(|channel| names_channel(side, channel));
    if names(&right) && !names(left) {
        return Some((right, left.to_string()));
    }
    Some((left.to_string(), right))
}

/// Whether `name` is the channel's name ("Daft Punk" for "DaftPunkVEVO", "Daft Punk - Topic"
/// or "Daft Punk Official"), ignoring case and spaces.
fn names_channel(name: &str, channel: &str) -> bool {
    let key = |text: &str| text.to_lowercase().replace(' ', "");
    let channel = key(channel
        .trim_end_matches(" - Topic")
        .trim_end_matches("VEVO")
        .trim_end_matches(" Official")
        .trim());
    !channel.is_empty() && key(name) == channel
}

/// A video title without its bracketed marks of no musical meaning ("(Official Video)",
/// "[Lyrics]", "(HD)", "(Visualizer)").
fn clean_video_title(title: &str) -> String {
    const MARKS: [&str; 8] = [
        "official", "lyric", "audio", "video", "visuali", "hd", "hq", "4k",
    ];
    let mut kept = String::with_capacity(title.len());
    let mut rest = title;
    while let Some(start) = rest.find(['(', '[']) {
        let close = if rest[start..].starts_with('(') {
            ')'
        } else {
            ']'
        };
        let Some(length) = rest[start..].find(close) else {
            break;
        };
        let inside = rest[start + 1..start + length].to_lowercase();
        let words: Vec<&str> = inside
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let mark = !words.is_empty()
            && words
                .iter()
                .all(|word| MARKS.iter().any(|mark| word.starts_with(mark)) || *word == "music");
        kept.push_str(&rest[..start]);
        if !mark {
            kept.push_str(&rest[start..=start + length]);
        }
        rest = &rest[start + length + 1..];
    }
    kept.push_str(rest);
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_are_read() {
        assert_eq!(
            parse_progress("musiclib-progress 1024 4096 NA"),
            Some(Progress {
                bytes: 1024,
                total: Some(4096)
            })
        );
        assert_eq!(
            parse_progress("musiclib-progress 10.0 NA 2048.5"),
            Some(Progress {
                bytes: 10,
                total: Some(2048)
            })
        );
        assert_eq!(parse_progress("musiclib-progress NA NA NA"), None);
        assert_eq!(parse_progress("/tmp/x/audio.m4a"), None);
    }

    #[test]
    fn complaints_are_sorted() {
        let refused = classify("ERROR: [youtube] abc: Sign in to confirm you\u{2019}re not a bot. Use --cookies-from-browser or --cookies for the authentication.");
        assert!(
            matches!(refused, SourceError::Refused(message) if message.contains("REMOTE_COOKIES_FILE"))
        );
        assert!(matches!(
            classify("ERROR: [youtube] abc: Video unavailable. This video is private"),
            SourceError::NotFound(_)
        ));
        assert!(matches!(
            classify("ERROR: unable to download video data: HTTP Error 429: Too Many Requests"),
            SourceError::RateLimited(_)
        ));
        assert!(matches!(
            classify("ERROR: [generic] Unable to download webpage: <urlopen error [Errno 111] Connection refused>"),
            SourceError::Unavailable(_)
        ));
        assert!(matches!(
            classify("ERROR: [generic] Unable to download webpage: HTTP Error 404: Not Found"),
            SourceError::NotFound(_)
        ));
        assert!(matches!(
            classify("ERROR: unable to download video data: HTTP Error 503: Service Unavailable"),
            SourceError::Unavailable(_)
        ));
        assert!(
            matches!(classify("ERROR: something new"), SourceError::Failed(message) if message == "something new")
        );
    }

    /// Found by the `remote_json` fuzz target: a bare `ERROR:` line gave an empty reason.
    #[test]
    fn a_bare_error_line_still_gives_a_reason() {
        let crash = String::from_utf8_lossy(
            b"ERROR: \n\0[Py: Video unava\xf4l{\"subsonic-response\":{\"\xcd\xcd",
        );
        assert_eq!(
            classify(&crash),
            SourceError::Failed(
                "\0[Py: Video unava\u{fffd}l{\"subsonic-response\":{\"\u{fffd}\u{fffd}".into()
            )
        );
        assert_eq!(
            classify("WARNING: slow\nERROR:   \n\n"),
            SourceError::Failed("WARNING: slow".into())
        );
        for bare in ["", "ERROR:", "ERROR: \n", "\n ERROR: \n"] {
            assert_eq!(
                classify(bare).message(),
                "yt-dlp failed without a message",
                "{bare:?}"
            );
        }
        // The JSON answers of the same target: deep nesting is an error, not a crash.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse_answer(deep.as_bytes()).is_err());
        assert!(
            parse_answer(b"{\"entries\":7}").is_ok_and(|answer| hits_of_search(&answer).is_empty())
        );
    }

    fn fixture(name: &str) -> Value {
        let text = match name {
            "search_videos" => include_str!("../../tests/fixtures/ytdlp/search_videos.json"),
            "search_music" => include_str!("../../tests/fixtures/ytdlp/search_music.json"),
            "video_music" => include_str!("../../tests/fixtures/ytdlp/video_music.json"),
            "video_plain" => include_str!("../../tests/fixtures/ytdlp/video_plain.json"),
            "video_cover" => include_str!("../../tests/fixtures/ytdlp/video_cover.json"),
            "generic_direct" => include_str!("../../tests/fixtures/ytdlp/generic_direct.json"),
            _ => unreachable!("{name}"),
        };
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_video_search_gives_artists_durations_and_channels() {
        let hits = hits_of_search(&fixture("search_videos"));
        let summary: Vec<_> = hits
            .iter()
            .map(|hit| {
                (
                    hit.source_id.as_str(),
                    hit.artist.as_deref(),
                    hit.title.as_str(),
                    hit.duration_ms,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "5NV6Rdv1a3I",
                    Some("Daft Punk"),
                    "Get Lucky ft. Pharrell Williams, Nile Rodgers",
                    Some(369_000)
                ),
                (
                    "h5EofwRzit0",
                    Some("Daft Punk"),
                    "Get Lucky (Radio Edit) [feat. Pharrell Williams and Nile Rodgers]",
                    Some(248_000)
                ),
                (
                    "4D7u5KF7SP8",
                    Some("Kitchen Sessions"),
                    "Get Lucky (Daft Punk cover)",
                    Some(241_000)
                ),
            ]
        );
        assert_eq!(
            hits[0].artist_source_id.as_deref(),
            Some("UC_kRDKYrUlrbtrSiyu5Tflg")
        );
        assert!(hits[0].thumbnail.as_deref().unwrap().contains("hq720"));
        assert!(hits
            .iter()
            .all(|hit| hit.source == YTDLP && hit.album.is_none()));
    }

    #[test]
    fn a_music_search_gives_titles_only() {
        let hits = hits_of_search(&fixture("search_music"));
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[1].title, "Get Lucky");
        assert!(hits
            .iter()
            .all(|hit| hit.artist.is_none() && hit.duration_ms.is_none()));
    }

    #[test]
    fn a_music_item_gives_track_artists_album_and_year() {
        let hit = hit_of(&fixture("video_music")).unwrap();
        assert_eq!(
            hit.title,
            "Get Lucky (Radio Edit) [feat. Pharrell Williams and Nile Rodgers]"
        );
        assert_eq!(
            hit.artist.as_deref(),
            Some("Daft Punk, Pharrell Williams, Nile Rodgers")
        );
        assert_eq!(hit.album.as_deref(), Some("Get Lucky"));
        assert_eq!(hit.year, Some(2013));
        assert_eq!(hit.duration_ms, Some(248_000));
        assert_eq!(hit.size_bytes, Some(4_190_112));
    }

    #[test]
    fn a_plain_video_is_read_from_its_title() {
        let hit = hit_of(&fixture("video_plain")).unwrap();
        assert_eq!(hit.artist.as_deref(), Some("Daft Punk"));
        assert_eq!(hit.title, "Get Lucky ft. Pharrell Williams, Nile Rodgers");
        assert_eq!(hit.album, None);
        assert_eq!(hit.year, None);
        let cover = hit_of(&fixture("video_cover")).unwrap();
        assert_eq!(
            (cover.artist.as_deref(), cover.title.as_str()),
            (Some("Kitchen Sessions"), "Get Lucky (Daft Punk cover)")
        );
    }

    #[test]
    fn only_the_channel_itself_gives_the_artist_its_id() {
        // The artist named by the title is the channel: the channel is its identity.
        let own = hit_of(&fixture("video_plain")).unwrap();
        assert_eq!(
            own.artist_source_id.as_deref(),
            Some("UC_kRDKYrUlrbtrSiyu5Tflg")
        );
        // A label's or a fan's upload of "Artist - Title": the artist is not the uploader.
        let upload = serde_json::json!({"id": "abc123", "title": "Daft Punk - Get Lucky (Official Audio)",
            "channel": "Some Label Records", "uploader": "Some Label Records", "channel_id": "UClabel"});
        let hit = hit_of(&upload).unwrap();
        assert_eq!(hit.artist.as_deref(), Some("Daft Punk"));
        assert_eq!(hit.artist_source_id, None);
        // A VEVO channel names its artist.
        let vevo = serde_json::json!({"id": "abc124", "title": "Daft Punk - Get Lucky",
            "channel": "DaftPunkVEVO", "channel_id": "UCvevo"});
        assert_eq!(
            hit_of(&vevo).unwrap().artist_source_id.as_deref(),
            Some("UCvevo")
        );
        // No split: the channel is the artist, and its id comes with it.
        let vlog = serde_json::json!({"id": "abc125", "title": "Studio day",
            "channel": "Kitchen Sessions", "channel_id": "UCkitchen"});
        assert_eq!(
            hit_of(&vlog).unwrap().artist_source_id.as_deref(),
            Some("UCkitchen")
        );
        // A Topic channel's song credited to several artists is not the channel's artist.
        let music = hit_of(&fixture("video_music")).unwrap();
        assert_eq!(music.artist_source_id, None);
    }

    #[tokio::test]
    async fn a_stopped_run_kills_what_ytdlp_started() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child.pid");
        // A yt-dlp that starts a helper (as it starts ffmpeg for -x) and hangs.
        let program = dir.path().join("yt-dlp");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\nsleep 300 &\necho $! > {}\nwait\n",
                pid_file.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut config = YtDlpConfig::new(&program);
        config.min_interval = Duration::ZERO;
        let source = YtDlpSource::new(config, "ffmpeg".into());
        // Runs until the helper has started (it writes its pid), then is stopped (dropped).
        // (The deadline only guards against a hang.)
        let mut search = Box::pin(source.search("x", 1));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let pid: u32 = loop {
            tokio::select! {
                answer = &mut search => panic!("the run ended by itself (ok: {})", answer.is_ok()),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let written = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if let Some(pid) = written
                .strip_suffix('\n')
                .and_then(|pid| pid.trim().parse().ok())
            {
                break pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the helper never started"
            );
        };
        drop(search);
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while alive() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(), "the helper {pid} outlived the stopped run");
    }

    #[test]
    fn the_cookies_copy_is_private_and_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let original = dir.path().join("cookies.txt");
        std::fs::write(
            &original,
            "# Netscape HTTP Cookie File\n.youtube.com\tTRUE\t/\tTRUE\t0\tSID\tx\n",
        )
        .unwrap();
        std::fs::set_permissions(&original, std::fs::Permissions::from_mode(0o644)).unwrap();
        let copy = cookies_copy(&original).unwrap();
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            std::fs::read(&original).unwrap()
        );
        assert_eq!(
            std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(matches!(
            cookies_copy(&dir.path().join("missing.txt")),
            Err(SourceError::Refused(_))
        ));
    }

    #[test]
    fn a_direct_file_is_named_by_its_title() {
        let hit = hit_of(&fixture("generic_direct")).unwrap();
        assert_eq!(hit.source_id, "song-ok");
        assert!(!hit.title.is_empty());
    }

    #[test]
    fn video_titles_are_split_and_cleaned() {
        let split = |title: &str, channel: Option<&str>| split_video_title(title, channel);
        assert_eq!(
            split(
                "Get Lucky – Daft Punk [Official Music Video]",
                Some("DaftPunkVEVO")
            ),
            Some(("Daft Punk".into(), "Get Lucky".into()))
        );
        assert_eq!(
            split(
                "Nirvana - Lithium (Live at Reading 1992) (HD)",
                Some("Nirvana")
            ),
            Some(("Nirvana".into(), "Lithium (Live at Reading 1992)".into()))
        );
        assert_eq!(split("Just a vlog", Some("Someone")), None);
        assert_eq!(split(" - (Official Video)", None), None);
        assert_eq!(
            clean_video_title("Song (Lyrics) [4K] (Acoustic)"),
            "Song (Acoustic)"
        );
        assert_eq!(clean_video_title("Song (unclosed"), "Song (unclosed");
    }
}
