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
    Some(
        library
            .config()
            .trusted_proxies
            .client(peer.ip(), forwarded),
    )
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

/// A JSON body parsed into `T`; malformed JSON or a bad field is a 422 naming it. The body is
/// at most `LIMIT` bytes (413 past it, refused from its `Content-Length` before any of it is
/// read), parsed straight into `T` (never into a tree of values first).
#[derive(Debug, Clone)]
pub struct Json<T, const LIMIT: usize = MAX_JSON_BODY_BYTES>(pub T);

impl<T: DeserializeOwned, S: Send + Sync, const LIMIT: usize> FromRequest<S> for Json<T, LIMIT> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(request, LIMIT).await?;
        parse_json(&bytes).map(Json)
    }
}

/// The largest JSON or form body read: far above any real request (a sync push of its
/// 5,000 events is about 1 MiB), far below what an upload may be.
pub(crate) const MAX_JSON_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The largest body of a route anyone may call without signing in (a login, a
/// registration): a name and a password are well under a kibibyte.
pub(crate) const MAX_UNAUTHENTICATED_BODY_BYTES: usize = 16 * 1024;

/// A request's body, at most `limit` bytes: a larger declared `Content-Length` is refused
/// before anything is read (413), and a body that runs past the limit while it streams is
/// refused as soon as it does.
pub(crate) async fn read_body(request: Request, limit: usize) -> Result<bytes::Bytes, ApiError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large(limit));
    }
    let body = http_body_util::Limited::new(request.into_body(), limit);
    match http_body_util::BodyExt::collect(body).await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large(limit)),
        Err(error) => Err(ApiError::invalid(
            "body",
            format!("the body could not be read: {error}"),
        )),
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("the body is larger than this route accepts ({limit} bytes)"),
    )
}

/// A body of at most `LIMIT` bytes, as bytes ([`read_body`]).
#[derive(Debug, Clone)]
pub struct LimitedBytes<const LIMIT: usize>(pub bytes::Bytes);

impl<S: Send + Sync, const LIMIT: usize> FromRequest<S> for LimitedBytes<LIMIT> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        read_body(request, LIMIT).await.map(LimitedBytes)
    }
}

/// Parses a JSON body straight into `T`. A number with no fraction is taken as the integer
/// it is (`20.0` is a valid JSON Schema `integer`; [`integral_numbers`]), and a body that is
/// an array is refused: every body of the API is an object (serde would otherwise read an
/// array as a struct's fields in order).
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    let text = integral_numbers(bytes);
    let malformed = |error: serde_json::Error| {
        ApiError::invalid(
            "body",
            format!(
                "malformed JSON: {}",
                clean_serde_message(&error.to_string())
            ),
        )
    };
    // Well-formed first (a pass that keeps nothing): what fails after is a field's fault.
    serde_json::from_slice::<serde::de::IgnoredAny>(&text).map_err(malformed)?;
    let mut deserializer = serde_json::Deserializer::from_slice(&text);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
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

/// The JSON text with every number that has a fraction or an exponent but is a whole number
/// (`5.0`, `2e1`) written as that integer, so it reads into an integer field; other text is
/// untouched (strings are skipped whole). One pass, a copy only when something changes.
fn integral_numbers(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => {
                // Skip the string, escapes included.
                at += 1;
                while at < text.len() && text[at] != b'"' {
                    at += if text[at] == b'\\' { 2 } else { 1 };
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                at += 1;
                while at < text.len()
                    && matches!(text[at], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    at += 1;
                }
                let token = &text[start..at];
                if !token.iter().any(|byte| matches!(byte, b'.' | b'e' | b'E'))
                    || !is_json_number(token)
                {
                    continue;
                }
                let whole = std::str::from_utf8(token)
                    .ok()
                    .and_then(|token| token.parse::<f64>().ok())
                    // 2^53: past it, a float no longer names one integer.
                    .filter(|float| float.fract() == 0.0 && float.abs() <= 9_007_199_254_740_992.0);
                if let Some(whole) = whole {
                    let out = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
                    out.extend_from_slice(&text[copied..start]);
                    out.extend_from_slice((whole as i64).to_string().as_bytes());
                    copied = at;
                }
            }
            _ => at += 1,
        }
    }
    match out {
        None => std::borrow::Cow::Borrowed(text),
        Some(mut out) => {
            out.extend_from_slice(&text[copied.min(text.len())..]);
            std::borrow::Cow::Owned(out)
        }
    }
}

