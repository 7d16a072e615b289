//! Users' pictures: the one a user uploaded (checked as every image is, by
//! [`crate::picture::Image::checked`], and bounded by [`MAX_AVATAR_BYTES`]), otherwise one
//! generated from the user id, so every account has a picture apps can show (Subsonic
//! `getAvatar`) and it never changes by itself.
//!
//! The generated picture is a 5 × 5 pattern, mirrored left to right, in one colour on a
//! light ground, both read from a SHA-256 of the user id: the same id always makes the same
//! PNG, on every replica, with nothing stored.
//!
//! This service writes one column of `users`, `avatar_uri` (the blob's key, in the
//! `avatars/` namespace); the accounts are [`crate::auth::Accounts`]'.

use bytes::Bytes;
use sha2::{Digest as _, Sha256};

use crate::auth::Caller;
use crate::db::Db;
use crate::storage::{layout, Storage};
use crate::{Error, Result, UserId};

/// The largest picture a user may upload: a picture beside a name needs no more.
pub const MAX_AVATAR_BYTES: usize = 2 * 1024 * 1024;

/// Edge of a generated picture, in pixels.
pub const GENERATED_EDGE: u32 = 160;
/// Edge of one of its 5 × 5 cells; the margin is what is left, split evenly.
const CELL: u32 = 28;

/// A user's picture.
#[derive(Debug, Clone)]
pub struct Avatar {
    /// The image.
    pub bytes: Bytes,
    /// Its MIME type.
    pub mime_type: &'static str,
    /// A strong validator: changes whenever the picture does.
    pub etag: String,
    /// Whether the user uploaded it (else it is generated).
    pub uploaded: bool,
}

#[derive(sqlx::FromRow)]
struct AvatarRow {
    id: String,
    avatar_uri: Option<String>,
}

/// The avatars service.
#[derive(Clone, Debug)]
pub struct Avatars {
    db: Db,
    storage: Storage,
}

impl Avatars {
    pub(crate) fn new(db: Db, storage: Storage) -> Avatars {
        Avatars { db, storage }
    }

    /// Stores the caller's picture (JPEG, PNG, GIF or WebP, by its bytes; at most
    /// [`MAX_AVATAR_BYTES`]), replacing the previous one.
    pub async fn set(&self, caller: &Caller, bytes: Bytes) -> Result<()> {
        if bytes.len() > MAX_AVATAR_BYTES {
            return Err(Error::TooLarge {
                limit: MAX_AVATAR_BYTES as u64,
            });
        }
        let image =
            crate::picture::Image::checked(bytes).map_err(|why| Error::invalid("image", why))?;
        let user = &caller.user.id;
        let key = layout::avatar(user, image.kind.extension());
        // The blob first, then the row that points at it.
        self.storage.blobs().put_bytes(&key, image.bytes).await?;
        match self.replace(user, Some(&key)).await {
            Ok(previous) => {
                self.storage.delete_unreferenced(previous).await;
                Ok(())
            }
            Err(error) => {
                self.storage.delete_unreferenced([key]).await;
                Err(error)
            }
        }
    }

    /// Removes the caller's picture (the generated one shows again). None stored: nothing
    /// to do.
    pub async fn remove(&self, caller: &Caller) -> Result<()> {
        let previous = self.replace(&caller.user.id, None).await?;
        self.storage.delete_unreferenced(previous).await;
        Ok(())
    }

    /// Points the user's row at `key`; the key it pointed at before.
    async fn replace(&self, user: &UserId, key: Option<&str>) -> Result<Option<String>> {
        let mut tx = self.db.begin().await?;
        let previous: Option<Option<String>> = self
            .db
            .sql(&format!(
                "SELECT avatar_uri FROM users WHERE id = $1{}",
                self.db.lock("users")
            ))
            .bind(user)
            .fetch_scalar_optional(&mut *tx)
            .await?;
        let previous = previous.ok_or_else(|| Error::not_found("user", user))?;
        self.db
            .sql("UPDATE users SET avatar_uri = $2 WHERE id = $1")
            .bind(user)
            .bind(key)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(previous)
    }

    /// The picture of `user` (anyone signed in: pictures are shown beside names).
    pub async fn get(&self, _caller: &Caller, user: &UserId) -> Result<Avatar> {
        let row: Option<AvatarRow> = self
            .db
            .sql("SELECT id, avatar_uri FROM users WHERE id = $1")
            .bind(user)
            .fetch_optional(self.db.pool())
            .await?;
        self.avatar(row.ok_or_else(|| Error::not_found("user", user))?)
            .await
    }

