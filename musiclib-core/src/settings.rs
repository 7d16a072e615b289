//! Per-user settings (spec: Resources, "User settings"): one row per user, created on first
//! access, holding the user's preferences as JSON (`user_settings.settings`). The scrobbling
//! credentials live in the same row, encrypted, and belong to [`crate::scrobbling`].
//!
//! | field | values | default | what it does |
//! |---|---|---|---|
//! | `streaming_quality` | `original`, `high`, `medium`, `low` | `original` | what `GET /stream/{id}` sends when the request names no `quality` |
//! | `scrobbling` | bool | `true` | whether plays are forwarded to the user's configured scrobbling services |
//! | `replay_gain` | `off`, `track`, `album` | `off` | how the web player applies tracks' ReplayGain (album: the album's gain where known, else the track's) |
//!
//! A stored document is a contract with rows already written: a field may be added (with a
//! default), never renamed.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::cache::TtlCache;
use crate::db::Db;
use crate::media::Quality;
use crate::{Error, Result, Timestamp, UserId};

/// What a user's streams default to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamingQuality {
    /// The original file, untouched.
    #[default]
    Original,
    /// Opus, high quality.
    High,
    /// Opus, medium quality.
    Medium,
    /// Opus, low quality (mobile data).
    Low,
}

impl StreamingQuality {
    /// The rendition a stream of this quality asks for (`None`: the original).
    pub fn rendition(self) -> Option<Quality> {
        match self {
            StreamingQuality::Original => None,
            StreamingQuality::High => Some(Quality::High),
            StreamingQuality::Medium => Some(Quality::Medium),
            StreamingQuality::Low => Some(Quality::Low),
        }
    }
}

/// How a player applies tracks' ReplayGain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayGainMode {
    /// Not at all: every track at its own level.
    #[default]
    Off,
    /// Each track's gain: every track about as loud as the others.
    Track,
    /// The album's gain (the track's where there is none): an album keeps its own dynamics.
    Album,
}

/// A user's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserSettings {
    /// What streams default to when the request names no quality.
    pub streaming_quality: StreamingQuality,
    /// Whether plays are forwarded to the user's scrobbling services.
    pub scrobbling: bool,
    /// How the web player applies ReplayGain.
    pub replay_gain: ReplayGainMode,
}

impl Default for UserSettings {
    fn default() -> Self {
        UserSettings {
            streaming_quality: StreamingQuality::Original,
            scrobbling: true,
            replay_gain: ReplayGainMode::Off,
        }
    }
}

/// A partial change: the fields given are set, the rest kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatch {
    /// New default stream quality.
    pub streaming_quality: Option<StreamingQuality>,
    /// Scrobbling on or off.
    pub scrobbling: Option<bool>,
    /// How ReplayGain is applied.
    #[serde(default)]
    pub replay_gain: Option<ReplayGainMode>,
}

impl SettingsPatch {
    fn apply(&self, settings: &mut UserSettings) {
        if let Some(mode) = self.replay_gain {
            settings.replay_gain = mode;
        }
        if let Some(quality) = self.streaming_quality {
            settings.streaming_quality = quality;
        }
        if let Some(scrobbling) = self.scrobbling {
            settings.scrobbling = scrobbling;
        }
    }
}

/// A user's settings with the time they last changed.
#[derive(Debug, Clone)]
pub struct StoredSettings {
    /// The settings.
    pub settings: UserSettings,
    /// When they last changed (creation time for a fresh row).
    pub updated_at: Timestamp,
}

/// The settings service.
#[derive(Clone)]
pub struct Settings {
    db: Db,
    /// Settings read by recent requests (every stream reads its user's default quality).
    cache: Arc<TtlCache<UserId, UserSettings>>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings").finish_non_exhaustive()
    }
}

/// How long a read may reuse settings read by an earlier one (a change made through this
/// process applies at once; through another replica, within this time).
const CACHE_TTL: Duration = Duration::from_secs(5);

#[derive(sqlx::FromRow)]
struct SettingsRow {
    settings: String,
    updated_at: i64,
}

impl Settings {
    pub(crate) fn new(db: Db) -> Settings {
        Settings {
            db,
            cache: Arc::new(TtlCache::new("user_settings", CACHE_TTL, 10_000)),
        }
    }

    /// The caller's settings, their row created with the defaults on first access.
    pub async fn get(&self, caller: &Caller) -> Result<StoredSettings> {
        let read = || async {
            self.db
                .sql("SELECT settings, updated_at FROM user_settings WHERE user_id = $1")
                .bind(&caller.user.id)
                .fetch_optional::<SettingsRow, _>(self.db.pool())
                .await
        };
        // A read writes only the first time (never a write lock on every read).
        let row = match read().await? {
            Some(row) => row,
            None => {
                self.ensure_row(&caller.user.id).await?;
                read()
                    .await?
                    .ok_or_else(|| Error::not_found("user", &caller.user.id))?
            }
        };
        let stored = StoredSettings {
            settings: parse(&row.settings),
            updated_at: Timestamp::from_micros(row.updated_at),
        };
        self.cache
            .insert(caller.user.id.clone(), stored.settings.clone());
        Ok(stored)
    }

