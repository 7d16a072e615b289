//! Who may do what, as a table checked against the OpenAPI document: every operation the
//! document lists (`every_operation_has_a_row` fails, naming them, when one has no row),
//! called by an anonymous client, the owner of the thing the row addresses (where there is
//! one; otherwise a plain user), another user, and an admin, each answered with its expected
//! status. The adapter checks nothing itself (core decides, see `musiclib_core::auth::policy`),
//! so this table is core's policy seen through the API.
//!
//! Each row names its operation as the document does (`"GET /tracks/{id}"`, paths relative to
//! `/api/v1`) and sends a valid request, so what a row tests is the permission, not the input.
//! Rows run in order against one world; a row that destroys or changes something addresses a
//! copy per role. Where every signed-in role gets the same refusal (a placeholder has no audio
//! to stream), the row's case says why; outside services the rows reach are mocks.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use base64::Engine;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::{json, Value};

use crate::api::App;

/// The callers of every row, in this order.
const ROLES: [&str; 4] = ["anonymous", "owner", "other user", "admin"];

/// The HTTP methods an OpenAPI path item can hold.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// A 1×1 PNG, for covers.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// What the table's rows address: each role gets its own copy of what a row destroys.
struct World {
    /// Tracks without audio (placeholders) uploaded by the owner, one per role; the first
    /// is never deleted, and has lyrics.
    tracks: Vec<String>,
    /// A track with audio (a tone the owner uploaded).
    audio_track: String,
    /// The album and artist of the tracks; the album has a cover.
    album: String,
    artist: String,
    /// A job the owner queued.
    job: String,
    /// The owner's private playlists, one per role, and a public one.
    private: Vec<String>,
    public: String,
    owner_id: String,
    /// Accounts to disable and delete, one per role.
    accounts: Vec<String>,
    /// The owner's queued downloads, one per role, and the track of the first.
    downloads: Vec<String>,
    download_track: String,
    /// The owner's shares of `audio_track` and the first track, one per role (downloads
    /// allowed), and one the owner revoked.
    shares: Vec<String>,
    revoked_share: String,
    /// Internet radio stations (an admin added them), one per role; the first is never
    /// deleted, and its stream is on loopback (refused by default).
    stations: Vec<String>,
    /// Podcasts the owner subscribed to, one per role, each with one downloaded episode
    /// (`episodes`); the first of each is never deleted. Their feeds are on loopback.
    podcasts: Vec<String>,
    episodes: Vec<String>,
}

/// A request body.
enum Payload {
    None,
    Json(Value),
    /// Bytes with their content type.
    Raw(String, Vec<u8>),
}

struct Row {
    /// `METHOD /path-template`, as in the OpenAPI document.
    operation: &'static str,
    /// What the row checks, for failure messages.
    case: &'static str,
    /// The path (relative to `/api/v1`, with any query) a role calls.
    path: fn(&World, usize) -> String,
    body: fn(&World, usize) -> Payload,
    /// Statuses for anonymous, owner, other user, admin.
    expect: [u16; 4],
}

fn row(
    operation: &'static str,
    case: &'static str,
    path: fn(&World, usize) -> String,
    expect: [u16; 4],
) -> Row {
    Row {
        operation,
        case,
        path,
        body: |_, _| Payload::None,
        expect,
    }
}

impl Row {
    fn body(self, body: fn(&World, usize) -> Payload) -> Row {
        Row { body, ..self }
    }
}

/// Signed-in callers only, whoever they are.
const ANY_USER: [u16; 4] = [401, 200, 200, 200];
/// Admins only.
const ADMIN: [u16; 4] = [401, 403, 403, 200];
/// The owner and admins; another user is refused.
const OWNER_OR_ADMIN: [u16; 4] = [401, 200, 403, 200];
/// The owner and admins; to another user the thing does not exist.
const OWNER_OR_ADMIN_HIDDEN: [u16; 4] = [401, 200, 404, 200];
/// The owner of a public playlist; others may read it, not change it.
const PUBLIC_PLAYLIST_OWNER: [u16; 4] = [401, 200, 403, 403];
/// The owner of a private playlist; to anyone else, admins too, it does not exist.
const PRIVATE_PLAYLIST_OWNER: [u16; 4] = [401, 200, 404, 404];

