//! `/storage`: statistics that add up to the tracks themselves, and the tracks lacking
//! metadata, each with what it lacks.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::Value;

use crate::api::App;

const FILES: [&str; 4] = [
    "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    "library/Incoming/untitled.mp3",
    "library/Incoming/Some Artist - Song Without Album.ogg",
];

/// The fields a track (as the API shows it) lacks, in the order the API lists them.
fn lacking(track: &Value) -> Vec<&'static str> {
    let blank = |value: &Value| value.as_str().is_none_or(|text| text.trim().is_empty());
    let mut missing = Vec::new();
    if blank(&track["title"]) {
        missing.push("title");
    }
    if track["artist_id"].is_null() {
        missing.push("artist");
    }
    if track["album_id"].is_null() {
        missing.push("album");
    }
    if track["year"].is_null() {
        missing.push("year");
    }
    if blank(&track["genre"]) {
        missing.push("genre");
    }
    if track["has_cover"] != true {
        missing.push("cover");
    }
    missing
}

async fn statistics_add_up(backend: Backend) {
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let token = app.register("alice").await;

    let (status, body) = app.get("/api/v1/storage", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, empty) = app.get("/api/v1/storage", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{empty}");
    assert_eq!(empty["track_count"], 0);
    assert_eq!(empty["footprint"]["total_bytes"], 0);
    assert_eq!(empty["by_format"], serde_json::json!([]));
    // The volume's capacity on local storage; none on an object store.
    match backend {
        Backend::Embedded => {
            let disk = &empty["disk"];
            let capacity = disk["capacity_bytes"].as_u64().unwrap();
            assert!(capacity > 0, "{disk}");
            assert!(disk["free_bytes"].as_u64().unwrap() <= capacity);
            assert!(disk["used_bytes"].as_u64().unwrap() <= capacity);
        }
        Backend::ScaleOut => assert!(empty.get("disk").is_none(), "{empty}"),
    }

    let mut tracks = Vec::new();
    for file in FILES {
        let bytes = std::fs::read(corpus.join(file)).unwrap();
        let name = file.rsplit('/').next().unwrap();
        let (status, track) = app.upload(&token, name, &bytes).await;
        assert_eq!(status, StatusCode::CREATED, "{track}");
        assert_eq!(track["size_bytes"], bytes.len() as i64);
        tracks.push(track);
    }

    let (status, stats) = app.get("/api/v1/storage", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(stats["track_count"], tracks.len());
    let (_, albums) = app.get("/api/v1/albums", Some(&token)).await;
    let (_, artists) = app.get("/api/v1/artists", Some(&token)).await;
    assert_eq!(stats["album_count"], albums["total"]);
    assert_eq!(stats["artist_count"], artists["total"]);
    let originals: i64 = tracks
        .iter()
        .map(|t| t["size_bytes"].as_i64().unwrap())
        .sum();
    let footprint = &stats["footprint"];
    assert_eq!(footprint["originals_bytes"], originals);
    assert_eq!(footprint["renditions_bytes"], 0);
    assert_eq!(
        footprint["total_bytes"].as_i64().unwrap(),
        originals + footprint["covers_bytes"].as_i64().unwrap()
    );
    let duration_ms: i64 = tracks
        .iter()
        .map(|t| t["duration_ms"].as_i64().unwrap())
        .sum();
    assert_eq!(stats["total_playtime_seconds"], duration_ms / 1000);

    // Every breakdown adds up to the tracks' own fields.
    for (breakdown, field) in [
        ("by_format", "format"),
        ("by_source", "source"),
        ("by_metadata_status", "metadata_status"),
    ] {
        let mut expected: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for track in &tracks {
            let entry = expected
                .entry(track[field].as_str().unwrap().to_string())
                .or_default();
            entry.0 += 1;
            entry.1 += track["size_bytes"].as_i64().unwrap();
        }
        let actual: BTreeMap<String, (i64, i64)> = stats[breakdown]
            .as_array()
            .unwrap()
            .iter()
            .map(|group| {
                (
                    group["key"].as_str().unwrap().to_string(),
                    (
                        group["track_count"].as_i64().unwrap(),
                        group["bytes"].as_i64().unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(actual, expected, "{breakdown}: {stats}");
    }
    let mut genres: BTreeMap<String, i64> = BTreeMap::new();
    for track in &tracks {
        if let Some(genre) = track["genre"].as_str().filter(|g| !g.is_empty()) {
            *genres.entry(genre.to_string()).or_default() += 1;
        }
    }
    let top: BTreeMap<String, i64> = stats["top_genres"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["genre"].as_str().unwrap().to_string(),
                g["track_count"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(top, genres, "{stats}");

    // Missing metadata: each track with exactly what it lacks.
    let (status, body) = app.get("/api/v1/storage/missing-metadata", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, missing) = app
        .get("/api/v1/storage/missing-metadata", Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{missing}");
    let expected: BTreeMap<String, Vec<&str>> = tracks
        .iter()
        .filter(|track| !lacking(track).is_empty())
        .map(|track| (track["id"].as_str().unwrap().to_string(), lacking(track)))
        .collect();
    assert!(!expected.is_empty(), "the untagged files lack something");
    let listed: BTreeMap<String, Vec<&str>> = missing["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["track"]["id"].as_str().unwrap().to_string(),
                item["missing"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|field| field.as_str().unwrap())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(missing["total"], expected.len());

    // Filtered by field: only the tracks lacking one of those.
    let (status, years) = app
        .get(
            "/api/v1/storage/missing-metadata?fields=year,album&limit=1",
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{years}");
    let lacking_year = expected
        .values()
        .filter(|fields| fields.contains(&"year") || fields.contains(&"album"))
        .count();
    assert_eq!(years["total"], lacking_year);
    assert!(years["items"].as_array().unwrap().len() <= 1);
    let (status, body) = app
        .get(
            "/api/v1/storage/missing-metadata?fields=year,mood",
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "fields");
    let (status, _) = app
        .get("/api/v1/storage/missing-metadata?limit=0", Some(&token))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Duplicates (the corpus test in core checks the groups): distinct files are none.
    let (status, _) = app.get("/api/v1/storage/duplicates", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (status, groups) = app.get("/api/v1/storage/duplicates", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{groups}");
    assert_eq!(groups["total"], 0, "{groups}");
    assert_eq!(groups["items"], serde_json::json!([]));
    let (status, _) = app
        .get("/api/v1/storage/duplicates?limit=500", Some(&token))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
}

both_backends!(services statistics, statistics_add_up);

async fn broken_files_are_found(backend: Backend) {
    use sha2::Digest as _;
    let corpus = musiclib_core::testing::corpus();
    let app = App::new(TestLibrary::new(backend).await).await;
    let admin = app.admin_token().await;
    let user = app.register("listener").await;
    let mut tracks = Vec::new();
    for file in [
        "library/Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
        "library/Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac",
        "library/Aurora Lane/Northern Lights (2019)/03 - Magnetosphere.flac",
        "library/Aurora Lane/Northern Lights (2019)/04 - Ice Shelf.flac",
        "library/Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
    ] {
        let bytes = std::fs::read(corpus.join(file)).unwrap();
        let (status, track) = app
            .upload(&admin, file.rsplit('/').next().unwrap(), &bytes)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{track}");
        tracks.push((track, bytes));
    }
    let key = |index: usize| tracks[index].0["storage_uri"].as_str().unwrap().to_string();
    let id = |index: usize| tracks[index].0["id"].as_str().unwrap().to_string();
    // 0: gone. 1: cut short. 2: same size, other bytes. 3: damaged audio whose hash was
    // recorded as it is now (imported damaged). 4: whole.
    musiclib_core::testing::delete_blob(&app.library, &key(0)).await;
    let short = tracks[1].1[..tracks[1].1.len() / 2].to_vec();
    musiclib_core::testing::put_blob(&app.library, &key(1), short.into()).await;
    let mut flipped = tracks[2].1.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    musiclib_core::testing::put_blob(&app.library, &key(2), flipped.into()).await;
    let mut damaged = tracks[3].1.clone();
    let start = damaged.len() / 3;
    for byte in &mut damaged[start..start + 200_000] {
        *byte = 0x55;
    }
    let digest = hex::encode(sha2::Sha256::digest(&damaged));
    musiclib_core::testing::put_blob(&app.library, &key(3), damaged.into()).await;
    musiclib_core::testing::execute(
        &app.library,
        "UPDATE tracks SET content_sha256 = $2 WHERE id = $1",
        &[&id(3), &digest],
    )
    .await;

    let (status, _) = app
        .json(
            "POST",
            "/api/v1/storage/broken/check",
            None,
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app
        .json(
            "POST",
            "/api/v1/storage/broken/check",
            Some(&user),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app.get("/api/v1/storage/broken", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    for bad in ["limit=0", "limit=201", "offset=-1", "limit=many"] {
        let (status, error) = app
            .get(&format!("/api/v1/storage/broken?{bad}"), Some(&user))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {error}");
        assert!(error["error"]["field"].is_string(), "{bad}: {error}");
    }
    // Nothing is known before a check.
    let (status, none) = app.get("/api/v1/storage/broken", Some(&user)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(none["total"], 0);
    let (status, queued) = app
        .json(
            "POST",
            "/api/v1/storage/broken/check",
            Some(&admin),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (_, job) = app
        .get(
            &format!("/api/v1/jobs/{}", queued["job_id"].as_str().unwrap()),
            Some(&admin),
        )
        .await;
    assert_eq!(job["kind"], "check_files");
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["result"]["total"], 5, "{job}");
    assert_eq!(job["result"]["checked"], 5, "{job}");
    assert_eq!(job["result"]["broken"], 4, "{job}");
    assert_eq!(job["result"]["decoded"], true, "{job}");

    let (status, broken) = app.get("/api/v1/storage/broken", Some(&user)).await;
    assert_eq!(status, StatusCode::OK, "{broken}");
    assert_eq!(broken["total"], 4, "{broken}");
    let problems: BTreeMap<String, String> = broken["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            assert!(
                item["reason"]
                    .as_str()
                    .is_some_and(|reason| !reason.is_empty()),
                "{item}"
            );
            assert!(item["checked_at"].is_string(), "{item}");
            (
                item["track"]["id"].as_str().unwrap().to_string(),
                item["problem"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: BTreeMap<String, String> = [
        (id(0), "missing"),
        (id(1), "size_mismatch"),
        (id(2), "hash_mismatch"),
        (id(3), "decode_failed"),
    ]
    .into_iter()
    .map(|(id, problem)| (id, problem.to_string()))
    .collect();
    assert_eq!(problems, expected);
}

both_backends!(services broken, broken_files_are_found);

both_backends!(cleanup_requests, |backend: Backend| async move {
    let app = App::new(TestLibrary::new(backend).await).await;
    let admin = app.admin_token().await;
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/storage/cleanup",
            Some(&admin),
            serde_json::json!({"dry": true}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["field"], "dry");
    let (status, body) = app
        .json(
            "POST",
            "/api/v1/storage/cleanup",
            Some(&admin),
            serde_json::json!({"dry_run": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // No body is a real run; an empty store has nothing to do.
    let request = axum::http::Request::post("/api/v1/storage/cleanup")
        .header(axum::http::header::AUTHORIZATION, format!("Bearer {admin}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, queued) = app.call(request).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    musiclib_core::testing::drain_jobs(&app.library).await;
    let (_, job) = app
        .get(
            &format!("/api/v1/jobs/{}", queued["job_id"].as_str().unwrap()),
            Some(&admin),
        )
        .await;
    assert_eq!(job["kind"], "cleanup_storage");
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["result"]["dry_run"], false);
    assert_eq!(job["result"]["deleted"], 0);
});
