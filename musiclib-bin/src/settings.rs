//! Settings: built-in defaults, then an optional TOML file, then environment variables, checked
//! at start-up into a [`musiclib_core::Config`]. A bad value stops the binary with a message
//! naming the variable. Secrets not given are generated once and kept under `DATA_DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use musiclib_core::config::{
    CorsOrigins, RemoteConfig, RetryPolicy, S3Config, SignInThrottleConfig, StorageConfig,
    SubsonicSourceConfig, YtDlpConfig, YtSearch,
};
use musiclib_core::Config;

/// Every setting, with its default and meaning (the README's table is this list).
pub const SETTINGS: &[(&str, &str, &str)] = &[
    (
        "DATA_DIR",
        "./data",
        "Directory of local state: the SQLite file, local media, generated secrets",
    ),
    (
        "DATABASE_URL",
        "sqlite://$DATA_DIR/musiclib.db",
        "sqlite://… (embedded) or postgres://… (scale-out)",
    ),
    (
        "BIND_ADDRESS",
        "127.0.0.1:8000",
        "Address the API listens on",
    ),
    (
        "METRICS_BIND_ADDRESS",
        "",
        "A second address (e.g. 127.0.0.1:9090) serving GET /metrics without authentication, for a scraper on a private network, from `serve` and `worker` alike; unset: /metrics only on BIND_ADDRESS, for admins",
    ),
    (
        "HTTP_HEADER_TIMEOUT_SECONDS",
        "30",
        "Time a client has to send a request's head (1-3600); a slower one is disconnected (slow-loris clients). It bounds a connection's first request (a socket that sends nothing is closed after it) and an HTTP/1 connection's wait for its next request",
    ),
    (
        "HTTP_IDLE_TIMEOUT_SECONDS",
        "60",
        "An HTTP/2 connection with no request open for this long is closed (1-3600); its peer is also pinged every 30 s and dropped when it does not answer",
    ),
    (
        "MAX_CONNECTIONS_PER_ADDRESS",
        "256",
        "Connections one client address may hold open at once (1-65536); more are closed at once. Trusted proxies (TRUSTED_PROXIES) are not limited",
    ),
    (
        "TRUSTED_PROXIES",
        "",
        "Reverse proxies (addresses or networks, comma-separated: 127.0.0.1,10.0.0.0/8) whose X-Forwarded-For names the client, for the sign-in throttle; empty: the connection's address is the client's",
    ),
    ("STORAGE_BACKEND", "local", "local or s3"),
    (
        "LOCAL_STORAGE_PATH",
        "$DATA_DIR/media",
        "Root of the local blob store",
    ),
    ("S3_BUCKET", "", "Bucket (required when STORAGE_BACKEND=s3)"),
    (
        "S3_ENDPOINT",
        "",
        "Endpoint of an S3-compatible server (empty: AWS)",
    ),
    ("S3_REGION", "us-east-1", "Region"),
    (
        "S3_ACCESS_KEY_ID",
        "",
        "Access key id (empty: the AWS credential chain)",
    ),
    ("S3_SECRET_ACCESS_KEY", "", "Secret access key"),
    ("S3_ALLOW_HTTP", "false", "Allow a plain-HTTP endpoint"),
    ("S3_PREFIX", "", "Key prefix inside the bucket"),
    (
        "LOCAL_MEDIA_IMPORT_PATH",
        "",
        "Folder imported by POST /sources/local_folder/scan and `musiclib scan`",
    ),
    (
        "ALLOW_REGISTRATION",
        "true",
        "Whether POST /auth/register is open",
    ),
    (
        "ADMIN_USERNAME",
        "",
        "With ADMIN_PASSWORD: superuser created at start-up when there is no user",
    ),
    ("ADMIN_PASSWORD", "", "Password of ADMIN_USERNAME"),
    (
        "JWT_SECRET",
        "generated in $DATA_DIR/jwt_secret",
        "Signing key of access tokens; set the same value on every replica",
    ),
    ("TOKEN_TTL_HOURS", "168", "Lifetime of an access token"),
    (
        "LEGACY_SECRET_KEY",
        "generated in $DATA_DIR/legacy_secret_key",
        "Key the Subsonic app passwords are encrypted with; never stored in the database",
    ),
    (
        "LOGIN_ACCOUNT_FAILURE_BURST",
        "10",
        "Failed sign-ins one account name may have in a row (login and Subsonic counted apart); then sign-ins are refused (429, Retry-After) without checking the password",
    ),
    (
        "LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS",
        "6",
        "Past the burst, one more failed sign-in per account per this many seconds",
    ),
    (
        "LOGIN_ADDRESS_FAILURE_BURST",
        "30",
        "Failed sign-ins one client address (an IPv6 /64) may have in a row, over all names",
    ),
    (
        "LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS",
        "2",
        "Past the burst, one more failed sign-in per address per this many seconds",
    ),
    (
        "CORS_ALLOWED_ORIGINS",
        "",
        "Origins whose web pages may call the server (CORS): comma-separated scheme://host[:port], or *; empty: none",
    ),
    (
        "MAX_UPLOAD_BYTES",
        "1073741824",
        "Largest accepted upload (413 above)",
    ),
    (
        "CLEANUP_GRACE_SECONDS",
        "3600",
        "How old a stored file no row references must be before storage cleanup deletes it (younger ones may belong to a write in progress)",
    ),
    (
        "WORKER_CONCURRENCY",
        "2",
        "Jobs run at once by `serve` (in-process) and by each `worker`",
    ),
    (
        "ENRICH_CONCURRENCY",
        "40",
        "Enrichment jobs run at once per process besides WORKER_CONCURRENCY; they mostly wait for AcoustID, and concurrent ones share one lookup request (decoding still uses one core each at most)",
    ),
    (
        "FFMPEG_PATH",
        "ffmpeg",
        "The transcoder for Opus renditions (a path, or a name on PATH); without it originals still stream",
    ),
    (
        "RENDITION_CACHE_MAX_BYTES",
        "10737418240",
        "Bound on the total size of cached renditions; least recently used ones are evicted",
    ),
    (
        "THUMBNAIL_CACHE_MAX_BYTES",
        "268435456",
        "Bound on the total size of cached cover thumbnails (256 MiB); least recently served ones are evicted",
    ),
    (
        "MAX_LIVE_ENCODES",
        "8",
        "Live encodes (transcoded streams, HLS encodes) one process runs at once (1-1024); past it, a request that needs one answers 503 with Retry-After",
    ),
    (
        "MAX_LIVE_ENCODES_PER_USER",
        "3",
        "Live encodes one user may have running at once (1-1024)",
    ),
    (
        "JOB_MAX_ATTEMPTS",
        "5",
        "Attempts before a job stays failed",
    ),
    (
        "JOB_LEASE_SECONDS",
        "60",
        "Lease of a running job; a dead worker's job is retried after it",
    ),
    (
        "ACOUSTID_API_KEY",
        "",
        "AcoustID application key (lookup skipped when empty)",
    ),
    (
        "ACOUSTID_BASE_URL",
        "https://api.acoustid.org",
        "AcoustID endpoint",
    ),
    (
        "ACOUSTID_REQUESTS_PER_SECOND",
        "3",
        "AcoustID requests per second from this process; AcoustID allows 3 per key, so with N worker processes set 3/N",
    ),
    (
        "ACOUSTID_TRUST_SCORE",
        "0.85",
        "Lookup score from which the lookup wins over tags",
    ),
    (
        "COVERART_ENABLED",
        "true",
        "Fetch covers from the Cover Art Archive",
    ),
    (
        "COVERART_BASE_URL",
        "https://coverartarchive.org",
        "Cover Art Archive endpoint",
    ),
    (
        "LRCLIB_BASE_URL",
        "https://lrclib.net",
        "LRCLIB endpoint (lyrics)",
    ),
    (
        "LASTFM_API_KEY",
        "",
        "Last.fm API key of this server (scrobbling to Last.fm is off without it)",
    ),
    ("LASTFM_API_SECRET", "", "Last.fm shared secret (signs every call)"),
    (
        "LASTFM_BASE_URL",
        "https://ws.audioscrobbler.com/2.0",
        "Last.fm API root",
    ),
    (
        "LISTENBRAINZ_BASE_URL",
        "https://api.listenbrainz.org",
        "ListenBrainz API root",
    ),
    (
        "REMOTE_ENABLED",
        "false",
        "Turns on the yt-dlp source `remote` (YouTube and YouTube Music)",
    ),
    (
        "YTDLP_PATH",
        "yt-dlp",
        "The yt-dlp program (.ci/serve.sh installs a pinned one when REMOTE_ENABLED is true)",
    ),
    (
        "REMOTE_COOKIES_FILE",
        "",
        "A Netscape cookies file for yt-dlp (YouTube sign-in); each run gets a copy",
    ),
    (
        "REMOTE_WATCH_URL",
        "https://www.youtube.com/watch?v={id}",
        "Where the yt-dlp source fetches an id from ({id} is replaced)",
    ),
    (
        "REMOTE_SEARCH",
        "videos",
        "videos (YouTube videos, with artist and duration) or music (YouTube Music songs, titles only until added)",
    ),
    (
        "REMOTE_MIN_INTERVAL_MS",
        "1000",
        "Least time between two yt-dlp calls to the service (doubles while it rate-limits)",
    ),
    (
        "SUBSONIC_SOURCE_URL",
        "",
        "A Subsonic server (Navidrome, gonic, musiclib) used as the `subsonic` source; off when unset",
    ),
    ("SUBSONIC_SOURCE_USERNAME", "", "Its user"),
    (
        "SUBSONIC_SOURCE_PASSWORD",
        "",
        "Its (app) password: only a salted token travels; redacted wherever settings are shown",
    ),
    (
        "SUBSONIC_SOURCE_API_KEY",
        "",
        "Its OpenSubsonic API key, sent as `apiKey` instead of the user and token (needs no username or password); redacted wherever settings are shown",
    ),
    (
        "REMOTE_SEARCH_TIMEOUT_SECONDS",
        "10",
        "How long one remote source may take to answer a search",
    ),
    (
        "DOWNLOAD_MAX_ATTEMPTS",
        "5",
        "Attempts of a download or materialization before it stays failed",
    ),
    (
        "DOWNLOAD_RETRY_BASE_SECONDS",
        "30",
        "Delay before a failed download's second attempt (doubling after)",
    ),
    (
        "DOWNLOAD_RETRY_MAX_SECONDS",
        "3600",
        "Longest delay between download attempts",
    ),
    (
        "RECOMMENDER_URL",
        "",
        "An external recommender mixed into the radio (POST; see the README); unset: the heuristics alone",
    ),
    (
        "RECOMMENDER_TIMEOUT_MS",
        "150",
        "How long a radio request waits for the external recommender (a timeout leaves it out for 30 s)",
    ),
    (
        "SOUND_ANALYSIS",
        "true",
        "Analyse each track's sound (bliss-audio) in the background, for sounds_like and the sonic endpoints",
    ),
    ("LOG_FORMAT", "text", "text or json"),
    ("RUST_LOG", "info", "Log filter (tracing-subscriber syntax)"),
];

