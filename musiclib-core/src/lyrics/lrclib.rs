//! The LRCLIB client (base URL `LRCLIB_BASE_URL`; no key, no rate limit, a User-Agent naming
//! musiclib, its version and home page as LRCLIB asks).
//!
//! 1. `GET /api/get` with `track_name`, `artist_name`, `album_name` and `duration` (whole
//!    seconds; LRCLIB matches names exactly, case-insensitively, and the duration within
//!    ±2 s). 200 is the record; 404 (`TrackNotFound`) and 400 (`ValidationError`, a
//!    signature LRCLIB refuses, such as a duration out of its range) fall through. A track
//!    without an artist skips it.
//! 2. `GET /api/search` with `track_name` and `artist_name`, then with `q` (title and artist
//!    in one, which finds what the exact fields miss; the title alone without an artist);
//!    among the records (at most 20) the one with the same title (and artist, when known)
//!    whose duration is within ±2 s, the same album first, then the closest duration. A live
//!    version or a mix (another title, another length) never wins.
//!
//! `instrumental: true` is a found record with no lyrics. A 400 is a miss (asking again
//! will not help); 5xx, 429, timeouts and unreadable answers are provider errors.

use std::time::Duration;

use serde::Deserialize;

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(15);
/// LRCLIB's duration tolerance.
const DURATION_TOLERANCE_S: f64 = 2.0;

/// What to look for.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub title: String,
    pub artist: Option<String>,
    pub album: Option<String>,
    /// Seconds.
    pub duration: Option<f64>,
}

/// One LRCLIB record.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Record {
    pub id: i64,
    #[serde(default)]
    pub track_name: String,
    #[serde(default)]
    pub artist_name: String,
    #[serde(default)]
    pub album_name: Option<String>,
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default)]
    pub instrumental: bool,
    #[serde(default)]
    pub plain_lyrics: Option<String>,
    #[serde(default)]
    pub synced_lyrics: Option<String>,
}

/// The client.
#[derive(Clone, Debug)]
pub(crate) struct Lrclib {
    http: reqwest::Client,
    base_url: String,
}

impl Lrclib {
    pub(crate) fn new(http: reqwest::Client, base_url: &str) -> Lrclib {
        Lrclib {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
        }
    }

    /// The record for `query`, `Ok(None)` when LRCLIB has none; `Err` says how LRCLIB
    /// failed.
    pub(crate) async fn find(&self, query: &Query) -> Result<Option<Record>, String> {
        let searches = match &query.artist {
            Some(artist) => {
                let mut params = vec![
                    ("track_name", query.title.clone()),
                    ("artist_name", artist.clone()),
                ];
                if let Some(album) = &query.album {
                    params.push(("album_name", album.clone()));
                }
                if let Some(duration) = query.duration {
                    params.push(("duration", format!("{}", duration.round() as i64)));
                }
                // A 404 or a refused signature (400): the searches may still find it.
                if let Some(record) = self.get::<Record>("/api/get", &params).await? {
                    return Ok(Some(record));
                }
                vec![
                    vec![
                        ("track_name", query.title.clone()),
                        ("artist_name", artist.clone()),
                    ],
                    vec![("q", format!("{} {artist}", query.title))],
                ]
            }
            None => vec![vec![("q", query.title.clone())]],
        };
        for params in searches {
            if let Some(records) = self.get::<Vec<Record>>("/api/search", &params).await? {
                if let Some(best) = best_match(query, records) {
                    return Ok(Some(best));
                }
            }
        }
        Ok(None)
    }

    /// One GET: what LRCLIB found, `None` when it has nothing (404) or refuses the query
    /// (400), an error for anything else.
    async fn get<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        params: &[(&str, String)],
    ) -> Result<Option<T>, String> {
        let request = self
            .http
            .get(format!("{}{path}", self.base_url))
            .query(params)
            .header(reqwest::header::USER_AGENT, user_agent())
            .timeout(TIMEOUT);
        let response = crate::outside::send(crate::metrics::Service::Lrclib, request)
            .await
            .map_err(|error| {
                format!(
                    "LRCLIB could not be reached: {}",
                    crate::error_chain(&error)
                )
            })?;
        let status = response.status();
        match status.as_u16() {
            // A record is lyrics (at most MAX_LYRICS_BYTES) twice over; a search, a few dozen.
            200 => crate::outside::json_capped::<T>(response, 8 * 1024 * 1024)
                .await
                .map(Some)
                .map_err(|error| format!("LRCLIB answered something unreadable: {error}")),
            // Not found, or a query it refuses (a 400 ValidationError): no record.
            404 | 400 => Ok(None),
            _ => Err(format!("LRCLIB answered HTTP {status}")),
        }
    }
}

/// `musiclib/<version> (<home page>)`, as LRCLIB asks of its clients.
pub(crate) fn user_agent() -> String {
    format!(
        "musiclib/{} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_HOMEPAGE")
    )
}

/// The search record for `query`: same title and artist (case and accents aside; any artist
/// when the query has none), duration within ±2 s when both are known; the same album
/// first, then the closest duration.
pub(crate) fn best_match(query: &Query, records: Vec<Record>) -> Option<Record> {
    let key = crate::text::name_key;
    let (title, artist) = (key(&query.title), query.artist.as_deref().map(key));
    let album = query.album.as_deref().map(key);
    let distance = |record: &Record| match (query.duration, record.duration) {
        (Some(ours), Some(theirs)) => (ours - theirs).abs(),
        _ => 0.0,
    };
    records
        .into_iter()
        .filter(|record| {
            key(&record.track_name) == title
                && artist
                    .as_ref()
                    .is_none_or(|artist| &key(&record.artist_name) == artist)
        })
        .filter(|record| distance(record) <= DURATION_TOLERANCE_S)
        .min_by(|a, b| {
            let other_album =
                |record: &Record| album.is_some() && record.album_name.as_deref().map(key) != album;
            other_album(a)
                .cmp(&other_album(b))
                .then(distance(a).total_cmp(&distance(b)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(name: &str) -> Vec<Record> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/lrclib")
            .join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn the_album_version_wins_over_the_edit_the_live_take_and_the_mix() {
        let records = records("search_results.json");
        let query = |duration: f64, album: Option<&str>| Query {
            title: "polar drift".into(),
            artist: Some("AURORA LANE".into()),
            album: album.map(str::to_string),
            duration: Some(duration),
        };
        let best = best_match(&query(142.4, Some("Northern Lights")), records.clone()).unwrap();
        assert_eq!(best.id, 4821307);
        // Within 2 s of both the album version and the edit: the album decides.
        let best = best_match(&query(140.5, Some("Northern Lights")), records.clone()).unwrap();
        assert_eq!(best.id, 4821307);
        // The edit's length and album.
        let best =
            best_match(&query(139.0, Some("Polar Drift - Single")), records.clone()).unwrap();
        assert_eq!(best.id, 5102277);
        // A length nothing matches (the live take is another title): none.
        assert!(best_match(&query(151.0, None), records.clone()).is_none());
        // Without an artist: the title and the length decide.
        let untitled_artist = Query {
            artist: None,
            ..query(142.0, None)
        };
        assert_eq!(best_match(&untitled_artist, records).unwrap().id, 4821307);
    }
}
