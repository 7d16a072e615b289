//! Reading a podcast feed: RSS 2.0 (with the iTunes and Podcasting 2.0 tags players use)
//! and Atom, into plain values.
//!
//! A feed is a document from anywhere, so reading it is bounded: its size is the fetch's
//! ([`super::MAX_FEED_BYTES`]), its nesting [`MAX_DEPTH`], its items [`MAX_ITEMS`] (the first
//! ones, which feeds list newest first), every text field a number of characters. A document
//! type declaration is skipped, never read: no entity it declares is expanded, and a
//! reference to one (the "billion laughs" and external-entity attacks) fails the feed. Only
//! XML's five predefined entities and character references are resolved.

use quick_xml::events::{BytesStart, Event};
use time::format_description::well_known::{Rfc2822, Rfc3339};

use crate::Timestamp;

/// Deepest element nesting read.
pub const MAX_DEPTH: usize = 64;
/// Most items read from one feed.
pub const MAX_ITEMS: usize = 10_000;
/// Longest title kept, in characters.
pub const MAX_TITLE_CHARS: usize = 500;
/// Longest description kept, in characters (after markup is removed).
pub const MAX_DESCRIPTION_CHARS: usize = 20_000;
/// Longest text of one element gathered while reading (a description before markup is
/// removed): past it the rest is dropped.
const MAX_ELEMENT_BYTES: usize = 256 * 1024;

/// A feed as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Feed {
    /// The channel's title.
    pub title: String,
    /// Its description, as text.
    pub description: Option<String>,
    /// Its author (`itunes:author`, Atom's author name).
    pub author: Option<String>,
    /// Its web site.
    pub site_url: Option<String>,
    /// Its image.
    pub image_url: Option<String>,
    /// Its items with audio, in the feed's order.
    pub items: Vec<Item>,
}

/// One item of a feed that has audio (an enclosure).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Item {
    /// The item's guid (its enclosure URL when it has none).
    pub guid: String,
    /// Its title.
    pub title: String,
    /// Its description, as text.
    pub description: Option<String>,
    /// When it was published.
    pub published_at: Option<Timestamp>,
    /// Its length (`itunes:duration`), in milliseconds.
    pub duration_ms: Option<i64>,
    /// `itunes:episode` / `podcast:episode`.
    pub episode_number: Option<i64>,
    /// `itunes:season` / `podcast:season`.
    pub season: Option<i64>,
    /// The audio's URL.
    pub enclosure_url: String,
    /// The audio's MIME type, as the feed says.
    pub enclosure_type: Option<String>,
    /// The audio's size in bytes, as the feed says.
    pub enclosure_length: Option<i64>,
    /// The item's own image.
    pub image_url: Option<String>,
    /// `podcast:transcript`: its URL and type (the first one given).
    pub transcript: Option<(String, Option<String>)>,
    /// `podcast:chapters`: its URL.
    pub chapters_url: Option<String>,
}

/// Reads a feed. The error says what is wrong with it, for the subscriber.
pub fn parse(document: &str) -> Result<Feed, String> {
    let mut reader = quick_xml::Reader::from_str(document);
    let mut parser = Parser::default();
    loop {
        let event = reader
            .read_event()
            .map_err(|error| format!("not well-formed XML ({error})"))?;
        match event {
            Event::Start(start) => parser.open(&start)?,
            Event::Empty(start) => {
                parser.open(&start)?;
                parser.close()?;
            }
            Event::End(_) => parser.close()?,
            Event::Text(text) => parser.text(&text.xml10_content()),
            Event::CData(data) => parser.text(&data.xml10_content()),
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(char)) => char.to_string(),
                    Ok(None) => match quick_xml::escape::resolve_predefined_entity(&reference) {
                        Some(text) => text.to_string(),
                        None => {
                            return Err(format!(
                                "refers to the entity &{};, which is not one of XML's own (entities a document declares are never expanded)",
                                &*reference
                            ))
                        }
                    },
                    Err(error) => return Err(format!("a bad character reference ({error})")),
                };
                parser.text(&resolved);
            }
            // Skipped, never read: see the module's documentation.
            Event::DocType(_) | Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    parser.finish()
}

/// What is being read: a path of open elements and what they hold so far.
#[derive(Default)]
struct Parser {
    /// Names of the open elements.
    path: Vec<String>,
    /// The text of the innermost open element.
    text: String,
    /// Whether the root was RSS or Atom.
    kind: Option<Kind>,
    feed: Feed,
    /// The item being read.
    item: Option<Item>,
    items_seen: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rss,
    Atom,
}

