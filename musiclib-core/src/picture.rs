//! A checked image: the bytes a file, a user or a service supplied as a cover, recognised by
//! their first bytes and held to a size and a pixel count before anything keeps or decodes them.

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
