//! The Last.fm client: `track.scrobble` and `track.updateNowPlaying` (API 2.0).
//!
//! Every call is a form POST to the base URL (`LASTFM_BASE_URL`) carrying the method, the
//! server's API key, the user's session key (`sk`) and `api_sig`: the MD5 of every parameter
//! but `format` and `callback`, sorted by name and concatenated as name + value, followed by
//! the API secret. Answers are asked for as JSON (`format=json`). An error answer is
//! `{"error": code, "message": "…"}`, whatever the HTTP status.

use std::time::Duration;

use md5::{Digest, Md5};
use serde::Deserialize;
use serde_json::Value;

use super::{Play, SendError};

/// The most scrobbles Last.fm takes in one `track.scrobble` call.
pub(crate) const MAX_BATCH: usize = 50;

/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Last.fm error codes worth another try: 8 (operation failed: a backend failed), 11 (service
/// offline), 16 (temporarily unavailable), 29 (rate limit exceeded).
const TEMPORARY: [i64; 4] = [8, 11, 16, 29];
/// Invalid session key: the user revoked musiclib's access (or the key was never valid).
const INVALID_SESSION: i64 = 9;
/// Ignored-scrobble code for "daily scrobble limit exceeded": send it again tomorrow.
const DAILY_LIMIT: i64 = 5;

/// The client, with the server's API account.
#[derive(Clone)]
pub(crate) struct Lastfm {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    api_secret: String,
}

/// What Last.fm did with a batch.
#[derive(Debug, Default)]
pub(crate) struct BatchOutcome {
    /// Scrobbles it counted.
    pub accepted: usize,
    /// Scrobbles it refused for good (ignored artist or track, timestamp out of range), with
    /// its reason: they are not sent again.
    pub ignored: Vec<(usize, String)>,
    /// Scrobbles to send again later (the user's daily limit).
    pub later: Vec<usize>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: i64,
    #[serde(default)]
    message: String,
}

impl Lastfm {
    pub(crate) fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: &str,
        api_secret: &str,
    ) -> Lastfm {
        Lastfm {
            http,
            base_url: base_url.to_string(),
            api_key: api_key.to_string(),
            api_secret: api_secret.to_string(),
        }
    }

    /// Scrobbles `plays` (at most [`MAX_BATCH`]) for the user of `session_key`.
    pub(crate) async fn scrobble(
        &self,
        session_key: &str,
        plays: &[Play],
    ) -> Result<BatchOutcome, SendError> {
        debug_assert!(!plays.is_empty() && plays.len() <= MAX_BATCH);
        let mut params = Vec::new();
        for (index, play) in plays.iter().enumerate() {
            let at = |name: &str| format!("{name}[{index}]");
            track_params(play, |name, value| params.push((at(name), value)));
            params.push((at("timestamp"), play.played_at.to_string()));
        }
        let body = self.call("track.scrobble", session_key, params).await?;
        Ok(batch_outcome(&body, plays.len()))
    }

    /// Tells Last.fm the user of `session_key` is playing `play` now.
    pub(crate) async fn update_now_playing(
        &self,
        session_key: &str,
        play: &Play,
    ) -> Result<(), SendError> {
        let mut params = Vec::new();
        track_params(play, |name, value| params.push((name.to_string(), value)));
        self.call("track.updateNowPlaying", session_key, params)
            .await
            .map(drop)
    }

    /// Signs and sends one call; answers its JSON body, or how it failed.
    async fn call(
        &self,
        method: &str,
        session_key: &str,
        mut params: Vec<(String, String)>,
    ) -> Result<Value, SendError> {
        params.push(("method".into(), method.into()));
        params.push(("api_key".into(), self.api_key.clone()));
        params.push(("sk".into(), session_key.into()));
        let signature = sign(&params, &self.api_secret);
        params.push(("api_sig".into(), signature));
        params.push(("format".into(), "json".into()));
        let request = self
            .http
            .post(&self.base_url)
            .form(&params)
            .timeout(TIMEOUT);
        let response = crate::outside::send(crate::metrics::Service::LastFm, request)
            .await
            .map_err(|error| SendError::transport("Last.fm", &error))?;
        let status = response.status();
        let text = crate::outside::read_capped(response, 1024 * 1024)
            .await
            .map(|body| String::from_utf8_lossy(&body).into_owned())
            .map_err(|error| SendError::Temporary(format!("Last.fm: {error}")))?;
        if let Ok(error) = serde_json::from_str::<ErrorBody>(&text) {
            return Err(classify(error.error, &error.message));
        }
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(SendError::Temporary(format!(
                "Last.fm answered HTTP {status}"
            )));
        }
        if !status.is_success() {
            return Err(SendError::Permanent(format!(
                "Last.fm answered HTTP {status}"
            )));
        }
        serde_json::from_str(&text)
            .map_err(|_| SendError::Temporary("Last.fm answered something that is not JSON".into()))
    }
}

/// The parameters naming a track, as `track.scrobble` (indexed) and
/// `track.updateNowPlaying` take them.
fn track_params(play: &Play, mut push: impl FnMut(&str, String)) {
    push("artist", play.artist.clone());
    push("track", play.title.clone());
    if let Some(album) = &play.album {
        push("album", album.clone());
    }
    if let Some(album_artist) = &play.album_artist {
        push("albumArtist", album_artist.clone());
    }
    if let Some(number) = play.track_number {
        push("trackNumber", number.to_string());
    }
    if let Some(duration) = play.duration_ms {
        push("duration", (duration / 1000).to_string());
    }
    if let Some(mbid) = &play.recording_mbid {
        push("mbid", mbid.clone());
    }
}

