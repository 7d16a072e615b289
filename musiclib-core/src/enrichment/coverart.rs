//! Cover Art Archive client: the front image of a release group.
//!
//! `GET {base}/release-group/{mbid}/front` answers a redirect chain ending at the image;
//! the image type is taken from its bytes (not the URL, which may say `.jpg` for a PNG).

use std::time::Duration;

use super::throttle::Throttle;

/// The largest image accepted, in bytes.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// The longest edge of an image accepted as a cover, in pixels.
pub const MAX_IMAGE_EDGE: usize = 8192;

/// The most pixels of an image accepted as a cover (5000 × 5000): decoding one for a thumbnail
/// takes 3–4 bytes a pixel.
pub const MAX_IMAGE_PIXELS: usize = 25_000_000;

/// An image and its real type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The bytes.
    pub bytes: bytes::Bytes,
    /// What the bytes are.
    pub kind: ImageKind,
}

impl Image {
    /// An image from bytes a file or a service supplied, checked before anything keeps it: a
    /// JPEG, PNG, GIF or WebP (by its bytes), at most [`MAX_IMAGE_BYTES`], and at most
    /// [`MAX_IMAGE_EDGE`] pixels a side and [`MAX_IMAGE_PIXELS`] in all, read from its header
    /// without decoding it (a small PNG can claim 12000 × 12000 pixels).
    pub fn checked(bytes: bytes::Bytes) -> Result<Image, String> {
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(format!(
                "the image is larger than {} MiB",
                MAX_IMAGE_BYTES >> 20
            ));
        }
        let kind = ImageKind::sniff(&bytes)
            .ok_or_else(|| "not a JPEG, PNG, GIF or WebP image".to_string())?;
        check_dimensions(&bytes)?;
        Ok(Image { bytes, kind })
    }
}

/// Refuses an image whose header says it is larger than a cover may be, or has no readable
/// size.
pub(crate) fn check_dimensions(bytes: &[u8]) -> Result<(usize, usize), String> {
    let size = imagesize::blob_size(bytes)
        .map_err(|error| format!("the image's size cannot be read: {error}"))?;
    let (width, height) = (size.width, size.height);
    if width == 0 || height == 0 {
        return Err("the image has no pixels".into());
    }
    if width > MAX_IMAGE_EDGE
        || height > MAX_IMAGE_EDGE
        || width.saturating_mul(height) > MAX_IMAGE_PIXELS
    {
        return Err(format!(
            "the image is {width} × {height} pixels: a cover is at most {MAX_IMAGE_EDGE} a side and {MAX_IMAGE_PIXELS} in all"
        ));
    }
    Ok((width, height))
}

/// Image types musiclib stores as covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// JPEG.
    Jpeg,
    /// PNG.
    Png,
    /// GIF.
    Gif,
    /// WebP.
    Webp,
}

impl ImageKind {
    /// Recognises an image by its first bytes.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageKind::Jpeg)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageKind::Png)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageKind::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageKind::Webp)
        } else {
            None
        }
    }

    /// File extension of the cover key.
    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "jpg",
            ImageKind::Png => "png",
            ImageKind::Gif => "gif",
            ImageKind::Webp => "webp",
        }
    }

    /// The type from an extension of a cover key.
    pub fn from_extension(extension: &str) -> Option<ImageKind> {
        match extension {
            "jpg" | "jpeg" => Some(ImageKind::Jpeg),
            "png" => Some(ImageKind::Png),
            "gif" => Some(ImageKind::Gif),
            "webp" => Some(ImageKind::Webp),
            _ => None,
        }
    }

    /// MIME type.
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Png => "image/png",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
        }
    }
}

/// Why no image came back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoverError {
    /// The archive has no front image for this release group.
    #[error("the Cover Art Archive has no front image for this release group")]
    NotFound,
    /// A failure worth retrying in a later pass (503, timeout).
    #[error("the Cover Art Archive is unavailable: {0}")]
    Transient(String),
    /// Anything else (a bad answer).
    #[error("the Cover Art Archive answered badly: {0}")]
    Invalid(String),
}

/// Fetches front images, at most about one request per second.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    throttle: std::sync::Arc<Throttle>,
    timeout: Duration,
}

impl Client {
    /// A client of the archive at `base_url`.
    pub fn new(http: reqwest::Client, base_url: &str) -> Client {
        Client {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            throttle: std::sync::Arc::new(Throttle::per_second(1.0)),
            timeout: Duration::from_secs(30),
        }
    }

    /// The front image of release group `mbid`.
    pub async fn front(&self, releasegroup_id: &str) -> Result<Image, CoverError> {
        if uuid::Uuid::parse_str(releasegroup_id).is_err() {
            return Err(CoverError::Invalid(format!(
                "{releasegroup_id:?} is not a MusicBrainz id"
            )));
        }
        self.throttle.ready().await;
        let url = format!("{}/release-group/{releasegroup_id}/front", self.base_url);
        let request = self.http.get(&url).timeout(self.timeout);
        let response = crate::outside::send(crate::metrics::Service::CoverArtArchive, request)
            .await
            .map_err(|error| CoverError::Transient(crate::error_chain(&error)))?;
        let status = response.status();
        if status.as_u16() == 404 {
            return Err(CoverError::NotFound);
        }
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(CoverError::Transient(format!("HTTP {status}")));
        }
        if !status.is_success() {
            return Err(CoverError::Invalid(format!("HTTP {status}")));
        }
        if response
            .content_length()
            .is_some_and(|length| length as usize > MAX_IMAGE_BYTES)
        {
            return Err(CoverError::Invalid(
                "the image is larger than 20 MiB".into(),
            ));
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|error| CoverError::Transient(crate::error_chain(&error)))?;
        if bytes.len() > MAX_IMAGE_BYTES {
            return Err(CoverError::Invalid(
                "the image is larger than 20 MiB".into(),
            ));
        }
        Image::checked(bytes).map_err(|why| CoverError::Invalid(format!("the answer: {why}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_image_types_from_bytes() {
        assert_eq!(
            ImageKind::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(
            ImageKind::sniff(b"\x89PNG\r\n\x1a\n...."),
            Some(ImageKind::Png)
        );
        assert_eq!(
            ImageKind::sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Some(ImageKind::Webp)
        );
        assert_eq!(ImageKind::sniff(b"<html>"), None);
    }
}
