//! Extractors: bearer authentication, the `?token=` form for media endpoints, and JSON, form
//! and query parsing whose rejections are [`ApiError`]s naming the offending field.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use musiclib_core::auth::Caller;
use musiclib_core::Library;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The authenticated caller, from `Authorization: Bearer …`.
#[derive(Debug, Clone)]
pub struct Auth(pub Caller);

/// The authenticated caller of a media endpoint (stream and cover routes, added with
/// streaming and cover art): bearer header or `?token=` (audio and image
/// elements cannot send headers).
#[derive(Debug, Clone)]
#[allow(dead_code)]
pub struct MediaAuth(pub Caller);

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

async fn authenticate(
    library: &Library,
    token: Option<&str>,
    parts: &Parts,
) -> Result<Caller, ApiError> {
    let token = token.ok_or_else(|| ApiError::unauthenticated("an access token is required"))?;
    let client = client_address(parts, library);
    Ok(library.accounts().authenticate_from(token, client).await?)
}

/// The address a request comes from: its connection's (set by the binary's listener), or,
/// from a trusted proxy (`TRUSTED_PROXIES`), the client its `X-Forwarded-For` names. `None`
/// for a router called without a connection (tests, embedding).
pub(crate) fn client_address(parts: &Parts, library: &Library) -> Option<IpAddr> {
    let ConnectInfo(peer) = parts.extensions.get::<ConnectInfo<SocketAddr>>()?;
    let forwarded = parts
        .headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok());
    Some(library.config().trusted_proxies.client(peer.ip(), forwarded))
}

/// The client's address ([`client_address`]), for the sign-in throttle.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub Option<IpAddr>);

impl FromRequestParts<Library> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        library: &Library,
    ) -> Result<Self, Self::Rejection> {
        Ok(ClientAddress(client_address(parts, library)))
    }
}

impl FromRequestParts<Library> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        library: &Library,
    ) -> Result<Self, Self::Rejection> {
        authenticate(library, bearer(parts), parts).await.map(Auth)
    }
}

impl FromRequestParts<Library> for MediaAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        library: &Library,
    ) -> Result<Self, Self::Rejection> {
        let query_token = parts.uri.query().and_then(|query| {
            serde_urlencoded::from_str::<Vec<(String, String)>>(query)
                .ok()?
                .into_iter()
                .find(|(key, _)| key == "token")
                .map(|(_, value)| value)
        });
        let token = bearer(parts).map(str::to_string).or(query_token);
        authenticate(library, token.as_deref(), parts)
            .await
            .map(MediaAuth)
    }
}

/// Query string parsed into `T`; a bad parameter is a 422 naming it.
#[derive(Debug, Clone)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parse_form(parts.uri.query().unwrap_or("").as_bytes(), "query").map(Query)
    }
}

/// Parses `application/x-www-form-urlencoded` text (a query string or a form body); a bad
/// field is a 422 naming it, or `whole` when the input as a whole is wrong.
fn parse_form<T: DeserializeOwned>(bytes: &[u8], whole: &str) -> Result<T, ApiError> {
    let deserializer = serde_urlencoded::Deserializer::new(form_urlencoded::parse(bytes));
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let field = error.path().to_string();
        let field = if field == "." {
            whole.to_string()
        } else {
            field
        };
        ApiError::invalid(field, clean_serde_message(&error.inner().to_string()))
    })
}

/// A JSON body parsed into `T`; malformed JSON or a bad field is a 422 naming it.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(limit_json_body(request), state)
            .await
            .map_err(body_rejection)?;
        parse_json(&bytes).map(Json)
    }
}

/// The largest JSON or form body read: far above any real request (a sync push of its
/// 5,000 events is about 1 MiB), far below what an upload may be.
pub(crate) const MAX_JSON_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The request with its body limited to [`MAX_JSON_BODY_BYTES`] (the router's own limit is
/// sized for uploads).
fn limit_json_body(request: Request) -> Request {
    request
        .map(|body| axum::body::Body::new(http_body_util::Limited::new(body, MAX_JSON_BODY_BYTES)))
}

/// A body that could not be read: too large (413), or cut off (422).
fn body_rejection(rejection: axum::extract::rejection::BytesRejection) -> ApiError {
    if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            rejection.status(),
            "payload_too_large",
            "the body is larger than the server accepts",
        )
    } else {
        ApiError::invalid("body", rejection.body_text())
    }
}

/// Parses a JSON body. Before the fields are read, a number with no fraction is taken as the
/// integer it is (`20.0` is a valid JSON Schema `integer`), and a body that is not an object
/// is refused: every body of the API is an object (serde would otherwise read an array as a
/// struct's fields in order).
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut value: serde_json::Value = parse_json_value(bytes)?;
    if value.is_array() {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    whole_numbers_as_integers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = clean_serde_message(&inner.to_string());
        let field = match (path.as_str(), unknown_field(&message)) {
            (".", Some(unknown)) => unknown.to_string(),
            (".", None) => "body".to_string(),
            _ => path,
        };
        ApiError::invalid(field, message)
    })
}

/// Integral floats (`3.0`) as integers, anywhere in `value`.
fn whole_numbers_as_integers(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Number(number) => {
            if let Some(float) = number
                .as_f64()
                .filter(|_| !number.is_i64() && !number.is_u64())
            {
                // 2^53: past it, a float no longer names one integer.
                if float.fract() == 0.0 && float.abs() <= 9_007_199_254_740_992.0 {
                    *number = serde_json::Number::from(float as i64);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        serde_json::Value::Object(fields) => {
            fields.values_mut().for_each(whole_numbers_as_integers)
        }
        _ => {}
    }
}

/// The body as a JSON value; malformed JSON is a 422 naming `body` (or the place it broke).
fn parse_json_value(bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|error| {
        ApiError::invalid(
            "body",
            format!(
                "malformed JSON: {}",
                clean_serde_message(&error.to_string())
            ),
        )
    })
}

/// The name in serde's "unknown field `name`, expected …", so the error names the field.
fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// Drops serde's " at line 1 column 7" suffix, which means nothing to an API client.
fn clean_serde_message(message: &str) -> String {
    match message.find(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

/// A body that is JSON or `application/x-www-form-urlencoded` (OAuth2 password-flow clients).
#[derive(Debug, Clone)]
pub struct JsonOrForm<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonOrForm<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_form = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
        let bytes = axum::body::Bytes::from_request(limit_json_body(request), state)
            .await
            .map_err(body_rejection)?;
        if is_form {
            parse_form(&bytes, "body").map(JsonOrForm)
        } else {
            parse_json(&bytes).map(JsonOrForm)
        }
    }
}
