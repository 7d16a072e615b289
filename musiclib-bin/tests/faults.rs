//! Faults on purpose, on the real binary (issue 17, "Faults, on both deployments"):
//!
//! - `kill_*`: SIGKILL of `serve` (embedded) or of the `worker` / the replica (scale-out) in
//!   the middle of a local-folder import, an upload, an Opus + HLS build, an enrichment
//!   batch and a cleanup. After a restart no half-written blob is visible, no row points at a
//!   missing blob, every job finishes (or fails with its reason), a rescan imports exactly
//!   what was missing, and no ffmpeg outlives its server. An enrichment killed on its last
//!   attempt leaves its track `failed`, saying why. (A download killed mid-way is in
//!   `remote.rs`.)
//! - `postgres_outage_under_load`: PostgreSQL goes away and comes back while clients read and
//!   push: 503s with the JSON error body, never a hang or a 500; `/health` says so; the
//!   server recovers by itself and no push that was acknowledged is lost.
//! - `s3_outage`: the object store goes away and comes back: streams and uploads fail
//!   cleanly (503), cleanup refuses and deletes nothing, everything works again.
//! - `full_disk`: `DATA_DIR` on a 24 MB file system: uploads and imports fail with 507
//!   `insufficient_storage`, leave nothing half-written, and the database stays usable.
//! - Claims of the docs: a deleted account is refused by another replica within 5 s; an
//!   upload or import of a file over the in-memory limit never holds it in memory.
//!
//! Dependencies go down through `support::Proxy`; the processes run with 5 s job leases
//! (the least the binary accepts), so a killed worker's job is taken up again soon.

mod support;

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use support::{
    check_whole, copy_library, importable_files, processes_naming, sha256, walk, Api, Blobs,
    Cluster, Proxy, Role, Setup,
};

/// Runs an `async fn(Setup)` on both deployments, as `name::embedded` and `name::scale_out`.
macro_rules! on_both {
    ($name:ident) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs the corpus and ffmpeg: run the README test command"
            )]
            async fn embedded() {
                super::$name(Setup::Embedded).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[cfg_attr(
                not(musiclib_services),
                ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
            )]
            async fn scale_out() {
                super::$name(Setup::ScaleOut).await
            }
        }
    };
}

on_both!(kill_mid_import);
on_both!(kill_mid_upload);
on_both!(kill_mid_renditions);
on_both!(kill_mid_enrichment);
on_both!(kill_mid_cleanup);

fn corpus_file(relative: &str) -> std::path::PathBuf {
    musiclib_core::testing::corpus()
        .join("library")
        .join(relative)
}

/// Polls `check` every 20 ms until it is true, for at most `limit`.
async fn until(limit: Duration, what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks no process the killed one started (ffmpeg, yt-dlp) goes on in its data folder: the
/// children die with it (an ffmpeg encoding a long track would go on for seconds or minutes).
/// They die as the kernel delivers their death signal; the deadline only guards against a hang.
async fn no_orphan_children(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_naming(dir);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "children of the killed process still run: {left:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// On local storage, nothing but whole blobs next to the blobs: parts of writes live only in
/// `.staging` (invisible: no listing shows them; cleanup sweeps them after a day).
fn no_parts_beside_blobs(cluster: &Cluster) {
    if cluster.setup != Setup::Embedded {
        return;
    }
    let media = cluster.media_dir();
    let parts: Vec<_> = walk(&media)
        .into_iter()
        .filter(|path| !path.starts_with(media.join(".staging")))
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.contains('#') || name.starts_with(".tmp")
        })
        .collect();
    assert!(
        parts.is_empty(),
        "parts of writes beside the blobs: {parts:?}"
    );
}

