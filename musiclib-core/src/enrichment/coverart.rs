//! Cover Art Archive client: the front image of a release group.
//!
//! `GET {base}/release-group/{mbid}/front` answers a redirect chain ending at the image;
//! the image type is taken from its bytes (not the URL, which may say `.jpg` for a PNG).

use std::time::Duration;

use super::throttle::Throttle;

use crate::picture::MAX_IMAGE_BYTES;
pub use crate::picture::{Image, ImageKind};

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
