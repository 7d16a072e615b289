//! Refreshing feeds: fetch (conditionally, with the validators the feed last gave), read,
//! store what changed in one transaction; then the channel's image and its newest N.
//!
//! An episode is recognised by its guid within its channel. A refresh inserts new ones,
//! updates those whose feed entry changed, and keeps those the feed dropped (their downloads
//! may still be wanted). A failed fetch or an unreadable feed is recorded on the channel
//! (`refresh_error`) and changes nothing else.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::feed::{self, Feed, Item};
use super::{EpisodeStatus, Podcasts, FEED_TIMEOUT, MAX_FEED_BYTES};
use crate::auth::Caller;
use crate::jobs::{JobContext, JobError, JobKind, Pool};
use crate::metrics::Service;
use crate::storage::layout;
use crate::{EpisodeId, Error, PodcastId, Result};

/// How often workers look for channels due a refresh.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What a fetch of a feed found.
pub(super) enum Fetched {
    /// The feed did not change since the validators given.
    NotModified,
    /// The feed, read, and its new validators.
    Changed {
        feed: Feed,
        etag: Option<String>,
        last_modified: Option<String>,
    },
}

/// Payload of `refresh_podcasts`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefreshPayload {
    /// One channel; `None`: every channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<PodcastId>,
    /// Refresh every channel, not only those due (`refresh_interval` since the last).
    #[serde(default)]
    pub force: bool,
    /// Who asked for a forced refresh: each user's is their own job, which they may follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<crate::UserId>,
}

/// The `refresh_podcasts` job: refreshes one channel, or all (those due, or every one when
/// a user asked).
pub struct RefreshPodcasts;

impl JobKind for RefreshPodcasts {
    const NAME: &'static str = "refresh_podcasts";
    const POOL: Pool = Pool::Network;
    type Payload = RefreshPayload;
    type Service = Podcasts;

    fn dedup_key(payload: &RefreshPayload) -> Option<String> {
        Some(match &payload.channel_id {
            Some(id) => format!("podcast_refresh:{id}"),
            None if payload.force => match &payload.requested_by {
                Some(user) => format!("podcast_refresh:all:{user}"),
                None => "podcast_refresh:all".into(),
            },
            None => "podcast_refresh:due".into(),
        })
    }

    async fn run(
        podcasts: &Podcasts,
        context: &JobContext,
        payload: RefreshPayload,
    ) -> Result<Value, JobError> {
        let ids = match payload.channel_id {
            Some(id) => vec![id],
            None => podcasts.channels_to_refresh(payload.force).await?,
        };
        let mut failed = 0;
        for (done, id) in ids.iter().enumerate() {
            match podcasts.refresh_channel(id).await {
                Ok(None) => {}
                Ok(Some(_)) => failed += 1,
                Err(error) => {
                    tracing::warn!(podcast = %id, error = %crate::error_chain(&error), "cannot refresh a podcast");
                    failed += 1;
                }
            }
            context
                .progress(&json!({ "done": done + 1, "total": ids.len() }))
                .await;
        }
        Ok(json!({ "refreshed": ids.len() - failed, "failed": failed }))
    }
}

/// Queues a refresh of the channels due one, every [`SWEEP_EVERY`], until `shutdown`.
pub(super) async fn sweep_forever(podcasts: Podcasts, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        match podcasts.channels_to_refresh(false).await {
            Ok(due) if !due.is_empty() => {
                let queued = podcasts
                    .jobs
                    .enqueue::<RefreshPodcasts>(
                        &RefreshPayload {
                            channel_id: None,
                            force: false,
                            requested_by: None,
                        },
                        None,
                    )
                    .await;
                if let Err(error) = queued {
                    tracing::warn!(error = %crate::error_chain(&error), "cannot queue the podcast refresh");
                }
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(error = %crate::error_chain(&error), "cannot look for podcasts to refresh")
            }
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(SWEEP_EVERY) => {}
        }
    }
}

impl Podcasts {
    /// Every channel (`force`), or those not refreshed for `refresh_interval`.
    async fn channels_to_refresh(&self, force: bool) -> Result<Vec<PodcastId>> {
        let due = self.refresh_interval.as_micros() as i64;
        let ids: Vec<String> = if force {
            self.db
                .sql("SELECT id FROM podcast_channels ORDER BY id")
                .fetch_scalars(self.db.pool())
                .await?
        } else {
            self.db
                .sql(&format!(
                    "SELECT id FROM podcast_channels
                     WHERE refreshed_at IS NULL OR refreshed_at < {{now}} - {due} ORDER BY id"
                ))
                .fetch_scalars(self.db.pool())
                .await?
        };
        Ok(ids.into_iter().map(PodcastId::from_db).collect())
    }

