//! Media: audio (original or Opus), cover art (always an image), lyrics.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::stream::BoxStream;
use musiclib_core::catalog::ItemKind;
use musiclib_core::lyrics::Line;
use musiclib_core::media::{
    placeholder_cover, Cover, Delivery, Encoding, TrackAudio, Want, THUMBNAIL_SIZES,
};
use musiclib_core::ErrorKind;

use super::{album_id, artist_id, playlist_id, track_id};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// `stream`: Range requests work on the original and on cached renditions; a rendition not
/// built yet is transcoded live (and queued for the cache). A placeholder of a remote item
/// (a playlist may hold one) is fetched first, the request waiting for it: a Subsonic app
/// can only play what `stream` sends. Never counts a play: only `scrobble` does.
pub(crate) async fn stream(request: &Request) -> Outcome {
    let params = &request.params;
    let raw = params.required("id")?;
    let offset = params.float("timeOffset")?.unwrap_or(0.0);
    if offset < 0.0 {
        return Err(SubsonicError::invalid("timeOffset", "must not be negative"));
    }
    // A podcast episode's `streamId`.
    if let Some(episode) = super::podcasts::episode_id(raw) {
        let encoding = Encoding::subsonic(params.get("format"), params.int("maxBitRate")?);
        let opened = super::podcasts::open(request, &episode, encoding, offset).await;
        return Ok(Reply::Media(match opened? {
            Delivery::Stored { audio, .. } => send_audio(request, &audio).await?,
            Delivery::Live { body, .. } => live(body),
        }));
    }
    let id = track_id(raw)?;
    let want = Want {
        encoding: Encoding::subsonic(params.get("format"), params.int("maxBitRate")?),
        offset_seconds: offset,
        live: true,
        wait_for_placeholder: Some(MATERIALIZE_WAIT),
    };
    let response = match request
        .library
        .open_audio(&request.caller, &id, &want)
        .await
    {
        Ok(Delivery::Stored { audio, .. }) => send_audio(request, &audio).await?,
        Ok(Delivery::Live { body, .. }) => live(body),
        // Past the bound on live encodes, an HTTP 503 with `Retry-After` (players retry a
        // stream URL; an envelope with HTTP 200 would be played as audio).
        Err(error) if error.code() == "busy" => {
            let seconds = error.retry_after_seconds().unwrap_or(10);
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, HeaderValue::from(seconds))],
                error.to_string(),
            )
                .into_response()
        }
        Err(error) => return Err(error.into()),
    };
    Ok(Reply::Media(response))
}

/// `download`: the original file, with Range (a placeholder fetched first, as `stream`).
pub(crate) async fn download(request: &Request) -> Outcome {
    let raw = request.params.required("id")?;
    if let Some(episode) = super::podcasts::episode_id(raw) {
        let opened = super::podcasts::open(request, &episode, Encoding::Original, 0.0).await?;
        return match opened {
            Delivery::Stored { audio, .. } => Ok(Reply::Media(send_audio(request, &audio).await?)),
            Delivery::Live { body, .. } => Ok(Reply::Media(live(body))),
        };
    }
    let id = track_id(raw)?;
    let want = Want {
        wait_for_placeholder: Some(MATERIALIZE_WAIT),
        ..Want::original()
    };
    match request
        .library
        .open_audio(&request.caller, &id, &want)
        .await?
    {
        Delivery::Stored { audio, .. } => Ok(Reply::Media(send_audio(request, &audio).await?)),
        Delivery::Live { body, .. } => Ok(Reply::Media(live(body))),
    }
}

/// How long `stream` and `download` of a placeholder wait for its audio to be fetched.
pub(crate) const MATERIALIZE_WAIT: std::time::Duration = std::time::Duration::from_secs(90);

