//! Downloading an episode into storage: the `download_podcast_episode` job.
//!
//! The enclosure is fetched through the guarded client (its URL checked again: a feed may
//! have changed it), streamed into a staging file while it is hashed and counted (more than
//! `PODCAST_EPISODE_MAX_BYTES` ends it; so does a minute without a byte, or
//! [`super::DOWNLOAD_TIMEOUT`] in all), probed (it must be audio the server reads), written
//! to storage, and only then does the episode's row point at it. Progress (bytes received)
//! is on the episode and the job. Failures retry by the download policy
//! (`DOWNLOAD_MAX_ATTEMPTS`, `DOWNLOAD_RETRY_*`); those no retry can fix (refused, too
//! large, not audio, gone) do not.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::Digest as _;
use tokio::io::AsyncWriteExt as _;

use super::{Podcasts, DOWNLOAD_TIMEOUT};
use crate::config::RetryPolicy;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::metrics::Service;
use crate::storage::layout;
use crate::{Config, EpisodeId, PodcastId};

/// How often a running download writes its progress.
const TICK: Duration = Duration::from_millis(500);

/// Payload of `download_podcast_episode`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DownloadPayload {
    /// The episode.
    pub episode_id: EpisodeId,
}

/// The `download_podcast_episode` job.
pub struct DownloadEpisode;

impl JobKind for DownloadEpisode {
    const NAME: &'static str = "download_podcast_episode";
    const POOL: Pool = Pool::Network;
    type Payload = DownloadPayload;
    type Service = Podcasts;

    fn dedup_key(payload: &DownloadPayload) -> Option<String> {
        Some(format!("podcast_download:{}", payload.episode_id))
    }

    fn retry(config: &Config) -> Option<RetryPolicy> {
        Some(config.remote.download_retry)
    }

    async fn run(
        podcasts: &Podcasts,
        context: &JobContext,
        payload: DownloadPayload,
    ) -> Result<Value, JobError> {
        let id = payload.episode_id;
        match podcasts.fetch_episode(context, &id).await {
            Ok(value) => Ok(value),
            Err(error) => {
                podcasts.record_failure(&id, &error.message).await;
                Err(error)
            }
        }
    }

    async fn abandoned(podcasts: &Podcasts, payload: DownloadPayload, reason: &str) {
        podcasts.record_failure(&payload.episode_id, reason).await;
    }
}

/// Runs `work` while renewing the job's lease (a large file's probe or upload to S3 may take
/// longer than a lease), reporting `bytes` as its progress.
async fn heartbeat<T>(
    context: &JobContext,
    bytes: u64,
    work: impl std::future::Future<Output = T>,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep(Duration::from_secs(10)) => {
                context.progress(&json!({ "bytes": bytes })).await;
            }
        }
    }
}

impl Podcasts {
    async fn record_failure(&self, id: &EpisodeId, reason: &str) {
        let recorded = self
            .db
            .sql(
                "UPDATE podcast_episodes SET status = 'failed', error = $2, updated_at = {now}
                 WHERE id = $1 AND status <> 'downloaded'",
            )
            .bind(id)
            .bind(reason.chars().take(500).collect::<String>())
            .execute(self.db.pool())
            .await;
        if let Err(error) = recorded {
            tracing::warn!(episode = %id, error = %crate::error_chain(&error), "cannot record a failed episode download");
        }
    }

