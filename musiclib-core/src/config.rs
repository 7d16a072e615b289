//! Typed, validated configuration of a [`crate::Library`]. Nothing here reads the environment or
//! files: the binary (or an embedding program) builds a [`Config`] and hands it over.

pub mod declared;

use std::path::PathBuf;
use std::time::Duration;

/// Everything a [`crate::Library`] needs to open.
#[derive(Clone)]
pub struct Config {
    /// sqlx connection URL: `sqlite://…` (embedded default) or `postgres://…` (scale-out).
    pub database_url: String,
    /// Where audio, covers and renditions are kept.
    pub storage: StorageConfig,
    /// Directory for local state: staging files for uploads and imports.
    pub data_dir: PathBuf,
    /// The folder the local-folder import reads, when set.
    pub local_media_import_path: Option<PathBuf>,
    /// Whether anyone may register an account.
    pub allow_registration: bool,
    /// Signing key of access tokens (HS256).
    pub jwt_secret: Vec<u8>,
    /// How long an access token stays valid.
    pub token_ttl: Duration,
    /// Largest accepted upload, in bytes.
    pub max_upload_bytes: u64,
    /// How old a blob no row references must be before `cleanup_storage` deletes it: younger
    /// ones may belong to a write whose row is not committed yet (an upload, an import batch,
    /// an HLS build).
    pub cleanup_grace: Duration,
    /// Key material the legacy-interface app passwords are encrypted with (via HKDF).
    pub legacy_secret_key: Vec<u8>,
    /// How failed sign-ins are throttled (settings `LOGIN_*_FAILURE_*`).
    pub sign_in_throttle: SignInThrottleConfig,
    /// Reverse proxies whose `X-Forwarded-For` names the client (setting `TRUSTED_PROXIES`);
    /// none by default.
    pub trusted_proxies: TrustedProxies,
    /// Browser origins allowed to call the server from their pages (setting
    /// `CORS_ALLOWED_ORIGINS`); none by default.
    pub cors_allowed_origins: CorsOrigins,
    /// The address users reach the server at (`https://music.example.com`, setting
    /// `PUBLIC_URL`), for the links of shares; `None`: the address of each request.
    pub public_url: Option<String>,
    /// Job queue behaviour.
    pub jobs: JobsConfig,
    /// Metadata enrichment settings.
    pub enrichment: EnrichmentConfig,
    /// Renditions (ffmpeg) settings.
    pub transcoding: TranscodeConfig,
    /// Scrobbling services.
    pub scrobbling: ScrobblingConfig,
    /// Remote sources.
    pub remote: RemoteConfig,
    /// Recommendations.
    pub recommend: RecommendConfig,
    /// Whether URLs users give (podcast feeds, radio stations) may point at private,
    /// loopback or link-local addresses (setting `ALLOW_PRIVATE_URLS`): off by default, so
    /// the server cannot be made to reach into the network it runs in.
    pub allow_private_urls: bool,
    /// Podcasts.
    pub podcasts: PodcastConfig,
}

/// Podcasts (settings `PODCAST_*`).
#[derive(Debug, Clone)]
pub struct PodcastConfig {
    /// How often every feed is read again (`PODCAST_REFRESH_INTERVAL_SECONDS`).
    pub refresh_interval: Duration,
    /// Largest episode downloaded (`PODCAST_EPISODE_MAX_BYTES`).
    pub episode_max_bytes: u64,
}

impl Default for PodcastConfig {
    fn default() -> Self {
        PodcastConfig {
            refresh_interval: Duration::from_secs(3600),
            episode_max_bytes: 1024 * 1024 * 1024,
        }
    }
}

/// How failed sign-ins are throttled (settings `LOGIN_ACCOUNT_FAILURE_BURST`,
/// `LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS`, `LOGIN_ADDRESS_FAILURE_BURST`,
/// `LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS`).
///
/// Only failures count, per account name and per client address: each may fail `burst`
/// times, then once more per `interval`. A spent budget refuses sign-ins without checking the
/// password until it has a failure to give again (at most one `interval` after the last
/// failure; the whole burst is back after `burst` intervals without one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInThrottleConfig {
    /// Failures one account name may have in a row.
    pub account_burst: u32,
    /// Then one more failure per this time.
    pub account_interval: Duration,
    /// Failures one client address (an IPv6 /64) may have in a row, over all names.
    pub address_burst: u32,
    /// Then one more failure per this time.
    pub address_interval: Duration,
}

