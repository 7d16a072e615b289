//! Every server setting, declared once: its name (the environment variable, or the key of
//! the TOML file in lower case), its default as documented, whether it is a secret or a URL
//! (how it is shown), how a [`Config`] shows it, and what it means. From this list come the
//! names the binary reads, the defaults it parses, `musiclib config`, `GET /admin/settings`
//! ([`Config::effective`]), `Config`'s `Debug` and the configuration reference
//! (`docs/configuration.md`, [`reference`]); tests fail when one of them disagrees.
//!
//! A setting without a reader belongs to the program, not to the library (the listener, the
//! workers a process runs, the first admin, logs): the binary shows those itself.

use super::{redact_url, Config, EffectiveSetting, S3Config, StorageConfig, YtDlpConfig, REDACTED};

/// How a setting's value is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// As it is.
    Plain,
    /// A URL: its credentials and secret query parameters redacted ([`redact_url`]).
    Url,
    /// A secret: [`REDACTED`] when set, never the value.
    Secret,
}

/// One declared setting.
#[derive(Clone, Copy)]
pub struct Setting {
    /// The operator-facing name (an environment variable).
    pub name: &'static str,
    /// The default as documented (empty: unset).
    pub default: &'static str,
    /// How its value is shown.
    pub shape: Shape,
    /// Its value in a [`Config`] (`None`: unset); `None` for a setting of the program.
    pub read: Option<fn(&Config) -> Option<String>>,
    /// What it does.
    pub doc: &'static str,
}

impl std::fmt::Debug for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setting")
            .field("name", &self.name)
            .field("default", &self.default)
            .field("shape", &self.shape)
            .field("library", &self.read.is_some())
            .finish()
    }
}

impl Setting {
    /// The setting with `value` (`None`: unset), as it may be shown.
    pub fn shown(&self, value: Option<String>) -> EffectiveSetting {
        EffectiveSetting {
            name: self.name,
            value: match self.shape {
                Shape::Plain => value,
                Shape::Url => value.map(|url| redact_url(&url)),
                Shape::Secret => value.map(|_| REDACTED.to_string()),
            },
            secret: self.shape == Shape::Secret,
        }
    }

    /// Whether the library's [`Config`] holds it (otherwise the program does).
    pub fn is_library(&self) -> bool {
        self.read.is_some()
    }
}

/// The declared setting named `name`.
pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|setting| setting.name == name)
}

/// The configuration reference (`docs/configuration.md`), made from [`SETTINGS`].
pub fn reference() -> String {
    let mut text = String::from(REFERENCE_HEAD);
    text.push_str("| Setting | Default | Meaning |\n|---|---|---|\n");
    for setting in SETTINGS {
        let default = match setting.default {
            "" => "unset".to_string(),
            default => format!("`{default}`"),
        };
        let secret = match setting.shape {
            Shape::Secret => " (secret: never shown)",
            _ => "",
        };
        text.push_str(&format!(
            "| `{}` | {default} | {}{secret} |\n",
            setting.name,
            setting.doc.replace('|', "\\|")
        ));
    }
    text.push_str(REFERENCE_TAIL);
    text
}

/// A TOML settings file listing every setting, commented out, with what it does and its
/// default (`musiclib config --template`; the Debian package's `/etc/musiclib/musiclib.toml`).
/// `set` gives settings their values, uncommented (the package's `data_dir`).
pub fn toml_template(set: &[(&str, &str)]) -> String {
    let mut text = String::from(
        "# musiclib settings: every setting of the binary, with what it does and its default.\n\
         # Uncomment a line to change it. Names are the environment variables' in lower case;\n\
         # an environment variable of the same name wins over this file. A bad value stops\n\
         # musiclib with a message naming the setting.\n",
    );
    for setting in SETTINGS {
        text.push('\n');
        // The meaning, wrapped for a terminal.
        let mut line = String::from("#");
        for word in setting.doc.split_whitespace() {
            if line.len() + 1 + word.len() > 90 && line.len() > 1 {
                text.push_str(&line);
                text.push('\n');
                line = String::from("#");
            }
            line.push(' ');
            line.push_str(word);
        }
        text.push_str(&line);
        text.push('\n');
        if setting.shape == Shape::Secret {
            text.push_str("# (a secret: keep this file readable by musiclib only)\n");
        }
        let key = setting.name.to_ascii_lowercase();
        match set.iter().find(|(name, _)| *name == setting.name) {
            Some((_, value)) => text.push_str(&format!("{key} = {}\n", toml_string(value))),
            None if setting.default.is_empty() => text.push_str(&format!("# {key} = \"\"\n")),
            None => text.push_str(&format!("# {key} = {}\n", toml_string(setting.default))),
        }
    }
    text
}

