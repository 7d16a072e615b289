//! Shared pieces of the fault tests (`faults.rs`): the real binary on either deployment, an
//! HTTP client of the API, a TCP proxy that plays an outage of a dependency, and the checks
//! that a library is whole after a fault (every row's blob there and complete, every job
//! finished).

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub const ADMIN: &str = "admin";
pub const ADMIN_PASSWORD: &str = "admin-password";
/// The shortest lease the binary accepts: a killed worker's job is claimable again after it.
pub const LEASE_SECONDS: u64 = 5;

/// A running `musiclib` process, killed (SIGKILL) when dropped. Its output goes to `log`,
/// printed when a test fails.
pub struct Process {
    child: Child,
    pub name: String,
    pub log: PathBuf,
}

impl Process {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL (`Child::kill` on Unix): nothing runs on the way out.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `signal` (a name `kill -s` takes: `STOP`, `CONT`, …) to it.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args(["-s", signal, &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -s {signal} {} failed", self.pid());
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    fn print_log(&self) {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(80)..];
        eprintln!(
            "---- last lines of {} ({}) ----",
            self.name,
            self.log.display()
        );
        for line in tail {
            eprintln!("{line}");
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            self.print_log();
        }
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `musiclib` with `args` and `env`, its output appended to `log`.
pub fn spawn(name: &str, args: &[&str], env: &[(String, String)], log: &Path) -> Process {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_musiclib"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    for (key, value) in env {
        command.env(key, value);
    }
    Process {
        child: command.spawn().expect("start musiclib"),
        name: name.to_string(),
        log: log.to_path_buf(),
    }
}

/// Which deployment a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// One `serve` on SQLite and local disk.
    Embedded,
    /// A `serve --no-worker` replica and a `worker` on PostgreSQL and S3.
    ScaleOut,
}

/// Which process a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The process answering the API (embedded: the one `serve`).
    Api,
    /// The process running jobs (embedded: the same `serve`).
    Worker,
}

/// A deployment of the real binary in a scratch directory: a fresh SQLite file and media
/// folder, or a fresh PostgreSQL database and S3 prefix.
pub struct Cluster {
    pub setup: Setup,
    pub root: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    pub port: u16,
    pub base: String,
    pub api: String,
    /// The PostgreSQL database, reached directly (the server may be given a proxy instead).
    pub database_url: Option<String>,
    /// The S3 key prefix of this deployment.
    pub s3_prefix: Option<String>,
    server: Option<Process>,
    worker: Option<Process>,
    starts: u32,
    pub client: reqwest::Client,
}

