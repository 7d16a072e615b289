//! Internet radio stations: a name, a stream URL and a home page, managed by admins and
//! listed for every signed-in user (Subsonic apps show them in their radio tab and play the
//! stream URL themselves).
//!
//! Not "the radio" of [`crate::recommend`], which plays the library: a station is somebody
//! else's stream. The web player cannot play it directly (its CSP allows media from its own
//! origin only), so [`Stations::relay`] passes the stream through the server. That makes the
//! stream URL something the server fetches, so the relay goes through the SSRF-safe client
//! (`outside::guard`): http and https only, no private, loopback or link-local address
//! unless the operator allowed them (`ALLOW_PRIVATE_URLS`), every redirect checked again.
//! Saving a station checks only the URL's form: apps fetch it from the listener's network,
//! where an address on the listener's own network can be right.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::Caller;
use crate::db::Db;
use crate::ids::StationId;
use crate::{Error, Result, Timestamp};

/// Longest station name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest URL, in bytes (what browsers and servers commonly accept).
pub const MAX_URL_BYTES: usize = 2048;
/// Most stations a server holds: the list is answered whole.
pub const MAX_STATIONS: i64 = 1000;
/// Longest relay: a listener who left the tab open stops costing a connection after this.
pub const RELAY_MAX: Duration = Duration::from_secs(6 * 3600);
/// A relay whose station sends nothing for this long is closed (a live stream never pauses).
pub const RELAY_IDLE: Duration = Duration::from_secs(30);
/// Relays open at once in this process: each holds an outside connection for hours.
pub const MAX_RELAYS: usize = 64;
/// How long the station has to answer with its headers.
const RELAY_CONNECT: Duration = Duration::from_secs(15);

/// An internet radio station.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Station {
    /// Its id.
    pub id: StationId,
    /// What listeners see.
    pub name: String,
    /// The audio stream (http or https).
    pub stream_url: String,
    /// The station's web site, if known.
    pub homepage_url: Option<String>,
    /// When it was added.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// A station to add, or every field of one to replace (Subsonic's update names them all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StationFields {
    /// Name (at most [`MAX_NAME_CHARS`]).
    pub name: String,
    /// Stream URL (http or https, at most [`MAX_URL_BYTES`]).
    pub stream_url: String,
    /// Home page URL (http or https); `None` or empty: none.
    pub homepage_url: Option<String>,
}

/// A partial change: the fields given are set, the rest kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StationChanges {
    /// New name.
    pub name: Option<String>,
    /// New stream URL.
    pub stream_url: Option<String>,
    /// New home page: `Some(None)` removes it.
    pub homepage_url: Option<Option<String>>,
}

/// A station's audio as the relay passes it on.
pub struct StationStream {
    /// The station's content type (`audio/*` or `application/ogg`).
    pub content_type: String,
    /// The audio, chunk by chunk as the station sends it; it ends after [`RELAY_MAX`], or
    /// when the station is silent for [`RELAY_IDLE`] or closes.
    pub body: BoxStream<'static, Result<Bytes>>,
}

impl std::fmt::Debug for StationStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StationStream")
            .field("content_type", &self.content_type)
            .finish_non_exhaustive()
    }
}

#[derive(sqlx::FromRow)]
struct StationRow {
    id: String,
    name: String,
    stream_url: String,
    homepage_url: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl From<StationRow> for Station {
    fn from(row: StationRow) -> Station {
        Station {
            id: StationId::from_db(row.id),
            name: row.name,
            stream_url: row.stream_url,
            homepage_url: row.homepage_url,
            created_at: Timestamp::from_micros(row.created_at),
            updated_at: Timestamp::from_micros(row.updated_at),
        }
    }
}

const SELECT: &str =
    "SELECT id, name, stream_url, homepage_url, created_at, updated_at FROM radio_stations";

/// The bounds hold for what was sent, before the surrounding spaces are trimmed (what the
/// API document says is what is checked).
fn validate_name(name: &str) -> Result<String> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::invalid(
            "name",
            format!("must be at most {MAX_NAME_CHARS} characters"),
        ));
    }
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid("name", "must not be empty"));
    }
    if crate::text::has_control(name) {
        return Err(Error::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(name.to_string())
}

/// An http or https URL with a host, in its parsed (normalised) form.
fn validate_url(field: &str, raw: &str) -> Result<String> {
    if raw.len() > MAX_URL_BYTES {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_URL_BYTES} bytes"),
        ));
    }
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    let url = reqwest::Url::parse(raw)
        .map_err(|error| Error::invalid(field, format!("is not a URL ({error})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid(field, "must be an http or https URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Error::invalid(field, "must name a host"));
    }
    // Parsing may lengthen it (percent-encoding); the bound is on what is stored.
    if url.as_str().len() > MAX_URL_BYTES {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_URL_BYTES} bytes"),
        ));
    }
    Ok(url.to_string())
}