/// Raw settings: file values overridden by the environment. Its `Debug` names the settings
/// given, never their values (secrets are among them).
#[derive(Default)]
pub struct RawSettings {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for RawSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawSettings")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl RawSettings {
    /// Reads `file` (if any) and the environment.
    pub fn load(file: Option<&Path>) -> Result<RawSettings> {
        let mut values = BTreeMap::new();
        if let Some(file) = file {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let table: toml::Table = toml::from_str(&text)
                .with_context(|| format!("{} is not valid TOML", file.display()))?;
            for (key, value) in table {
                let name = key.to_ascii_uppercase();
                if !SETTINGS.iter().any(|(known, _, _)| *known == name) {
                    bail!("{}: unknown setting {key:?}", file.display());
                }
                let text = match value {
                    toml::Value::String(text) => text,
                    other => other.to_string(),
                };
                values.insert(name, text);
            }
        }
        for (name, _, _) in SETTINGS {
            if let Ok(value) = std::env::var(name) {
                values.insert(name.to_string(), value);
            }
        }
        Ok(RawSettings { values })
    }

    /// From explicit values (tests).
    #[cfg(test)]
    pub fn from_pairs(pairs: &[(&str, &str)]) -> RawSettings {
        RawSettings {
            values: pairs
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .map(String::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    fn parse<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|error| anyhow!("{name}: invalid value {text:?}: {error}")),
        }
    }

