//! Mounts musiclib's `/api/v1` router inside another axum application, beside its own routes.
//!
//! ```sh
//! cargo run -p musiclib-examples --example mount_api             # serves on 127.0.0.1:3000
//! cargo run -p musiclib-examples --example mount_api -- --self-test
//! ```

use anyhow::{ensure, Result};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use musiclib_core::{Config, Library};
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let library = Library::open(Config::embedded(scratch.path())).await?;

    // The host application owns `/`; musiclib lives under `/music/api/v1`.
    let app = Router::new()
        .route("/", get(|| async { "my home server" }))
        .nest("/music/api/v1", musiclib_http::api_v1(library));

    if std::env::args().any(|arg| arg == "--self-test") {
        let response = app
            .clone()
            .oneshot(
                Request::post("/music/api/v1/auth/register")
                    .header("content-type", "application/json")
                    .body(Body::from(
                        r#"{"username":"guest","password":"guest-password"}"#,
                    ))?,
            )
            .await?;
        ensure!(
            response.status() == StatusCode::CREATED,
            "register answered {}",
            response.status()
        );
        let response = app
            .clone()
            .oneshot(Request::get("/music/api/v1/health").body(Body::empty())?)
            .await?;
        ensure!(
            response.status() == StatusCode::OK,
            "health answered {}",
            response.status()
        );
        let response = app.oneshot(Request::get("/").body(Body::empty())?).await?;
        ensure!(response.status() == StatusCode::OK);
        println!("mount_api: the host app and the nested /music/api/v1 both answer");
        return Ok(());
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://127.0.0.1:3000 (musiclib under /music/api/v1)");
    axum::serve(listener, app).await?;
    Ok(())
}