impl Parser {
    fn open(&mut self, start: &BytesStart) -> Result<(), String> {
        if self.path.len() >= MAX_DEPTH {
            return Err(format!("nests elements deeper than {MAX_DEPTH}"));
        }
        let name = start.name().0.to_string();
        if self.path.is_empty() {
            self.kind = match name.as_str() {
                "rss" | "rdf:RDF" => Some(Kind::Rss),
                "feed" => Some(Kind::Atom),
                other => {
                    return Err(format!(
                        "is not an RSS or Atom feed (its root element is <{}>)",
                        truncate(other, 40)
                    ))
                }
            };
        }
        self.text.clear();
        let attrs = Attributes::of(start);
        let in_item = self.item.is_some();
        match (self.kind, name.as_str(), in_item) {
            (Some(Kind::Rss), "item", false) | (Some(Kind::Atom), "entry", false) => {
                self.items_seen += 1;
                if self.items_seen <= MAX_ITEMS {
                    self.item = Some(Item::default());
                }
            }
            (_, "enclosure", true) => {
                if let Some(item) = self.item.as_mut() {
                    if item.enclosure_url.is_empty() {
                        item.enclosure_url = attrs.get("url").unwrap_or_default();
                        item.enclosure_type = attrs.get("type");
                        item.enclosure_length = attrs.get("length").and_then(|l| l.parse().ok());
                    }
                }
            }
            (Some(Kind::Atom), "link", in_item) => {
                let rel = attrs.get("rel").unwrap_or_else(|| "alternate".into());
                let href = attrs.get("href");
                match (rel.as_str(), in_item, self.item.as_mut()) {
                    ("enclosure", true, Some(item)) if item.enclosure_url.is_empty() => {
                        item.enclosure_url = href.unwrap_or_default();
                        item.enclosure_type = attrs.get("type");
                        item.enclosure_length = attrs.get("length").and_then(|l| l.parse().ok());
                    }
                    ("alternate", false, _) if self.feed.site_url.is_none() => {
                        self.feed.site_url = href;
                    }
                    _ => {}
                }
            }
            (_, "itunes:image", _) => {
                let href = attrs.get("href");
                match self.item.as_mut() {
                    Some(item) => item.image_url = item.image_url.take().or(href),
                    None => self.feed.image_url = href.or(self.feed.image_url.take()),
                }
            }
            (_, "podcast:transcript", true) => {
                if let (Some(item), Some(url)) = (self.item.as_mut(), attrs.get("url")) {
                    item.transcript.get_or_insert((url, attrs.get("type")));
                }
            }
            (_, "podcast:chapters", true) => {
                if let Some(item) = self.item.as_mut() {
                    item.chapters_url = item.chapters_url.take().or(attrs.get("url"));
                }
            }
            _ => {}
        }
        self.path.push(name);
        Ok(())
    }

    fn text(&mut self, text: &str) {
        if self.text.len() + text.len() <= MAX_ELEMENT_BYTES {
            self.text.push_str(text);
        }
    }