/// Last.fm's `api_sig`: MD5 (lowercase hex) of the parameters but `format` and `callback`,
/// sorted by name, each as name followed by value, then the secret.
pub(crate) fn sign(params: &[(String, String)], secret: &str) -> String {
    let mut sorted: Vec<&(String, String)> = params
        .iter()
        .filter(|(name, _)| name != "format" && name != "callback")
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Md5::new();
    for (name, value) in sorted {
        hasher.update(name.as_bytes());
        hasher.update(value.as_bytes());
    }
    hasher.update(secret.as_bytes());
    hex::encode(hasher.finalize())
}

fn classify(code: i64, message: &str) -> SendError {
    let said = format!("Last.fm error {code}: {message}");
    if code == INVALID_SESSION {
        SendError::Revoked(said)
    } else if TEMPORARY.contains(&code) {
        SendError::Temporary(said)
    } else {
        SendError::Permanent(said)
    }
}

/// Reads `{"scrobbles": {"@attr": {"accepted", "ignored"}, "scrobble": … }}`: `scrobble` is
/// one object for a single scrobble and a list for several, each with
/// `ignoredMessage: {"code", "#text"}` (code "0" when accepted). Numbers may come as strings.
fn batch_outcome(body: &Value, sent: usize) -> BatchOutcome {
    let scrobbles = &body["scrobbles"];
    let items: Vec<&Value> = match &scrobbles["scrobble"] {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![&scrobbles["scrobble"]],
        _ => Vec::new(),
    };
    let mut outcome = BatchOutcome::default();
    if items.len() != sent {
        // No per-scrobble answer to go by: trust the totals.
        outcome.accepted = number(&scrobbles["@attr"]["accepted"]).unwrap_or(0) as usize;
        return outcome;
    }
    for (index, item) in items.into_iter().enumerate() {
        let ignored = &item["ignoredMessage"];
        match number(&ignored["code"]).unwrap_or(0) {
            0 => outcome.accepted += 1,
            DAILY_LIMIT => outcome.later.push(index),
            code => {
                let text = ignored["#text"].as_str().unwrap_or_default();
                outcome.ignored.push((
                    index,
                    format!("ignored by Last.fm (code {code}) {text}")
                        .trim()
                        .to_string(),
                ));
            }
        }
    }
    outcome
}

fn number(value: &Value) -> Option<i64> {
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|text| text.trim().parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_lastfms() {
        // Sorted: api_key, artist, method, sk, timestamp, track; format left out.
        let params = vec![
            ("track".to_string(), "Believe".to_string()),
            ("artist".into(), "Cher".into()),
            ("timestamp".into(), "1700000000".into()),
            ("method".into(), "track.scrobble".into()),
            ("api_key".into(), "KEY".into()),
            ("sk".into(), "SESSION".into()),
            ("format".into(), "json".into()),
        ];
        let expected = hex::encode(Md5::digest(
            "api_keyKEYartistChermethodtrack.scrobbleskSESSIONtimestamp1700000000trackBelieveSECRET",
        ));
        assert_eq!(sign(&params, "SECRET"), expected);
    }

    #[test]
    fn a_single_scrobble_answer_is_an_object_and_codes_may_be_strings() {
        let body: Value = serde_json::from_str(
            r##"{"scrobbles":{"scrobble":{"artist":{"corrected":"0","#text":"Cher"},"ignoredMessage":{"code":"0","#text":""},"timestamp":"1700000000"},"@attr":{"accepted":1,"ignored":0}}}"##,
        )
        .unwrap();
        let outcome = batch_outcome(&body, 1);
        assert_eq!(outcome.accepted, 1);
        assert!(outcome.ignored.is_empty() && outcome.later.is_empty());
    }

    #[test]
    fn ignored_scrobbles_are_told_apart_from_the_daily_limit() {
        let body: Value = serde_json::from_str(
            r##"{"scrobbles":{"scrobble":[
                {"ignoredMessage":{"code":"0","#text":""}},
                {"ignoredMessage":{"code":"3","#text":"Timestamp too old"}},
                {"ignoredMessage":{"code":"5","#text":"Daily scrobble limit exceeded"}}
            ],"@attr":{"accepted":1,"ignored":2}}}"##,
        )
        .unwrap();
        let outcome = batch_outcome(&body, 3);
        assert_eq!(outcome.accepted, 1);
        assert_eq!(outcome.ignored.len(), 1);
        assert_eq!(outcome.ignored[0].0, 1);
        assert!(outcome.ignored[0].1.contains("Timestamp too old"));
        assert_eq!(outcome.later, vec![2]);
    }

    #[test]
    fn error_codes_are_classified() {
        assert!(matches!(
            classify(9, "Invalid session key"),
            SendError::Revoked(_)
        ));
        for code in [8, 11, 16, 29] {
            assert!(matches!(classify(code, ""), SendError::Temporary(_)));
        }
        assert!(matches!(
            classify(6, "Invalid parameters"),
            SendError::Permanent(_)
        ));
        assert!(matches!(
            classify(10, "Invalid API key"),
            SendError::Permanent(_)
        ));
    }
}