fn rows() -> Vec<Row> {
    vec![
        // Health and metrics.
        row("GET /health", "health is public", |_, _| "/health".into(), [200; 4]),
        row("GET /metrics", "read the metrics", |_, _| "/metrics".into(), ADMIN),
        // Accounts.
        row("POST /auth/register", "registration is public (and never needs a token)", |_, _| {
            "/auth/register".into()
        }, [201; 4])
        .body(|_, role| {
            Payload::Json(json!({"username": format!("newcomer-{role}"), "password": "long enough"}))
        }),
        row("POST /auth/login", "signing in is public", |_, _| "/auth/login".into(), [200; 4])
            .body(|_, _| Payload::Json(json!({"username": "owner", "password": "long enough"}))),
        row("GET /users/me", "read one's account", |_, _| "/users/me".into(), ANY_USER),
        row("PUT /users/me/avatar", "upload one's picture", |_, _| "/users/me/avatar".into(), [401, 204, 204, 204])
            .body(|_, _| png()),
        row(
            "GET /users/{id}/avatar",
            "read a user's picture (anyone signed in)",
            |w, _| format!("/users/{}/avatar", w.owner_id),
            ANY_USER,
        ),
        row("DELETE /users/me/avatar", "remove one's picture", |_, _| "/users/me/avatar".into(), [401, 204, 204, 204]),
        row(
            "GET /users/me/legacy-password",
            "reveal one's app password",
            |_, _| "/users/me/legacy-password".into(),
            ANY_USER,
        ),
        row(
            "POST /users/me/legacy-password",
            "rotate one's app password",
            |_, _| "/users/me/legacy-password".into(),
            ANY_USER,
        ),
        row(
            "POST /admin/users/{id}/legacy-password",
            "rotate the owner's app password",
            |w, _| format!("/admin/users/{}/legacy-password", w.owner_id),
            OWNER_OR_ADMIN,
        ),
        row("GET /admin/users", "list accounts", |_, _| "/admin/users".into(), ADMIN),
        row("POST /admin/users", "add an account", |_, _| "/admin/users".into(), [401, 403, 403, 201])
            .body(|_, _| Payload::Json(json!({"username": "newcomer", "password": "long enough"}))),
        row(
            "PATCH /admin/users/{id}",
            "disable an account",
            |w, role| format!("/admin/users/{}", w.accounts[role]),
            ADMIN,
        )
        .body(|_, _| Payload::Json(json!({"disabled": true}))),
        row(
            "DELETE /admin/users/{id}",
            "delete an account",
            |w, role| format!("/admin/users/{}", w.accounts[role]),
            [401, 403, 403, 204],
        ),
        // Administration.
        row("GET /admin/services", "read the service report", |_, _| "/admin/services".into(), ADMIN),
        row("GET /admin/sources", "read the source registry", |_, _| "/admin/sources".into(), ADMIN),
        row("GET /admin/settings", "read server settings", |_, _| "/admin/settings".into(), ADMIN),
        row("GET /admin/jobs", "list every user's jobs", |_, _| "/admin/jobs".into(), ADMIN),
        row("POST /admin/reindex", "reindex", |_, _| "/admin/reindex".into(), [401, 403, 403, 202])
            .body(|_, _| Payload::Json(json!({}))),
        row(
            "PATCH /admin/settings",
            "change server settings (501: configuration comes from the environment)",
            |_, _| "/admin/settings".into(),
            [401, 403, 403, 501],
        )
        .body(|_, _| Payload::Json(json!({}))),
        row(
            "PATCH /admin/sources/{source}",
            "change a source (501, as the spec says)",
            |_, _| "/admin/sources/local_folder".into(),
            [401, 403, 403, 501],
        )
        .body(|_, _| Payload::Json(json!({}))),
        // The catalogue.
        row("GET /tracks", "read the catalogue", |_, _| "/tracks".into(), ANY_USER),
        row("GET /tracks/{id}", "read a track", |w, _| format!("/tracks/{}", w.tracks[0]), ANY_USER),
        row(
            "GET /tracks/{id}/cover",
            "read a track's cover (its album's; before the manual edit below, which leaves the track without album)",
            |w, _| format!("/tracks/{}/cover", w.tracks[0]),
            ANY_USER,
        ),
        row(
            "PATCH /tracks/{id}",
            "edit a track",
            |w, _| format!("/tracks/{}", w.tracks[0]),
            OWNER_OR_ADMIN,
        )
        .body(|_, _| Payload::Json(json!({"title": "Edited"}))),
        row(
            "PUT /tracks/{id}/metadata",
            "set a track's metadata",
            |w, _| format!("/tracks/{}/metadata", w.tracks[0]),
            OWNER_OR_ADMIN,
        )
        .body(|_, _| Payload::Json(json!({"title": "Manual"}))),
        row(
            "POST /tracks/{id}/metadata/enrich",
            "ask for enrichment (it rewrites the track's metadata: its uploader or an admin)",
            |w, _| format!("/tracks/{}/metadata/enrich", w.tracks[0]),
            [401, 202, 403, 202],
        ),
        row(
            "GET /tracks/{id}/metadata/candidates",
            "fingerprint candidates (read-only: anyone signed in; AcoustID is a mock here)",
            |w, _| format!("/tracks/{}/metadata/candidates", w.audio_track),
            ANY_USER,
        ),
        row(
            "POST /tracks/{id}/optimize",
            "ask for renditions (anyone signed in; the job finds no audio later)",
            |w, _| format!("/tracks/{}/optimize", w.tracks[0]),
            [401, 202, 202, 202],
        ),
        row(
            "POST /tracks/upload",
            "upload a track",
            |_, _| "/tracks/upload".into(),
            [401, 201, 201, 201],
        )
        .body(|_, role| {
            // A different tone per role: the same bytes twice would be "uploaded before".
            let boundary = "permissions-boundary";
            let mut body = format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"tone-{role}.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
            )
            .into_bytes();
            body.extend_from_slice(&musiclib_core::testing::wav_tone(role as u32 + 1));
            body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
            Payload::Raw(format!("multipart/form-data; boundary={boundary}"), body)
        }),
        row(
            "GET /tracks/{id}/lyrics",
            "read lyrics",
            |w, _| format!("/tracks/{}/lyrics", w.tracks[0]),
            ANY_USER,
        ),
        row(
            "POST /tracks/{id}/lyrics/refetch",
            "refetch lyrics (anyone signed in; LRCLIB is unreachable in tests: a not_found record)",
            |w, _| format!("/tracks/{}/lyrics/refetch", w.tracks[2]),
            ANY_USER,
        ),
        row(
            "GET /tracks/{id}/similar",
            "similar tracks",
            |w, _| format!("/tracks/{}/similar", w.tracks[0]),
            ANY_USER,
        ),
        row("GET /albums", "list albums", |_, _| "/albums".into(), ANY_USER),
        row("GET /albums/{id}", "read an album", |w, _| format!("/albums/{}", w.album), ANY_USER),
        row(
            "GET /albums/{id}/tracks",
            "an album's tracks",
            |w, _| format!("/albums/{}/tracks", w.album),
            ANY_USER,
        ),
        row(
            "GET /albums/{id}/cover",
            "an album's cover",
            |w, _| format!("/albums/{}/cover", w.album),
            ANY_USER,
        ),
        row("GET /artists", "list artists", |_, _| "/artists".into(), ANY_USER),
        row("GET /artists/{id}", "read an artist", |w, _| format!("/artists/{}", w.artist), ANY_USER),
        row(
            "GET /artists/{id}/albums",
            "an artist's albums",
            |w, _| format!("/artists/{}/albums", w.artist),
            ANY_USER,
        ),
        row(
            "GET /artists/{id}/tracks",
            "an artist's tracks",
            |w, _| format!("/artists/{}/tracks", w.artist),
            ANY_USER,
        ),
        row(
            "GET /artists/{id}/similar",
            "similar artists",
            |w, _| format!("/artists/{}/similar", w.artist),
            ANY_USER,
        ),
        row("GET /search/library", "search the library", |_, _| "/search/library?q=Track".into(), ANY_USER),
        row(
            "DELETE /tracks/{id}",
            "delete a track",
            |w, role| format!("/tracks/{}", w.tracks[role]),
            [401, 204, 403, 204],
        ),
        // Streaming.
        row(
            "GET /stream/{id}",
            "stream a track",
            |w, _| format!("/stream/{}", w.audio_track),
            ANY_USER,
        ),
        row(
            "GET /stream/{id}",
            "stream a placeholder (409 for everyone: it has no audio)",
            |w, _| format!("/stream/{}", w.tracks[0]),
            [401, 409, 409, 409],
        ),
        row(
            "GET /stream/{id}/hls/playlist.m3u8",
            "an HLS playlist",
            |w, _| format!("/stream/{}/hls/playlist.m3u8", w.audio_track),
            ANY_USER,
        ),
        row(
            "GET /stream/{id}/hls/playlist.m3u8",
            "a placeholder's HLS playlist (409 for everyone: it has no audio)",
            |w, _| format!("/stream/{}/hls/playlist.m3u8", w.tracks[0]),
            [401, 409, 409, 409],
        ),
        row(
            "GET /stream/{id}/hls/{segment}",
            "an HLS segment",
            |w, _| format!("/stream/{}/hls/seg-00000.ts", w.audio_track),
            ANY_USER,
        ),
        row(
            "GET /stream/{id}/hls/{segment}",
            "a placeholder's HLS segment (409 for everyone: it has no audio)",
            |w, _| format!("/stream/{}/hls/seg-00000.ts", w.tracks[0]),
            [401, 409, 409, 409],
        ),
        // Sources, remote items and downloads.
        row("GET /sources", "list sources", |_, _| "/sources".into(), ANY_USER),
        row(
            "POST /sources/{source}/scan",
            "scan a source",
            |_, _| "/sources/local_folder/scan".into(),
            [401, 403, 403, 202],
        )
        .body(|_, _| Payload::Json(json!({}))),
        row("GET /search", "search remote sources", |_, _| "/search?q=Song".into(), ANY_USER),
        row(
            "GET /sources/{source}/search",
            "search one remote source",
            |_, _| "/sources/subsonic/search?q=Song".into(),
            ANY_USER,
        ),
        row(
            "POST /tracks/remote",
            "save a remote hit (the library has it already)",
            |_, _| "/tracks/remote".into(),
            ANY_USER,
        )
        .body(|_, _| Payload::Json(json!({"source": "subsonic", "source_id": "s0"}))),
        row(
            "POST /tracks/{id}/materialize",
            "materialize a placeholder (its download's fetch is queued)",
            |w, _| format!("/tracks/{}/materialize", w.download_track),
            [401, 202, 202, 202],
        ),
        row(
            "POST /downloads",
            "ask for a download (the owner asked for this one before)",
            |_, _| "/downloads".into(),
            [401, 200, 201, 201],
        )
        .body(|_, _| Payload::Json(json!({"source": "subsonic", "source_id": "s0"}))),
        row("GET /downloads", "list one's downloads", |_, _| "/downloads".into(), ANY_USER),
        row(
            "GET /downloads/{id}",
            "read a download",
            |w, _| format!("/downloads/{}", w.downloads[0]),
            OWNER_OR_ADMIN_HIDDEN,
        ),
        row(
            "POST /downloads/{id}/cancel",
            "cancel a download",
            |w, role| format!("/downloads/{}/cancel", w.downloads[role]),
            OWNER_OR_ADMIN_HIDDEN,
        ),
        row("GET /jobs/{id}", "read a job", |w, _| format!("/jobs/{}", w.job), OWNER_OR_ADMIN_HIDDEN),
        // Recommendations.
        row("POST /radio", "start a radio", |_, _| "/radio".into(), ANY_USER)
            .body(|w, _| Payload::Json(json!({"seed_track_id": w.tracks[0], "count": 5}))),
        row("POST /radio/next", "continue a radio", |_, _| "/radio/next".into(), ANY_USER)
            .body(|w, _| {
                Payload::Json(json!({"seed_track_id": w.tracks[0], "exclude_ids": [w.tracks[2]], "count": 5}))
            }),
        // Playlists.
        row("GET /playlists", "list one's playlists", |_, _| "/playlists".into(), ANY_USER),
        row("POST /playlists", "create a playlist", |_, _| "/playlists".into(), [401, 201, 201, 201])
            .body(|_, role| Payload::Json(json!({"name": format!("made by {}", ROLES[role])}))),
        row(
            "GET /playlists/{id}",
            "read a private playlist",
            |w, _| format!("/playlists/{}", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        ),
        row(
            "GET /playlists/{id}",
            "read a public playlist",
            |w, _| format!("/playlists/{}", w.public),
            ANY_USER,
        ),
        row(
            "PATCH /playlists/{id}",
            "rename a public playlist",
            |w, _| format!("/playlists/{}", w.public),
            PUBLIC_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"name": "Renamed"}))),
        row(
            "PATCH /playlists/{id}",
            "rename a private playlist",
            |w, _| format!("/playlists/{}", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"name": "Renamed"}))),
        row(
            "PUT /playlists/{id}",
            "replace a public playlist's fields",
            |w, _| format!("/playlists/{}", w.public),
            PUBLIC_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"name": "Replaced", "public": true}))),
        row(
            "PUT /playlists/{id}",
            "replace a private playlist's fields",
            |w, _| format!("/playlists/{}", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"name": "Replaced"}))),
        row(
            "POST /playlists/{id}/tracks",
            "add to a public playlist",
            |w, _| format!("/playlists/{}/tracks", w.public),
            PUBLIC_PLAYLIST_OWNER,
        )
        .body(|w, _| Payload::Json(json!({"track_ids": [w.tracks[0]]}))),
        row(
            "POST /playlists/{id}/tracks",
            "add to a private playlist",
            |w, _| format!("/playlists/{}/tracks", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        )
        .body(|w, _| Payload::Json(json!({"track_ids": [w.tracks[0]]}))),
        row(
            "DELETE /playlists/{id}/tracks",
            "remove from a public playlist (the owner removes what the owner added)",
            |w, _| format!("/playlists/{}/tracks", w.public),
            PUBLIC_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"positions": [0]}))),
        row(
            "DELETE /playlists/{id}/tracks",
            "remove from a private playlist",
            |w, _| format!("/playlists/{}/tracks", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        )
        .body(|_, _| Payload::Json(json!({"positions": [0]}))),
        row(
            "PUT /playlists/{id}/cover",
            "set a public playlist's cover",
            |w, _| format!("/playlists/{}/cover", w.public),
            [401, 204, 403, 403],
        )
        .body(|_, _| png()),
        row(
            "PUT /playlists/{id}/cover",
            "set a private playlist's cover",
            |w, _| format!("/playlists/{}/cover", w.private[0]),
            [401, 204, 404, 404],
        )
        .body(|_, _| png()),
        row(
            "GET /playlists/{id}/cover",
            "read a public playlist's cover",
            |w, _| format!("/playlists/{}/cover", w.public),
            ANY_USER,
        ),
        row(
            "GET /playlists/{id}/cover",
            "read a private playlist's cover",
            |w, _| format!("/playlists/{}/cover", w.private[0]),
            PRIVATE_PLAYLIST_OWNER,
        ),
        row(
            "DELETE /playlists/{id}",
            "delete a private playlist",
            |w, role| format!("/playlists/{}", w.private[role]),
            [401, 204, 404, 404],
        ),
        // Smart playlists.
        row(
            "GET /playlists/rules/fields",
            "read the fields of rules",
            |_, _| "/playlists/rules/fields".into(),
            ANY_USER,
        ),
        row(
            "POST /playlists/rules/preview",
            "preview rules (one's own plays and likes)",
            |_, _| "/playlists/rules/preview".into(),
            ANY_USER,
        )
        .body(|_, _| Payload::Json(json!({"rules": {"all": [{"gt": {"year": 1900}}]}}))),
        // Folders.
        row("GET /folders", "browse the folders", |_, _| "/folders?library=remote".into(), ANY_USER),
        // Shares: the owner's (admins see and manage every one); what a link opens is public.
        row("GET /shares", "list one's shares", |_, _| "/shares".into(), ANY_USER),
        row("GET /shares", "list every user's shares", |_, _| "/shares?all=true".into(), ADMIN),
        row("POST /shares", "share a track", |_, _| "/shares".into(), [401, 201, 201, 201])
            .body(|w, _| Payload::Json(json!({"track_ids": [w.audio_track]}))),
        row(
            "GET /shares/{id}",
            "read a share",
            |w, _| format!("/shares/{}", w.shares[0]),
            OWNER_OR_ADMIN_HIDDEN,
        ),
        row(
            "PATCH /shares/{id}",
            "change a share",
            |w, _| format!("/shares/{}", w.shares[0]),
            OWNER_OR_ADMIN_HIDDEN,
        )
        .body(|_, _| Payload::Json(json!({"description": "changed"}))),
        row("GET /shared/{id}", "open a share's link (no account)", |w, _| format!("/shared/{}", w.shares[0]), [200; 4]),
        row(
            "GET /shared/{id}",
            "open a revoked share's link",
            |w, _| format!("/shared/{}", w.revoked_share),
            [410; 4],
        ),
        row(
            "GET /shared/{id}/cover",
            "a share's picture (the tone has none)",
            |w, _| format!("/shared/{}/cover", w.shares[0]),
            [404; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/stream",
            "stream a shared track",
            |w, _| format!("/shared/{}/tracks/{}/stream", w.shares[0], w.audio_track),
            [200; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/stream",
            "stream a track outside the share",
            |w, _| format!("/shared/{}/tracks/{}/stream", w.shares[0], w.tracks[1]),
            [404; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/stream",
            "stream from a revoked share",
            |w, _| format!("/shared/{}/tracks/{}/stream", w.revoked_share, w.audio_track),
            [410; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/download",
            "download a shared track (allowed)",
            |w, _| format!("/shared/{}/tracks/{}/download", w.shares[0], w.audio_track),
            [200; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/cover",
            "a shared track's cover (the tone has none)",
            |w, _| format!("/shared/{}/tracks/{}/cover", w.shares[0], w.audio_track),
            [404; 4],
        ),
        row(
            "GET /shared/{id}/tracks/{track}/lyrics",
            "a shared track's lyrics",
            |w, _| format!("/shared/{}/tracks/{}/lyrics", w.shares[0], w.tracks[0]),
            [200; 4],
        ),
        row(
            "DELETE /shares/{id}",
            "revoke a share",
            |w, role| format!("/shares/{}", w.shares[role]),
            [401, 204, 404, 204],
        ),
        // Internet radio stations: listed for everyone, managed by admins.
        row("GET /radio-stations", "list the stations", |_, _| "/radio-stations".into(), ANY_USER),
        row("POST /radio-stations", "add a station", |_, _| "/radio-stations".into(), [401, 403, 403, 201])
            .body(|_, _| Payload::Json(json!({"name": "Added", "stream_url": "https://radio.example/added.ogg"}))),
        row("GET /radio-stations/{id}", "read a station", |w, _| format!("/radio-stations/{}", w.stations[0]), ANY_USER),
        row("PATCH /radio-stations/{id}", "change a station", |w, _| format!("/radio-stations/{}", w.stations[0]), ADMIN)
            .body(|_, _| Payload::Json(json!({"name": "Renamed"}))),
        row(
            "GET /radio-stations/{id}/stream",
            "relay a station: anyone signed in, but a loopback stream is refused by default (502)",
            |w, _| format!("/radio-stations/{}/stream", w.stations[0]),
            [401, 502, 502, 502],
        ),
        row(
            "DELETE /radio-stations/{id}",
            "delete a station",
            |w, role| format!("/radio-stations/{}", w.stations[role]),
            [401, 403, 403, 204],
        ),
        // Podcasts: the server's; anyone signed in subscribes, refreshes and downloads, who
        // subscribed (or an admin) changes and removes.
        row("GET /podcasts", "list the podcasts", |_, _| "/podcasts".into(), ANY_USER),
        row(
            "POST /podcasts",
            "subscribe: anyone signed in, but a feed on loopback is refused by default (422)",
            |_, _| "/podcasts".into(),
            [401, 422, 422, 422],
        )
        .body(|_, _| Payload::Json(json!({"url": "http://127.0.0.1:9/feed.xml"}))),
        row("POST /podcasts/refresh", "refresh every podcast", |_, _| "/podcasts/refresh".into(), [401, 202, 202, 202]),
        row("GET /podcasts/{id}", "read a podcast", |w, _| format!("/podcasts/{}", w.podcasts[0]), ANY_USER),
        row("PATCH /podcasts/{id}", "change a podcast", |w, _| format!("/podcasts/{}", w.podcasts[0]), OWNER_OR_ADMIN)
            .body(|_, _| Payload::Json(json!({"keep_newest": null}))),
        row(
            "POST /podcasts/{id}/refresh",
            "refresh a podcast (its loopback feed is refused: kept as refresh_error)",
            |w, _| format!("/podcasts/{}/refresh", w.podcasts[0]),
            ANY_USER,
        ),
        row("GET /podcasts/{id}/episodes", "list a podcast's episodes", |w, _| format!("/podcasts/{}/episodes", w.podcasts[0]), ANY_USER),
        row("GET /podcasts/{id}/cover", "a podcast's image", |w, _| format!("/podcasts/{}/cover", w.podcasts[0]), ANY_USER),
        row("GET /podcast-episodes", "the newest episodes", |_, _| "/podcast-episodes".into(), ANY_USER),
        row("GET /podcast-episodes/{id}", "read an episode", |w, _| format!("/podcast-episodes/{}", w.episodes[0]), ANY_USER),
        row(
            "POST /podcast-episodes/{id}/download",
            "download an episode (already downloaded: 200)",
            |w, _| format!("/podcast-episodes/{}/download", w.episodes[0]),
            ANY_USER,
        ),
        row(
            "PUT /podcast-episodes/{id}/position",
            "remember one's place",
            |w, _| format!("/podcast-episodes/{}/position", w.episodes[0]),
            [401, 204, 204, 204],
        )
        .body(|_, _| Payload::Json(json!({"position_ms": 1000}))),
        row(
            "GET /podcast-episodes/{id}/stream",
            "stream an episode",
            |w, _| format!("/podcast-episodes/{}/stream", w.episodes[0]),
            ANY_USER,
        ),
        row(
            "DELETE /podcast-episodes/{id}",
            "delete an episode's download",
            |w, role| format!("/podcast-episodes/{}", w.episodes[role]),
            [401, 204, 403, 204],
        ),
        row(
            "DELETE /podcasts/{id}",
            "unsubscribe",
            |w, role| format!("/podcasts/{}", w.podcasts[role]),
            [401, 204, 403, 204],
        ),
        // Likes, history and sync: each caller reads and writes their own.
        row("GET /likes", "list one's likes", |_, _| "/likes".into(), ANY_USER),
        row("POST /likes", "like a track", |_, _| "/likes".into(), [401, 201, 201, 201]).body(|w, role| {
            Payload::Json(json!({
                "client_event_id": format!("like-{role}"),
                "track_id": w.tracks[0],
                "liked": true,
                "event_time": "2026-11-21T10:00:00Z",
            }))
        }),
        row(
            "GET /likes/state",
            "one's like states",
            |w, _| format!("/likes/state?track_ids={}", w.tracks[0]),
            ANY_USER,
        ),
        row("GET /history", "list one's plays", |_, _| "/history".into(), ANY_USER),
        row("POST /history", "record a play", |_, _| "/history".into(), [401, 201, 201, 201]).body(|w, role| {
            Payload::Json(json!({
                "client_event_id": format!("play-{role}"),
                "track_id": w.tracks[0],
                "played_at": "2026-11-21T10:00:00Z",
                "seconds_played": 30.0,
            }))
        }),
        row("GET /sync/changes", "sync", |_, _| "/sync/changes?since=0".into(), ANY_USER),
        row("GET /sync/cursor", "where to pull from now", |_, _| "/sync/cursor".into(), ANY_USER),
        row("GET /genres", "list genres", |_, _| "/genres".into(), ANY_USER),
        row("POST /sync/push", "push events", |_, _| "/sync/push".into(), ANY_USER).body(|w, role| {
            Payload::Json(json!({
                "likes": [{
                    "client_event_id": format!("pushed-like-{role}"),
                    "track_id": w.tracks[0],
                    "liked": false,
                    "event_time": "2026-11-22T10:00:00Z",
                }],
            }))
        }),
        // Storage.
        row("GET /storage", "read storage statistics", |_, _| "/storage".into(), ANY_USER),
        row(
            "GET /storage/missing-metadata",
            "tracks lacking metadata",
            |_, _| "/storage/missing-metadata".into(),
            ANY_USER,
        ),
        row("GET /storage/duplicates", "duplicates", |_, _| "/storage/duplicates".into(), ANY_USER),
        row("GET /storage/broken", "broken files", |_, _| "/storage/broken".into(), ANY_USER),
        row(
            "POST /storage/broken/check",
            "check every stored file",
            |_, _| "/storage/broken/check".into(),
            [401, 403, 403, 202],
        )
        .body(|_, _| Payload::Json(json!({}))),
        row(
            "POST /storage/cleanup",
            "clean up storage",
            |_, _| "/storage/cleanup".into(),
            [401, 403, 403, 202],
        )
        .body(|_, _| Payload::Json(json!({"dry_run": true}))),
        // Per-user settings.
        row("GET /settings", "read one's settings", |_, _| "/settings".into(), ANY_USER),
        row("PATCH /settings", "change one's settings", |_, _| "/settings".into(), ANY_USER)
            .body(|_, _| Payload::Json(json!({"scrobbling": true}))),
        row(
            "GET /settings/scrobbling",
            "read one's scrobbling state",
            |_, _| "/settings/scrobbling".into(),
            ANY_USER,
        ),
        row(
            "PUT /settings/scrobbling",
            "set one's scrobbling credentials",
            |_, _| "/settings/scrobbling".into(),
            ANY_USER,
        )
        .body(|_, _| Payload::Json(json!({"listenbrainz": {"token": "a-listenbrainz-token"}}))),
        // Last: a password change revokes the caller's tokens, which no later row could use.
        row(
            "POST /users/me/password",
            "change one's password",
            |_, _| "/users/me/password".into(),
            ANY_USER,
        )
        .body(|_, role| {
            let current = if role == 3 { "root-password" } else { "long enough" };
            Payload::Json(json!({"current_password": current, "new_password": "longer than before"}))
        }),
    ]
}

fn png() -> Payload {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(PNG)
        .expect("a PNG");
    Payload::Raw("image/png".into(), bytes)
}

/// Every operation of the OpenAPI document, as `METHOD /path-template`.
fn operations() -> BTreeSet<String> {
    let document = serde_json::to_value(musiclib_http::openapi()).expect("the document serializes");
    let paths = document["paths"]
        .as_object()
        .expect("the document has paths");
    let mut operations = BTreeSet::new();
    for (path, item) in paths {
        for method in METHODS {
            if item.get(method).is_some() {
                operations.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    operations
}

/// Whether `path` (a request path, with any query) is an instance of `template`.
fn matches_template(template: &str, path: &str) -> bool {
    let path = path.split_once('?').map_or(path, |(path, _)| path);
    let template: Vec<&str> = template.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    template.len() == path.len()
        && template.iter().zip(&path).all(|(template, segment)| {
            if template.starts_with('{') && template.ends_with('}') {
                !segment.is_empty()
            } else {
                template == segment
            }
        })
}

#[test]
fn every_operation_has_a_row() {
    let operations = operations();
    let rows = rows();
    let covered: BTreeSet<&str> = rows.iter().map(|row| row.operation).collect();
    let missing: Vec<&String> = operations
        .iter()
        .filter(|operation| !covered.contains(operation.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "operations of the OpenAPI document with no row in the permission table (add them to `rows`):\n{}",
        missing
            .iter()
            .map(|operation| operation.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let unknown: Vec<&str> = covered
        .iter()
        .copied()
        .filter(|operation| !operations.contains(*operation))
        .collect();
    assert!(
        unknown.is_empty(),
        "rows naming no operation of the OpenAPI document:\n{}",
        unknown.join("\n")
    );
}

async fn world(app: &App, owner: &str, owner_id: &str) -> World {
    // Tracks without audio (placeholders: streaming them is a 409), uploaded by the owner.
    musiclib_core::testing::insert_synthetic_tracks(&app.library, 4).await;
    let owner_user = musiclib_core::UserId::parse(owner_id).unwrap();
    musiclib_core::testing::set_uploader(&app.library, &owner_user).await;
    let (_, listed) = app.get("/api/v1/tracks?limit=4", Some(owner)).await;
    let listed = listed["items"].as_array().unwrap().clone();
    let tracks: Vec<String> = listed
        .iter()
        .map(|track| track["id"].as_str().unwrap().to_string())
        .collect();
    for track in &tracks {
        musiclib_core::testing::make_placeholder(
            &app.library,
            &musiclib_core::TrackId::parse(track).unwrap(),
        )
        .await;
    }
    musiclib_core::testing::store_lyrics(
        &app.library,
        &musiclib_core::TrackId::parse(&tracks[0]).unwrap(),
        "[00:01.00]La la la",
    )
    .await;
    // A track with audio (a tone no row uploads again).
    let (status, uploaded) = app
        .upload(owner, "tone.wav", &musiclib_core::testing::wav_tone(7))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{uploaded}");
    let audio_track = uploaded["id"].as_str().unwrap().to_string();
    let album = listed[0]["album_id"].as_str().unwrap().to_string();
    let artist = listed[0]["artist_id"].as_str().unwrap().to_string();
    let cover_key = format!("covers/{album}.png");
    let Payload::Raw(_, png) = png() else {
        unreachable!()
    };
    musiclib_core::testing::put_blob(&app.library, &cover_key, png.into()).await;
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE albums SET cover_uri = $1 WHERE id = $2",
        &[&cover_key, &album],
    )
    .await;
    let (status, job) = app
        .json(
            "POST",
            &format!("/api/v1/tracks/{}/metadata/enrich", tracks[0]),
            Some(owner),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let mut private = Vec::new();
    for role in ROLES {
        let (status, playlist) = app
            .json(
                "POST",
                "/api/v1/playlists",
                Some(owner),
                json!({"name": format!("for {role}")}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{playlist}");
        private.push(playlist["id"].as_str().unwrap().to_string());
    }
    let (_, public) = app
        .json(
            "POST",
            "/api/v1/playlists",
            Some(owner),
            json!({"name": "everyone's", "public": true}),
        )
        .await;
    let mut accounts = Vec::new();
    for role in 0..ROLES.len() {
        let token = app.register(&format!("account-{role}")).await;
        let (_, me) = app.get("/api/v1/users/me", Some(&token)).await;
        accounts.push(me["id"].as_str().unwrap().to_string());
    }
    let mut downloads = Vec::new();
    let mut download_track = String::new();
    for role in 0..ROLES.len() {
        let (status, created) = app
            .json(
                "POST",
                "/api/v1/downloads",
                Some(owner),
                json!({"source": "subsonic", "source_id": format!("s{role}")}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        downloads.push(created["download"]["id"].as_str().unwrap().to_string());
        if role == 0 {
            download_track = created["track"]["id"].as_str().unwrap().to_string();
        }
    }
    let mut shares = Vec::new();
    for _ in 0..=ROLES.len() {
        let (status, share) = app
            .json(
                "POST",
                "/api/v1/shares",
                Some(owner),
                json!({"track_ids": [audio_track, tracks[0]], "downloadable": true}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{share}");
        shares.push(share["id"].as_str().unwrap().to_string());
    }
    let revoked_share = shares.pop().unwrap();
    let (status, _) = app
        .json(
            "DELETE",
            &format!("/api/v1/shares/{revoked_share}"),
            Some(owner),
            json!(null),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let station_admin = musiclib_core::auth::Caller {
        user: app
            .library
            .accounts()
            .create_user("station-admin", "long enough", true)
            .await
            .unwrap(),
    };
    let mut stations = Vec::new();
    for role in ROLES {
        let fields = musiclib_core::stations::StationFields {
            name: role.into(),
            stream_url: "http://127.0.0.1:9/live.mp3".into(),
            homepage_url: None,
        };
        let station = app
            .library
            .stations()
            .create(&station_admin, fields)
            .await
            .unwrap();
        stations.push(station.id.to_string());
    }
    let mut podcasts = Vec::new();
    let mut episodes = Vec::new();
    for role in 0..ROLES.len() {
        let (podcast, episode) = musiclib_core::testing::insert_podcast(
            &app.library,
            &owner_user,
            &format!("http://127.0.0.1:9/feed-{role}.xml"),
            &musiclib_core::testing::wav_tone(1),
        )
        .await;
        podcasts.push(podcast.to_string());
        episodes.push(episode.to_string());
    }
    World {
        podcasts,
        episodes,
        stations,
        shares,
        revoked_share,
        accounts,
        downloads,
        download_track,
        tracks,
        audio_track,
        album,
        artist,
        job: job["job_id"].as_str().unwrap().to_string(),
        private,
        public: public["id"].as_str().unwrap().to_string(),
        owner_id: owner_id.to_string(),
    }
}

both_backends!(
    services every_operation_by_every_role,
    |backend: Backend| async move {
        // AcoustID answers every lookup with its fixture (the candidates row).
        let acoustid = wiremock::MockServer::start().await;
        let lookup = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/fixtures/acoustid/lookup_high_score.json"),
        )
        .unwrap();
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .and(wiremock::matchers::path("/v2/lookup"))
            .respond_with(
                wiremock::ResponseTemplate::new(200)
                    .insert_header("Content-Type", "application/json")
                    .set_body_string(lookup),
            )
            .mount(&acoustid)
            .await;
        let acoustid_url = acoustid.uri();
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().to_path_buf();
        let audio = musiclib_core::testing::wav_tone(1);
        let songs: Vec<(String, String)> = (0..ROLES.len())
            .map(|role| (format!("s{role}"), format!("Song {role}")))
            .collect();
        let songs: Vec<(&str, &str, Option<u64>)> = songs
            .iter()
            .map(|(id, title)| (id.as_str(), title.as_str(), None))
            .collect();
        let subsonic = musiclib_core::testing::subsonic_server(&songs, &audio).await;
        let url = subsonic.uri();
        let library = TestLibrary::builder(backend)
            .config(move |config| {
                config.local_media_import_path = Some(path);
                config.enrichment.acoustid_api_key = Some("test-key".into());
                config.enrichment.acoustid_base_url = acoustid_url;
                config.remote.subsonic = Some(musiclib_core::config::SubsonicSourceConfig {
                    url,
                    username: "friend".into(),
                    password: "app-password".into(),
                });
            })
            .build()
            .await;
        let app = App::new(library).await;
        let owner = app.register("owner").await;
        let other = app.register("other").await;
        let admin = app.admin_token().await;
        let (_, me) = app.get("/api/v1/users/me", Some(&owner)).await;
        let world = world(&app, &owner, me["id"].as_str().unwrap()).await;
        let tokens = [
            None,
            Some(owner.as_str()),
            Some(other.as_str()),
            Some(admin.as_str()),
        ];

        let mut failures = Vec::new();
        for row in rows() {
            let (method, template) = row
                .operation
                .split_once(' ')
                .expect("an operation is `METHOD /path`");
            for (role, token) in tokens.iter().enumerate() {
                let path = (row.path)(&world, role);
                assert!(
                    matches_template(template, &path),
                    "{}: {path} is not an instance of {template}",
                    row.case
                );
                let uri = format!("/api/v1{path}");
                let mut request = Request::builder().method(method).uri(&uri);
                if let Some(token) = token {
                    request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
                let request = match (row.body)(&world, role) {
                    Payload::None => request.body(Body::empty()),
                    Payload::Json(body) => request
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(body.to_string())),
                    Payload::Raw(content_type, bytes) => request
                        .header(header::CONTENT_TYPE, content_type)
                        .body(Body::from(bytes)),
                }
                .unwrap();
                let (status, answer) = app.call(request).await;
                if status.as_u16() != row.expect[role] {
                    failures.push(format!(
                        "{} ({}) by {}: {uri} answered {status} (expected {}): {answer}",
                        row.operation, row.case, ROLES[role], row.expect[role]
                    ));
                } else if !status.is_success() {
                    // Every refusal names its reason in the one error shape.
                    assert!(
                        answer["error"]["code"].is_string(),
                        "{} ({}) by {}: {answer}",
                        row.operation,
                        row.case,
                        ROLES[role]
                    );
                }
            }
        }
        assert!(
            failures.is_empty(),
            "permission table:\n{}",
            failures.join("\n")
        );
    }
);