    fn close(&mut self) -> Result<(), String> {
        let Some(name) = self.path.pop() else {
            return Err("closes an element it never opened".into());
        };
        let text = std::mem::take(&mut self.text);
        let text = text.trim();
        let parent = self.path.last().map(String::as_str).unwrap_or_default();
        if let Some(item) = self.item.as_mut() {
            if matches!(name.as_str(), "item" | "entry") {
                let mut item = self.item.take().expect("an item is open");
                if item.guid.is_empty() {
                    item.guid.clone_from(&item.enclosure_url);
                }
                if item.title.is_empty() {
                    item.title = "Untitled episode".into();
                }
                if !item.enclosure_url.is_empty() {
                    self.feed.items.push(item);
                }
                return Ok(());
            }
            if !matches!(parent, "item" | "entry") {
                return Ok(());
            }
            match name.as_str() {
                "title" => item.title = bounded(text, MAX_TITLE_CHARS),
                "guid" | "id" => item.guid = bounded(text, 2048),
                "description" | "summary" | "content:encoded" | "itunes:summary" | "content" => {
                    // The richest wins: content:encoded over description over a summary.
                    let plain = plain_text(text);
                    if !plain.is_empty()
                        && item
                            .description
                            .as_ref()
                            .is_none_or(|kept| kept.len() < plain.len())
                    {
                        item.description = Some(plain);
                    }
                }
                "pubDate" | "published" | "dc:date" => {
                    item.published_at = item.published_at.or_else(|| parse_date(text))
                }
                "updated" => item.published_at = item.published_at.or_else(|| parse_date(text)),
                "itunes:duration" => item.duration_ms = parse_duration(text),
                "itunes:episode" | "podcast:episode" => {
                    item.episode_number = item.episode_number.or_else(|| parse_number(text))
                }
                "itunes:season" | "podcast:season" => {
                    item.season = item.season.or_else(|| parse_number(text))
                }
                _ => {}
            }
            return Ok(());
        }
        let channel_level = match self.kind {
            Some(Kind::Rss) => parent == "channel",
            Some(Kind::Atom) => parent == "feed",
            None => false,
        };
        if channel_level {
            match name.as_str() {
                "title" => self.feed.title = bounded(text, MAX_TITLE_CHARS),
                "description" | "subtitle" | "itunes:summary"
                    if self.feed.description.is_none() =>
                {
                    let plain = plain_text(text);
                    if !plain.is_empty() {
                        self.feed.description = Some(plain);
                    }
                }
                "itunes:author" => self.feed.author = Some(bounded(text, MAX_TITLE_CHARS)),
                "link" if self.kind == Some(Kind::Rss) && !text.is_empty() => {
                    self.feed
                        .site_url
                        .get_or_insert_with(|| bounded(text, 2048));
                }
                _ => {}
            }
        } else if name == "url" && parent == "image" && self.feed.image_url.is_none() {
            self.feed.image_url = Some(bounded(text, 2048));
        } else if name == "name"
            && parent == "author"
            && self.kind == Some(Kind::Atom)
            && self.feed.author.is_none()
        {
            self.feed.author = Some(bounded(text, MAX_TITLE_CHARS));
        }
        Ok(())
    }

    fn finish(self) -> Result<Feed, String> {
        if self.kind.is_none() {
            return Err("is empty: no RSS or Atom feed in it".into());
        }
        if !self.path.is_empty() {
            return Err("ends before its elements are closed".into());
        }
        let mut feed = self.feed;
        if feed.title.is_empty() {
            feed.title = "Untitled podcast".into();
        }
        Ok(feed)
    }
}

/// The attributes of an element, read with the same entity rules as text.
struct Attributes(Vec<(String, String)>);

impl Attributes {
    fn of(start: &BytesStart) -> Attributes {
        Attributes(
            start
                .attributes()
                .flatten()
                .filter_map(|attribute| {
                    let value = attribute
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .ok()?;
                    Some((attribute.key.0.to_string(), value.trim().to_string()))
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| bounded(value, 2048))
    }
}

fn truncate(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A field's text: trimmed, at most `max_chars`, without control characters (a character
/// reference can name one, and XML answers cannot carry most of them).
fn bounded(text: &str, max_chars: usize) -> String {
    text.trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(max_chars)
        .collect()
}

/// A description as text: markup removed (descriptions are HTML, and shown as text, never
/// as HTML), a few common HTML entities decoded, whitespace collapsed, bounded.
pub fn plain_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len().min(MAX_DESCRIPTION_CHARS * 4));
    let mut in_tag = false;
    let mut chars = 0;
    let mut last_space = true;
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        let emit = match c {
            '<' => {
                in_tag = true;
                // A line break or a paragraph reads as a space between words.
                Some(' ')
            }
            '>' if in_tag => {
                in_tag = false;
                None
            }
            _ if in_tag => None,
            '&' => {
                let entity = rest.find(';').filter(|end| *end <= 8).and_then(|end| {
                    let decoded = match &rest[..end] {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" | "#39" => '\'',
                        "nbsp" => ' ',
                        _ => return None,
                    };
                    Some((end, decoded))
                });
                match entity {
                    Some((end, decoded)) => {
                        rest = &rest[end + 1..];
                        Some(decoded)
                    }
                    None => Some('&'),
                }
            }
            c => Some(c),
        };
        let Some(c) = emit else { continue };
        if c.is_whitespace() || c.is_control() {
            if !last_space {
                out.push(' ');
                chars += 1;
                last_space = true;
            }
        } else {
            out.push(c);
            chars += 1;
            last_space = false;
        }
        if chars >= MAX_DESCRIPTION_CHARS {
            break;
        }
    }
    out.trim_end().to_string()
}

