//! Forwarding plays: the durable queue (`scrobble_queue`) and the two jobs that drain it.
//!
//! A play is queued in the transaction that stores it ([`Forwarder::queue_plays`], called by
//! `Social::push_events`, which every way of recording a play goes through), once per
//! service the user has set up, and only when it counts by the service's rule
//! ([`counts`]). The primary key (user, service, play's client id) makes it forwarded once,
//! however often its event is pushed. After the commit a `submit_scrobbles` job per user and
//! service sends what is queued; [`resume`] re-enqueues those jobs every few minutes for
//! whatever is still queued (a service that was down longer than a job's retries, a play
//! that arrived while the last job was finishing).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Service, ServiceState};
use crate::db::Db;
use crate::domain::NewPlay;
use crate::jobs::{JobContext, JobError, JobKind, Jobs, Pool};
use crate::settings::UserSettings;
use crate::{Result, TrackId, UserId};

/// How often workers look for plays still queued.
pub const RESUME_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Last.fm does not count a track of 30 seconds or less.
const LASTFM_MIN_TRACK_MS: i64 = 30_000;
/// A play counts once half the track, or four minutes of it, was heard (both services).
const ENOUGH_MS: i64 = 240_000;
/// When the track's length is unknown, a play counts after this much.
const UNKNOWN_LENGTH_ENOUGH_MS: i64 = 30_000;

/// Whether a play counts for `service`: Last.fm's rule (the track is longer than 30 seconds
/// and was played for half its length or four minutes, whichever comes first), which
/// ListenBrainz asks clients to follow too (without the 30-second floor). A play without a
/// listened time (a legacy client's `scrobble`, a `/history` entry without
/// `seconds_played`) counts: the client decided it did.
pub fn counts(service: Service, seconds_played: Option<f64>, duration_ms: Option<i64>) -> bool {
    if service == Service::Lastfm && duration_ms.is_some_and(|ms| ms <= LASTFM_MIN_TRACK_MS) {
        return false;
    }
    let Some(seconds) = seconds_played else {
        return true;
    };
    let heard_ms = (seconds * 1000.0) as i64;
    match duration_ms {
        Some(duration) => heard_ms >= (duration / 2).min(ENOUGH_MS),
        None => heard_ms >= UNKNOWN_LENGTH_ENOUGH_MS,
    }
}

/// Queues plays as they are stored and wakes the jobs that send them.
#[derive(Clone, Debug)]
pub(crate) struct Forwarder {
    db: Db,
    jobs: Jobs,
    lastfm_available: bool,
}

#[derive(sqlx::FromRow)]
struct UserRow {
    settings: String,
    scrobble_session_key_enc: Option<String>,
    listenbrainz_token_enc: Option<String>,
    lastfm_state: Option<String>,
    listenbrainz_state: Option<String>,
}

impl UserRow {
    /// The services plays are forwarded to: set up, not revoked, and (unless `switched_off`
    /// counts too) scrobbling on.
    fn services(&self, lastfm_available: bool, switched_off: bool) -> Vec<Service> {
        let settings: UserSettings = serde_json::from_str(&self.settings).unwrap_or_default();
        if !settings.scrobbling && !switched_off {
            return Vec::new();
        }
        let live = |key: &Option<String>, state: &Option<String>| {
            key.is_some() && super::stored_state(state.as_deref()).state != ServiceState::Revoked
        };
        let mut services = Vec::new();
        if lastfm_available && live(&self.scrobble_session_key_enc, &self.lastfm_state) {
            services.push(Service::Lastfm);
        }
        if live(&self.listenbrainz_token_enc, &self.listenbrainz_state) {
            services.push(Service::Listenbrainz);
        }
        services
    }
}

impl Forwarder {
    pub(crate) fn new(db: Db, jobs: Jobs, lastfm_available: bool) -> Forwarder {
        Forwarder {
            db,
            jobs,
            lastfm_available,
        }
    }

    async fn services_of(
        &self,
        conn: &mut sqlx::AnyConnection,
        user: &UserId,
    ) -> Result<Vec<Service>> {
        let row: Option<UserRow> = self
            .db
            .sql(
                "SELECT settings, scrobble_session_key_enc, listenbrainz_token_enc, lastfm_state, listenbrainz_state
                 FROM user_settings WHERE user_id = $1",
            )
            .bind(user)
            .fetch_optional(conn)
            .await?;
        Ok(row.map_or_else(Vec::new, |row| row.services(self.lastfm_available, false)))
    }

