//! Podcasts: feeds users subscribe to, refreshed on a schedule and on demand, whose episodes
//! are downloaded into storage and stream like tracks.
//!
//! Channels are the server's, as the library is: one copy of an episode however many listen.
//! Anyone signed in subscribes, refreshes and downloads; the user who subscribed (or an
//! admin) changes a channel's settings, deletes downloaded episodes and unsubscribes. Each
//! user's place in an episode is their own.
//!
//! Every URL here came from a user or a feed, so every fetch goes through
//! [`crate::outside::guard`] (http and https only, no private addresses unless
//! `ALLOW_PRIVATE_URLS`, each redirect checked again) and is bounded: a feed by
//! [`MAX_FEED_BYTES`] and [`FEED_TIMEOUT`], an episode by `PODCAST_EPISODE_MAX_BYTES`, an idle
//! connection and [`DOWNLOAD_TIMEOUT`], an image by the picture rules. Feeds are read by
//! [`feed`], which never expands an entity a document declares.
//!
//! - `feed`: reading RSS and Atom.
//! - `refresh`: fetching a feed and storing what changed (the `refresh_podcasts` job, the
//!   periodic `podcast_refresh_sweep`), the channel's image, keeping the newest N.
//! - `download`: the `download_podcast_episode` job.

mod download;
pub mod feed;
mod refresh;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use download::DownloadEpisode;
pub use refresh::RefreshPodcasts;

use crate::auth::Caller;
use crate::db::Db;
use crate::domain::{Page, Paged};
use crate::jobs::{Jobs, Registry};
use crate::media::{Cover, Delivery, Media, TrackAudio, Want};
use crate::storage::Storage;
use crate::{EpisodeId, Error, JobId, PodcastId, Result, Timestamp, UserId};

/// Largest feed document read.
pub const MAX_FEED_BYTES: usize = 32 * 1024 * 1024;
/// How long fetching a feed (or a channel's image) may take.
pub const FEED_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a download may go without receiving a byte.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one download attempt may take in all.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(2 * 3600);
/// Most episodes a channel keeps downloaded automatically (`keep_newest`).
pub const MAX_KEEP_NEWEST: i64 = 100;
/// Most channels on a server.
pub const MAX_CHANNELS: i64 = 1000;

/// Where an episode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeStatus {
    /// In the feed, not downloaded.
    New,
    /// Being downloaded (or waiting for its next attempt).
    Downloading,
    /// In storage: it streams.
    Downloaded,
    /// The last attempt failed (`error` says why).
    Failed,
    /// Its download was deleted; it may be downloaded again.
    Deleted,
}

impl EpisodeStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeStatus::New => "new",
            EpisodeStatus::Downloading => "downloading",
            EpisodeStatus::Downloaded => "downloaded",
            EpisodeStatus::Failed => "failed",
            EpisodeStatus::Deleted => "deleted",
        }
    }

    /// Parses a stored or requested name.
    pub fn parse(text: &str) -> Option<EpisodeStatus> {
        Some(match text {
            "new" => EpisodeStatus::New,
            "downloading" => EpisodeStatus::Downloading,
            "downloaded" => EpisodeStatus::Downloaded,
            "failed" => EpisodeStatus::Failed,
            "deleted" => EpisodeStatus::Deleted,
            _ => return None,
        })
    }
}

/// A subscribed feed.
#[derive(Debug, Clone)]
pub struct Channel {
    /// Its id.
    pub id: PodcastId,
    /// The feed's URL.
    pub feed_url: String,
    /// Its title.
    pub title: String,
    /// Its description, as text.
    pub description: Option<String>,
    /// Its author.
    pub author: Option<String>,
    /// Its web site.
    pub site_url: Option<String>,
    /// The feed's image URL.
    pub image_url: Option<String>,
    /// Whether a copy of its image is stored (served by [`Podcasts::cover`]).
    pub has_cover: bool,
    /// `None`: episodes download on request; `Some(n)`: the newest n download as they
    /// appear and older downloads are deleted.
    pub keep_newest: Option<i64>,
    /// When the feed was last read (or found unchanged).
    pub refreshed_at: Option<Timestamp>,
    /// Why the last refresh failed, if it did.
    pub refresh_error: Option<String>,
    /// Who subscribed (`None` once their account is gone).
    pub created_by: Option<UserId>,
    /// When.
    pub created_at: Timestamp,
    /// Its episodes.
    pub episode_count: i64,
    /// Its downloaded episodes.
    pub downloaded_count: i64,
}

