//! Browsing by folders: `getMusicFolders` names the libraries (the import folder, uploads,
//! remote downloads), `getIndexes` and `getMusicDirectory` follow the import folder's real
//! tree (and the uploads and downloads filed by album artist and album), as gonic and Polaris
//! do. A directory's id is `fd-{library}-{path, base64url}`; ids of artists and albums (from
//! `getArtists`) still open the tag-based directories some apps keep using.

use std::collections::BTreeMap;

use base64::Engine as _;
use musiclib_core::catalog::{FolderEntry, FolderLibrary};
use musiclib_core::domain::Page;

use super::model::{self, IGNORED_ARTICLES};
use crate::response::{Element, SubsonicError};
use crate::{Outcome, Reply, Request};

/// Most tracks of one folder listed.
const MAX_FILES: i64 = 10_000;

const PREFIX: &str = "fd-";

/// The id of a folder.
pub(crate) fn folder_id(library: FolderLibrary, path: &str) -> String {
    format!(
        "{PREFIX}{}-{}",
        library.number(),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(path)
    )
}

/// The folder an id names; `None` for an id that is not a folder's.
pub(crate) fn parse_folder_id(id: &str) -> Option<(FolderLibrary, String)> {
    let rest = id.strip_prefix(PREFIX)?;
    let (number, path) = rest.split_once('-')?;
    let library = FolderLibrary::from_number(number.parse().ok()?)?;
    let path = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(path)
        .ok()?;
    Some((library, String::from_utf8(path).ok()?))
}

fn import_configured(request: &Request) -> bool {
    request.library.config().local_media_import_path.is_some()
}

/// The libraries a request names (`musicFolderId`), or all of them.
async fn libraries(request: &Request) -> Result<Vec<FolderEntry>, SubsonicError> {
    let all = request
        .library
        .catalog()
        .folder_libraries(import_configured(request))
        .await?;
    match request.params.int("musicFolderId")? {
        None => Ok(all),
        Some(number) => {
            let wanted = FolderLibrary::from_number(number)
                .ok_or_else(|| SubsonicError::not_found(format_args!("music folder {number}")))?;
            Ok(all
                .into_iter()
                .filter(|entry| entry.library == wanted)
                .collect())
        }
    }
}

/// `getMusicFolders`: the libraries that hold tracks.
pub(crate) async fn music_folders(request: &Request) -> Outcome {
    let folders = request
        .library
        .catalog()
        .folder_libraries(import_configured(request))
        .await?
        .into_iter()
        .map(|entry| {
            Element::new("musicFolder")
                .attr("id", entry.library.number())
                .attr("name", entry.name)
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("musicFolders").list("musicFolder", folders),
    )))
}

/// `getIndexes`: the top folders of the libraries (`musicFolderId`: of one), grouped by
/// their index letter, and the files at the top of the import folder.
pub(crate) async fn indexes(request: &Request) -> Outcome {
    let catalog = request.library.catalog();
    let mut groups: BTreeMap<String, Vec<Element>> = BTreeMap::new();
    let mut files = Vec::new();
    for library in libraries(request).await? {
        let root = catalog
            .folder(
                Some(library.library),
                "",
                Page::clamped(Page::MAX_LIMIT, 0, Page::MAX_LIMIT),
                import_configured(request),
            )
            .await?;
        for entry in &root.folders {
            let letter = model::index_letter(&entry.name);
            let key = if letter == "#" {
                "~".to_string()
            } else {
                letter
            };
            groups.entry(key).or_default().push(
                Element::new("artist")
                    .attr("id", folder_id(entry.library, &entry.path))
                    .attr("name", entry.name.as_str()),
            );
        }
        let tracks = top_files(request, library.library, "").await?;
        files.extend(request.every_song("child", &tracks).await?);
    }
    let index = groups
        .into_iter()
        .map(|(key, artists)| {
            Element::new("index")
                .attr("name", if key == "~" { "#".to_string() } else { key })
                .list("artist", artists)
        })
        .collect();
    Ok(Reply::Envelope(Some(
        Element::new("indexes")
            .attr(
                "lastModified",
                musiclib_core::Timestamp::now().as_micros() / 1000,
            )
            .attr("ignoredArticles", IGNORED_ARTICLES)
            .list("index", index)
            .list("child", files),
    )))
}

/// Every track directly in a folder (up to [`MAX_FILES`]).
async fn top_files(
    request: &Request,
    library: FolderLibrary,
    path: &str,
) -> Result<Vec<musiclib_core::domain::Track>, SubsonicError> {
    let catalog = request.library.catalog();
    super::all_pages(MAX_FILES, |page| async move {
        catalog
            .folder(Some(library), path, page, import_configured(request))
            .await
            .map(|folder| folder.tracks)
    })
    .await
}

/// `getMusicDirectory` of a folder: its subfolders, then its files.
pub(crate) async fn directory(
    request: &Request,
    id: &str,
    library: FolderLibrary,
    path: &str,
) -> Outcome {
    let folder = request
        .library
        .catalog()
        .folder(
            Some(library),
            path,
            Page::clamped(Page::MAX_LIMIT, 0, Page::MAX_LIMIT),
            import_configured(request),
        )
        .await
        .map_err(|error| match error.kind() {
            musiclib_core::ErrorKind::NotFound | musiclib_core::ErrorKind::InvalidInput => {
                SubsonicError::not_found(format_args!("directory {id}"))
            }
            _ => error.into(),
        })?;
    let mut children: Vec<Element> = folder
        .folders
        .iter()
        .map(|entry| {
            Element::new("child")
                .attr("id", folder_id(entry.library, &entry.path))
                .attr("parent", id)
                .attr("isDir", true)
                .attr("title", entry.name.as_str())
        })
        .collect();
    let tracks = top_files(request, library, &folder.path).await?;
    children.extend(request.every_song("child", &tracks).await?);
    let parent = match &folder.parent {
        Some((Some(library), path)) => Some(folder_id(*library, path)),
        _ => None,
    };
    Ok(Reply::Envelope(Some(
        Element::new("directory")
            .attr("id", id)
            .opt("parent", parent)
            .attr("name", folder.name.as_str())
            .list("child", children),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_ids_round_trip() {
        for path in ["", "Artist/Album (1999)", "Ünïcode/ディレクトリ"] {
            let id = folder_id(FolderLibrary::Music, path);
            assert_eq!(
                parse_folder_id(&id),
                Some((FolderLibrary::Music, path.to_string()))
            );
        }
        assert_eq!(
            parse_folder_id("0193a1b2-0000-7000-8000-000000000000"),
            None
        );
        assert_eq!(parse_folder_id("fd-9-"), None);
    }
}