impl Default for SignInThrottleConfig {
    /// 10 failures per account, then one per 6 s (600 an hour); 30 per address, then one per
    /// 2 s.
    fn default() -> Self {
        SignInThrottleConfig {
            account_burst: 10,
            account_interval: Duration::from_secs(6),
            address_burst: 30,
            address_interval: Duration::from_secs(2),
        }
    }
}

/// The reverse proxies in front of the server (setting `TRUSTED_PROXIES`): a request whose
/// connection comes from one of these networks is from the client its `X-Forwarded-For`
/// names. Without it, every client behind a proxy has the proxy's address (one sign-in budget
/// for all), and with it trusted wrongly any client could name any address: only a proxy
/// listed here is believed, and only about the hop before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<ipnet::IpNet>);

impl TrustedProxies {
    /// Reads the setting: addresses or networks (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`),
    /// separated by commas; empty for none.
    pub fn parse(text: &str) -> std::result::Result<TrustedProxies, String> {
        let mut networks = Vec::new();
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let network = match item.parse::<ipnet::IpNet>() {
                Ok(network) => network,
                Err(_) => match item.parse::<std::net::IpAddr>() {
                    Ok(address) => ipnet::IpNet::from(address),
                    Err(_) => {
                        return Err(format!(
                            "{item:?} is not an address or a network (such as 10.0.0.0/8)"
                        ))
                    }
                },
            };
            networks.push(network.trunc());
        }
        Ok(TrustedProxies(networks))
    }

    /// Whether `address` is a trusted proxy.
    pub fn contains(&self, address: std::net::IpAddr) -> bool {
        let address = address.to_canonical();
        self.0.iter().any(|network| network.contains(&address))
    }

    /// The client of a request whose connection comes from `peer`, given the values of its
    /// `X-Forwarded-For` headers in order: from a trusted proxy, the nearest address in the
    /// header that is not itself a trusted proxy (read from the right, where each proxy
    /// appends the address it was connected from); otherwise, or when the header has nothing
    /// usable, `peer`.
    pub fn client<'a>(
        &self,
        peer: std::net::IpAddr,
        forwarded_for: impl IntoIterator<Item = &'a str>,
    ) -> std::net::IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let hops: Vec<&str> = forwarded_for
            .into_iter()
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(address) = parse_hop(hop) else {
                // Garbage: the proxy nearest to it is the last address worth believing.
                break;
            };
            client = address;
            if !self.contains(address) {
                break;
            }
        }
        client
    }

    /// As the setting is written (`None` when empty).
    pub fn as_setting(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            self.0
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
    }
}

/// One address of `X-Forwarded-For`: a bare address, or one with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:80`), as some proxies write them.
fn parse_hop(hop: &str) -> Option<std::net::IpAddr> {
    if let Ok(address) = hop.parse::<std::net::IpAddr>() {
        return Some(address.to_canonical());
    }
    hop.parse::<std::net::SocketAddr>()
        .ok()
        .map(|address| address.ip().to_canonical())
}

/// The origins whose pages may call the server (CORS; setting `CORS_ALLOWED_ORIGINS`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// None: no CORS header is sent, so browsers keep other origins' pages out (the default).
    #[default]
    None,
    /// Any origin (`*`).
    Any,
    /// These origins, each as browsers send it: `scheme://host[:port]`, lowercase, without a
    /// default port.
    List(Vec<String>),
}

impl CorsOrigins {
    /// Reads the setting: empty for none, `*` for any, or origins separated by commas
    /// (`https://player.example.com, http://localhost:5173`). An origin is a scheme (http or
    /// https), a host and an optional port, with no path, query or credentials.
    pub fn parse(text: &str) -> std::result::Result<CorsOrigins, String> {
        let items: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .collect();
        if items.is_empty() {
            return Ok(CorsOrigins::None);
        }
        if items.contains(&"*") {
            if items.len() > 1 {
                return Err("* allows any origin: give it alone".into());
            }
            return Ok(CorsOrigins::Any);
        }
        let mut origins = Vec::new();
        for item in items {
            let origin = parse_origin(item)?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(CorsOrigins::List(origins))
    }

    /// Whether any origin is allowed.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, CorsOrigins::None)
    }

