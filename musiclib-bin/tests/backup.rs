//! `musiclib backup` and `musiclib restore` on the real binary: a backup made while uploads
//! go on, restored into a fresh data directory, serves every track the backup holds (the same
//! bytes) and takes the same login and app passwords (the generated secrets came along); a
//! restore refuses a target that holds a library unless `--force`, and a backup refuses a
//! folder that is not empty. Embedded, and (with the test settings) PostgreSQL with
//! `pg_dump`/`pg_restore` and local media.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use support::{spawn, Api, Cluster, Role, Setup, ADMIN, ADMIN_PASSWORD};

fn musiclib(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_musiclib"))
        .args(args)
        .envs(env.iter().cloned())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The corpus's audio files, a few of each album.
fn audio_files() -> Vec<std::path::PathBuf> {
    let library = musiclib_core::testing::corpus().join("library");
    let mut files: Vec<_> = support::walk(&library)
        .into_iter()
        .filter(|path| musiclib_core::probe::has_audio_extension(path))
        .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    files.sort();
    files.into_iter().step_by(7).take(12).collect()
}

/// The subsonic ping of `user` with the app password `password`, on `base`.
async fn ping(client: &reqwest::Client, base: &str, password: &str) -> Value {
    let answer: Value = client
        .get(format!(
            "{base}/rest/ping?u={ADMIN}&p={password}&v=1.16.1&c=backup-test&f=json"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["subsonic-response"].clone()
}

async fn backup_and_restore(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    // Generated secrets, kept in the data directory: what a backup must carry.
    cluster
        .env
        .retain(|(key, _)| key != "JWT_SECRET" && key != "LEGACY_SECRET_KEY");
    if setup == Setup::ScaleOut {
        // PostgreSQL with local media: pg_dump and the media folder both.
        cluster
            .env
            .retain(|(key, _)| !key.starts_with("S3_") && key != "STORAGE_BACKEND");
    }
    cluster.start().await;
    let admin = Api::login(&cluster.client, &cluster.api, ADMIN, ADMIN_PASSWORD).await;
    let (status, body) = admin.get("/users/me/legacy-password").await;
    assert_eq!(status, 200, "{body}");
    let app_password = body["password"].as_str().unwrap().to_string();

    let files = audio_files();
    let (before, during) = files.split_at(4);
    for file in before {
        let (status, body) = admin.upload_file(file).await;
        assert_eq!(status, 201, "{}: {body}", file.display());
    }
    // Uploads go on while the backup is made.
    let uploading = {
        let admin = admin.clone();
        let during = during.to_vec();
        tokio::spawn(async move {
            for file in during {
                let (status, body) = admin.upload_file(&file).await;
                assert!(status == 201 || status == 409, "{}: {body}", file.display());
            }
        })
    };
    let scratch = tempfile::tempdir().unwrap();
    let backup_dir = scratch.path().join("backup");
    let env = cluster.env_for(Role::Api);
    let made = tokio::task::spawn_blocking({
        let env = env.clone();
        let dir = backup_dir.clone();
        move || musiclib(&["backup", dir.to_str().unwrap()], &env)
    })
    .await
    .unwrap();
    assert!(made.status.success(), "backup failed: {}", text(&made));
    assert_eq!(
        String::from_utf8_lossy(&made.stdout).lines().last(),
        Some(backup_dir.to_str().unwrap())
    );
    uploading.await.unwrap();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(backup_dir.join("musiclib-backup.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["missing_media"], 0, "{manifest}");
    assert_eq!(manifest["schema"], musiclib_core::schema_version());
    assert_eq!(
        manifest["secrets"],
        serde_json::json!(["jwt_secret", "legacy_secret_key"])
    );
    // A backup never goes into a folder that holds something.
    let again = musiclib(&["backup", backup_dir.to_str().unwrap()], &env);
    assert!(!again.status.success());
    assert!(text(&again).contains("not empty"), "{}", text(&again));

    // What the source serves now, by id.
    let tracks = admin.tracks().await;
    let mut originals = std::collections::HashMap::new();
    for track in &tracks {
        let id = track["id"].as_str().unwrap().to_string();
        let (status, bytes) = admin.stream(&id).await;
        assert_eq!(status, 200);
        originals.insert(id, bytes);
    }

    // Restore into a fresh data directory (and, for PostgreSQL, a fresh database).
    let fresh = scratch.path().join("restored");
    let port = support::free_port();
    let mut restored_env: Vec<(String, String)> = env
        .iter()
        .filter(|(key, _)| key != "DATA_DIR" && key != "BIND_ADDRESS" && key != "DATABASE_URL")
        .cloned()
        .collect();
    restored_env.push(("DATA_DIR".into(), fresh.display().to_string()));
    restored_env.push(("BIND_ADDRESS".into(), format!("127.0.0.1:{port}")));
    if setup == Setup::ScaleOut {
        restored_env.push((
            "DATABASE_URL".into(),
            musiclib_core::testing::create_postgres_database().await,
        ));
    }
    let restored = musiclib(&["restore", backup_dir.to_str().unwrap()], &restored_env);
    assert!(
        restored.status.success(),
        "restore failed: {}",
        text(&restored)
    );
    // Not twice without --force; with it, yes.
    let twice = musiclib(&["restore", backup_dir.to_str().unwrap()], &restored_env);
    assert!(!twice.status.success());
    assert!(
        text(&twice).contains("already holds a library"),
        "{}",
        text(&twice)
    );
    let forced = musiclib(
        &["restore", "--force", backup_dir.to_str().unwrap()],
        &restored_env,
    );
    assert!(
        forced.status.success(),
        "restore --force failed: {}",
        text(&forced)
    );

    cluster.kill(Role::Api);
    let log = scratch.path().join("restored.log");
    let _server = spawn("restored", &["serve"], &restored_env, &log);
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(&cluster.client, &base, &log).await;
    let api = format!("{base}/api/v1");
    let admin_there = Api::login(&cluster.client, &api, ADMIN, ADMIN_PASSWORD).await;
    let restored_tracks = admin_there.tracks().await;
    assert!(
        restored_tracks.len() >= before.len(),
        "{} tracks restored, {} uploaded before the backup",
        restored_tracks.len(),
        before.len()
    );
    for track in &restored_tracks {
        let id = track["id"].as_str().unwrap();
        let (status, bytes) = admin_there.stream(id).await;
        assert_eq!(status, 200, "track {id} of the backup does not stream");
        assert_eq!(Some(&bytes), originals.get(id), "track {id}: other bytes");
    }
    // The app password still works: the restored legacy key reads it.
    let pinged = ping(&cluster.client, &base, &app_password).await;
    assert_eq!(pinged["status"], "ok", "{pinged}");
}

async fn wait_healthy(client: &reqwest::Client, base: &str, log: &Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(response) = client.get(format!("{base}/health")).send().await {
            if response.status() == 200 {
                return;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the restored server did not start: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus and ffmpeg: run the README test command"
)]
async fn embedded_backup_during_uploads_restores_whole() {
    backup_and_restore(Setup::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, pg_dump and the corpus: run the README test command"
)]
async fn postgres_backup_during_uploads_restores_whole() {
    backup_and_restore(Setup::ScaleOut).await;
}