impl Cluster {
    /// A deployment not started yet: change [`Cluster::env`] with [`Cluster::set`], then
    /// [`Cluster::start`].
    pub async fn new(setup: Setup) -> Cluster {
        let root = tempfile::Builder::new()
            .prefix("musiclib-faults-")
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(root.path().join("logs")).unwrap();
        let port = free_port();
        let mut env: Vec<(String, String)> = [
            ("BIND_ADDRESS", format!("127.0.0.1:{port}")),
            ("JWT_SECRET", "a shared secret for every replica".into()),
            (
                "LEGACY_SECRET_KEY",
                "a shared legacy key for every replica".into(),
            ),
            ("ADMIN_USERNAME", ADMIN.into()),
            ("ADMIN_PASSWORD", ADMIN_PASSWORD.into()),
            ("JOB_LEASE_SECONDS", LEASE_SECONDS.to_string()),
            ("COVERART_ENABLED", "false".into()),
            ("LRCLIB_BASE_URL", "http://127.0.0.1:9".into()),
            ("SOUND_ANALYSIS", "false".into()),
            ("LOUDNESS_ANALYSIS", "false".into()),
            ("ENRICH_CONCURRENCY", "2".into()),
            ("RUST_LOG", "info".into()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .collect();
        let (mut database_url, mut s3_prefix) = (None, None);
        if setup == Setup::ScaleOut {
            let url = musiclib_core::testing::create_postgres_database().await;
            let s3 = musiclib_core::testing::test_s3_config();
            env.extend(
                [
                    ("DATABASE_URL", url.clone()),
                    ("STORAGE_BACKEND", "s3".to_string()),
                    ("S3_BUCKET", s3.bucket.clone()),
                    ("S3_ENDPOINT", s3.endpoint.clone().unwrap()),
                    ("S3_ACCESS_KEY_ID", "test".to_string()),
                    ("S3_SECRET_ACCESS_KEY", "test".to_string()),
                    ("S3_ALLOW_HTTP", "true".to_string()),
                    ("S3_PREFIX", s3.prefix.clone().unwrap()),
                ]
                .into_iter()
                .map(|(key, value)| (key.to_string(), value)),
            );
            database_url = Some(url);
            s3_prefix = s3.prefix;
        }
        let base = format!("http://127.0.0.1:{port}");
        Cluster {
            setup,
            api: format!("{base}/api/v1"),
            base,
            root,
            env,
            port,
            database_url,
            s3_prefix,
            server: None,
            worker: None,
            starts: 0,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    /// Sets (or replaces) a variable of every process started from now on.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        self.env.retain(|(name, _)| name != key);
        self.env.push((key.to_string(), value));
    }

    /// The variable as set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }

    /// `DATA_DIR` of the process in `role` (embedded: one for both).
    pub fn data_dir(&self, role: Role) -> PathBuf {
        match (self.setup, role) {
            (Setup::Embedded, _) => self.root.path().join("data"),
            (Setup::ScaleOut, Role::Api) => self.root.path().join("api"),
            (Setup::ScaleOut, Role::Worker) => self.root.path().join("worker"),
        }
    }

    /// The local blob store (embedded).
    pub fn media_dir(&self) -> PathBuf {
        self.data_dir(Role::Api).join("media")
    }

    /// The environment of the process in `role`.
    pub fn env_for(&self, role: Role) -> Vec<(String, String)> {
        let mut env = self.env.clone();
        env.push(("DATA_DIR".into(), self.data_dir(role).display().to_string()));
        if self.setup == Setup::ScaleOut && role == Role::Worker {
            // The worker serves nothing; its bind address is never used.
            env.retain(|(key, _)| key != "BIND_ADDRESS");
            env.push(("BIND_ADDRESS".into(), format!("127.0.0.1:{}", free_port())));
        }
        env
    }

    /// Migrates (scale-out), starts every process and waits until the API answers.
    pub async fn start(&mut self) {
        if self.setup == Setup::ScaleOut {
            let migrated = Command::new(env!("CARGO_BIN_EXE_musiclib"))
                .arg("migrate")
                .envs(self.env_for(Role::Api))
                .output()
                .unwrap();
            assert!(
                migrated.status.success(),
                "musiclib migrate failed: {}",
                String::from_utf8_lossy(&migrated.stderr)
            );
        }
        self.restart(Role::Api).await;
        if self.setup == Setup::ScaleOut {
            self.restart(Role::Worker).await;
        }
    }

    /// Kills the process in `role` with SIGKILL (embedded: the one `serve`).
    pub fn kill(&mut self, role: Role) {
        let process = match (self.setup, role) {
            (Setup::ScaleOut, Role::Worker) => self.worker.take(),
            _ => self.server.take(),
        };
        if let Some(mut process) = process {
            process.kill9();
        }
    }

    /// Freezes the process in `role` (SIGSTOP): from now until [`Cluster::kill`] it runs
    /// nothing, so what a test reads of its work (rows, blobs) is what the kill will cut.
    /// (Embedded, the API stops answering too: read the database with [`Cluster::jobs`].)
    pub fn freeze(&mut self, role: Role) {
        self.process(role)
            .expect("the process to freeze runs")
            .signal("STOP");
    }

    /// The database of the deployment, reached directly (never through a test's proxy).
    pub fn direct_database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => format!(
                "sqlite://{}",
                self.data_dir(Role::Api).join("musiclib.db").display()
            ),
        }
    }

    /// Every job as stored, read from the database without asking the server (which may be
    /// frozen).
    pub async fn jobs(&self) -> Vec<musiclib_core::testing::JobRow> {
        musiclib_core::testing::jobs_at(&self.direct_database_url()).await
    }

    /// The job `id` as stored (see [`Cluster::jobs`]).
    pub async fn job_row(&self, id: &str) -> musiclib_core::testing::JobRow {
        self.jobs()
            .await
            .into_iter()
            .find(|job| job.id == id)
            .unwrap_or_else(|| panic!("no job {id} in the database"))
    }

    /// Starts the process in `role` again (or for the first time) and waits for the API.
    pub async fn restart(&mut self, role: Role) {
        self.starts += 1;
        let log = self
            .root
            .path()
            .join("logs")
            .join(format!("{role:?}-{}.log", self.starts));
        match (self.setup, role) {
            (Setup::ScaleOut, Role::Worker) => {
                self.worker = Some(spawn("worker", &["worker"], &self.env_for(role), &log));
            }
            (Setup::ScaleOut, Role::Api) => {
                self.server = Some(spawn(
                    "serve --no-worker",
                    &["serve", "--no-worker"],
                    &self.env_for(role),
                    &log,
                ));
                self.wait_healthy().await;
            }
            (Setup::Embedded, _) => {
                self.server = Some(spawn("serve", &["serve"], &self.env_for(role), &log));
                self.wait_healthy().await;
            }
        }
    }

    /// Another API replica (`serve --no-worker`, or `serve` when embedded) on a port of its
    /// own, sharing everything else; returns it and its `/api/v1` URL once it answers.
    pub async fn extra_replica(&mut self) -> (Process, String) {
        self.starts += 1;
        let port = free_port();
        let mut env = self.env_for(Role::Api);
        env.retain(|(key, _)| key != "BIND_ADDRESS" && key != "DATA_DIR");
        let data = self.root.path().join(format!("replica-{}", self.starts));
        env.push(("BIND_ADDRESS".into(), format!("127.0.0.1:{port}")));
        env.push(("DATA_DIR".into(), data.display().to_string()));
        let log = self
            .root
            .path()
            .join("logs")
            .join(format!("replica-{}.log", self.starts));
        let args: &[&str] = match self.setup {
            Setup::Embedded => &["serve"],
            Setup::ScaleOut => &["serve", "--no-worker"],
        };
        let process = spawn("replica", args, &env, &log);
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer = self.client.get(format!("{base}/health")).send().await;
            if answer.is_ok_and(|response| response.status().is_success()) {
                break;
            }
            assert!(Instant::now() < deadline, "{base} did not become healthy");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (process, format!("{base}/api/v1"))
    }

    /// The process in `role`, while it runs.
    pub fn process(&mut self, role: Role) -> Option<&mut Process> {
        match (self.setup, role) {
            (Setup::ScaleOut, Role::Worker) => self.worker.as_mut(),
            _ => self.server.as_mut(),
        }
    }

    pub async fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let answer = self
                .client
                .get(format!("{}/health", self.base))
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            if answer.is_ok_and(|response| response.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} did not become healthy", self.base);
    }

