//! `/api/v1`: one module per resource, each with its routes and handlers side by side.
//! A future `/api/v2` gets sibling modules instead of edits here.

pub mod admin;
pub mod albums;
pub mod auth;
pub mod avatars;
pub mod covers;
pub(crate) mod document;
pub mod downloads;
pub mod dto;
pub mod folders;
pub mod lyrics;
pub mod playlists;
pub mod podcasts;
pub mod radio;
pub mod remote;
pub mod search;
pub mod settings;
pub mod shares;
pub mod sources;
pub mod stations;
pub mod storage;
pub mod stream;
pub mod sync;
pub mod tracks;

use musiclib_core::Library;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

#[derive(OpenApi)]
#[openapi(
    info(title = "musiclib API", description = "The /api/v1 JSON API of musiclib, a self-hosted music library server."),
    servers((url = "/api/v1")),
    modifiers(&BearerAuth),
    tags(
        (name = "auth", description = "Accounts and access tokens"),
        (name = "tracks", description = "Tracks: upload, browse, edit"),
        (name = "albums"), (name = "artists"), (name = "search"),
        (name = "sources", description = "Sources: the local folder import, and remote sources (search, placeholders, materialization)"),
        (name = "downloads", description = "Downloads of remote items into the library"),
        (name = "streaming", description = "Audio of tracks"),
        (name = "jobs", description = "Background jobs"),
        (name = "playlists", description = "Versioned playlists: a stale version answers 409"),
        (name = "podcasts", description = "Podcasts: subscriptions (`/podcasts`), episodes downloaded into storage and streamed (`/podcast-episodes`)"),
        (name = "shares", description = "Sharing links: a user's shares (`/shares`), and what anyone holding a link opens without an account (`/shared/{id}`)"),
        (name = "likes", description = "Likes and play history (append-only event logs)"),
        (name = "sync", description = "Offline sync: delta pull and idempotent push"),
        (name = "radio-stations", description = "Internet radio stations: listed for everyone, managed by admins, relayed for the web player"),
        (name = "recommendations", description = "The stateless radio, similar tracks and similar artists, each item with reason codes and a score"),
        (name = "storage", description = "Library statistics and upkeep"),
        (name = "settings", description = "Per-user settings and scrobbling"),
        (name = "admin", description = "Superusers only: accounts, services, server settings"), (name = "health"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        // Media endpoints (covers, streams) also take the token as `?token=`.
        components.add_security_scheme(
            "token",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                "token",
                "The access token, for media endpoints only (image and audio elements cannot send headers)",
            ))),
        );
    }
}

/// Every `/api/v1` route (paths relative to the prefix) with its OpenAPI description.
pub(crate) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(auth::routes())
        .merge(avatars::routes())
        .merge(admin::routes())
        .merge(tracks::routes())
        .merge(folders::routes())
        .merge(lyrics::routes())
        .merge(albums::routes())
        .merge(covers::routes())
        .merge(search::routes())
        .merge(remote::routes())
        .merge(radio::routes())
        .merge(downloads::routes())
        .merge(settings::routes())
        .merge(sources::routes())
        .merge(stations::routes())
        .merge(storage::routes())
        .merge(stream::routes())
        .merge(playlists::routes())
        .merge(podcasts::routes())
        .merge(shares::routes())
        .merge(sync::routes())
        .merge(crate::health::routes())
        .merge(crate::metrics::routes())
}
