//! The web player: the UI built into `web/dist` (`web/build.sh`), carried by the binary and
//! served at `/` beside `/api/v1` and `/rest`.
//!
//! Hashed assets (`/assets/…`) are cached for a year; `index.html` is revalidated on every
//! load and answers each of the app's routes (the player routes in the browser). The UI has
//! its own Content-Security-Policy: its own scripts, styles, images, audio and API only; no
//! inline script, no eval, no inline style. A binary built without the UI (no Node.js at
//! build time) answers `/` with one line saying how to get it.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use musiclib_core::shares::ShareId;
use musiclib_core::{ErrorKind, Library};
use rust_embed::Embed;

/// The built UI, carried by the binary in every profile (rust-embed's `debug-embed`): the
/// test command packages its debug build into the Debian package and the container image,
/// where no `web/dist` is beside it. A rebuilt UI shows after `cargo build` (build.rs
/// watches `web/dist`).
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
    "shares",
    "folders",
    "podcasts",
    "stations",
];

/// What `/` says when the binary was built without the UI.
const NO_UI: &str = "musiclib's web player is not built into this binary: run ./.ci/serve.sh \
    (it installs Node.js and builds web/ first), or build it with web/build.sh and rebuild.\n";

/// The UI's routes: `/`, the app's routes, `/assets/…`, the files at the root of the build
/// (the icon, the web manifest), and a share's page `/s/{id}` (the page with the share's
/// Open Graph tags, for the card a chat app shows of the link).
pub fn router(library: Library) -> Router {
    let shares = Router::new()
        .route("/s/{id}", get(share_page))
        .with_state(library);
    let mut router = Router::new()
        .merge(shares)
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

/// A share's page: `index.html` with the share's title, description and cover as Open Graph
/// tags (escaped: they are a user's text), so a chat app's preview of the link shows them.
/// An unknown, expired or revoked share still gets the page (it says why), with status 404 or
/// 410 and no tags.
async fn share_page(
    State(library): State<Library>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(file) = Ui::get("index.html") else {
        return index().await;
    };
    let page = String::from_utf8_lossy(&file.data).into_owned();
    let found = match ShareId::parse(&id) {
        Ok(id) => library.shares().preview(&id).await.map(|share| (id, share)),
        Err(error) => Err(error),
    };
    let (status, page) = match found {
        Ok((id, share)) => {
            let origin = musiclib_http::v1::shares::share_url(&library, &headers, &id);
            let base = origin.trim_end_matches(&format!("/s/{id}")).to_string();
            let description = share.description.clone().unwrap_or_else(|| {
                let count = share.tracks.len();
                format!(
                    "{} shared {} on musiclib",
                    share.owner_name,
                    if count == 1 {
                        "a track".to_string()
                    } else {
                        format!("{count} tracks")
                    }
                )
            });
            let mut tags = format!(
                "<meta property=\"og:type\" content=\"music.{}\" />\n    \
                 <meta property=\"og:site_name\" content=\"musiclib\" />\n    \
                 <meta property=\"og:title\" content=\"{}\" />\n    \
                 <meta property=\"og:description\" content=\"{}\" />\n    \
                 <meta property=\"og:url\" content=\"{}\" />\n    \
                 <meta name=\"twitter:card\" content=\"summary\" />\n    ",
                match share.target.kind() {
                    "album" => "album",
                    "playlist" => "playlist",
                    _ => "song",
                },
                escape(&share.title),
                escape(&description),
                escape(&origin),
            );
            if share.tracks.iter().any(|track| track.has_cover) {
                tags.push_str(&format!(
                    "<meta property=\"og:image\" content=\"{}\" />\n    ",
                    escape(&format!("{base}/api/v1/shared/{id}/cover?size=600"))
                ));
            }
            let title = format!("<title>{} · musiclib</title>", escape(&share.title));
            let page = page.replacen("<title>musiclib</title>", &format!("{tags}{title}"), 1);
            (StatusCode::OK, page)
        }
        Err(error) if error.kind() == ErrorKind::Gone => (StatusCode::GONE, page),
        Err(error) if error.kind() == ErrorKind::NotFound => (StatusCode::NOT_FOUND, page),
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, page),
    };
    let mut response = send(file, "no-cache");
    *response.status_mut() = status;
    // The page differs from index.html: neither its validator nor its length hold.
    response.headers_mut().remove(header::ETAG);
    *response.body_mut() = Body::from(page);
    response
}

/// Text as an HTML attribute's value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
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
        let test =
            musiclib_core::testing::TestLibrary::new(musiclib_core::testing::Backend::Embedded)
                .await;
        router(test.library.clone())
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

    #[tokio::test]
    async fn a_share_page_carries_its_open_graph_tags_escaped() {
        use musiclib_core::shares::{NewShare, ShareTarget};
        if !ui_built() {
            return; // Built without the UI (outside the test command): no page to fill.
        }
        let test =
            musiclib_core::testing::TestLibrary::new(musiclib_core::testing::Backend::Embedded)
                .await;
        let library = test.library.clone();
        let user = library
            .accounts()
            .create_user("ann", "ann-password", false)
            .await
            .unwrap();
        let caller = musiclib_core::auth::Caller { user };
        let wav = musiclib_core::testing::wav_tone(1);
        let track = library
            .ingest()
            .upload_track(&caller, Some("Quiet \"Night\".wav"), wav.as_slice())
            .await
            .unwrap()
            .track;
        let share = library
            .shares()
            .create(
                &caller,
                NewShare {
                    target: ShareTarget::Tracks(vec![track.id.clone()]),
                    description: Some("<script>alert(1)</script> & more".into()),
                    expires_at: None,
                    downloadable: false,
                },
            )
            .await
            .unwrap();
        let page = |path: String| {
            let router = router(library.clone());
            async move {
                router
                    .oneshot(
                        Request::get(path)
                            .header(header::HOST, "music.example.com")
                            .body(Body::empty())
                            .unwrap(),
                    )
                    .await
                    .unwrap()
            }
        };
        let response = page(format!("/s/{}", share.id)).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_SECURITY_POLICY], CSP);
        let html = text(response).await;
        assert!(
            html.contains(r#"<meta property="og:title" content="Quiet &quot;Night&quot;" />"#),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"),
            "{html}"
        );
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains(&format!(
            r#"<meta property="og:url" content="http://music.example.com/s/{}" />"#,
            share.id
        )));
        assert!(html.contains("<title>Quiet &quot;Night&quot; · musiclib</title>"));
        // No cover: no image tag.
        assert!(!html.contains("og:image"));

        library.shares().revoke(&caller, &share.id).await.unwrap();
        let revoked = page(format!("/s/{}", share.id)).await;
        assert_eq!(revoked.status(), StatusCode::GONE);
        assert!(!text(revoked).await.contains("og:title"));
        assert_eq!(
            page("/s/AAAAAAAAAAAAAAAAAAAAAA".into()).await.status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            page("/s/%3Cscript%3E".into()).await.status(),
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn the_csp_allows_nothing_inline() {
        assert!(!CSP.contains("unsafe-inline"));
        assert!(!CSP.contains("unsafe-eval"));
        assert!(CSP.contains("frame-ancestors 'none'"));
    }
}