    /// The settings of `user`, possibly a few seconds old (for hot paths such as streams).
    pub(crate) async fn current(&self, user: &UserId) -> Result<UserSettings> {
        if let Some(settings) = self.cache.get(user) {
            return Ok(settings);
        }
        let stored: Option<String> = self
            .db
            .sql("SELECT settings FROM user_settings WHERE user_id = $1")
            .bind(user)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        let settings = stored.as_deref().map(parse).unwrap_or_default();
        self.cache.insert(user.clone(), settings.clone());
        Ok(settings)
    }

    /// The quality a stream request gets: the one it names (`original`, `low`, `medium`,
    /// `high`), else the caller's `streaming_quality`. `None` is the original.
    pub async fn stream_quality(
        &self,
        caller: &Caller,
        requested: Option<&str>,
    ) -> Result<Option<Quality>> {
        match requested {
            Some("original") => Ok(None),
            Some(name) => Quality::parse(name)
                .map(Some)
                .map_err(|_| Error::invalid("quality", "must be original, low, medium or high")),
            None => Ok(self
                .current(&caller.user.id)
                .await?
                .streaming_quality
                .rendition()),
        }
    }

    /// Changes the fields `patch` names and returns the result.
    pub async fn update(&self, caller: &Caller, patch: &SettingsPatch) -> Result<StoredSettings> {
        let user = &caller.user.id;
        self.ensure_row(user).await?;
        let mut tx = self.db.begin().await?;
        let stored: String = self
            .db
            .sql(&format!(
                "SELECT settings FROM user_settings WHERE user_id = $1{}",
                self.db.lock("user_settings")
            ))
            .bind(user)
            .fetch_scalar(&mut *tx)
            .await?;
        let mut settings = parse(&stored);
        patch.apply(&mut settings);
        let document = serde_json::to_string(&settings)
            .map_err(|error| Error::internal_with("cannot write settings", error))?;
        self.db
            .sql("UPDATE user_settings SET settings = $2, updated_at = {now} WHERE user_id = $1")
            .bind(user)
            .bind(document)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.cache.remove(user);
        self.get(caller).await
    }

    /// Creates `user`'s row with the defaults if it has none (lazily, on first access).
    pub(crate) async fn ensure_row(&self, user: &UserId) -> Result<()> {
        let defaults = serde_json::to_string(&UserSettings::default())
            .map_err(|error| Error::internal_with("cannot write settings", error))?;
        let inserted = self
            .db
            .sql(
                "INSERT INTO user_settings (user_id, settings, created_at, updated_at)
                 SELECT $1, $2, {now}, {now} WHERE EXISTS (SELECT 1 FROM users WHERE id = $1)
                 ON CONFLICT (user_id) DO NOTHING",
            )
            .bind(user)
            .bind(defaults)
            .execute(self.db.pool())
            .await;
        match inserted {
            Ok(_) => Ok(()),
            // A concurrent first access inserted it.
            Err(error) if error.is_unique_violation() => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// A stored document; fields it lacks (written by an older release) take their defaults, and
/// a damaged one reads as the defaults rather than locking the user out.
fn parse(stored: &str) -> UserSettings {
    serde_json::from_str(stored).unwrap_or_else(|error| {
        tracing::warn!(%error, "unreadable user settings; using the defaults");
        UserSettings::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_documents_take_defaults_for_new_fields() {
        assert_eq!(parse("{}"), UserSettings::default());
        let settings = parse(r#"{"streaming_quality":"low"}"#);
        assert_eq!(settings.streaming_quality, StreamingQuality::Low);
        assert!(settings.scrobbling);
        assert_eq!(settings.replay_gain, ReplayGainMode::Off);
        assert_eq!(parse("not json"), UserSettings::default());
    }

    #[test]
    fn patches_change_only_what_they_name() {
        let mut settings = UserSettings::default();
        SettingsPatch {
            scrobbling: Some(false),
            ..Default::default()
        }
        .apply(&mut settings);
        assert_eq!(settings.streaming_quality, StreamingQuality::Original);
        assert!(!settings.scrobbling);
        SettingsPatch {
            replay_gain: Some(ReplayGainMode::Album),
            ..Default::default()
        }
        .apply(&mut settings);
        assert_eq!(settings.replay_gain, ReplayGainMode::Album);
        assert!(!settings.scrobbling);
        assert!(serde_json::from_str::<SettingsPatch>(r#"{"theme":"dark"}"#).is_err());
    }
}