/// Whether `token` is a number as JSON writes one: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn is_json_number(token: &[u8]) -> bool {
    let mut at = usize::from(token.first() == Some(&b'-'));
    let digits = |at: &mut usize| {
        let start = *at;
        while token.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at - start
    };
    let whole = digits(&mut at);
    if whole == 0 || (whole > 1 && token[at - whole] == b'0') {
        return false;
    }
    if token.get(at) == Some(&b'.') {
        at += 1;
        if digits(&mut at) == 0 {
            return false;
        }
    }
    if matches!(token.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(token.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        if digits(&mut at) == 0 {
            return false;
        }
    }
    at == token.len()
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

/// A body that is JSON or `application/x-www-form-urlencoded` (OAuth2 password-flow clients),
/// at most `LIMIT` bytes.
#[derive(Debug, Clone)]
pub struct JsonOrForm<T, const LIMIT: usize = MAX_JSON_BODY_BYTES>(pub T);

impl<T: DeserializeOwned, S: Send + Sync, const LIMIT: usize> FromRequest<S>
    for JsonOrForm<T, LIMIT>
{
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let is_form = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
        let bytes = read_body(request, LIMIT).await?;
        if is_form {
            parse_form(&bytes, "body").map(JsonOrForm)
        } else {
            parse_json(&bytes).map(JsonOrForm)
        }
    }
}

/// A caller who is an admin (the decision is core's, `Caller::require_admin`), checked from
/// the request's head: an admin route refuses others before it reads their body.
#[derive(Debug, Clone)]
pub struct AdminAuth(pub Caller);

impl FromRequestParts<Library> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        library: &Library,
    ) -> Result<Self, Self::Rejection> {
        let Auth(caller) = Auth::from_request_parts(parts, library).await?;
        caller.require_admin()?;
        Ok(AdminAuth(caller))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_with_fractions_become_integers_and_strings_stay() {
        let text = br#"{"a":5.0,"b":"5.0 \" 2e1","c":[2e1,-3.00,1.5,7,1e400],"d":-0.0}"#;
        assert_eq!(
            String::from_utf8(integral_numbers(text).into_owned()).unwrap(),
            r#"{"a":5,"b":"5.0 \" 2e1","c":[20,-3,1.5,7,1e400],"d":0}"#
        );
        assert!(matches!(
            integral_numbers(br#"{"a":1,"b":"x"}"#),
            std::borrow::Cow::Borrowed(_)
        ));
        // A cut-off string or number is left for the parser to refuse.
        assert_eq!(&*integral_numbers(br#"{"a":"abc"#), br#"{"a":"abc"#);
        assert_eq!(&*integral_numbers(b"{\"a\":2."), b"{\"a\":2.");
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        limit: u32,
        name: Option<String>,
    }

    #[test]
    fn bodies_are_read_into_their_type_with_fields_named() {
        assert_eq!(parse_json::<Body>(br#"{"limit": 20.0}"#).unwrap().limit, 20);
        let error = parse_json::<Body>(br#"{"limit": 2.5}"#).unwrap_err();
        assert_eq!(error.status().as_u16(), 422);
        assert!(format!("{error:?}").contains("limit"), "{error:?}");
        let error = parse_json::<Body>(br#"{"limit": 1, "extra": 2}"#).unwrap_err();
        assert!(format!("{error:?}").contains("extra"), "{error:?}");
        let error = parse_json::<Body>(br#"[20, "x"]"#).unwrap_err();
        assert!(format!("{error:?}").contains("JSON object"), "{error:?}");
        let error = parse_json::<Body>(br#"{"limit": 1} trailing"#).unwrap_err();
        assert!(format!("{error:?}").contains("malformed JSON"), "{error:?}");
        let error = parse_json::<Body>(br#"{"limit": "#).unwrap_err();
        assert!(format!("{error:?}").contains("malformed JSON"), "{error:?}");
    }
}
