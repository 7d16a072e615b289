//! `hls.m3u8` (also answered as `hls`, the name py-opensonic calls): a song as an HTTP Live
//! Streaming playlist (AAC in MPEG-TS segments of 6 s,
//! core's audio HLS: the rendition `/api/v1/stream/{id}/hls/playlist.m3u8` serves).
//!
//! A Subsonic app holds no `/api/v1` token, so the segments are fetched through this same
//! method: each segment line is `hls.m3u8?id=…&segment=seg-NNNNN.ts` with the request's own
//! credentials (the ones the app put in the playlist's URL), relative to `/rest/`. `bitRate`
//! and `audioTrack` are accepted and ignored: there is one AAC rendition, and songs have one
//! audio track.

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse as _;

use super::track_id;
use crate::{Outcome, Reply, Request};

/// The request parameters carried onto segment URLs: the credentials and the client.
const CARRIED: &[&str] = &["u", "t", "s", "p", "apiKey", "v", "c"];

/// `hls.m3u8`: `id`; with `segment`, that segment's bytes.
pub(crate) async fn hls(request: &Request) -> Outcome {
    let id = track_id(request.params.required("id")?)?;
    let media = request.library.media();
    if let Some(segment) = request.params.get("segment") {
        let bytes = media.hls_segment(&request.caller, &id, segment).await?;
        return Ok(Reply::Media(
            (
                [
                    (header::CONTENT_TYPE, HeaderValue::from_static("video/mp2t")),
                    (
                        header::CACHE_CONTROL,
                        HeaderValue::from_static("private, max-age=86400"),
                    ),
                ],
                bytes,
            )
                .into_response(),
        ));
    }
    let playlist = media.hls_playlist(&request.caller, &id, None).await?;
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("id", id.as_str());
    for name in CARRIED {
        if let Some(value) = request.params.get(name) {
            query.append_pair(name, value);
        }
    }
    let query = query.finish();
    let text: String = playlist
        .lines()
        .map(|line| {
            if line.starts_with('#') || line.is_empty() {
                format!("{line}\n")
            } else {
                let name = line.split('?').next().unwrap_or(line);
                let name: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
                format!("hls.m3u8?{query}&segment={name}\n")
            }
        })
        .collect();
    Ok(Reply::Media(
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/vnd.apple.mpegurl"),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, no-cache"),
                ),
            ],
            text,
        )
            .into_response(),
    ))
}
