//! The response envelope in its two encodings.
//!
//! Handlers build one [`Element`] tree; it is written as XML (attributes for scalars, child
//! elements for objects and lists, text content) or as JSON (typed scalars, objects, lists
//! always arrays, text content as `"value"`), which is how the Subsonic formats relate.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use musiclib_core::{ErrorKind, Timestamp};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

/// The protocol version implemented.
pub const API_VERSION: &str = "1.16.1";
/// The Subsonic XML namespace.
pub const NAMESPACE: &str = "http://subsonic.org/restapi";
/// The server name reported as `type`.
pub const SERVER_TYPE: &str = "musiclib";

/// A scalar attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// Text.
    Str(String),
    /// An integer.
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl Scalar {
    fn xml(&self) -> String {
        match self {
            Scalar::Str(text) => text.clone(),
            Scalar::Int(int) => int.to_string(),
            Scalar::Float(float) => float.to_string(),
            Scalar::Bool(flag) => flag.to_string(),
        }
    }
}

impl Serialize for Scalar {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Str(text) => serializer.serialize_str(text),
            Scalar::Int(int) => serializer.serialize_i64(*int),
            // Not a number has no JSON form: null, as serde_json writes it.
            Scalar::Float(float) if !float.is_finite() => serializer.serialize_unit(),
            Scalar::Float(float) => serializer.serialize_f64(*float),
            Scalar::Bool(flag) => serializer.serialize_bool(*flag),
        }
    }
}

impl From<&str> for Scalar {
    fn from(text: &str) -> Self {
        Scalar::Str(text.to_string())
    }
}
impl From<String> for Scalar {
    fn from(text: String) -> Self {
        Scalar::Str(text)
    }
}
impl From<&String> for Scalar {
    fn from(text: &String) -> Self {
        Scalar::Str(text.clone())
    }
}
impl From<i64> for Scalar {
    fn from(int: i64) -> Self {
        Scalar::Int(int)
    }
}
impl From<bool> for Scalar {
    fn from(flag: bool) -> Self {
        Scalar::Bool(flag)
    }
}
impl From<f64> for Scalar {
    fn from(float: f64) -> Self {
        Scalar::Float(float)
    }
}
impl From<Timestamp> for Scalar {
    /// Date-times are ISO 8601 (`xs:dateTime`).
    fn from(at: Timestamp) -> Self {
        Scalar::Str(at.to_rfc3339())
    }
}

