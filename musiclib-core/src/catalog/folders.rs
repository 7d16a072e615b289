//! The library as folders, the way gonic and Polaris show it: the import folder's real tree
//! (each local track's `source_id` is its path under the folder), and beside it a library of
//! uploads and one of remote downloads, which have no path and are filed as
//! `album artist/album/` from their tags.
//!
//! The tree is built from one read of every track's place and kept until the sync clock moves
//! (any track added, changed or deleted), so browsing reads no more than the page's tracks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::Catalog;
use crate::domain::{Page, Paged, Track};
use crate::{Error, Result, TrackId};

/// One of the libraries the folders are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FolderLibrary {
    /// The import folder (`LOCAL_MEDIA_IMPORT_PATH`): its real tree.
    Music,
    /// Uploaded files, by album artist and album.
    Uploads,
    /// Tracks fetched from remote sources, by album artist and album.
    Remote,
}

impl FolderLibrary {
    /// Every library, in the order they are listed.
    pub const ALL: [FolderLibrary; 3] = [
        FolderLibrary::Music,
        FolderLibrary::Uploads,
        FolderLibrary::Remote,
    ];

    /// The wire name: `music`, `uploads`, `remote`.
    pub fn as_str(self) -> &'static str {
        match self {
            FolderLibrary::Music => "music",
            FolderLibrary::Uploads => "uploads",
            FolderLibrary::Remote => "remote",
        }
    }

    /// The name shown.
    pub fn title(self) -> &'static str {
        match self {
            FolderLibrary::Music => "Music folder",
            FolderLibrary::Uploads => "Uploads",
            FolderLibrary::Remote => "Remote",
        }
    }

    /// A number for it (the legacy interface's music folder ids: 1, 2, 3).
    pub fn number(self) -> i64 {
        match self {
            FolderLibrary::Music => 1,
            FolderLibrary::Uploads => 2,
            FolderLibrary::Remote => 3,
        }
    }

    /// From [`FolderLibrary::as_str`].
    pub fn parse(name: &str) -> Option<FolderLibrary> {
        FolderLibrary::ALL
            .into_iter()
            .find(|library| library.as_str() == name)
    }

    /// From [`FolderLibrary::number`].
    pub fn from_number(number: i64) -> Option<FolderLibrary> {
        FolderLibrary::ALL
            .into_iter()
            .find(|library| library.number() == number)
    }

    fn of_source(source: &str) -> Option<FolderLibrary> {
        match source {
            "local_folder" => Some(FolderLibrary::Music),
            "upload" => Some(FolderLibrary::Uploads),
            "remote" => Some(FolderLibrary::Remote),
            _ => None,
        }
    }
}

/// A subfolder as its parent lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderEntry {
    /// Its library.
    pub library: FolderLibrary,
    /// Its path in the library (`/`-separated).
    pub path: String,
    /// Its name (the last part of the path).
    pub name: String,
    /// Folders directly in it.
    pub folder_count: usize,
    /// Tracks in it and all its subfolders.
    pub track_count: usize,
}

/// A folder: its subfolders and one page of its tracks.
#[derive(Debug, Clone)]
pub struct Folder {
    /// Its library; `None` for the top, which lists the libraries.
    pub library: Option<FolderLibrary>,
    /// Its path (`""`: the library's root).
    pub path: String,
    /// Its name.
    pub name: String,
    /// Its parent: `None` at the top; `Some((None, ""))` for a library's root.
    pub parent: Option<(Option<FolderLibrary>, String)>,
    /// Its subfolders, by name.
    pub folders: Vec<FolderEntry>,
    /// Tracks directly in it: one page, by file name (by disc and number in a library filed
    /// by tags).
    pub tracks: Paged<Track>,
    /// Tracks in it and all its subfolders.
    pub total_tracks: usize,
}

#[derive(Debug, Default)]
struct Node {
    /// Subfolder names → their paths.
    folders: BTreeMap<String, String>,
    /// Tracks directly here with their sort keys, sorted.
    tracks: Vec<(String, TrackId)>,
    /// Tracks here and below.
    total: usize,
}