/// `pubDate` (RFC 2822, as feeds write it) or an Atom date (RFC 3339).
fn parse_date(text: &str) -> Option<Timestamp> {
    let parsed = time::OffsetDateTime::parse(text, &Rfc2822)
        .or_else(|_| time::OffsetDateTime::parse(text, &Rfc3339))
        .ok()
        .or_else(|| {
            // Zone names RFC 2822 calls obsolete, which feeds still write.
            let (head, zone) = text.rsplit_once(' ')?;
            let offset = match zone {
                "GMT" | "UT" | "UTC" | "Z" => "+0000",
                "EST" => "-0500",
                "EDT" => "-0400",
                "CST" => "-0600",
                "CDT" => "-0500",
                "MST" => "-0700",
                "MDT" => "-0600",
                "PST" => "-0800",
                "PDT" => "-0700",
                _ => return None,
            };
            time::OffsetDateTime::parse(&format!("{head} {offset}"), &Rfc2822).ok()
        })?;
    let micros = parsed.unix_timestamp_nanos() / 1000;
    i64::try_from(micros).ok().map(Timestamp::from_micros)
}

/// `itunes:duration`: seconds (`3605`, `3605.5`) or `[[H:]M:]S`.
fn parse_duration(text: &str) -> Option<i64> {
    let mut seconds = 0f64;
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    for part in parts {
        let value: f64 = part.trim().parse().ok()?;
        if !value.is_finite() || value < 0.0 {
            return None;
        }
        seconds = seconds * 60.0 + value;
    }
    // At most a week: anything longer is a feed's mistake.
    (seconds <= 7.0 * 24.0 * 3600.0).then(|| (seconds * 1000.0).round() as i64)
}