fn validate_homepage(raw: Option<&str>) -> Result<Option<String>> {
    match raw.map(str::trim).filter(|url| !url.is_empty()) {
        None => Ok(None),
        Some(url) => validate_url("homepage_url", url).map(Some),
    }
}

/// Whether a content type is audio a player can take: `audio/*` or `application/ogg`.
fn playable(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/ogg"
        || essence
            .strip_prefix("audio/")
            .is_some_and(|subtype| !subtype.is_empty())
}

/// The stations service.
#[derive(Clone)]
pub struct Stations {
    db: Db,
    client: reqwest::Client,
    allow_private: bool,
    relays: Arc<Semaphore>,
}

impl std::fmt::Debug for Stations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stations").finish_non_exhaustive()
    }
}

impl Stations {
    /// `client`: the SSRF-safe client (`outside::guard`) built with the same `allow_private`.
    pub(crate) fn new(db: Db, client: reqwest::Client, allow_private: bool) -> Stations {
        Stations {
            db,
            client,
            allow_private,
            relays: Arc::new(Semaphore::new(MAX_RELAYS)),
        }
    }

    /// Every station, by name (anyone signed in).
    pub async fn list(&self, _caller: &Caller) -> Result<Vec<Station>> {
        let rows: Vec<StationRow> = self
            .db
            .sql(&format!("{SELECT} ORDER BY name, id LIMIT {MAX_STATIONS}"))
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(Station::from).collect())
    }

    /// One station (anyone signed in).
    pub async fn get(&self, _caller: &Caller, id: &StationId) -> Result<Station> {
        let row: Option<StationRow> = self
            .db
            .sql(&format!("{SELECT} WHERE id = $1"))
            .bind(id.as_str())
            .fetch_optional(self.db.pool())
            .await?;
        row.map(Station::from)
            .ok_or_else(|| Error::not_found("radio station", id))
    }

    /// Adds a station (admins). Beyond [`MAX_STATIONS`]: a conflict.
    pub async fn create(&self, caller: &Caller, fields: StationFields) -> Result<Station> {
        caller.require_admin()?;
        let name = validate_name(&fields.name)?;
        let stream_url = validate_url("stream_url", &fields.stream_url)?;
        let homepage_url = validate_homepage(fields.homepage_url.as_deref())?;
        let id = StationId::new();
        // Not counted under a lock: two admins adding at once may pass the bound by one,
        // which only lengthens a list that is still bounded.
        let count: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM radio_stations")
            .fetch_scalar(self.db.pool())
            .await?;
        if count >= MAX_STATIONS {
            return Err(Error::Conflict(format!(
                "a server holds at most {MAX_STATIONS} radio stations; delete one first"
            )));
        }
        self.db
            .sql(
                "INSERT INTO radio_stations (id, name, stream_url, homepage_url, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, {now}, {now})",
            )
            .bind(id.as_str())
            .bind(name)
            .bind(stream_url)
            .bind(homepage_url)
            .execute(self.db.pool())
            .await?;
        self.get(caller, &id).await
    }

    /// Changes a station (admins): the fields given.
    pub async fn update(
        &self,
        caller: &Caller,
        id: &StationId,
        changes: StationChanges,
    ) -> Result<Station> {
        caller.require_admin()?;
        let name = changes.name.as_deref().map(validate_name).transpose()?;
        let stream_url = changes
            .stream_url
            .as_deref()
            .map(|url| validate_url("stream_url", url))
            .transpose()?;
        let homepage_url = changes
            .homepage_url
            .as_ref()
            .map(|url| validate_homepage(url.as_deref()))
            .transpose()?;
        let current = self.get(caller, id).await?;
        let changed = self
            .db
            .sql(
                "UPDATE radio_stations SET name = $2, stream_url = $3, homepage_url = $4,
                 updated_at = {now} WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(name.unwrap_or(current.name))
            .bind(stream_url.unwrap_or(current.stream_url))
            .bind(homepage_url.unwrap_or(current.homepage_url))
            .execute(self.db.pool())
            .await?;
        if changed == 0 {
            return Err(Error::not_found("radio station", id));
        }
        self.get(caller, id).await
    }

    /// Deletes a station (admins).
    pub async fn delete(&self, caller: &Caller, id: &StationId) -> Result<()> {
        caller.require_admin()?;
        let deleted = self
            .db
            .sql("DELETE FROM radio_stations WHERE id = $1")
            .bind(id.as_str())
            .execute(self.db.pool())
            .await?;
        if deleted == 0 {
            return Err(Error::not_found("radio station", id));
        }
        Ok(())
    }

    /// The station's audio, relayed (anyone signed in): for a player that may only play
    /// media from this server. The stream is passed on chunk by chunk, never held whole.
    ///
    /// Refused as unavailable (the adapter's 502) when the URL or an address it resolves to
    /// is not allowed, the station does not answer with success, or what it sends is not
    /// audio (`audio/*`, `application/ogg`): the relay is no way to fetch anything else.
    pub async fn relay(&self, caller: &Caller, id: &StationId) -> Result<StationStream> {
        let station = self.get(caller, id).await?;
        let permit: OwnedSemaphorePermit =
            self.relays
                .clone()
                .try_acquire_owned()
                .map_err(|_| Error::Busy {
                    what: "radio relays",
                    retry_after: Duration::from_secs(30),
                })?;
        let url = crate::outside::guard::check_url(&station.stream_url, self.allow_private)
            .map_err(|reason| {
                Error::Unavailable(format!("the station's stream URL is refused: {reason}"))
            })?;
        let response = tokio::time::timeout(RELAY_CONNECT, self.client.get(url).send())
            .await
            .map_err(|_| Error::Unavailable("the station did not answer in time".into()))?
            .map_err(|error| {
                Error::Unavailable(format!(
                    "the station could not be reached: {}",
                    crate::error_chain(&error.without_url())
                ))
            })?;
        if !response.status().is_success() {
            return Err(Error::Unavailable(format!(
                "the station answered {}",
                response.status().as_u16()
            )));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !playable(&content_type) {
            return Err(Error::Unavailable(format!(
                "the station sent {}, not audio",
                if content_type.is_empty() {
                    "no content type"
                } else {
                    content_type.as_str()
                }
            )));
        }
        Ok(StationStream {
            content_type,
            body: bounded(response.bytes_stream(), permit),
        })
    }
}

/// The station's chunks until [`RELAY_MAX`] has passed or it is silent for [`RELAY_IDLE`];
/// `permit` (a relay slot) is held until the stream ends or is dropped.
fn bounded(
    upstream: impl futures::Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    permit: OwnedSemaphorePermit,
) -> BoxStream<'static, Result<Bytes>> {
    let deadline = tokio::time::Instant::now() + RELAY_MAX;
    let state = (upstream.boxed(), permit);
    futures::stream::unfold(Some(state), move |state| async move {
        let (mut upstream, permit) = state?;
        let wait = RELAY_IDLE.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        match tokio::time::timeout(wait, upstream.next()).await {
            // Silent too long, or the bound reached: the relay ends as a stream that closes.
            Err(_) | Ok(None) => None,
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some((upstream, permit)))),
            Ok(Some(Err(error))) => Some((
                Err(Error::Unavailable(format!(
                    "the station's stream broke off: {}",
                    crate::error_chain(&error.without_url())
                ))),
                None,
            )),
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_taken() {
        assert_eq!(
            validate_url("stream_url", " http://radio.example/live.ogg ").unwrap(),
            "http://radio.example/live.ogg"
        );
        for bad in [
            "",
            "ftp://radio.example/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "radio.example",
            "http://",
        ] {
            let error = validate_url("stream_url", bad).unwrap_err();
            assert_eq!(error.field(), Some("stream_url"), "{bad}");
        }
        let long = format!("http://radio.example/{}", "a".repeat(MAX_URL_BYTES));
        assert!(validate_url("stream_url", &long).is_err());
    }

    #[test]
    fn names_are_bounded() {
        assert_eq!(validate_name("  Radio  ").unwrap(), "Radio");
        assert!(validate_name(" ").is_err());
        assert!(validate_name(&"é".repeat(MAX_NAME_CHARS)).is_ok());
        assert!(validate_name(&"é".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(validate_name("a\u{0}b").is_err());
    }

    #[test]
    fn only_audio_is_relayed() {
        for ok in [
            "audio/mpeg",
            "Audio/AAC",
            "application/ogg",
            "audio/ogg; codecs=opus",
        ] {
            assert!(playable(ok), "{ok}");
        }
        for refused in ["", "text/html", "application/json", "audio/", "video/mp4"] {
            assert!(!playable(refused), "{refused}");
        }
    }
}