async fn kill_mid_import(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    // The corpus, in two halves: the first is imported whole, the second is being imported
    // when the process running the scan is killed.
    let holding = cluster.root.path().join("holding");
    copy_library(&holding);
    let folder = cluster.root.path().join("import");
    std::fs::create_dir_all(&folder).unwrap();
    let first_half = ["Aurora Lane", "Damaged Files", "Incoming", "Unsorted"];
    let move_in = |names: &[&str]| {
        for name in names {
            std::fs::rename(holding.join(name), folder.join(name)).unwrap();
        }
    };
    move_in(&first_half);
    let importable = importable_files();
    let first_count = importable
        .keys()
        .filter(|path| {
            first_half
                .iter()
                .any(|dir| path.starts_with(&format!("{dir}/")))
        })
        .count();
    cluster.set("LOCAL_MEDIA_IMPORT_PATH", folder.display().to_string());
    cluster.set("CLEANUP_GRACE_SECONDS", "0");
    cluster.start().await;
    let admin = cluster.admin().await;

    let (status, queued) = admin.post("/sources/local_folder/scan", json!(null)).await;
    assert_eq!(status, 202, "{queued}");
    let first = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(600))
        .await;
    assert_eq!(first["state"], "succeeded", "{first}");
    assert_eq!(first["result"]["imported"], first_count as u64, "{first}");
    // The first half's enrichments run first (the queue is first in, first out): the second
    // scan starts on a settled queue.
    admin.wait_jobs_settled(Duration::from_secs(600)).await;

    // The rest arrives; the scan of it is cut short.
    let rest: Vec<String> = std::fs::read_dir(&holding)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    move_in(&rest.iter().map(String::as_str).collect::<Vec<_>>());
    let blobs = Blobs::of(&cluster).await;
    let (status, queued) = admin.post("/sources/local_folder/scan", json!(null)).await;
    assert_eq!(status, 202, "{queued}");
    let job = queued["job_id"].as_str().unwrap().to_string();
    let started = admin
        .wait_job(&job, Duration::from_secs(600), |job| {
            job["state"] != "queued"
        })
        .await;
    assert_eq!(
        started["state"], "running",
        "the import ended before the kill: {started}"
    );
    until(Duration::from_secs(600), "new blobs stored", async || {
        blobs.keys("audio").await.len() >= first_count + 2
            || admin.job(&job).await["state"] != "running"
    })
    .await;
    // Frozen, the worker can finish nothing: what the database says now is what the kill cuts.
    cluster.freeze(Role::Worker);
    let cut = cluster.job_row(&job).await;
    assert_eq!(
        cut.state, "running",
        "the import ended before the kill: {cut:?}"
    );
    cluster.kill(Role::Worker);
    let stored_at_kill = blobs.keys("audio").await.len();
    no_parts_beside_blobs(&cluster);

    // Restarted, the scan is claimed again once its lease runs out, and imports exactly what
    // was missing.
    cluster.restart(Role::Worker).await;
    let admin = cluster.admin().await;
    let done = admin.wait_finished(&job, Duration::from_secs(600)).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert!(done["attempts"].as_i64().unwrap() >= 2, "{done}");
    let tracks = admin.tracks().await;
    assert_eq!(tracks.len(), importable.len(), "every valid file once");
    let source_ids: HashSet<&str> = tracks
        .iter()
        .map(|track| track["source_id"].as_str().unwrap())
        .collect();
    assert_eq!(source_ids.len(), tracks.len(), "no file imported twice");
    assert!(source_ids
        .iter()
        .all(|source_id| importable.contains_key(*source_id)));
    let (status, queued) = admin.post("/sources/local_folder/scan", json!(null)).await;
    assert_eq!(status, 202, "{queued}");
    let again = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(600))
        .await;
    assert_eq!(
        (
            again["result"]["imported"].clone(),
            again["result"]["already_imported"].clone()
        ),
        (json!(0), json!(importable.len())),
        "{again}"
    );

    // Every job ends; nothing half-written; the crash's orphans are whole copies, and a
    // cleanup reclaims them.
    admin.wait_jobs_settled(Duration::from_secs(600)).await;
    let known: HashSet<String> = importable.values().cloned().collect();
    let whole = check_whole(&cluster, &admin, &known, &importable).await;
    assert_eq!(whole.tracks, importable.len());
    eprintln!(
        "{setup:?}: {stored_at_kill} originals stored at the kill, {} orphans after the restart",
        whole.orphans
    );
    let (status, queued) = admin.post("/storage/cleanup", json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let cleaned = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(600))
        .await;
    assert_eq!(cleaned["state"], "succeeded", "{cleaned}");
    let whole = check_whole(&cluster, &admin, &known, &importable).await;
    assert_eq!(whole.orphans, 0, "cleanup reclaims what the crash left");
    no_parts_beside_blobs(&cluster);
}

/// A WAV of `bytes` bytes (noise: every byte sequence is valid 16-bit PCM), different per
/// `seed`.
fn wav(bytes: usize, seed: u64) -> Vec<u8> {
    let mut data = support::wav_header((bytes - 44) as u32);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    data.reserve(bytes - 44);
    while data.len() < bytes {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let take = (bytes - data.len()).min(8);
        data.extend_from_slice(&state.to_le_bytes()[..take]);
    }
    data
}

/// Uploads `bytes` as a multipart body sent 256 KiB at a time with a pause between chunks;
/// `sent` counts what has left. Returns the answer, or the transport error's text.
async fn paced_upload(
    api: Api,
    name: &str,
    bytes: Arc<Vec<u8>>,
    pause: Duration,
    sent: Arc<AtomicU64>,
) -> Result<(u16, Value), String> {
    const CHUNK: usize = 256 * 1024;
    let size = bytes.len() as u64;
    let chunks = futures::stream::unfold(0usize, move |offset| {
        let (bytes, sent) = (bytes.clone(), sent.clone());
        async move {
            if offset >= bytes.len() {
                return None;
            }
            tokio::time::sleep(pause).await;
            let end = (offset + CHUNK).min(bytes.len());
            sent.store(end as u64, Ordering::SeqCst);
            Some((Ok::<_, std::io::Error>(bytes[offset..end].to_vec()), end))
        }
    });
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(chunks), size)
            .file_name(name.to_string()),
    );
    let response = api
        .client
        .post(format!("{}/tracks/upload", api.api))
        .bearer_auth(&api.token)
        .multipart(form)
        .send()
        .await
        .map_err(|error| format!("{error:#}"))?;
    let status = response.status().as_u16();
    Ok((status, response.json().await.unwrap_or(Value::Null)))
}

async fn kill_mid_upload(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    cluster.start().await;
    let admin = cluster.admin().await;
    let blobs = Blobs::of(&cluster).await;

    // 1. Killed while the body streams in.
    let first = Arc::new(wav(24 * 1024 * 1024, 1));
    let sent = Arc::new(AtomicU64::new(0));
    let upload = tokio::spawn(paced_upload(
        admin.clone(),
        "first.wav",
        first.clone(),
        Duration::from_millis(10),
        sent.clone(),
    ));
    until(Duration::from_secs(60), "half the body sent", async || {
        sent.load(Ordering::SeqCst) >= 12 * 1024 * 1024
    })
    .await;
    cluster.kill(Role::Api);
    let answer = upload.await.unwrap();
    assert!(
        answer.as_ref().map_or(true, |(status, _)| *status != 201),
        "an upload cut mid-body was stored: {answer:?}"
    );
    no_parts_beside_blobs(&cluster);
    cluster.restart(Role::Api).await;
    let admin = cluster.admin().await;
    assert!(
        admin.tracks().await.is_empty(),
        "no track from a cut upload"
    );
    assert!(
        blobs.keys("audio").await.is_empty(),
        "no blob from a cut upload"
    );

    // 2. Killed once the whole body is in: while the server probes and stores it (S3: a
    // multipart upload), or just after.
    let second = Arc::new(wav(40 * 1024 * 1024, 2));
    let sent = Arc::new(AtomicU64::new(0));
    let upload = tokio::spawn(paced_upload(
        admin.clone(),
        "second.wav",
        second.clone(),
        Duration::ZERO,
        sent.clone(),
    ));
    until(Duration::from_secs(60), "the whole body sent", async || {
        sent.load(Ordering::SeqCst) == second.len() as u64
    })
    .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    cluster.kill(Role::Api);
    let answer = upload.await.unwrap();
    eprintln!("{setup:?}: the upload killed while storing answered {answer:?}");
    no_parts_beside_blobs(&cluster);
    cluster.restart(Role::Api).await;
    let admin = cluster.admin().await;

    // Whatever the kill cut, the library is whole, and uploading again works.
    let known: HashSet<String> = [sha256(&first), sha256(&second)].into_iter().collect();
    check_whole(&cluster, &admin, &known, &HashMap::new()).await;
    let (status, track) = admin.upload("first.wav", first.to_vec()).await;
    assert_eq!(status, 201, "{track}");
    let (status, track) = admin.upload("second.wav", second.to_vec()).await;
    assert!(status == 201 || status == 200, "{status} {track}");
    let whole = check_whole(&cluster, &admin, &known, &HashMap::new()).await;
    assert_eq!(whole.tracks, 2);
    admin.wait_jobs_settled(Duration::from_secs(600)).await;
}

