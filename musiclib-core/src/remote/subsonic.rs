//! The `subsonic` source: any Subsonic or OpenSubsonic server (a friend's Navidrome, gonic or
//! musiclib), reached with a user and an app password (`SUBSONIC_SOURCE_URL`,
//! `SUBSONIC_SOURCE_USERNAME`, `SUBSONIC_SOURCE_PASSWORD`) or an OpenSubsonic API key
//! (`SUBSONIC_SOURCE_API_KEY`).
//!
//! Every request carries token authentication (`u`, `t` = md5(password + salt), `s`, a fresh
//! salt each time), or `apiKey` alone when a key is set, and `v=1.16.1`, `c=musiclib` and
//! `f=json`; the password itself never travels. A request waits at most 20 s for the
//! server's answer (a download's headers included; its body then may take as long as it
//! keeps coming).
//! Search is `search3` (songs only), one item is `getSong`, audio is `download` (the original
//! file), health is `ping`. An answer is
//! `{"subsonic-response": {"status": "ok" | "failed", "error": {"code", "message"}, …}}`.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use md5::{Digest, Md5};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::{DownloadRequest, Progress, RemoteHit, RemoteSource, SourceError, SUBSONIC};
use crate::config::SubsonicSourceConfig;

/// The protocol version musiclib speaks to other servers.
const API_VERSION: &str = "1.16.1";
/// How long one request (not a download) may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// How long a download may wait for the next bytes.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest answer read that is not a file (a search of 50 songs is a few dozen KiB).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A Subsonic server as a source.
#[derive(Clone)]
pub(crate) struct SubsonicSource {
    http: reqwest::Client,
    base_url: String,
    username: String,
    password: String,
    /// The OpenSubsonic API key, sent instead of `u`, `t` and `s` when set.
    api_key: Option<String>,
}

impl std::fmt::Debug for SubsonicSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubsonicSource")
            .field("base_url", &crate::config::redact_url(&self.base_url))
            .field("username", &self.username)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| crate::config::REDACTED),
            )
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl RemoteSource for SubsonicSource {
    fn name(&self) -> &'static str {
        SUBSONIC
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<RemoteHit>, SourceError> {
        let body = self
            .call(
                "search3",
                &[
                    ("query", query.to_string()),
                    ("songCount", limit.to_string()),
                    ("albumCount", "0".into()),
                    ("artistCount", "0".into()),
                ],
            )
            .await?;
        Ok(hits_of_search(&body))
    }

    async fn metadata(&self, source_id: &str) -> Result<RemoteHit, SourceError> {
        let body = self
            .call("getSong", &[("id", source_id.to_string())])
            .await?;
        hit_of(&body["song"]).ok_or_else(|| {
            SourceError::Failed(
                "the Subsonic server answered a song without an id or a title".into(),
            )
        })
    }

    async fn download(
        &self,
        source_id: &str,
        request: DownloadRequest<'_>,
    ) -> Result<PathBuf, SourceError> {
        // The whole download may take long; its answer's headers may not.
        let response = tokio::time::timeout(
            TIMEOUT,
            self.request("download", &[("id", source_id.to_string())])
                .send(),
        )
        .await
        .map_err(|_| {
            SourceError::Unavailable(format!(
                "the Subsonic server did not answer within {} s",
                TIMEOUT.as_secs()
            ))
        })?
        .map_err(unreachable)?;
        let status = response.status();
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.contains("json") || value.contains("xml"));
        if status.is_success() && is_json {
            // Errors come as a Subsonic response in place of the file: small, and read
            // within the time its headers had.
            let body = tokio::time::timeout(
                TIMEOUT,
                crate::outside::json_capped::<Value>(response, MAX_ANSWER_BYTES),
            )
            .await
            .map_err(|_| {
                SourceError::Unavailable(format!(
                    "the Subsonic server did not finish its answer within {} s",
                    TIMEOUT.as_secs()
                ))
            })?
            .map_err(|_| {
                SourceError::Failed(
                    "the Subsonic server answered neither a file nor an error".into(),
                )
            })?;
            return Err(answer_of(&body).err().unwrap_or_else(|| {
                SourceError::Failed("the Subsonic server sent no file".into())
            }));
        }
        check_status(status)?;
        let total = response.content_length();
        if let Some(total) = total {
            if total > request.max_bytes {
                return Err(too_large(total, request.max_bytes));
            }
        }
        let path = request
            .dir
            .join(format!("download.{}", extension_of(&response)));
        let mut file = tokio::fs::File::create(&path)
            .await
            .map_err(|error| SourceError::Failed(format!("cannot write the download: {error}")))?;
        let mut stream = response.bytes_stream();
        let mut bytes = 0u64;
        (request.progress)(Progress { bytes, total });
        loop {
            let chunk = match tokio::time::timeout(READ_TIMEOUT, stream.next()).await {
                Err(_) => {
                    return Err(SourceError::Unavailable(format!(
                        "the Subsonic server sent nothing for {} s",
                        READ_TIMEOUT.as_secs()
                    )))
                }
                Ok(None) => break,
                Ok(Some(chunk)) => chunk.map_err(|error| {
                    SourceError::Unavailable(format!(
                        "the download was cut: {}",
                        crate::outside::describe(error)
                    ))
                })?,
            };
            bytes += chunk.len() as u64;
            if bytes > request.max_bytes {
                return Err(too_large(bytes, request.max_bytes));
            }
            file.write_all(&chunk).await.map_err(|error| {
                SourceError::Failed(format!("cannot write the download: {error}"))
            })?;
            (request.progress)(Progress { bytes, total });
        }
        file.flush()
            .await
            .map_err(|error| SourceError::Failed(format!("cannot write the download: {error}")))?;
        if total.is_some_and(|total| total != bytes) {
            return Err(SourceError::Unavailable(format!(
                "the download was cut at {bytes} of {} bytes",
                total.unwrap_or_default()
            )));
        }
        if bytes == 0 {
            return Err(SourceError::Failed(
                "the Subsonic server sent an empty file".into(),
            ));
        }
        Ok(path)
    }

    async fn health(&self) -> Result<(), SourceError> {
        self.call("ping", &[]).await.map(drop)
    }
}

