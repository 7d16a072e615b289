//! OpenSubsonic `transcoding`: `getTranscodeDecision` (POST, the client's profiles as a JSON
//! body) decides with core's [`decision`](musiclib_core::media::decision) whether a song
//! or a podcast episode plays as it is or what to encode it to; `getTranscodeStream` sends
//! what the decision's `transcodeParams` say: the original (byte ranges work) or a live
//! encode from `offset` seconds. The stream answers an error as an HTTP status with a line
//! of text, as the extension asks (a player given an envelope would try to play it).

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use musiclib_core::media::decision::{self, ClientInfo, Decision, StreamDetails, StreamParams};
use musiclib_core::media::{Delivery, Want};
use musiclib_core::{Error, ErrorKind, TrackId};

use super::media::{send_audio, MATERIALIZE_WAIT};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// What `mediaId` and `mediaType` name.
enum Media {
    Song(TrackId),
    Episode(musiclib_core::EpisodeId),
}

fn media(request: &Request) -> Result<Media, SubsonicError> {
    let id = request.params.required("mediaId")?;
    match request.params.required("mediaType")? {
        "song" => Ok(Media::Song(super::track_id(id)?)),
        "podcast" => super::podcasts::episode_id(id)
            .or_else(|| musiclib_core::EpisodeId::parse(id).ok())
            .map(Media::Episode)
            .ok_or_else(|| SubsonicError::not_found(format_args!("podcast episode {id}"))),
        _ => Err(SubsonicError::invalid(
            "mediaType",
            "must be song or podcast",
        )),
    }
}

/// `getTranscodeDecision`.
pub(crate) async fn decision(request: &Request) -> Outcome {
    if request.method != axum::http::Method::POST {
        return Err(SubsonicError::invalid(
            "method",
            "getTranscodeDecision takes a POST with the client's profiles as JSON",
        ));
    }
    let media = media(request)?;
    let body = request
        .json_body
        .as_deref()
        .ok_or_else(|| SubsonicError::missing("the request body (JSON ClientInfo)"))?;
    let client: ClientInfo = serde_json::from_slice(body).map_err(|error| {
        SubsonicError::invalid("body", format_args!("is not a ClientInfo: {error}"))
    })?;
    client.check()?;
    let source = match &media {
        Media::Song(id) => {
            let track = request.library.catalog().get_track(id).await?;
            StreamDetails::of_original(
                track.format.as_deref(),
                track.mime_type.as_deref().unwrap_or_default(),
                track.bitrate_kbps,
                track.sample_rate,
                track.channels,
            )
        }
        Media::Episode(id) => {
            let audio = request
                .library
                .podcasts()
                .episode_audio(&request.caller, id)
                .await?;
            StreamDetails::of_original(None, &audio.mime_type, audio.bitrate_kbps, None, None)
        }
    };
    let can_encode = request.library.media().transcoder_ready().await;
    let decided = decision::decide(&source, &client, can_encode);
    Ok(Reply::Envelope(Some(decision_element(&decided))))
}

fn decision_element(decided: &Decision) -> Element {
    Element::new("transcodeDecision")
        .attr("canDirectPlay", decided.can_direct_play)
        .attr("canTranscode", decided.can_transcode)
        .values(
            "transcodeReason",
            decided
                .transcode_reasons
                .iter()
                .map(|reason| reason.as_str().into())
                .collect(),
        )
        .opt("errorReason", decided.error_reason.as_deref())
        .opt("transcodeParams", decided.params.map(StreamParams::to_text))
        .child(stream_element("sourceStream", &decided.source))
        .opt_child(
            decided
                .transcode
                .as_ref()
                .map(|details| stream_element("transcodeStream", details)),
        )
}

fn stream_element(name: &'static str, details: &StreamDetails) -> Element {
    Element::new(name)
        .attr("protocol", details.protocol)
        .attr("container", details.container.as_str())
        .attr("codec", details.codec.as_str())
        .opt("audioChannels", details.channels)
        .opt("audioBitrate", details.bitrate)
        .opt("audioProfile", details.profile)
        .opt("audioSamplerate", details.sample_rate)
        .opt("audioBitdepth", details.bit_depth)
}

/// `getTranscodeStream`.
pub(crate) async fn stream(request: &Request) -> Outcome {
    Ok(Reply::Media(match send(request).await {
        Ok(response) => response,
        Err(error) => failure(&error),
    }))
}

async fn send(request: &Request) -> Result<Response, Error> {
    let media = media(request).map_err(|error| match error.code {
        70 => Error::not_found("media", request.params.get("mediaId").unwrap_or_default()),
        _ => Error::invalid("mediaId", error.message),
    })?;
    let params = StreamParams::parse(request.params.get("transcodeParams").ok_or_else(|| {
        Error::invalid(
            "transcodeParams",
            "is required: the one getTranscodeDecision gave",
        )
    })?)?;
    let offset = match request.params.get("offset") {
        None | Some("") => 0.0,
        Some(text) => text
            .parse::<f64>()
            .ok()
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
            .ok_or_else(|| Error::invalid("offset", "must be a non-negative number of seconds"))?,
    };
    let audio = match &media {
        Media::Song(id) => {
            let want = Want {
                wait_for_placeholder: Some(MATERIALIZE_WAIT),
                ..Want::original()
            };
            match request
                .library
                .open_audio(&request.caller, id, &want)
                .await?
            {
                Delivery::Stored { audio, .. } => audio,
                Delivery::Live { .. } => {
                    return Err(Error::internal("the original was asked for, not an encode"))
                }
            }
        }
        Media::Episode(id) => {
            request
                .library
                .podcasts()
                .episode_audio(&request.caller, id)
                .await?
        }
    };
    match params {
        StreamParams::Direct => send_audio(request, &audio)
            .await
            .map_err(|error| Error::internal(error.message)),
        StreamParams::Encode(target) => {
            let body = request
                .library
                .media()
                .live_encode_audio(&request.caller, &audio, &target, offset)
                .await?;
            Ok((
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static(target.codec.mime_type()),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                ],
                Body::from_stream(body),
            )
                .into_response())
        }
    }
}

/// An error of the stream as an HTTP status and a line of text.
fn failure(error: &Error) -> Response {
    let status = match error.kind() {
        // A parameter, not a body: 400.
        ErrorKind::InvalidInput => StatusCode::BAD_REQUEST,
        kind => musiclib_media_http::status_of(kind),
    };
    let message = match error.kind() {
        // Never a bug's details.
        ErrorKind::Internal => "internal error".to_string(),
        _ => error.to_string(),
    };
    let mut response = (status, message).into_response();
    if let Some(seconds) = error.retry_after_seconds() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