    /// As the setting is written (`None` when off).
    pub fn as_setting(&self) -> Option<String> {
        match self {
            CorsOrigins::None => None,
            CorsOrigins::Any => Some("*".into()),
            CorsOrigins::List(origins) => Some(origins.join(",")),
        }
    }
}

/// One origin, normalized as browsers serialize it in the `Origin` header.
fn parse_origin(text: &str) -> std::result::Result<String, String> {
    let invalid =
        |why: &str| format!("{text:?} is not an origin ({why}; expected scheme://host[:port])");
    let url = reqwest::Url::parse(text).map_err(|error| invalid(&error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("credentials are not part of an origin"));
    }
    // `Url` reads `https://a.example` with the path `/`; any other path is not an origin.
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            "a path, query or fragment is not part of an origin",
        ));
    }
    Ok(url.origin().ascii_serialization())
}

/// 32 random bytes, for generated secrets.
pub fn random_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 32];
    rand::fill(&mut secret[..]);
    secret
}

/// How long the radio waits for the external recommender once its own signals are read.
pub const EXTERNAL_GRACE: Duration = Duration::from_millis(20);

/// Recommendations (settings `RECOMMENDER_*`, `SOUND_ANALYSIS`).
#[derive(Clone)]
pub struct RecommendConfig {
    /// An external recommender whose suggestions are mixed in (`RECOMMENDER_URL`).
    pub external_url: Option<String>,
    /// An external recommender given as code (wins over `external_url`).
    pub external: Option<crate::extension::ExternalPlugin>,
    /// How long one call to it may take (`RECOMMENDER_TIMEOUT_MS`); after a failure or a
    /// timeout it is left out for [`RecommendConfig::external_pause`]. A radio request waits
    /// for it only until its own signals are read plus [`EXTERNAL_GRACE`].
    pub external_timeout: Duration,
    /// How long a failing external recommender is left out.
    pub external_pause: Duration,
    /// How long a radio request waits for the external recommender once its own signals are
    /// read ([`EXTERNAL_GRACE`]; tests on a loaded machine give it more).
    pub external_grace: Duration,
    /// Whether tracks' audio is analysed for `sounds_like` (`SOUND_ANALYSIS`).
    pub sound_analysis: bool,
    /// How often workers look for work for the recommendation jobs (tracks to analyse,
    /// artist similarity to recompute when the library or its listening changed), and for
    /// tracks whose loudness (ReplayGain) waits to be measured (`loudness_sweep`).
    pub sweep_interval: Duration,
}

impl std::fmt::Debug for RecommendConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecommendConfig")
            .field(
                "external_url",
                &self.external_url.as_deref().map(redact_url),
            )
            .field("external", &self.external.is_some())
            .field("external_timeout", &self.external_timeout)
            .field("external_pause", &self.external_pause)
            .field("external_grace", &self.external_grace)
            .field("sound_analysis", &self.sound_analysis)
            .field("sweep_interval", &self.sweep_interval)
            .finish()
    }
}

impl Default for RecommendConfig {
    fn default() -> Self {
        RecommendConfig {
            external_url: None,
            external: None,
            external_timeout: Duration::from_millis(150),
            external_pause: Duration::from_secs(30),
            external_grace: EXTERNAL_GRACE,
            sound_analysis: true,
            sweep_interval: Duration::from_secs(60),
        }
    }
}