impl SubsonicSource {
    pub(crate) fn new(
        http: reqwest::Client,
        config: &SubsonicSourceConfig,
        api_key: Option<String>,
    ) -> SubsonicSource {
        SubsonicSource {
            http,
            base_url: config.url.trim_end_matches('/').to_string(),
            username: config.username.clone(),
            password: config.password.clone(),
            api_key,
        }
    }

    /// A request of `method` with the API key, else fresh token authentication.
    fn request(&self, method: &str, params: &[(&str, String)]) -> reqwest::RequestBuilder {
        let mut query: Vec<(&str, String)> = match &self.api_key {
            // OpenSubsonic: a key stands alone (`u` beside it is an error, code 43).
            Some(key) => vec![("apiKey", key.clone())],
            None => {
                let salt = hex::encode(rand::random::<[u8; 8]>());
                let token = hex::encode(Md5::digest(format!("{}{salt}", self.password)));
                vec![("u", self.username.clone()), ("t", token), ("s", salt)]
            }
        };
        query.extend([
            ("v", API_VERSION.to_string()),
            ("c", "musiclib".into()),
            ("f", "json".into()),
        ]);
        query.extend(params.iter().cloned());
        self.http
            .get(format!("{}/rest/{method}", self.base_url))
            .query(&query)
    }

    /// Calls `method`; answers the `subsonic-response` object of a successful answer.
    async fn call(&self, method: &str, params: &[(&str, String)]) -> Result<Value, SourceError> {
        let response = self
            .request(method, params)
            .timeout(TIMEOUT)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status();
        check_status(status)?;
        let body: Value = crate::outside::json_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|why| {
                SourceError::Failed(format!(
                    "the Subsonic server answered HTTP {status} with something that is not a Subsonic response ({why})"
                ))
            })?;
        answer_of(&body)
    }
}

