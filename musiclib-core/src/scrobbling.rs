//! Scrobbling: each user's Last.fm session key and ListenBrainz token, and how each service
//! last answered.
//!
//! The credentials are write-only (spec: "the scrobbling session key is stored encrypted and
//! is write-only"): they are stored encrypted (AES-256-GCM under a key derived from
//! `LEGACY_SECRET_KEY` for this purpose, with the user and the service as associated data, so
//! a ciphertext copied onto another user or service does not decrypt), and nothing ever
//! returns them: the status says only whether one is set and the service's last state.
//!
//! Plays are forwarded for real (`forward`): queued durably as they are stored, sent by the
//! `submit_scrobbles` job through the `lastfm` and `listenbrainz` clients, what is playing now
//! by `update_now_playing`. A temporary failure (Last.fm errors 8, 11, 16, 29; HTTP 5xx,
//! 429; a timeout) leaves the plays queued and retries with the jobs' backoff, then every
//! few minutes; a refused credential (Last.fm error 9, ListenBrainz 401) marks the service
//! `revoked` and stops sending until the user sets a new one. A play not taken within
//! [`MAX_QUEUED_AGE`] is dropped (Last.fm refuses older timestamps anyway).

mod forward;
mod lastfm;
mod listenbrainz;

pub(crate) use forward::Forwarder;
pub use forward::{
    counts, NowPlayingPayload, SubmitPayload, SubmitScrobbles, UpdateNowPlaying, RESUME_INTERVAL,
};

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::auth::secrets::SecretBox;
use crate::auth::Caller;
use crate::config::ScrobblingConfig;
use crate::db::Db;
use crate::jobs::{JobError, Registry};
use crate::settings::Settings;
use crate::{Error, Result, Timestamp, TrackId, UserId};

/// How long a play may wait in the queue before it is dropped.
pub const MAX_QUEUED_AGE: Duration = Duration::from_secs(14 * 24 * 3600);

/// The key-derivation label of scrobbling credentials (stored ciphertexts depend on it).
const PURPOSE: &[u8] = b"musiclib scrobbling credentials";
/// Longest credential accepted (Last.fm session keys are 32 characters, ListenBrainz tokens
/// 36).
const MAX_CREDENTIAL_LEN: usize = 256;

/// A scrobbling service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Last.fm (`track.scrobble`, `track.updateNowPlaying`).
    Lastfm,
    /// ListenBrainz (`submit-listens`).
    Listenbrainz,
}

impl Service {
    /// Both services.
    pub const ALL: [Service; 2] = [Service::Lastfm, Service::Listenbrainz];

    /// The service of a wire name.
    pub fn parse(name: &str) -> Option<Service> {
        Service::ALL
            .into_iter()
            .find(|service| service.as_str() == name)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Service::Lastfm => "lastfm",
            Service::Listenbrainz => "listenbrainz",
        }
    }

    fn key_column(self) -> &'static str {
        match self {
            Service::Lastfm => "scrobble_session_key_enc",
            Service::Listenbrainz => "listenbrainz_token_enc",
        }
    }

    fn state_column(self) -> &'static str {
        match self {
            Service::Lastfm => "lastfm_state",
            Service::Listenbrainz => "listenbrainz_state",
        }
    }

    /// The request field that carries the credential.
    fn field(self) -> &'static str {
        match self {
            Service::Lastfm => "lastfm.session_key",
            Service::Listenbrainz => "listenbrainz.token",
        }
    }
}

/// How a service last answered for a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    /// Nothing sent since the credential was set.
    Unknown,
    /// The last submission was accepted.
    Ok,
    /// The last submission failed for a reason that may pass (it is retried).
    Failing,
    /// The service refused the credential (revoked or wrong): nothing is sent until a new one
    /// is set.
    Revoked,
}

impl ServiceState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceState::Unknown => "unknown",
            ServiceState::Ok => "ok",
            ServiceState::Failing => "failing",
            ServiceState::Revoked => "revoked",
        }
    }
}

/// The stored state of one service.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredState {
    state: ServiceState,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    at: Option<i64>,
}

/// The stored state, `unknown` when nothing (readable) is stored.
fn stored_state(text: Option<&str>) -> StoredState {
    text.and_then(|text| serde_json::from_str::<StoredState>(text).ok())
        .unwrap_or(StoredState {
            state: ServiceState::Unknown,
            detail: None,
            at: None,
        })
}

