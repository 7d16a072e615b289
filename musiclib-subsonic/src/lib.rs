//! musiclib-subsonic: the legacy Subsonic 1.16.1 / OpenSubsonic interface of musiclib, an
//! axum (hyper) adapter over [`musiclib_core::Library`], mounted by the binary at `/rest`.
//!
//! - `/rest/{method}` and `/rest/{method}.view`, GET query or `application/x-www-form-urlencoded`
//!   POST (OpenSubsonic `formPost`), repeated keys for lists.
//! - `f=xml` (default), `f=json`, `f=jsonp&callback=…`: [`response`] writes one element tree
//!   in either encoding. Errors travel with HTTP 200 in a `status="failed"` envelope.
//! - Authentication by the user's app password ([`musiclib_core::auth::legacy`]): `u` + `t`
//!   + `s`, `u` + `p` (clear or `enc:` hex), or OpenSubsonic `apiKey` (the app password).
//! - Failed authentications are throttled by core per account and per client address; a
//!   refused request gets the failed envelope (code 0, saying when to retry) and a
//!   `Retry-After` header.
//! - Every id is the `/api/v1` id of the same thing (UUIDs), so both interfaces share
//!   playlists, likes (stars on songs), plays (scrobbles) and the play queue.
//!
//! Handlers live in [`api`], one module per group of the protocol.
#![warn(missing_docs)]

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, Method};
use axum::response::Response;
use axum::routing::any;
use axum::{Extension, Router};
use musiclib_core::auth::Caller;
use musiclib_core::Library;

mod api;
pub mod params;
pub mod response;

use params::{Credentials, Params};
use response::{Element, Format, SubsonicError};

/// The OpenSubsonic extensions this server implements, with their versions.
/// `sonicSimilarity` is advertised only while sound analysis is on ([`extensions`]).
pub const EXTENSIONS: &[(&str, &[i64])] = &[
    ("apiKeyAuthentication", &[1]),
    ("formPost", &[1]),
    ("getPodcastEpisode", &[1]),
    ("indexBasedQueue", &[1]),
    ("playbackReport", &[1]),
    ("songLyrics", &[1, 2]),
    ("sonicSimilarity", &[1]),
    ("topSongsByArtistId", &[1]),
    ("transcodeOffset", &[1]),
    ("transcoding", &[1]),
];

/// The extensions `library` offers: [`EXTENSIONS`], without `sonicSimilarity` when its
/// sound analysis is off (`SOUND_ANALYSIS=false`: no track has sound features).
pub fn extensions(library: &Library) -> Vec<(&'static str, &'static [i64])> {
    let sound = library.config().recommend.sound_analysis;
    EXTENSIONS
        .iter()
        .copied()
        .filter(|(name, _)| sound || *name != "sonicSimilarity")
        .collect()
}

/// Every method the interface runs after sign-in (its dispatcher's table), for tests that
/// must cover each one, such as the permission table.
pub fn methods() -> &'static [&'static str] {
    api::METHODS
}

/// The legacy interface as a router with its paths under `/rest`.
///
/// Every method has a route of its own (and its `.view` twin), so request metrics name the
/// method (`/rest/search3`); `/rest/{method}` answers the rest (error 0, not supported).
pub fn router(library: Library) -> Router {
    let mut router = Router::new().route("/rest/{method}", any(handle));
    // Answered before sign-in, outside `api::dispatch`.
    let unauthenticated: &[&str] = &["getOpenSubsonicExtensions"];
    for method in [api::METHODS, unauthenticated].concat() {
        router = router
            .route(&format!("/rest/{method}"), any(handle))
            .route(&format!("/rest/{method}.view"), any(handle));
    }
    router.with_state(library)
}

/// One request as the handlers see it.
pub(crate) struct Request {
    pub library: Library,
    pub caller: Caller,
    pub params: Params,
    /// GET, POST, or HEAD (media: the headers without the bytes).
    pub method: Method,
    pub headers: HeaderMap,
    pub client: String,
    /// A JSON body (`application/json`), read only for the methods that take one
    /// ([`JSON_METHODS`]), up to [`MAX_BODY_BYTES`].
    pub json_body: Option<bytes::Bytes>,
}