    fn flag(&self, name: &str, default: bool) -> Result<bool> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("1" | "true" | "yes" | "on") => Ok(true),
            Some("0" | "false" | "no" | "off") => Ok(false),
            Some(other) => bail!("{name}: invalid value {other:?}: expected true or false"),
        }
    }

    fn url(&self, name: &str, default: &str) -> Result<String> {
        let value = self.get(name).unwrap_or(default);
        if !(value.starts_with("http://") || value.starts_with("https://")) {
            // The value may carry credentials: shown as settings are.
            bail!(
                "{name}: invalid value {:?}: expected an http:// or https:// URL",
                musiclib_core::config::redact_url(value)
            );
        }
        Ok(value.trim_end_matches('/').to_string())
    }

    /// Log settings, needed before the rest is validated.
    pub fn log_format(&self) -> Result<LogFormat> {
        match self.get("LOG_FORMAT").unwrap_or("text") {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => bail!("LOG_FORMAT: invalid value {other:?}: expected text or json"),
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("config", &self.config)
            .field("bind_address", &self.bind_address)
            .field("metrics_bind_address", &self.metrics_bind_address)
            .field("header_timeout", &self.header_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field(
                "max_connections_per_address",
                &self.max_connections_per_address,
            )
            .field("worker_concurrency", &self.worker_concurrency)
            .field("enrich_concurrency", &self.enrich_concurrency)
            .field(
                "admin",
                &self
                    .admin
                    .as_ref()
                    .map(|(name, _)| (name, musiclib_core::config::REDACTED)),
            )
            .finish()
    }
}

/// How logs are written.
#[derive(Debug, Clone, Copy)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Everything the binary needs. Its `Debug` redacts secrets (the admin's password too).
pub struct Settings {
    /// The library configuration.
    pub config: Config,
    /// Listen address.
    pub bind_address: std::net::SocketAddr,
    /// Address of the unauthenticated `/metrics` listener, when set.
    pub metrics_bind_address: Option<std::net::SocketAddr>,
    /// Time a client has to send a request's head.
    pub header_timeout: std::time::Duration,
    /// Time an HTTP/2 connection may stay without an open request.
    pub idle_timeout: std::time::Duration,
    /// Connections one client address may hold open at once.
    pub max_connections_per_address: usize,
    /// Jobs run at once per process.
    pub worker_concurrency: usize,
    /// Extra workers per process that run only enrichment jobs.
    pub enrich_concurrency: usize,
    /// Superuser to create when there is no user.
    pub admin: Option<(String, String)>,
}

impl TryFrom<RawSettings> for Settings {
    type Error = anyhow::Error;

    fn try_from(raw: RawSettings) -> Result<Settings> {
        let data_dir = PathBuf::from(raw.get("DATA_DIR").unwrap_or("./data"));
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("DATA_DIR: cannot create {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("DATA_DIR: {}", data_dir.display()))?;
        let mut config = Config::embedded(&data_dir);

        if let Some(url) = raw.get("DATABASE_URL") {
            if !(url.starts_with("sqlite:")
                || url.starts_with("postgres://")
                || url.starts_with("postgresql://"))
            {
                bail!("DATABASE_URL: invalid value: expected sqlite://PATH or postgres://…");
            }
            config.database_url = url.to_string();
        }
        config.storage = match raw.get("STORAGE_BACKEND").unwrap_or("local") {
            "local" => StorageConfig::Local {
                root: raw
                    .get("LOCAL_STORAGE_PATH")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| data_dir.join("media")),
            },
            "s3" => StorageConfig::S3(S3Config {
                bucket: raw
                    .get("S3_BUCKET")
                    .ok_or_else(|| anyhow!("S3_BUCKET: required when STORAGE_BACKEND=s3"))?
                    .to_string(),
                endpoint: match raw.get("S3_ENDPOINT") {
                    Some(_) => Some(raw.url("S3_ENDPOINT", "")?),
                    None => None,
                },
                region: raw.get("S3_REGION").unwrap_or("us-east-1").to_string(),
                access_key_id: raw.get("S3_ACCESS_KEY_ID").map(str::to_string),
                secret_access_key: raw.get("S3_SECRET_ACCESS_KEY").map(str::to_string),
                allow_http: raw.flag("S3_ALLOW_HTTP", false)?,
                prefix: raw.get("S3_PREFIX").map(str::to_string),
            }),
            other => bail!("STORAGE_BACKEND: invalid value {other:?}: expected local or s3"),
        };
        config.local_media_import_path = match raw.get("LOCAL_MEDIA_IMPORT_PATH") {
            Some(path) => {
                let path = PathBuf::from(path);
                if !path.is_dir() {
                    bail!(
                        "LOCAL_MEDIA_IMPORT_PATH: {} is not a directory",
                        path.display()
                    );
                }
                Some(path)
            }
            None => None,
        };
        config.allow_registration = raw.flag("ALLOW_REGISTRATION", true)?;
        config.jwt_secret = match raw.get("JWT_SECRET") {
            Some(secret) if secret.len() < 16 => {
                bail!("JWT_SECRET: too short: use at least 16 characters")
            }
            Some(secret) => secret.as_bytes().to_vec(),
            None => persistent_secret(&data_dir.join("jwt_secret"))?,
        };
        config.legacy_secret_key = match raw.get("LEGACY_SECRET_KEY") {
            Some(secret) if secret.len() < 16 => {
                bail!("LEGACY_SECRET_KEY: too short: use at least 16 characters")
            }
            Some(secret) => secret.as_bytes().to_vec(),
            None => persistent_secret(&data_dir.join("legacy_secret_key"))?,
        };
        config.sign_in_throttle = sign_in_throttle(&raw)?;
        config.trusted_proxies =
            musiclib_core::config::TrustedProxies::parse(raw.get("TRUSTED_PROXIES").unwrap_or(""))
                .map_err(|error| anyhow!("TRUSTED_PROXIES: {error}"))?;
        config.cors_allowed_origins =
            CorsOrigins::parse(raw.get("CORS_ALLOWED_ORIGINS").unwrap_or(""))
                .map_err(|error| anyhow!("CORS_ALLOWED_ORIGINS: {error}"))?;
        let ttl_hours: u64 = raw.parse("TOKEN_TTL_HOURS", 168)?;
        if ttl_hours == 0 {
            bail!("TOKEN_TTL_HOURS: must be at least 1");
        }
        config.token_ttl = Duration::from_secs(ttl_hours * 3600);
        config.max_upload_bytes = raw.parse("MAX_UPLOAD_BYTES", 1024 * 1024 * 1024)?;
        if config.max_upload_bytes == 0 {
            bail!("MAX_UPLOAD_BYTES: must be positive");
        }
        config.cleanup_grace = Duration::from_secs(raw.parse("CLEANUP_GRACE_SECONDS", 3600)?);
        config.jobs.max_attempts = raw.parse("JOB_MAX_ATTEMPTS", 5)?;
        if config.jobs.max_attempts == 0 {
            bail!("JOB_MAX_ATTEMPTS: must be at least 1");
        }
        let lease: u64 = raw.parse("JOB_LEASE_SECONDS", 60)?;
        if lease < 5 {
            bail!("JOB_LEASE_SECONDS: must be at least 5");
        }
        config.jobs.lease = Duration::from_secs(lease);
        config.enrichment.acoustid_api_key = raw.get("ACOUSTID_API_KEY").map(str::to_string);
        config.enrichment.acoustid_base_url =
            raw.url("ACOUSTID_BASE_URL", "https://api.acoustid.org")?;
        let trust: f64 = raw.parse("ACOUSTID_TRUST_SCORE", 0.85)?;
        if !(0.0..=1.0).contains(&trust) {
            bail!("ACOUSTID_TRUST_SCORE: must be between 0 and 1");
        }
        config.enrichment.acoustid_trust_score = trust;
        let rate: f64 = raw.parse("ACOUSTID_REQUESTS_PER_SECOND", 3.0)?;
        if !(rate > 0.0 && rate <= 3.0) {
            bail!("ACOUSTID_REQUESTS_PER_SECOND: must be above 0 and at most 3 (AcoustID's limit)");
        }
        config.enrichment.acoustid_requests_per_second = rate;
        config.enrichment.coverart_enabled = raw.flag("COVERART_ENABLED", true)?;
        config.enrichment.coverart_base_url =
            raw.url("COVERART_BASE_URL", "https://coverartarchive.org")?;
        config.enrichment.lrclib_base_url = raw.url("LRCLIB_BASE_URL", "https://lrclib.net")?;
        config.scrobbling.lastfm_api_key = raw.get("LASTFM_API_KEY").map(str::to_string);
        config.scrobbling.lastfm_api_secret = raw.get("LASTFM_API_SECRET").map(str::to_string);
        config.scrobbling.lastfm_base_url =
            raw.url("LASTFM_BASE_URL", "https://ws.audioscrobbler.com/2.0")?;
        config.scrobbling.listenbrainz_base_url =
            raw.url("LISTENBRAINZ_BASE_URL", "https://api.listenbrainz.org")?;
        config.remote = remote_settings(&raw)?;
        if raw.get("RECOMMENDER_URL").is_some() {
            config.recommend.external_url = Some(raw.url("RECOMMENDER_URL", "")?);
        }
        let timeout: u64 = raw.parse("RECOMMENDER_TIMEOUT_MS", 150)?;
        if !(10..=10_000).contains(&timeout) {
            bail!("RECOMMENDER_TIMEOUT_MS: must be between 10 and 10000");
        }
        config.recommend.external_timeout = Duration::from_millis(timeout);
        config.recommend.sound_analysis = raw.flag("SOUND_ANALYSIS", true)?;

        let bind_address = raw
            .get("BIND_ADDRESS")
            .unwrap_or("127.0.0.1:8000")
            .parse()
            .map_err(|error| anyhow!("BIND_ADDRESS: invalid value: {error} (expected HOST:PORT, e.g. 127.0.0.1:8000)"))?;
        let metrics_bind_address = match raw.get("METRICS_BIND_ADDRESS") {
            Some(text) => Some(text.parse().map_err(|error| {
                anyhow!("METRICS_BIND_ADDRESS: invalid value {text:?}: {error} (expected HOST:PORT, e.g. 127.0.0.1:9090)")
            })?),
            None => None,
        };
        let header_timeout: u64 = raw.parse("HTTP_HEADER_TIMEOUT_SECONDS", 30)?;
        if !(1..=3600).contains(&header_timeout) {
            bail!("HTTP_HEADER_TIMEOUT_SECONDS: must be between 1 and 3600");
        }
        let header_timeout = std::time::Duration::from_secs(header_timeout);
        let idle_timeout: u64 = raw.parse("HTTP_IDLE_TIMEOUT_SECONDS", 60)?;
        if !(1..=3600).contains(&idle_timeout) {
            bail!("HTTP_IDLE_TIMEOUT_SECONDS: must be between 1 and 3600");
        }
        let idle_timeout = std::time::Duration::from_secs(idle_timeout);
        let max_connections_per_address: usize = raw.parse("MAX_CONNECTIONS_PER_ADDRESS", 256)?;
        if !(1..=65536).contains(&max_connections_per_address) {
            bail!("MAX_CONNECTIONS_PER_ADDRESS: must be between 1 and 65536");
        }
        let worker_concurrency: usize = raw.parse("WORKER_CONCURRENCY", 2)?;
        if worker_concurrency == 0 || worker_concurrency > 64 {
            bail!("WORKER_CONCURRENCY: must be between 1 and 64");
        }
        config.transcoding.ffmpeg = raw.get("FFMPEG_PATH").unwrap_or("ffmpeg").into();
        config.transcoding.rendition_cache_max_bytes = raw.parse(
            "RENDITION_CACHE_MAX_BYTES",
            config.transcoding.rendition_cache_max_bytes,
        )?;
        config.transcoding.thumbnail_cache_max_bytes = raw.parse(
            "THUMBNAIL_CACHE_MAX_BYTES",
            config.transcoding.thumbnail_cache_max_bytes,
        )?;
        config.transcoding.max_live_encodes =
            raw.parse("MAX_LIVE_ENCODES", config.transcoding.max_live_encodes)?;
        if !(1..=1024).contains(&config.transcoding.max_live_encodes) {
            bail!("MAX_LIVE_ENCODES: must be between 1 and 1024");
        }
        config.transcoding.max_live_encodes_per_user = raw.parse(
            "MAX_LIVE_ENCODES_PER_USER",
            config.transcoding.max_live_encodes_per_user,
        )?;
        if !(1..=1024).contains(&config.transcoding.max_live_encodes_per_user) {
            bail!("MAX_LIVE_ENCODES_PER_USER: must be between 1 and 1024");
        }
        let enrich_concurrency: usize = raw.parse(
            "ENRICH_CONCURRENCY",
            musiclib_core::jobs::DEFAULT_ENRICH_CONCURRENCY,
        )?;
        if enrich_concurrency > 256 {
            bail!("ENRICH_CONCURRENCY: must be between 0 and 256");
        }
        let admin = match (raw.get("ADMIN_USERNAME"), raw.get("ADMIN_PASSWORD")) {
            (Some(name), Some(password)) => {
                if password.chars().count() < musiclib_core::auth::MIN_PASSWORD_LEN {
                    bail!(
                        "ADMIN_PASSWORD: must be at least {} characters",
                        musiclib_core::auth::MIN_PASSWORD_LEN
                    );
                }
                Some((name.to_string(), password.to_string()))
            }
            (None, None) => None,
            (Some(_), None) => bail!("ADMIN_PASSWORD: required when ADMIN_USERNAME is set"),
            (None, Some(_)) => bail!("ADMIN_USERNAME: required when ADMIN_PASSWORD is set"),
        };
        Ok(Settings {
            config,
            bind_address,
            metrics_bind_address,
            header_timeout,
            idle_timeout,
            max_connections_per_address,
            worker_concurrency,
            enrich_concurrency,
            admin,
        })
    }
}

/// The limits of failed sign-ins.
fn sign_in_throttle(raw: &RawSettings) -> Result<SignInThrottleConfig> {
    let defaults = SignInThrottleConfig::default();
    let burst = |name: &str, default: u32| -> Result<u32> {
        let value = raw.parse(name, default)?;
        if !(1..=10_000).contains(&value) {
            bail!("{name}: must be between 1 and 10000");
        }
        Ok(value)
    };
    let interval = |name: &str, default: Duration| -> Result<Duration> {
        let seconds: u64 = raw.parse(name, default.as_secs())?;
        if !(1..=3600).contains(&seconds) {
            bail!("{name}: must be between 1 and 3600 seconds");
        }
        Ok(Duration::from_secs(seconds))
    };
    Ok(SignInThrottleConfig {
        account_burst: burst("LOGIN_ACCOUNT_FAILURE_BURST", defaults.account_burst)?,
        account_interval: interval(
            "LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS",
            defaults.account_interval,
        )?,
        address_burst: burst("LOGIN_ADDRESS_FAILURE_BURST", defaults.address_burst)?,
        address_interval: interval(
            "LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS",
            defaults.address_interval,
        )?,
    })
}

/// The remote sources and their download retries.
fn remote_settings(raw: &RawSettings) -> Result<RemoteConfig> {
    let mut remote = RemoteConfig::default();
    if raw.flag("REMOTE_ENABLED", false)? {
        let mut ytdlp = YtDlpConfig::new(raw.get("YTDLP_PATH").unwrap_or("yt-dlp"));
        if let Some(path) = raw.get("REMOTE_COOKIES_FILE") {
            let path = PathBuf::from(path);
            if !path.is_file() {
                bail!("REMOTE_COOKIES_FILE: {} is not a file", path.display());
            }
            ytdlp.cookies_file = Some(path);
        }
        if let Some(url) = raw.get("REMOTE_WATCH_URL") {
            if !url.contains("{id}") {
                bail!("REMOTE_WATCH_URL: must contain {{id}}");
            }
            raw.url("REMOTE_WATCH_URL", "")?;
            ytdlp.watch_url = url.to_string();
        }
        ytdlp.search = match raw.get("REMOTE_SEARCH").unwrap_or("videos") {
            "music" => YtSearch::Music,
            "videos" => YtSearch::Videos,
            other => bail!("REMOTE_SEARCH: invalid value {other:?}: expected music or videos"),
        };
        ytdlp.min_interval = Duration::from_millis(raw.parse("REMOTE_MIN_INTERVAL_MS", 1000)?);
        remote.ytdlp = Some(ytdlp);
    } else if raw.get("REMOTE_COOKIES_FILE").is_some() || raw.get("YTDLP_PATH").is_some() {
        tracing::warn!("REMOTE_COOKIES_FILE and YTDLP_PATH apply only when REMOTE_ENABLED is true");
    }
    if let Some(url) = raw.get("SUBSONIC_SOURCE_URL") {
        raw.url("SUBSONIC_SOURCE_URL", "")?;
        let api_key = raw.get("SUBSONIC_SOURCE_API_KEY");
        let (username, password) = match (
            raw.get("SUBSONIC_SOURCE_USERNAME"),
            raw.get("SUBSONIC_SOURCE_PASSWORD"),
        ) {
            (Some(username), Some(password)) => (username, password),
            (username, _) if api_key.is_some() => (username.unwrap_or(""), ""),
            _ => bail!(
                "SUBSONIC_SOURCE_URL: needs SUBSONIC_SOURCE_API_KEY, or SUBSONIC_SOURCE_USERNAME and SUBSONIC_SOURCE_PASSWORD"
            ),
        };
        remote.subsonic = Some(SubsonicSourceConfig {
            url: url.trim_end_matches('/').to_string(),
            username: username.to_string(),
            password: password.to_string(),
        });
        remote.subsonic_api_key = api_key.map(str::to_string);
    }
    let timeout: u64 = raw.parse("REMOTE_SEARCH_TIMEOUT_SECONDS", 10)?;
    if !(1..=120).contains(&timeout) {
        bail!("REMOTE_SEARCH_TIMEOUT_SECONDS: must be between 1 and 120");
    }
    remote.search_timeout = Duration::from_secs(timeout);
    let attempts: u32 = raw.parse("DOWNLOAD_MAX_ATTEMPTS", 5)?;
    if attempts == 0 {
        bail!("DOWNLOAD_MAX_ATTEMPTS: must be at least 1");
    }
    let base: u64 = raw.parse("DOWNLOAD_RETRY_BASE_SECONDS", 30)?;
    let max: u64 = raw.parse("DOWNLOAD_RETRY_MAX_SECONDS", 3600)?;
    if base == 0 || max < base {
        bail!("DOWNLOAD_RETRY_BASE_SECONDS and DOWNLOAD_RETRY_MAX_SECONDS: need 0 < base <= max");
    }
    remote.download_retry = RetryPolicy {
        max_attempts: attempts,
        base: Duration::from_secs(base),
        max: Duration::from_secs(max),
    };
    Ok(remote)
}

/// Shortest secret accepted from a file (the environment variables take 16 characters; a
/// generated secret has 64).
const MIN_SECRET_LEN: usize = 16;

/// Reads a secret kept in `path`, generating it (mode 0600) only when the file does not exist.
///
/// A secret is never replaced: a replaced `legacy_secret_key` would make every stored app
/// password and scrobbling key undecryptable for good. So a file that exists but cannot be
/// read, or holds too short a secret, stops the binary with a message naming it. A new secret
/// is written to a temporary file of its own and linked into place only if the file still does
/// not exist: of two processes starting together, one creates it and both use that one.
fn persistent_secret(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read_to_string(path) {
        Ok(text) => return checked_secret(path, &text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(anyhow!(
                "{} exists but cannot be read ({error}); fix its permissions or restore it (it is never replaced: data encrypted with it would be lost)",
                path.display()
            ))
        }
    }
    let secret = hex::encode(musiclib_core::auth::random_secret());
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".secret-");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600));
    let mut staged = builder
        .tempfile_in(dir)
        .with_context(|| format!("cannot write a secret in {}", dir.display()))?;
    {
        use std::io::Write;
        staged.write_all(secret.as_bytes())?;
        staged.as_file().sync_all()?;
    }
    // Creates `path` only if nothing is there (a hard link fails on an existing name).
    match staged.persist_noclobber(path) {
        Ok(_) => {
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok(secret.into_bytes())
        }
        // Another process made it first: use theirs.
        Err(error) if error.error.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            checked_secret(path, &text)
        }
        Err(error) => Err(anyhow!("cannot write {}: {}", path.display(), error.error)),
    }
}

