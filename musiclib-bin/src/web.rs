//! The web player: the UI built into `web/dist` (`web/build.sh`), carried by the binary and
//! served at `/` beside `/api/v1` and `/rest`.
//!
//! Hashed assets (`/assets/…`) are cached for a year; `index.html` is revalidated on every
//! load and answers each of the app's routes (the player routes in the browser). The UI has
//! its own Content-Security-Policy: its own scripts, styles, images, audio and API only; no
//! inline script, no eval, no inline style. A binary built without the UI (no Node.js at
//! build time) answers `/` with one line saying how to get it.

use axum::body::Body;
use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rust_embed::Embed;

/// The built UI. Release builds carry the files; debug builds read them from `web/dist` at
/// run time (so a rebuilt UI shows without rebuilding the server).
#[derive(Embed)]
#[folder = "../web/dist/"]
#[allow_missing = true]
struct Ui;

/// The UI's Content-Security-Policy.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; worker-src 'self'; \
    manifest-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// The first path segments of the app's routes: `index.html` answers each of them and any
/// deeper path under it. Keep in step with the routes of `web/src`.
pub const APP_ROUTES: &[&str] = &[
    "login",
    "albums",
    "artists",
    "genres",
    "tracks",
    "search",
    "liked",
    "history",
    "playlists",
    "now-playing",
    "settings",
    "admin",
    "upload",
    "offline",
    "radio",
];

/// What `/` says when the binary was built without the UI.
const NO_UI: &str = "musiclib's web player is not built into this binary: run ./.ci/serve.sh \
    (it installs Node.js and builds web/ first), or build it with web/build.sh and rebuild.\n";

/// The UI's routes: `/`, the app's routes, `/assets/…` and the files at the root of the
/// build (the icon, the web manifest).
pub fn router() -> Router {
    let mut router = Router::new()
        .route("/", get(index))
        .route("/assets/{*file}", get(asset))
        .route("/{file}", get(root_file));
    for route in APP_ROUTES {
        router = router
            .route(&format!("/{route}"), get(index))
            .route(&format!("/{route}/{{*rest}}"), get(index));
    }
    // Gzip or Brotli, as the browser accepts (the budget of the first page is compressed).
    router.layer(tower_http::compression::CompressionLayer::new())
}

/// Whether the binary carries the UI.
pub fn built() -> bool {
    Ui::get("index.html").is_some()
}

async fn index() -> Response {
    match Ui::get("index.html") {
        Some(file) => send(file, "no-cache"),
        None => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            NO_UI,
        )
            .into_response(),
    }
}

async fn asset(Path(file): Path<String>) -> Response {
    match Ui::get(&format!("assets/{file}")) {
        // Vite names assets by their content's hash: a changed file is a new name.
        Some(file) => send(file, "public, max-age=31536000, immutable"),
        None => not_found(),
    }
}

async fn root_file(Path(file): Path<String>) -> Response {
    // Only files of the build's root; index.html is `/`.
    if file == "index.html" {
        return not_found();
    }
    match Ui::get(&file) {
        // Not hashed (the service worker must be fetched fresh to update).
        Some(found) => send(found, "no-cache"),
        None => not_found(),
    }
}

fn send(file: rust_embed::EmbeddedFile, cache: &'static str) -> Response {
    let mut headers = HeaderMap::new();
    let mime = file.metadata.mimetype();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    (StatusCode::OK, headers, Body::from(file.data.into_owned())).into_response()
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        r#"{"error":{"code":"not_found","message":"no such file of the web player"}}"#,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use tower::ServiceExt;

    use super::*;

    async fn get(path: &str) -> Response {
        router()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    /// Whether the UI is built; under the test command it must be (it builds it first).
    fn ui_built() -> bool {
        let required = std::env::var_os("MUSICLIB_TEST_SERVICES").is_some();
        assert!(
            built() || !required,
            "web/dist is not built: the test command runs .ci/web.sh before the tests"
        );
        built()
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn the_app_routes_answer_the_page_and_others_are_not_found() {
        let root = get("/").await;
        assert_eq!(root.status(), StatusCode::OK);
        let page = text(root).await;
        if ui_built() {
            assert!(page.contains("<script"), "{page}");
        } else {
            assert_eq!(page, NO_UI);
        }
        for route in [
            "/albums",
            "/albums/0193a1b2",
            "/playlists/x/y",
            "/now-playing",
        ] {
            let response = get(route).await;
            assert_eq!(response.status(), StatusCode::OK, "{route}");
            if built() {
                let csp = response.headers()[header::CONTENT_SECURITY_POLICY].clone();
                assert_eq!(csp, CSP, "{route}");
                assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
            }
            assert_eq!(text(response).await, page, "{route}");
        }
        for missing in ["/assets/nothing-here.js", "/nothing.txt", "/index.html"] {
            assert_eq!(
                get(missing).await.status(),
                StatusCode::NOT_FOUND,
                "{missing}"
            );
        }
    }

    #[tokio::test]
    async fn hashed_assets_are_cached_for_a_year() {
        if !ui_built() {
            return; // Built without the UI (outside the test command): nothing to serve.
        }
        let asset = Ui::iter()
            .find(|name| name.starts_with("assets/"))
            .expect("a build has assets");
        let response = get(&format!("/{asset}")).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            "public, max-age=31536000, immutable"
        );
        assert!(response.headers().contains_key(header::ETAG));
    }

    #[test]
    fn the_csp_allows_nothing_inline() {
        assert!(!CSP.contains("unsafe-inline"));
        assert!(!CSP.contains("unsafe-eval"));
        assert!(CSP.contains("frame-ancestors 'none'"));
    }
}