/// The methods whose body is JSON (OpenSubsonic `transcoding`'s client profiles).
const JSON_METHODS: &[&str] = &["getTranscodeDecision"];

/// What a handler answers.
pub(crate) enum Reply {
    /// A response envelope, with its payload element if any.
    Envelope(Option<Element>),
    /// Bytes of media (audio, an image), already a full response.
    Media(Response),
}

pub(crate) type Outcome = Result<Reply, SubsonicError>;

/// A request's failure: the protocol error, and for a throttled sign-in the seconds to wait
/// (sent as `Retry-After` beside the envelope).
struct Refusal {
    error: SubsonicError,
    retry_after: Option<u64>,
    /// An HTTP status other than 200, for a request refused before its method ran (a body
    /// too large to read).
    status: Option<axum::http::StatusCode>,
}

impl From<SubsonicError> for Refusal {
    fn from(error: SubsonicError) -> Refusal {
        Refusal {
            error,
            retry_after: None,
            status: None,
        }
    }
}

impl Refusal {
    fn too_large() -> Refusal {
        Refusal {
            status: Some(axum::http::StatusCode::PAYLOAD_TOO_LARGE),
            ..Refusal::from(SubsonicError::generic(format!(
                "the request body is larger than {MAX_BODY_BYTES} bytes"
            )))
        }
    }

    fn unreadable() -> Refusal {
        Refusal {
            status: Some(axum::http::StatusCode::BAD_REQUEST),
            ..Refusal::from(SubsonicError::generic("the request body could not be read"))
        }
    }
}

/// Most of a form body read before its request is authenticated: room for the credentials
/// and any ordinary request. A longer body is authenticated from the parameters in this
/// first part (clients send `u`, `t`, `s` or `apiKey` first), then read on.
pub const UNAUTHENTICATED_BODY_BYTES: usize = 64 * 1024;

/// Most of a form body read at all: a `createPlaylist` of 10,000 songs is about 450 KiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

async fn handle(
    State(library): State<Library>,
    connection: Option<Extension<ConnectInfo<SocketAddr>>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    // Without the connection's address (a router called directly, as in tests), failed
    // sign-ins are throttled per account alone.
    let client = connection.map(|Extension(ConnectInfo(address))| {
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|value| value.to_str().ok());
        library
            .config()
            .trusted_proxies
            .client(address.ip(), forwarded)
    });
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let is_form = content_type.starts_with("application/x-www-form-urlencoded");
    let query = parts.uri.query();
    // The last segment of the path, wherever the router is mounted.
    let method = parts.uri.path().rsplit('/').next().unwrap_or_default();
    let method = method.strip_suffix(".view").unwrap_or(method).to_string();
    let format_of = |params: &Params| Format::parse(params.get("f"), params.get("callback"));
    let refuse = |refusal: Refusal, params: &Params| {
        let mut response = response::failed(&refusal.error, &format_of(params));
        if let Some(seconds) = refusal.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.into());
        }
        if let Some(status) = refusal.status {
            *response.status_mut() = status;
        }
        response
    };
    let form = parts.method == Method::POST && is_form;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let query_params = Params::parse(query, None);
    let json = parts.method == Method::POST
        && content_type.starts_with("application/json")
        && JSON_METHODS.contains(&method.as_str());
    if (form || json) && declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return refuse(Refusal::too_large(), &query_params);
    }
    // A body that is neither a form nor a method's JSON is never read; JSON only once the
    // caller is known.
    let (head, rest, json_body) = if form {
        match body::read_head(body, UNAUTHENTICATED_BODY_BYTES).await {
            Ok((head, rest)) => (head, rest, None),
            Err(refusal) => return refuse(refusal, &query_params),
        }
    } else {
        (bytes::BytesMut::new(), None, json.then_some(body))
    };
    let head_params = Params::parse(query, Some(body::complete_pairs(&head, rest.is_some())));
    if method == "getOpenSubsonicExtensions" {
        return response::ok(
            Some(api::system::extensions(&library)),
            &format_of(&head_params),
        );
    }
    let caller = match authenticate(&library, &head_params, client).await {
        Ok(caller) => caller,
        Err(refusal) => return refuse(refusal, &head_params),
    };
    let params = match rest {
        None => head_params,
        Some(rest) => match body::read_rest(head, rest, MAX_BODY_BYTES).await {
            Ok(whole) => Params::parse(query, Some(&whole)),
            Err(refusal) => return refuse(refusal, &head_params),
        },
    };
    let json_body = match json_body {
        Some(body) => match body::read_rest(bytes::BytesMut::new(), body, MAX_BODY_BYTES).await {
            Ok(whole) => Some(whole.freeze()),
            Err(refusal) => return refuse(refusal, &params),
        },
        None => None,
    };
    let format = format_of(&params);
    let request = Request {
        client: params.get("c").unwrap_or("unknown").to_string(),
        library,
        caller,
        params,
        method: parts.method,
        headers: parts.headers,
        json_body,
    };
    match api::dispatch(&method, &request).await {
        Ok(Reply::Envelope(payload)) => response::ok(payload, &format),
        Ok(Reply::Media(response)) => response,
        Err(error) => refuse(error.into(), &request.params),
    }
}

