//! Settings: built-in defaults, then an optional TOML file, then environment variables, checked
//! at start-up into a [`musiclib_core::Config`]. A bad value stops the binary with a message
//! naming the variable. Secrets not given are generated once and kept under `DATA_DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use musiclib_core::config::declared::{self, SETTINGS};
use musiclib_core::config::EffectiveSetting;
use musiclib_core::config::{
    CorsOrigins, RemoteConfig, RetryPolicy, S3Config, SignInThrottleConfig, StorageConfig,
    SubsonicSourceConfig, YtDlpConfig, YtSearch,
};
use musiclib_core::Config;

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
                if declared::find(&name).is_none() {
                    bail!("{}: unknown setting {key:?}", file.display());
                }
                let text = match value {
                    toml::Value::String(text) => text,
                    other => other.to_string(),
                };
                values.insert(name, text);
            }
        }
        for setting in SETTINGS {
            if let Ok(value) = std::env::var(setting.name) {
                values.insert(setting.name.to_string(), value);
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

    /// The value given for `name`, if any (a name must be declared).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        assert!(
            declared::find(name).is_some(),
            "{name} is read but not declared in musiclib_core::config::declared"
        );
        self.values
            .get(name)
            .map(String::as_str)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    /// `DATABASE_URL` when given (checked: `sqlite:` or `postgres://`).
    pub(crate) fn database_url(&self) -> Result<Option<&str>> {
        match self.get("DATABASE_URL") {
            Some(url)
                if !(url.starts_with("sqlite:")
                    || url.starts_with("postgres://")
                    || url.starts_with("postgresql://")) =>
            {
                bail!("DATABASE_URL: invalid value: expected sqlite://PATH or postgres://…")
            }
            url => Ok(url),
        }
    }

    /// Where local storage keeps its files under `data_dir` (`LOCAL_STORAGE_PATH`, else
    /// `media`).
    pub(crate) fn local_storage_root(&self, data_dir: &Path) -> PathBuf {
        self.get("LOCAL_STORAGE_PATH")
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.join("media"))
    }

    /// `BIND_ADDRESS`, or its default.
    pub(crate) fn bind_address(&self) -> Result<std::net::SocketAddr> {
        self.text("BIND_ADDRESS").parse().map_err(|error| {
            anyhow!(
                "BIND_ADDRESS: invalid value: {error} (expected HOST:PORT, e.g. 127.0.0.1:8000)"
            )
        })
    }

    /// The value given for `name`, or its declared default.
    pub(crate) fn text(&self, name: &str) -> &str {
        self.get(name)
            .unwrap_or_else(|| declared::find(name).map_or("", |setting| setting.default))
    }

    /// The value of `name` (or its declared default) as a `T`.
    fn parse<T: std::str::FromStr>(&self, name: &str) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        let text = self.text(name);
        text.parse()
            .map_err(|error| anyhow!("{name}: invalid value {text:?}: {error}"))
    }

    fn flag(&self, name: &str) -> Result<bool> {
        match self.text(name).to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            other => bail!("{name}: invalid value {other:?}: expected true or false"),
        }
    }

    fn url(&self, name: &str) -> Result<String> {
        let value = self.text(name);
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
        match self.text("LOG_FORMAT") {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => bail!("LOG_FORMAT: invalid value {other:?}: expected text or json"),
        }
    }
}

/// Every setting as `musiclib config` shows it (secrets redacted).
impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for setting in self.shown() {
            map.entry(&setting.name, &setting.value);
        }
        map.finish()
    }
}

impl Settings {
    /// Every declared setting with its effective value, in the reference's order, as
    /// `musiclib config` prints them: the library's from its [`Config`], the program's from
    /// here; secrets redacted, URLs without their credentials.
    pub fn shown(&self) -> Vec<EffectiveSetting> {
        // The library shows its settings in the declaration's order.
        let mut library = self.config.effective().into_iter();
        SETTINGS
            .iter()
            .map(|setting| {
                if setting.is_library() {
                    library
                        .next()
                        .expect("the library shows each of its settings")
                } else {
                    setting.shown(self.program_value(setting.name))
                }
            })
            .collect()
    }

