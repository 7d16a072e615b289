//! Server administration: operations only an admin may run (each starts with
//! `caller.require_admin()`). The state of every dependency, the source registry, the
//! effective server settings (secrets redacted), what the metrics read at a scrape, and the
//! library-wide reindex. Server settings
//! and sources come from the environment, so changing them here is refused as not supported.

mod reindex;

use std::sync::Arc;

pub use reindex::Reindex;

use crate::auth::Caller;
use crate::catalog::Catalog;
use crate::config::EffectiveSetting;
use crate::db::Db;
use crate::ingest::{Ingest, SourceInfo};
use crate::jobs::{Jobs, Registry};
use crate::media::Media;
use crate::recommend::ExternalStatus;
use crate::remote::Remote;
use crate::storage::{Storage, StorageKind};
use crate::{Config, Error, JobId, Result};

/// How a dependency stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    /// Working (checked just now).
    Ok,
    /// Set up; an outside web service, not probed (it is called when work needs it, and its
    /// failures are recorded on that work).
    Configured,
    /// Turned off by the settings, or lacking what it needs (a key).
    Disabled,
    /// Not answering.
    Unavailable,
}

impl ServiceState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceState::Ok => "ok",
            ServiceState::Configured => "configured",
            ServiceState::Disabled => "disabled",
            ServiceState::Unavailable => "unavailable",
        }
    }
}

/// One dependency of the server and how it stands.
#[derive(Debug, Clone)]
pub struct ServiceStatus {
    /// `database`, `storage`, `job_queue`, `transcoder`, `acoustid`, `coverartarchive`,
    /// `lastfm`, `listenbrainz`, `lrclib`, `sound_analysis` (with how many tracks are analysed
    /// and waiting), `loudness_analysis` (ReplayGain: from tags, measured, waiting, failed),
    /// `recommender` (the external recommender: disabled, configured, or
    /// unavailable while paused after a failure), and each remote source (`remote`,
    /// `subsonic`).
    pub name: &'static str,
    /// How it stands.
    pub state: ServiceState,
    /// What it is and what was seen (never a secret).
    pub detail: String,
}

/// The administration service.
#[derive(Clone, Debug)]
pub struct Admin {
    config: Arc<Config>,
    db: Db,
    storage: Storage,
    jobs: Jobs,
    media: Media,
    ingest: Ingest,
    remote: Remote,
    recommend: crate::recommend::Recommend,
    catalog: Catalog,
}

impl Admin {
    #[allow(clippy::too_many_arguments)] // one per service it reports on
    pub(crate) fn new(
        config: Arc<Config>,
        db: Db,
        storage: Storage,
        jobs: Jobs,
        media: Media,
        ingest: Ingest,
        remote: Remote,
        recommend: crate::recommend::Recommend,
        catalog: Catalog,
    ) -> Admin {
        Admin {
            config,
            db,
            storage,
            jobs,
            media,
            ingest,
            remote,
            recommend,
            catalog,
        }
    }