    /// Refreshes every channel now, in the background, for `caller`.
    pub(super) async fn queue_refresh_all(&self, caller: &Caller) -> Result<crate::JobId> {
        self.jobs
            .enqueue::<RefreshPodcasts>(
                &RefreshPayload {
                    channel_id: None,
                    force: true,
                    requested_by: Some(caller.user.id.clone()),
                },
                Some(&caller.user.id),
            )
            .await
    }

    /// Fetches and reads a feed: the answer bounded by [`MAX_FEED_BYTES`] and
    /// [`FEED_TIMEOUT`], through the guarded client. The error says why, for the subscriber.
    pub(super) async fn fetch_feed(
        &self,
        url: &str,
        etag: Option<&str>,
        last_modified: Option<&str>,
    ) -> std::result::Result<Fetched, String> {
        let url = crate::outside::guard::check_url(url, self.allow_private)?;
        let mut request = self.client.get(url).header(
            reqwest::header::ACCEPT,
            "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5",
        );
        if let Some(etag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(last_modified) = last_modified {
            request = request.header(reqwest::header::IF_MODIFIED_SINCE, last_modified);
        }
        let response = crate::outside::send(Service::Podcasts, request)
            .await
            .map_err(|error| {
                format!("cannot fetch the feed: {}", crate::outside::describe(error))
            })?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_MODIFIED
            && (etag.is_some() || last_modified.is_some())
        {
            return Ok(Fetched::NotModified);
        }
        if !status.is_success() {
            return Err(format!("the feed's server answered {status}"));
        }
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .filter(|value| value.len() <= 200)
                .map(str::to_string)
        };
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let body = tokio::time::timeout(
            FEED_TIMEOUT,
            crate::outside::read_capped(response, MAX_FEED_BYTES),
        )
        .await
        .map_err(|_| "the feed took too long to arrive".to_string())??;
        // Reading a large feed is CPU work: off the request threads.
        let feed = tokio::task::spawn_blocking(move || {
            let text = String::from_utf8_lossy(&body);
            feed::parse(&text)
        })
        .await
        .map_err(|error| format!("the feed could not be read: {error}"))?
        .map_err(|reason| format!("the document {reason}"))?;
        Ok(Fetched::Changed {
            feed,
            etag,
            last_modified,
        })
    }

