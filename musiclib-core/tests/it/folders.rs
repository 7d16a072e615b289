//! The library as folders: the import folder's real tree, uploads filed by album artist and
//! album.

use std::collections::BTreeMap;
use std::path::Path;

use musiclib_core::catalog::{Folder, FolderLibrary};
use musiclib_core::domain::Page;
use musiclib_core::{ErrorKind, Library};

use crate::backend_test;
use crate::support::*;

/// Every folder under `path` with the file names directly in it, walking the API.
async fn walk(
    library: &Library,
    which: FolderLibrary,
    path: &str,
    into: &mut BTreeMap<String, Vec<String>>,
) {
    let mut files = Vec::new();
    let mut offset = 0;
    let mut folder: Folder;
    loop {
        folder = library
            .catalog()
            .folder(
                Some(which),
                path,
                Page::new(Some(200), Some(offset)).unwrap(),
                true,
            )
            .await
            .unwrap();
        let got = folder.tracks.items.len();
        files.extend(
            folder
                .tracks
                .items
                .iter()
                .map(|track| track.source_id.rsplit('/').next().unwrap().to_string()),
        );
        offset += 200;
        if got < 200 {
            break;
        }
    }
    files.sort();
    // Counts agree with what is below.
    let below: usize = folder.folders.iter().map(|entry| entry.track_count).sum();
    assert_eq!(folder.total_tracks, below + files.len(), "{path}");
    into.insert(path.to_string(), files);
    for entry in folder.folders {
        Box::pin(walk(library, which, &entry.path, into)).await;
    }
}

/// The same from the disk: every folder holding an imported file, and its ancestors.
fn on_disk(root: &Path, imported: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut tree: BTreeMap<String, Vec<String>> = BTreeMap::new();
    tree.insert(String::new(), Vec::new());
    for path in imported {
        assert!(root.join(path).is_file(), "{path}");
        let (folder, file) = path.rsplit_once('/').unwrap_or(("", path));
        let mut at = String::new();
        for part in folder.split('/').filter(|part| !part.is_empty()) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            tree.entry(at.clone()).or_default();
        }
        tree.entry(folder.to_string())
            .or_default()
            .push(file.to_string());
    }
    for files in tree.values_mut() {
        files.sort();
    }
    tree
}

backend_test! {
    #[services]
    async fn the_folder_tree_is_the_import_folders_tree(backend: Backend) {
        let corpus = corpus();
        let root = corpus.join("library");
        let import = root.clone();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(import))
            .build()
            .await;
        library.ingest().scan_local_folder(|_| {}).await.expect("scan");
        let imported: Vec<String> = sqlx::query_scalar("SELECT source_id FROM tracks WHERE source = 'local_folder'")
            .fetch_all(musiclib_core::testing::pool(&library))
            .await
            .unwrap();
        assert!(imported.len() > 10);

        let mut walked = BTreeMap::new();
        walk(&library, FolderLibrary::Music, "", &mut walked).await;
        assert_eq!(walked, on_disk(&root, &imported));

        // The top lists the libraries; an upload is filed under its album artist and album.
        let alice = user(&library, "alice").await;
        let wav = musiclib_core::testing::wav_tone(1);
        let upload = library.ingest().upload_track(&alice, Some("Tone.wav"), wav.as_slice()).await.unwrap().track;
        let top = library.catalog().folder(None, "", Page::default(), true).await.unwrap();
        let names: Vec<&str> = top.folders.iter().map(|entry| entry.library.as_str()).collect();
        assert_eq!(names, ["music", "uploads"]);
        assert_eq!(top.total_tracks, imported.len() + 1);
        let (which, path) = library.catalog().folder_of(&upload).await.unwrap();
        assert_eq!(which, FolderLibrary::Uploads);
        let folder = library.catalog().folder(Some(which), &path, Page::default(), true).await.unwrap();
        assert_eq!(folder.tracks.items[0].id, upload.id);
        assert_eq!(folder.parent.as_ref().map(|(library, _)| *library), Some(Some(FolderLibrary::Uploads)));

        // A path that names no folder is not found; one that climbs is refused.
        let missing = library.catalog().folder(Some(FolderLibrary::Music), "No Such Folder", Page::default(), true).await.unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let climbing = library.catalog().folder(Some(FolderLibrary::Music), "../etc", Page::default(), true).await.unwrap_err();
        assert_eq!(climbing.field(), Some("path"));
    }
}