/// How sending to a service failed.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The service refused the credential: stop until the user sets a new one.
    Revoked(String),
    /// May pass: retry later.
    Temporary(String),
    /// Will not pass by asking again (a refused request, the server's API key).
    Permanent(String),
    /// The service refused what was sent (a malformed listen): the batch is sent again one
    /// play at a time, and a play refused on its own is dropped, so one bad play never holds
    /// up the rest of the queue.
    Refused(String),
}

impl SendError {
    fn transport(service: &str, error: &reqwest::Error) -> SendError {
        let what = if error.is_timeout() {
            "did not answer in time"
        } else if error.is_connect() {
            "could not be reached"
        } else {
            "failed"
        };
        SendError::Temporary(format!("{service} {what}: {}", crate::error_chain(error)))
    }

    fn message(&self) -> &str {
        match self {
            SendError::Revoked(message)
            | SendError::Temporary(message)
            | SendError::Permanent(message)
            | SendError::Refused(message) => message,
        }
    }
}

/// A play as the services take it.
#[derive(Debug, Clone)]
pub(crate) struct Play {
    artist: String,
    title: String,
    album: Option<String>,
    album_artist: Option<String>,
    track_number: Option<i64>,
    duration_ms: Option<i64>,
    recording_mbid: Option<String>,
    /// Unix seconds.
    played_at: i64,
}

impl Play {
    /// `None` for a track without an artist (both services need one).
    fn of(track: &crate::domain::Track, played_at: Timestamp) -> Option<Play> {
        let artist = track
            .artist_name
            .clone()
            .or_else(|| track.album_artist_name.clone())
            .filter(|name| !name.trim().is_empty())?;
        Some(Play {
            artist,
            title: track.title.clone(),
            album: track
                .album_title
                .clone()
                .filter(|album| !album.trim().is_empty()),
            album_artist: track.album_artist_name.clone(),
            track_number: track.track_number,
            duration_ms: track.duration_ms,
            recording_mbid: track.musicbrainz_recording_id.clone(),
            played_at: played_at.as_micros().div_euclid(1_000_000),
        })
    }
}

/// What a `submit_scrobbles` job did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubmitReport {
    /// The service.
    pub service: &'static str,
    /// Plays the service took.
    pub sent: usize,
    /// Plays it refused for good, or that could not be sent (a track without an artist):
    /// removed from the queue.
    pub ignored: usize,
    /// Plays dropped for waiting longer than [`MAX_QUEUED_AGE`].
    pub expired: usize,
    /// Plays still queued at the end.
    pub pending: usize,
    /// The service's state at the end.
    pub state: Option<ServiceState>,
    /// What it said, when not all went well.
    pub detail: Option<String>,
}

/// What an `update_now_playing` job did, per service.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NowPlayingReport {
    /// Services told.
    pub sent: Vec<&'static str>,
    /// Services that failed, and why.
    pub failed: Vec<String>,
}

/// One service as a user sees it.
#[derive(Debug, Clone)]
pub struct ServiceStatus {
    /// Whether this server can send to the service (Last.fm needs `LASTFM_API_KEY` and
    /// `LASTFM_API_SECRET`).
    pub available: bool,
    /// Whether the user has set a credential.
    pub configured: bool,
    /// The service's last answer (`None` when nothing is configured).
    pub state: Option<ServiceState>,
    /// What it said, readably.
    pub detail: Option<String>,
    /// When.
    pub checked_at: Option<Timestamp>,
}

/// A user's scrobbling set-up.
#[derive(Debug, Clone)]
pub struct ScrobblingStatus {
    /// Last.fm.
    pub lastfm: ServiceStatus,
    /// ListenBrainz.
    pub listenbrainz: ServiceStatus,
}

/// A change of credentials: for each service, `None` leaves it, `Some(None)` removes it,
/// `Some(Some(key))` sets it.
#[derive(Debug, Clone, Default)]
pub struct CredentialsChange {
    /// The Last.fm session key.
    pub lastfm_session_key: Option<Option<String>>,
    /// The ListenBrainz user token.
    pub listenbrainz_token: Option<Option<String>>,
}

/// The scrobbling service.
#[derive(Clone)]
pub struct Scrobbling {
    db: Db,
    settings: Settings,
    config: ScrobblingConfig,
    secret: Vec<u8>,
    forwarder: Forwarder,
    catalog: crate::catalog::Catalog,
    http: reqwest::Client,
}

