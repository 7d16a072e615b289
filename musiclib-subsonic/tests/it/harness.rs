//! A library with a few tagged tracks from the test corpus, two users with app passwords,
//! and helpers to call the router in either encoding.

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, Request, StatusCode};
use http_body_util::BodyExt;
use md5::{Digest, Md5};
use musiclib_core::auth::Caller;
use musiclib_core::testing::{Backend, TestLibrary};
use serde_json::Value;
use tower::ServiceExt;

/// The albums uploaded (directories of the corpus library).
const ALBUMS: &[&str] = &[
    "Los Señores del Ritmo/Canción de Mañana (2021)",
    "Aurora Lane/Northern Lights (2019)",
];

pub struct Fixture {
    pub router: axum::Router,
    pub library: TestLibrary,
    pub user: String,
    pub password: String,
    pub caller: Caller,
    admin: String,
    admin_password: String,
    pub track_ids: Vec<String>,
}

impl Fixture {
    pub async fn new(backend: Backend) -> Fixture {
        Fixture::with_config(backend, |_| {}).await
    }

    /// The fixture on a library whose configuration `change` adjusts.
    pub async fn with_config(
        backend: Backend,
        change: impl FnOnce(&mut musiclib_core::Config) + Send + 'static,
    ) -> Fixture {
        let corpus = musiclib_core::testing::corpus();
        let library = TestLibrary::builder(backend).config(change).build().await;
        let ann = library
            .accounts()
            .create_user("ann", "ann-password", false)
            .await
            .unwrap();
        let root = library
            .accounts()
            .create_user("root", "root-password", true)
            .await
            .unwrap();
        let caller = Caller { user: ann };
        let admin = Caller { user: root };
        let password = library.accounts().legacy_password(&caller).await.unwrap();
        let admin_password = library.accounts().legacy_password(&admin).await.unwrap();
        let mut track_ids = Vec::new();
        for album in ALBUMS {
            let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join("library").join(album))
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .filter(|path| musiclib_core::probe::has_audio_extension(path))
                .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
                .collect();
            files.sort();
            for path in files.into_iter().take(3) {
                let file = tokio::fs::File::open(&path).await.unwrap();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                let outcome = library
                    .ingest()
                    .upload_track(&caller, Some(&name), file)
                    .await
                    .unwrap_or_else(|error| panic!("upload {}: {error}", path.display()));
                track_ids.push(outcome.track.id.to_string());
            }
        }
        assert!(track_ids.len() >= 4, "the corpus albums have tracks");
        Fixture {
            router: musiclib_subsonic::router(library.library.clone()),
            library,
            user: "ann".into(),
            password,
            caller,
            admin: "root".into(),
            admin_password,
            track_ids,
        }
    }

    /// Token authentication parameters of `user` with `password`.
    pub fn token_auth(user: &str, password: &str) -> String {
        let salt = "c19b2d";
        let token = hex::encode(Md5::digest(format!("{password}{salt}").as_bytes()));
        format!("u={user}&t={token}&s={salt}&v=1.16.1&c=tests")
    }

    /// The caller's token authentication.
    pub fn auth(&self) -> String {
        Self::token_auth(&self.user, &self.password)
    }

    /// The admin's token authentication.
    pub fn admin_auth(&self) -> String {
        Self::token_auth(&self.admin, &self.admin_password)
    }

    /// A GET of `/rest/{method}?{query}`: status, content type, body.
    pub async fn get(&self, method: &str, query: &str) -> (StatusCode, String, Vec<u8>) {
        self.send(
            Request::get(format!("/rest/{method}?{query}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// Sends a request: status, content type, body.
    pub async fn send(&self, request: Request<Body>) -> (StatusCode, String, Vec<u8>) {
        let (status, headers, body) = self.send_parts(request).await;
        (status, header_text(&headers, header::CONTENT_TYPE), body)
    }

    /// Sends a request: status, headers, body.
    pub async fn send_parts(&self, request: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        (status, headers, body)
    }

    /// `method` as the caller with `params`, in JSON: the `subsonic-response` object, which
    /// must have status ok.
    pub async fn json(&self, method: &str, params: &str) -> Value {
        let response = self.json_as(&self.auth(), method, params).await;
        assert_eq!(response["status"], "ok", "{method}?{params}: {response}");
        response
    }

    /// `method` with the given auth, in JSON, whatever the status.
    pub async fn json_as(&self, auth: &str, method: &str, params: &str) -> Value {
        let (status, content_type, body) =
            self.get(method, &format!("{auth}&f=json&{params}")).await;
        assert_eq!(status, StatusCode::OK, "{method}");
        assert_eq!(content_type, "application/json", "{method}");
        let value: Value = serde_json::from_slice(&body).unwrap();
        let response = value["subsonic-response"].clone();
        assert_eq!(response["version"], "1.16.1");
        assert_eq!(response["type"], "musiclib");
        assert_eq!(response["openSubsonic"], true);
        assert!(response["serverVersion"].is_string());
        response
    }

    /// `method` as the caller with `params`, in XML, validated against the schema; must
    /// have status ok.
    pub async fn xml(&self, method: &str, params: &str) -> String {
        self.xml_as(&self.auth(), method, params).await
    }

    /// `method` with the given auth, in XML, validated against the schema; must have status
    /// ok.
    pub async fn xml_as(&self, auth: &str, method: &str, params: &str) -> String {
        let (status, content_type, body) = self.get(method, &format!("{auth}&{params}")).await;
        assert_eq!(status, StatusCode::OK, "{method}");
        assert!(
            content_type.starts_with("text/xml"),
            "{method}: {content_type}"
        );
        let xml = String::from_utf8(body).unwrap();
        assert!(xml.contains(r#"status="ok""#), "{method}?{params}: {xml}");
        validate(&xml);
        xml
    }
}

/// A header's value as text (empty when absent).
pub fn header_text(headers: &HeaderMap, name: HeaderName) -> String {
    headers
        .get(name)
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_default()
}

/// The official schema (`shared/conformance`).
fn schema() -> PathBuf {
    let shared = std::env::var_os("MUSICLIB_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    shared.join("conformance/subsonic-rest-api-1.16.1.xsd")
}

/// Checks one attribute's value.
type ValueRule = fn(&str) -> bool;

/// Attributes OpenSubsonic adds to 1.16.1 elements, which the official schema does not
/// declare, and how each must look (OpenSubsonic's own types). This list is the test's, from
/// the OpenSubsonic specification, not the server's: an attribute the server adds that is
/// not here fails schema validation, and one that is here is checked by its rule instead.
/// `userRating` is the schema's on songs and directories but OpenSubsonic's on `AlbumID3`,
/// whose element name (`album`) the schema also uses for directories: it is checked here
/// (1–5) wherever it appears. `type` on songs is the schema's and is never set aside.
const OPENSUBSONIC_ATTRIBUTES: &[(&str, ValueRule)] = &[
    ("serverVersion", |value| !value.is_empty()),
    ("openSubsonic", |value| value == "true"),
    ("mediaType", |value| {
        matches!(value, "song" | "album" | "artist")
    }),
    ("played", |value| {
        time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339).is_ok()
    }),
    ("samplingRate", |value| {
        value.parse::<u32>().is_ok_and(|rate| rate > 0)
    }),
    ("channelCount", |value| {
        value.parse::<u32>().is_ok_and(|count| count > 0)
    }),
    ("musicBrainzId", |value| {
        uuid::Uuid::parse_str(value).is_ok()
    }),
    ("sortName", |value| !value.is_empty()),
    ("userRating", |value| {
        value
            .parse::<u8>()
            .is_ok_and(|rating| (1..=5).contains(&rating))
    }),
    ("isCompilation", |value| matches!(value, "true" | "false")),
    ("readonly", |value| matches!(value, "true" | "false")),
    // `NowPlayingEntry` with `playbackReport`.
    ("state", |value| {
        matches!(value, "starting" | "playing" | "paused" | "stopped")
    }),
    ("positionMs", |value| value.parse::<u64>().is_ok()),
    ("playbackRate", |value| {
        value.parse::<f64>().is_ok_and(|rate| rate > 0.0)
    }),
];

/// Checks an OpenSubsonic `replayGain` element of a song (its attributes the spec's numbers,
/// nothing inside it), which the 1.16.1 schema does not know.
fn check_replay_gain(start: &quick_xml::events::BytesStart) {
    const FIELDS: &[&str] = &[
        "trackGain",
        "albumGain",
        "trackPeak",
        "albumPeak",
        "baseGain",
        "fallbackGain",
    ];
    let mut count = 0;
    for attribute in start.attributes() {
        let attribute = attribute.unwrap();
        let key = attribute.key.as_ref().to_string();
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .unwrap()
            .into_owned();
        assert!(
            FIELDS.contains(&key.as_str()),
            "replayGain@{key} is not OpenSubsonic's"
        );
        assert!(
            value.parse::<f64>().is_ok_and(f64::is_finite),
            "replayGain@{key}={value:?} is not a number"
        );
        count += 1;
    }
    assert!(count > 0, "an empty replayGain");
}

/// Removes the OpenSubsonic attributes the 1.16.1 schema does not know, after checking each
/// against its OpenSubsonic rule; `type` is set aside on the root element only (on songs the
/// schema declares it). The one type OpenSubsonic widened, `playQueue current` (a string id
/// where 1.16.1 has an int), is set aside too, and so are songs' `replayGain` elements
/// (OpenSubsonic's object), after [`check_replay_gain`].
fn strip_extras(xml: &str) -> String {
    use quick_xml::events::{BytesStart, Event};
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut writer = quick_xml::Writer::new(Vec::new());
    loop {
        let event = reader.read_event().unwrap();
        let rebuild = |start: &BytesStart| {
            let name = start.name().as_ref().to_string();
            let mut out = BytesStart::new(name.clone());
            for attribute in start.attributes() {
                let attribute = attribute.unwrap();
                let key = attribute.key.as_ref().to_string();
                let value = attribute
                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap()
                    .into_owned();
                if name == "subsonic-response" && key == "type" {
                    assert!(!value.is_empty(), "empty server type");
                    continue;
                }
                if name == "playQueue" && key == "current" {
                    continue;
                }
                if let Some((_, valid)) = OPENSUBSONIC_ATTRIBUTES
                    .iter()
                    .find(|(extra, _)| *extra == key)
                {
                    assert!(
                        valid(&value),
                        "OpenSubsonic attribute {name}@{key}={value:?} is malformed"
                    );
                    continue;
                }
                out.push_attribute(attribute);
            }
            out
        };
        match event {
            Event::Eof => break,
            Event::Empty(start) if start.name().as_ref() == "replayGain" => {
                check_replay_gain(&start)
            }
            Event::Start(start) => writer.write_event(Event::Start(rebuild(&start))).unwrap(),
            Event::Empty(start) => writer.write_event(Event::Empty(rebuild(&start))).unwrap(),
            other => writer.write_event(other).unwrap(),
        }
    }
    String::from_utf8(writer.into_inner()).unwrap()
}

/// Validates a response against the official schema with xmllint (libxml2).
pub fn validate(xml: &str) {
    let stripped = strip_extras(xml);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &stripped).unwrap();
    let output = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(schema())
        .arg(file.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "schema validation failed:\n{}\n{stripped}",
        String::from_utf8_lossy(&output.stderr)
    );
}