    /// A client signed in as the admin created at start-up.
    pub async fn admin(&self) -> Api {
        Api::login(&self.client, &self.api, ADMIN, ADMIN_PASSWORD).await
    }

    /// Prints the last lines of every process log (kept in the scratch directory).
    pub fn print_logs(&self) {
        for process in self.server.iter().chain(self.worker.iter()) {
            process.print_log();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Before the scratch directory (a field) goes: the logs are in it.
        drop(self.server.take());
        drop(self.worker.take());
        if std::thread::panicking() {
            // Earlier, killed processes: their logs stay in the scratch directory.
            if let Ok(entries) = std::fs::read_dir(self.root.path().join("logs")) {
                let names: Vec<String> = entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect();
                eprintln!("logs of this deployment: {names:?}");
            }
        }
    }
}

/// A signed-in client of `/api/v1`.
#[derive(Clone)]
pub struct Api {
    pub client: reqwest::Client,
    pub api: String,
    pub token: String,
}

/// A status and the JSON body (`Null` when the body is not JSON).
pub type Answer = (u16, Value);

impl Api {
    pub async fn login(client: &reqwest::Client, api: &str, username: &str, password: &str) -> Api {
        let response = client
            .post(format!("{api}/auth/login"))
            .json(&json!({"username": username, "password": password}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "login of {username}");
        let body: Value = response.json().await.unwrap();
        Api {
            client: client.clone(),
            api: api.to_string(),
            token: body["access_token"].as_str().unwrap().to_string(),
        }
    }

    pub async fn register(client: &reqwest::Client, api: &str, username: &str) -> Api {
        let response = client
            .post(format!("{api}/auth/register"))
            .json(&json!({"username": username, "password": "long enough"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "registration of {username}");
        let body: Value = response.json().await.unwrap();
        Api {
            client: client.clone(),
            api: api.to_string(),
            token: body["access_token"].as_str().unwrap().to_string(),
        }
    }

    /// The same user on another replica.
    pub fn on(&self, api: &str) -> Api {
        Api {
            api: api.to_string(),
            ..self.clone()
        }
    }

    /// The answer; a request the server cut short (it may answer an upload before reading
    /// all of it) is status 0 with the error's text.
    async fn answer(request: reqwest::RequestBuilder) -> Answer {
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return (0, Value::String(format!("{error:#}"))),
        };
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> Answer {
        Api::answer(
            self.client
                .get(format!("{}{path}", self.api))
                .bearer_auth(&self.token),
        )
        .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        Api::answer(
            self.client
                .post(format!("{}{path}", self.api))
                .bearer_auth(&self.token)
                .json(&body),
        )
        .await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        Api::answer(
            self.client
                .delete(format!("{}{path}", self.api))
                .bearer_auth(&self.token),
        )
        .await
    }

    /// Uploads `bytes` as `name`.
    pub async fn upload(&self, name: &str, bytes: Vec<u8>) -> Answer {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()),
        );
        Api::answer(
            self.client
                .post(format!("{}/tracks/upload", self.api))
                .bearer_auth(&self.token)
                .multipart(form),
        )
        .await
    }

    /// Uploads the local file at `path`, streamed from disk.
    pub async fn upload_file(&self, path: &Path) -> Answer {
        let file = tokio::fs::File::open(path).await.unwrap();
        let size = file.metadata().await.unwrap().len();
        let body = reqwest::Body::wrap_stream(file_stream(file));
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::stream_with_length(body, size).file_name(name),
        );
        Api::answer(
            self.client
                .post(format!("{}/tracks/upload", self.api))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(600))
                .multipart(form),
        )
        .await
    }

