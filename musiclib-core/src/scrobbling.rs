//! Scrobbling: each user's Last.fm session key and ListenBrainz token, and how each service
//! last answered.
//!
//! The credentials are write-only (spec: "the scrobbling session key is stored encrypted and
//! is write-only"): they are stored encrypted (AES-256-GCM under a key derived from
//! `LEGACY_SECRET_KEY` for this purpose, with the user and the service as associated data, so
//! a ciphertext copied onto another user or service does not decrypt), and nothing ever
//! returns them: the status says only whether one is set and the service's last state.

use serde::{Deserialize, Serialize};

use crate::auth::secrets::SecretBox;
use crate::auth::Caller;
use crate::config::ScrobblingConfig;
use crate::db::Db;
use crate::settings::Settings;
use crate::{Error, Result, Timestamp, UserId};

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
    ) -> Scrobbling {
        Scrobbling {
            db,
            settings,
            config,
            secret,
        }
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
            let stored = key.as_ref().map(|_| {
                state
                    .as_deref()
                    .and_then(|state| serde_json::from_str::<StoredState>(state).ok())
                    .unwrap_or(StoredState {
                        state: ServiceState::Unknown,
                        detail: None,
                        at: None,
                    })
            });
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
                .bind(stored)
                .bind(state)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        self.status(caller).await
    }
}

fn validate_credential(service: Service, value: &str) -> Result<()> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::invalid(
            service.field(),
            "must not be empty (send null to remove it)",
        ));
    }
    if value.chars().count() > MAX_CREDENTIAL_LEN {
        return Err(Error::invalid(
            service.field(),
            format!("must be at most {MAX_CREDENTIAL_LEN} characters"),
        ));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid(
            service.field(),
            "must not contain spaces or control characters",
        ));
    }
    Ok(())
}
