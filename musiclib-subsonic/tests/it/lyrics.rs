//! `getLyrics` and `getLyricsBySongId` in both encodings: synced, unsynced (verse breaks
//! kept), instrumental (a cached LRCLIB answer, put in with SQL; LRCLIB itself is tested in
//! `musiclib-http/tests/it/lyrics.rs`), and a file with lyrics in two languages (two ID3v2
//! `USLT` frames), which answers one `structuredLyrics` entry per language. The XML envelope
//! is validated against the official 1.16.1 schema; `lyricsList` is OpenSubsonic's, which
//! that schema does not declare, so it is validated against OpenSubsonic's `songLyrics`
//! shape written as a schema here.

use axum::http::StatusCode;
use musiclib_core::testing::Backend;
use musiclib_core::TrackId;
use serde_json::{json, Value};

use crate::both_backends;
use crate::harness::{validate, Fixture};

/// OpenSubsonic's `lyricsList` (extension `songLyrics` v1) as a schema.
const LYRICS_LIST_XSD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema"
    targetNamespace="http://subsonic.org/restapi" elementFormDefault="qualified">
  <xs:element name="lyricsList">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="structuredLyrics" minOccurs="0" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="line" minOccurs="0" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:simpleContent>
                    <xs:extension base="xs:string">
                      <xs:attribute name="start" type="xs:nonNegativeInteger"/>
                    </xs:extension>
                  </xs:simpleContent>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
            <xs:attribute name="displayArtist" type="xs:string"/>
            <xs:attribute name="displayTitle" type="xs:string"/>
            <xs:attribute name="lang" type="xs:string" use="required"/>
            <xs:attribute name="offset" type="xs:long"/>
            <xs:attribute name="synced" type="xs:boolean" use="required"/>
          </xs:complexType>
        </xs:element>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
"#;