    /// Registers the reindex job kind (it runs with the catalog).
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &Config) {
        registry.kind::<Reindex>(self.catalog.clone(), config);
    }

    /// Every dependency with its state: the database, storage and job queue are checked
    /// now, the transcoder is run once per process; outside web services are reported as
    /// configured or disabled.
    pub async fn services(&self, caller: &Caller) -> Result<Vec<ServiceStatus>> {
        caller.require_admin()?;
        let (database, storage, queue) =
            tokio::join!(self.db.ping(), self.storage.check(), self.jobs.counts());
        let backend = self.db.kind().as_str();
        let mut services = vec![
            match database {
                Ok(()) => status("database", ServiceState::Ok, backend),
                Err(error) => status(
                    "database",
                    ServiceState::Unavailable,
                    format!("{backend}: {}", crate::error_chain(&error)),
                ),
            },
            match storage {
                Ok(()) => status("storage", ServiceState::Ok, self.storage_detail()),
                Err(error) => status(
                    "storage",
                    ServiceState::Unavailable,
                    format!("{}: {}", self.storage_detail(), crate::error_chain(&error)),
                ),
            },
            match queue {
                Ok(counts) => status(
                    "job_queue",
                    ServiceState::Ok,
                    format!(
                        "{} queued, {} running, {} failed",
                        counts.queued, counts.running, counts.failed
                    ),
                ),
                Err(error) => status(
                    "job_queue",
                    ServiceState::Unavailable,
                    crate::error_chain(&error),
                ),
            },
            if self.media.transcoder_ready().await {
                status(
                    "transcoder",
                    ServiceState::Ok,
                    format!("ffmpeg ({})", self.config.transcoding.ffmpeg.display()),
                )
            } else {
                status(
                    "transcoder",
                    ServiceState::Unavailable,
                    format!(
                        "ffmpeg ({}) does not run: originals stream, renditions and HLS do not",
                        self.config.transcoding.ffmpeg.display()
                    ),
                )
            },
        ];
        // The web services the settings alone describe (`metrics::Service`).
        for service in crate::metrics::Service::ALL {
            if let Some(configured) = service.configured(&self.config) {
                services.push(match configured {
                    Ok(address) => status(service.as_str(), ServiceState::Configured, address),
                    Err(why) => status(service.as_str(), ServiceState::Disabled, why),
                });
            }
        }
        if self.config.recommend.sound_analysis {
            services.push(match self.recommend.sound_status().await {
                Ok(sound) => status(
                    "sound_analysis",
                    ServiceState::Ok,
                    format!(
                        "{} tracks analysed, {} waiting, {} could not be analysed",
                        sound.analyzed, sound.pending, sound.failed
                    ),
                ),
                Err(error) => status(
                    "sound_analysis",
                    ServiceState::Unavailable,
                    format!(
                        "cannot read the analysis state: {}",
                        crate::error_chain(&error)
                    ),
                ),
            });
        } else {
            services.push(status(
                "sound_analysis",
                ServiceState::Disabled,
                "SOUND_ANALYSIS is off: no sounds_like, no sonic similarity",
            ));
        }
        if self.config.transcoding.loudness_analysis {
            services.push(match self.media.loudness_status().await {
                Ok(loudness) => status(
                    "loudness_analysis",
                    ServiceState::Ok,
                    format!(
                        "ReplayGain: {} tracks from their tags, {} measured, {} waiting, {} could not be measured",
                        loudness.from_tags, loudness.measured, loudness.pending, loudness.failed
                    ),
                ),
                Err(error) => status(
                    "loudness_analysis",
                    ServiceState::Unavailable,
                    format!(
                        "cannot read the measurement state: {}",
                        crate::error_chain(&error)
                    ),
                ),
            });
        } else {
            services.push(status(
                "loudness_analysis",
                ServiceState::Disabled,
                "LOUDNESS_ANALYSIS is off: only ReplayGain read from tags",
            ));
        }
        services.push(match self.recommend.external_status() {
            ExternalStatus::Disabled => status(
                "recommender",
                ServiceState::Disabled,
                "RECOMMENDER_URL is not set: the radio's own signals answer alone",
            ),
            ExternalStatus::Configured => status(
                "recommender",
                ServiceState::Configured,
                match &self.config.recommend.external_url {
                    Some(url) if self.config.recommend.external.is_none() => {
                        crate::config::redact_url(url)
                    }
                    _ => "an external recommender given by the embedder".to_string(),
                },
            ),
            ExternalStatus::Paused { left, reason } => status(
                "recommender",
                ServiceState::Unavailable,
                format!(
                    "left out for {} s more after: {reason}",
                    left.as_secs().max(1)
                ),
            ),
        });
        for source in self.remote.sources().await? {
            let state = match source.available {
                None => ServiceState::Disabled,
                Some(true) => ServiceState::Ok,
                Some(false) => ServiceState::Unavailable,
            };
            services.push(status(
                source.name,
                state,
                format!("remote source: {}", source.detail.unwrap_or_default()),
            ));
        }
        Ok(services)
    }

    fn storage_detail(&self) -> String {
        match self.storage.kind() {
            StorageKind::Local => format!(
                "local ({})",
                self.storage
                    .local_root()
                    .map(|root| root.display().to_string())
                    .unwrap_or_default()
            ),
            StorageKind::S3 => "s3".to_string(),
        }
    }

    /// The source registry: every source, whether it is enabled (and for a remote one,
    /// whether it answers now), and its tracks.
    pub async fn sources(&self, caller: &Caller) -> Result<Vec<SourceInfo>> {
        caller.require_admin()?;
        crate::workflows::sources(&self.ingest, &self.remote).await
    }

    /// What the operators' metrics read from the database at a scrape (the job queue), for a
    /// superuser (`GET /metrics` on the main address).
    pub async fn metrics(&self, caller: &Caller) -> Result<crate::metrics::Snapshot> {
        caller.require_admin()?;
        self.metrics_snapshot().await
    }

    /// [`Admin::metrics`] without a caller: only for an address the operator set aside for
    /// metrics scrapers (the binary's `METRICS_BIND_ADDRESS`), never for a user's request.
    pub async fn metrics_snapshot(&self) -> Result<crate::metrics::Snapshot> {
        Ok(crate::metrics::Snapshot {
            jobs: self.jobs.stats().await?,
        })
    }

    /// The effective server settings, secrets redacted.
    pub fn settings(&self, caller: &Caller) -> Result<Vec<EffectiveSetting>> {
        caller.require_admin()?;
        Ok(self.config.effective())
    }

    /// Starts a reindex of the whole library (see [`Reindex`]); a reindex already queued or
    /// running is returned instead of a second one.
    pub async fn reindex(&self, caller: &Caller) -> Result<JobId> {
        caller.require_admin()?;
        self.jobs
            .enqueue::<Reindex>(&reindex::Payload::default(), Some(&caller.user.id))
            .await
    }

    /// Refuses to change server settings, which come from the environment: not supported
    /// (after the admin check).
    pub fn change_settings(&self, caller: &Caller) -> Result<std::convert::Infallible> {
        caller.require_admin()?;
        Err(Error::NotSupported(
            "server settings come from the environment; change them there and restart".into(),
        ))
    }

    /// Refuses to change a source, which is configured in the environment: not supported
    /// (after the admin check).
    pub fn change_source(
        &self,
        caller: &Caller,
        _source: &str,
    ) -> Result<std::convert::Infallible> {
        caller.require_admin()?;
        Err(Error::NotSupported(
            "sources are configured in the environment; change them there and restart".into(),
        ))
    }
}

fn status(name: &'static str, state: ServiceState, detail: impl Into<String>) -> ServiceStatus {
    ServiceStatus {
        name,
        state,
        detail: detail.into(),
    }
}
