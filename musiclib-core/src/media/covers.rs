//! Album covers: stored once as `covers/{album_id}.{ext}` (never overwritten), served with
//! validators for HTTP caching, and scaled to cached thumbnails on request.
//!
//! A cover is checked before it is stored (its kind from its bytes, its size from its header:
//! `picture::Image::checked`), and again before it is decoded. A thumbnail is made in one of
//! a few sizes ([`THUMBNAIL_BUCKETS`]: a requested size is snapped up to the next), once per
//! album and size however many ask at once, in a CPU slot, by a decoder with memory limits,
//! and kept in a cache bounded by `THUMBNAIL_CACHE_MAX_BYTES` (table `thumbnails`, least
//! recently served first out).

use std::time::Duration;

use bytes::Bytes;

use super::Media;
use crate::picture::{self, Image, ImageKind};
use crate::storage::layout;
use crate::{AlbumId, Error, Result, Timestamp, TrackId};

/// Smallest and largest thumbnail edge a request may ask for, in pixels.
pub const THUMBNAIL_SIZES: std::ops::RangeInclusive<u32> = 16..=1200;

/// The thumbnail sizes made: a requested size is served by the smallest at least as large
/// (by the largest above it), so an album has at most this many thumbnails whatever sizes
/// clients ask for.
pub const THUMBNAIL_BUCKETS: [u32; 5] = [64, 128, 256, 512, 1024];

/// Most memory the decoder may take for one cover (a 25-megapixel RGBA image is 100 MB).
const MAX_DECODE_BYTES: u64 = 128 * 1024 * 1024;

/// How stale a thumbnail's `last_access_at` may get before a serve writes it again: the LRU
/// needs no finer clock, and a grid of covers must not cost a write per image.
const ACCESS_STAMP_EVERY: Duration = Duration::from_secs(3600);

/// The size a thumbnail of `size` is made at ([`THUMBNAIL_BUCKETS`]).
pub fn thumbnail_bucket(size: u32) -> u32 {
    THUMBNAIL_BUCKETS
        .iter()
        .copied()
        .find(|bucket| *bucket >= size)
        .unwrap_or(THUMBNAIL_BUCKETS[THUMBNAIL_BUCKETS.len() - 1])
}

/// A cover ready to serve.
#[derive(Debug, Clone)]
pub struct Cover {
    /// The image.
    pub bytes: Bytes,
    /// Its MIME type.
    pub mime_type: &'static str,
    /// A strong validator: changes whenever the served bytes would.
    pub etag: String,
    /// When the cover was stored.
    pub last_modified: Timestamp,
}

#[derive(sqlx::FromRow)]
struct CoverRow {
    id: String,
    cover_uri: Option<String>,
    cover_updated_at: Option<i64>,
}