/// The hits of a `search3` answer (its `subsonic-response`): `song` is a list, or one
/// object from servers that write a lone child without its list.
pub(crate) fn hits_of_search(answer: &Value) -> Vec<RemoteHit> {
    match &answer["searchResult3"]["song"] {
        Value::Array(songs) => songs.iter().filter_map(hit_of).collect(),
        song @ Value::Object(_) => hit_of(song).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The `subsonic-response` of an answer, or the error it carries.
pub(crate) fn answer_of(body: &Value) -> Result<Value, SourceError> {
    let answer = &body["subsonic-response"];
    match answer["status"].as_str() {
        Some("ok") => Ok(answer.clone()),
        Some("failed") => {
            let code = answer["error"]["code"].as_i64().unwrap_or(0);
            let message = answer["error"]["message"].as_str().unwrap_or("");
            let said = format!("the Subsonic server refused ({code}): {message}");
            Err(match code {
                // Wrong credentials, an unsupported or conflicting authentication
                // (OpenSubsonic 42, 43), an invalid API key (44), not authorized.
                40..=44 | 50 => SourceError::Refused(said),
                70 => SourceError::NotFound(said),
                _ => SourceError::Failed(said),
            })
        }
        _ => Err(SourceError::Failed(
            "the Subsonic server answered without a status".into(),
        )),
    }
}

fn unreachable(error: reqwest::Error) -> SourceError {
    SourceError::Unavailable(format!(
        "the Subsonic server could not be reached: {}",
        crate::outside::describe(error)
    ))
}

fn check_status(status: reqwest::StatusCode) -> Result<(), SourceError> {
    match status.as_u16() {
        429 => Err(SourceError::RateLimited(
            "the Subsonic server answered HTTP 429 (too many requests)".into(),
        )),
        404 => Err(SourceError::NotFound(
            "the Subsonic server answered HTTP 404".into(),
        )),
        401 | 403 => Err(SourceError::Refused(format!(
            "the Subsonic server answered HTTP {status}"
        ))),
        code if code >= 500 => Err(SourceError::Unavailable(format!(
            "the Subsonic server answered HTTP {status}"
        ))),
        code if code >= 400 => Err(SourceError::Failed(format!(
            "the Subsonic server answered HTTP {status}"
        ))),
        // A redirect not followed (no location, or too far): never a file or an answer.
        code if code >= 300 => Err(SourceError::Failed(format!(
            "the Subsonic server answered HTTP {status}"
        ))),
        _ => Ok(()),
    }
}

fn too_large(bytes: u64, limit: u64) -> SourceError {
    SourceError::TooLarge(format!(
        "the file is {bytes} bytes or more, over the limit of {limit} (MAX_UPLOAD_BYTES)"
    ))
}

/// A file extension for the download: from the file name the server gives, else its type.
/// Only a short alphanumeric extension is kept (the probe reads the content anyway).
fn extension_of(response: &reqwest::Response) -> String {
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase()
    };
    let disposition = header(reqwest::header::CONTENT_DISPOSITION);
    let from_name = disposition
        .rsplit_once('.')
        .map(|(_, ext)| ext.trim_end_matches(['"', ';', ' ']).to_string())
        .filter(|ext| {
            (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
        });
    from_name.unwrap_or_else(|| {
        match header(reqwest::header::CONTENT_TYPE)
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
        {
            "audio/flac" | "audio/x-flac" => "flac",
            "audio/mpeg" | "audio/mp3" => "mp3",
            "audio/mp4" | "audio/m4a" | "audio/x-m4a" => "m4a",
            "audio/ogg" | "audio/vorbis" => "ogg",
            "audio/opus" => "opus",
            "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
            _ => "bin",
        }
        .to_string()
    })
}

/// A `child` of `search3` or `getSong` as a hit (`duration` is in seconds; a song without an
/// id or a title is skipped). The artist's and album's ids are kept (as remote identities)
/// only when they follow the rule of source ids; a duration that is not a positive number
/// of milliseconds is unknown.
pub(crate) fn hit_of(song: &Value) -> Option<RemoteHit> {
    let text = |name: &str| {
        song[name]
            .as_str()
            .map(|text| text.trim().to_string())
            .filter(|text| !text.is_empty())
    };
    // Numbers may come as strings from some servers.
    let number = |name: &str| {
        song[name]
            .as_i64()
            .or_else(|| song[name].as_f64().map(|value| value as i64))
            .or_else(|| song[name].as_str().and_then(|text| text.parse().ok()))
    };
    let id = |name: &str| text(name).filter(|id| super::check_id_chars(id).is_ok());
    let source_id = text("id")?;
    super::check_id_chars(&source_id).ok()?;
    Some(RemoteHit {
        source: SUBSONIC.to_string(),
        source_id,
        title: text("title")?,
        artist: text("artist"),
        artist_source_id: id("artistId"),
        album: text("album"),
        album_source_id: id("albumId"),
        album_artist: text("displayAlbumArtist"),
        genre: text("genre"),
        track_number: number("track").filter(|track| *track > 0),
        duration_ms: number("duration")
            .and_then(|seconds| seconds.checked_mul(1000))
            .filter(|ms| *ms > 0),
        year: number("year").filter(|year| *year > 0),
        thumbnail: None,
        size_bytes: number("size").filter(|size| *size > 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn songs_become_hits() {
        let song = serde_json::json!({"id": "a1", "title": "Polar Drift", "artist": "Aurora Lane",
            "album": "Northern Lights", "duration": 142, "year": 2019, "isDir": false,
            "artistId": "ar-1", "albumId": "al-1", "track": "2", "size": 123456});
        let hit = hit_of(&song).unwrap();
        assert_eq!(hit.source, "subsonic");
        assert_eq!(hit.duration_ms, Some(142_000));
        assert_eq!(hit.album.as_deref(), Some("Northern Lights"));
        assert_eq!(hit.album_source_id.as_deref(), Some("al-1"));
        assert_eq!(hit.track_number, Some(2));
        assert_eq!(hit.size_bytes, Some(123456));
        assert!(hit_of(&serde_json::json!({"id": "x"})).is_none());
        // An id that could not travel safely is no hit.
        assert!(hit_of(&serde_json::json!({"id": "../x", "title": "t"})).is_none());
    }

    /// Found by the `remote_json` fuzz target: the album's and artist's ids were kept
    /// whatever they held, and a long duration overflowed its milliseconds.
    #[test]
    fn ids_and_durations_from_a_server_are_checked() {
        let crash = br#"{"subsonic-response":{"status":"ok","searchResult3":{"song":[{"id":"ae1","title":"Get Luckhts","artist":"Aurora Lane","artistId":"aP8","albumId":"al-does not exist1","track":"2","duration":142,"year":2019}]}}}"#;
        let answer = answer_of(&serde_json::from_slice(crash).unwrap()).unwrap();
        let hits = hits_of_search(&answer);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].artist_source_id.as_deref(), Some("aP8"));
        assert_eq!(hits[0].album_source_id, None);
        for bad in ["../x", "a/b", "x?y=1", "", " ", "-a", "a..b"] {
            let song =
                serde_json::json!({"id": "s1", "title": "t", "artistId": bad, "albumId": bad});
            let hit = hit_of(&song).unwrap();
            assert_eq!(
                (hit.artist_source_id, hit.album_source_id),
                (None, None),
                "{bad:?}"
            );
        }
        for (duration, expected) in [
            (serde_json::json!(9_223_372_036_854_775_807_i64), None),
            (serde_json::json!(1e300), None),
            (serde_json::json!("9223372036854775807"), None),
            (serde_json::json!(-5), None),
            (serde_json::json!(0), None),
            (serde_json::json!(61.9), Some(61_000)),
            (serde_json::json!("61"), Some(61_000)),
        ] {
            let song = serde_json::json!({"id": "s1", "title": "t", "duration": duration});
            assert_eq!(hit_of(&song).unwrap().duration_ms, expected, "{duration}");
        }
        // A lone song object, as some servers write it.
        let lone = serde_json::json!({"searchResult3": {"song": {"id": "s1", "title": "t"}}});
        assert_eq!(hits_of_search(&lone).len(), 1);
    }

    #[test]
    fn errors_are_classified() {
        let failed = |code| serde_json::json!({"subsonic-response": {"status": "failed", "error": {"code": code, "message": "m"}}});
        for code in [40, 41, 42, 43, 44, 50] {
            assert!(
                matches!(answer_of(&failed(code)), Err(SourceError::Refused(_))),
                "{code}"
            );
        }
        assert!(matches!(
            answer_of(&failed(70)),
            Err(SourceError::NotFound(_))
        ));
        assert!(matches!(answer_of(&failed(0)), Err(SourceError::Failed(_))));
        assert!(matches!(
            check_status(reqwest::StatusCode::BAD_GATEWAY),
            Err(SourceError::Unavailable(_))
        ));
        assert!(matches!(
            check_status(reqwest::StatusCode::TOO_MANY_REQUESTS),
            Err(SourceError::RateLimited(_))
        ));
    }
}