/// Remote sources (settings `REMOTE_*`, `YTDLP_PATH`, `SUBSONIC_SOURCE_*`, `DOWNLOAD_*`).
#[derive(Clone)]
pub struct RemoteConfig {
    /// The yt-dlp source (`remote`), when `REMOTE_ENABLED`.
    pub ytdlp: Option<YtDlpConfig>,
    /// A Subsonic server as the `subsonic` source, when `SUBSONIC_SOURCE_URL` is set.
    pub subsonic: Option<SubsonicSourceConfig>,
    /// The `subsonic` source's OpenSubsonic API key (`SUBSONIC_SOURCE_API_KEY`): when set, it
    /// is sent as `apiKey` in place of the user and token (username and password may then be
    /// empty).
    pub subsonic_api_key: Option<String>,
    /// How long one source may take to answer a search (`REMOTE_SEARCH_TIMEOUT_SECONDS`).
    pub search_timeout: Duration,
    /// Retries of downloads and materializations (`DOWNLOAD_MAX_ATTEMPTS`,
    /// `DOWNLOAD_RETRY_BASE_SECONDS`, `DOWNLOAD_RETRY_MAX_SECONDS`).
    pub download_retry: RetryPolicy,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("ytdlp", &self.ytdlp)
            .field("subsonic", &self.subsonic)
            .field(
                "subsonic_api_key",
                &self.subsonic_api_key.as_ref().map(|_| REDACTED),
            )
            .field("search_timeout", &self.search_timeout)
            .field("download_retry", &self.download_retry)
            .finish()
    }
}

impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            ytdlp: None,
            subsonic: None,
            subsonic_api_key: None,
            search_timeout: Duration::from_secs(10),
            download_retry: RetryPolicy {
                max_attempts: 5,
                base: Duration::from_secs(30),
                max: Duration::from_secs(3600),
            },
        }
    }
}

/// How a kind of job retries: attempts, then a delay of `base` doubling per attempt, at most
/// `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts before the job stays failed.
    pub max_attempts: u32,
    /// Delay before the second attempt.
    pub base: Duration,
    /// Longest delay.
    pub max: Duration,
}

/// The yt-dlp source (YouTube and YouTube Music).
#[derive(Clone, Debug)]
pub struct YtDlpConfig {
    /// The program (`YTDLP_PATH`): a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// A Netscape cookies file handed to yt-dlp (a copy per run: yt-dlp rewrites it).
    pub cookies_file: Option<PathBuf>,
    /// Where a `source_id` is fetched from: `{id}` is replaced by the id
    /// (`REMOTE_WATCH_URL`, default `https://www.youtube.com/watch?v={id}`).
    pub watch_url: String,
    /// What a search asks (`REMOTE_SEARCH`): YouTube Music songs or YouTube videos.
    pub search: YtSearch,
    /// Least time between two calls of yt-dlp that reach the service (`REMOTE_MIN_INTERVAL_MS`).
    pub min_interval: Duration,
}

impl YtDlpConfig {
    /// yt-dlp from `PATH`, YouTube video search, the real YouTube.
    pub fn new(program: impl Into<PathBuf>) -> YtDlpConfig {
        YtDlpConfig {
            program: program.into(),
            cookies_file: None,
            watch_url: "https://www.youtube.com/watch?v={id}".into(),
            search: YtSearch::Videos,
            min_interval: Duration::from_millis(1000),
        }
    }
}

/// What the yt-dlp source searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YtSearch {
    /// YouTube Music's song search (`https://music.youtube.com/search?q=…#songs`): studio
    /// tracks, but a hit carries only its title until the track is added (yt-dlp's flat
    /// listing of YouTube Music gives nothing more).
    Music,
    /// YouTube's video search (`ytsearchN:`): each hit with its channel and duration, the
    /// artist read from an "Artist - Title" title. The default.
    Videos,
}

impl YtSearch {
    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            YtSearch::Music => "music",
            YtSearch::Videos => "videos",
        }
    }
}

/// A Subsonic or OpenSubsonic server searched and downloaded from.
#[derive(Clone)]
pub struct SubsonicSourceConfig {
    /// Its root URL (the server adds `/rest/...`).
    pub url: String,
    /// The user.
    pub username: String,
    /// Their (app) password. Only a salted token derived from it is ever sent.
    pub password: String,
}

impl std::fmt::Debug for SubsonicSourceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubsonicSourceConfig")
            .field("url", &redact_url(&self.url))
            .field("username", &self.username)
            .field("password", &REDACTED)
            .finish()
    }
}

/// Scrobbling services (settings `LASTFM_*`, `LISTENBRAINZ_BASE_URL`).
#[derive(Clone)]
pub struct ScrobblingConfig {
    /// Last.fm API key of this server's application; Last.fm is off without it.
    pub lastfm_api_key: Option<String>,
    /// Last.fm shared secret (signs every call).
    pub lastfm_api_secret: Option<String>,
    /// Last.fm API root (`…/2.0`).
    pub lastfm_base_url: String,
    /// ListenBrainz API root.
    pub listenbrainz_base_url: String,
}