/// Every library's folders.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    nodes: HashMap<(FolderLibrary, String), Node>,
}

impl Tree {
    fn node(&self, library: FolderLibrary, path: &str) -> Option<&Node> {
        self.nodes.get(&(library, path.to_string()))
    }

    fn add(&mut self, library: FolderLibrary, folder: &str, sort: String, track: TrackId) {
        // Every ancestor exists and counts the track.
        let mut path = String::new();
        self.nodes
            .entry((library, String::new()))
            .or_default()
            .total += 1;
        for part in folder.split('/').filter(|part| !part.is_empty()) {
            let parent = path.clone();
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            self.nodes
                .entry((library, parent))
                .or_default()
                .folders
                .insert(part.to_string(), path.clone());
            self.nodes.entry((library, path.clone())).or_default().total += 1;
        }
        self.nodes
            .entry((library, path))
            .or_default()
            .tracks
            .push((sort, track));
    }

    fn entry(&self, library: FolderLibrary, path: &str, name: &str) -> FolderEntry {
        let node = self.node(library, path);
        FolderEntry {
            library,
            path: path.to_string(),
            name: name.to_string(),
            folder_count: node.map_or(0, |node| node.folders.len()),
            track_count: node.map_or(0, |node| node.total),
        }
    }
}

/// A name for a tag-filed folder: no `/` (it would split the path), never empty.
fn folder_name(name: Option<&str>, unknown: &str) -> String {
    let name = name
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .unwrap_or(unknown);
    name.replace('/', "∕")
}

/// A path as a request gives it: `/`-separated parts, none empty, `.` or `..`.
fn clean_path(path: &str) -> Result<String> {
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    if parts.iter().any(|part| *part == "." || *part == "..") || path.len() > 4096 {
        return Err(Error::invalid("path", "must be a folder's path as listed"));
    }
    Ok(parts.join("/"))
}

type Place = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
);

impl Catalog {
    /// The folders tree, read afresh when the sync clock moved.
    async fn tree(&self) -> Result<Arc<Tree>> {
        let clock = self.db.sync_clock().await?;
        if let Some(tree) = self.folders.get(&(), &clock) {
            return Ok(tree);
        }
        let places: Vec<Place> = self
            .db
            .sql(
                "SELECT id, source, source_id, album_artist_name, artist_name, album_title,
                 disc_number, track_number FROM tracks",
            )
            .fetch_all(self.db.pool())
            .await?;
        let mut tree = Tree::default();
        for (id, source, source_id, album_artist, artist, album, disc, number) in places {
            let Some(library) = FolderLibrary::of_source(&source) else {
                continue;
            };
            let id = TrackId::from_db(id);
            match library {
                FolderLibrary::Music => {
                    let (folder, file) = match source_id.rsplit_once('/') {
                        Some((folder, file)) => (folder, file),
                        None => ("", source_id.as_str()),
                    };
                    tree.add(library, folder, file.to_lowercase(), id);
                }
                _ => {
                    let folder = format!(
                        "{}/{}",
                        folder_name(
                            album_artist.as_deref().or(artist.as_deref()),
                            "Unknown artist"
                        ),
                        folder_name(album.as_deref(), "Unknown album")
                    );
                    let sort = format!(
                        "{:04}-{:06}",
                        disc.unwrap_or(1).clamp(0, 9999),
                        number.unwrap_or(0).clamp(0, 999_999)
                    );
                    tree.add(library, &folder, sort, id);
                }
            }
        }
        for node in tree.nodes.values_mut() {
            node.tracks.sort();
        }
        let tree = Arc::new(tree);
        self.folders.insert((), clock, tree.clone());
        Ok(tree)
    }

    /// The libraries that hold tracks (the import folder's always when it is configured),
    /// each as a folder entry.
    pub async fn folder_libraries(&self, import_configured: bool) -> Result<Vec<FolderEntry>> {
        let tree = self.tree().await?;
        Ok(FolderLibrary::ALL
            .into_iter()
            .filter(|library| {
                tree.node(*library, "").is_some()
                    || (*library == FolderLibrary::Music && import_configured)
            })
            .map(|library| tree.entry(library, "", library.title()))
            .collect())
    }