async fn kill_mid_renditions(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    // Every ffmpeg the server starts passes a gate the test holds closed to catch the build.
    let gate = support::FfmpegGate::new(cluster.root.path());
    cluster.set("FFMPEG_PATH", gate.program.display().to_string());
    cluster.start().await;
    let admin = cluster.admin().await;
    let source = std::fs::read(corpus_file(
        "Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
    ))
    .unwrap();
    let (status, track) = admin.upload("01 - First Light.flac", source.clone()).await;
    assert_eq!(status, 201, "{track}");
    let id = track["id"].as_str().unwrap().to_string();
    admin.wait_jobs_settled(Duration::from_secs(600)).await;

    // Three Opus renditions and the HLS build, in one job; killed while its first encode is
    // held at the gate: the build cannot have ended.
    gate.close();
    let (status, queued) = admin
        .post(&format!("/tracks/{id}/optimize"), json!(null))
        .await;
    assert_eq!(status, 202, "{queued}");
    let job = queued["job_id"].as_str().unwrap().to_string();
    let runner_data = cluster.data_dir(Role::Worker);
    until(
        Duration::from_secs(600),
        "an encode held at the gate",
        async || !gate.held(&runner_data).is_empty(),
    )
    .await;
    let cut = admin.job(&job).await;
    assert_eq!(
        cut["state"], "running",
        "the build ended before the kill: {cut}"
    );
    cluster.kill(Role::Worker);
    no_orphan_children(&runner_data).await;
    no_parts_beside_blobs(&cluster);
    gate.open();

    cluster.restart(Role::Worker).await;
    let admin = cluster.admin().await;
    let done = admin.wait_finished(&job, Duration::from_secs(600)).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert!(done["attempts"].as_i64().unwrap() >= 2, "{done}");
    admin.wait_jobs_settled(Duration::from_secs(600)).await;
    let known: HashSet<String> = [sha256(&source)].into_iter().collect();
    check_whole(&cluster, &admin, &known, &HashMap::new()).await;

    // Every rendition plays whole.
    for quality in ["low", "medium", "high"] {
        let response = admin
            .client
            .get(format!("{}/stream/{id}?quality={quality}", admin.api))
            .bearer_auth(&admin.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["x-rendition"],
            format!("opus-{quality}").as_str()
        );
        let bytes = response.bytes().await.unwrap();
        assert!(support::ogg_is_whole(&bytes), "opus-{quality} is cut short");
    }
    let playlist = admin
        .client
        .get(format!("{}/stream/{id}/hls/playlist.m3u8", admin.api))
        .bearer_auth(&admin.token)
        .send()
        .await
        .unwrap();
    assert_eq!(playlist.status(), 200);
    let playlist = playlist.text().await.unwrap();
    assert!(playlist.contains("#EXT-X-ENDLIST"), "{playlist}");
    let segments: Vec<&str> = playlist
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect();
    assert!(segments.len() >= 30, "{playlist}");
    for segment in segments {
        let name = segment.split('?').next().unwrap();
        let name = name.rsplit('/').next().unwrap();
        let response = admin
            .client
            .get(format!("{}/stream/{id}/hls/{name}", admin.api))
            .bearer_auth(&admin.token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{name}");
        assert!(!response.bytes().await.unwrap().is_empty(), "{name}");
    }
}

async fn kill_mid_enrichment(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    // AcoustID holds every lookup until the kill: an enrichment that reached it is running.
    let acoustid = support::HeldAcoustId::start().await;
    cluster.set("ACOUSTID_API_KEY", "test-key");
    cluster.set("ACOUSTID_BASE_URL", acoustid.url.clone());
    cluster.start().await;
    let admin = cluster.admin().await;
    if setup == Setup::ScaleOut {
        // The jobs wait for a worker, which starts once they are all queued.
        cluster.kill(Role::Worker);
    }
    let files = [
        "Aurora Lane/Northern Lights (2019)/02 - Polar Drift.flac",
        "Aurora Lane/Northern Lights (2019)/03 - Magnetosphere.flac",
        "Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
        "Mira Kowalczyk/Łódź Sessions (2018)/03 - Śnieg nad Wisłą.m4a",
        "Opus Collective/Field Recordings & Drones/01 - Tidal Hum.opus",
        "Various Artists/Summer Mix 2022/CD 1/02 - Heatwave.ogg",
        "Unsorted/field take 01.wav",
    ];
    let mut known = HashSet::new();
    for file in files {
        let bytes = std::fs::read(corpus_file(file)).unwrap();
        known.insert(sha256(&bytes));
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let (status, track) = admin.upload(&name, bytes).await;
        assert_eq!(status, 201, "{track}");
    }
    if setup == Setup::ScaleOut {
        cluster.restart(Role::Worker).await;
    }
    until(
        Duration::from_secs(600),
        "an enrichment waiting for its lookup",
        async || acoustid.requests() > 0,
    )
    .await;
    let pending_at_kill = admin
        .tracks()
        .await
        .iter()
        .filter(|track| track["metadata_status"] == "pending")
        .count();
    assert!(pending_at_kill > 0, "enrichment ended before the kill");
    let (_, running, _) = admin.live_jobs().await;
    assert!(running > 0, "no enrichment running at the kill");
    cluster.kill(Role::Worker);
    // From now on AcoustID answers (no match): the enrichments can end.
    acoustid.release();
    cluster.restart(Role::Worker).await;
    let admin = cluster.admin().await;

    // Every enrichment is taken up again and ends; every track says how.
    admin.wait_jobs_settled(Duration::from_secs(600)).await;
    for track in admin.tracks().await {
        match track["metadata_status"].as_str().unwrap() {
            "enriched" => {}
            "failed" => assert!(track["metadata_error"].is_string(), "{track}"),
            _ => panic!("enrichment did not end: {track}"),
        }
    }
    let whole = check_whole(&cluster, &admin, &known, &HashMap::new()).await;
    assert_eq!(whole.tracks, files.len());
    eprintln!("{setup:?}: {pending_at_kill} tracks were pending at the kill");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
async fn an_enrichment_killed_on_its_last_attempt_is_recorded_as_failed() {
    let mut cluster = Cluster::new(Setup::Embedded).await;
    cluster.set("JOB_MAX_ATTEMPTS", "1");
    // AcoustID holds every lookup until the kill: an enrichment that reached it is running.
    let acoustid = support::HeldAcoustId::start().await;
    cluster.set("ACOUSTID_API_KEY", "test-key");
    cluster.set("ACOUSTID_BASE_URL", acoustid.url.clone());
    cluster.start().await;
    let admin = cluster.admin().await;
    for file in [
        "Aurora Lane/Northern Lights (2019)/01 - First Light.flac",
        "Aurora Lane/Northern Lights (2019)/04 - Ice Shelf.flac",
    ] {
        let bytes = std::fs::read(corpus_file(file)).unwrap();
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let (status, track) = admin.upload(&name, bytes).await;
        assert_eq!(status, 201, "{track}");
    }
    until(
        Duration::from_secs(600),
        "an enrichment waiting for its lookup",
        async || acoustid.requests() > 0,
    )
    .await;
    cluster.kill(Role::Worker);
    acoustid.release();
    cluster.restart(Role::Worker).await;
    let admin = cluster.admin().await;

    // The killed attempts were the last: the jobs fail once their lease runs out, and so
    // does the tracks' enrichment, saying why (spec: a crash is recorded as failed).
    admin.wait_jobs_settled(Duration::from_secs(600)).await;
    let tracks = admin.tracks().await;
    let crashed: Vec<&Value> = tracks
        .iter()
        .filter(|track| track["metadata_status"] != "enriched")
        .collect();
    assert!(!crashed.is_empty(), "no enrichment was cut: {tracks:?}");
    for track in crashed {
        assert_eq!(track["metadata_status"], "failed", "{track}");
        assert!(
            track["metadata_error"]
                .as_str()
                .unwrap()
                .contains("stopped responding"),
            "{track}"
        );
    }
}

async fn kill_mid_cleanup(setup: Setup) {
    let mut cluster = Cluster::new(setup).await;
    cluster.set("CLEANUP_GRACE_SECONDS", "0");
    cluster.start().await;
    let admin = cluster.admin().await;
    let mut known = HashSet::new();
    for file in [
        "Incoming/untitled.mp3",
        "Opus Collective/Field Recordings & Drones/04 - It's 100% #1 [Spoken Interlude].opus",
        "Opus Collective/Field Recordings & Drones/03 - Birdsong Algorithm.opus",
    ] {
        let bytes = std::fs::read(corpus_file(file)).unwrap();
        known.insert(sha256(&bytes));
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let (status, track) = admin.upload(&name, bytes).await;
        assert_eq!(status, 201, "{track}");
    }
    admin.wait_jobs_settled(Duration::from_secs(600)).await;

    // Orphans, as crashes leave them: enough that deleting them takes a while.
    let blobs = Blobs::of(&cluster).await;
    let orphan = b"an orphan no row references".to_vec();
    known.insert(sha256(&orphan));
    const ORPHANS: usize = 600;
    let keys: Vec<String> = (0..ORPHANS)
        .map(|index| format!("audio/orphan-{index:04}.mp3"))
        .collect();
    for batch in keys.chunks(16) {
        futures::future::join_all(batch.iter().map(|key| blobs.put(key, orphan.clone()))).await;
    }
    let before = blobs.keys("audio").await.len();
    assert_eq!(before, ORPHANS + 3);

    let (status, queued) = admin.post("/storage/cleanup", json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let job = queued["job_id"].as_str().unwrap().to_string();
    until(Duration::from_secs(600), "cleanup deleting", async || {
        blobs.keys("audio").await.len() < before
    })
    .await;
    // Frozen, the worker sends nothing more; a delete it had already sent (to S3) may still
    // land, so the count is read until it holds still: what is left then is what the kill
    // leaves.
    cluster.freeze(Role::Worker);
    let mut left_at_kill = blobs.keys("audio").await.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = blobs.keys("audio").await.len();
        if now == left_at_kill || Instant::now() > deadline {
            break;
        }
        left_at_kill = now;
    }
    assert!(
        left_at_kill > 3,
        "the cleanup ended before the kill ({left_at_kill} left)"
    );
    cluster.kill(Role::Worker);
    assert_eq!(
        blobs.keys("audio").await.len(),
        left_at_kill,
        "nothing was deleted between the freeze and the kill"
    );

    cluster.restart(Role::Worker).await;
    let admin = cluster.admin().await;
    let done = admin.wait_finished(&job, Duration::from_secs(600)).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let whole = check_whole(&cluster, &admin, &known, &HashMap::new()).await;
    assert_eq!((whole.tracks, whole.orphans), (3, 0), "{done}");
    eprintln!("{setup:?}: {left_at_kill} of {before} originals left at the kill");
}

/// One request of the load, as the client saw it.
#[derive(Debug)]
struct Seen {
    what: &'static str,
    started: Instant,
    elapsed: Duration,
    /// The status, or the transport error (a timeout: a hang).
    status: Result<u16, String>,
    body: Value,
}

/// Clients reading and pushing in a loop until `stop`: `GET /tracks`, `GET /sync/changes`
/// and `POST /sync/push` of one play each, with unique event ids. Every answer is kept in
/// `seen`; the ids of pushes answered 2xx in `accepted`.
fn load(
    api: &Api,
    track: &str,
    clients: usize,
    stop: support::Flag,
    seen: Arc<std::sync::Mutex<Vec<Seen>>>,
    accepted: Arc<std::sync::Mutex<Vec<String>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // A bound on every answer: beyond it, the request hangs (the server answers 503 within
    // its pool's few seconds of waiting; this only catches a request that never ends).
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    (0..clients)
        .map(|index| {
            let (client, api, track) = (client.clone(), api.clone(), track.to_string());
            let (stop, seen, accepted) = (stop.clone(), seen.clone(), accepted.clone());
            tokio::spawn(async move {
                let mut round = 0u64;
                while !stop.is_set() {
                    round += 1;
                    let event = format!("load-{index}-{round}");
                    let (what, request) = match round % 3 {
                        0 => ("tracks", client.get(format!("{}/tracks?limit=20", api.api))),
                        1 => (
                            "changes",
                            client.get(format!("{}/sync/changes?limit=50", api.api)),
                        ),
                        _ => (
                            "push",
                            client.post(format!("{}/sync/push", api.api)).json(&json!({
                                "plays": [{
                                    "client_event_id": event,
                                    "track_id": track,
                                    "played_at": "2026-01-02T03:04:05Z",
                                    "seconds_played": 30.0,
                                }]
                            })),
                        ),
                    };
                    let started = Instant::now();
                    let answer = request.bearer_auth(&api.token).send().await;
                    let (status, body) = match answer {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            (Ok(status), response.json().await.unwrap_or(Value::Null))
                        }
                        Err(error) => (Err(format!("{error:#}")), Value::Null),
                    };
                    if what == "push" && status.as_ref().is_ok_and(|status| *status < 300) {
                        accepted.lock().unwrap().push(event);
                    }
                    seen.lock().unwrap().push(Seen {
                        what,
                        started,
                        elapsed: started.elapsed(),
                        status,
                        body,
                    });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        })
        .collect()
}

/// Every play event `api`'s user can pull, by client id.
async fn pulled_plays(api: &Api) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut since = String::from("0");
    loop {
        let (status, page) = api
            .get(&format!("/sync/changes?since={since}&limit=500"))
            .await;
        assert_eq!(status, 200, "{page}");
        for play in page["plays"].as_array().unwrap() {
            ids.insert(play["client_event_id"].as_str().unwrap().to_string());
        }
        since = page["cursor"].as_str().unwrap().to_string();
        if page["has_more"] != true {
            return ids;
        }
    }
}

/// A 503 as the API sends it: the JSON error body, saying what is down.
fn assert_unavailable(seen: &Seen) {
    assert_eq!(seen.status, Ok(503), "{seen:?}");
    assert!(
        seen.body["error"]["code"].is_string() && seen.body["error"]["message"].is_string(),
        "a 503 without the JSON error body: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
)]
async fn postgres_outage_under_load() {
    let mut cluster = Cluster::new(Setup::ScaleOut).await;
    let direct = cluster.database_url.clone().unwrap();
    let (_, postgres) = support::through_proxy(&direct, 0);
    let proxy = Proxy::start(postgres).await;
    cluster.set(
        "DATABASE_URL",
        support::through_proxy(&direct, proxy.port).0,
    );
    cluster.start().await;
    let user = Api::register(&cluster.client, &cluster.api, "listener").await;
    let bytes = std::fs::read(corpus_file("Incoming/untitled.mp3")).unwrap();
    let (status, track) = user.upload("untitled.mp3", bytes).await;
    assert_eq!(status, 201, "{track}");
    let track = track["id"].as_str().unwrap().to_string();

    let stop = support::Flag::default();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let accepted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let clients = load(
        &user,
        &track,
        6,
        stop.clone(),
        seen.clone(),
        accepted.clone(),
    );
    // How many requests of the load started after `after` and have been answered.
    let answered_since = |after: Instant| {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|request| request.started > after)
            .count()
    };
    let load_started = Instant::now();
    until(Duration::from_secs(120), "the load running", async || {
        answered_since(load_started) >= 6
    })
    .await;

    // PostgreSQL "restarts": its connections drop, and it refuses new ones until the load has
    // met the outage a few times.
    proxy.cut().await;
    let cut_at = Instant::now();
    let health = cluster
        .client
        .get(format!("{}/health", cluster.base))
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("/health answers while the database is down");
    assert_eq!(health.status(), 503);
    let health: Value = health.json().await.unwrap();
    assert_eq!(
        (health["status"].as_str(), health["database"].as_str()),
        (Some("unavailable"), Some("unreachable")),
        "{health}"
    );
    until(
        Duration::from_secs(300),
        "requests during the outage",
        async || answered_since(cut_at + Duration::from_millis(500)) >= 6,
    )
    .await;
    let restored_at = Instant::now();
    proxy.restore().await;

    // It recovers by itself.
    until(Duration::from_secs(120), "recovered", async || {
        user.get("/tracks").await.0 == 200
    })
    .await;
    let recovered_at = Instant::now();
    until(
        Duration::from_secs(120),
        "requests after the recovery",
        async || answered_since(recovered_at + Duration::from_millis(500)) >= 6,
    )
    .await;
    stop.set();
    for client in clients {
        client.await.unwrap();
    }

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let mut during = 0;
    for request in &seen {
        let status = request.status.clone();
        match status {
            Ok(200) => {}
            Ok(_) => assert_unavailable(request),
            Err(error) => panic!("no answer ({error}): {request:?}"),
        }
        let ended = request.started + request.elapsed;
        if request.started > cut_at + Duration::from_millis(500) && ended < restored_at {
            during += 1;
            assert_unavailable(request);
        }
        if request.started > recovered_at + Duration::from_millis(500) {
            assert_eq!(request.status, Ok(200), "after the recovery: {request:?}");
        }
    }
    // The outage lasted until six requests started in it had been answered.
    assert!(during >= 6, "too few requests during the outage: {during}");
    let refused: HashMap<&str, usize> = seen
        .iter()
        .filter(|request| request.status != Ok(200))
        .fold(HashMap::new(), |mut counts, request| {
            *counts.entry(request.what).or_default() += 1;
            counts
        });
    eprintln!(
        "{} requests, {refused:?} answered 503, {during} during the outage; {} connections through the proxy",
        seen.len(),
        proxy.accepted.load(Ordering::Relaxed)
    );

    // No acknowledged push is lost; the health and the worker are back.
    let accepted = accepted.lock().unwrap().clone();
    let pulled = pulled_plays(&user).await;
    let lost: Vec<&String> = accepted.iter().filter(|id| !pulled.contains(*id)).collect();
    assert!(lost.is_empty(), "acknowledged pushes lost: {lost:?}");
    let health = cluster
        .client
        .get(format!("{}/health", cluster.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let bytes =
        std::fs::read(corpus_file("Incoming/Some Artist - Song Without Album.ogg")).unwrap();
    let (status, second) = user
        .upload("Some Artist - Song Without Album.ogg", bytes)
        .await;
    assert_eq!(status, 201, "{second}");
    let admin = cluster.admin().await;
    admin.wait_jobs_settled(Duration::from_secs(60)).await;
    for track in admin.tracks().await {
        assert_ne!(track["metadata_status"], "pending", "{track}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL, S3 and the corpus: run the README test command"
)]
async fn s3_outage() {
    let mut cluster = Cluster::new(Setup::ScaleOut).await;
    let endpoint = cluster.get("S3_ENDPOINT").unwrap().to_string();
    let (_, s3) = support::through_proxy(&endpoint, 0);
    let proxy = Proxy::start(s3).await;
    cluster.set(
        "S3_ENDPOINT",
        support::through_proxy(&endpoint, proxy.port).0,
    );
    cluster.set("CLEANUP_GRACE_SECONDS", "0");
    cluster.start().await;
    let admin = cluster.admin().await;
    let mut known = HashSet::new();
    let mut ids = Vec::new();
    for file in [
        "Incoming/untitled.mp3",
        "Incoming/only title.m4a",
        "Aurora Lane/Northern Lights (2019)/05 - Aurora Borealis (Reprise).flac",
    ] {
        let bytes = std::fs::read(corpus_file(file)).unwrap();
        known.insert(sha256(&bytes));
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let (status, track) = admin.upload(&name, bytes).await;
        assert_eq!(status, 201, "{track}");
        ids.push(track["id"].as_str().unwrap().to_string());
    }
    admin.wait_jobs_settled(Duration::from_secs(120)).await;
    let blobs = Blobs::of(&cluster).await;
    let stored = blobs.all().await;

    proxy.cut().await;
    // Streams, several at once, and an upload: 503 with the JSON body, quickly.
    let streams = ids.iter().chain(ids.iter()).map(|id| {
        let admin = admin.clone();
        let id = id.clone();
        async move {
            let started = Instant::now();
            let response = admin
                .client
                .get(format!("{}/stream/{id}", admin.api))
                .bearer_auth(&admin.token)
                // (A hang guard: a stream must answer, not wait on the store for ever.)
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .expect("a stream answers while S3 is down");
            let status = response.status().as_u16();
            Seen {
                what: "stream",
                started,
                elapsed: started.elapsed(),
                status: Ok(status),
                body: response.json().await.unwrap_or(Value::Null),
            }
        }
    });
    for stream in futures::future::join_all(streams).await {
        assert_unavailable(&stream);
        assert_eq!(
            stream.body["error"]["code"], "storage_unavailable",
            "{stream:?}"
        );
    }
    let bytes =
        std::fs::read(corpus_file("Incoming/Some Artist - Song Without Album.ogg")).unwrap();
    known.insert(sha256(&bytes));
    let started = Instant::now();
    let (status, body) = admin
        .upload("Some Artist - Song Without Album.ogg", bytes.clone())
        .await;
    assert_unavailable(&Seen {
        what: "upload",
        started,
        elapsed: started.elapsed(),
        status: Ok(status),
        body,
    });
    let (status, tracks) = admin.get("/tracks").await;
    assert_eq!(
        (status, tracks["total"].clone()),
        (200, json!(3)),
        "{tracks}"
    );
    // Cleanup refuses, changing nothing.
    let (status, queued) = admin.post("/storage/cleanup", json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let refused = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(60))
        .await;
    assert_eq!(refused["state"], "failed", "{refused}");
    assert!(
        refused["error"].as_str().unwrap().starts_with("refused:"),
        "{refused}"
    );
    for track in admin.tracks().await {
        assert_eq!(track["availability"], "available", "{track}");
    }

    // Back: nothing was deleted, and everything works again.
    proxy.restore().await;
    let after = blobs.all().await;
    assert_eq!(
        after.keys().collect::<HashSet<_>>(),
        stored.keys().collect::<HashSet<_>>(),
        "cleanup deleted while S3 was down"
    );
    let (status, track) = admin
        .upload("Some Artist - Song Without Album.ogg", bytes)
        .await;
    assert_eq!(status, 201, "{track}");
    let (status, queued) = admin.post("/storage/cleanup", json!({})).await;
    assert_eq!(status, 202, "{queued}");
    let cleaned = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(60))
        .await;
    assert_eq!(cleaned["state"], "succeeded", "{cleaned}");
    admin.wait_jobs_settled(Duration::from_secs(60)).await;
    let whole = check_whole(&cluster, &admin, &known, &HashMap::new()).await;
    assert_eq!((whole.tracks, whole.orphans), (4, 0));
}

/// The server on a 24 MB file system mounted on `DATA_DIR` (the SQLite file, local storage
/// and staging), inside a mount namespace of its own (`unshare`, also unprivileged where user
/// namespaces are allowed). The wrapper prints the server's pid, waits for it, then lists the
/// files left on the small file system.
struct SmallDisk {
    wrapper: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    server_pid: u32,
    log: std::path::PathBuf,
    data: std::path::PathBuf,
}

impl SmallDisk {
    const SCRIPT: &'static str = r#"set -e
mount -t tmpfs -o size=24m tmpfs "$DATA_DIR"
"$MUSICLIB" serve >>"$SERVER_LOG" 2>&1 &
server=$!
echo "pid $server"
wait "$server" || true
echo "exited"
cd "$DATA_DIR"
find . -type f -printf '%s %p\n'
echo "end"
"#;

    fn start(cluster: &Cluster) -> SmallDisk {
        let data = cluster.data_dir(Role::Api);
        std::fs::create_dir_all(&data).unwrap();
        let log = cluster.root.path().join("logs").join("small-disk.log");
        let mut wrapper = std::process::Command::new("unshare")
            .args(["--mount", "--map-root-user", "sh", "-c", SmallDisk::SCRIPT])
            .envs(cluster.env_for(Role::Api))
            .env("MUSICLIB", env!("CARGO_BIN_EXE_musiclib"))
            .env("SERVER_LOG", &log)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("unshare");
        let (sender, lines) = std::sync::mpsc::channel();
        let stdout = wrapper.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                let _ = sender.send(line);
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                let mut stderr = String::new();
                let _ =
                    std::io::Read::read_to_string(wrapper.stderr.as_mut().unwrap(), &mut stderr);
                panic!("the small file system could not be mounted: {stderr}")
            });
        let server_pid = first
            .strip_prefix("pid ")
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("unexpected output of the wrapper: {first}"));
        SmallDisk {
            wrapper,
            lines,
            server_pid,
            log,
            data,
        }
    }

    /// Stops the server (SIGTERM) and returns the files left on the small file system, with
    /// their sizes, by path relative to `DATA_DIR`.
    fn stop(mut self) -> HashMap<String, u64> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.server_pid.to_string()])
            .status();
        let mut files = HashMap::new();
        let mut listing = false;
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the server stops and the wrapper lists the files");
            match line.as_str() {
                "exited" => listing = true,
                "end" => break,
                _ if listing => {
                    let (size, path) = line.split_once(' ').unwrap();
                    files.insert(
                        path.trim_start_matches("./").to_string(),
                        size.parse().unwrap(),
                    );
                }
                _ => {}
            }
        }
        let _ = self.wrapper.wait();
        files
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            eprintln!("---- last lines of the server on the small disk ----");
            for line in &lines[lines.len().saturating_sub(60)..] {
                eprintln!("{line}");
            }
            // The small file system as the server sees it, through its mount namespace.
            let root = std::path::PathBuf::from(format!("/proc/{}/root", self.server_pid));
            let data = root.join(self.data.strip_prefix("/").unwrap());
            if let Ok(entries) = std::fs::read_dir(format!("/proc/{}/fd", self.server_pid)) {
                for entry in entries.flatten() {
                    if let Ok(target) = std::fs::read_link(entry.path()) {
                        if target.to_string_lossy().contains("deleted") {
                            eprintln!("open but deleted: {}", target.display());
                        }
                    }
                }
            }
            let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.server_pid))
                .unwrap_or_default();
            for line in maps.lines().filter(|line| line.contains("deleted")) {
                eprintln!("mapped but deleted: {line}");
            }
            eprintln!("---- files on the small disk ----");
            for path in walk(&data) {
                let size = std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
                eprintln!("{size:>10} {}", path.strip_prefix(&data).unwrap().display());
            }
        }
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &self.server_pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.wrapper.kill();
        let _ = self.wrapper.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