impl ScrobblingConfig {
    /// Whether Last.fm can be used (key and secret set).
    pub fn lastfm_available(&self) -> bool {
        self.lastfm_api_key.is_some() && self.lastfm_api_secret.is_some()
    }
}

impl std::fmt::Debug for ScrobblingConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrobblingConfig")
            .field(
                "lastfm_api_key",
                &self.lastfm_api_key.as_ref().map(|_| REDACTED),
            )
            .field(
                "lastfm_api_secret",
                &self.lastfm_api_secret.as_ref().map(|_| REDACTED),
            )
            .field("lastfm_base_url", &self.lastfm_base_url)
            .field("listenbrainz_base_url", &self.listenbrainz_base_url)
            .finish()
    }
}

/// The effective settings ([`Config::effective`]: secrets redacted), and whether an
/// external recommender was handed over.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for setting in self.effective() {
            map.entry(&setting.name, &setting.value);
        }
        map.entry(&"external_recommender", &self.recommend.external.is_some())
            .finish()
    }
}

/// What a secret setting shows wherever settings are shown (logs, `musiclib config`,
/// `GET /admin/settings`).
pub const REDACTED: &str = "<redacted>";

/// One effective server setting, under the name operators set it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveSetting {
    /// The setting's name (the environment variable).
    pub name: &'static str,
    /// Its value as text (`None`: unset); a secret shows [`REDACTED`] when set.
    pub value: Option<String>,
    /// Whether it is a secret.
    pub secret: bool,
}

impl Config {
    /// Every setting of the library ([`declared::SETTINGS`] that a `Config` holds), by its
    /// operator-facing name, in the reference's order: secrets redacted, URLs without their
    /// credentials, unset ones as `None`.
    pub fn effective(&self) -> Vec<EffectiveSetting> {
        declared::SETTINGS
            .iter()
            .filter_map(|setting| setting.read.map(|read| setting.shown(read(self))))
            .collect()
    }
}

/// A URL as it may be shown (settings, logs, errors): the password of its user part, or a
/// user part standing alone (a token), and the values of query parameters that name a
/// secret (`password`, `token`, `apiKey`, `key`, `secret`, `sig`, Subsonic's `t`, `s` and
/// `p`, …) are replaced by [`REDACTED`]. Everything else is kept as written.
pub fn redact_url(url: &str) -> String {
    let (before_fragment, fragment) = match url.find('#') {
        Some(at) => url.split_at(at),
        None => (url, ""),
    };
    let (base, query) = match before_fragment.find('?') {
        Some(at) => (&before_fragment[..at], Some(&before_fragment[at + 1..])),
        None => (before_fragment, None),
    };
    let mut out = String::with_capacity(url.len());
    match base.find("://") {
        Some(scheme_end) => {
            let rest = &base[scheme_end + 3..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            out.push_str(&base[..scheme_end + 3]);
            match authority.rfind('@') {
                Some(at) => {
                    let credentials = &authority[..at];
                    match credentials.find(':') {
                        Some(colon) => {
                            out.push_str(&credentials[..colon]);
                            out.push(':');
                            out.push_str(REDACTED);
                        }
                        None => out.push_str(REDACTED),
                    }
                    out.push_str(&authority[at..]);
                }
                None => out.push_str(authority),
            }
            out.push_str(path);
        }
        None => out.push_str(base),
    }
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if is_secret_parameter(key) => format!("{key}={REDACTED}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out.push_str(fragment);
    out
}

/// Whether a query parameter named `key` carries a secret.
fn is_secret_parameter(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    matches!(key.as_str(), "t" | "s" | "p" | "sk")
        || [
            "pass",
            "pwd",
            "token",
            "key",
            "secret",
            "sig",
            "auth",
            "credential",
        ]
        .iter()
        .any(|word| key.contains(word))
}

/// The blob storage backend (setting `STORAGE_BACKEND`).
#[derive(Clone)]
pub enum StorageConfig {
    /// Files under a directory of the local disk.
    Local {
        /// Root directory of the blobs.
        root: PathBuf,
    },
    /// An S3-compatible object store.
    S3(S3Config),
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageConfig::Local { root } => f.debug_struct("Local").field("root", root).finish(),
            StorageConfig::S3(s3) => f
                .debug_struct("S3")
                .field("bucket", &s3.bucket)
                .field("endpoint", &s3.endpoint)
                .field("region", &s3.region)
                .field("allow_http", &s3.allow_http)
                .field("prefix", &s3.prefix)
                .finish_non_exhaustive(),
        }
    }
}