#[derive(Debug, Clone)]
enum Child {
    /// One nested object.
    One(Element),
    /// A list: an array in JSON even when it has one item or none.
    List(&'static str, Vec<Element>),
    /// A list of scalars: repeated text elements in XML, an array in JSON.
    Values(&'static str, Vec<Scalar>),
}

/// One element of a response.
#[derive(Debug, Clone)]
pub struct Element {
    name: &'static str,
    attrs: Vec<(&'static str, Scalar)>,
    children: Vec<Child>,
    text: Option<String>,
}

impl Element {
    /// An empty element.
    pub fn new(name: &'static str) -> Element {
        Element {
            name,
            attrs: Vec::new(),
            children: Vec::new(),
            text: None,
        }
    }

    /// A nameless element whose contents go straight into the envelope (a payload that is
    /// a bare list, like `getOpenSubsonicExtensions`'s).
    pub fn bare() -> Element {
        Element::new("")
    }

    /// The same element under another name.
    pub fn renamed(mut self, name: &'static str) -> Element {
        self.name = name;
        self
    }

    /// Adds an attribute.
    pub fn attr(mut self, name: &'static str, value: impl Into<Scalar>) -> Element {
        self.attrs.push((name, value.into()));
        self
    }

    /// Adds an attribute when there is a value.
    pub fn opt<V: Into<Scalar>>(self, name: &'static str, value: Option<V>) -> Element {
        match value {
            Some(value) => self.attr(name, value),
            None => self,
        }
    }

    /// Adds one nested element.
    pub fn child(mut self, child: Element) -> Element {
        self.children.push(Child::One(child));
        self
    }

    /// Adds one nested element when there is one.
    pub fn opt_child(self, child: Option<Element>) -> Element {
        match child {
            Some(child) => self.child(child),
            None => self,
        }
    }

    /// Adds a list of elements named `name` (each keeps its own name in XML).
    pub fn list(mut self, name: &'static str, items: Vec<Element>) -> Element {
        self.children.push(Child::List(name, items));
        self
    }

    /// Adds a list of scalars (`<folder>1</folder>` in XML, `"folder": [1]` in JSON).
    pub fn values(mut self, name: &'static str, values: Vec<Scalar>) -> Element {
        self.children.push(Child::Values(name, values));
        self
    }

    /// Sets the text content (`"value"` in JSON).
    pub fn text(mut self, text: impl Into<String>) -> Element {
        self.text = Some(text.into());
        self
    }

    /// The element as a JSON object, written straight to the output: keys in name order,
    /// and a later entry of a name replacing an earlier one (what building a
    /// `serde_json::Map` would give, without building it: a page of 500 songs is thousands
    /// of values).
    fn json(&self) -> JsonElement<'_> {
        JsonElement(self)
    }

    fn write_xml<W: std::io::Write>(
        &self,
        writer: &mut quick_xml::Writer<W>,
    ) -> std::io::Result<()> {
        let mut start = BytesStart::new(self.name);
        for (name, value) in &self.attrs {
            start.push_attribute((*name, xml_text(&value.xml()).as_ref()));
        }
        let empty = self.text.is_none()
            && self.children.iter().all(|child| match child {
                Child::One(_) => false,
                Child::List(_, items) => items.is_empty(),
                Child::Values(_, values) => values.is_empty(),
            });
        if empty {
            return writer.write_event(Event::Empty(start));
        }
        writer.write_event(Event::Start(start))?;
        if let Some(text) = &self.text {
            writer.write_event(Event::Text(BytesText::new(&xml_text(text))))?;
        }
        for child in &self.children {
            match child {
                Child::One(element) => element.write_xml(writer)?,
                Child::List(_, items) => {
                    for item in items {
                        item.write_xml(writer)?;
                    }
                }
                Child::Values(name, values) => {
                    for value in values {
                        writer.write_event(Event::Start(BytesStart::new(*name)))?;
                        writer.write_event(Event::Text(BytesText::new(&xml_text(&value.xml()))))?;
                        writer.write_event(Event::End(BytesEnd::new(*name)))?;
                    }
                }
            }
        }
        writer.write_event(Event::End(BytesEnd::new(self.name)))
    }
}

/// `text` with every character XML 1.0 cannot carry (escaped or not: the control characters
/// but tab, line feed and carriage return, and U+FFFE and U+FFFF) replaced by U+FFFD, so
/// one odd tag, name or client string never makes a response unparseable for everyone.
fn xml_text(text: &str) -> std::borrow::Cow<'_, str> {
    fn allowed(c: char) -> bool {
        !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
    }
    if text.chars().all(allowed) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.chars()
            .map(|c| if allowed(c) { c } else { '\u{fffd}' })
            .collect(),
    )
}

/// An error as the protocol reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubsonicError {
    /// Protocol error code.
    pub code: i64,
    /// What went wrong, for people.
    pub message: String,
}

impl SubsonicError {
    /// Error 0, a generic failure.
    pub fn generic(message: impl Into<String>) -> Self {
        SubsonicError {
            code: 0,
            message: message.into(),
        }
    }

    /// Error 10: a required parameter is missing.
    pub fn missing(name: &str) -> Self {
        SubsonicError {
            code: 10,
            message: format!("required parameter is missing: {name}"),
        }
    }

    /// Error 0 for a malformed parameter value.
    pub fn invalid(name: &str, why: impl std::fmt::Display) -> Self {
        SubsonicError::generic(format!("invalid parameter {name}: {why}"))
    }

    /// Error 40.
    pub fn wrong_credentials() -> Self {
        SubsonicError {
            code: 40,
            message: "wrong username or password".into(),
        }
    }

    /// Error 70.
    pub fn not_found(what: impl std::fmt::Display) -> Self {
        SubsonicError {
            code: 70,
            message: format!("{what} not found"),
        }
    }

    /// Error 0 for an operation this server does not offer.
    pub fn not_supported(method: &str) -> Self {
        SubsonicError::generic(format!(
            "{method} is not supported by this server (see getOpenSubsonicExtensions and musiclib's docs/subsonic.md)"
        ))
    }
}

impl From<musiclib_core::Error> for SubsonicError {
    fn from(error: musiclib_core::Error) -> Self {
        let code = match error.kind() {
            ErrorKind::NotFound | ErrorKind::Gone => 70,
            ErrorKind::Unauthenticated => 40,
            ErrorKind::Forbidden => 50,
            // The protocol has no code for "too many attempts": 0, its message saying when
            // to retry (the adapter adds `Retry-After`).
            ErrorKind::InvalidInput
            | ErrorKind::Conflict
            | ErrorKind::TooLarge
            | ErrorKind::RateLimited
            | ErrorKind::Unavailable
            | ErrorKind::InsufficientStorage
            | ErrorKind::NotSupported
            | ErrorKind::Internal => 0,
        };
        let message = match error.kind() {
            ErrorKind::Internal => {
                tracing::error!(error = %musiclib_core::error_chain(&error), "legacy request failed");
                "internal server error".to_string()
            }
            ErrorKind::InsufficientStorage => {
                "the server is out of storage space; nothing was stored".to_string()
            }
            ErrorKind::Unavailable if error.code() == "database_unavailable" => {
                "the database is unavailable; try again shortly".to_string()
            }
            ErrorKind::Unavailable if error.code() == "storage_unavailable" => {
                "the storage backend is unavailable; try again shortly".to_string()
            }
            _ => error.to_string(),
        };
        SubsonicError { code, message }
    }
}

