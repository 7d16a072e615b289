//! The library as folders: the import folder's real tree, and the uploads and remote
//! downloads filed by album artist and album.

use axum::extract::State;
use musiclib_core::catalog::{Folder, FolderEntry, FolderLibrary};
use musiclib_core::Library;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::dto::{Page, TrackOut};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Auth, Query};

pub(super) fn routes() -> OpenApiRouter<Library> {
    OpenApiRouter::new().routes(routes!(get_folder))
}

/// Which folder.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FolderQuery {
    /// `music` (the import folder), `uploads` or `remote`; absent: the top, which lists the
    /// libraries that hold tracks.
    #[param(pattern = "^(music|uploads|remote)$")]
    library: Option<String>,
    /// The folder's path in its library, `/`-separated as listed (absent or empty: its root).
    #[param(max_length = 4096)]
    path: Option<String>,
    /// Tracks per page, 1–200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
    /// Offset in the folder's tracks (default 0).
    #[param(minimum = 0)]
    offset: Option<i64>,
}

/// A subfolder.
#[derive(Debug, Serialize, ToSchema)]
pub struct FolderEntryOut {
    /// `music`, `uploads` or `remote`.
    library: String,
    /// Its path in the library (`""`: the library's root); pass it back as `path`.
    path: String,
    name: String,
    /// Folders directly in it.
    folder_count: usize,
    /// Tracks in it and all its subfolders.
    track_count: usize,
}

impl From<FolderEntry> for FolderEntryOut {
    fn from(entry: FolderEntry) -> Self {
        FolderEntryOut {
            library: entry.library.as_str().to_string(),
            path: entry.path,
            name: entry.name,
            folder_count: entry.folder_count,
            track_count: entry.track_count,
        }
    }
}

/// Where a folder's parent is.
#[derive(Debug, Serialize, ToSchema)]
pub struct FolderRefOut {
    /// Null for the top.
    library: Option<String>,
    path: String,
}

/// A folder: its subfolders and a page of its tracks.
#[derive(Debug, Serialize, ToSchema)]
pub struct FolderOut {
    /// Null at the top.
    library: Option<String>,
    path: String,
    name: String,
    /// Null at the top.
    parent: Option<FolderRefOut>,
    /// Its subfolders, by name (at the top: the libraries).
    folders: Vec<FolderEntryOut>,
    /// Tracks directly in it, by file name (uploads and remote: by disc and number).
    tracks: Page<TrackOut>,
    /// Tracks in it and all its subfolders.
    total_tracks: usize,
}

impl From<Folder> for FolderOut {
    fn from(folder: Folder) -> Self {
        FolderOut {
            library: folder.library.map(|library| library.as_str().to_string()),
            path: folder.path,
            name: folder.name,
            parent: folder.parent.map(|(library, path)| FolderRefOut {
                library: library.map(|library| library.as_str().to_string()),
                path,
            }),
            folders: folder
                .folders
                .into_iter()
                .map(FolderEntryOut::from)
                .collect(),
            tracks: Page::from_core(folder.tracks, TrackOut::from),
            total_tracks: folder.total_tracks,
        }
    }
}

/// A folder of the library: its subfolders (with their counts) and a page of its tracks.
/// Without `library`, the top: the libraries as folders.
#[utoipa::path(get, path = "/folders", tag = "tracks", params(FolderQuery), security(("bearer" = [])),
    responses((status = 200, body = FolderOut), (status = 401, body = ErrorBody),
        (status = 404, description = "No such folder", body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn get_folder(
    State(library): State<Library>,
    Auth(_caller): Auth,
    Query(query): Query<FolderQuery>,
) -> Result<axum::Json<FolderOut>, ApiError> {
    let which = match query.library.as_deref() {
        None => None,
        Some(name) => Some(FolderLibrary::parse(name).ok_or_else(|| {
            musiclib_core::Error::invalid("library", "must be music, uploads or remote")
        })?),
    };
    let page = musiclib_core::domain::Page::new(query.limit, query.offset)?;
    let folder = library
        .catalog()
        .folder(
            which,
            query.path.as_deref().unwrap_or(""),
            page,
            library.config().local_media_import_path.is_some(),
        )
        .await?;
    Ok(axum::Json(folder.into()))
}