    /// Every track, page by page.
    pub async fn tracks(&self) -> Vec<Value> {
        let mut tracks = Vec::new();
        loop {
            let (status, page) = self
                .get(&format!("/tracks?limit=200&offset={}", tracks.len()))
                .await;
            assert_eq!(status, 200, "{page}");
            let items = page["items"].as_array().unwrap();
            tracks.extend(items.iter().cloned());
            if items.is_empty() || tracks.len() as i64 >= page["total"].as_i64().unwrap() {
                return tracks;
            }
        }
    }

    pub async fn job(&self, id: &str) -> Value {
        let (status, job) = self.get(&format!("/jobs/{id}")).await;
        assert_eq!(status, 200, "{job}");
        job
    }

    /// Polls the job until `done` says so.
    pub async fn wait_job(
        &self,
        id: &str,
        limit: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let job = self.job(id).await;
            if done(&job) {
                return job;
            }
            assert!(Instant::now() < deadline, "job {id} never got there: {job}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the job has finished (succeeded or failed) and returns it.
    pub async fn wait_finished(&self, id: &str, limit: Duration) -> Value {
        self.wait_job(id, limit, |job| {
            job["state"] == "succeeded" || job["state"] == "failed"
        })
        .await
    }

    /// Queued and running jobs, as `GET /admin/services` counts them (admin).
    pub async fn live_jobs(&self) -> (i64, i64, i64) {
        let (status, services) = self.get("/admin/services").await;
        assert_eq!(status, 200, "{services}");
        let detail = services
            .as_array()
            .unwrap()
            .iter()
            .find(|service| service["name"] == "job_queue")
            .and_then(|service| service["detail"].as_str())
            .unwrap_or_default()
            .to_string();
        // "3 queued, 1 running, 0 failed"
        let numbers: Vec<i64> = detail
            .split(|c: char| !c.is_ascii_digit())
            .filter(|part| !part.is_empty())
            .map(|part| part.parse().unwrap())
            .collect();
        assert_eq!(numbers.len(), 3, "job_queue detail: {detail}");
        (numbers[0], numbers[1], numbers[2])
    }

    /// Waits until no job is queued or running (admin): nothing is stuck.
    pub async fn wait_jobs_settled(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let (queued, running, _) = self.live_jobs().await;
            if queued == 0 && running == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "jobs still live after {limit:?}: {queued} queued, {running} running"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Streams the whole original of a track: its status and bytes.
    pub async fn stream(&self, id: &str) -> (u16, Vec<u8>) {
        let response = self
            .client
            .get(format!("{}/stream/{id}", self.api))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.bytes().await.unwrap_or_default().to_vec())
    }
}

/// The file as a stream of 1 MiB chunks.
pub fn file_stream(
    file: tokio::fs::File,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    use tokio::io::AsyncReadExt;
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buffer = vec![0u8; 1024 * 1024];
        match file.read(&mut buffer).await {
            Ok(0) => None,
            Ok(read) => {
                buffer.truncate(read);
                Some((Ok(buffer), Some(file)))
            }
            Err(error) => Some((Err(error), None)),
        }
    })
}

/// The blob store of a deployment, read from outside the server: the media folder, or the
/// S3 prefix through a library of its own opened on it.
pub struct Blobs {
    local: Option<PathBuf>,
    probe: Option<musiclib_core::testing::TestLibrary>,
}