/// A live transcode's response.
fn live(body: BoxStream<'static, std::io::Result<Bytes>>) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("audio/ogg")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Sends stored audio as every media response is sent (musiclib-media-http): validators,
/// 304, one byte range (206), 416, HEAD.
pub(crate) async fn send_audio(
    request: &Request,
    audio: &TrackAudio,
) -> Result<Response, SubsonicError> {
    musiclib_media_http::respond(
        &request.method,
        &request.headers,
        &audio.into(),
        HeaderMap::new(),
        |_| StatusCode::RANGE_NOT_SATISFIABLE.into_response(),
        |range| async {
            let body = request.library.media().read_audio(audio, range).await?;
            Ok::<_, SubsonicError>(Body::from_stream(body))
        },
    )
    .await
}

/// `getCoverArt`: the cover of an album, song, artist (one of its albums') or playlist;
/// the placeholder image whenever there is none, also for an id nothing has. `size` is the
/// longest edge, clamped to 16–1200.
pub(crate) async fn cover_art(request: &Request) -> Outcome {
    let id = request.params.required("id")?;
    let size = request
        .params
        .int("size")?
        .filter(|size| *size > 0)
        .map(|size| {
            (size.min(i64::from(u32::MAX)) as u32)
                .clamp(*THUMBNAIL_SIZES.start(), *THUMBNAIL_SIZES.end())
        });
    let cover = match find_cover(request, id, size).await {
        Ok(Some(cover)) => cover,
        Ok(None) => placeholder_cover(size),
        Err(error) if matches!(error.kind(), ErrorKind::NotFound) => placeholder_cover(size),
        Err(error) => return Err(error.into()),
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=86400"),
    );
    Ok(Reply::Media(
        musiclib_media_http::respond_bytes(
            &request.method,
            &request.headers,
            &(&cover).into(),
            cover.bytes.clone(),
            headers,
            |_| StatusCode::RANGE_NOT_SATISFIABLE.into_response(),
        )
        .await,
    ))
}

async fn find_cover(
    request: &Request,
    id: &str,
    size: Option<u32>,
) -> musiclib_core::Result<Option<Cover>> {
    let library = &request.library;
    let not_found = |_| musiclib_core::Error::not_found("cover", id);
    // A podcast channel's image (`pc-…`, an episode's `coverArt` too).
    if id.starts_with("pc-") {
        let channel = super::podcasts::channel_id(id)
            .map_err(|_| musiclib_core::Error::not_found("cover", id))?;
        return Ok(Some(library.podcasts().cover(&channel).await?));
    }
    Ok(match library.catalog().item_kind(id).await? {
        Some(ItemKind::Album) => Some(
            library
                .media()
                .album_cover(&album_id(id).map_err(not_found)?, size)
                .await?,
        ),
        Some(ItemKind::Track) => Some(
            library
                .media()
                .track_cover(&track_id(id).map_err(not_found)?, size)
                .await?,
        ),
        Some(ItemKind::Artist) => {
            let artist = artist_id(id).map_err(not_found)?;
            let albums = library
                .catalog()
                .artist_albums(&artist, musiclib_core::domain::Page::clamped(200, 0, 200))
                .await?;
            match albums.items.iter().find(|album| album.has_cover()) {
                Some(album) => Some(library.media().album_cover(&album.id, size).await?),
                None => None,
            }
        }
        Some(ItemKind::Playlist) => {
            let playlist = playlist_id(id).map_err(not_found)?;
            Some(
                library
                    .playlists()
                    .cover(&request.caller, &playlist)
                    .await?,
            )
        }
        None => None,
    })
}

/// `getLyrics` (by artist and title): the lyrics of the library's track with that title and
/// artist, as plain text; an empty value when there is no such track or it has none.
pub(crate) async fn lyrics(request: &Request) -> Outcome {
    let artist = request.params.get("artist");
    let title = request.params.get("title");
    let found = match title {
        Some(title) => {
            request
                .library
                .lyrics()
                .by_title_and_artist(&request.caller, title, artist)
                .await?
        }
        None => None,
    };
    let element = match found {
        Some((track, record)) => Element::new("lyrics")
            .opt("artist", track.artist_name.clone())
            .attr("title", track.title.clone())
            .text(record.plain.unwrap_or_default()),
        None => Element::new("lyrics")
            .opt("artist", artist)
            .opt("title", title)
            .text(""),
    };
    Ok(Reply::Envelope(Some(element)))
}

/// `getLyricsBySongId` (OpenSubsonic `songLyrics`): the song's lyrics as structured
/// entries, one per language the source has (`lang` is `und` when unknown; `line` has
/// `start` in ms when synced; `offset` in ms); an empty list when it has none (or is
/// instrumental).
///
/// With `enhanced=true` (`songLyrics` v2) the entries are the record's layers, each with its
/// `kind`, and a synced line with word timing (enhanced LRC) has a `cueLine` (its `index`
/// in `line`), whose cues count `byteStart`/`byteEnd` (inclusive) in the UTF-8 of the
/// cueLine's `value`. A piece without an end of its own ends where the next line begins.
/// Without it the answer is version 1's: every language, no kinds, no cues.
pub(crate) async fn lyrics_by_song_id(request: &Request) -> Outcome {
    let id = track_id(request.params.required("id")?)?;
    let enhanced = request.params.bool("enhanced")?.unwrap_or(false);
    let track = request.library.catalog().get_track(&id).await?;
    let record = request.library.lyrics().get(&request.caller, &id).await?;
    let layers = if enhanced {
        record.layers()
    } else {
        record.languages()
    };
    let entries = layers
        .iter()
        .map(|layer| {
            let synced = !layer.lines.is_empty();
            let lines: Vec<Element> = if synced {
                layer
                    .lines
                    .iter()
                    .map(|line| {
                        Element::new("line")
                            .attr("start", line.start_ms as i64)
                            .text(line.text.clone())
                    })
                    .collect()
            } else {
                layer
                    .plain
                    .lines()
                    .map(|line| Element::new("line").text(line))
                    .collect()
            };
            let entry = Element::new("structuredLyrics")
                .opt("displayArtist", track.artist_name.clone())
                .attr("displayTitle", track.title.clone());
            let entry = if enhanced {
                entry.attr("kind", layer.kind.as_str())
            } else {
                entry
            };
            let entry = entry
                .attr("lang", layer.language.unwrap_or("und"))
                .attr("synced", synced)
                .attr("offset", layer.offset_ms)
                .list("line", lines);
            let cue_lines = if enhanced {
                cue_lines(&layer.lines)
            } else {
                Vec::new()
            };
            if cue_lines.is_empty() {
                entry
            } else {
                entry.list("cueLine", cue_lines)
            }
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("lyricsList").list("structuredLyrics", entries),
    )))
}

/// The `cueLine`s of a layer's timed lines: one per line with word timing.
fn cue_lines(lines: &[&Line]) -> Vec<Element> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(index, line)| {
            let words = line.words.as_ref()?;
            let line_end = lines
                .get(index + 1)
                .map(|next| next.start_ms)
                .filter(|&next| next >= line.start_ms);
            let cues: Vec<Element> = words
                .cues
                .iter()
                .map(|cue| {
                    Element::new("cue")
                        .attr("start", cue.start_ms as i64)
                        .opt("end", cue.end_ms.or(line_end).map(|end| end as i64))
                        .attr("byteStart", cue.byte_start as i64)
                        .attr("byteEnd", cue.byte_end as i64)
                        .text(cue.text.clone())
                })
                .collect();
            let last = words.cues.last()?;
            Some(
                Element::new("cueLine")
                    .attr("index", index as i64)
                    .attr("start", words.cues[0].start_ms as i64)
                    .opt("end", last.end_ms.or(line_end).map(|end| end as i64))
                    .attr("value", words.text.clone())
                    .list("cue", cues),
            )
        })
        .collect()
}