/// Reading a form body within bounds.
mod body {
    use axum::body::Body;
    use bytes::BytesMut;
    use http_body_util::BodyExt;

    use super::Refusal;

    /// Reads `body` until it ends or `limit` bytes are read: the bytes, and the rest of the
    /// body when it did not end.
    pub(super) async fn read_head(
        mut body: Body,
        limit: usize,
    ) -> Result<(BytesMut, Option<Body>), Refusal> {
        let mut head = BytesMut::new();
        while head.len() < limit {
            match body.frame().await {
                None => return Ok((head, None)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        if head.len() + data.len() > super::MAX_BODY_BYTES {
                            return Err(Refusal::too_large());
                        }
                        head.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) => return Err(Refusal::unreadable()),
            }
        }
        Ok((head, Some(body)))
    }

    /// Reads the rest of a body whose `head` was read, up to `limit` bytes in all.
    pub(super) async fn read_rest(
        mut head: BytesMut,
        mut rest: Body,
        limit: usize,
    ) -> Result<BytesMut, Refusal> {
        while let Some(frame) = rest.frame().await {
            let frame = frame.map_err(|_| Refusal::unreadable())?;
            if let Ok(data) = frame.into_data() {
                if head.len() + data.len() > limit {
                    return Err(Refusal::too_large());
                }
                head.extend_from_slice(&data);
            }
        }
        Ok(head)
    }

    /// The part of a form read so far that holds whole parameters: up to its last `&` when
    /// more is to come (the pair after it may be cut).
    pub(super) fn complete_pairs(head: &[u8], more: bool) -> &[u8] {
        if !more {
            return head;
        }
        match head.iter().rposition(|&byte| byte == b'&') {
            Some(end) => &head[..end],
            None => &[],
        }
    }
}
/// Resolves the caller from `u` with `t`+`s` or `p`, or from `apiKey`, coming from `client`.
async fn authenticate(
    library: &Library,
    params: &Params,
    client: Option<IpAddr>,
) -> Result<Caller, Refusal> {
    // Wrong credentials get the protocol's code; a throttled sign-in its wait as well.
    let refusal = |error: musiclib_core::Error, wrong: fn() -> SubsonicError| Refusal {
        retry_after: error.retry_after_seconds(),
        status: None,
        error: match error.kind() {
            musiclib_core::ErrorKind::Unauthenticated => wrong(),
            _ => error.into(),
        },
    };
    match params.credentials()? {
        Credentials::ApiKey(api_key) => library
            .accounts()
            .authenticate_api_key(api_key, client)
            .await
            .map_err(|error| {
                refusal(error, || SubsonicError {
                    code: 44,
                    message: "invalid API key".into(),
                })
            }),
        Credentials::Legacy {
            username,
            credentials,
        } => library
            .accounts()
            .authenticate_legacy(username, &credentials, client)
            .await
            .map_err(|error| refusal(error, SubsonicError::wrong_credentials)),
    }
}