impl Blobs {
    pub async fn of(cluster: &Cluster) -> Blobs {
        match cluster.setup {
            Setup::Embedded => Blobs {
                local: Some(cluster.media_dir()),
                probe: None,
            },
            Setup::ScaleOut => {
                // Straight to the S3 server, never through a test's proxy.
                let mut s3 = musiclib_core::testing::test_s3_config();
                s3.prefix = cluster.s3_prefix.clone();
                let probe = musiclib_core::testing::TestLibrary::builder(
                    musiclib_core::testing::Backend::Embedded,
                )
                .config(move |config| {
                    config.storage = musiclib_core::config::StorageConfig::S3(s3);
                })
                .build()
                .await;
                Blobs {
                    local: None,
                    probe: Some(probe),
                }
            }
        }
    }

    /// Every blob at a final key (staging excluded) with its bytes.
    pub async fn all(&self) -> HashMap<String, Vec<u8>> {
        let mut blobs = HashMap::new();
        match (&self.local, &self.probe) {
            (Some(root), _) => {
                for path in walk(root) {
                    let key = path
                        .strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    if key.starts_with(".staging") || !path.is_file() {
                        continue;
                    }
                    blobs.insert(key, std::fs::read(&path).unwrap());
                }
            }
            (None, Some(probe)) => {
                for prefix in ["audio", "covers", "playlist-covers", "renditions"] {
                    for key in musiclib_core::testing::blob_keys(probe, prefix).await {
                        let bytes = musiclib_core::testing::blob_bytes(probe, &key).await;
                        blobs.insert(key, bytes.to_vec());
                    }
                }
            }
            (None, None) => unreachable!(),
        }
        blobs
    }