/// The encoding a client asked for with `f`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// `f=xml` or none.
    Xml,
    /// `f=json`.
    Json,
    /// `f=jsonp` with `callback`.
    Jsonp(String),
}

impl Format {
    /// From `f` and `callback`. An unknown `f`, or `jsonp` without a usable callback name,
    /// falls back to XML, the protocol's default.
    pub fn parse(f: Option<&str>, callback: Option<&str>) -> Format {
        match f.map(str::to_ascii_lowercase).as_deref() {
            Some("json") => Format::Json,
            Some("jsonp") => match callback.filter(|name| is_callback_name(name)) {
                Some(name) => Format::Jsonp(name.to_string()),
                None => Format::Json,
            },
            _ => Format::Xml,
        }
    }
}

/// A JavaScript identifier path (`cb`, `jQuery123.handle`): nothing else is echoed into
/// a script.
fn is_callback_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.')
}

/// The envelope attributes every response carries.
fn envelope(status: &str) -> Element {
    Element::new("subsonic-response")
        .attr("status", status)
        .attr("version", API_VERSION)
        .attr("type", SERVER_TYPE)
        .attr("serverVersion", env!("CARGO_PKG_VERSION"))
        .attr("openSubsonic", true)
}

/// A successful response with an optional payload element.
pub fn ok(payload: Option<Element>, format: &Format) -> Response {
    let mut root = envelope("ok");
    match payload {
        Some(payload) if payload.name.is_empty() => root.children.extend(payload.children),
        Some(payload) => root = root.child(payload),
        None => {}
    }
    render(root, format)
}

/// A failed response: HTTP 200 with `status="failed"`, as clients expect.
pub fn failed(error: &SubsonicError, format: &Format) -> Response {
    let root = envelope("failed").child(
        Element::new("error")
            .attr("code", error.code)
            .attr("message", error.message.as_str()),
    );
    render(root, format)
}

fn render(root: Element, format: &Format) -> Response {
    match format {
        Format::Xml => {
            let mut writer = quick_xml::Writer::new(Vec::with_capacity(4096));
            let mut root = root;
            root.attrs.insert(0, ("xmlns", Scalar::from(NAMESPACE)));
            writer
                .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
                .and_then(|()| root.write_xml(&mut writer))
                .expect("writing XML to memory cannot fail");
            (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/xml; charset=utf-8"),
                )],
                writer.into_inner(),
            )
                .into_response()
        }
        Format::Json | Format::Jsonp(_) => {
            let body = std::collections::BTreeMap::from([(root.name, root.json())]);
            let json = serde_json::to_vec(&body).expect("JSON values serialise");
            match format {
                Format::Jsonp(callback) => {
                    let mut script = Vec::with_capacity(json.len() + callback.len() + 3);
                    script.extend_from_slice(callback.as_bytes());
                    script.push(b'(');
                    script.extend_from_slice(&json);
                    script.extend_from_slice(b");");
                    (
                        [(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/javascript; charset=utf-8"),
                        )],
                        script,
                    )
                        .into_response()
                }
                _ => (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    )],
                    json,
                )
                    .into_response(),
            }
        }
    }
}

/// An [`Element`] written as JSON ([`Element::json`]).
struct JsonElement<'a>(&'a Element);