    /// The picture of the user named `username` (names compare as names do everywhere).
    pub async fn get_by_name(&self, _caller: &Caller, username: &str) -> Result<Avatar> {
        let row: Option<AvatarRow> = self
            .db
            .sql("SELECT id, avatar_uri FROM users WHERE username_key = $1")
            .bind(crate::text::name_key(username.trim()))
            .fetch_optional(self.db.pool())
            .await?;
        self.avatar(row.ok_or_else(|| Error::not_found("user", username))?)
            .await
    }

    async fn avatar(&self, row: AvatarRow) -> Result<Avatar> {
        let Some(key) = row.avatar_uri else {
            // The picture is a function of the id and of this drawing (its version, 1).
            let etag = format!("\"generated-1-{}\"", row.id);
            let user = UserId::from_db(row.id);
            let bytes = tokio::task::spawn_blocking(move || generated(&user))
                .await
                .map_err(Error::task("generate an avatar"))??;
            return Ok(Avatar {
                bytes: bytes.into(),
                mime_type: "image/png",
                etag,
                uploaded: false,
            });
        };
        let extension = key.rsplit('.').next().unwrap_or_default();
        let mime_type = crate::picture::ImageKind::from_extension(extension)
            .map_or("application/octet-stream", |kind| kind.mime_type());
        let name = key.rsplit('/').next().unwrap_or(&key);
        Ok(Avatar {
            bytes: self.storage.blobs().get_bytes(&key).await?,
            mime_type,
            etag: format!("\"{}\"", name.split('.').next().unwrap_or(name)),
            uploaded: true,
        })
    }
}

/// The generated picture of `user`: a PNG of [`GENERATED_EDGE`] pixels.
fn generated(user: &UserId) -> Result<Vec<u8>> {
    let digest = Sha256::digest(user.as_str().as_bytes());
    // 15 bits choose the 5 × 3 cells of the left half and the middle; the right mirrors them.
    let bits = u32::from(digest[0]) | (u32::from(digest[1]) << 8);
    let filled = |column: u32, row: u32| {
        let column = column.min(4 - column);
        (bits >> (row * 3 + column)) & 1 == 1
    };
    let colour = hue_colour(u16::from_le_bytes([digest[2], digest[3]]) % 360);
    let ground = image::Rgb([240u8, 240, 240]);
    let margin = (GENERATED_EDGE - 5 * CELL) / 2;
    let cell = CELL;
    let picture = image::RgbImage::from_fn(GENERATED_EDGE, GENERATED_EDGE, |x, y| {
        let inside = |v: u32| v >= margin && v < margin + 5 * cell;
        if inside(x) && inside(y) && filled((x - margin) / cell, (y - margin) / cell) {
            colour
        } else {
            ground
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    picture
        .write_to(&mut out, image::ImageFormat::Png)
        .map_err(|error| Error::internal(format!("encode a generated avatar: {error}")))?;
    Ok(out.into_inner())
}

/// A saturated, mid-light colour of hue `hue` (degrees).
fn hue_colour(hue: u16) -> image::Rgb<u8> {
    // HSL with saturation 0.55 and lightness 0.5: chroma 0.55.
    let chroma = 0.55_f32;
    let h = f32::from(hue) / 60.0;
    let x = chroma * (1.0 - ((h % 2.0) - 1.0).abs());
    let (r, g, b) = match hue / 60 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = 0.5 - chroma / 2.0;
    let byte = |v: f32| ((v + m) * 255.0).round() as u8;
    image::Rgb([byte(r), byte(g), byte(b)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_picture_is_the_users_own_and_symmetric() {
        let user = UserId::new();
        let png = generated(&user).unwrap();
        assert_eq!(png, generated(&user).unwrap(), "deterministic");
        assert_ne!(png, generated(&UserId::new()).unwrap());
        let picture = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(picture.dimensions(), (GENERATED_EDGE, GENERATED_EDGE));
        for y in 0..GENERATED_EDGE {
            for x in 0..GENERATED_EDGE {
                assert_eq!(
                    picture.get_pixel(x, y),
                    picture.get_pixel(GENERATED_EDGE - 1 - x, y),
                    "mirrored at ({x}, {y})"
                );
            }
        }
    }
}
