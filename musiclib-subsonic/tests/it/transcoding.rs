//! OpenSubsonic `transcoding`: `getTranscodeDecision` with the extension's own example
//! payload (a Sonos Play:1) decides direct play for an MP3 within its limits and an MP3
//! encode for a FLAC over them; `getTranscodeStream` sends each (the original by range; the
//! encode read back with ffprobe: codec, channels, rate, from an offset); and every wrong
//! input is refused by name: a GET, no body, a body that is not a ClientInfo, a protocol or
//! a media type the extension does not define, parameters the decision did not give, an
//! unknown song. The stream's errors are HTTP statuses with a line of text.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use musiclib_core::testing::Backend;
use serde_json::{json, Value};

use crate::both_backends;
use crate::harness::{header_text, Fixture};

/// The extension's example `ClientInfo`.
fn sonos() -> Value {
    json!({
        "name": "Play:1", "platform": "Sonos",
        "maxAudioBitrate": 512000, "maxTranscodingAudioBitrate": 256000,
        "directPlayProfiles": [
            {"containers": ["mp3"], "audioCodecs": ["mp3"], "protocols": ["http"], "maxAudioChannels": 2},
            {"containers": ["flac"], "audioCodecs": ["flac"], "protocols": [], "maxAudioChannels": 2},
            {"containers": ["mp4"], "audioCodecs": ["flac", "aac", "alac"], "protocols": [], "maxAudioChannels": 2}
        ],
        "transcodingProfiles": [
            {"container": "flac", "audioCodec": "flac", "protocol": "hls", "maxAudioChannels": 2},
            {"container": "mp3", "audioCodec": "mp3", "protocol": "http", "maxAudioChannels": 2}
        ],
        "codecProfiles": [
            {"type": "AudioCodec", "name": "mp3", "limitations": [
                {"name": "audioBitrate", "comparison": "LessThanEqual", "values": ["320000"], "required": true}
            ]},
            {"type": "AudioCodec", "name": "flac", "limitations": [
                {"name": "audioSamplerate", "comparison": "LessThanEqual", "values": ["192000"], "required": false}
            ]}
        ]
    })
}

/// A POST of `getTranscodeDecision` with `body` as JSON: the `subsonic-response`.
async fn decide(app: &Fixture, query: &str, body: &str) -> Value {
    let request = Request::post(format!(
        "/rest/getTranscodeDecision?{}&f=json&{query}",
        app.auth()
    ))
    .header(header::CONTENT_TYPE, "application/json")
    .body(Body::from(body.to_string()))
    .unwrap();
    let (status, _, bytes) = app.send(request).await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_slice::<Value>(&bytes).unwrap()["subsonic-response"].clone()
}

/// The first of the fixture's songs whose suffix is `suffix`.
async fn song_with_suffix(app: &Fixture, suffix: &str) -> (String, Value) {
    for id in &app.track_ids {
        let song = app.json("getSong", &format!("id={id}")).await["song"].clone();
        if song["suffix"] == suffix {
            return (id.clone(), song);
        }
    }
    panic!("the fixture has no {suffix} song");
}

/// ffprobe's view of `bytes`: codec, channels, sample rate.
fn probe(bytes: &[u8]) -> (String, i64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("encoded");
    std::fs::write(&file, bytes).unwrap();
    let output = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-print_format", "json", "-show_streams"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let streams: Value = serde_json::from_slice(&output.stdout).unwrap();
    let stream = &streams["streams"][0];
    (
        stream["codec_name"].as_str().unwrap().to_string(),
        stream["channels"].as_i64().unwrap(),
        stream["sample_rate"].as_str().unwrap().parse().unwrap(),
    )
}