    /// Stores a new channel and its episodes; `false` when the feed was subscribed
    /// meanwhile (nothing is stored).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn store_new_channel(
        &self,
        id: &PodcastId,
        url: &str,
        feed: &Feed,
        etag: Option<String>,
        last_modified: Option<String>,
        keep_newest: Option<i64>,
        caller: &Caller,
    ) -> Result<bool> {
        let mut tx = self.db.begin().await?;
        let inserted = self
            .db
            .sql(
                "INSERT INTO podcast_channels (id, feed_url, title, description, author, site_url,
                 image_url, keep_newest, etag, last_modified, refreshed_at, created_by, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, {now}, $11, {now}, {now})
                 ON CONFLICT (feed_url) DO NOTHING",
            )
            .bind(id)
            .bind(url)
            .bind(feed.title.as_str())
            .bind(feed.description.clone())
            .bind(feed.author.clone())
            .bind(checked(feed.site_url.as_deref()))
            .bind(checked(feed.image_url.as_deref()))
            .bind(keep_newest)
            .bind(etag)
            .bind(last_modified)
            .bind(&caller.user.id)
            .execute(&mut *tx)
            .await?;
        if inserted == 0 {
            return Ok(false);
        }
        store_episodes(self, &mut tx, id, &feed.items).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Refreshes one channel. `Some(reason)` when its feed could not be fetched or read
    /// (kept on the channel); an error only when the database failed.
    pub(super) async fn refresh_channel(&self, id: &PodcastId) -> Result<Option<String>> {
        let row: Option<(String, Option<String>, Option<String>)> = self
            .db
            .sql("SELECT feed_url, etag, last_modified FROM podcast_channels WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let (url, etag, last_modified) = row.ok_or_else(|| Error::not_found("podcast", id))?;
        match self
            .fetch_feed(&url, etag.as_deref(), last_modified.as_deref())
            .await
        {
            Err(reason) => {
                self.db
                    .sql("UPDATE podcast_channels SET refresh_error = $2, refreshed_at = {now}, updated_at = {now} WHERE id = $1")
                    .bind(id)
                    .bind(reason.as_str())
                    .execute(self.db.pool())
                    .await?;
                Ok(Some(reason))
            }
            Ok(Fetched::NotModified) => {
                self.db
                    .sql("UPDATE podcast_channels SET refresh_error = NULL, refreshed_at = {now} WHERE id = $1")
                    .bind(id)
                    .execute(self.db.pool())
                    .await?;
                self.after_refresh(id).await;
                Ok(None)
            }
            Ok(Fetched::Changed {
                feed,
                etag,
                last_modified,
            }) => {
                let mut tx = self.db.begin().await?;
                self.db
                    .sql(
                        "UPDATE podcast_channels SET title = $2, description = $3, author = $4,
                         site_url = $5, image_url = $6, etag = $7, last_modified = $8,
                         refresh_error = NULL, refreshed_at = {now}, updated_at = {now} WHERE id = $1",
                    )
                    .bind(id)
                    .bind(feed.title.as_str())
                    .bind(feed.description.clone())
                    .bind(feed.author.clone())
                    .bind(checked(feed.site_url.as_deref()))
                    .bind(checked(feed.image_url.as_deref()))
                    .bind(etag)
                    .bind(last_modified)
                    .execute(&mut *tx)
                    .await?;
                store_episodes(self, &mut tx, id, &feed.items).await?;
                tx.commit().await?;
                self.after_refresh(id).await;
                Ok(None)
            }
        }
    }

    /// What follows a refresh, best effort: the channel's image, and its newest N.
    pub(super) async fn after_refresh(&self, id: &PodcastId) {
        if let Err(error) = self.store_image(id).await {
            tracing::info!(podcast = %id, error = %crate::error_chain(&error), "no image for a podcast");
        }
        if let Err(error) = self.keep_newest(id).await {
            tracing::warn!(podcast = %id, error = %crate::error_chain(&error), "cannot keep a podcast's newest episodes");
        }
    }

    /// Stores a copy of the channel's image when the feed names one not stored yet. The
    /// image is fetched through the guarded client and checked as any cover is.
    async fn store_image(&self, id: &PodcastId) -> Result<()> {
        let row: Option<(Option<String>, Option<String>, Option<String>)> = self
            .db
            .sql("SELECT image_url, image_uri, image_source FROM podcast_channels WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let Some((Some(url), stored, source)) = row else {
            return Ok(());
        };
        if stored.is_some() && source.as_deref() == Some(url.as_str()) {
            return Ok(());
        }
        let image = self
            .fetch_image(&url)
            .await
            .map_err(|reason| Error::Unavailable(format!("the podcast's image: {reason}")))?;
        let key = layout::podcast_image(id, image.kind.extension());
        self.storage.blobs().put_bytes(&key, image.bytes).await?;
        let updated = self
            .db
            .sql("UPDATE podcast_channels SET image_uri = $2, image_source = $3, updated_at = {now} WHERE id = $1")
            .bind(id)
            .bind(key.as_str())
            .bind(url.as_str())
            .execute(self.db.pool())
            .await?;
        if updated == 0 {
            // Unsubscribed meanwhile.
            self.storage.delete_unreferenced([key]).await;
        } else {
            self.storage.delete_unreferenced(stored).await;
        }
        Ok(())
    }

    async fn fetch_image(&self, url: &str) -> std::result::Result<crate::picture::Image, String> {
        let url = crate::outside::guard::check_url(url, self.allow_private)?;
        let response = crate::outside::send(Service::Podcasts, self.client.get(url))
            .await
            .map_err(crate::outside::describe)?;
        if !response.status().is_success() {
            return Err(format!("its server answered {}", response.status()));
        }
        let bytes = crate::outside::read_capped(response, crate::picture::MAX_IMAGE_BYTES).await?;
        crate::picture::Image::checked(bytes)
    }

    /// With `keep_newest` n: queues downloads of the newest n episodes not downloaded (nor
    /// failed for good: a failed one is tried again at each refresh) and deletes the
    /// downloads of older ones.
    pub(super) async fn keep_newest(&self, id: &PodcastId) -> Result<()> {
        let keep: Option<Option<i64>> = self
            .db
            .sql("SELECT keep_newest FROM podcast_channels WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        let Some(Some(keep)) = keep else {
            return Ok(());
        };
        let episodes: Vec<(String, String)> = self
            .db
            .sql(
                "SELECT id, status FROM podcast_episodes WHERE channel_id = $1
                 ORDER BY published_at DESC, id DESC",
            )
            .bind(id)
            .fetch_all(self.db.pool())
            .await?;
        for (position, (episode, status)) in episodes.into_iter().enumerate() {
            let episode = EpisodeId::from_db(episode);
            let status = EpisodeStatus::parse(&status).unwrap_or(EpisodeStatus::New);
            if (position as i64) < keep {
                if matches!(status, EpisodeStatus::New | EpisodeStatus::Failed) {
                    self.queue_download(&episode, None).await?;
                }
            } else if status == EpisodeStatus::Downloaded {
                self.delete_download(&episode).await?;
            }
        }
        Ok(())
    }
}

