//! For the fuzz targets only (`fuzz/` at the repository root): the smallest entry points into
//! parsers that are private to their module, so a target runs the very code the server runs.
//! Not an API: hidden from the docs, called by nothing else, and none of it changes what the
//! wrapped code does.

use crate::auth::legacy::LegacyCredentials;
use crate::remote::{subsonic, ytdlp, Progress, RemoteHit, SourceError};
use crate::social::{NewLike, NewPlay};
use crate::Result;

/// Whether legacy `credentials` prove knowledge of the app password `password` (the check
/// `Accounts::authenticate_legacy` makes once it has the account).
pub fn legacy_credentials_match(credentials: &LegacyCredentials, password: &str) -> bool {
    credentials.matches(password)
}

/// The clear password of a Subsonic `p` parameter (`enc:` hex decoded); `None` for bad hex.
pub fn legacy_clear_password(raw: &str) -> Option<String> {
    LegacyCredentials::clear_password(raw)
}

/// The checks `Social::push_events` makes on a push before it reads or writes anything.
pub fn check_push(likes: &[NewLike], plays: &[NewPlay]) -> Result<()> {
    crate::social::check_push(likes, plays)
}

/// The hits of a yt-dlp search, from what yt-dlp printed on stdout (`--flat-playlist -J`).
pub fn ytdlp_search(stdout: &[u8]) -> std::result::Result<Vec<RemoteHit>, SourceError> {
    ytdlp::parse_answer(stdout).map(|answer| ytdlp::hits_of_search(&answer))
}

/// One item described by yt-dlp (`-j`), from what it printed on stdout; `None` when the
/// description has no usable id or title.
pub fn ytdlp_item(stdout: &[u8]) -> std::result::Result<Option<RemoteHit>, SourceError> {
    ytdlp::parse_answer(stdout).map(|answer| ytdlp::hit_of(&answer))
}

/// A line of yt-dlp's download output read as progress.
pub fn ytdlp_progress(line: &str) -> Option<Progress> {
    ytdlp::parse_progress(line)
}

/// yt-dlp's stderr of a failed run, sorted.
pub fn ytdlp_classify(stderr: &str) -> SourceError {
    ytdlp::classify(stderr)
}

/// A body of the Subsonic source's JSON answer, as the source reads it: JSON (what reqwest's
/// `Response::json` parses), then its `subsonic-response` or the error it carries.
fn subsonic_answer(body: &[u8]) -> std::result::Result<serde_json::Value, SourceError> {
    let body: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        SourceError::Failed("the Subsonic server answered something that is not JSON".into())
    })?;
    subsonic::answer_of(&body)
}

/// The hits of a Subsonic `search3` answer body.
pub fn subsonic_search(body: &[u8]) -> std::result::Result<Vec<RemoteHit>, SourceError> {
    subsonic_answer(body).map(|answer| subsonic::hits_of_search(&answer))
}

/// The song of a Subsonic `getSong` answer body; `None` without a usable id or title.
pub fn subsonic_song(body: &[u8]) -> std::result::Result<Option<RemoteHit>, SourceError> {
    subsonic_answer(body).map(|answer| subsonic::hit_of(&answer["song"]))
}

/// The segment lengths a stored HLS playlist gives back.
pub fn hls_playlist_lengths(text: &str) -> Vec<f64> {
    crate::media::hls::parse_playlist(text)
}