/// Connection settings of an S3-compatible bucket.
#[derive(Clone)]
pub struct S3Config {
    /// Bucket name.
    pub bucket: String,
    /// Endpoint URL for S3-compatible servers; `None` means AWS.
    pub endpoint: Option<String>,
    /// Region name.
    pub region: String,
    /// Access key id.
    pub access_key_id: Option<String>,
    /// Secret access key.
    pub secret_access_key: Option<String>,
    /// Allow plain-HTTP endpoints (local S3-compatible servers).
    pub allow_http: bool,
    /// Key prefix inside the bucket, to share one bucket between libraries.
    pub prefix: Option<String>,
}

/// Job queue behaviour.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// How long a claimed job stays leased to its worker without a heartbeat.
    pub lease: Duration,
    /// Attempts before a job stays failed.
    pub max_attempts: u32,
    /// First retry delay; doubles on each further attempt.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// How often an idle worker looks for new jobs (other processes' enqueues).
    pub poll_interval: Duration,
}

/// Metadata enrichment settings.
#[derive(Clone)]
pub struct EnrichmentConfig {
    /// AcoustID application key; the lookup is skipped when unset.
    pub acoustid_api_key: Option<String>,
    /// AcoustID base URL.
    pub acoustid_base_url: String,
    /// Lookup score at or above which the lookup wins over tags.
    pub acoustid_trust_score: f64,
    /// AcoustID requests per second from this process (AcoustID allows 3 per client: divide
    /// it among processes when several workers share one key).
    pub acoustid_requests_per_second: f64,
    /// First delay before retrying a failed lookup (doubles each retry; 4 attempts in all).
    pub acoustid_retry_base: Duration,
    /// Whether cover art is fetched from the Cover Art Archive.
    pub coverart_enabled: bool,
    /// Cover Art Archive base URL.
    pub coverart_base_url: String,
    /// LRCLIB base URL.
    pub lrclib_base_url: String,
}

impl std::fmt::Debug for EnrichmentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnrichmentConfig")
            .field(
                "acoustid_api_key",
                &self.acoustid_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("acoustid_base_url", &self.acoustid_base_url)
            .field("acoustid_trust_score", &self.acoustid_trust_score)
            .field(
                "acoustid_requests_per_second",
                &self.acoustid_requests_per_second,
            )
            .field("acoustid_retry_base", &self.acoustid_retry_base)
            .field("coverart_enabled", &self.coverart_enabled)
            .field("coverart_base_url", &self.coverart_base_url)
            .field("lrclib_base_url", &self.lrclib_base_url)
            .finish()
    }
}

/// Renditions (ffmpeg) settings.
#[derive(Debug, Clone)]
pub struct TranscodeConfig {
    /// The ffmpeg program (a path, or a name looked up on `PATH`).
    pub ffmpeg: PathBuf,
    /// Bound on the total size of cached renditions; least recently used ones go first.
    pub rendition_cache_max_bytes: u64,
    /// Bound on the total size of cached cover thumbnails (`THUMBNAIL_CACHE_MAX_BYTES`);
    /// least recently served ones go first.
    pub thumbnail_cache_max_bytes: u64,
    /// Most live encodes (transcoded streams and HLS encodes) running at once in a process
    /// (`MAX_LIVE_ENCODES`); past it, a request that needs one answers 503 with `Retry-After`.
    pub max_live_encodes: usize,
    /// Most live encodes one user may have running at once (`MAX_LIVE_ENCODES_PER_USER`).
    pub max_live_encodes_per_user: usize,
    /// Whether tracks without ReplayGain tags have their loudness measured in the background
    /// (`LOUDNESS_ANALYSIS`; the `analyze_loudness` job).
    pub loudness_analysis: bool,
}

