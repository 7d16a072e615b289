//! The ListenBrainz client: `POST /1/submit-listens` with the user's token
//! (`Authorization: Token …`), base URL `LISTENBRAINZ_BASE_URL`.
//!
//! One listen goes as `listen_type: "single"`, several as `"import"` (at most
//! [`MAX_BATCH`] here; ListenBrainz takes up to 1,000), what is playing now as
//! `"playing_now"` (no `listened_at`). Success is HTTP 200 `{"status": "ok"}`; an error is
//! `{"code", "error"}` with its status: 401 is a token that no longer works.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Play, SendError};

/// Listens per `import` submission.
pub(crate) const MAX_BATCH: usize = 100;

/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The client.
#[derive(Clone)]
pub(crate) struct ListenBrainz {
    http: reqwest::Client,
    base_url: String,
}

impl ListenBrainz {
    pub(crate) fn new(http: reqwest::Client, base_url: &str) -> ListenBrainz {
        ListenBrainz {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
        }
    }

    /// Submits `plays` as listens (`single` for one, `import` for more).
    pub(crate) async fn submit(&self, token: &str, plays: &[Play]) -> Result<(), SendError> {
        debug_assert!(!plays.is_empty() && plays.len() <= MAX_BATCH);
        let listen_type = if plays.len() == 1 { "single" } else { "import" };
        let payload: Vec<Value> = plays
            .iter()
            .map(|play| {
                json!({
                    "listened_at": play.played_at,
                    "track_metadata": track_metadata(play),
                })
            })
            .collect();
        self.send(token, listen_type, payload).await
    }

    /// Tells ListenBrainz the user is playing `play` now.
    pub(crate) async fn playing_now(&self, token: &str, play: &Play) -> Result<(), SendError> {
        let payload = vec![json!({ "track_metadata": track_metadata(play) })];
        self.send(token, "playing_now", payload).await
    }

    async fn send(
        &self,
        token: &str,
        listen_type: &str,
        payload: Vec<Value>,
    ) -> Result<(), SendError> {
        let request = self
            .http
            .post(format!("{}/1/submit-listens", self.base_url))
            .header(reqwest::header::AUTHORIZATION, format!("Token {token}"))
            .json(&json!({ "listen_type": listen_type, "payload": payload }))
            .timeout(TIMEOUT);
        let response = crate::outside::send(crate::metrics::Service::ListenBrainz, request)
            .await
            .map_err(|error| SendError::transport("ListenBrainz", &error))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let said = crate::outside::json_capped::<Value>(response, 64 * 1024)
            .await
            .ok()
            .and_then(|body| body["error"].as_str().map(str::to_string))
            .unwrap_or_default();
        let said = format!("ListenBrainz answered HTTP {status} {said}")
            .trim()
            .to_string();
        Err(match status.as_u16() {
            401 => SendError::Revoked(said),
            429 => SendError::Temporary(said),
            code if code >= 500 => SendError::Temporary(said),
            // What was sent is invalid (a listen it cannot take).
            400 => SendError::Refused(said),
            _ => SendError::Permanent(said),
        })
    }
}

/// `track_metadata`: artist and track names, the release when known, and in
/// `additional_info` what ListenBrainz uses to match (recording MBID, duration, track
/// number) and who submitted it.
fn track_metadata(play: &Play) -> Value {
    let mut info = Map::new();
    info.insert("submission_client".into(), "musiclib".into());
    info.insert(
        "submission_client_version".into(),
        env!("CARGO_PKG_VERSION").into(),
    );
    info.insert("media_player".into(), "musiclib".into());
    if let Some(duration) = play.duration_ms {
        info.insert("duration_ms".into(), duration.into());
    }
    if let Some(number) = play.track_number {
        info.insert("tracknumber".into(), number.into());
    }
    if let Some(mbid) = &play.recording_mbid {
        info.insert("recording_mbid".into(), mbid.clone().into());
    }
    let mut metadata = Map::new();
    metadata.insert("artist_name".into(), play.artist.clone().into());
    metadata.insert("track_name".into(), play.title.clone().into());
    if let Some(album) = &play.album {
        metadata.insert("release_name".into(), album.clone().into());
    }
    metadata.insert("additional_info".into(), Value::Object(info));
    Value::Object(metadata)
}