/// `getLyricsBySongId` in XML: the envelope validated by the official schema, the
/// `lyricsList` by OpenSubsonic's shape. Answers the XML.
async fn lyrics_xml(app: &Fixture, id: &str) -> String {
    let (status, content_type, body) = app
        .get("getLyricsBySongId", &format!("{}&id={id}", app.auth()))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/xml"), "{content_type}");
    let xml = String::from_utf8(body).unwrap();
    assert!(xml.contains(r#"status="ok""#), "{xml}");
    let start = xml.find("<lyricsList").expect("a lyricsList");
    let end = match xml[start..].find("</lyricsList>") {
        Some(close) => start + close + "</lyricsList>".len(),
        None => start + xml[start..].find("/>").expect("an empty lyricsList") + 2,
    };
    validate(&format!("{}{}", &xml[..start], &xml[end..]));
    let fragment = xml[start..end].replacen(
        "<lyricsList",
        r#"<lyricsList xmlns="http://subsonic.org/restapi""#,
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let (schema, document) = (dir.path().join("lyrics.xsd"), dir.path().join("lyrics.xml"));
    std::fs::write(&schema, LYRICS_LIST_XSD).unwrap();
    std::fs::write(&document, &fragment).unwrap();
    let output = std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&schema)
        .arg(&document)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "lyricsList validation failed:\n{}\n{fragment}",
        String::from_utf8_lossy(&output.stderr)
    );
    xml
}

/// `getLyricsBySongId` in JSON: the entries, each line with `start` exactly when synced.
async fn entries(app: &Fixture, id: &str) -> Vec<Value> {
    let answer = app.json("getLyricsBySongId", &format!("id={id}")).await;
    let entries = answer["lyricsList"]["structuredLyrics"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .clone();
    for entry in &entries {
        let synced = entry["synced"].as_bool().unwrap();
        for line in entry["line"].as_array().unwrap() {
            assert_eq!(line.get("start").is_some(), synced, "{entry}");
            assert!(line["value"].is_string(), "{entry}");
        }
    }
    entries
}

async fn get_lyrics(app: &Fixture, id: &str) -> (Value, String) {
    let song = app.json("getSong", &format!("id={id}")).await["song"].clone();
    let title = song["title"].as_str().unwrap();
    let query = format!(
        "title={}",
        form_urlencoded::byte_serialize(title.as_bytes()).collect::<String>()
    );
    app.xml("getLyrics", &query).await;
    let answer = app.json("getLyrics", &query).await;
    (
        song,
        answer["lyrics"]["value"].as_str().unwrap().to_string(),
    )
}

both_backends!(lyrics_by_song_and_by_title, |backend: Backend| async move {
    // LRCLIB stays unreachable (the test library's default): every answer here is cached
    // or embedded.
    let app = Fixture::new(backend).await;
    let (synced, unsynced, instrumental) = (
        app.track_ids[0].clone(),
        app.track_ids[1].clone(),
        app.track_ids[2].clone(),
    );
    musiclib_core::testing::store_lyrics(
        &app.library,
        &TrackId::parse(&synced).unwrap(),
        "[offset:-250]\n[00:01.50] Mañana dorada\n[00:03.00] \n[00:04.00] sol de oro\n",
    )
    .await;
    // What LRCLIB answers for an instrumental track, as the cache keeps it.
    musiclib_core::testing::execute(
        &app.library,
        "INSERT INTO lyrics (track_id, status, instrumental, provider, fetched_at)
         VALUES ($1, 'found', 1, 'lrclib', CAST($2 AS BIGINT))",
        &[
            &instrumental,
            &musiclib_core::Timestamp::now().as_micros().to_string(),
        ],
    )
    .await;
    let verses = "[Verse 1: Ana]\nPrimera línea\n\n[Chorus]\nSegunda línea";
    musiclib_core::testing::store_lyrics(&app.library, &TrackId::parse(&unsynced).unwrap(), verses)
        .await;

    // Synced: start times, the offset, the language.
    let xml = lyrics_xml(&app, &synced).await;
    assert!(
        xml.contains(r#"<line start="1500">Mañana dorada</line>"#),
        "{xml}"
    );
    let found = entries(&app, &synced).await;
    assert_eq!(found.len(), 1);
    assert_eq!(
        (&found[0]["lang"], &found[0]["synced"], &found[0]["offset"]),
        (&json!("spa"), &json!(true), &json!(-250))
    );
    assert_eq!(
        found[0]["line"],
        json!([{"start": 1500, "value": "Mañana dorada"}, {"start": 3000, "value": ""},
            {"start": 4000, "value": "sol de oro"}])
    );

    // Unsynced: lines without start, the verse break and section marks kept.
    let xml = lyrics_xml(&app, &unsynced).await;
    assert!(xml.contains(r#"synced="false""#), "{xml}");
    assert!(!xml.contains("start="), "{xml}");
    let found = entries(&app, &unsynced).await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["synced"], false);
    assert_eq!(
        found[0]["line"],
        json!([{"value": "[Verse 1: Ana]"}, {"value": "Primera línea"}, {"value": ""},
            {"value": "[Chorus]"}, {"value": "Segunda línea"}])
    );
    let (_, value) = get_lyrics(&app, &unsynced).await;
    assert_eq!(value, verses);

    // Instrumental: found, but no entry; getLyrics' value is empty.
    let xml = lyrics_xml(&app, &instrumental).await;
    assert!(!xml.contains("structuredLyrics"), "{xml}");
    assert_eq!(entries(&app, &instrumental).await, Vec::<Value>::new());
    let (_, value) = get_lyrics(&app, &instrumental).await;
    assert_eq!(value, "");

    // Two USLT frames, English then Spanish: one entry per language.
    let corpus = musiclib_core::testing::corpus();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("04 - Adiós, Verano.mp3");
    std::fs::copy(
        corpus
            .join("library/Los Señores del Ritmo/Canción de Mañana (2021)/04 - Adiós, Verano.mp3"),
        &file,
    )
    .unwrap();
    musiclib_core::testing::add_unsynced_lyrics(
        &file,
        &[
            (*b"eng", "Goodbye, summer\n\nSee you in June"),
            (*b"spa", "Adiós, verano\n\nHasta junio"),
        ],
    );
    let uploaded = app
        .library
        .ingest()
        .upload_track(
            &app.caller,
            Some("04 - Adiós, Verano.mp3"),
            tokio::fs::File::open(&file).await.unwrap(),
        )
        .await
        .unwrap();
    let two = uploaded.track.id.to_string();
    let xml = lyrics_xml(&app, &two).await;
    assert_eq!(xml.matches("<structuredLyrics").count(), 2, "{xml}");
    let found = entries(&app, &two).await;
    let summary: Vec<(Value, Value, Value)> = found
        .iter()
        .map(|entry| {
            (
                entry["lang"].clone(),
                entry["synced"].clone(),
                entry["line"][0]["value"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (json!("eng"), json!(false), json!("Goodbye, summer")),
            (json!("spa"), json!(false), json!("Adiós, verano")),
        ]
    );
    assert_eq!(found[1]["line"].as_array().unwrap().len(), 3);
    // getLyrics answers the first language.
    let (_, value) = get_lyrics(&app, &two).await;
    assert_eq!(value, "Goodbye, summer\n\nSee you in June");
});