    /// Queues `plays`, just stored on `conn` (inside the caller's transaction), for the
    /// user's services; answers the services that got something.
    pub(crate) async fn queue_plays(
        &self,
        conn: &mut sqlx::AnyConnection,
        user: &UserId,
        plays: &[&NewPlay],
    ) -> Result<Vec<Service>> {
        if plays.is_empty() {
            return Ok(Vec::new());
        }
        let services = self.services_of(conn, user).await?;
        if services.is_empty() {
            return Ok(Vec::new());
        }
        let mut durations: HashMap<String, Option<i64>> = HashMap::new();
        let ids: Vec<&str> = plays
            .iter()
            .map(|play| play.track_id.as_str())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        for chunk in ids.chunks(crate::db::CHUNK) {
            let mut select = self
                .db
                .sql("SELECT id, duration_ms FROM tracks WHERE id IN (");
            select.push_list(chunk.iter().copied()).push(")");
            let rows: Vec<(String, Option<i64>)> = select.fetch_all(&mut *conn).await?;
            durations.extend(rows);
        }
        let mut queued = Vec::new();
        for service in services {
            let counted: Vec<&&NewPlay> = plays
                .iter()
                .filter(|play| {
                    let duration = durations.get(&play.track_id).copied().flatten();
                    counts(service, play.seconds_played, duration)
                })
                .collect();
            for chunk in counted.chunks(200) {
                let mut insert = self.db.sql(
                    "INSERT INTO scrobble_queue (user_id, service, play_id, track_id, played_at, queued_at, attempts) VALUES ",
                );
                insert
                    .push_values(chunk, |row, play| {
                        row.bind(user)
                            .bind(service.as_str())
                            .bind(play.client_event_id.as_str())
                            .bind(play.track_id.as_str())
                            .bind(play.played_at.as_micros())
                            .raw("{now}")
                            .raw("0");
                    })
                    .push(" ON CONFLICT (user_id, service, play_id) DO NOTHING");
                insert.execute(&mut *conn).await?;
            }
            if !counted.is_empty() {
                queued.push(service);
            }
        }
        Ok(queued)
    }

    /// Enqueues the job sending `user`'s queued plays to each of `services` (best effort: a
    /// play left queued is picked up by [`resume`]).
    pub(crate) async fn wake(&self, user: &UserId, services: &[Service]) {
        self.jobs
            .enqueue_best_effort::<SubmitScrobbles>(
                services.iter().map(|service| SubmitPayload {
                    user_id: user.to_string(),
                    service: service.as_str().to_string(),
                }),
                Some(user),
            )
            .await;
    }

    /// Enqueues telling the user's services what they are playing now (best effort).
    pub(crate) async fn now_playing(&self, user: &UserId, track: &TrackId) {
        let services = match self.db.pool().acquire().await {
            Ok(mut conn) => self.services_of(&mut conn, user).await,
            Err(error) => Err(error.into()),
        };
        match services {
            Ok(services) if services.is_empty() => {}
            Ok(_) => {
                self.jobs
                    .enqueue_best_effort::<UpdateNowPlaying>(
                        [NowPlayingPayload {
                            user_id: user.to_string(),
                            track_id: track.to_string(),
                        }],
                        Some(user),
                    )
                    .await
            }
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), "cannot read the scrobbling set-up")
            }
        }
    }

    /// Enqueues a `submit_scrobbles` job for every user and service with plays still queued
    /// and a credential that works (a live job for the same user and service is reused).
    pub(crate) async fn resume(&self) -> Result<usize> {
        let pending: Vec<(String, String)> = self
            .db
            .sql("SELECT DISTINCT user_id, service FROM scrobble_queue")
            .fetch_all(self.db.pool())
            .await?;
        let mut by_user: HashMap<String, Vec<String>> = HashMap::new();
        for (user, service) in pending {
            by_user.entry(user).or_default().push(service);
        }
        let mut woken = 0;
        let mut conn = self.db.pool().acquire().await?;
        for (user, services) in by_user {
            let user = UserId::from_db(user);
            // Scrobbling switched off keeps what was queued while it was on.
            let row: Option<UserRow> = self
                .db
                .sql(
                    "SELECT settings, scrobble_session_key_enc, listenbrainz_token_enc, lastfm_state, listenbrainz_state
                     FROM user_settings WHERE user_id = $1",
                )
                .bind(&user)
                .fetch_optional(&mut *conn)
                .await?;
            let Some(row) = row else { continue };
            let live = row.services(self.lastfm_available, true);
            let due: Vec<Service> = live
                .into_iter()
                .filter(|service| services.iter().any(|name| name == service.as_str()))
                .collect();
            woken += due.len();
            self.wake(&user, &due).await;
        }
        Ok(woken)
    }
}