    /// The value of a setting of the program (one the library's `Config` does not hold).
    fn program_value(&self, name: &str) -> Option<String> {
        match name {
            "BIND_ADDRESS" => Some(self.bind_address.to_string()),
            "METRICS_BIND_ADDRESS" => self.metrics_bind_address.map(|address| address.to_string()),
            "HTTP_HEADER_TIMEOUT_SECONDS" => Some(self.header_timeout.as_secs().to_string()),
            "HTTP_IDLE_TIMEOUT_SECONDS" => Some(self.idle_timeout.as_secs().to_string()),
            "MAX_CONNECTIONS_PER_ADDRESS" => Some(self.max_connections_per_address.to_string()),
            "ADMIN_USERNAME" => self.admin.as_ref().map(|(name, _)| name.clone()),
            "ADMIN_PASSWORD" => self.admin.as_ref().map(|(_, password)| password.clone()),
            "WORKER_CONCURRENCY" => Some(self.worker_concurrency.to_string()),
            "ENRICH_CONCURRENCY" => Some(self.enrich_concurrency.to_string()),
            "LOG_FORMAT" => Some(self.log_format.as_str().to_string()),
            // Read by the log filter from the environment.
            "RUST_LOG" => std::env::var("RUST_LOG").ok(),
            other => unreachable!(
                "{other} is declared as a setting of the program, but the program does not show it"
            ),
        }
    }
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl LogFormat {
    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
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
    /// How logs are written.
    pub log_format: LogFormat,
}

impl TryFrom<RawSettings> for Settings {
    type Error = anyhow::Error;

