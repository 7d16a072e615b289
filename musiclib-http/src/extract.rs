//! Extractors: bearer authentication, the `?token=` form for media endpoints, and JSON, form
//! and query parsing whose rejections are [`ApiError`]s naming the offending field.

use axum::extract::{FromRequest, FromRequestParts, Request};
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

async fn authenticate(library: &Library, token: Option<&str>) -> Result<Caller, ApiError> {
    let token = token.ok_or_else(|| ApiError::unauthenticated("an access token is required"))?;
    Ok(library.accounts().authenticate(token).await?)
}

impl FromRequestParts<Library> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        library: &Library,
    ) -> Result<Self, Self::Rejection> {
        authenticate(library, bearer(parts)).await.map(Auth)
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
        authenticate(library, token.as_deref()).await.map(MediaAuth)
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
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|rejection| ApiError::invalid("body", rejection.body_text()))?;
        parse_json(&bytes).map(Json)
    }
}

pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_eof() || (inner.is_syntax() && (path == "." || path.contains('?'))) {
            ApiError::invalid("body", format!("malformed JSON: {inner}"))
        } else if inner.is_syntax() {
            // A value of the wrong kind where serde_json expected another (a number for an
            // enum's name, say) is reported as syntax: name the field.
            ApiError::invalid(path, format!("malformed or wrong kind of value: {inner}"))
        } else {
            let message = clean_serde_message(&inner.to_string());
            // An unknown field's path already ends in its name; at the top it is ".".
            let field = match (path.as_str(), unknown_field(&message)) {
                (".", Some(unknown)) => unknown.to_string(),
                (".", None) => "body".to_string(),
                _ => path,
            };
            ApiError::invalid(field, message)
        }
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
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|rejection| ApiError::invalid("body", rejection.body_text()))?;
        if is_form {
            parse_form(&bytes, "body").map(JsonOrForm)
        } else {
            parse_json(&bytes).map(JsonOrForm)
        }
    }
}
