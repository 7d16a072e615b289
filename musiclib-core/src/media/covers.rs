//! Album covers: stored once as `covers/{album_id}.{ext}` (never overwritten), served with
//! validators for HTTP caching, and scaled to cached thumbnails on request.

use bytes::Bytes;

use super::Media;
use crate::enrichment::coverart::{Image, ImageKind};
use crate::storage::layout;
use crate::{AlbumId, Error, Result, Timestamp, TrackId};

/// Smallest and largest thumbnail edge, in pixels.
pub const THUMBNAIL_SIZES: std::ops::RangeInclusive<u32> = 16..=1200;

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
        let (thumb_kind, format) = match kind {
            ImageKind::Png => (ImageKind::Png, image::ImageFormat::Png),
            _ => (ImageKind::Jpeg, image::ImageFormat::Jpeg),
        };
        let album = AlbumId::from_db(row.id.clone());
        let thumb_key = layout::thumbnail(&album, size, thumb_kind.extension());
        let etag = format!("\"{}-{stored_at:x}-{size}\"", row.id);
        match self.storage.blobs().get_bytes(&thumb_key).await {
            Ok(bytes) => {
                return Ok(Cover {
                    bytes,
                    mime_type: thumb_kind.mime_type(),
                    etag,
                    last_modified,
                })
            }
            Err(Error::NotFound { .. }) => {}
            Err(error) => return Err(error),
        }
        let source = self.storage.blobs().get_bytes(&key).await?;
        let original_bytes = source.clone();
        let scaled = tokio::task::spawn_blocking(move || scale(&source, size, format))
            .await
            .map_err(Error::task("thumbnail"))?;
        let bytes = match scaled {
            Ok(bytes) => bytes,
            // A cover the decoder cannot read (GIF, WebP, a damaged file) is served as it is.
            Err(reason) => {
                tracing::warn!(%key, %reason, "cannot make a thumbnail; serving the original");
                return Ok(Cover {
                    bytes: original_bytes,
                    ..original
                });
            }
        };
        // Another request may have stored the same thumbnail meanwhile: either copy is right.
        self.storage
            .blobs()
            .put_bytes_if_absent(&thumb_key, bytes.clone())
            .await?;
        Ok(Cover {
            bytes,
            mime_type: thumb_kind.mime_type(),
            etag,
            last_modified,
        })
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

/// Scales an image to fit a `size` × `size` box (never up), encoded as `format`.
fn scale(
    source: &[u8],
    size: u32,
    format: image::ImageFormat,
) -> std::result::Result<Bytes, String> {
    let decoded = image::load_from_memory(source).map_err(|error| error.to_string())?;
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
pub const PLACEHOLDER_SIZE: u32 = 300;

/// The image served where an item has no cover (clients of the legacy interface expect an
/// image for every cover id): a record on a dark background, drawn at `size` pixels (clamped
/// to [`THUMBNAIL_SIZES`]) and kept per size for the life of the process.
pub fn placeholder_cover(size: Option<u32>) -> Cover {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static DRAWN: OnceLock<Mutex<HashMap<u32, Bytes>>> = OnceLock::new();
    let size = size
        .unwrap_or(PLACEHOLDER_SIZE)
        .clamp(*THUMBNAIL_SIZES.start(), *THUMBNAIL_SIZES.end());
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