/// One value of a JSON object.
enum JsonEntry<'a> {
    Scalar(&'a Scalar),
    Text(&'a str),
    One(&'a Element),
    List(&'a [Element]),
    Values(&'a [Scalar]),
}

impl Serialize for JsonElement<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let element = self.0;
        let mut entries: Vec<(&str, JsonEntry<'_>)> =
            Vec::with_capacity(element.attrs.len() + element.children.len() + 1);
        for (name, value) in &element.attrs {
            entries.push((name, JsonEntry::Scalar(value)));
        }
        if let Some(text) = &element.text {
            entries.push(("value", JsonEntry::Text(text)));
        }
        for child in &element.children {
            entries.push(match child {
                Child::One(one) => (one.name, JsonEntry::One(one)),
                Child::List(name, items) => (name, JsonEntry::List(items)),
                Child::Values(name, values) => (name, JsonEntry::Values(values)),
            });
        }
        // Stable: of equal names, the last one added is kept.
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut object = serializer.serialize_map(None)?;
        for (at, (name, entry)) in entries.iter().enumerate() {
            if entries.get(at + 1).is_some_and(|next| next.0 == *name) {
                continue;
            }
            match entry {
                JsonEntry::Scalar(value) => object.serialize_entry(name, value)?,
                JsonEntry::Text(text) => object.serialize_entry(name, text)?,
                JsonEntry::One(one) => object.serialize_entry(name, &one.json())?,
                JsonEntry::List(items) => object.serialize_entry(name, &JsonList(items))?,
                JsonEntry::Values(values) => object.serialize_entry(name, values)?,
            }
        }
        object.end()
    }
}

/// A list of elements as a JSON array.
struct JsonList<'a>(&'a [Element]);

impl Serialize for JsonList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut list = serializer.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            list.serialize_element(&item.json())?;
        }
        list.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value as Json;

    fn body(response: Response) -> String {
        let bytes =
            futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
                .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[test]
    fn xml_never_carries_characters_xml_cannot_hold() {
        let payload = Element::new("playlist")
            .attr("name", "bad\u{1}name\u{b}\u{fffe}")
            .attr("comment", "tab\tand\nlines\r kept")
            .child(Element::new("lyrics").text("a\u{0}b"))
            .values("genre", vec![Scalar::from("x\u{1f}y")]);
        let text = body(ok(Some(payload.clone()), &Format::Xml));
        assert!(
            !text.chars().any(|c| matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')),
            "{text:?}"
        );
        assert!(text.contains("bad\u{fffd}name\u{fffd}\u{fffd}"), "{text}");
        assert!(
            text.contains("a\u{fffd}b") && text.contains("x\u{fffd}y"),
            "{text}"
        );
        // It parses as XML, with the characters XML allows kept.
        let mut reader = quick_xml::Reader::from_str(&text);
        let mut events = 0;
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Eof => break,
                _ => events += 1,
            }
        }
        assert!(events > 3);
        assert!(
            text.contains("tab&#9;and&#10;lines&#13; kept") || text.contains("tab\tand"),
            "{text}"
        );
        // JSON escapes them as it always did.
        let json = body(ok(Some(payload), &Format::Json));
        assert!(serde_json::from_str::<Json>(&json).is_ok());
    }

    #[test]
    fn json_keys_are_in_name_order_and_the_last_of_a_name_wins() {
        let payload = Element::new("song")
            .attr("title", "b")
            .attr("album", "a")
            .attr("title", "c")
            .attr("ratio", f64::NAN)
            .child(Element::new("genre").attr("name", "x"));
        let text = body(ok(Some(payload), &Format::Json));
        let song = text.split("\"song\":").nth(1).unwrap();
        assert!(
            song.starts_with(r#"{"album":"a","genre":{"name":"x"},"ratio":null,"title":"c"}"#),
            "{text}"
        );
    }

    #[test]
    fn lists_are_arrays_and_text_is_value_in_json() {
        let payload = Element::new("genres").list(
            "genre",
            vec![Element::new("genre")
                .attr("songCount", 3)
                .attr("albumCount", 1)
                .text("Rock & Roll")],
        );
        let json: Json =
            serde_json::from_str(&body(ok(Some(payload.clone()), &Format::Json))).unwrap();
        let root = &json["subsonic-response"];
        assert_eq!(root["status"], "ok");
        assert_eq!(root["version"], API_VERSION);
        assert_eq!(root["openSubsonic"], true);
        assert_eq!(root["genres"]["genre"][0]["value"], "Rock & Roll");
        assert_eq!(root["genres"]["genre"][0]["songCount"], 3);
        let empty: Json = serde_json::from_str(&body(ok(
            Some(Element::new("genres").list("genre", vec![])),
            &Format::Json,
        )))
        .unwrap();
        assert_eq!(
            empty["subsonic-response"]["genres"]["genre"],
            serde_json::json!([])
        );

        let xml = body(ok(Some(payload), &Format::Xml));
        assert!(xml.contains(r#"<subsonic-response xmlns="http://subsonic.org/restapi" status="ok" version="1.16.1""#), "{xml}");
        assert!(
            xml.contains(r#"<genre songCount="3" albumCount="1">Rock &amp; Roll</genre>"#),
            "{xml}"
        );
    }

    #[test]
    fn errors_and_jsonp() {
        let error = SubsonicError::missing("id");
        let text = body(failed(&error, &Format::Jsonp("cb".into())));
        assert!(text.starts_with("cb({\"subsonic-response\":"), "{text}");
        assert!(text.contains("\"code\":10"), "{text}");
        assert_eq!(Format::parse(Some("jsonp"), Some("alert(1)")), Format::Json);
        assert_eq!(Format::parse(None, None), Format::Xml);
        assert_eq!(Format::parse(Some("JSON"), None), Format::Json);
    }
}