impl Config {
    /// A configuration with the embedded defaults under `data_dir`: SQLite file, local blobs,
    /// open registration. Secrets are random, which suits tests and embedding programs that
    /// keep no state between runs; the binary persists its secrets under `DATA_DIR`.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Config {
        let data_dir = data_dir.into();
        Config {
            database_url: format!("sqlite://{}", data_dir.join("musiclib.db").display()),
            storage: StorageConfig::Local {
                root: data_dir.join("media"),
            },
            local_media_import_path: None,
            allow_registration: true,
            jwt_secret: random_secret(),
            token_ttl: Duration::from_secs(7 * 24 * 3600),
            max_upload_bytes: 1024 * 1024 * 1024,
            cleanup_grace: Duration::from_secs(3600),
            legacy_secret_key: random_secret(),
            sign_in_throttle: SignInThrottleConfig::default(),
            trusted_proxies: TrustedProxies::default(),
            cors_allowed_origins: CorsOrigins::None,
            public_url: None,
            jobs: JobsConfig {
                lease: Duration::from_secs(60),
                max_attempts: 5,
                retry_base: Duration::from_secs(5),
                retry_max: Duration::from_secs(600),
                poll_interval: Duration::from_millis(1000),
            },
            enrichment: EnrichmentConfig {
                acoustid_api_key: None,
                acoustid_base_url: "https://api.acoustid.org".into(),
                acoustid_trust_score: 0.85,
                acoustid_requests_per_second: 3.0,
                acoustid_retry_base: Duration::from_millis(500),
                coverart_enabled: true,
                coverart_base_url: "https://coverartarchive.org".into(),
                lrclib_base_url: "https://lrclib.net".into(),
            },
            transcoding: TranscodeConfig {
                ffmpeg: PathBuf::from("ffmpeg"),
                rendition_cache_max_bytes: 10 * 1024 * 1024 * 1024,
                thumbnail_cache_max_bytes: 256 * 1024 * 1024,
                max_live_encodes: 8,
                max_live_encodes_per_user: 3,
                loudness_analysis: true,
            },
            scrobbling: ScrobblingConfig {
                lastfm_api_key: None,
                lastfm_api_secret: None,
                lastfm_base_url: "https://ws.audioscrobbler.com/2.0".into(),
                listenbrainz_base_url: "https://api.listenbrainz.org".into(),
            },
            remote: RemoteConfig::default(),
            recommend: RecommendConfig::default(),
            allow_private_urls: false,
            podcasts: PodcastConfig::default(),
            data_dir,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_secrets() {
        let mut config = Config::embedded("/tmp/musiclib-config-test");
        config.enrichment.acoustid_api_key = Some("acoustid-key-123".into());
        config.database_url = "postgres://alice:s3cret@db/music".into();
        config.storage = StorageConfig::S3(S3Config {
            bucket: "music".into(),
            endpoint: None,
            region: "us-east-1".into(),
            access_key_id: Some("AKIA-ID".into()),
            secret_access_key: Some("s3-secret-key".into()),
            allow_http: false,
            prefix: None,
        });
        let printed = format!("{config:?}");
        for secret in ["acoustid-key-123", "s3cret", "s3-secret-key", "AKIA-ID"] {
            assert!(!printed.contains(secret), "{secret} printed: {printed}");
        }
        assert!(printed.contains("\"ACOUSTID_API_KEY\": Some(\"<redacted>\")"));
    }

    #[test]
    fn cors_origins_are_read_and_normalized() {
        assert_eq!(CorsOrigins::parse("").unwrap(), CorsOrigins::None);
        assert_eq!(CorsOrigins::parse(" , ").unwrap(), CorsOrigins::None);
        assert_eq!(CorsOrigins::parse(" * ").unwrap(), CorsOrigins::Any);
        assert_eq!(
            CorsOrigins::parse(
                "https://Player.Example.com, http://localhost:5173/,https://a.example:443"
            )
            .unwrap(),
            CorsOrigins::List(vec![
                "https://player.example.com".into(),
                "http://localhost:5173".into(),
                "https://a.example".into(),
            ])
        );
        for bad in [
            "*, https://a.example",
            "player.example.com",
            "ftp://a.example",
            "https://a.example/app",
            "https://a.example?x=1",
            "https://user:pw@a.example",
            "null",
        ] {
            assert!(CorsOrigins::parse(bad).is_err(), "{bad} was accepted");
        }
        assert!(!CorsOrigins::None.is_enabled());
        assert_eq!(
            CorsOrigins::parse("http://a.example,http://b.example")
                .unwrap()
                .as_setting()
                .as_deref(),
            Some("http://a.example,http://b.example")
        );
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies = TrustedProxies::parse("127.0.0.1, 10.0.0.0/8,fd00::/8").unwrap();
        let ip = |text: &str| text.parse::<std::net::IpAddr>().unwrap();
        // From a trusted proxy: the nearest untrusted hop.
        assert_eq!(
            proxies.client(ip("127.0.0.1"), ["203.0.113.9"]),
            ip("203.0.113.9")
        );
        assert_eq!(
            proxies.client(ip("127.0.0.1"), ["198.51.100.1, 203.0.113.9, 10.1.2.3"]),
            ip("203.0.113.9")
        );
        // Several headers are one list.
        assert_eq!(
            proxies.client(ip("10.0.0.1"), ["198.51.100.1", "203.0.113.9:4711"]),
            ip("203.0.113.9")
        );
        assert_eq!(
            proxies.client(ip("::ffff:127.0.0.1"), ["[2001:db8::1]:80"]),
            ip("2001:db8::1")
        );
        // A client cannot name itself anything: from an untrusted peer, the header is ignored.
        assert_eq!(
            proxies.client(ip("203.0.113.50"), ["127.0.0.1"]),
            ip("203.0.113.50")
        );
        // Garbage stops the walk at the last address worth believing; none at all is the peer.
        assert_eq!(
            proxies.client(ip("127.0.0.1"), ["203.0.113.9, nonsense, 10.0.0.7"]),
            ip("10.0.0.7")
        );
        assert_eq!(proxies.client(ip("127.0.0.1"), []), ip("127.0.0.1"));
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.example").is_err());
        assert_eq!(
            TrustedProxies::parse("10.1.2.3/8")
                .unwrap()
                .as_setting()
                .as_deref(),
            Some("10.0.0.0/8")
        );
        assert_eq!(
            TrustedProxies::parse(" ").unwrap(),
            TrustedProxies::default()
        );
    }

    #[test]
    fn redact_url_hides_every_secret_of_a_url() {
        for (url, shown) in [
            (
                "postgres://alice:s3cret@db:5432/music?sslmode=require&password=hunter2",
                "postgres://alice:<redacted>@db:5432/music?sslmode=require&password=<redacted>",
            ),
            ("https://t0ken@host.example/rest", "https://<redacted>@host.example/rest"),
            (
                "https://music.example/rest?u=bob&t=abc&s=def&apiKey=k&c=musiclib",
                "https://music.example/rest?u=bob&t=<redacted>&s=<redacted>&apiKey=<redacted>&c=musiclib",
            ),
            (
                "https://rec.example/suggest?access_token=x#frag",
                "https://rec.example/suggest?access_token=<redacted>#frag",
            ),
            (
                "https://www.youtube.com/watch?v={id}",
                "https://www.youtube.com/watch?v={id}",
            ),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        let config = Config {
            remote: RemoteConfig {
                subsonic: Some(SubsonicSourceConfig {
                    url: "https://friend:pw@music.example?apiKey=k3y".into(),
                    username: "friend".into(),
                    password: "pw".into(),
                }),
                ..RemoteConfig::default()
            },
            recommend: RecommendConfig {
                external_url: Some("https://rec.example/?token=s3cr3t".into()),
                ..RecommendConfig::default()
            },
            ..Config::embedded("/tmp/x")
        };
        let shown = format!("{:?} {:?}", config, config.effective());
        for secret in ["pw@", "k3y", "s3cr3t"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn redact_url_hides_password_only() {
        assert_eq!(
            redact_url("postgres://alice:s3cret@db:5432/music"),
            "postgres://alice:<redacted>@db:5432/music"
        );
        assert_eq!(
            redact_url("sqlite://data/musiclib.db"),
            "sqlite://data/musiclib.db"
        );
    }
}