/// An episode of a channel.
#[derive(Debug, Clone)]
pub struct Episode {
    /// Its id.
    pub id: EpisodeId,
    /// Its channel.
    pub channel_id: PodcastId,
    /// Its title.
    pub title: String,
    /// Its description, as text.
    pub description: Option<String>,
    /// When it was published.
    pub published_at: Option<Timestamp>,
    /// Its length: the downloaded file's, else the feed's.
    pub duration_ms: Option<i64>,
    /// Its number.
    pub episode_number: Option<i64>,
    /// Its season.
    pub season: Option<i64>,
    /// The audio's URL.
    pub enclosure_url: String,
    /// The audio's type, as the feed says (the stored file's once downloaded).
    pub mime_type: Option<String>,
    /// The audio's size: the stored file's, else the feed's.
    pub size_bytes: Option<i64>,
    /// Its own image.
    pub image_url: Option<String>,
    /// Its transcript's URL and type.
    pub transcript_url: Option<String>,
    /// The transcript's type.
    pub transcript_type: Option<String>,
    /// Its chapters' URL.
    pub chapters_url: Option<String>,
    /// Where it is.
    pub status: EpisodeStatus,
    /// Why the last download failed.
    pub error: Option<String>,
    /// Bytes received by the running download.
    pub downloaded_bytes: i64,
    /// The download's job.
    pub job_id: Option<JobId>,
    /// Bit rate of the stored file.
    pub bitrate_kbps: Option<i64>,
    /// When it was downloaded.
    pub downloaded_at: Option<Timestamp>,
    /// Where the caller stopped listening, in ms.
    pub position_ms: Option<i64>,
}

/// What a subscription asks for.
#[derive(Debug, Clone, Default)]
pub struct NewChannel {
    /// The feed's URL.
    pub url: String,
    /// Keep the newest n episodes downloaded.
    pub keep_newest: Option<i64>,
}

/// The podcasts service.
#[derive(Clone, Debug)]
pub struct Podcasts {
    db: Db,
    storage: Storage,
    jobs: Jobs,
    media: Media,
    /// The guarded client for feeds and images.
    client: reqwest::Client,
    /// The guarded client for episodes (no total timeout: [`DOWNLOAD_TIMEOUT`] bounds an
    /// attempt; idle connections time out).
    download_client: reqwest::Client,
    allow_private: bool,
    episode_max_bytes: u64,
    refresh_interval: Duration,
}

impl Podcasts {
    pub(crate) fn new(
        db: Db,
        storage: Storage,
        jobs: Jobs,
        media: Media,
        config: &crate::Config,
    ) -> Podcasts {
        let allow_private = config.allow_private_urls;
        Podcasts {
            db,
            storage,
            jobs,
            media,
            client: crate::outside::guard::guarded_builder(allow_private)
                .timeout(FEED_TIMEOUT)
                .build()
                .expect("a TLS backend is compiled in"),
            download_client: crate::outside::guard::guarded_builder(allow_private)
                .read_timeout(IDLE_TIMEOUT)
                .build()
                .expect("a TLS backend is compiled in"),
            allow_private,
            episode_max_bytes: config.podcasts.episode_max_bytes,
            refresh_interval: config.podcasts.refresh_interval,
        }
    }

    /// Registers the refresh and download jobs and the periodic refresh.
    pub(crate) fn register_jobs(&self, registry: &mut Registry, config: &crate::Config) {
        registry.kind::<RefreshPodcasts>(self.clone(), config);
        registry.kind::<DownloadEpisode>(self.clone(), config);
        let podcasts = self.clone();
        registry.periodic("podcast_refresh_sweep", move |shutdown| {
            refresh::sweep_forever(podcasts.clone(), shutdown)
        });
    }