both_backends!(decisions_and_their_streams, |backend: Backend| async move {
    let app = Fixture::new(backend).await;
    let extensions = app.json("getOpenSubsonicExtensions", "").await;
    assert!(
        extensions["openSubsonicExtensions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|extension| extension["name"] == "transcoding"),
        "{extensions}"
    );
    let payload = sonos().to_string();

    // An MP3 within the limits plays as it is; its stream is the original, by range too.
    let (mp3, song) = song_with_suffix(&app, "mp3").await;
    let answer = decide(&app, &format!("mediaId={mp3}&mediaType=song"), &payload).await;
    assert_eq!(answer["status"], "ok", "{answer}");
    let decision = &answer["transcodeDecision"];
    assert_eq!(decision["canDirectPlay"], true, "{decision}");
    assert_eq!(decision["canTranscode"], false, "{decision}");
    assert_eq!(decision["sourceStream"]["container"], "mp3");
    assert_eq!(decision["sourceStream"]["codec"], "mp3");
    assert_eq!(
        decision["sourceStream"]["audioBitrate"],
        json!(song["bitRate"].as_i64().unwrap() * 1000)
    );
    assert!(decision.get("transcodeStream").is_none());
    let params = decision["transcodeParams"].as_str().unwrap().to_string();
    let request = Request::get(format!(
        "/rest/getTranscodeStream?{}&mediaId={mp3}&mediaType=song&transcodeParams={params}",
        app.auth()
    ))
    .header(header::RANGE, "bytes=0-99")
    .body(Body::empty())
    .unwrap();
    let (status, headers, bytes) = app.send_parts(request).await;
    assert_eq!(status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(header_text(&headers, header::CONTENT_TYPE), "audio/mpeg");
    assert_eq!(bytes.len(), 100);

    // A FLAC over the client's limit: the HLS profile passed over, MP3 at the transcoding
    // limit, at most 48 kHz.
    let (flac, _) = song_with_suffix(&app, "flac").await;
    let answer = decide(&app, &format!("mediaId={flac}&mediaType=song"), &payload).await;
    let decision = &answer["transcodeDecision"];
    assert_eq!(decision["sourceStream"]["codec"], "flac", "{decision}");
    let over = decision["sourceStream"]["audioBitrate"].as_i64().unwrap() > 512_000;
    if over {
        assert_eq!(decision["canDirectPlay"], false, "{decision}");
        assert_eq!(
            decision["transcodeReason"],
            json!(["AudioBitrateNotSupported"])
        );
    }
    // Without the flac profile it is transcoded whatever its bit rate.
    let mut no_flac = sonos();
    no_flac["directPlayProfiles"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let answer = decide(
        &app,
        &format!("mediaId={flac}&mediaType=song"),
        &no_flac.to_string(),
    )
    .await;
    let decision = &answer["transcodeDecision"];
    assert_eq!(decision["canDirectPlay"], false, "{decision}");
    assert_eq!(decision["canTranscode"], true, "{decision}");
    // One reason per direct-play profile, or the bit rate alone.
    let reasons = if over {
        json!(["AudioBitrateNotSupported"])
    } else {
        json!(["ContainerNotSupported", "ContainerNotSupported"])
    };
    assert_eq!(decision["transcodeReason"], reasons);
    let target = &decision["transcodeStream"];
    assert_eq!(
        (&target["protocol"], &target["container"], &target["codec"]),
        (&json!("http"), &json!("mp3"), &json!("mp3"))
    );
    assert_eq!(target["audioBitrate"], 256_000);
    let params = decision["transcodeParams"].as_str().unwrap().to_string();
    let (status, content_type, bytes) = app
        .get(
            "getTranscodeStream",
            &format!(
                "{}&mediaId={flac}&mediaType=song&transcodeParams={params}&offset=1",
                app.auth()
            ),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    assert_eq!(content_type, "audio/mpeg");
    let (codec, channels, rate) = probe(&bytes);
    assert_eq!(codec, "mp3");
    assert_eq!(channels, target["audioChannels"].as_i64().unwrap());
    assert_eq!(rate, target["audioSamplerate"].as_i64().unwrap());

    // Opus for a client that asks for it, mono.
    let opus = json!({
        "name": "phone", "platform": "Android",
        "transcodingProfiles": [{"container": "ogg", "audioCodec": "opus", "protocol": "http", "maxAudioChannels": 1}]
    });
    let answer = decide(
        &app,
        &format!("mediaId={flac}&mediaType=song"),
        &opus.to_string(),
    )
    .await;
    let params = answer["transcodeDecision"]["transcodeParams"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(params, "opus-128-1-48000");
    let (status, content_type, bytes) = app
        .get(
            "getTranscodeStream",
            &format!(
                "{}&mediaId={flac}&mediaType=song&transcodeParams={params}",
                app.auth()
            ),
        )
        .await;
    assert_eq!(
        (status, content_type.as_str()),
        (StatusCode::OK, "audio/ogg")
    );
    assert_eq!(probe(&bytes), ("opus".into(), 1, 48_000));

    // Refusals, by name.
    let query = format!("mediaId={flac}&mediaType=song");
    let refused = |answer: Value, word: &str| {
        assert_eq!(answer["status"], "failed", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(word), "{word}: {message}");
    };
    let (_, _, bytes) = app
        .get(
            "getTranscodeDecision",
            &format!("{}&f=json&{query}", app.auth()),
        )
        .await;
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    refused(answer["subsonic-response"].clone(), "POST");
    refused(decide(&app, &query, "").await, "ClientInfo");
    refused(decide(&app, &query, "[1, 2]").await, "ClientInfo");
    refused(
        decide(
            &app,
            &query,
            r#"{"transcodingProfiles": [{"container": "mp3", "audioCodec": "mp3", "protocol": "rtsp"}]}"#,
        )
        .await,
        "protocol",
    );
    refused(
        decide(&app, &format!("mediaId={flac}&mediaType=video"), &payload).await,
        "mediaType",
    );
    let unknown = decide(
        &app,
        &format!("mediaId={}&mediaType=song", musiclib_core::TrackId::new()),
        &payload,
    )
    .await;
    assert_eq!(unknown["error"]["code"], 70, "{unknown}");
    for (query, status) in [
        (
            format!("mediaId={flac}&mediaType=song&transcodeParams=flac-900-2-96000"),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("mediaId={flac}&mediaType=song&transcodeParams=mp3-128-2-44100&offset=-3"),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("mediaId={flac}&mediaType=song"),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("mediaId={flac}&mediaType=tv&transcodeParams=direct"),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!(
                "mediaId={}&mediaType=song&transcodeParams=direct",
                musiclib_core::TrackId::new()
            ),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (got, content_type, body) = app
            .get("getTranscodeStream", &format!("{}&{query}", app.auth()))
            .await;
        assert_eq!(got, status, "{query}: {}", String::from_utf8_lossy(&body));
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        assert!(!body.is_empty());
    }
});