    async fn fetch_episode(&self, context: &JobContext, id: &EpisodeId) -> Result<Value, JobError> {
        let row: Option<(String, String, String, Option<String>)> = self
            .db
            .sql("SELECT channel_id, enclosure_url, status, storage_uri FROM podcast_episodes WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let Some((channel, url, status, stored)) = row else {
            return Ok(json!({ "skipped": "the episode is gone" }));
        };
        if status == "downloaded" && stored.is_some() {
            return Ok(json!({ "skipped": "already downloaded" }));
        }
        let channel = PodcastId::from_db(channel);
        self.db
            .sql(
                "UPDATE podcast_episodes SET status = 'downloading', error = NULL, job_id = $2,
                 downloaded_bytes = 0, updated_at = {now} WHERE id = $1",
            )
            .bind(id)
            .bind(context.job_id())
            .execute(self.db.pool())
            .await?;
        let staged = self.storage.temp_file(".part")?;
        let (size, sha256) =
            tokio::time::timeout(DOWNLOAD_TIMEOUT, self.receive(context, id, &url, &staged))
                .await
                .map_err(|_| JobError::retry("the download took longer than two hours"))??;
        // It must be audio the server can read.
        let path = staged.to_path_buf();
        let probe =
            tokio::task::spawn_blocking(move || crate::probe::probe_file(&path, "the episode"));
        let facts = heartbeat(context, size, probe)
            .await
            .map_err(|error| JobError::retry(format!("the probe stopped: {error}")))?
            .map_err(|reason| {
                JobError::permanent(format!("not audio the server can play: {reason}"))
            })?;
        let key = layout::podcast_episode(&channel, id, facts.format);
        heartbeat(context, size, self.storage.blobs().put_file(&key, &staged)).await?;
        let updated = self
            .db
            .sql(
                "UPDATE podcast_episodes SET status = 'downloaded', storage_uri = $2, size_bytes = $3,
                 content_sha256 = $4, mime_type = $5, bitrate_kbps = $6, duration_ms = $7,
                 downloaded_bytes = $3, error = NULL, downloaded_at = {now}, updated_at = {now}
                 WHERE id = $1",
            )
            .bind(id)
            .bind(key.as_str())
            .bind(size as i64)
            .bind(sha256.as_str())
            .bind(facts.mime_type)
            .bind(facts.bitrate_kbps)
            .bind(facts.duration_ms)
            .execute(self.db.pool())
            .await?;
        if updated == 0 {
            // Unsubscribed while it downloaded: the blob is no one's.
            self.storage.delete_unreferenced([key]).await;
            return Ok(json!({ "skipped": "the episode is gone" }));
        }
        Ok(json!({ "bytes": size, "format": facts.format }))
    }

    /// Streams the enclosure into `staged`: its size and sha256.
    async fn receive(
        &self,
        context: &JobContext,
        id: &EpisodeId,
        url: &str,
        staged: &std::path::Path,
    ) -> Result<(u64, String), JobError> {
        let url = crate::outside::guard::check_url(url, self.allow_private)
            .map_err(|reason| JobError::permanent(format!("the episode's URL {reason}")))?;
        let response = crate::outside::send(Service::Podcasts, self.download_client.get(url))
            .await
            .map_err(|error| {
                let reason = crate::outside::describe(error);
                if reason.contains("non-public") || reason.contains("redirect was refused") {
                    JobError::permanent(format!("refused: {reason}"))
                } else {
                    JobError::retry(format!("cannot fetch the episode: {reason}"))
                }
            })?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Err(JobError::permanent(format!(
                "the episode's server answered {status}"
            )));
        }
        if !status.is_success() {
            return Err(JobError::retry(format!(
                "the episode's server answered {status}"
            )));
        }
        let max = self.episode_max_bytes;
        if response.content_length().is_some_and(|length| length > max) {
            return Err(JobError::permanent(format!(
                "the episode is larger than PODCAST_EPISODE_MAX_BYTES ({max} bytes)"
            )));
        }
        let mut file = tokio::fs::File::create(staged)
            .await
            .map_err(|error| JobError::retry(format!("cannot stage the episode: {error}")))?;
        let mut hasher = sha2::Sha256::new();
        let mut size = 0u64;
        let mut last_tick = Instant::now();
        let mut response = response;
        while let Some(chunk) = response.chunk().await.map_err(|error| {
            JobError::retry(format!(
                "the download broke off: {}",
                crate::outside::describe(error)
            ))
        })? {
            size += chunk.len() as u64;
            if size > max {
                return Err(JobError::permanent(format!(
                    "the episode is larger than PODCAST_EPISODE_MAX_BYTES ({max} bytes)"
                )));
            }
            hasher.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(|error| JobError::retry(format!("cannot stage the episode: {error}")))?;
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                context.progress(&json!({ "bytes": size })).await;
                self.db
                    .sql("UPDATE podcast_episodes SET downloaded_bytes = $2 WHERE id = $1")
                    .bind(id)
                    .bind(size as i64)
                    .execute(self.db.pool())
                    .await?;
            }
        }
        file.flush()
            .await
            .map_err(|error| JobError::retry(format!("cannot stage the episode: {error}")))?;
        if size == 0 {
            return Err(JobError::permanent("the episode's server sent nothing"));
        }
        Ok((size, hex::encode(hasher.finalize())))
    }
}