    /// Subscribes to the feed at `new.url`: the feed is read now, so a URL that is not a
    /// feed (or is refused) is a 422 naming `url` and nothing is stored. A feed already
    /// subscribed is that channel (`false`: not created).
    pub async fn subscribe(&self, caller: &Caller, new: NewChannel) -> Result<(Channel, bool)> {
        let url = crate::outside::guard::check_url(&new.url, self.allow_private)
            .map_err(|reason| Error::invalid("url", reason))?;
        let keep_newest = check_keep_newest(new.keep_newest)?;
        if let Some(id) = self.channel_by_url(url.as_str()).await? {
            return Ok((self.channel(caller, &id).await?, false));
        }
        let count: i64 = self
            .db
            .sql("SELECT COUNT(*) FROM podcast_channels")
            .fetch_scalar(self.db.pool())
            .await?;
        if count >= MAX_CHANNELS {
            return Err(Error::Conflict(format!(
                "the server has {MAX_CHANNELS} podcasts, the most it keeps: unsubscribe from some first"
            )));
        }
        let fetched = self
            .fetch_feed(url.as_str(), None, None)
            .await
            .map_err(|reason| Error::invalid("url", reason))?;
        let refresh::Fetched::Changed {
            feed,
            etag,
            last_modified,
        } = fetched
        else {
            return Err(Error::invalid(
                "url",
                "the server answered 304 to a plain request",
            ));
        };
        let id = PodcastId::new();
        let created = self
            .store_new_channel(
                &id,
                url.as_str(),
                &feed,
                etag,
                last_modified,
                keep_newest,
                caller,
            )
            .await?;
        if !created {
            // Someone subscribed to the same feed meanwhile: theirs it is.
            let existing = self
                .channel_by_url(url.as_str())
                .await?
                .ok_or_else(|| Error::not_found("podcast", url.as_str()))?;
            return Ok((self.channel(caller, &existing).await?, false));
        }
        self.after_refresh(&id).await;
        Ok((self.channel(caller, &id).await?, true))
    }

    async fn channel_by_url(&self, url: &str) -> Result<Option<PodcastId>> {
        let id: Option<String> = self
            .db
            .sql("SELECT id FROM podcast_channels WHERE feed_url = $1")
            .bind(url)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(id.map(PodcastId::from_db))
    }

