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

/// Version 2's additions (`enhanced=true`): `kind` on each entry, `cueLine`s after the
/// lines, each with its `cue`s.
fn lyrics_list_v2_xsd() -> String {
    LYRICS_LIST_XSD
        .replace(
            r#"            </xs:sequence>
            <xs:attribute name="displayArtist""#,
            r#"              <xs:element name="cueLine" minOccurs="0" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:sequence>
                    <xs:element name="cue" maxOccurs="unbounded">
                      <xs:complexType>
                        <xs:simpleContent>
                          <xs:extension base="xs:string">
                            <xs:attribute name="start" type="xs:nonNegativeInteger" use="required"/>
                            <xs:attribute name="end" type="xs:nonNegativeInteger"/>
                            <xs:attribute name="byteStart" type="xs:nonNegativeInteger" use="required"/>
                            <xs:attribute name="byteEnd" type="xs:nonNegativeInteger" use="required"/>
                          </xs:extension>
                        </xs:simpleContent>
                      </xs:complexType>
                    </xs:element>
                  </xs:sequence>
                  <xs:attribute name="index" type="xs:nonNegativeInteger" use="required"/>
                  <xs:attribute name="start" type="xs:nonNegativeInteger"/>
                  <xs:attribute name="end" type="xs:nonNegativeInteger"/>
                  <xs:attribute name="value" type="xs:string" use="required"/>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
            <xs:attribute name="kind" use="required">
              <xs:simpleType>
                <xs:restriction base="xs:string">
                  <xs:enumeration value="main"/>
                  <xs:enumeration value="translation"/>
                  <xs:enumeration value="pronunciation"/>
                </xs:restriction>
              </xs:simpleType>
            </xs:attribute>
            <xs:attribute name="displayArtist""#,
        )
}

/// `getLyricsBySongId` in XML: the envelope validated by the official schema, the
/// `lyricsList` by OpenSubsonic's shape. Answers the XML.
async fn lyrics_xml(app: &Fixture, id: &str) -> String {
    lyrics_xml_with(app, id, "", LYRICS_LIST_XSD).await
}

/// [`lyrics_xml`] with more parameters, validated by `xsd`.
async fn lyrics_xml_with(app: &Fixture, id: &str, extra: &str, xsd: &str) -> String {
    let (status, content_type, body) = app
        .get(
            "getLyricsBySongId",
            &format!("{}&id={id}{extra}", app.auth()),
        )
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
    std::fs::write(&schema, xsd).unwrap();
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
    // Enhanced: the second language is a translation of the first.
    let answer = app
        .json("getLyricsBySongId", &format!("id={two}&enhanced=true"))
        .await;
    let kinds: Vec<(&Value, &Value)> = answer["lyricsList"]["structuredLyrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| (&entry["kind"], &entry["lang"]))
        .collect();
    assert_eq!(
        kinds,
        [
            (&json!("main"), &json!("eng")),
            (&json!("translation"), &json!("spa"))
        ]
    );
});

/// Enhanced LRC as bilingual files write it: each line with word stamps, then its
/// translation at the same stamp.
const ENHANCED: &str = "[00:12.00]<00:12.00>東<00:12.50>京<00:13.00>の<00:13.40>夜<00:14.20>
[00:12.00]Tokyo night
[00:15.00]<00:15.00>눈을 <00:16.00>뜬 순간
[00:15.00]The moment I opened my eyes
[00:18.00]no words here
";

both_backends!(
    enhanced_lyrics_give_kinds_and_word_cues_in_utf8_bytes,
    |backend: Backend| async move {
        let app = Fixture::new(backend).await;
        let id = app.track_ids[0].clone();
        // Stored as the cache keeps it: what is answered here was written and read back.
        musiclib_core::testing::store_lyrics(&app.library, &TrackId::parse(&id).unwrap(), ENHANCED)
            .await;

        // Version 1 (no `enhanced`): one entry, every line, no kinds, no cues.
        let found = entries(&app, &id).await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0]["line"].as_array().unwrap().len(), 5);
        assert!(found[0].get("kind").is_none() && found[0].get("cueLine").is_none());
        assert_eq!(
            found[0]["line"][0],
            json!({"start": 12000, "value": "東京の夜"})
        );
        let xml = lyrics_xml(&app, &id).await;
        assert!(!xml.contains("cueLine") && !xml.contains("kind="), "{xml}");

        // Version 2: main (with cues) and the translation.
        let answer = app
            .json("getLyricsBySongId", &format!("id={id}&enhanced=true"))
            .await;
        let layers = answer["lyricsList"]["structuredLyrics"].as_array().unwrap();
        assert_eq!(layers.len(), 2, "{answer}");
        let (main, translation) = (&layers[0], &layers[1]);
        assert_eq!(
            (&main["kind"], &main["synced"]),
            (&json!("main"), &json!(true))
        );
        assert_eq!(
            main["line"],
            json!([{"start": 12000, "value": "東京の夜"}, {"start": 15000, "value": "눈을 뜬 순간"},
            {"start": 18000, "value": "no words here"}])
        );
        assert_eq!(
            main["cueLine"],
            json!([
                {"index": 0, "start": 12000, "end": 14200, "value": "東京の夜", "cue": [
                    {"start": 12000, "end": 12500, "value": "東", "byteStart": 0, "byteEnd": 2},
                    {"start": 12500, "end": 13000, "value": "京", "byteStart": 3, "byteEnd": 5},
                    {"start": 13000, "end": 13400, "value": "の", "byteStart": 6, "byteEnd": 8},
                    {"start": 13400, "end": 14200, "value": "夜", "byteStart": 9, "byteEnd": 11}]},
                {"index": 1, "start": 15000, "end": 18000, "value": "눈을 뜬 순간", "cue": [
                    {"start": 15000, "end": 16000, "value": "눈을 ", "byteStart": 0, "byteEnd": 6},
                    {"start": 16000, "end": 18000, "value": "뜬 순간", "byteStart": 7, "byteEnd": 16}]}
            ])
        );
        // Each cue's bytes are its value, as a client slicing the UTF-8 would find them.
        for cue_line in main["cueLine"].as_array().unwrap() {
            let bytes = cue_line["value"].as_str().unwrap().as_bytes();
            for cue in cue_line["cue"].as_array().unwrap() {
                let (from, to) = (
                    cue["byteStart"].as_u64().unwrap() as usize,
                    cue["byteEnd"].as_u64().unwrap() as usize,
                );
                assert_eq!(
                    std::str::from_utf8(&bytes[from..=to]).unwrap(),
                    cue["value"].as_str().unwrap()
                );
            }
        }
        assert_eq!(translation["kind"], "translation");
        assert_eq!(translation["lang"], "und");
        assert_eq!(
            translation["line"],
            json!([{"start": 12000, "value": "Tokyo night"},
            {"start": 15000, "value": "The moment I opened my eyes"}])
        );
        assert!(translation.get("cueLine").is_none());

        // The same in XML, valid by version 2's shape.
        let xml = lyrics_xml_with(&app, &id, "&enhanced=true", &lyrics_list_v2_xsd()).await;
        assert!(
            xml.contains(r#"<cue start="12000" end="12500" byteStart="0" byteEnd="2">東</cue>"#),
            "{xml}"
        );
        assert!(xml.contains(r#"kind="translation""#), "{xml}");

        // A bad flag is refused, naming it.
        let answer = app
            .json_as(
                &app.auth(),
                "getLyricsBySongId",
                &format!("id={id}&enhanced=maybe"),
            )
            .await;
        assert_eq!(answer["status"], "failed", "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("enhanced"),
            "{answer}"
        );
    }
);