/// The secret read from `path`, refused (naming the file) when too short.
fn checked_secret(path: &Path, text: &str) -> Result<Vec<u8>> {
    let text = text.trim();
    if text.len() < MIN_SECRET_LEN {
        bail!(
            "{} holds a secret of {} characters, fewer than {MIN_SECRET_LEN}; restore the original file (it is never replaced: data encrypted with it would be lost)",
            path.display(),
            text.len()
        );
    }
    Ok(text.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(pairs: &[(&str, &str)]) -> Result<Settings> {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap().to_string();
        let mut all = vec![("DATA_DIR", data_dir.as_str())];
        all.extend_from_slice(pairs);
        let result = Settings::try_from(RawSettings::from_pairs(&all));
        std::mem::forget(dir);
        result
    }

    #[test]
    fn secrets_are_generated_once_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("legacy_secret_key");
        let first = persistent_secret(&path).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(persistent_secret(&path).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // A file too short is refused, naming it, and left as it is.
        std::fs::write(&path, "short").unwrap();
        let error = persistent_secret(&path).unwrap_err().to_string();
        assert!(error.contains("legacy_secret_key"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "short");
        // A secret as short as the environment variable may be is taken.
        std::fs::write(&path, "0123456789abcdef\n").unwrap();
        assert_eq!(persistent_secret(&path).unwrap(), b"0123456789abcdef");
        // A file that cannot be read (a directory here) is refused, never replaced.
        let unreadable = dir.path().join("jwt_secret");
        std::fs::create_dir(&unreadable).unwrap();
        let error = persistent_secret(&unreadable).unwrap_err().to_string();
        assert!(error.contains("jwt_secret"), "{error}");
        assert!(unreadable.is_dir());
        // Processes starting together all use the one secret that was written.
        let racing = dir.path().join("raced");
        let secrets: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| persistent_secret(&racing).unwrap()))
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().unwrap())
                .collect()
        });
        assert!(secrets.iter().all(|secret| *secret == secrets[0]));
        assert_eq!(std::fs::read(&racing).unwrap(), secrets[0]);
        // No temporary file is left beside them.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|name| !name.starts_with(".secret-")),
            "{names:?}"
        );
    }

    #[test]
    fn listener_bounds_and_proxies_are_read() {
        let defaults = build(&[]).unwrap();
        assert_eq!(defaults.idle_timeout, Duration::from_secs(60));
        assert_eq!(defaults.max_connections_per_address, 256);
        assert_eq!(defaults.config.trusted_proxies.as_setting(), None);
        assert_eq!(defaults.config.transcoding.max_live_encodes, 8);
        assert_eq!(defaults.config.transcoding.max_live_encodes_per_user, 3);
        assert_eq!(
            defaults.config.transcoding.thumbnail_cache_max_bytes,
            256 * 1024 * 1024
        );
        let set = build(&[
            ("TRUSTED_PROXIES", "127.0.0.1, 10.0.0.0/8"),
            ("HTTP_IDLE_TIMEOUT_SECONDS", "5"),
            ("MAX_CONNECTIONS_PER_ADDRESS", "10"),
            ("MAX_LIVE_ENCODES", "4"),
            ("MAX_LIVE_ENCODES_PER_USER", "1"),
        ])
        .unwrap();
        assert_eq!(set.idle_timeout, Duration::from_secs(5));
        assert_eq!(set.max_connections_per_address, 10);
        assert!(set
            .config
            .trusted_proxies
            .contains("10.1.2.3".parse().unwrap()));
        assert_eq!(set.config.transcoding.max_live_encodes, 4);
        assert_eq!(set.config.transcoding.max_live_encodes_per_user, 1);
    }

    #[test]
    fn defaults_are_the_embedded_setup() {
        let settings = build(&[]).unwrap();
        assert!(settings.config.database_url.starts_with("sqlite://"));
        assert!(matches!(
            settings.config.storage,
            StorageConfig::Local { .. }
        ));
        assert!(settings.config.allow_registration);
        assert_eq!(settings.bind_address.to_string(), "127.0.0.1:8000");
        assert_eq!(settings.metrics_bind_address, None);
        assert_eq!(settings.config.jwt_secret.len(), 64);
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (name, value) in [
            ("STORAGE_BACKEND", "ftp"),
            ("ALLOW_REGISTRATION", "maybe"),
            ("BIND_ADDRESS", "nowhere"),
            ("METRICS_BIND_ADDRESS", "9090"),
            ("MAX_UPLOAD_BYTES", "-3"),
            ("DATABASE_URL", "mysql://x"),
            ("ACOUSTID_TRUST_SCORE", "2"),
            ("COVERART_BASE_URL", "ftp://x"),
            ("LOCAL_MEDIA_IMPORT_PATH", "/does/not/exist"),
            ("LOGIN_ACCOUNT_FAILURE_BURST", "0"),
            ("LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS", "0"),
            ("CORS_ALLOWED_ORIGINS", "https://player.example/app"),
            ("CORS_ALLOWED_ORIGINS", "*,https://player.example"),
            ("TRUSTED_PROXIES", "proxy.example"),
            ("HTTP_IDLE_TIMEOUT_SECONDS", "0"),
            ("MAX_CONNECTIONS_PER_ADDRESS", "0"),
            ("MAX_LIVE_ENCODES", "0"),
            ("MAX_LIVE_ENCODES_PER_USER", "2000"),
            ("THUMBNAIL_CACHE_MAX_BYTES", "lots"),
        ] {
            let error = build(&[(name, value)]).unwrap_err().to_string();
            assert!(error.starts_with(name), "{name}: {error}");
        }
        let error = build(&[("STORAGE_BACKEND", "s3")]).unwrap_err().to_string();
        assert!(error.starts_with("S3_BUCKET"), "{error}");
    }

    #[test]
    fn sign_in_limits_and_cors_origins_are_read() {
        let defaults = build(&[]).unwrap();
        assert_eq!(
            defaults.config.sign_in_throttle,
            SignInThrottleConfig::default()
        );
        assert_eq!(defaults.config.cors_allowed_origins, CorsOrigins::None);
        // The table's defaults are core's.
        let documented = |name: &str| -> u64 {
            SETTINGS
                .iter()
                .find(|(known, _, _)| *known == name)
                .unwrap()
                .1
                .parse()
                .unwrap()
        };
        let limits = SignInThrottleConfig::default();
        assert_eq!(
            documented("LOGIN_ACCOUNT_FAILURE_BURST"),
            u64::from(limits.account_burst)
        );
        assert_eq!(
            documented("LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS"),
            limits.account_interval.as_secs()
        );
        assert_eq!(
            documented("LOGIN_ADDRESS_FAILURE_BURST"),
            u64::from(limits.address_burst)
        );
        assert_eq!(
            documented("LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS"),
            limits.address_interval.as_secs()
        );
        let set = build(&[
            ("LOGIN_ACCOUNT_FAILURE_BURST", "3"),
            ("LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS", "60"),
            ("LOGIN_ADDRESS_FAILURE_BURST", "100"),
            ("LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS", "1"),
            (
                "CORS_ALLOWED_ORIGINS",
                "https://player.example, http://localhost:5173",
            ),
        ])
        .unwrap();
        assert_eq!(
            set.config.sign_in_throttle,
            SignInThrottleConfig {
                account_burst: 3,
                account_interval: Duration::from_secs(60),
                address_burst: 100,
                address_interval: Duration::from_secs(1),
            }
        );
        assert_eq!(
            set.config.cors_allowed_origins,
            CorsOrigins::List(vec![
                "https://player.example".into(),
                "http://localhost:5173".into()
            ])
        );
        let any = build(&[("CORS_ALLOWED_ORIGINS", "*")]).unwrap();
        assert_eq!(any.config.cors_allowed_origins, CorsOrigins::Any);
    }

    #[test]
    fn a_subsonic_source_takes_an_api_key_or_a_password() {
        let url = ("SUBSONIC_SOURCE_URL", "http://friend.example");
        let keyed = build(&[url, ("SUBSONIC_SOURCE_API_KEY", "k3y-secret")]).unwrap();
        assert!(keyed.config.remote.subsonic.is_some());
        assert_eq!(
            keyed.config.remote.subsonic_api_key.as_deref(),
            Some("k3y-secret")
        );
        let shown = keyed.config.effective();
        let key = shown
            .iter()
            .find(|setting| setting.name == "SUBSONIC_SOURCE_API_KEY")
            .unwrap();
        assert!(key.secret && key.value.as_deref() != Some("k3y-secret"));
        assert!(!format!("{:?}", keyed.config).contains("k3y-secret"));
        let password = build(&[
            url,
            ("SUBSONIC_SOURCE_USERNAME", "friend"),
            ("SUBSONIC_SOURCE_PASSWORD", "pw"),
        ])
        .unwrap();
        assert_eq!(password.config.remote.subsonic_api_key, None);
        let error = build(&[url, ("SUBSONIC_SOURCE_USERNAME", "friend")])
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("SUBSONIC_SOURCE_URL"), "{error}");
    }
}