    /// Every channel, by title.
    pub async fn channels(&self, _caller: &Caller) -> Result<Vec<Channel>> {
        let rows: Vec<ChannelRow> = self
            .db
            .sql(&format!("{CHANNEL_SELECT} ORDER BY c.title, c.id"))
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(ChannelRow::into_channel).collect())
    }

    /// One channel.
    pub async fn channel(&self, _caller: &Caller, id: &PodcastId) -> Result<Channel> {
        let row: Option<ChannelRow> = self
            .db
            .sql(&format!("{CHANNEL_SELECT} WHERE c.id = $1"))
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        row.map(ChannelRow::into_channel)
            .ok_or_else(|| Error::not_found("podcast", id))
    }

    /// Changes a channel's `keep_newest` (its subscriber or an admin).
    pub async fn set_keep_newest(
        &self,
        caller: &Caller,
        id: &PodcastId,
        keep_newest: Option<i64>,
    ) -> Result<Channel> {
        let channel = self.channel(caller, id).await?;
        caller.may_manage_podcast(channel.created_by.as_ref())?;
        let keep_newest = check_keep_newest(keep_newest)?;
        self.db
            .sql("UPDATE podcast_channels SET keep_newest = $2, updated_at = {now} WHERE id = $1")
            .bind(id)
            .bind(keep_newest)
            .execute(self.db.pool())
            .await?;
        self.keep_newest(id).await?;
        self.channel(caller, id).await
    }

    /// Unsubscribes (its subscriber or an admin): the channel, its episodes and their
    /// downloads go.
    pub async fn unsubscribe(&self, caller: &Caller, id: &PodcastId) -> Result<()> {
        let channel = self.channel(caller, id).await?;
        caller.may_manage_podcast(channel.created_by.as_ref())?;
        let mut tx = self.db.begin().await?;
        let mut keys: Vec<String> = self
            .db
            .sql("SELECT storage_uri FROM podcast_episodes WHERE channel_id = $1 AND storage_uri IS NOT NULL")
            .bind(id)
            .fetch_scalars(&mut *tx)
            .await?;
        let image: Option<Option<String>> = self
            .db
            .sql("SELECT image_uri FROM podcast_channels WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(&mut *tx)
            .await?;
        keys.extend(image.flatten());
        self.db
            .sql("DELETE FROM podcast_channels WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.storage.delete_unreferenced(keys).await;
        Ok(())
    }

    /// A channel's episodes, newest first, optionally of one status.
    pub async fn episodes(
        &self,
        caller: &Caller,
        channel: &PodcastId,
        status: Option<EpisodeStatus>,
        page: Page,
    ) -> Result<Paged<Episode>> {
        self.channel(caller, channel).await?;
        let filter = if status.is_some() {
            "AND e.status = $3"
        } else {
            ""
        };
        let mut items = self
            .db
            .sql(&format!(
                "{EPISODE_SELECT} WHERE e.channel_id = $2 {filter}
                 ORDER BY e.published_at DESC, e.id DESC LIMIT {} OFFSET {}",
                page.limit(),
                page.offset()
            ))
            .bind(&caller.user.id)
            .bind(channel);
        if let Some(status) = status {
            items = items.bind(status.as_str());
        }
        let rows: Vec<EpisodeRow> = items.fetch_all(self.db.pool()).await?;
        let mut count = self
            .db
            .sql(&format!(
                "SELECT COUNT(*) FROM podcast_episodes e WHERE e.channel_id = $1 {}",
                if status.is_some() {
                    "AND e.status = $2"
                } else {
                    ""
                }
            ))
            .bind(channel);
        if let Some(status) = status {
            count = count.bind(status.as_str());
        }
        let total: i64 = count.fetch_scalar(self.db.pool()).await?;
        Ok(Paged {
            items: rows.into_iter().map(EpisodeRow::into_episode).collect(),
            total,
            page,
        })
    }

    /// Every channel's newest `per_channel` episodes, in one read (newest first within a
    /// channel), for lists of every channel with its episodes.
    pub async fn episodes_of_every_channel(
        &self,
        caller: &Caller,
        per_channel: i64,
    ) -> Result<std::collections::HashMap<PodcastId, Vec<Episode>>> {
        let ranked = EPISODE_SELECT.replacen(
            "FROM podcast_episodes e",
            ", ROW_NUMBER() OVER (PARTITION BY e.channel_id ORDER BY e.published_at DESC, e.id DESC) AS place
    FROM podcast_episodes e",
            1,
        );
        let rows: Vec<EpisodeRow> = self
            .db
            .sql(&format!(
                "SELECT * FROM ({ranked}) ranked WHERE place <= {}
                 ORDER BY channel_id, place",
                per_channel.max(1)
            ))
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        let mut by_channel: std::collections::HashMap<PodcastId, Vec<Episode>> =
            std::collections::HashMap::new();
        for row in rows {
            let episode = row.into_episode();
            by_channel
                .entry(episode.channel_id.clone())
                .or_default()
                .push(episode);
        }
        Ok(by_channel)
    }

    /// The newest episodes of every channel.
    pub async fn newest(&self, caller: &Caller, limit: i64) -> Result<Vec<Episode>> {
        let rows: Vec<EpisodeRow> = self
            .db
            .sql(&format!(
                "{EPISODE_SELECT} WHERE e.status <> 'deleted'
                 ORDER BY e.published_at DESC, e.id DESC LIMIT {}",
                limit.clamp(1, 500)
            ))
            .bind(&caller.user.id)
            .fetch_all(self.db.pool())
            .await?;
        Ok(rows.into_iter().map(EpisodeRow::into_episode).collect())
    }

    /// One episode.
    pub async fn episode(&self, caller: &Caller, id: &EpisodeId) -> Result<Episode> {
        let row: Option<EpisodeRow> = self
            .db
            .sql(&format!("{EPISODE_SELECT} WHERE e.id = $2"))
            .bind(&caller.user.id)
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        row.map(EpisodeRow::into_episode)
            .ok_or_else(|| Error::not_found("podcast episode", id))
    }

    /// Downloads an episode into storage (a job; the episode is `downloading` until it
    /// ends). One already downloaded is left as it is (`None`).
    pub async fn download(&self, caller: &Caller, id: &EpisodeId) -> Result<Option<JobId>> {
        let episode = self.episode(caller, id).await?;
        if episode.status == EpisodeStatus::Downloaded {
            return Ok(None);
        }
        self.queue_download(id, Some(&caller.user.id))
            .await
            .map(Some)
    }

    async fn queue_download(&self, id: &EpisodeId, asked_by: Option<&UserId>) -> Result<JobId> {
        let job = self
            .jobs
            .enqueue::<DownloadEpisode>(
                &download::DownloadPayload {
                    episode_id: id.clone(),
                },
                asked_by,
            )
            .await?;
        self.db
            .sql(
                "UPDATE podcast_episodes SET status = 'downloading', error = NULL, job_id = $2,
                 downloaded_bytes = 0, updated_at = {now}
                 WHERE id = $1 AND status <> 'downloaded'",
            )
            .bind(id)
            .bind(&job)
            .execute(self.db.pool())
            .await?;
        Ok(job)
    }

    /// Deletes an episode's download (the channel's subscriber or an admin): it stays in
    /// the list as `deleted` and may be downloaded again.
    pub async fn delete_episode(&self, caller: &Caller, id: &EpisodeId) -> Result<()> {
        let episode = self.episode(caller, id).await?;
        let channel = self.channel(caller, &episode.channel_id).await?;
        caller.may_manage_podcast(channel.created_by.as_ref())?;
        self.delete_download(id).await
    }

    /// Forgets an episode's stored file: the row first, the blob after the commit.
    async fn delete_download(&self, id: &EpisodeId) -> Result<()> {
        let mut tx = self.db.begin().await?;
        let key: Option<Option<String>> = self
            .db
            .sql("SELECT storage_uri FROM podcast_episodes WHERE id = $1")
            .bind(id)
            .fetch_scalar_optional(&mut *tx)
            .await?;
        self.db
            .sql(
                "UPDATE podcast_episodes SET status = 'deleted', storage_uri = NULL, size_bytes = NULL,
                 content_sha256 = NULL, downloaded_bytes = 0, job_id = NULL, error = NULL,
                 downloaded_at = NULL, updated_at = {now} WHERE id = $1",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.storage.delete_unreferenced(key.flatten()).await;
        Ok(())
    }

    /// Remembers where the caller stopped listening.
    pub async fn set_position(
        &self,
        caller: &Caller,
        id: &EpisodeId,
        position_ms: i64,
    ) -> Result<()> {
        if !(0..=7 * 24 * 3600 * 1000).contains(&position_ms) {
            return Err(Error::invalid(
                "position_ms",
                "must be between 0 and a week of milliseconds",
            ));
        }
        self.episode(caller, id).await?;
        self.db
            .sql(
                "INSERT INTO podcast_positions (user_id, episode_id, position_ms, updated_at)
                 VALUES ($1, $2, $3, {now})
                 ON CONFLICT (user_id, episode_id) DO UPDATE SET position_ms = excluded.position_ms,
                 updated_at = excluded.updated_at",
            )
            .bind(&caller.user.id)
            .bind(id)
            .bind(position_ms)
            .execute(self.db.pool())
            .await?;
        Ok(())
    }

    /// Refreshes one channel now and answers it (a failure to read the feed is kept on the
    /// channel as `refresh_error`, not an error of the request).
    pub async fn refresh(&self, caller: &Caller, id: &PodcastId) -> Result<Channel> {
        self.channel(caller, id).await?;
        self.refresh_channel(id).await?;
        self.channel(caller, id).await
    }

    /// Refreshes every channel in the background.
    pub async fn refresh_all(&self, caller: &Caller) -> Result<JobId> {
        self.queue_refresh_all(caller).await
    }

    /// A downloaded episode's audio (a conflict before it is downloaded), for anyone signed
    /// in.
    pub async fn episode_audio(&self, _caller: &Caller, id: &EpisodeId) -> Result<TrackAudio> {
        #[derive(sqlx::FromRow)]
        struct AudioRow {
            storage_uri: Option<String>,
            size_bytes: Option<i64>,
            mime_type: Option<String>,
            content_sha256: Option<String>,
            bitrate_kbps: Option<i64>,
            downloaded_at: Option<i64>,
        }
        let row: Option<AudioRow> = self
            .db
            .sql(
                "SELECT storage_uri, size_bytes, mime_type, content_sha256, bitrate_kbps, downloaded_at
                 FROM podcast_episodes WHERE id = $1",
            )
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let row = row.ok_or_else(|| Error::not_found("podcast episode", id))?;
        match (row.storage_uri, row.size_bytes, row.content_sha256) {
            (Some(key), Some(size), Some(sha)) => Ok(TrackAudio {
                key,
                size: size.max(0) as u64,
                mime_type: row
                    .mime_type
                    .unwrap_or_else(|| "application/octet-stream".into()),
                bitrate_kbps: row.bitrate_kbps,
                etag: format!("\"{sha}\""),
                last_modified: Timestamp::from_micros(row.downloaded_at.unwrap_or_default()),
            }),
            _ => Err(Error::Conflict(
                "the episode is not downloaded: download it first".into(),
            )),
        }
    }

    /// What to send for a stream of an episode: the stored file (byte ranges work), or a
    /// live Opus encode of it when an encoding other than the original is asked for (no
    /// renditions are cached for episodes).
    pub async fn open(&self, caller: &Caller, id: &EpisodeId, want: &Want) -> Result<Delivery> {
        let audio = self.episode_audio(caller, id).await?;
        let quality = want.encoding.opus_for(audio.bitrate_kbps);
        match quality {
            None => Ok(Delivery::Stored {
                audio,
                rendition: None,
            }),
            Some(quality) => {
                let body = self
                    .media
                    .live_transcode_audio(caller, &audio, quality, want.offset_seconds)
                    .await?;
                Ok(Delivery::Live { quality, body })
            }
        }
    }

    /// A channel's stored image.
    pub async fn cover(&self, id: &PodcastId) -> Result<Cover> {
        let row: Option<(Option<String>, i64)> = self
            .db
            .sql("SELECT image_uri, updated_at FROM podcast_channels WHERE id = $1")
            .bind(id)
            .fetch_optional(self.db.pool())
            .await?;
        let (key, updated_at) = row.ok_or_else(|| Error::not_found("podcast", id))?;
        let key = key.ok_or_else(|| Error::not_found("podcast image", id))?;
        let bytes = self.storage.blobs().get_bytes(&key).await?;
        let kind = crate::picture::ImageKind::sniff(&bytes)
            .ok_or_else(|| Error::internal("a stored podcast image is not an image"))?;
        Ok(Cover {
            mime_type: kind.mime_type(),
            etag: format!("\"{}\"", key.rsplit('/').next().unwrap_or(&key)),
            last_modified: Timestamp::from_micros(updated_at),
            bytes,
        })
    }
}

fn check_keep_newest(keep_newest: Option<i64>) -> Result<Option<i64>> {
    match keep_newest {
        Some(n) if !(1..=MAX_KEEP_NEWEST).contains(&n) => Err(Error::invalid(
            "keep_newest",
            format!("must be between 1 and {MAX_KEEP_NEWEST}"),
        )),
        other => Ok(other),
    }
}

const CHANNEL_SELECT: &str = "SELECT c.id, c.feed_url, c.title, c.description, c.author, c.site_url,
    c.image_url, c.image_uri, c.keep_newest, c.refreshed_at, c.refresh_error, c.created_by, c.created_at,
    (SELECT COUNT(*) FROM podcast_episodes e WHERE e.channel_id = c.id) AS episode_count,
    (SELECT COUNT(*) FROM podcast_episodes e WHERE e.channel_id = c.id AND e.status = 'downloaded') AS downloaded_count
    FROM podcast_channels c";

#[derive(sqlx::FromRow)]
struct ChannelRow {
    id: String,
    feed_url: String,
    title: String,
    description: Option<String>,
    author: Option<String>,
    site_url: Option<String>,
    image_url: Option<String>,
    image_uri: Option<String>,
    keep_newest: Option<i64>,
    refreshed_at: Option<i64>,
    refresh_error: Option<String>,
    created_by: Option<String>,
    created_at: i64,
    episode_count: i64,
    downloaded_count: i64,
}

impl ChannelRow {
    fn into_channel(self) -> Channel {
        Channel {
            id: PodcastId::from_db(self.id),
            feed_url: self.feed_url,
            title: self.title,
            description: self.description,
            author: self.author,
            site_url: self.site_url,
            image_url: self.image_url,
            has_cover: self.image_uri.is_some(),
            keep_newest: self.keep_newest,
            refreshed_at: self.refreshed_at.map(Timestamp::from_micros),
            refresh_error: self.refresh_error,
            created_by: self.created_by.map(UserId::from_db),
            created_at: Timestamp::from_micros(self.created_at),
            episode_count: self.episode_count,
            downloaded_count: self.downloaded_count,
        }
    }
}

/// Episodes with the caller's position: `$1` is the caller.
const EPISODE_SELECT: &str = "SELECT e.id, e.channel_id, e.title, e.description, e.published_at,
    e.duration_ms, e.episode_number, e.season, e.enclosure_url, e.enclosure_type, e.enclosure_length,
    e.image_url, e.transcript_url, e.transcript_type, e.chapters_url, e.status, e.error, e.job_id,
    e.downloaded_bytes, e.size_bytes, e.mime_type, e.bitrate_kbps, e.downloaded_at, p.position_ms
    FROM podcast_episodes e
    LEFT JOIN podcast_positions p ON p.episode_id = e.id AND p.user_id = $1";

#[derive(sqlx::FromRow)]
struct EpisodeRow {
    id: String,
    channel_id: String,
    title: String,
    description: Option<String>,
    published_at: Option<i64>,
    duration_ms: Option<i64>,
    episode_number: Option<i64>,
    season: Option<i64>,
    enclosure_url: String,
    enclosure_type: Option<String>,
    enclosure_length: Option<i64>,
    image_url: Option<String>,
    transcript_url: Option<String>,
    transcript_type: Option<String>,
    chapters_url: Option<String>,
    status: String,
    error: Option<String>,
    job_id: Option<String>,
    downloaded_bytes: i64,
    size_bytes: Option<i64>,
    mime_type: Option<String>,
    bitrate_kbps: Option<i64>,
    downloaded_at: Option<i64>,
    position_ms: Option<i64>,
}

impl EpisodeRow {
    fn into_episode(self) -> Episode {
        Episode {
            id: EpisodeId::from_db(self.id),
            channel_id: PodcastId::from_db(self.channel_id),
            title: self.title,
            description: self.description,
            published_at: self.published_at.map(Timestamp::from_micros),
            duration_ms: self.duration_ms,
            episode_number: self.episode_number,
            season: self.season,
            enclosure_url: self.enclosure_url,
            mime_type: self.mime_type.or(self.enclosure_type),
            size_bytes: self.size_bytes.or(self.enclosure_length),
            image_url: self.image_url,
            transcript_url: self.transcript_url,
            transcript_type: self.transcript_type,
            chapters_url: self.chapters_url,
            status: EpisodeStatus::parse(&self.status).unwrap_or(EpisodeStatus::New),
            error: self.error,
            downloaded_bytes: self.downloaded_bytes,
            job_id: self.job_id.map(JobId::from_db),
            bitrate_kbps: self.bitrate_kbps,
            downloaded_at: self.downloaded_at.map(Timestamp::from_micros),
            position_ms: self.position_ms,
        }
    }
}