impl std::fmt::Debug for Scrobbling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrobbling").finish_non_exhaustive()
    }
}

#[derive(sqlx::FromRow)]
struct CredentialRow {
    scrobble_session_key_enc: Option<String>,
    listenbrainz_token_enc: Option<String>,
    lastfm_state: Option<String>,
    listenbrainz_state: Option<String>,
}

impl Scrobbling {
    pub(crate) fn new(
        db: Db,
        settings: Settings,
        config: ScrobblingConfig,
        secret: Vec<u8>,
        forwarder: Forwarder,
        catalog: crate::catalog::Catalog,
        http: reqwest::Client,
    ) -> Scrobbling {
        Scrobbling {
            db,
            settings,
            config,
            secret,
            forwarder,
            catalog,
            http,
        }
    }

    /// Registers the scrobbling jobs, and the task that re-enqueues plays still queued (a
    /// service down longer than a job's retries).
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<SubmitScrobbles>(self.clone(), config);
        registry.kind::<UpdateNowPlaying>(self.clone(), config);
        let forwarder = self.forwarder.clone();
        registry.periodic("scrobble_resume", move |shutdown| {
            forward::resume_forever(forwarder.clone(), shutdown)
        });
    }

    fn cipher(&self) -> SecretBox {
        SecretBox::new(&self.secret, PURPOSE)
    }

    /// The owner a ciphertext is bound to.
    fn owner(user: &UserId, service: Service) -> String {
        format!("{user}:{}", service.as_str())
    }

    /// The caller's scrobbling set-up: which services have a credential and their last
    /// state; never the credentials.
    pub async fn status(&self, caller: &Caller) -> Result<ScrobblingStatus> {
        // No row yet: nothing is configured (the row is made when something is set).
        let row: CredentialRow = self
            .db
            .sql(
                "SELECT scrobble_session_key_enc, listenbrainz_token_enc, lastfm_state, listenbrainz_state
                 FROM user_settings WHERE user_id = $1",
            )
            .bind(&caller.user.id)
            .fetch_optional(self.db.pool())
            .await?
            .unwrap_or(CredentialRow {
                scrobble_session_key_enc: None,
                listenbrainz_token_enc: None,
                lastfm_state: None,
                listenbrainz_state: None,
            });
        let status = |available: bool, key: &Option<String>, state: &Option<String>| {
            let stored = key.as_ref().map(|_| stored_state(state.as_deref()));
            ServiceStatus {
                available,
                configured: key.is_some(),
                state: stored.as_ref().map(|stored| stored.state),
                detail: stored.as_ref().and_then(|stored| stored.detail.clone()),
                checked_at: stored
                    .as_ref()
                    .and_then(|stored| stored.at)
                    .map(Timestamp::from_micros),
            }
        };
        Ok(ScrobblingStatus {
            lastfm: status(
                self.config.lastfm_available(),
                &row.scrobble_session_key_enc,
                &row.lastfm_state,
            ),
            listenbrainz: status(true, &row.listenbrainz_token_enc, &row.listenbrainz_state),
        })
    }

    /// Sets or removes the caller's credentials; a new one starts in state `unknown`.
    pub async fn set_credentials(
        &self,
        caller: &Caller,
        change: &CredentialsChange,
    ) -> Result<ScrobblingStatus> {
        let user = &caller.user.id;
        let changes = [
            (Service::Lastfm, &change.lastfm_session_key),
            (Service::Listenbrainz, &change.listenbrainz_token),
        ];
        for (service, value) in changes {
            if let Some(Some(value)) = value {
                validate_credential(service, value)?;
            }
        }
        self.settings.ensure_row(user).await?;
        let mut tx = self.db.begin().await?;
        for (service, value) in changes {
            let Some(value) = value else { continue };
            let stored = value
                .as_deref()
                .map(|value| {
                    self.cipher()
                        .seal(&Self::owner(user, service), value.trim())
                })
                .transpose()?;
            let state = stored.as_ref().map(|_| {
                serde_json::to_string(&StoredState {
                    state: ServiceState::Unknown,
                    detail: None,
                    at: None,
                })
                .expect("a state serialises")
            });
            self.db
                .sql(&format!(
                    "UPDATE user_settings SET {} = $2, {} = $3, updated_at = {{now}} WHERE user_id = $1",
                    service.key_column(),
                    service.state_column()
                ))
                .bind(user)
                .bind(stored.as_deref())
                .bind(state)
                .execute(&mut *tx)
                .await?;
            if stored.is_none() {
                // Removed: its queued plays have nowhere to go.
                self.db
                    .sql("DELETE FROM scrobble_queue WHERE user_id = $1 AND service = $2")
                    .bind(user)
                    .bind(service.as_str())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        // A new credential sends what waited while the old one was revoked.
        let set: Vec<Service> = changes
            .iter()
            .filter(|(_, value)| matches!(value, Some(Some(_))))
            .map(|(service, _)| *service)
            .collect();
        self.forwarder.wake(user, &set).await;
        self.status(caller).await
    }

    /// The user's credential for `service` as stored (ciphertext), and its state.
    async fn stored_credential(
        &self,
        user: &UserId,
        service: Service,
    ) -> Result<Option<(String, StoredState)>> {
        let row: Option<(Option<String>, Option<String>)> = self
            .db
            .sql(&format!(
                "SELECT {}, {} FROM user_settings WHERE user_id = $1",
                service.key_column(),
                service.state_column()
            ))
            .bind(user)
            .fetch_optional(self.db.pool())
            .await?;
        Ok(row.and_then(|(key, state)| Some((key?, stored_state(state.as_deref())))))
    }

    /// Records how `service` answered, unless the credential changed meanwhile (`sealed` is
    /// the ciphertext that was used).
    async fn record_state(
        &self,
        user: &UserId,
        service: Service,
        sealed: &str,
        state: ServiceState,
        detail: Option<&str>,
    ) -> Result<()> {
        let stored = serde_json::to_string(&StoredState {
            state,
            detail: detail.map(str::to_string),
            at: Some(Timestamp::now().as_micros()),
        })
        .expect("a state serialises");
        self.db
            .sql(&format!(
                "UPDATE user_settings SET {state} = $3 WHERE user_id = $1 AND {key} = $2",
                key = service.key_column(),
                state = service.state_column()
            ))
            .bind(user)
            .bind(sealed)
            .bind(stored)
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    /// The clear credential of `user` for `service`, with its ciphertext: `Ok(None)` when
    /// there is nothing to send with (none set, revoked, or Last.fm without an API key on
    /// this server). A credential that no longer decrypts (`LEGACY_SECRET_KEY` changed) is
    /// marked revoked, so the user sees they must set it again.
    async fn credential(
        &self,
        user: &UserId,
        service: Service,
    ) -> Result<Option<(String, String)>> {
        if service == Service::Lastfm && !self.config.lastfm_available() {
            return Ok(None);
        }
        let Some((sealed, state)) = self.stored_credential(user, service).await? else {
            return Ok(None);
        };
        if state.state == ServiceState::Revoked {
            return Ok(None);
        }
        match self.cipher().open(&Self::owner(user, service), &sealed) {
            Some(clear) => Ok(Some((clear, sealed))),
            None => {
                self.record_state(
                    user,
                    service,
                    &sealed,
                    ServiceState::Revoked,
                    Some("the stored credential cannot be decrypted (was LEGACY_SECRET_KEY changed?): set it again"),
                )
                .await?;
                Ok(None)
            }
        }
    }

    fn lastfm(&self) -> Option<lastfm::Lastfm> {
        let config = &self.config;
        Some(lastfm::Lastfm::new(
            self.http.clone(),
            &config.lastfm_base_url,
            config.lastfm_api_key.as_deref()?,
            config.lastfm_api_secret.as_deref()?,
        ))
    }

    fn listenbrainz(&self) -> listenbrainz::ListenBrainz {
        listenbrainz::ListenBrainz::new(self.http.clone(), &self.config.listenbrainz_base_url)
    }

    /// Sends `user`'s queued plays to `service`, oldest first, in batches, until none is left
    /// or the service fails (the `submit_scrobbles` job).
    pub(crate) async fn submit_queued(
        &self,
        user: &UserId,
        service: Service,
        job: &crate::jobs::JobContext,
    ) -> std::result::Result<SubmitReport, JobError> {
        let mut report = SubmitReport {
            service: service.as_str(),
            ..Default::default()
        };
        let Some((credential, sealed)) = self.credential(user, service).await? else {
            report.pending = self.queued_count(user, service).await?;
            report.detail = Some(
                "nothing to send with (no credential, revoked, or no API key on this server)"
                    .into(),
            );
            return Ok(report);
        };
        let oldest = Timestamp::now().as_micros() - MAX_QUEUED_AGE.as_micros() as i64;
        report.expired = self
            .db
            .sql(
                "DELETE FROM scrobble_queue WHERE user_id = $1 AND service = $2 AND played_at < $3",
            )
            .bind(user)
            .bind(service.as_str())
            .bind(oldest)
            .execute(self.db.pool())
            .await? as usize;
        let batch_size = match service {
            Service::Lastfm => lastfm::MAX_BATCH,
            Service::Listenbrainz => listenbrainz::MAX_BATCH,
        };
        // After a refused batch, its plays go one at a time.
        let mut singles_left = 0usize;
        loop {
            let batch_size = if singles_left > 0 {
                singles_left -= 1;
                1
            } else {
                batch_size
            };
            let rows: Vec<(String, String, i64)> = self
                .db
                .sql(
                    "SELECT play_id, track_id, played_at FROM scrobble_queue WHERE user_id = $1 AND service = $2
                     ORDER BY played_at, play_id LIMIT $3",
                )
                .bind(user)
                .bind(service.as_str())
                .bind(batch_size as i64)
                .fetch_all(self.db.pool())
                .await?;
            if rows.is_empty() {
                break;
            }
            let ids: Vec<&str> = rows.iter().map(|(_, track, _)| track.as_str()).collect();
            let tracks: std::collections::HashMap<String, crate::domain::Track> = self
                .catalog
                .tracks_in_order(&ids)
                .await?
                .into_iter()
                .map(|track| (track.id.to_string(), track))
                .collect();
            let mut sendable = Vec::new();
            let mut unsendable = Vec::new();
            for (play_id, track_id, played_at) in &rows {
                match tracks
                    .get(track_id)
                    .and_then(|track| Play::of(track, Timestamp::from_micros(*played_at)))
                {
                    Some(play) => sendable.push((play_id.as_str(), play)),
                    None => unsendable.push(play_id.as_str()),
                }
            }
            report.ignored += unsendable.len();
            self.dequeue(user, service, &unsendable).await?;
            if sendable.is_empty() {
                continue;
            }
            let plays: Vec<Play> = sendable.iter().map(|(_, play)| play.clone()).collect();
            // A worker that lost the job (another runs it now) must not send these again.
            job.ensure_lease().await?;
            let sent = match service {
                Service::Lastfm => {
                    let client = self.lastfm().ok_or_else(|| {
                        JobError::permanent("LASTFM_API_KEY and LASTFM_API_SECRET are not set")
                    })?;
                    client.scrobble(&credential, &plays).await.map(|outcome| {
                        let later: Vec<usize> = outcome.later.clone();
                        (outcome.accepted, outcome.ignored.len(), later)
                    })
                }
                Service::Listenbrainz => self
                    .listenbrainz()
                    .submit(&credential, &plays)
                    .await
                    .map(|()| (plays.len(), 0, Vec::new())),
            };
            match sent {
                Ok((accepted, ignored, later)) => {
                    report.sent += accepted;
                    report.ignored += ignored;
                    let done: Vec<&str> = sendable
                        .iter()
                        .enumerate()
                        .filter(|(index, _)| !later.contains(index))
                        .map(|(_, (play_id, _))| *play_id)
                        .collect();
                    self.dequeue(user, service, &done).await?;
                    if !later.is_empty() {
                        let detail =
                            "Last.fm's daily scrobble limit is reached: the rest is sent later";
                        self.record_state(user, service, &sealed, ServiceState::Ok, Some(detail))
                            .await?;
                        report.state = Some(ServiceState::Ok);
                        report.detail = Some(detail.into());
                        break;
                    }
                    report.state = Some(ServiceState::Ok);
                }
                Err(SendError::Refused(_)) if sendable.len() > 1 => {
                    singles_left = sendable.len();
                }
                Err(SendError::Refused(message)) => {
                    let play_id = sendable[0].0;
                    tracing::warn!(user = %user, service = service.as_str(), play = play_id, error = %message, "a play was refused: dropped");
                    report.ignored += 1;
                    self.dequeue(user, service, &[play_id]).await?;
                }
                Err(error) => {
                    let ids: Vec<&str> = sendable.iter().map(|(play_id, _)| *play_id).collect();
                    self.note_failure(user, service, &ids, error.message())
                        .await?;
                    let state = match error {
                        SendError::Revoked(_) => ServiceState::Revoked,
                        _ => ServiceState::Failing,
                    };
                    self.record_state(user, service, &sealed, state, Some(error.message()))
                        .await?;
                    tracing::warn!(user = %user, service = service.as_str(), error = error.message(), "scrobbling failed");
                    return match error {
                        // Stopped until the user sets a new credential: the job is done.
                        SendError::Revoked(message) => {
                            report.state = Some(state);
                            report.detail = Some(message);
                            report.pending = self.queued_count(user, service).await?;
                            Ok(report)
                        }
                        SendError::Temporary(message) => Err(JobError::retry(message)),
                        SendError::Permanent(message) | SendError::Refused(message) => {
                            Err(JobError::permanent(message))
                        }
                    };
                }
            }
        }
        if report.state == Some(ServiceState::Ok) && report.detail.is_none() {
            self.record_state(user, service, &sealed, ServiceState::Ok, None)
                .await?;
        }
        report.pending = self.queued_count(user, service).await?;
        Ok(report)
    }

    async fn dequeue(&self, user: &UserId, service: Service, play_ids: &[&str]) -> Result<()> {
        for chunk in play_ids.chunks(crate::db::CHUNK) {
            let mut delete = self
                .db
                .sql("DELETE FROM scrobble_queue WHERE user_id = $1 AND service = $2 AND play_id IN (")
                .bind(user)
                .bind(service.as_str());
            delete.push_list(chunk.iter().copied()).push(")");
            delete.execute(self.db.pool()).await?;
        }
        Ok(())
    }

    async fn note_failure(
        &self,
        user: &UserId,
        service: Service,
        play_ids: &[&str],
        error: &str,
    ) -> Result<()> {
        for chunk in play_ids.chunks(crate::db::CHUNK) {
            let mut update = self
                .db
                .sql(
                    "UPDATE scrobble_queue SET attempts = attempts + 1, last_error = $3
                     WHERE user_id = $1 AND service = $2 AND play_id IN (",
                )
                .bind(user)
                .bind(service.as_str())
                .bind(error);
            update.push_list(chunk.iter().copied()).push(")");
            update.execute(self.db.pool()).await?;
        }
        Ok(())
    }

    async fn queued_count(&self, user: &UserId, service: Service) -> Result<usize> {
        let count: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM scrobble_queue WHERE user_id = $1 AND service = $2")
            .bind(user)
            .bind(service.as_str())
            .fetch_scalar(self.db.pool())
            .await?;
        Ok(count as usize)
    }

    /// Tells each of `user`'s working services that `track` is playing now (the
    /// `update_now_playing` job). A refused credential is marked revoked; other failures are
    /// reported, not retried.
    pub(crate) async fn send_now_playing(
        &self,
        user: &UserId,
        track: &TrackId,
    ) -> Result<NowPlayingReport> {
        let mut report = NowPlayingReport::default();
        let Some(track) = self.catalog.tracks_in_order(&[track.as_str()]).await?.pop() else {
            return Ok(report);
        };
        let Some(play) = Play::of(&track, Timestamp::now()) else {
            return Ok(report);
        };
        for service in Service::ALL {
            let Some((credential, sealed)) = self.credential(user, service).await? else {
                continue;
            };
            let sent = match service {
                Service::Lastfm => match self.lastfm() {
                    Some(client) => client.update_now_playing(&credential, &play).await,
                    None => continue,
                },
                Service::Listenbrainz => self.listenbrainz().playing_now(&credential, &play).await,
            };
            match sent {
                Ok(()) => report.sent.push(service.as_str()),
                Err(error) => {
                    if let SendError::Revoked(message) = &error {
                        self.record_state(
                            user,
                            service,
                            &sealed,
                            ServiceState::Revoked,
                            Some(message),
                        )
                        .await?;
                    }
                    report.failed.push(error.message().to_string());
                }
            }
        }
        Ok(report)
    }
}

fn validate_credential(service: Service, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(
            service.field(),
            "must not be empty (send null to remove it)",
        ));
    }
    if value.len() > MAX_CREDENTIAL_LEN {
        return Err(Error::invalid(
            service.field(),
            format!("must be at most {MAX_CREDENTIAL_LEN} characters"),
        ));
    }
    // Session keys and tokens are printable ASCII: a space or anything else is a paste error.
    if !value.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(Error::invalid(
            service.field(),
            "must be printable ASCII without spaces",
        ));
    }
    Ok(())
}
