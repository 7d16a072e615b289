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

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, Method, Uri};
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
    ("songLyrics", &[1]),
    ("sonicSimilarity", &[1]),
    ("topSongsByArtistId", &[1]),
    ("transcodeOffset", &[1]),
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
}

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
}

impl From<SubsonicError> for Refusal {
    fn from(error: SubsonicError) -> Refusal {
        Refusal {
            error,
            retry_after: None,
        }
    }
}

async fn handle(
    State(library): State<Library>,
    connection: Option<Extension<ConnectInfo<SocketAddr>>>,
    http_method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Without the connection's address (a router called directly, as in tests), failed
    // sign-ins are throttled per account alone.
    let client = connection.map(|Extension(ConnectInfo(address))| address.ip());
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let form = (http_method == Method::POST && is_form).then_some(&body[..]);
    let params = Params::parse(uri.query(), form);
    let format = Format::parse(params.get("f"), params.get("callback"));
    // The last segment of the path, wherever the router is mounted.
    let method = uri.path().rsplit('/').next().unwrap_or_default();
    let method = method.strip_suffix(".view").unwrap_or(method).to_string();
    match run(library, &method, params, http_method, headers, client).await {
        Ok(Reply::Envelope(payload)) => response::ok(payload, &format),
        Ok(Reply::Media(response)) => response,
        Err(refusal) => {
            let mut response = response::failed(&refusal.error, &format);
            if let Some(seconds) = refusal.retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, seconds.into());
            }
            response
        }
    }
}

async fn run(
    library: Library,
    method: &str,
    params: Params,
    http_method: Method,
    headers: HeaderMap,
    client: Option<IpAddr>,
) -> Result<Reply, Refusal> {
    if method == "getOpenSubsonicExtensions" {
        return Ok(Reply::Envelope(Some(api::system::extensions(&library))));
    }
    let caller = authenticate(&library, &params, client).await?;
    let client = params.get("c").unwrap_or("unknown").to_string();
    let request = Request {
        library,
        caller,
        params,
        method: http_method,
        headers,
        client,
    };
    Ok(api::dispatch(method, &request).await?)
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
