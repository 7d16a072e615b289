//! What the whole application does for browsers and for its logs: the security headers on
//! every response, CORS for the origins `CORS_ALLOWED_ORIGINS` names (none by default), and
//! request targets with their secrets redacted before they are logged.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method, Uri};
use axum::response::Response;
use axum::Router;
use musiclib_core::config::CorsOrigins;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::set_header::SetResponseHeaderLayer;

/// The request id header (tower-http's `x_request_id` layers).
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// Which audio a stream serves (`original` or an Opus rendition).
const X_RENDITION: HeaderName = HeaderName::from_static("x-rendition");

/// `app` with the security headers and, when origins are allowed, CORS. Both wrap everything,
/// so errors, panics and preflight answers carry them too.
pub(crate) fn protect(app: Router, cors: &CorsOrigins) -> Router {
    let app = match cors_layer(cors) {
        Some(layer) => app
            .layer(layer)
            .layer(axum::middleware::map_response(only_for_allowed_origins)),
        None => app,
    };
    headers(cors.is_enabled())
        .into_iter()
        .fold(app, |app, (name, value)| {
            // A handler that sets one of these itself keeps its own.
            app.layer(SetResponseHeaderLayer::if_not_present(name, value))
        })
}

/// The security headers. The API serves JSON, media and XML, never a page, so nothing may be
/// run, framed or sniffed from it, and no request from it carries a referrer.
///
/// `Cross-Origin-Resource-Policy` decides whether pages of other origins may load a response
/// without CORS, as `<audio>`, `<img>` and JSONP `<script>` elements do: `same-origin` while
/// no other origin is allowed, `cross-origin` once CORS allows some, so the players of those
/// origins can play streams and show covers (each still needs its token: nothing is read on
/// ambient credentials, since the server sets no cookie).
pub(crate) fn headers(cors_enabled: bool) -> Vec<(HeaderName, HeaderValue)> {
    let resource_policy = if cors_enabled {
        "cross-origin"
    } else {
        "same-origin"
    };
    vec![
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        ),
        (
            HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static(resource_policy),
        ),
    ]
}

/// CORS for the allowed origins, or nothing (no CORS header at all, and preflights fall
/// through to the routes, which do not answer `OPTIONS`). Credentials mode stays off: the API
/// authenticates with a bearer token or `?token=`, never a cookie.
fn cors_layer(origins: &CorsOrigins) -> Option<CorsLayer> {
    let allow_origin = match origins {
        CorsOrigins::None => return None,
        CorsOrigins::Any => AllowOrigin::any(),
        CorsOrigins::List(origins) => AllowOrigin::list(
            origins
                .iter()
                .filter_map(|origin| HeaderValue::from_str(origin).ok()),
        ),
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow_origin)
            .allow_methods([
                Method::GET,
                Method::HEAD,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                header::RANGE,
                header::IF_NONE_MATCH,
                header::IF_MODIFIED_SINCE,
                header::IF_RANGE,
                X_REQUEST_ID,
            ])
            .expose_headers([
                header::CONTENT_RANGE,
                header::ACCEPT_RANGES,
                header::CONTENT_LENGTH,
                header::CONTENT_DISPOSITION,
                header::ETAG,
                header::LAST_MODIFIED,
                header::RETRY_AFTER,
                X_REQUEST_ID,
                X_RENDITION,
            ])
            .max_age(Duration::from_secs(3600)),
    )
}

/// Leaves no CORS header on a response that does not allow its origin (the CORS layer
/// describes the allowed methods and headers to anyone who asks), so another origin learns
/// nothing; `Vary` stays, for caches.
async fn only_for_allowed_origins(mut response: Response) -> Response {
    if !response
        .headers()
        .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
    {
        let names: Vec<HeaderName> = response
            .headers()
            .keys()
            .filter(|name| name.as_str().starts_with("access-control-"))
            .cloned()
            .collect();
        for name in names {
            response.headers_mut().remove(name);
        }
    }
    response
}

/// Query parameters whose values are secrets: access tokens (`token`, `access_token`), the
/// Subsonic credentials (`t` and its salt `s`, `p`, `apiKey`), keys and passwords.
const SECRET_PARAMETERS: &[&str] = &[
    "token",
    "access_token",
    "t",
    "s",
    "p",
    "apikey",
    "api_key",
    "password",
];

/// What a log shows of a request target: the path and the query, each secret value
/// replaced by `REDACTED` (names compared without case, after percent-decoding).
pub(crate) fn loggable_target(uri: &Uri) -> String {
    match uri.query() {
        Some(query) => format!("{}?{}", uri.path(), redact_query(query)),
        None => uri.path().to_string(),
    }
}

fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decoded: String = form_urlencoded::parse(name.as_bytes())
                .map(|(key, _)| key.into_owned())
                .collect();
            if !value.is_empty()
                && SECRET_PARAMETERS
                    .iter()
                    .any(|secret| decoded.eq_ignore_ascii_case(secret))
            {
                format!("{name}=REDACTED")
            } else {
                pair.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(target: &str) -> String {
        loggable_target(&target.parse::<Uri>().unwrap())
    }

    #[test]
    fn secrets_in_queries_are_redacted_and_the_rest_kept() {
        assert_eq!(logged("/api/v1/tracks"), "/api/v1/tracks");
        assert_eq!(
            logged("/api/v1/tracks/abc/stream?token=eyJhbGciOi.x.y&quality=high"),
            "/api/v1/tracks/abc/stream?token=REDACTED&quality=high"
        );
        assert_eq!(
            logged("/rest/stream.view?u=alice&t=26719a1196d2a940705a59634eb18eab&s=c19b2d&v=1.16.1&c=app&id=42"),
            "/rest/stream.view?u=alice&t=REDACTED&s=REDACTED&v=1.16.1&c=app&id=42"
        );
        assert_eq!(
            logged("/rest/ping?u=alice&p=enc:736573616d65&f=json"),
            "/rest/ping?u=alice&p=REDACTED&f=json"
        );
        assert_eq!(
            logged("/rest/ping?apiKey=K3Y&APIKEY=K3Y&api_key=K3Y&password=pw&access_token=tok"),
            "/rest/ping?apiKey=REDACTED&APIKEY=REDACTED&api_key=REDACTED&password=REDACTED&access_token=REDACTED"
        );
        // A name spelled with percent-escapes is still recognized.
        assert_eq!(
            logged("/rest/ping?api%4Bey=K3Y&%74=tok"),
            "/rest/ping?api%4Bey=REDACTED&%74=REDACTED"
        );
        // Names that merely contain a secret name, empty values and bare names stay.
        assert_eq!(
            logged("/x?tokens=1&st=2&t=&p&q=token"),
            "/x?tokens=1&st=2&t=&p&q=token"
        );
        for secret in ["eyJhbGciOi", "26719a11", "736573616d65", "K3Y"] {
            assert!(!logged(&format!(
                "/x?token={secret}&t={secret}&p={secret}&apiKey={secret}"
            ))
            .contains(secret));
        }
    }

    #[test]
    fn the_resource_policy_follows_cors() {
        let policy = |enabled| {
            headers(enabled)
                .into_iter()
                .find(|(name, _)| name == "cross-origin-resource-policy")
                .map(|(_, value)| value)
                .unwrap()
        };
        assert_eq!(policy(false), "same-origin");
        assert_eq!(policy(true), "cross-origin");
    }
}