fn parse_number(text: &str) -> Option<i64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0 && *n < 1e9)
        .map(|n| n as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
     xmlns:podcast="https://podcastindex.org/namespace/1.0" xmlns:content="http://purl.org/rss/1.0/modules/content/">
  <channel>
    <title>Night &amp; Day</title>
    <link>https://example.com/show</link>
    <description><![CDATA[<p>A show about <b>music</b>.</p>]]></description>
    <itunes:author>Ann</itunes:author>
    <itunes:image href="https://example.com/cover.jpg"/>
    <item>
      <title>Episode 2: &lt;Live&gt;</title>
      <guid isPermaLink="false">ep-2</guid>
      <pubDate>Tue, 03 Nov 2026 10:00:00 GMT</pubDate>
      <itunes:duration>1:02:03</itunes:duration>
      <itunes:episode>2</itunes:episode>
      <itunes:season>1</itunes:season>
      <enclosure url="https://cdn.example.com/ep2.mp3?a=1&amp;b=2" type="audio/mpeg" length="12345"/>
      <content:encoded><![CDATA[<p>Longer notes, with <a href="x">links</a> &amp; more.</p>]]></content:encoded>
      <description>Short</description>
      <podcast:transcript url="https://example.com/ep2.vtt" type="text/vtt"/>
      <podcast:chapters url="https://example.com/ep2.json" type="application/json+chapters"/>
    </item>
    <item>
      <title>Not audio</title>
      <guid>post</guid>
    </item>
    <item>
      <enclosure url="https://cdn.example.com/ep1.m4a" type="audio/mp4"/>
      <pubDate>Mon, 02 Nov 2026 10:00:00 PST</pubDate>
      <itunes:duration>95</itunes:duration>
    </item>
  </channel>
</rss>"#;

    #[test]
    fn rss_with_itunes_and_podcasting_tags() {
        let feed = parse(RSS).unwrap();
        assert_eq!(feed.title, "Night & Day");
        assert_eq!(feed.description.as_deref(), Some("A show about music ."));
        assert_eq!(feed.author.as_deref(), Some("Ann"));
        assert_eq!(feed.site_url.as_deref(), Some("https://example.com/show"));
        assert_eq!(
            feed.image_url.as_deref(),
            Some("https://example.com/cover.jpg")
        );
        assert_eq!(feed.items.len(), 2, "the item without audio is left out");
        let two = &feed.items[0];
        assert_eq!(two.guid, "ep-2");
        assert_eq!(two.title, "Episode 2: <Live>");
        assert_eq!(two.duration_ms, Some(3_723_000));
        assert_eq!((two.episode_number, two.season), (Some(2), Some(1)));
        assert_eq!(two.enclosure_url, "https://cdn.example.com/ep2.mp3?a=1&b=2");
        assert_eq!(two.enclosure_type.as_deref(), Some("audio/mpeg"));
        assert_eq!(two.enclosure_length, Some(12345));
        assert_eq!(
            two.description.as_deref(),
            Some("Longer notes, with links & more.")
        );
        assert_eq!(
            two.transcript,
            Some((
                "https://example.com/ep2.vtt".into(),
                Some("text/vtt".into())
            ))
        );
        assert_eq!(
            two.chapters_url.as_deref(),
            Some("https://example.com/ep2.json")
        );
        assert_eq!(
            two.published_at.unwrap().to_rfc3339(),
            "2026-11-03T10:00:00Z"
        );
        let one = &feed.items[1];
        assert_eq!(
            one.guid, "https://cdn.example.com/ep1.m4a",
            "no guid: the enclosure"
        );
        assert_eq!(one.title, "Untitled episode");
        assert_eq!(one.duration_ms, Some(95_000));
        assert_eq!(
            one.published_at.unwrap().to_rfc3339(),
            "2026-11-02T18:00:00Z"
        );
    }

    #[test]
    fn atom_with_enclosure_links() {
        let feed = parse(
            r#"<feed xmlns="http://www.w3.org/2005/Atom">
              <title>Atom show</title><subtitle>Sub</subtitle>
              <link rel="alternate" href="https://example.org/"/>
              <author><name>Bo</name></author>
              <entry>
                <title>First</title><id>urn:uuid:1</id>
                <published>2026-10-01T08:00:00Z</published>
                <summary>Hello</summary>
                <link rel="enclosure" href="https://example.org/1.ogg" type="audio/ogg" length="99"/>
              </entry>
            </feed>"#,
        )
        .unwrap();
        assert_eq!(feed.title, "Atom show");
        assert_eq!(feed.author.as_deref(), Some("Bo"));
        assert_eq!(feed.site_url.as_deref(), Some("https://example.org/"));
        let entry = &feed.items[0];
        assert_eq!(entry.guid, "urn:uuid:1");
        assert_eq!(entry.enclosure_url, "https://example.org/1.ogg");
        assert_eq!(entry.enclosure_length, Some(99));
        assert!(entry.published_at.is_some());
    }

    #[test]
    fn declared_entities_are_never_expanded() {
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol9 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<rss><channel><title>&lol9;</title></channel></rss>"#;
        let refused = parse(laughs).unwrap_err();
        assert!(refused.contains("&lol9;"), "{refused}");
        let external = r#"<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<rss><channel><title>&xxe;</title></channel></rss>"#;
        assert!(parse(external).unwrap_err().contains("&xxe;"));
        // In an attribute too.
        let attribute = r#"<!DOCTYPE rss [<!ENTITY u "http://127.0.0.1/">]>
<rss><channel><item><enclosure url="&u;x.mp3"/></item></channel></rss>"#;
        let feed = parse(attribute).unwrap();
        assert!(feed.items.is_empty(), "{feed:?}");
    }

    #[test]
    fn what_is_not_a_feed_says_so() {
        assert!(parse("<html><body>hi</body></html>")
            .unwrap_err()
            .contains("<html>"));
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("<rss><channel>").unwrap_err().contains("closed"));
        assert!(parse("<rss><channel></rss>").is_err());
        let deep = format!("<rss>{}", "<x>".repeat(100));
        assert!(parse(&deep).unwrap_err().contains("deeper"));
    }

    #[test]
    fn descriptions_are_text() {
        assert_eq!(
            plain_text("<script>alert(1)</script><p>Hi&nbsp;there &amp; <b>you</b></p>"),
            "alert(1) Hi there & you"
        );
        assert_eq!(plain_text("a &bogus; b"), "a &bogus; b");
        assert_eq!(
            plain_text(&"x".repeat(MAX_DESCRIPTION_CHARS + 10)).len(),
            MAX_DESCRIPTION_CHARS
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("59"), Some(59_000));
        assert_eq!(parse_duration("1:00"), Some(60_000));
        assert_eq!(parse_duration("01:00:01"), Some(3_601_000));
        assert_eq!(parse_duration("12.5"), Some(12_500));
        assert_eq!(parse_duration("x"), None);
        assert_eq!(parse_duration("1:2:3:4"), None);
        assert_eq!(parse_duration("-5"), None);
    }
}