    fn try_from(raw: RawSettings) -> Result<Settings> {
        let data_dir = PathBuf::from(raw.text("DATA_DIR"));
        std::fs::create_dir_all(&data_dir)
            .with_context(|| format!("DATA_DIR: cannot create {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("DATA_DIR: {}", data_dir.display()))?;
        let mut config = Config::embedded(&data_dir);

        if let Some(url) = raw.database_url()? {
            config.database_url = url.to_string();
        }
        config.storage = match raw.text("STORAGE_BACKEND") {
            "local" => StorageConfig::Local {
                root: raw.local_storage_root(&data_dir),
            },
            "s3" => StorageConfig::S3(S3Config {
                bucket: raw
                    .get("S3_BUCKET")
                    .ok_or_else(|| anyhow!("S3_BUCKET: required when STORAGE_BACKEND=s3"))?
                    .to_string(),
                endpoint: match raw.get("S3_ENDPOINT") {
                    Some(_) => Some(raw.url("S3_ENDPOINT")?),
                    None => None,
                },
                region: raw.text("S3_REGION").to_string(),
                access_key_id: raw.get("S3_ACCESS_KEY_ID").map(str::to_string),
                secret_access_key: raw.get("S3_SECRET_ACCESS_KEY").map(str::to_string),
                allow_http: raw.flag("S3_ALLOW_HTTP")?,
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
        config.allow_registration = raw.flag("ALLOW_REGISTRATION")?;
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
            musiclib_core::config::TrustedProxies::parse(raw.text("TRUSTED_PROXIES"))
                .map_err(|error| anyhow!("TRUSTED_PROXIES: {error}"))?;
        config.cors_allowed_origins = CorsOrigins::parse(raw.text("CORS_ALLOWED_ORIGINS"))
            .map_err(|error| anyhow!("CORS_ALLOWED_ORIGINS: {error}"))?;
        config.public_url = match raw.text("PUBLIC_URL") {
            "" => None,
            _ => Some(raw.url("PUBLIC_URL")?),
        };
        let ttl_hours: u64 = raw.parse("TOKEN_TTL_HOURS")?;
        if ttl_hours == 0 {
            bail!("TOKEN_TTL_HOURS: must be at least 1");
        }
        config.token_ttl = Duration::from_secs(ttl_hours * 3600);
        config.max_upload_bytes = raw.parse("MAX_UPLOAD_BYTES")?;
        if config.max_upload_bytes == 0 {
            bail!("MAX_UPLOAD_BYTES: must be positive");
        }
        config.cleanup_grace = Duration::from_secs(raw.parse("CLEANUP_GRACE_SECONDS")?);
        config.jobs.max_attempts = raw.parse("JOB_MAX_ATTEMPTS")?;
        if config.jobs.max_attempts == 0 {
            bail!("JOB_MAX_ATTEMPTS: must be at least 1");
        }
        let lease: u64 = raw.parse("JOB_LEASE_SECONDS")?;
        if lease < 5 {
            bail!("JOB_LEASE_SECONDS: must be at least 5");
        }
        config.jobs.lease = Duration::from_secs(lease);
        config.enrichment.acoustid_api_key = raw.get("ACOUSTID_API_KEY").map(str::to_string);
        config.enrichment.acoustid_base_url = raw.url("ACOUSTID_BASE_URL")?;
        let trust: f64 = raw.parse("ACOUSTID_TRUST_SCORE")?;
        if !(0.0..=1.0).contains(&trust) {
            bail!("ACOUSTID_TRUST_SCORE: must be between 0 and 1");
        }
        config.enrichment.acoustid_trust_score = trust;
        let rate: f64 = raw.parse("ACOUSTID_REQUESTS_PER_SECOND")?;
        if !(rate > 0.0 && rate <= 3.0) {
            bail!("ACOUSTID_REQUESTS_PER_SECOND: must be above 0 and at most 3 (AcoustID's limit)");
        }
        config.enrichment.acoustid_requests_per_second = rate;
        config.enrichment.coverart_enabled = raw.flag("COVERART_ENABLED")?;
        config.enrichment.coverart_base_url = raw.url("COVERART_BASE_URL")?;
        config.enrichment.lrclib_base_url = raw.url("LRCLIB_BASE_URL")?;
        config.scrobbling.lastfm_api_key = raw.get("LASTFM_API_KEY").map(str::to_string);
        config.scrobbling.lastfm_api_secret = raw.get("LASTFM_API_SECRET").map(str::to_string);
        config.scrobbling.lastfm_base_url = raw.url("LASTFM_BASE_URL")?;
        config.scrobbling.listenbrainz_base_url = raw.url("LISTENBRAINZ_BASE_URL")?;
        config.remote = remote_settings(&raw)?;
        if raw.get("RECOMMENDER_URL").is_some() {
            config.recommend.external_url = Some(raw.url("RECOMMENDER_URL")?);
        }
        let timeout: u64 = raw.parse("RECOMMENDER_TIMEOUT_MS")?;
        if !(10..=10_000).contains(&timeout) {
            bail!("RECOMMENDER_TIMEOUT_MS: must be between 10 and 10000");
        }
        config.recommend.external_timeout = Duration::from_millis(timeout);
        config.recommend.sound_analysis = raw.flag("SOUND_ANALYSIS")?;

        let bind_address = raw.bind_address()?;
        let metrics_bind_address = match raw.get("METRICS_BIND_ADDRESS") {
            Some(text) => Some(text.parse().map_err(|error| {
                anyhow!("METRICS_BIND_ADDRESS: invalid value {text:?}: {error} (expected HOST:PORT, e.g. 127.0.0.1:9090)")
            })?),
            None => None,
        };
        let header_timeout: u64 = raw.parse("HTTP_HEADER_TIMEOUT_SECONDS")?;
        if !(1..=3600).contains(&header_timeout) {
            bail!("HTTP_HEADER_TIMEOUT_SECONDS: must be between 1 and 3600");
        }
        let header_timeout = std::time::Duration::from_secs(header_timeout);
        let idle_timeout: u64 = raw.parse("HTTP_IDLE_TIMEOUT_SECONDS")?;
        if !(1..=3600).contains(&idle_timeout) {
            bail!("HTTP_IDLE_TIMEOUT_SECONDS: must be between 1 and 3600");
        }
        let idle_timeout = std::time::Duration::from_secs(idle_timeout);
        let max_connections_per_address: usize = raw.parse("MAX_CONNECTIONS_PER_ADDRESS")?;
        if !(1..=65536).contains(&max_connections_per_address) {
            bail!("MAX_CONNECTIONS_PER_ADDRESS: must be between 1 and 65536");
        }
        let worker_concurrency: usize = raw.parse("WORKER_CONCURRENCY")?;
        if worker_concurrency == 0 || worker_concurrency > 64 {
            bail!("WORKER_CONCURRENCY: must be between 1 and 64");
        }
        config.transcoding.ffmpeg = raw.text("FFMPEG_PATH").into();
        config.transcoding.rendition_cache_max_bytes = raw.parse("RENDITION_CACHE_MAX_BYTES")?;
        config.transcoding.thumbnail_cache_max_bytes = raw.parse("THUMBNAIL_CACHE_MAX_BYTES")?;
        config.transcoding.max_live_encodes = raw.parse("MAX_LIVE_ENCODES")?;
        if !(1..=1024).contains(&config.transcoding.max_live_encodes) {
            bail!("MAX_LIVE_ENCODES: must be between 1 and 1024");
        }
        config.transcoding.max_live_encodes_per_user = raw.parse("MAX_LIVE_ENCODES_PER_USER")?;
        if !(1..=1024).contains(&config.transcoding.max_live_encodes_per_user) {
            bail!("MAX_LIVE_ENCODES_PER_USER: must be between 1 and 1024");
        }
        config.transcoding.loudness_analysis = raw.flag("LOUDNESS_ANALYSIS")?;
        config.allow_private_urls = raw.flag("ALLOW_PRIVATE_URLS")?;
        let refresh: u64 = raw.parse("PODCAST_REFRESH_INTERVAL_SECONDS")?;
        if refresh < 60 {
            bail!("PODCAST_REFRESH_INTERVAL_SECONDS: must be at least 60");
        }
        config.podcasts.refresh_interval = Duration::from_secs(refresh);
        config.podcasts.episode_max_bytes = raw.parse("PODCAST_EPISODE_MAX_BYTES")?;
        if config.podcasts.episode_max_bytes == 0 {
            bail!("PODCAST_EPISODE_MAX_BYTES: must be positive");
        }
        let enrich_concurrency: usize = raw.parse("ENRICH_CONCURRENCY")?;
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
            log_format: raw.log_format()?,
        })
    }
}

/// The limits of failed sign-ins.
fn sign_in_throttle(raw: &RawSettings) -> Result<SignInThrottleConfig> {
    let burst = |name: &str| -> Result<u32> {
        let value = raw.parse(name)?;
        if !(1..=10_000).contains(&value) {
            bail!("{name}: must be between 1 and 10000");
        }
        Ok(value)
    };
    let interval = |name: &str| -> Result<Duration> {
        let seconds: u64 = raw.parse(name)?;
        if !(1..=3600).contains(&seconds) {
            bail!("{name}: must be between 1 and 3600 seconds");
        }
        Ok(Duration::from_secs(seconds))
    };
    Ok(SignInThrottleConfig {
        account_burst: burst("LOGIN_ACCOUNT_FAILURE_BURST")?,
        account_interval: interval("LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS")?,
        address_burst: burst("LOGIN_ADDRESS_FAILURE_BURST")?,
        address_interval: interval("LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS")?,
    })
}

/// The remote sources and their download retries.
fn remote_settings(raw: &RawSettings) -> Result<RemoteConfig> {
    let mut remote = RemoteConfig::default();
    if raw.flag("REMOTE_ENABLED")? {
        let mut ytdlp = YtDlpConfig::new(raw.text("YTDLP_PATH"));
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
            raw.url("REMOTE_WATCH_URL")?;
            ytdlp.watch_url = url.to_string();
        }
        ytdlp.search = match raw.text("REMOTE_SEARCH") {
            "music" => YtSearch::Music,
            "videos" => YtSearch::Videos,
            other => bail!("REMOTE_SEARCH: invalid value {other:?}: expected music or videos"),
        };
        ytdlp.min_interval = Duration::from_millis(raw.parse("REMOTE_MIN_INTERVAL_MS")?);
        remote.ytdlp = Some(ytdlp);
    } else if raw.get("REMOTE_COOKIES_FILE").is_some() || raw.get("YTDLP_PATH").is_some() {
        tracing::warn!("REMOTE_COOKIES_FILE and YTDLP_PATH apply only when REMOTE_ENABLED is true");
    }
    if let Some(url) = raw.get("SUBSONIC_SOURCE_URL") {
        raw.url("SUBSONIC_SOURCE_URL")?;
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
    let timeout: u64 = raw.parse("REMOTE_SEARCH_TIMEOUT_SECONDS")?;
    if !(1..=120).contains(&timeout) {
        bail!("REMOTE_SEARCH_TIMEOUT_SECONDS: must be between 1 and 120");
    }
    remote.search_timeout = Duration::from_secs(timeout);
    let attempts: u32 = raw.parse("DOWNLOAD_MAX_ATTEMPTS")?;
    if attempts == 0 {
        bail!("DOWNLOAD_MAX_ATTEMPTS: must be at least 1");
    }
    let base: u64 = raw.parse("DOWNLOAD_RETRY_BASE_SECONDS")?;
    let max: u64 = raw.parse("DOWNLOAD_RETRY_MAX_SECONDS")?;
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
    fn the_settings_template_names_every_setting_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("state");
        let template = declared::toml_template(&[("DATA_DIR", data_dir.to_str().unwrap())]);
        for setting in declared::SETTINGS {
            let key = setting.name.to_ascii_lowercase();
            assert!(
                template.contains(&format!("\n# {key} = "))
                    || template.contains(&format!("\n{key} = ")),
                "{key} is not in the template"
            );
        }
        let file = dir.path().join("musiclib.toml");
        std::fs::write(&file, &template).unwrap();
        let raw = RawSettings::load(Some(&file)).unwrap();
        assert_eq!(raw.get("DATA_DIR"), Some(data_dir.to_str().unwrap()));
        // Uncommented, the plain defaults are values the binary takes.
        let plain: String = template
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest)
                    if rest.contains(" = ") && !rest.contains('$') && !rest.ends_with("= \"\"") =>
                {
                    rest.to_string()
                }
                _ => line.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&file, &plain).unwrap();
        let raw = RawSettings::load(Some(&file)).unwrap();
        Settings::try_from(raw).unwrap();
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
        let documented =
            |name: &str| -> u64 { declared::find(name).unwrap().default.parse().unwrap() };
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

    /// `musiclib config` shows every declared setting, the program's and the library's, with
    /// the documented defaults where nothing is set, and never a secret.
    #[test]
    fn musiclib_config_shows_every_setting_with_its_defaults() {
        let settings = build(&[
            ("REMOTE_ENABLED", "true"),
            ("ADMIN_USERNAME", "admin"),
            ("ADMIN_PASSWORD", "admin-password-1"),
        ])
        .unwrap();
        let shown = settings.shown();
        assert_eq!(
            shown.iter().map(|setting| setting.name).collect::<Vec<_>>(),
            SETTINGS
                .iter()
                .map(|setting| setting.name)
                .collect::<Vec<_>>()
        );
        for setting in &shown {
            let declared = declared::find(setting.name).unwrap();
            // Places, generated secrets, settings unset by default, the ones given above, and
            // the S3 settings (the default storage is local) have no default to compare.
            let literal = !(declared.default.is_empty()
                || declared.default.contains("$DATA_DIR")
                || declared.default.starts_with("generated")
                || setting.name.starts_with("S3_")
                || ["DATA_DIR", "REMOTE_ENABLED", "RUST_LOG"].contains(&setting.name));
            if literal {
                assert_eq!(
                    setting.value.as_deref(),
                    Some(declared.default),
                    "{}",
                    setting.name
                );
            }
        }
        assert_eq!(
            settings.enrich_concurrency,
            musiclib_core::jobs::DEFAULT_ENRICH_CONCURRENCY
        );
        assert!(!format!("{settings:?}").contains("admin-password-1"));
    }
}
