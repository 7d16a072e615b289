//! Claims of the spec and the docs that no other test holds: symlinks in the import folder
//! stay inside it, and access tokens expire, belong to one secret and die with their account.

use std::time::Duration;

use crate::backend_test;
use crate::support::*;
use musiclib_core::catalog::TrackFilter;
use musiclib_core::domain::{Page, Source};
use musiclib_core::ErrorKind;
use serde_json::json;

backend_test! {
    #[services]
    async fn symlinks_are_followed_only_inside_the_import_folder(backend: Backend) {
        let corpus = corpus();
        let scratch = tempfile::tempdir().unwrap();
        let folder = scratch.path().join("music");
        let outside = scratch.path().join("outside");
        std::fs::create_dir_all(folder.join("album")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let song = |n: u32| match n {
            1 => "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
            2 => "library/Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
            _ => "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
        };
        std::fs::write(folder.join("album/inside.mp3"), corpus_file(&corpus, song(1))).unwrap();
        std::fs::write(outside.join("secret.mp3"), corpus_file(&corpus, song(2))).unwrap();
        std::fs::write(outside.join("other.flac"), corpus_file(&corpus, song(3))).unwrap();
        use std::os::unix::fs::symlink;
        // To a file outside, to /etc, to the parent folder (a loop), and to a file inside.
        symlink(outside.join("secret.mp3"), folder.join("escape.mp3")).unwrap();
        symlink("../outside/other.flac", folder.join("relative-escape.flac")).unwrap();
        symlink("/etc/passwd", folder.join("passwd.mp3")).unwrap();
        symlink("/etc", folder.join("etc")).unwrap();
        symlink("..", folder.join("up")).unwrap();
        symlink(folder.join("album"), folder.join("album-link")).unwrap();
        symlink("album/inside.mp3", folder.join("linked.mp3")).unwrap();

        let import = folder.clone();
        let library = TestLibrary::builder(backend)
            .config(move |config| config.local_media_import_path = Some(import))
            .build()
            .await;
        let report = tokio::time::timeout(Duration::from_secs(60), library.ingest().scan_local_folder(|_| {}))
            .await
            .expect("the scan ends (no loop through `up`)")
            .expect("scan");
        let tracks = library
            .catalog()
            .list_tracks(
                &TrackFilter { source: Some(Source::LocalFolder), ..Default::default() },
                None,
                Page::new(Some(200), None).unwrap(),
            )
            .await
            .unwrap()
            .items;
        let paths: Vec<&str> = tracks.iter().map(|track| track.source_id.as_str()).collect();
        assert!(paths.contains(&"album/inside.mp3"), "{paths:?}");
        for escaped in ["escape.mp3", "relative-escape.flac", "passwd.mp3"] {
            assert!(!paths.contains(&escaped), "{escaped} was imported: {paths:?}");
        }
        assert!(
            paths.iter().all(|path| !path.starts_with("etc/") && !path.starts_with("up/") && !path.starts_with("album-link/")),
            "a linked folder was walked: {paths:?}"
        );
        // Nothing of what lies outside reached the library, under any name.
        let titles: Vec<&str> = tracks.iter().map(|track| track.title.as_str()).collect();
        assert!(!titles.iter().any(|title| title.contains("Corazón") || title.contains("First Light")), "{titles:?}");
        assert!(report.skipped >= 6, "{report:#?}");
        assert_eq!(report.failed, 0, "{report:#?}");
    }
}

/// A token with these claims, signed with `secret`.
fn token(secret: &[u8], sub: &str, exp: u64, ver: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &json!({"sub": sub, "iat": now.saturating_sub(7200), "exp": exp, "ver": ver}),
        &jsonwebtoken::EncodingKey::from_secret(secret),
    )
    .unwrap()
}

backend_test! {
    async fn tokens_expire_belong_to_one_secret_and_die_with_their_account(backend: Backend) {
        let library = TestLibrary::builder(backend)
            .config(|config| config.token_ttl = Duration::from_secs(2 * 3600))
            .build()
            .await;
        let accounts = library.accounts();
        let issued = accounts.register("dora", "long enough", None).await.unwrap();
        assert_eq!(issued.expires_in, 2 * 3600, "TOKEN_TTL_HOURS is the lifetime");
        let secret = library.config().jwt_secret.clone();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let id = issued.user.id.to_string();

        // The same claims: fine while valid, refused once expired (past the 5 s leeway).
        accounts.authenticate(&token(&secret, &id, now + 60, 0)).await.expect("a valid token");
        let expired = accounts.authenticate(&token(&secret, &id, now - 10, 0)).await.unwrap_err();
        assert_eq!(expired.kind(), ErrorKind::Unauthenticated);
        assert!(expired.to_string().contains("expired"), "{expired}");
        // Signed with another secret (another server, or a JWT_SECRET that changed).
        let foreign = accounts.authenticate(&token(b"another secret entirely", &id, now + 60, 0)).await.unwrap_err();
        assert_eq!(foreign.kind(), ErrorKind::Unauthenticated);

        // Disabled, then deleted: the account's tokens stop working.
        let admin = musiclib_core::auth::Caller {
            user: accounts.create_user("root", "root-password", true).await.unwrap(),
        };
        accounts.set_disabled(&admin, &issued.user.id, true).await.unwrap();
        let disabled = accounts.authenticate(&issued.token).await.unwrap_err();
        assert_eq!(disabled.kind(), ErrorKind::Unauthenticated);
        accounts.set_disabled(&admin, &issued.user.id, false).await.unwrap();
        let fresh = accounts.login("dora", "long enough", None).await.unwrap();
        accounts.authenticate(&fresh.token).await.expect("enabled again, a new sign-in works");
        library.delete_user(&admin, &issued.user.id).await.unwrap();
        let deleted = accounts.authenticate(&fresh.token).await.unwrap_err();
        assert_eq!(deleted.kind(), ErrorKind::Unauthenticated);
    }
}