/// Every few minutes, enqueues jobs for plays still queued; stops when `shutdown` resolves.
pub(crate) async fn resume_forever(
    forwarder: Forwarder,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        if let Err(error) = forwarder.resume().await {
            tracing::warn!(error = %crate::error_chain(&error), "cannot look for queued scrobbles");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(RESUME_INTERVAL) => {}
        }
    }
}

/// The `submit_scrobbles` job: sends one user's queued plays to one service.
#[derive(Debug)]
pub struct SubmitScrobbles;

/// Whose plays, to which service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitPayload {
    /// The user.
    pub user_id: String,
    /// `lastfm` or `listenbrainz`.
    pub service: String,
}

impl JobKind for SubmitScrobbles {
    const NAME: &'static str = "submit_scrobbles";
    const POOL: Pool = Pool::Network;
    type Payload = SubmitPayload;
    type Service = super::Scrobbling;

    /// One sender per user and service, so a play is never sent twice at once.
    fn dedup_key(payload: &SubmitPayload) -> Option<String> {
        Some(format!(
            "submit_scrobbles:{}:{}",
            payload.user_id, payload.service
        ))
    }

    async fn run(
        scrobbling: &super::Scrobbling,
        context: &JobContext,
        payload: SubmitPayload,
    ) -> Result<Value, JobError> {
        let service = Service::parse(&payload.service).ok_or_else(|| {
            JobError::permanent(format!("unknown scrobbling service {:?}", payload.service))
        })?;
        let user = UserId::from_db(payload.user_id);
        let report = scrobbling.submit_queued(&user, service, context).await?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

/// The `update_now_playing` job: tells a user's services what they are playing now. One
/// attempt: a now-playing notice is stale by the time a retry would send it.
#[derive(Debug)]
pub struct UpdateNowPlaying;

/// Who plays what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NowPlayingPayload {
    /// The user.
    pub user_id: String,
    /// The track.
    pub track_id: String,
}

impl JobKind for UpdateNowPlaying {
    const NAME: &'static str = "update_now_playing";
    const POOL: Pool = Pool::Network;
    type Payload = NowPlayingPayload;
    type Service = super::Scrobbling;

    fn dedup_key(_payload: &NowPlayingPayload) -> Option<String> {
        None
    }

    async fn run(
        scrobbling: &super::Scrobbling,
        _context: &JobContext,
        payload: NowPlayingPayload,
    ) -> Result<Value, JobError> {
        let user = UserId::from_db(payload.user_id);
        let track = TrackId::from_db(payload.track_id);
        let report = scrobbling
            .send_now_playing(&user, &track)
            .await
            .map_err(|error| JobError::permanent(crate::error_chain(&error)))?;
        Ok(serde_json::to_value(&report).unwrap_or(Value::Null))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lastfms_rule() {
        let lastfm = Service::Lastfm;
        // Half of a 3-minute track.
        assert!(counts(lastfm, Some(90.0), Some(180_000)));
        assert!(!counts(lastfm, Some(89.0), Some(180_000)));
        // Four minutes of a long track.
        assert!(counts(lastfm, Some(240.0), Some(1_200_000)));
        assert!(!counts(lastfm, Some(239.0), Some(1_200_000)));
        // 30 seconds or shorter never counts on Last.fm; ListenBrainz has no floor.
        assert!(!counts(lastfm, Some(30.0), Some(30_000)));
        assert!(counts(Service::Listenbrainz, Some(15.0), Some(30_000)));
        // No listened time: the client decided.
        assert!(counts(lastfm, None, Some(180_000)));
        // Unknown length.
        assert!(counts(lastfm, Some(30.0), None));
        assert!(!counts(lastfm, Some(10.0), None));
    }
}