    /// A folder: `library` `None` is the top (the libraries as its folders); `path` is the
    /// folder's path in its library (`""`: its root). `page` pages its tracks. A path that
    /// names no folder is not found.
    pub async fn folder(
        &self,
        library: Option<FolderLibrary>,
        path: &str,
        page: Page,
        import_configured: bool,
    ) -> Result<Folder> {
        let path = clean_path(path)?;
        let Some(library) = library else {
            let folders = self.folder_libraries(import_configured).await?;
            let total_tracks = folders.iter().map(|folder| folder.track_count).sum();
            return Ok(Folder {
                library: None,
                path: String::new(),
                name: "Folders".into(),
                parent: None,
                folders,
                tracks: Paged {
                    items: Vec::new(),
                    total: 0,
                    page,
                },
                total_tracks,
            });
        };
        let tree = self.tree().await?;
        let empty = Node::default();
        let node = match tree.node(library, &path) {
            Some(node) => node,
            // An empty import folder is still a library.
            None if path.is_empty() => &empty,
            None => {
                return Err(Error::not_found(
                    "folder",
                    format!("{}/{path}", library.as_str()),
                ))
            }
        };
        let folders = node
            .folders
            .iter()
            .map(|(name, child)| tree.entry(library, child, name))
            .collect();
        let ids: Vec<TrackId> = node
            .tracks
            .iter()
            .skip(page.offset() as usize)
            .take(page.limit() as usize)
            .map(|(_, id)| id.clone())
            .collect();
        let tracks = self.tracks_by_ids(&ids).await?;
        let (name, parent) = match path.rsplit_once('/') {
            Some((parent, name)) => (name.to_string(), Some((Some(library), parent.to_string()))),
            None if path.is_empty() => (library.title().to_string(), Some((None, String::new()))),
            None => (path.clone(), Some((Some(library), String::new()))),
        };
        Ok(Folder {
            library: Some(library),
            name,
            parent,
            folders,
            tracks: Paged {
                items: tracks,
                total: node.tracks.len() as i64,
                page,
            },
            total_tracks: node.total,
            path,
        })
    }

    /// The folder a track is in: its library and path.
    pub async fn folder_of(&self, track: &Track) -> Option<(FolderLibrary, String)> {
        let library = FolderLibrary::of_source(track.source.as_str())?;
        Some(match library {
            FolderLibrary::Music => (
                library,
                track
                    .source_id
                    .rsplit_once('/')
                    .map(|(folder, _)| folder.to_string())
                    .unwrap_or_default(),
            ),
            _ => (
                library,
                format!(
                    "{}/{}",
                    folder_name(
                        track
                            .album_artist_name
                            .as_deref()
                            .or(track.artist_name.as_deref()),
                        "Unknown artist"
                    ),
                    folder_name(track.album_title.as_deref(), "Unknown album")
                ),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked() {
        assert_eq!(clean_path("/a//b/").unwrap(), "a/b");
        assert_eq!(clean_path("").unwrap(), "");
        assert!(clean_path("a/../b").is_err());
        assert!(clean_path("./a").is_err());
    }

    #[test]
    fn the_tree_counts_every_ancestor() {
        let mut tree = Tree::default();
        let id = || TrackId::new();
        tree.add(FolderLibrary::Music, "A/B", "1.flac".into(), id());
        tree.add(FolderLibrary::Music, "A/B", "2.flac".into(), id());
        tree.add(FolderLibrary::Music, "A", "x.mp3".into(), id());
        tree.add(FolderLibrary::Music, "", "top.mp3".into(), id());
        assert_eq!(tree.node(FolderLibrary::Music, "").unwrap().total, 4);
        assert_eq!(tree.node(FolderLibrary::Music, "A").unwrap().total, 3);
        assert_eq!(
            tree.node(FolderLibrary::Music, "A/B").unwrap().tracks.len(),
            2
        );
        let entry = tree.entry(FolderLibrary::Music, "A", "A");
        assert_eq!((entry.folder_count, entry.track_count), (1, 3));
    }
}
