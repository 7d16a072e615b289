//! Subsonic request parameters and credentials (`musiclib-subsonic/src/params.rs`): a query
//! string and a form body of any bytes, keys repeated at will, parse; every getter answers a
//! value or a clean `SubsonicError` (10 for a missing parameter, 0 for a malformed one, 43 for
//! `apiKey` beside `u`, `p` or `t`), and the error envelope written from it is well-formed
//! XML, JSON and JSONP carrying the same message. The legacy credentials (`p` clear or
//! `enc:` hex, `t` + `s`) are checked against an app password as core checks them:
//! `enc:` decodes to the password it encodes, and a token matches exactly when it is the
//! md5 of the password and the salt.
//!
//! `fuzz/run.sh subsonic_params` (or `cargo fuzz run subsonic_params`, from `fuzz/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use md5::{Digest as _, Md5};
use musiclib_core::auth::legacy::LegacyCredentials;
use musiclib_core::fuzzing::{legacy_clear_password, legacy_credentials_match};
use musiclib_subsonic::params::{Credentials, Params};
use musiclib_subsonic::response::{failed, Format, SubsonicError};

/// Parameter names the handlers read, and two that the input may invent.
const NAMES: &[&str] = &[
    "u",
    "p",
    "t",
    "s",
    "apiKey",
    "f",
    "callback",
    "id",
    "count",
    "offset",
    "size",
    "timeOffset",
    "submission",
    "time",
    "",
    "x",
];

/// The app password the credentials are checked against.
const PASSWORD: &str = "sesame";

fn body(response: axum::response::Response) -> Vec<u8> {
    futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
        .expect("an in-memory body")
        .to_vec()
}

/// Characters XML 1.0 allows in a document.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// The envelope of `error` in every format reads back to its code and message.
fn check_envelope(error: &SubsonicError) {
    let json: serde_json::Value = serde_json::from_slice(&body(failed(error, &Format::Json)))
        .expect("the JSON envelope parses");
    let sent = &json["subsonic-response"]["error"];
    assert_eq!(sent["code"], error.code);
    assert_eq!(sent["message"], error.message.as_str());

    let script = body(failed(error, &Format::Jsonp("cb".into())));
    let inner = script
        .strip_prefix(b"cb(")
        .and_then(|rest| rest.strip_suffix(b");"))
        .expect("a JSONP call");
    serde_json::from_slice::<serde_json::Value>(inner).expect("the JSONP argument parses");

    let xml = String::from_utf8(body(failed(error, &Format::Xml))).expect("UTF-8 XML");
    assert!(
        xml.chars().all(xml_char),
        "a character XML 1.0 forbids: {xml:?}"
    );
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut message = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Empty(element) | quick_xml::events::Event::Start(element)
                if element.local_name().as_ref() == "error" =>
            {
                let attribute = element
                    .try_get_attribute("message")
                    .expect("attributes parse")
                    .expect("a message attribute");
                message = Some(
                    attribute
                        .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .expect("the message unescapes")
                        .into_owned(),
                );
            }
            _ => {}
        }
    }
    assert_eq!(message.as_deref(), Some(error.message.as_str()), "{xml}");
}

fn check_credentials(credentials: &LegacyCredentials) {
    let matches = legacy_credentials_match(credentials, PASSWORD);
    match credentials {
        LegacyCredentials::Token { token, salt } => {
            let expected = hex::encode(Md5::digest(format!("{PASSWORD}{salt}").as_bytes()));
            assert_eq!(matches, token.to_ascii_lowercase() == expected);
        }
        LegacyCredentials::Password(raw) => {
            let clear = legacy_clear_password(raw);
            match (&clear, raw.strip_prefix("enc:")) {
                (Some(clear), None) => assert_eq!(clear, raw),
                (Some(clear), Some(_)) => {
                    // What `enc:` decodes to is the password it proves, and encodes back.
                    let encoded = format!("enc:{}", hex::encode(clear.as_bytes()));
                    assert_eq!(legacy_clear_password(&encoded).as_ref(), Some(clear));
                }
                (None, prefix) => assert!(prefix.is_some(), "only enc: hex can fail"),
            }
            assert_eq!(matches, clear.as_deref() == Some(PASSWORD));
            if let Some(clear) = &clear {
                assert!(legacy_credentials_match(credentials, clear));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The first byte says which parts there are; a query and a form are split at the first
    // newline (a query string never holds one).
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let (query_bytes, form) = match rest.iter().position(|byte| *byte == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let query = String::from_utf8_lossy(query_bytes);
    let params = Params::parse(
        (shape & 1 == 0).then_some(query.as_ref()),
        (shape & 2 == 0).then_some(form),
    );

    // One envelope of a getter's error per input is enough (they are many and alike).
    let mut envelope_checked = false;
    for name in NAMES {
        let first = params.get(name);
        let all = params.all(name);
        assert_eq!(first, all.first().copied());
        assert!(all.iter().all(|value| !value.is_empty()));
        if first.is_some() {
            assert!(params.has(name));
        }
        match params.required(name) {
            Ok(value) => assert_eq!(Some(value), first),
            Err(error) => {
                assert!(first.is_none());
                assert_eq!(error.code, 10);
            }
        }
        if let Ok(Some(number)) = params.float(name) {
            assert!(number.is_finite());
        }
        let errors = [
            params.int(name).err(),
            params.ints(name).err(),
            params.float(name).err(),
            params.bool(name).err(),
        ];
        for error in errors.iter().flatten() {
            assert_eq!(error.code, 0);
            if !envelope_checked {
                check_envelope(error);
                envelope_checked = true;
            }
        }
    }

    if let Format::Jsonp(callback) = Format::parse(params.get("f"), params.get("callback")) {
        assert!(callback
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.')));
    }

    match params.credentials() {
        Ok(Credentials::ApiKey(key)) => {
            assert_eq!(Some(key), params.get("apiKey"));
            assert!(!params.has("u") && !params.has("p") && !params.has("t"));
        }
        Ok(Credentials::Legacy {
            username,
            credentials,
        }) => {
            assert_eq!(Some(username), params.get("u"));
            check_credentials(&credentials);
        }
        Err(error) => {
            assert!(matches!(error.code, 10 | 43), "{error:?}");
            check_envelope(&error);
        }
    }
});
