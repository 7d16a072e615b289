//! musiclib-subsonic: the legacy Subsonic 1.16.1 / OpenSubsonic interface of musiclib, an
//! axum (hyper) adapter over [`musiclib_core::Library`], mounted by the binary at `/rest`.
//!
//! - `/rest/{method}` and `/rest/{method}.view`, GET query or `application/x-www-form-urlencoded`
//!   POST (OpenSubsonic `formPost`), repeated keys for lists.
//! - `f=xml` (default), `f=json`, `f=jsonp&callback=…`: [`response`] writes one element tree
//!   in either encoding. Errors travel with HTTP 200 in a `status="failed"` envelope.
//! - Authentication by the user's app password ([`musiclib_core::auth::legacy`]): `u` + `t`
//!   + `s`, `u` + `p` (clear or `enc:` hex), or OpenSubsonic `apiKey` (the app password).
//! - Every id is the `/api/v1` id of the same thing (UUIDs), so both interfaces share
//!   playlists, likes (stars on songs), plays (scrobbles) and the play queue.
//!
//! Handlers live in [`api`], one module per group of the protocol.
#![warn(missing_docs)]

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, Method, Uri};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use musiclib_core::auth::legacy::LegacyCredentials;
use musiclib_core::auth::Caller;
use musiclib_core::Library;

mod api;
pub mod params;
pub mod response;

use params::Params;
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

/// The legacy interface as a router with its paths under `/rest`.
pub fn router(library: Library) -> Router {
    Router::new()
        .route("/rest/{method}", any(handle))
        .with_state(library)
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

async fn handle(
    State(library): State<Library>,
    Path(method): Path<String>,
    http_method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let form = (http_method == Method::POST && is_form).then_some(&body[..]);
    let params = Params::parse(uri.query(), form);
    let format = Format::parse(params.get("f"), params.get("callback"));
    let method = method.strip_suffix(".view").unwrap_or(&method).to_string();
    match run(library, &method, params, http_method, headers).await {
        Ok(Reply::Envelope(payload)) => response::ok(payload, &format),
        Ok(Reply::Media(response)) => response,
        Err(error) => response::failed(&error, &format),
    }
}

async fn run(
    library: Library,
    method: &str,
    params: Params,
    http_method: Method,
    headers: HeaderMap,
) -> Outcome {
    if method == "getOpenSubsonicExtensions" {
        return Ok(Reply::Envelope(Some(api::system::extensions(&library))));
    }
    let caller = authenticate(&library, &params).await?;
    let client = params.get("c").unwrap_or("unknown").to_string();
    let request = Request {
        library,
        caller,
        params,
        method: http_method,
        headers,
        client,
    };
    api::dispatch(method, &request).await
}

/// Resolves the caller from `u` with `t`+`s` or `p`, or from `apiKey`.
async fn authenticate(library: &Library, params: &Params) -> Result<Caller, SubsonicError> {
    if let Some(api_key) = params.get("apiKey") {
        if params.has("u") || params.has("p") || params.has("t") {
            return Err(SubsonicError {
                code: 43,
                message: "apiKey cannot be combined with u, p or t".into(),
            });
        }
        return library
            .accounts()
            .authenticate_api_key(api_key)
            .await
            .map_err(|error| match error.kind() {
                musiclib_core::ErrorKind::Unauthenticated => SubsonicError {
                    code: 44,
                    message: "invalid API key".into(),
                },
                _ => error.into(),
            });
    }
    let username = params.required("u")?;
    let credentials = match (params.get("t"), params.get("p")) {
        (Some(token), _) => LegacyCredentials::Token {
            token: token.to_string(),
            salt: params.required("s")?.to_string(),
        },
        (None, Some(password)) => LegacyCredentials::Password(password.to_string()),
        (None, None) => return Err(SubsonicError::missing("t and s, or p")),
    };
    library
        .accounts()
        .authenticate_legacy(username, &credentials)
        .await
        .map_err(|error| match error.kind() {
            musiclib_core::ErrorKind::Unauthenticated => SubsonicError::wrong_credentials(),
            _ => error.into(),
        })
}