    /// Keys under `prefix` (staging excluded).
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        match (&self.local, &self.probe) {
            (Some(root), _) => walk(&root.join(prefix))
                .into_iter()
                .filter(|path| path.is_file())
                .map(|path| {
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect(),
            (None, Some(probe)) => {
                musiclib_core::testing::blob_keys(probe, prefix.trim_end_matches('/')).await
            }
            (None, None) => unreachable!(),
        }
    }

    /// Stores a blob behind the server's back (an orphan for cleanup to find).
    pub async fn put(&self, key: &str, bytes: Vec<u8>) {
        match (&self.local, &self.probe) {
            (Some(root), _) => {
                let path = root.join(key);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
            (None, Some(probe)) => musiclib_core::testing::put_blob(probe, key, bytes.into()).await,
            (None, None) => unreachable!(),
        }
    }
}

/// Every file and folder under `dir`.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(walk(&path));
            }
            found.push(path);
        }
    }
    found
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The corpus manifest.
pub fn manifest() -> Value {
    let text =
        std::fs::read_to_string(musiclib_core::testing::corpus().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Audio files of the corpus library a scan imports (valid ones and duplicates of valid
/// ones): their paths relative to the library folder, with their SHA-256.
pub fn importable_files() -> HashMap<String, String> {
    manifest()["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|file| file["classification"] == "ok" || file["classification"] == "duplicate-of")
        .map(|file| {
            (
                file["path"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("library/")
                    .to_string(),
                file["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Copies the corpus library to `dest`.
pub fn copy_library(dest: &Path) {
    let source = musiclib_core::testing::corpus().join("library");
    for path in walk(&source) {
        let target = dest.join(path.strip_prefix(&source).unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Whether an Ogg file ends with its last page (flag "end of stream"): a whole rendition.
pub fn ogg_is_whole(bytes: &[u8]) -> bool {
    let Some(last) = bytes.windows(4).rposition(|window| window == b"OggS") else {
        return false;
    };
    bytes.len() > last + 27 && bytes[last + 5] & 0x04 != 0 && {
        // The page's segments add up to the end of the file.
        let segments = bytes[last + 26] as usize;
        let header = last + 27 + segments;
        bytes.len() >= header
            && bytes[last + 27..header]
                .iter()
                .map(|&size| size as usize)
                .sum::<usize>()
                + header
                == bytes.len()
    }
}

/// What [`check_whole`] found.
#[derive(Debug, Default)]
pub struct Whole {
    /// Tracks in the library.
    pub tracks: usize,
    /// Audio blobs no row references (complete copies, left by a crash between blob and row).
    pub orphans: usize,
}

/// The library after a fault: every available track streams whole (200, its recorded size,
/// the content it was imported from); every audio blob is a whole copy of a known file
/// (`known` SHA-256s: the corpus, the uploads) whether a row references it or not; every
/// Opus rendition is a whole Ogg stream; every HLS build a row names has its playlist and
/// every segment the playlist lists.
pub async fn check_whole(
    cluster: &Cluster,
    admin: &Api,
    known: &HashSet<String>,
    by_source_id: &HashMap<String, String>,
) -> Whole {
    let tracks = admin.tracks().await;
    let blobs = Blobs::of(cluster).await.all().await;
    let mut referenced = HashSet::new();
    for track in &tracks {
        let id = track["id"].as_str().unwrap();
        let key = track["storage_uri"].as_str().unwrap();
        assert_eq!(track["availability"], "available", "{track}");
        referenced.insert(key.to_string());
        let (status, bytes) = admin.stream(id).await;
        assert_eq!(status, 200, "an available track must stream: {track}");
        assert_eq!(
            Some(bytes.len() as i64),
            track["size_bytes"].as_i64(),
            "the stored original has the recorded size: {track}"
        );
        let hash = sha256(&bytes);
        match track["source"].as_str().unwrap() {
            "upload" => assert_eq!(hash, track["source_id"].as_str().unwrap(), "{track}"),
            _ => {
                if let Some(expected) = by_source_id.get(track["source_id"].as_str().unwrap()) {
                    assert_eq!(&hash, expected, "{track}");
                }
            }
        }
        let blob = blobs
            .get(key)
            .unwrap_or_else(|| panic!("no blob at {key} for {track}"));
        assert_eq!(blob.len(), bytes.len(), "{key}");
    }
    let mut orphans = 0;
    for (key, bytes) in &blobs {
        if key.starts_with("audio/") {
            if !referenced.contains(key) {
                orphans += 1;
            }
            assert!(
                known.contains(&sha256(bytes)),
                "{key} ({} bytes) is not a whole copy of any file given to the server",
                bytes.len()
            );
        } else if key.starts_with("renditions/") && key.ends_with(".opus") {
            assert!(ogg_is_whole(bytes), "{key} is a half-written rendition");
        }
    }
    // HLS builds: those a track serves are whole.
    for track in &tracks {
        let id = track["id"].as_str().unwrap();
        let builds: HashSet<String> = blobs
            .keys()
            .filter(|key| key.starts_with(&format!("renditions/{id}/hls/")))
            .filter_map(|key| key.rsplit_once('/').map(|(prefix, _)| prefix.to_string()))
            .collect();
        for build in builds {
            let Some(playlist) = blobs.get(&format!("{build}/playlist.m3u8")) else {
                continue;
            };
            let playlist = String::from_utf8_lossy(playlist);
            assert!(playlist.contains("#EXT-X-ENDLIST"), "{build}: {playlist}");
            for segment in playlist.lines().filter(|line| line.ends_with(".ts")) {
                let segment = segment.split('?').next().unwrap();
                let name = segment.rsplit('/').next().unwrap();
                assert!(
                    blobs.contains_key(&format!("{build}/{name}")),
                    "{build} lists {name}, which is not stored"
                );
            }
        }
    }
    Whole {
        tracks: tracks.len(),
        orphans,
    }
}

/// Processes still running whose command line names `needle` (a scratch directory): children
/// a killed server left behind.
pub fn processes_naming(needle: &Path) -> Vec<String> {
    let needle = needle.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // A zombie has an empty command line; it holds nothing.
        if cmdline.contains(&needle) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// A WAV header for `data_bytes` of 16-bit stereo PCM at 44.1 kHz.
pub fn wav_header(data_bytes: u32) -> Vec<u8> {
    let mut header = Vec::with_capacity(44);
    header.extend_from_slice(b"RIFF");
    header.extend_from_slice(&(36 + data_bytes).to_le_bytes());
    header.extend_from_slice(b"WAVEfmt ");
    header.extend_from_slice(&16u32.to_le_bytes());
    header.extend_from_slice(&1u16.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&44_100u32.to_le_bytes());
    header.extend_from_slice(&(44_100u32 * 4).to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&16u16.to_le_bytes());
    header.extend_from_slice(b"data");
    header.extend_from_slice(&data_bytes.to_le_bytes());
    header
}

/// Writes a WAV file of about `bytes` bytes of noise (every byte sequence is valid 16-bit
/// PCM), different per `seed`, block by block: never the whole file in memory.
pub fn write_wav(path: &Path, bytes: u64, seed: u64) {
    use std::io::Write;
    let data = (bytes.saturating_sub(44) / 4 * 4) as u32;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(&wav_header(data)).unwrap();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut block = vec![0u8; 1024 * 1024];
    let mut left = data as usize;
    while left > 0 {
        for word in block.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        let take = left.min(block.len());
        file.write_all(&block[..take]).unwrap();
        left -= take;
    }
    file.flush().unwrap();
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|number| number.parse().ok())
        .unwrap();
    kib * 1024
}

/// A TCP proxy in front of a dependency (PostgreSQL, S3), to play its outage: [`Proxy::cut`]
/// drops every proxied connection and closes the port (new connections are refused), and
/// [`Proxy::restore`] listens again on the same port.
///
/// This is what a restart of the dependency looks like to a client: its open connections end
/// (PostgreSQL closes them on shutdown), connecting is refused while it is down, and it
/// accepts again on the same address. (The suite's PostgreSQL and S3 serve concurrent tests,
/// so they are never restarted for real.)
pub struct Proxy {
    pub port: u16,
    up: Arc<tokio::sync::watch::Sender<bool>>,
    /// Whether the accept loop listens: it says so once it has acted on `up`.
    listening: tokio::sync::watch::Receiver<bool>,
    connections: Arc<Mutex<tokio::task::JoinSet<()>>>,
    /// Connections accepted in all.
    pub accepted: Arc<AtomicU64>,
}

impl Proxy {
    /// A proxy on a free loopback port to `target`.
    pub async fn start(target: SocketAddr) -> Proxy {
        let port = free_port();
        let (up, mut up_changes) = tokio::sync::watch::channel(true);
        let (listening_now, listening) = tokio::sync::watch::channel(true);
        let connections = Arc::new(Mutex::new(tokio::task::JoinSet::new()));
        let accepted = Arc::new(AtomicU64::new(0));
        let listener = listen(port);
        let (task_connections, task_accepted) = (connections.clone(), accepted.clone());
        tokio::spawn(async move {
            let mut listener = Some(listener);
            loop {
                match listener.take() {
                    Some(open) => {
                        tokio::select! {
                            accepted = open.accept() => {
                                listener = Some(open);
                                let Ok((inbound, _)) = accepted else { continue };
                                // Checked under the lock `cut` aborts the connections with,
                                // after it marked the proxy down: a connection accepted as the
                                // cut came is either refused here or aborted by it.
                                let mut connections = task_connections.lock().unwrap();
                                if !*up_changes.borrow() {
                                    continue;
                                }
                                task_accepted.fetch_add(1, Ordering::Relaxed);
                                connections.spawn(async move {
                                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                                        return;
                                    };
                                    let mut inbound = inbound;
                                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                                });
                            }
                            changed = up_changes.changed() => {
                                if changed.is_err() {
                                    return;
                                }
                                if *up_changes.borrow_and_update() {
                                    listener = Some(open);
                                } else {
                                    // Down: the listener goes, so connecting is refused.
                                    drop(open);
                                    listening_now.send_replace(false);
                                }
                            }
                        }
                    }
                    None => {
                        if up_changes.changed().await.is_err() {
                            return;
                        }
                        if *up_changes.borrow_and_update() {
                            listener = Some(listen(port));
                            listening_now.send_replace(true);
                        }
                    }
                }
            }
        });
        Proxy {
            port,
            up: Arc::new(up),
            listening,
            connections,
            accepted,
        }
    }

    /// The dependency goes away: every connection through the proxy is dropped, and new ones
    /// are refused until [`Proxy::restore`]. Returns once the port is closed.
    pub async fn cut(&self) {
        self.up.send_replace(false);
        self.connections.lock().unwrap().abort_all();
        self.listening
            .clone()
            .wait_for(|listening| !*listening)
            .await
            .expect("the proxy's accept loop runs");
    }

    /// The dependency is back on the same address. Returns once the port accepts again.
    pub async fn restore(&self) {
        self.up.send_replace(true);
        self.listening
            .clone()
            .wait_for(|listening| *listening)
            .await
            .expect("the proxy's accept loop runs");
    }
}

/// A listener on `port` that can be bound again at once after it is closed.
fn listen(port: u16) -> tokio::net::TcpListener {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], port)))
        .unwrap();
    socket.listen(1024).unwrap()
}

/// `url` with its `host:port` replaced by `127.0.0.1:{port}` (a database or S3 URL sent
/// through a [`Proxy`]); and the address it named.
pub fn through_proxy(url: &str, port: u16) -> (String, SocketAddr) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    };
    let (credentials, host) = match authority.rsplit_once('@') {
        Some((credentials, host)) => (format!("{credentials}@"), host),
        None => (String::new(), authority),
    };
    let target: SocketAddr = if host.contains(':') {
        host.replace("localhost", "127.0.0.1").parse().unwrap()
    } else {
        format!("{}:5432", host.replace("localhost", "127.0.0.1"))
            .parse()
            .unwrap()
    };
    (
        format!("{scheme}://{credentials}127.0.0.1:{port}{path}"),
        target,
    )
}

/// A flag set once, for tasks that watch a test's phases.
#[derive(Clone, Default)]
pub struct Flag(Arc<AtomicBool>);

impl Flag {
    pub fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// An AcoustID stand-in (`ACOUSTID_BASE_URL`) that holds every request it receives, without
/// answering, until [`HeldAcoustId::release`]; then (and for every later request) it answers
/// `POST /v2/lookup` with no match. While it holds, an enrichment that reached its lookup is
/// certainly still running: a test can kill its process knowing the job is cut.
pub struct HeldAcoustId {
    pub url: String,
    requests: Arc<AtomicU64>,
    released: tokio::sync::watch::Sender<bool>,
}

impl HeldAcoustId {
    pub async fn start() -> HeldAcoustId {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicU64::new(0));
        let (released, release) = tokio::sync::watch::channel(false);
        let task_requests = requests.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (requests, mut release) = (task_requests.clone(), release.clone());
                tokio::spawn(async move {
                    let _ = HeldAcoustId::serve(stream, &requests, &mut release).await;
                });
            }
        });
        HeldAcoustId {
            url,
            requests,
            released,
        }
    }

    /// Requests received (held or answered).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Answers the held requests and every later one.
    pub fn release(&self) {
        self.released.send_replace(true);
    }

    async fn serve(
        mut stream: tokio::net::TcpStream,
        requests: &AtomicU64,
        release: &mut tokio::sync::watch::Receiver<bool>,
    ) -> std::io::Result<()> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut request = Vec::new();
        let mut buffer = [0u8; 8192];
        // The head, then as much body as it announces.
        let (head_end, length) = loop {
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                return Ok(());
            }
            request.extend_from_slice(&buffer[..read]);
            if let Some(end) = request.windows(4).position(|window| window == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                break (end + 4, length);
            }
        };
        while request.len() < head_end + length {
            let read = stream.read(&mut buffer).await?;
            if read == 0 {
                return Ok(());
            }
            request.extend_from_slice(&buffer[..read]);
        }
        let lookup = request.starts_with(b"POST /v2/lookup");
        requests.fetch_add(1, Ordering::SeqCst);
        let _ = release.wait_for(|released| *released).await;
        let (status, body) = if lookup {
            (
                "200 OK",
                r#"{"status":"ok","results":[],"fingerprints":[]}"#,
            )
        } else {
            (
                "404 Not Found",
                r#"{"status":"error","error":{"code":1,"message":"not found"}}"#,
            )
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    }
}

/// A gate in front of ffmpeg: `FFMPEG_PATH` names a script (called `ffmpeg`) that waits while
/// the gate is closed, then runs the real ffmpeg in its place (`exec`, so the death signal the
/// server sets on it still holds). A test closes the gate, waits until an encode is held at it
/// ([`FfmpegGate::held`]), and knows the encode has not run.
pub struct FfmpegGate {
    pub program: PathBuf,
    closed: PathBuf,
}

impl FfmpegGate {
    /// The gate, open, in `dir` (outside every `DATA_DIR`, so the script's own path does not
    /// name one).
    pub fn new(dir: &Path) -> FfmpegGate {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("gated-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("ffmpeg");
        let closed = dir.join("ffmpeg-gate-closed");
        std::fs::write(
            &program,
            format!(
                // (`-version`, the check that ffmpeg runs, is never held.)
                "#!/bin/sh\nif [ \"$1\" != -version ]; then\n  while [ -e '{}' ]; do sleep 0.05; done\nfi\nexec ffmpeg \"$@\"\n",
                closed.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        FfmpegGate { program, closed }
    }

    pub fn close(&self) {
        std::fs::write(&self.closed, b"").unwrap();
    }

    pub fn open(&self) {
        let _ = std::fs::remove_file(&self.closed);
    }

    /// The encodes held at the gate for a process whose data is in `data_dir`: the script
    /// still runs (it has not become ffmpeg) and its arguments name that folder.
    pub fn held(&self, data_dir: &Path) -> Vec<String> {
        let script = self.program.to_string_lossy().into_owned();
        processes_naming(data_dir)
            .into_iter()
            .filter(|process| process.contains(&script))
            .collect()
    }
}