impl Media {
    /// The cover of an album; `size` asks for a thumbnail at most that many pixels wide/high.
    pub async fn album_cover(&self, id: &AlbumId, size: Option<u32>) -> Result<Cover> {
        let row: Option<CoverRow> = self
            .db
            .sql("SELECT id, cover_uri, cover_updated_at FROM albums WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(self.db.pool())
            .await?;
        let row = row.ok_or_else(|| Error::not_found("album", id))?;
        self.serve_cover(row, size).await
    }

    /// The cover of a track: its album's.
    pub async fn track_cover(&self, id: &TrackId, size: Option<u32>) -> Result<Cover> {
        let row: Option<(Option<String>, Option<String>, Option<i64>)> = self
            .db
            .sql(
                "SELECT al.id, al.cover_uri, al.cover_updated_at
             FROM tracks t LEFT JOIN albums al ON al.id = t.album_id WHERE t.id = $1",
            )
            .bind(id.as_str())
            .fetch_optional(self.db.pool())
            .await?;
        let (album_id, cover_uri, cover_updated_at) =
            row.ok_or_else(|| Error::not_found("track", id))?;
        match album_id {
            Some(album_id) if cover_uri.is_some() => {
                let row = CoverRow {
                    id: album_id,
                    cover_uri,
                    cover_updated_at,
                };
                self.serve_cover(row, size).await
            }
            _ => Err(Error::not_found("cover", id)),
        }
    }

    async fn serve_cover(&self, row: CoverRow, size: Option<u32>) -> Result<Cover> {
        let key = row
            .cover_uri
            .ok_or_else(|| Error::not_found("cover", &row.id))?;
        let kind = key
            .rsplit_once('.')
            .and_then(|(_, extension)| ImageKind::from_extension(extension))
            .ok_or_else(|| Error::internal(format!("cover key {key:?} has no image extension")))?;
        let stored_at = row.cover_updated_at.unwrap_or(0);
        let last_modified = Timestamp::from_micros(stored_at);
        let original = Cover {
            bytes: Bytes::new(),
            mime_type: kind.mime_type(),
            etag: format!("\"{}-{stored_at:x}\"", row.id),
            last_modified,
        };
        let Some(size) = size else {
            return Ok(Cover {
                bytes: self.storage.blobs().get_bytes(&key).await?,
                ..original
            });
        };
        // Asked of the row before any byte is read.
        if !THUMBNAIL_SIZES.contains(&size) {
            return Err(Error::invalid(
                "size",
                format!(
                    "a thumbnail size is {} to {} pixels",
                    THUMBNAIL_SIZES.start(),
                    THUMBNAIL_SIZES.end()
                ),
            ));
        }
        let bucket = thumbnail_bucket(size);
        let album = AlbumId::from_db(row.id.clone());
        match self.thumbnail(&album, &key, kind, bucket).await? {
            Some((bytes, thumb_kind)) => Ok(Cover {
                bytes,
                mime_type: thumb_kind.mime_type(),
                etag: format!("\"{}-{stored_at:x}-{bucket}\"", row.id),
                last_modified,
            }),
            // A cover the decoder cannot or may not read (GIF, WebP, a damaged or an
            // oversized file) is served as it is.
            None => Ok(Cover {
                bytes: self.storage.blobs().get_bytes(&key).await?,
                ..original
            }),
        }
    }

    /// The thumbnail of `album`'s cover (at `source`) at `bucket` pixels, from the cache or
    /// made now (once, however many ask at once); `None` when the cover cannot be scaled.
    async fn thumbnail(
        &self,
        album: &AlbumId,
        source: &str,
        kind: ImageKind,
        bucket: u32,
    ) -> Result<Option<(Bytes, ImageKind)>> {
        let (thumb_kind, format) = match kind {
            ImageKind::Png => (ImageKind::Png, image::ImageFormat::Png),
            _ => (ImageKind::Jpeg, image::ImageFormat::Jpeg),
        };
        let thumb_key = layout::thumbnail(album, bucket, thumb_kind.extension());
        if let Some(bytes) = self.cached_thumbnail(&thumb_key).await? {
            return Ok(Some((bytes, thumb_kind)));
        }
        let build = async {
            // Made by the request this one waited for.
            if let Some(bytes) = self.cached_thumbnail(&thumb_key).await? {
                return Ok::<_, Error>(Some(bytes));
            }
            let original = self.storage.blobs().get_bytes(source).await?;
            if let Err(why) = picture::check_dimensions(&original) {
                tracing::warn!(key = %source, %why, "not scaling the cover; serving it as it is");
                return Ok(None);
            }
            let scaled = {
                let _slot = self.cpu.acquire().await;
                tokio::task::spawn_blocking(move || scale(&original, bucket, format))
                    .await
                    .map_err(Error::task("thumbnail"))?
            };
            let bytes = match scaled {
                Ok(bytes) => bytes,
                Err(reason) => {
                    tracing::warn!(key = %source, %reason, "cannot make a thumbnail; serving the original");
                    return Ok(None);
                }
            };
            self.store_thumbnail(album, &thumb_key, bytes.clone())
                .await?;
            Ok(Some(bytes))
        };
        let built = self.state.thumbnail_builds.run(&thumb_key, build).await?;
        Ok(built.map(|bytes| (bytes, thumb_kind)))
    }

    /// A cached thumbnail's bytes, stamping its use for the LRU now and then; `None` when
    /// it is not cached (or its blob is gone).
    async fn cached_thumbnail(&self, key: &str) -> Result<Option<Bytes>> {
        let last_access: Option<i64> = self
            .db
            .sql("SELECT last_access_at FROM thumbnails WHERE storage_uri = $1")
            .bind(key)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        crate::metrics::cache_lookup("thumbnails", last_access.is_some());
        let Some(last_access) = last_access else {
            return Ok(None);
        };
        let bytes = match self.storage.blobs().get_bytes(key).await {
            Ok(bytes) => bytes,
            Err(Error::NotFound { .. }) => {
                self.db
                    .sql("DELETE FROM thumbnails WHERE storage_uri = $1")
                    .bind(key)
                    .execute(self.db.pool())
                    .await?;
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let stale =
            Timestamp::now().as_micros() - last_access > ACCESS_STAMP_EVERY.as_micros() as i64;
        if stale {
            self.db
                .sql("UPDATE thumbnails SET last_access_at = {now} WHERE storage_uri = $1")
                .bind(key)
                .execute(self.db.pool())
                .await?;
        }
        Ok(Some(bytes))
    }

    /// Keeps a made thumbnail: the blob, then its row (a deleted album's blob is dropped
    /// again), then the cache is brought back under its bound.
    async fn store_thumbnail(&self, album: &AlbumId, key: &str, bytes: Bytes) -> Result<()> {
        let size = bytes.len() as i64;
        self.storage.blobs().put_bytes_if_absent(key, bytes).await?;
        let inserted = self
            .db
            .sql(
                "INSERT INTO thumbnails (storage_uri, album_id, size_bytes, created_at, last_access_at)
                 VALUES ($1, $2, $3, {now}, {now}) ON CONFLICT (storage_uri) DO NOTHING",
            )
            .bind(key)
            .bind(album)
            .bind(size)
            .execute(self.db.pool())
            .await;
        if let Err(error) = inserted {
            // The album was deleted meanwhile (the row's foreign key).
            self.storage.delete_unreferenced([key.to_string()]).await;
            return Err(error);
        }
        self.evict_thumbnails(self.thumbnail_cache_max_bytes).await
    }

    /// Deletes least recently served thumbnails until the cache holds at most `bound`
    /// bytes. The row goes first, so no reader is sent to a deleted blob.
    pub async fn evict_thumbnails(&self, bound: u64) -> Result<()> {
        let total: i64 = self
            .db
            .sql("SELECT CAST(COALESCE(SUM(size_bytes), 0) AS BIGINT) FROM thumbnails")
            .fetch_scalar(self.db.pool())
            .await?;
        let mut excess = total - bound.min(i64::MAX as u64) as i64;
        while excess > 0 {
            let oldest: Vec<(String, i64)> = self
                .db
                .sql("SELECT storage_uri, size_bytes FROM thumbnails ORDER BY last_access_at, storage_uri LIMIT 100")
                .fetch_all(self.db.pool())
                .await?;
            if oldest.is_empty() {
                break;
            }
            for (key, size) in oldest {
                if excess <= 0 {
                    break;
                }
                self.db
                    .sql("DELETE FROM thumbnails WHERE storage_uri = $1")
                    .bind(key.as_str())
                    .execute(self.db.pool())
                    .await?;
                self.storage.delete_unreferenced([key]).await;
                excess -= size;
            }
        }
        Ok(())
    }

    /// Stores `image` as the album's cover unless it has one. Returns whether it was stored.
    ///
    /// The blob is written first, with a create-only put (an existing file at that key is
    /// never replaced), and the album row points at it only if it had no cover: no row ever
    /// points at a missing file.
    pub(crate) async fn store_album_cover(
        &self,
        album_id: &AlbumId,
        image: &Image,
    ) -> Result<bool> {
        // Images reach here checked (`Image::checked`); a cover is never stored unchecked.
        if let Err(why) = picture::check_dimensions(&image.bytes) {
            tracing::warn!(%album_id, %why, "not storing the cover");
            return Ok(false);
        }
        let key = layout::cover(album_id, image.kind.extension());
        let written = self
            .storage
            .blobs()
            .put_bytes_if_absent(&key, image.bytes.clone())
            .await?;
        let updated = self
            .db
            .sql(
                "UPDATE albums SET cover_uri = $2, cover_size_bytes = $3, cover_updated_at = {now},
                 updated_at = {now} WHERE id = $1 AND cover_uri IS NULL",
            )
            .bind(album_id)
            .bind(key.as_str())
            .bind(image.bytes.len() as i64)
            .execute(self.db.pool())
            .await?;
        if updated == 0 && written {
            // The album got a cover meanwhile (another track of it), or is gone: drop ours
            // unless it is the one the album now points at.
            let current: Option<Option<String>> = self
                .db
                .sql("SELECT cover_uri FROM albums WHERE id = $1")
                .bind(album_id)
                .fetch_scalar_optional(self.db.pool())
                .await?;
            if current.flatten().as_deref() != Some(key.as_str()) {
                self.storage.blobs().delete(&key).await?;
            }
        }
        Ok(updated == 1)
    }

    /// Whether the album has a cover already.
    pub(crate) async fn album_has_cover(&self, album_id: &AlbumId) -> Result<bool> {
        let cover: Option<Option<String>> = self
            .db
            .sql("SELECT cover_uri FROM albums WHERE id = $1")
            .bind(album_id)
            .fetch_scalar_optional(self.db.pool())
            .await?;
        Ok(cover.flatten().is_some())
    }
}

/// Scales an image to fit a `size` × `size` box (never up), encoded as `format`. The decoder
/// refuses images larger than a cover may be and allocations past [`MAX_DECODE_BYTES`],
/// whatever the header checked before claimed.
fn scale(
    source: &[u8],
    size: u32,
    format: image::ImageFormat,
) -> std::result::Result<Bytes, String> {
    let mut reader = image::ImageReader::new(std::io::Cursor::new(source))
        .with_guessed_format()
        .map_err(|error| error.to_string())?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(picture::MAX_IMAGE_EDGE as u32);
    limits.max_image_height = Some(picture::MAX_IMAGE_EDGE as u32);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let decoded = reader.decode().map_err(|error| error.to_string())?;
    let scaled = if decoded.width() <= size && decoded.height() <= size {
        decoded
    } else {
        decoded.thumbnail(size, size)
    };
    let scaled = match format {
        image::ImageFormat::Jpeg => image::DynamicImage::ImageRgb8(scaled.to_rgb8()),
        _ => scaled,
    };
    let mut out = std::io::Cursor::new(Vec::new());
    scaled
        .write_to(&mut out, format)
        .map_err(|error| error.to_string())?;
    Ok(Bytes::from(out.into_inner()))
}

/// Edge of the placeholder cover when no size is asked for.
pub const PLACEHOLDER_SIZE: u32 = 256;

/// The image served where an item has no cover (clients of the legacy interface expect an
/// image for every cover id): a record on a dark background, drawn at the size's
/// [`thumbnail_bucket`] and kept per bucket for the life of the process.
pub fn placeholder_cover(size: Option<u32>) -> Cover {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static DRAWN: OnceLock<Mutex<HashMap<u32, Bytes>>> = OnceLock::new();
    let size = thumbnail_bucket(size.unwrap_or(PLACEHOLDER_SIZE));
    let drawn = DRAWN.get_or_init(Default::default);
    let cached = drawn.lock().expect("poisoned").get(&size).cloned();
    let bytes = cached.unwrap_or_else(|| {
        let bytes = draw_placeholder(size);
        drawn.lock().expect("poisoned").insert(size, bytes.clone());
        bytes
    });
    Cover {
        bytes,
        mime_type: "image/png",
        etag: format!("\"placeholder-{size}\""),
        last_modified: Timestamp::from_micros(0),
    }
}

fn draw_placeholder(size: u32) -> Bytes {
    let centre = (size as f32 - 1.0) / 2.0;
    let radius = size as f32 * 0.42;
    let image = image::RgbImage::from_fn(size, size, |x, y| {
        let distance = ((x as f32 - centre).powi(2) + (y as f32 - centre).powi(2)).sqrt() / radius;
        let shade = match distance {
            d if d > 1.0 => 38,                               // background
            d if d < 0.12 => 30,                              // spindle hole
            d if d < 0.34 => 132,                             // label
            d if ((d * 40.0) as u32).is_multiple_of(3) => 58, // grooves
            _ => 46,
        };
        image::Rgb([shade, shade, shade.saturating_add(10)])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encoding a PNG in memory cannot fail");
    Bytes::from(out.into_inner())
}