async fn full_disk() {
    let mut cluster = Cluster::new(Setup::Embedded).await;
    let folder = cluster.root.path().join("import");
    copy_library(&folder);
    cluster.set("LOCAL_MEDIA_IMPORT_PATH", folder.display().to_string());
    cluster.set("JOB_MAX_ATTEMPTS", "2");
    let disk = SmallDisk::start(&cluster);
    cluster.wait_healthy().await;
    let admin = cluster.admin().await;

    // Uploads until the disk is full: then a clear 507, and nothing of it stored.
    let mut uploaded = Vec::new();
    let mut refused = None;
    for file in [
        "Los Señores del Ritmo/Canción de Mañana (2021)/01 - Mañana Dorada.mp3",
        "月光オーケストラ/夜明けの歌 (2020)/01 はじまりの朝.mp3",
        "Los Señores del Ritmo/Canción de Mañana (2021)/03 - Ñandú Bailarín.mp3",
        "Los Señores del Ritmo/Canción de Mañana (2021)/02 - Corazón en Fuga.mp3",
        "月光オーケストラ/夜明けの歌 (2020)/02 桜の雨.mp3",
        "月光オーケストラ/夜明けの歌 (2020)/03 東京ノクターン.mp3",
    ] {
        let bytes = std::fs::read(corpus_file(file)).unwrap();
        let name = Path::new(file).file_name().unwrap().to_string_lossy();
        let (status, body) = admin.upload(&name, bytes).await;
        match status {
            201 => uploaded.push(body["id"].as_str().unwrap().to_string()),
            _ => {
                refused = Some((status, body));
                break;
            }
        }
    }
    let (status, body) = refused.expect("the disk never filled up");
    assert!(!uploaded.is_empty(), "no upload fit at all");
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("disk is full"),
        "{body}"
    );

    // An import bigger than the disk: files fail with a clear reason, the others go on.
    let (status, queued) = admin.post("/sources/local_folder/scan", json!(null)).await;
    assert_eq!(status, 202, "{queued}");
    let scan = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(180))
        .await;
    let reasons = format!("{} {}", scan["error"], scan["result"]["errors"]);
    assert!(
        reasons.contains("No space left on device") || reasons.contains("full"),
        "the import does not say the disk is full: {scan}"
    );
    eprintln!(
        "the import on a full disk: {} with {} imported, {} failed: {}",
        scan["state"], scan["result"]["imported"], scan["result"]["failed"], scan["error"]
    );

    // The database stays usable.
    let admin = cluster.admin().await;
    let tracks = admin.tracks().await;
    assert!(tracks.len() >= uploaded.len());
    let (status, playlist) = admin
        .post(
            "/playlists",
            json!({"name": "still works", "track_ids": [uploaded[0]]}),
        )
        .await;
    assert_eq!(status, 201, "{playlist}");
    // Deleting a track makes room: an upload works again.
    let (status, body) = admin.delete(&format!("/tracks/{}", uploaded[0])).await;
    assert_eq!(status, 204, "{body}");
    let bytes =
        std::fs::read(corpus_file("Incoming/Some Artist - Song Without Album.ogg")).unwrap();
    // (A job reading the deleted file, an enrichment, holds it open for a moment.)
    let deleted_at = Instant::now();
    loop {
        let (status, track) = admin
            .upload("Some Artist - Song Without Album.ogg", bytes.clone())
            .await;
        if status == 201 {
            break;
        }
        assert!(status == 507 || status == 0, "{status} {track}");
        // A hang guard: the room comes back as soon as the job reading the file lets go.
        assert!(
            deleted_at.elapsed() < Duration::from_secs(60),
            "still no room after deleting a track: {track}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "an upload fits again {:?} after the deletion",
        deleted_at.elapsed()
    );
    let tracks = admin.tracks().await;

    // Nothing half-written: no staging file, no part beside the blobs, and every stored
    // original is a track's, whole.
    let files = disk.stop();
    let sizes: HashMap<String, i64> = tracks
        .iter()
        .map(|track| {
            (
                format!("media/{}", track["storage_uri"].as_str().unwrap()),
                track["size_bytes"].as_i64().unwrap(),
            )
        })
        .collect();
    for (path, size) in &files {
        assert!(
            !path.starts_with("tmp/")
                && !path.starts_with("media/.staging/")
                && !path.contains('#'),
            "a half-written file is left: {path} ({size} bytes); all: {files:?}"
        );
        if path.starts_with("media/audio/") {
            assert_eq!(
                sizes.get(path).map(|size| *size as u64),
                Some(*size),
                "{path} is not a whole original of a track"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL and S3: run the README test command"
)]
async fn a_deleted_account_is_refused_by_another_replica_within_5_seconds() {
    let mut cluster = Cluster::new(Setup::ScaleOut).await;
    cluster.start().await;
    let (_replica, other) = cluster.extra_replica().await;
    let admin = cluster.admin().await;
    let (status, user) = admin
        .post(
            "/admin/users",
            json!({"username": "leaving", "password": "long enough"}),
        )
        .await;
    assert_eq!(status, 201, "{user}");
    let leaving = Api::login(&cluster.client, &cluster.api, "leaving", "long enough").await;
    // The other replica has just read the account (and keeps it for a few seconds).
    assert_eq!(leaving.on(&other).get("/users/me").await.0, 200);

    let (status, body) = admin
        .delete(&format!("/admin/users/{}", user["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 204, "{body}");
    let deleted_at = Instant::now();
    assert_eq!(
        leaving.get("/users/me").await.0,
        401,
        "the replica that deleted it"
    );
    // The account is kept 5 s per process, and the other replica read it before the delete:
    // a request that starts more than 5 s after the delete is refused, however long it takes.
    loop {
        let started = Instant::now();
        let (status, body) = leaving.on(&other).get("/users/me").await;
        if status == 401 {
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            started.duration_since(deleted_at) <= Duration::from_secs(5),
            "the other replica still accepts the token in a request started {:?} after the delete",
            started.duration_since(deleted_at)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "refused by the other replica after {:?}",
        deleted_at.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs the corpus: run the README test command"
)]
async fn files_over_the_in_memory_limit_are_never_held_in_memory() {
    const SIZE: u64 = 300 * 1024 * 1024;
    let mut cluster = Cluster::new(Setup::Embedded).await;
    let folder = cluster.root.path().join("import");
    std::fs::create_dir_all(&folder).unwrap();
    support::write_wav(&folder.join("long take.wav"), SIZE, 1);
    let upload = cluster.root.path().join("another long take.wav");
    support::write_wav(&upload, SIZE, 2);
    cluster.set("LOCAL_MEDIA_IMPORT_PATH", folder.display().to_string());
    cluster.start().await;
    let pid = cluster.process(Role::Api).unwrap().pid();
    let admin = cluster.admin().await;
    let at_start = support::peak_rss(pid);

    let (status, queued) = admin.post("/sources/local_folder/scan", json!(null)).await;
    assert_eq!(status, 202, "{queued}");
    let scan = admin
        .wait_finished(queued["job_id"].as_str().unwrap(), Duration::from_secs(300))
        .await;
    assert_eq!(scan["result"]["imported"], 1, "{scan}");
    let after_import = support::peak_rss(pid);

    let (status, track) = admin.upload_file(&upload).await;
    assert_eq!(status, 201, "{track}");
    assert_eq!(track["size_bytes"], SIZE);
    admin.wait_jobs_settled(Duration::from_secs(300)).await;
    let after_upload = support::peak_rss(pid);
    eprintln!(
        "peak RSS: {} MB at start, {} MB after importing, {} MB after uploading a {} MB file",
        at_start >> 20,
        after_import >> 20,
        after_upload >> 20,
        SIZE >> 20
    );
    for peak in [after_import, after_upload] {
        assert!(
            peak < SIZE / 3,
            "the server's peak memory ({} MB) says it held a {} MB file",
            peak >> 20,
            SIZE >> 20
        );
    }
}