/// `value` as a TOML basic string.
fn toml_string(value: &str) -> String {
    let mut quoted = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// What the reference says before its table.
const REFERENCE_HEAD: &str = "# Configuration\n\n\
<!-- Made from musiclib-core/src/config/declared.rs by its tests: edit the declaration, then \
run `MUSICLIB_BLESS=1 cargo test -p musiclib-core --lib reference`. -->\n\n\
Every setting of the `musiclib` binary, with its default and meaning. Settings come from \
built-in defaults, then an optional TOML file (every command takes `--config FILE`, or the \
`MUSICLIB_CONFIG` variable; the same names as below, in any case: `data_dir = \"/srv/music\"`), \
then environment variables, which win. A bad value stops the binary with a message naming \
the setting. `musiclib config` prints every effective setting, and admins read the \
library's at `GET /api/v1/admin/settings`: secrets are shown as `<redacted>`, URLs without \
their credentials.\n\n";

/// What the reference says after its table.
const REFERENCE_TAIL: &str = "\nWhere these settings matter in practice:\n\n\
- running several replicas and workers, a reverse proxy (`TRUSTED_PROXIES`), memory and \
metrics: [running.md](running.md);\n\
- the sign-in budgets, connection and body bounds, live encodes and covers: \
[security.md](security.md);\n\
- the app passwords (`LEGACY_SECRET_KEY`): [subsonic.md](subsonic.md);\n\
- `REMOTE_*`, `YTDLP_PATH`, `SUBSONIC_SOURCE_*` and `DOWNLOAD_*`: \
[remote-sources.md](remote-sources.md);\n\
- `RECOMMENDER_*` and `SOUND_ANALYSIS`: [recommendations.md](recommendations.md);\n\
- enrichment (`ACOUSTID_*`, `COVERART_*`), renditions (`FFMPEG_PATH`, \
`RENDITION_CACHE_MAX_BYTES`), scrobbling (`LASTFM_*`) and cleanup \
(`CLEANUP_GRACE_SECONDS`): [api.md](api.md).\n";

fn s3(config: &Config) -> Option<&S3Config> {
    match &config.storage {
        StorageConfig::S3(s3) => Some(s3),
        StorageConfig::Local { .. } => None,
    }
}

fn ytdlp(config: &Config) -> Option<&YtDlpConfig> {
    config.remote.ytdlp.as_ref()
}

/// Every setting, in the order the reference lists them.
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: "DATA_DIR",
        default: "./data",
        shape: Shape::Plain,
        read: Some(|c| Some(c.data_dir.display().to_string())),
        doc: "Local state: the SQLite file, local media, generated secrets",
    },
    Setting {
        name: "DATABASE_URL",
        default: "sqlite://$DATA_DIR/musiclib.db",
        shape: Shape::Url,
        read: Some(|c| Some(c.database_url.clone())),
        doc: "`sqlite://…` (embedded) or `postgres://…` (scale-out)",
    },
    Setting {
        name: "BIND_ADDRESS",
        default: "127.0.0.1:8000",
        shape: Shape::Plain,
        read: None,
        doc: "Address the API listens on",
    },
    Setting {
        name: "METRICS_BIND_ADDRESS",
        default: "",
        shape: Shape::Plain,
        read: None,
        doc: "A second address serving `GET /metrics` without authentication, for a scraper on a private network (`serve` and `worker` alike); unset: `/metrics` only on `BIND_ADDRESS`, for admins",
    },
    Setting {
        name: "HTTP_HEADER_TIMEOUT_SECONDS",
        default: "30",
        shape: Shape::Plain,
        read: None,
        doc: "Time a client has to send a request's head (1–3600); a slower one is disconnected. It also bounds a new connection's wait for its first request (a socket that sends nothing, or part of the HTTP/2 preface, is closed) and an HTTP/1 connection's wait for its next one",
    },
    Setting {
        name: "HTTP_IDLE_TIMEOUT_SECONDS",
        default: "60",
        shape: Shape::Plain,
        read: None,
        doc: "An HTTP/2 connection with no request open for this long is closed (1–3600); its peer is pinged every 30 s and dropped when it does not answer within 20 s",
    },
    Setting {
        name: "MAX_CONNECTIONS_PER_ADDRESS",
        default: "256",
        shape: Shape::Plain,
        read: None,
        doc: "Connections one client address (an IPv6 /64) may hold open at once (1–65536); more are closed at once. Trusted proxies are not limited",
    },
    Setting {
        name: "TRUSTED_PROXIES",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| c.trusted_proxies.as_setting()),
        doc: "Reverse proxies in front of the server, as addresses or networks (`127.0.0.1,10.0.0.0/8`): a request from one of them is from the client its `X-Forwarded-For` names (for the sign-in throttle). Empty: the connection's address is the client's, and everyone behind a proxy shares its budget",
    },
    Setting {
        name: "PUBLIC_URL",
        default: "",
        shape: Shape::Url,
        read: Some(|c| c.public_url.clone()),
        doc: "The address users reach the server at (`https://music.example.com`, no trailing path), used in the links of shares (`/s/{id}`). Empty: each link is made from the address the request came to (its `Host`)",
    },
    Setting {
        name: "ALLOW_PRIVATE_URLS",
        default: "false",
        shape: Shape::Plain,
        read: Some(|c| Some(c.allow_private_urls.to_string())),
        doc: "Let URLs users give (podcast feeds and episodes, radio stations) point at private, loopback and link-local addresses, as a podcast server at home would. Off: the server fetches only public addresses (checked after the name is resolved, and again at each redirect)",
    },
    Setting {
        name: "PODCAST_REFRESH_INTERVAL_SECONDS",
        default: "3600",
        shape: Shape::Plain,
        read: Some(|c| Some(c.podcasts.refresh_interval.as_secs().to_string())),
        doc: "How often every podcast feed is read again (60 or more); users can refresh one at any time",
    },
    Setting {
        name: "PODCAST_EPISODE_MAX_BYTES",
        default: "1073741824",
        shape: Shape::Plain,
        read: Some(|c| Some(c.podcasts.episode_max_bytes.to_string())),
        doc: "Largest podcast episode downloaded, in bytes; a larger one fails without a retry",
    },
    Setting {
        name: "STORAGE_BACKEND",
        default: "local",
        shape: Shape::Plain,
        read: Some(|c| Some(match c.storage { StorageConfig::Local { .. } => "local".into(), StorageConfig::S3(_) => "s3".into() })),
        doc: "`local` or `s3`",
    },
    Setting {
        name: "LOCAL_STORAGE_PATH",
        default: "$DATA_DIR/media",
        shape: Shape::Plain,
        read: Some(|c| match &c.storage { StorageConfig::Local { root } => Some(root.display().to_string()), StorageConfig::S3(_) => None }),
        doc: "Root of the local blob store",
    },
    Setting {
        name: "S3_BUCKET",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| s3(c).map(|s3| s3.bucket.clone())),
        doc: "Bucket (required with `s3`)",
    },
    Setting {
        name: "S3_ENDPOINT",
        default: "",
        shape: Shape::Url,
        read: Some(|c| s3(c).and_then(|s3| s3.endpoint.clone())),
        doc: "Endpoint of an S3-compatible server (empty: AWS)",
    },
    Setting {
        name: "S3_REGION",
        default: "us-east-1",
        shape: Shape::Plain,
        read: Some(|c| s3(c).map(|s3| s3.region.clone())),
        doc: "Region",
    },
    Setting {
        name: "S3_ACCESS_KEY_ID",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| s3(c).and_then(|s3| s3.access_key_id.clone())),
        doc: "Access key id (empty: the AWS credential chain)",
    },
    Setting {
        name: "S3_SECRET_ACCESS_KEY",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| s3(c).and_then(|s3| s3.secret_access_key.clone())),
        doc: "Secret access key",
    },
    Setting {
        name: "S3_ALLOW_HTTP",
        default: "false",
        shape: Shape::Plain,
        read: Some(|c| s3(c).map(|s3| s3.allow_http.to_string())),
        doc: "Allow a plain-HTTP endpoint",
    },
    Setting {
        name: "S3_PREFIX",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| s3(c).and_then(|s3| s3.prefix.clone())),
        doc: "Key prefix inside the bucket",
    },
    Setting {
        name: "LOCAL_MEDIA_IMPORT_PATH",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| c.local_media_import_path.as_ref().map(|path| path.display().to_string())),
        doc: "Folder imported by `POST /sources/local_folder/scan` and `musiclib scan`",
    },
    Setting {
        name: "ALLOW_REGISTRATION",
        default: "true",
        shape: Shape::Plain,
        read: Some(|c| Some(c.allow_registration.to_string())),
        doc: "Whether `POST /auth/register` is open (403 when not)",
    },
    Setting {
        name: "ADMIN_USERNAME",
        default: "",
        shape: Shape::Plain,
        read: None,
        doc: "With ADMIN_PASSWORD: superuser created at start-up when there is no user",
    },
    Setting {
        name: "ADMIN_PASSWORD",
        default: "",
        shape: Shape::Secret,
        read: None,
        doc: "Password of ADMIN_USERNAME",
    },
    Setting {
        name: "JWT_SECRET",
        default: "generated in $DATA_DIR/jwt_secret",
        shape: Shape::Secret,
        read: Some(|c| (!c.jwt_secret.is_empty()).then(String::new)),
        doc: "Signing key of access tokens; **set the same value on every replica**",
    },
    Setting {
        name: "TOKEN_TTL_HOURS",
        default: "168",
        shape: Shape::Plain,
        read: Some(|c| Some((c.token_ttl.as_secs() / 3600).to_string())),
        doc: "Lifetime of an access token",
    },
    Setting {
        name: "LEGACY_SECRET_KEY",
        default: "generated in $DATA_DIR/legacy_secret_key",
        shape: Shape::Secret,
        read: Some(|c| (!c.legacy_secret_key.is_empty()).then(String::new)),
        doc: "Key the Subsonic app passwords are encrypted with; never stored in the database",
    },
    Setting {
        name: "LOGIN_ACCOUNT_FAILURE_BURST",
        default: "10",
        shape: Shape::Plain,
        read: Some(|c| Some(c.sign_in_throttle.account_burst.to_string())),
        doc: "Failed sign-ins one account name may have in a row from one address (login and Subsonic counted apart); then sign-ins of that name from there are refused (429, `Retry-After`) without checking the password. Over all addresses, an account may have ten times as many",
    },
    Setting {
        name: "LOGIN_ACCOUNT_FAILURE_INTERVAL_SECONDS",
        default: "6",
        shape: Shape::Plain,
        read: Some(|c| Some(c.sign_in_throttle.account_interval.as_secs().to_string())),
        doc: "Past the burst, one more failed sign-in per account (and address) per this many seconds",
    },
    Setting {
        name: "LOGIN_ADDRESS_FAILURE_BURST",
        default: "30",
        shape: Shape::Plain,
        read: Some(|c| Some(c.sign_in_throttle.address_burst.to_string())),
        doc: "Failed sign-ins (and registrations) one client address (an IPv6 /64) may have in a row, over all names",
    },
    Setting {
        name: "LOGIN_ADDRESS_FAILURE_INTERVAL_SECONDS",
        default: "2",
        shape: Shape::Plain,
        read: Some(|c| Some(c.sign_in_throttle.address_interval.as_secs().to_string())),
        doc: "Past the burst, one more failed sign-in per address per this many seconds",
    },
    Setting {
        name: "CORS_ALLOWED_ORIGINS",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| c.cors_allowed_origins.as_setting()),
        doc: "Origins whose web pages may call the server (CORS): comma-separated `scheme://host[:port]`, or `*`; empty: none",
    },
    Setting {
        name: "MAX_UPLOAD_BYTES",
        default: "1073741824",
        shape: Shape::Plain,
        read: Some(|c| Some(c.max_upload_bytes.to_string())),
        doc: "Largest accepted upload (413 above)",
    },
    Setting {
        name: "CLEANUP_GRACE_SECONDS",
        default: "3600",
        shape: Shape::Plain,
        read: Some(|c| Some(c.cleanup_grace.as_secs().to_string())),
        doc: "How old a stored file no row references must be before storage cleanup deletes it (younger ones may belong to a write in progress)",
    },
    Setting {
        name: "WORKER_CONCURRENCY",
        default: "2",
        shape: Shape::Plain,
        read: None,
        doc: "Jobs run at once by `serve` and by each `worker`",
    },
    Setting {
        name: "ENRICH_CONCURRENCY",
        default: "40",
        shape: Shape::Plain,
        read: None,
        doc: "More workers per process that run only enrichment jobs: they mostly wait for AcoustID, and waiting lookups share one request (up to 20 fingerprints); decoding still uses at most one core per CPU",
    },
    Setting {
        name: "FFMPEG_PATH",
        default: "ffmpeg",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.ffmpeg.display().to_string())),
        doc: "The transcoder for Opus renditions (a path or a name on `PATH`); originals stream without it",
    },
    Setting {
        name: "RENDITION_CACHE_MAX_BYTES",
        default: "10737418240",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.rendition_cache_max_bytes.to_string())),
        doc: "Bound on cached renditions (10 GiB); least recently played evicted first",
    },
    Setting {
        name: "THUMBNAIL_CACHE_MAX_BYTES",
        default: "268435456",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.thumbnail_cache_max_bytes.to_string())),
        doc: "Bound on cached cover thumbnails (256 MiB); least recently served evicted first",
    },
    Setting {
        name: "MAX_LIVE_ENCODES",
        default: "8",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.max_live_encodes.to_string())),
        doc: "Live encodes (transcoded streams, HLS encodes for listeners) one process runs at once (1–1024); past it a request that needs one answers 503 with `Retry-After`",
    },
    Setting {
        name: "MAX_LIVE_ENCODES_PER_USER",
        default: "3",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.max_live_encodes_per_user.to_string())),
        doc: "Live encodes one user may have running at once (1–1024)",
    },
    Setting {
        name: "LOUDNESS_ANALYSIS",
        default: "true",
        shape: Shape::Plain,
        read: Some(|c| Some(c.transcoding.loudness_analysis.to_string())),
        doc: "Measure the loudness (EBU R128) of tracks whose tags have no ReplayGain, in the background, for their ReplayGain",
    },
    Setting {
        name: "JOB_MAX_ATTEMPTS",
        default: "5",
        shape: Shape::Plain,
        read: Some(|c| Some(c.jobs.max_attempts.to_string())),
        doc: "Attempts before a job stays failed (backoff 5 s, doubling, at most 10 min)",
    },
    Setting {
        name: "JOB_LEASE_SECONDS",
        default: "60",
        shape: Shape::Plain,
        read: Some(|c| Some(c.jobs.lease.as_secs().to_string())),
        doc: "Lease of a running job; a dead worker's job is retried after it",
    },
    Setting {
        name: "ACOUSTID_API_KEY",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| c.enrichment.acoustid_api_key.clone()),
        doc: "AcoustID key (lookup skipped when empty)",
    },
    Setting {
        name: "ACOUSTID_BASE_URL",
        default: "https://api.acoustid.org",
        shape: Shape::Url,
        read: Some(|c| Some(c.enrichment.acoustid_base_url.clone())),
        doc: "AcoustID endpoint",
    },
    Setting {
        name: "ACOUSTID_REQUESTS_PER_SECOND",
        default: "3",
        shape: Shape::Plain,
        read: Some(|c| Some(c.enrichment.acoustid_requests_per_second.to_string())),
        doc: "Lookup requests per second from one process (AcoustID allows 3 per key: with N worker processes, set 3/N)",
    },
    Setting {
        name: "ACOUSTID_TRUST_SCORE",
        default: "0.85",
        shape: Shape::Plain,
        read: Some(|c| Some(c.enrichment.acoustid_trust_score.to_string())),
        doc: "Lookup score from which the lookup wins over tags",
    },
    Setting {
        name: "COVERART_ENABLED",
        default: "true",
        shape: Shape::Plain,
        read: Some(|c| Some(c.enrichment.coverart_enabled.to_string())),
        doc: "Fetch covers from the Cover Art Archive",
    },
    Setting {
        name: "COVERART_BASE_URL",
        default: "https://coverartarchive.org",
        shape: Shape::Url,
        read: Some(|c| Some(c.enrichment.coverart_base_url.clone())),
        doc: "Cover Art Archive endpoint",
    },
    Setting {
        name: "LRCLIB_BASE_URL",
        default: "https://lrclib.net",
        shape: Shape::Url,
        read: Some(|c| Some(c.enrichment.lrclib_base_url.clone())),
        doc: "LRCLIB endpoint (lyrics)",
    },
    Setting {
        name: "LASTFM_API_KEY",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| c.scrobbling.lastfm_api_key.clone()),
        doc: "Last.fm API key of this server (scrobbling to Last.fm is off without it)",
    },
    Setting {
        name: "LASTFM_API_SECRET",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| c.scrobbling.lastfm_api_secret.clone()),
        doc: "Last.fm shared secret (signs every call)",
    },
    Setting {
        name: "LASTFM_BASE_URL",
        default: "https://ws.audioscrobbler.com/2.0",
        shape: Shape::Url,
        read: Some(|c| Some(c.scrobbling.lastfm_base_url.clone())),
        doc: "Last.fm API root",
    },
    Setting {
        name: "LISTENBRAINZ_BASE_URL",
        default: "https://api.listenbrainz.org",
        shape: Shape::Url,
        read: Some(|c| Some(c.scrobbling.listenbrainz_base_url.clone())),
        doc: "ListenBrainz API root",
    },
    Setting {
        name: "REMOTE_ENABLED",
        default: "false",
        shape: Shape::Plain,
        read: Some(|c| Some(c.remote.ytdlp.is_some().to_string())),
        doc: "Turns on the yt-dlp source `remote` (YouTube and YouTube Music); `.ci/serve.sh` then installs the pinned yt-dlp under `$DATA_DIR/yt-dlp` unless `YTDLP_PATH` is set",
    },
    Setting {
        name: "YTDLP_PATH",
        default: "yt-dlp",
        shape: Shape::Plain,
        read: Some(|c| ytdlp(c).map(|ytdlp| ytdlp.program.display().to_string())),
        doc: "The yt-dlp program (a path, or a name on `PATH`); a JavaScript runtime (deno) in the same directory is found",
    },
    Setting {
        name: "REMOTE_COOKIES_FILE",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| ytdlp(c).and_then(|ytdlp| ytdlp.cookies_file.as_ref()).map(|path| path.display().to_string())),
        doc: "A Netscape cookies file of a signed-in browser, for YouTube's sign-in and bot checks; each run gets a private copy (yt-dlp rewrites it)",
    },
    Setting {
        name: "REMOTE_WATCH_URL",
        default: "https://www.youtube.com/watch?v={id}",
        shape: Shape::Url,
        read: Some(|c| ytdlp(c).map(|ytdlp| ytdlp.watch_url.clone())),
        doc: "Where the yt-dlp source fetches an id from (`{id}` is replaced; any site yt-dlp knows works)",
    },
    Setting {
        name: "REMOTE_SEARCH",
        default: "videos",
        shape: Shape::Plain,
        read: Some(|c| ytdlp(c).map(|ytdlp| ytdlp.search.as_str().to_string())),
        doc: "`videos` (`ytsearch`: each hit with its channel and duration, the artist read from an \"Artist - Title\" title) or `music` (YouTube Music's songs: studio tracks, but yt-dlp lists them by title only; artist and album arrive when the track is added)",
    },
    Setting {
        name: "REMOTE_MIN_INTERVAL_MS",
        default: "1000",
        shape: Shape::Plain,
        read: Some(|c| ytdlp(c).map(|ytdlp| ytdlp.min_interval.as_millis().to_string())),
        doc: "Least time between two yt-dlp calls to the service; a rate limit pauses the source 30 s, doubling to 30 min",
    },
    Setting {
        name: "SUBSONIC_SOURCE_URL",
        default: "",
        shape: Shape::Url,
        read: Some(|c| c.remote.subsonic.as_ref().map(|source| source.url.clone())),
        doc: "A Subsonic / OpenSubsonic server used as the `subsonic` source (off when unset)",
    },
    Setting {
        name: "SUBSONIC_SOURCE_USERNAME",
        default: "",
        shape: Shape::Plain,
        read: Some(|c| c.remote.subsonic.as_ref().map(|source| source.username.clone()).filter(|name| !name.is_empty())),
        doc: "Its user",
    },
    Setting {
        name: "SUBSONIC_SOURCE_PASSWORD",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| c.remote.subsonic.as_ref().map(|source| source.password.clone()).filter(|password| !password.is_empty())),
        doc: "Its (app) password: only a salted token travels; redacted wherever settings are shown",
    },
    Setting {
        name: "SUBSONIC_SOURCE_API_KEY",
        default: "",
        shape: Shape::Secret,
        read: Some(|c| c.remote.subsonic.as_ref().and(c.remote.subsonic_api_key.clone())),
        doc: "An OpenSubsonic API key for the `subsonic` source, sent as `apiKey` instead of the user and token (then no username or password is needed; for a musiclib server it is the user's app password). The source is on when `SUBSONIC_SOURCE_URL` is set with either the key or a username and password",
    },
    Setting {
        name: "REMOTE_SEARCH_TIMEOUT_SECONDS",
        default: "10",
        shape: Shape::Plain,
        read: Some(|c| Some(c.remote.search_timeout.as_secs().to_string())),
        doc: "How long one remote source may take to answer a search (the others answer anyway)",
    },
    Setting {
        name: "DOWNLOAD_MAX_ATTEMPTS",
        default: "5",
        shape: Shape::Plain,
        read: Some(|c| Some(c.remote.download_retry.max_attempts.to_string())),
        doc: "Attempts of a download or materialization before it stays failed",
    },
    Setting {
        name: "DOWNLOAD_RETRY_BASE_SECONDS",
        default: "30",
        shape: Shape::Plain,
        read: Some(|c| Some(c.remote.download_retry.base.as_secs().to_string())),
        doc: "Delay before a failed download's second attempt, doubling after",
    },
    Setting {
        name: "DOWNLOAD_RETRY_MAX_SECONDS",
        default: "3600",
        shape: Shape::Plain,
        read: Some(|c| Some(c.remote.download_retry.max.as_secs().to_string())),
        doc: "Longest delay between download attempts",
    },
    Setting {
        name: "RECOMMENDER_URL",
        default: "",
        shape: Shape::Url,
        read: Some(|c| c.recommend.external_url.clone()),
        doc: "An external recommender mixed into the radio (`POST`; see [recommendations.md](recommendations.md)); unset: the heuristics alone",
    },
    Setting {
        name: "RECOMMENDER_TIMEOUT_MS",
        default: "150",
        shape: Shape::Plain,
        read: Some(|c| Some(c.recommend.external_timeout.as_millis().to_string())),
        doc: "How long a radio request waits for it; a timeout or failure leaves it out for 30 s",
    },
    Setting {
        name: "SOUND_ANALYSIS",
        default: "true",
        shape: Shape::Plain,
        read: Some(|c| Some(c.recommend.sound_analysis.to_string())),
        doc: "Analyse each track's sound in the background (bliss-audio), for `sounds_like` and the sonic endpoints",
    },
    Setting {
        name: "LOG_FORMAT",
        default: "text",
        shape: Shape::Plain,
        read: None,
        doc: "`text` or `json`",
    },
    Setting {
        name: "RUST_LOG",
        default: "info",
        shape: Shape::Plain,
        read: None,
        doc: "Log filter",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RemoteConfig, SubsonicSourceConfig};

    /// A configuration where every library setting applies: S3 storage, both remote sources.
    fn everything_on() -> Config {
        let mut config = Config::embedded("/srv/musiclib");
        config.public_url = Some("https://music.example.com".into());
        config.storage = StorageConfig::S3(S3Config {
            bucket: "music".into(),
            endpoint: Some("http://user:pw@s3.example:9000".into()),
            region: "us-east-1".into(),
            access_key_id: Some("key-id".into()),
            secret_access_key: Some("s3-secret-value".into()),
            allow_http: true,
            prefix: Some("library/".into()),
        });
        let mut ytdlp = YtDlpConfig::new("yt-dlp");
        ytdlp.cookies_file = Some("/srv/cookies.txt".into());
        config.remote = RemoteConfig {
            ytdlp: Some(ytdlp),
            subsonic: Some(SubsonicSourceConfig {
                url: "http://friend.example".into(),
                username: "friend".into(),
                password: "friend-password".into(),
            }),
            subsonic_api_key: Some("friend-api-key".into()),
            ..RemoteConfig::default()
        };
        config.enrichment.acoustid_api_key = Some("acoustid-secret".into());
        config.scrobbling.lastfm_api_key = Some("lastfm-key".into());
        config.scrobbling.lastfm_api_secret = Some("lastfm-secret".into());
        config.recommend.external_url = Some("http://recommender.example/?token=t0ken".into());
        config.trusted_proxies = crate::config::TrustedProxies::parse("10.0.0.0/8").unwrap();
        config.cors_allowed_origins =
            crate::config::CorsOrigins::parse("https://player.example").unwrap();
        config.local_media_import_path = Some("/srv/music".into());
        config
    }

    #[test]
    fn names_are_unique_and_spelled_as_variables() {
        let mut seen = std::collections::HashSet::new();
        for setting in SETTINGS {
            assert!(seen.insert(setting.name), "{} declared twice", setting.name);
            assert!(
                setting
                    .name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                setting.name
            );
            assert!(!setting.doc.is_empty(), "{} has no meaning", setting.name);
        }
    }

    #[test]
    fn every_library_setting_is_shown_and_secrets_never_are() {
        let config = everything_on();
        let shown = config.effective();
        let library: Vec<&str> = SETTINGS
            .iter()
            .filter(|setting| setting.is_library())
            .map(|setting| setting.name)
            .collect();
        assert_eq!(
            shown.iter().map(|setting| setting.name).collect::<Vec<_>>(),
            library
        );
        for setting in &shown {
            // The one setting of the other storage backend.
            if setting.name != "LOCAL_STORAGE_PATH" {
                assert!(setting.value.is_some(), "{} unset", setting.name);
            }
        }
        let text = format!("{shown:?} {config:?}");
        for secret in [
            "s3-secret-value",
            "friend-password",
            "friend-api-key",
            "acoustid-secret",
            "lastfm-key",
            "lastfm-secret",
            "t0ken",
            ":pw@",
            "key-id",
        ] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
        let allow_http = shown
            .iter()
            .find(|setting| setting.name == "S3_ALLOW_HTTP")
            .unwrap();
        assert_eq!(allow_http.value.as_deref(), Some("true"));
    }

    /// The library's own defaults (`Config::embedded`) are the documented ones.
    #[test]
    fn the_documented_defaults_are_the_librarys() {
        let config = Config::embedded("/srv/musiclib");
        for shown in config.effective() {
            let setting = find(shown.name).unwrap();
            // Places (`DATA_DIR` is the argument of `embedded`), generated secrets and
            // settings unset by default have no literal to compare.
            let literal = !(setting.default.is_empty()
                || setting.name == "DATA_DIR"
                || setting.default.contains("$DATA_DIR")
                || setting.shape == Shape::Secret);
            if !literal {
                continue;
            }
            // A setting of a feature that is off is unset (the remote sources' details).
            if let Some(value) = shown.value {
                assert_eq!(value, setting.default, "{}", setting.name);
            }
        }
    }

    /// `docs/configuration.md` is made from the declaration: `MUSICLIB_BLESS=1` rewrites it.
    #[test]
    fn reference_is_the_declaration() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
        let made = reference();
        if std::env::var_os("MUSICLIB_BLESS").is_some() {
            std::fs::write(&path, &made).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == made,
            "docs/configuration.md is not the declaration's reference: run \
             `MUSICLIB_BLESS=1 cargo test -p musiclib-core --lib reference`"
        );
    }
}