/// A URL from a feed kept only when it is one a user could give.
fn checked(url: Option<&str>) -> Option<String> {
    url.filter(|url| crate::outside::guard::check_url(url, true).is_ok())
        .map(str::to_string)
}

/// Inserts the items not stored yet and updates those whose entry changed, in `tx`.
async fn store_episodes(
    podcasts: &Podcasts,
    tx: &mut crate::db::Tx,
    channel: &PodcastId,
    items: &[Item],
) -> Result<()> {
    type Stored = (
        String,
        String,
        Option<String>,
        Option<i64>,
        Option<i64>,
        String,
    );
    let db = &podcasts.db;
    let stored: Vec<Stored> = db
        .sql(
            "SELECT guid, title, description, published_at, duration_ms, enclosure_url
             FROM podcast_episodes WHERE channel_id = $1",
        )
        .bind(channel)
        .fetch_all(&mut **tx)
        .await?;
    let stored: HashMap<String, Stored> =
        stored.into_iter().map(|row| (row.0.clone(), row)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut new = Vec::new();
    for item in items {
        // An enclosure a user could not subscribe to is not one the server fetches.
        if checked(Some(&item.enclosure_url)).is_none() || !seen.insert(item.guid.as_str()) {
            continue;
        }
        match stored.get(&item.guid) {
            None => new.push(item),
            Some((_, title, description, published_at, duration_ms, enclosure_url)) => {
                let unchanged = *title == item.title
                    && *description == item.description
                    && *published_at == item.published_at.map(crate::Timestamp::as_micros)
                    && *enclosure_url == item.enclosure_url
                    && (item.duration_ms.is_none() || *duration_ms == item.duration_ms);
                if unchanged {
                    continue;
                }
                db.sql(
                    "UPDATE podcast_episodes SET title = $3, description = $4, published_at = $5,
                     duration_ms = COALESCE($6, duration_ms), enclosure_url = $7, enclosure_type = $8,
                     enclosure_length = $9, episode_number = $10, season = $11, image_url = $12,
                     transcript_url = $13, transcript_type = $14, chapters_url = $15, updated_at = {now}
                     WHERE channel_id = $1 AND guid = $2",
                )
                .bind(channel)
                .bind(item.guid.as_str())
                .bind(item.title.as_str())
                .bind(item.description.clone())
                .bind(item.published_at.map(crate::Timestamp::as_micros))
                .bind(item.duration_ms)
                .bind(item.enclosure_url.as_str())
                .bind(item.enclosure_type.clone())
                .bind(item.enclosure_length)
                .bind(item.episode_number)
                .bind(item.season)
                .bind(checked(item.image_url.as_deref()))
                .bind(checked(item.transcript.as_ref().map(|t| t.0.as_str())))
                .bind(item.transcript.as_ref().and_then(|t| t.1.clone()))
                .bind(checked(item.chapters_url.as_deref()))
                .execute(&mut **tx)
                .await?;
            }
        }
    }
    // New episodes in batches: one statement per hundred, not one per episode.
    for batch in new.chunks(100) {
        let mut insert = db.sql(
            "INSERT INTO podcast_episodes (id, channel_id, guid, title, description, published_at,
             duration_ms, episode_number, season, enclosure_url, enclosure_type, enclosure_length,
             image_url, transcript_url, transcript_type, chapters_url, status, created_at, updated_at) VALUES ",
        );
        insert.push_values(batch.iter(), |row, item| {
            row.bind(&EpisodeId::new())
                .bind(channel)
                .bind(item.guid.as_str())
                .bind(item.title.as_str())
                .bind(item.description.clone())
                .bind(item.published_at.map(crate::Timestamp::as_micros))
                .bind(item.duration_ms)
                .bind(item.episode_number)
                .bind(item.season)
                .bind(item.enclosure_url.as_str())
                .bind(item.enclosure_type.clone())
                .bind(item.enclosure_length)
                .bind(checked(item.image_url.as_deref()))
                .bind(checked(item.transcript.as_ref().map(|t| t.0.as_str())))
                .bind(item.transcript.as_ref().and_then(|t| t.1.clone()))
                .bind(checked(item.chapters_url.as_deref()))
                .bind("new")
                .raw("{now}")
                .raw("{now}");
        });
        insert.execute(&mut **tx).await?;
    }
    Ok(())
}
