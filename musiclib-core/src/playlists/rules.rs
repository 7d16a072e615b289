//! The rules of a smart playlist, in the form of Navidrome's smart playlists (`.nsp` files),
//! so that one imports as it is:
//!
//! ```json
//! { "all": [ { "is": { "loved": true } },
//!            { "any": [ { "contains": { "genre": "jazz" } }, { "inTheRange": { "year": [1955, 1965] } } ] } ],
//!   "sort": "-playcount,title", "order": "asc", "limit": 100 }
//! ```
//!
//! A group (`all`, `any`) holds conditions and groups; a condition is one operator over one
//! field. Fields and operators come from fixed lists ([`FIELDS`], [`Op`]): each field maps to
//! an SQL expression written here, and every value is bound, so nothing of a rule becomes SQL
//! text. Anything musiclib does not know (a field, an operator, a key, a value of the wrong
//! kind) is refused with the path of what is wrong in the error's field
//! (`rules.all[1].any[0].inPlaylist`), never skipped: an imported file means what it says or
//! is not imported. The `.nsp` keys `name`, `comment` and `public` are the playlist's, not
//! rules, and are read by the caller.

use serde_json::{json, Map, Value};

use crate::db::{DatabaseKind, Sql};
use crate::{Error, Result, Timestamp};

/// Deepest nesting of groups.
pub const MAX_DEPTH: usize = 8;
/// Most conditions in all.
pub const MAX_CONDITIONS: usize = 100;
/// Longest text value.
pub const MAX_TEXT: usize = 500;
/// Most tracks a smart playlist holds (a playlist's bound).
pub const MAX_LIMIT: i64 = super::MAX_TRACKS as i64;

/// What kind of value a field holds, which decides the operators it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Number,
    Date,
    Bool,
}

/// What per-user data an expression needs joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Nothing,
    Plays,
    Likes,
    Ratings,
}

/// A field: its names in rules (the first is the canonical one; all are matched without
/// regard to case), its kind, its expression over `tracks t` (and the joins `Needs` adds).
struct Field {
    names: &'static [&'static str],
    kind: Kind,
    expr: &'static str,
    needs: Needs,
}

/// Every field a rule may name.
const FIELDS: &[Field] = &[
    Field { names: &["title"], kind: Kind::Text, expr: "t.title", needs: Needs::Nothing },
    Field { names: &["artist"], kind: Kind::Text, expr: "t.artist_name", needs: Needs::Nothing },
    Field { names: &["album"], kind: Kind::Text, expr: "t.album_title", needs: Needs::Nothing },
    Field { names: &["albumartist"], kind: Kind::Text, expr: "t.album_artist_name", needs: Needs::Nothing },
    Field { names: &["genre"], kind: Kind::Text, expr: "t.genre", needs: Needs::Nothing },
    Field { names: &["filetype", "suffix"], kind: Kind::Text, expr: "t.format", needs: Needs::Nothing },
    Field { names: &["source"], kind: Kind::Text, expr: "t.source", needs: Needs::Nothing },
    Field { names: &["metadatastatus"], kind: Kind::Text, expr: "t.metadata_status", needs: Needs::Nothing },
    Field { names: &["year"], kind: Kind::Number, expr: "t.year", needs: Needs::Nothing },
    Field { names: &["tracknumber"], kind: Kind::Number, expr: "t.track_number", needs: Needs::Nothing },
    Field { names: &["discnumber"], kind: Kind::Number, expr: "t.disc_number", needs: Needs::Nothing },
    // Seconds, as in Navidrome.
    Field { names: &["duration"], kind: Kind::Number, expr: "(t.duration_ms / 1000.0)", needs: Needs::Nothing },
    Field { names: &["bitrate"], kind: Kind::Number, expr: "t.bitrate_kbps", needs: Needs::Nothing },
    Field { names: &["rgtrackgain"], kind: Kind::Number, expr: "t.rg_track_gain", needs: Needs::Nothing },
    Field { names: &["rgalbumgain"], kind: Kind::Number, expr: "t.rg_album_gain", needs: Needs::Nothing },
    Field { names: &["rgtrackpeak"], kind: Kind::Number, expr: "t.rg_track_peak", needs: Needs::Nothing },
    Field { names: &["rgalbumpeak"], kind: Kind::Number, expr: "t.rg_album_peak", needs: Needs::Nothing },
    Field { names: &["dateadded"], kind: Kind::Date, expr: "t.created_at", needs: Needs::Nothing },
    Field { names: &["haslyrics"], kind: Kind::Bool,
        expr: "(CASE WHEN EXISTS (SELECT 1 FROM lyrics ly WHERE ly.track_id = t.id AND ly.status = 'found' AND ly.instrumental = 0) THEN 1 ELSE 0 END)",
        needs: Needs::Nothing },
    Field { names: &["playcount"], kind: Kind::Number, expr: "COALESCE(pl.play_count, 0)", needs: Needs::Plays },
    Field { names: &["lastplayed"], kind: Kind::Date, expr: "pl.last_played", needs: Needs::Plays },
    Field { names: &["loved"], kind: Kind::Bool, expr: "COALESCE(lk.liked, 0)", needs: Needs::Likes },
    Field { names: &["rating"], kind: Kind::Number, expr: "COALESCE(rt.rating, 0)", needs: Needs::Ratings },
];

/// The canonical names of every field, for error messages and clients.
pub fn field_names() -> Vec<&'static str> {
    FIELDS.iter().map(|field| field.names[0]).collect()
}

/// A field a rule may name, as the editor offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// Its canonical name.
    pub name: &'static str,
    /// `text`, `number`, `date` or `bool`.
    pub kind: &'static str,
    /// The operators it takes.
    pub operators: Vec<&'static str>,
}

/// Every field with its kind and operators.
pub fn fields() -> Vec<FieldInfo> {
    FIELDS
        .iter()
        .map(|field| FieldInfo {
            name: field.names[0],
            kind: match field.kind {
                Kind::Text => "text",
                Kind::Number => "number",
                Kind::Date => "date",
                Kind::Bool => "bool",
            },
            operators: OPS
                .iter()
                .filter(|(_, op)| op.takes(field.kind))
                .map(|(name, _)| *name)
                .collect(),
        })
        .collect()
}

fn field(name: &str) -> Option<&'static Field> {
    let wanted = name.to_ascii_lowercase().replace('_', "");
    FIELDS
        .iter()
        .find(|field| field.names.iter().any(|known| *known == wanted))
}

/// An operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Is,
    IsNot,
    Contains,
    NotContains,
    StartsWith,
    EndsWith,
    Gt,
    Lt,
    InTheRange,
    Before,
    After,
    InTheLast,
    NotInTheLast,
}

const OPS: &[(&str, Op)] = &[
    ("is", Op::Is),
    ("isNot", Op::IsNot),
    ("contains", Op::Contains),
    ("notContains", Op::NotContains),
    ("startsWith", Op::StartsWith),
    ("endsWith", Op::EndsWith),
    ("gt", Op::Gt),
    ("lt", Op::Lt),
    ("inTheRange", Op::InTheRange),
    ("before", Op::Before),
    ("after", Op::After),
    ("inTheLast", Op::InTheLast),
    ("notInTheLast", Op::NotInTheLast),
];

impl Op {
    fn parse(name: &str) -> Option<Op> {
        OPS.iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map(|(_, op)| *op)
    }

    fn name(self) -> &'static str {
        OPS.iter()
            .find(|(_, op)| *op == self)
            .map(|(name, _)| *name)
            .unwrap_or("is")
    }

    fn takes(self, kind: Kind) -> bool {
        match self {
            Op::Is | Op::IsNot => true,
            Op::Contains | Op::NotContains | Op::StartsWith | Op::EndsWith => kind == Kind::Text,
            Op::Gt | Op::Lt | Op::InTheRange => matches!(kind, Kind::Number | Kind::Date),
            Op::Before | Op::After | Op::InTheLast | Op::NotInTheLast => kind == Kind::Date,
        }
    }
}

/// A checked value.
#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Text(String),
    Number(f64),
    /// µs since the epoch.
    Date(i64),
    Bool(bool),
    /// Days.
    Days(i64),
    Range(Box<Operand>, Box<Operand>),
}

#[derive(Debug, Clone, PartialEq)]
struct Condition {
    op: Op,
    field: &'static Field,
    value: Operand,
}

impl PartialEq for Field {
    fn eq(&self, other: &Field) -> bool {
        self.names[0] == other.names[0]
    }
}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.names[0])
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Group { any: bool, items: Vec<Node> },
    Condition(Condition),
}

/// What a rule set's result depends on beyond the tracks' rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inputs {
    /// The owner's plays.
    pub plays: bool,
    /// The owner's likes.
    pub likes: bool,
    /// Something without a stamp of its own (ratings, the lyrics cache): the sync clock.
    pub anything: bool,
}

/// How the tracks are ordered.
#[derive(Debug, Clone, PartialEq)]
enum Sort {
    /// By these fields, each ascending (`false`) or descending (`true`).
    Fields(Vec<(&'static Field, bool)>),
    /// Shuffled at each evaluation.
    Random,
}

/// Checked rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    root: Node,
    sort: Sort,
    limit: Option<i64>,
}

/// The keys of an `.nsp` file that belong to the playlist, not its rules.
const PLAYLIST_KEYS: &[&str] = &["name", "comment", "public"];

impl Rules {
    /// Checks rules given as JSON (the `rules` object of a request, or a whole `.nsp` file).
    /// Errors name the path of what is wrong below `rules`.
    pub fn parse(value: &Value) -> Result<Rules> {
        let object = value
            .as_object()
            .ok_or_else(|| invalid("rules", "must be an object with `all` or `any`"))?;
        let mut count = 0;
        let mut root = None;
        let mut sort = None;
        let mut order = None;
        let mut limit = None;
        for (key, value) in object {
            match key.as_str() {
                "all" | "any" => {
                    if root.is_some() {
                        return Err(invalid(
                            &format!("rules.{key}"),
                            "give one of `all` and `any` at the top (nest the other inside it)",
                        ));
                    }
                    root = Some(group(
                        key == "any",
                        value,
                        &format!("rules.{key}"),
                        1,
                        &mut count,
                    )?);
                }
                "sort" => sort = Some(value),
                "order" => order = Some(value),
                "limit" => limit = Some(value),
                key if PLAYLIST_KEYS.contains(&key) => {}
                other => {
                    return Err(invalid(
                        &format!("rules.{other}"),
                        format!(
                            "unknown key {other:?}: rules have all, any, sort, order and limit"
                        ),
                    ))
                }
            }
        }
        let root = root.ok_or_else(|| invalid("rules", "must have `all` or `any`"))?;
        let descending = match order {
            None | Some(Value::Null) => false,
            Some(Value::String(order)) if order.eq_ignore_ascii_case("asc") => false,
            Some(Value::String(order)) if order.eq_ignore_ascii_case("desc") => true,
            Some(_) => return Err(invalid("rules.order", "must be \"asc\" or \"desc\"")),
        };
        let sort = match sort {
            None | Some(Value::Null) => {
                Sort::Fields(vec![(field("title").expect("known"), descending)])
            }
            Some(Value::String(text)) if text.trim().eq_ignore_ascii_case("random") => Sort::Random,
            Some(Value::String(text)) => {
                let mut fields = Vec::new();
                for part in text
                    .split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                {
                    let (flip, name) = match part.as_bytes()[0] {
                        b'-' => (true, &part[1..]),
                        b'+' => (false, &part[1..]),
                        _ => (false, part),
                    };
                    let found = field(name.trim()).ok_or_else(|| {
                        invalid(
                            &format!("rules.sort.{}", name.trim()),
                            format!(
                                "unknown field {:?} to sort by: one of {} or random",
                                name.trim(),
                                field_names().join(", ")
                            ),
                        )
                    })?;
                    fields.push((found, descending != flip));
                }
                if fields.is_empty() || fields.len() > 5 {
                    return Err(invalid(
                        "rules.sort",
                        "must name one to five fields, or random",
                    ));
                }
                Sort::Fields(fields)
            }
            Some(_) => return Err(invalid("rules.sort", "must be a string")),
        };
        let limit = match limit {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_i64() {
                Some(n) if (1..=MAX_LIMIT).contains(&n) => Some(n),
                _ => {
                    return Err(invalid(
                        "rules.limit",
                        format!("must be a whole number from 1 to {MAX_LIMIT}"),
                    ))
                }
            },
        };
        Ok(Rules { root, sort, limit })
    }

    /// The rules as canonical JSON (field names and operators as [`FIELDS`] and the list of
    /// operators spell them; dates as `YYYY-MM-DD`): what is stored and shown.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        let Node::Group { any, items } = &self.root else {
            unreachable!("the root is a group");
        };
        object.insert(
            if *any { "any" } else { "all" }.to_string(),
            Value::Array(items.iter().map(node_json).collect()),
        );
        match &self.sort {
            Sort::Random => {
                object.insert("sort".into(), json!("random"));
            }
            Sort::Fields(fields) => {
                let text: Vec<String> = fields
                    .iter()
                    .map(|(field, descending)| {
                        format!("{}{}", if *descending { "-" } else { "" }, field.names[0])
                    })
                    .collect();
                object.insert("sort".into(), json!(text.join(",")));
            }
        }
        if let Some(limit) = self.limit {
            object.insert("limit".into(), json!(limit));
        }
        Value::Object(object)
    }

    /// What the result depends on beyond the tracks' rows (which every rule reads).
    pub(crate) fn inputs(&self) -> Inputs {
        let mut needs = Vec::new();
        collect_needs(&self.root, &mut needs);
        if let Sort::Fields(fields) = &self.sort {
            needs.extend(fields.iter().map(|(field, _)| field.needs));
        }
        fn lyrics(node: &Node) -> bool {
            match node {
                Node::Group { items, .. } => items.iter().any(lyrics),
                Node::Condition(condition) => condition.field.names[0] == "haslyrics",
            }
        }
        Inputs {
            plays: needs.contains(&Needs::Plays),
            likes: needs.contains(&Needs::Likes),
            // Ratings and the lyrics cache carry no stamp of their own: any change counts.
            anything: needs.contains(&Needs::Ratings) || lyrics(&self.root),
        }
    }

    /// Whether the result depends on the time (`inTheLast`, `notInTheLast`): then it is
    /// evaluated again after a while even when nothing changed.
    pub fn relative_to_now(&self) -> bool {
        fn walk(node: &Node) -> bool {
            match node {
                Node::Group { items, .. } => items.iter().any(walk),
                Node::Condition(condition) => {
                    matches!(condition.op, Op::InTheLast | Op::NotInTheLast)
                }
            }
        }
        walk(&self.root)
    }

    /// The statement selecting the ids of the matching tracks, in order, for `owner` (whose
    /// plays, likes and ratings per-user fields read). Only fixed text of this module is
    /// written into it; every value is bound.
    pub(crate) fn select(&self, kind: DatabaseKind, owner: &str, now: Timestamp) -> Sql {
        let mut needs = Vec::new();
        collect_needs(&self.root, &mut needs);
        if let Sort::Fields(fields) = &self.sort {
            for (field, _) in fields {
                if !needs.contains(&field.needs) {
                    needs.push(field.needs);
                }
            }
        }
        // The owner's plays and latest likes, each read once (materialised: joined to every
        // track, a subquery would otherwise be run again per track).
        let mut sql = Sql::new(kind, "");
        let mut ctes = Vec::new();
        if needs.contains(&Needs::Plays) {
            ctes.push("plays");
        }
        if needs.contains(&Needs::Likes) {
            ctes.push("likes");
        }
        for (index, cte) in ctes.iter().enumerate() {
            sql.push(if index == 0 { "WITH " } else { ", " });
            if *cte == "plays" {
                sql.push(
                    "pl AS MATERIALIZED (SELECT track_id, COUNT(*) AS play_count,
                     MAX(played_at) AS last_played FROM play_events WHERE user_id = ",
                )
                .push_bind(owner)
                .push(" GROUP BY track_id)");
            } else {
                // The latest like event of each track (events of one time: the last written).
                sql.push(
                    "lk AS MATERIALIZED (SELECT le.track_id, le.liked FROM like_events le
                     WHERE le.user_id = ",
                )
                .push_bind(owner)
                .push(
                    " AND NOT EXISTS (SELECT 1 FROM like_events newer
                     WHERE newer.user_id = le.user_id AND newer.track_id = le.track_id
                     AND (newer.event_time > le.event_time
                     OR (newer.event_time = le.event_time AND newer.id > le.id))))",
                );
            }
        }
        sql.push(" SELECT t.id FROM tracks t");
        if needs.contains(&Needs::Plays) {
            sql.push(" LEFT JOIN pl ON pl.track_id = t.id");
        }
        if needs.contains(&Needs::Likes) {
            sql.push(" LEFT JOIN lk ON lk.track_id = t.id");
        }
        if needs.contains(&Needs::Ratings) {
            sql.push(" LEFT JOIN annotations rt ON rt.item_kind = 'track' AND rt.item_id = t.id AND rt.user_id = ")
                .push_bind(owner);
        }
        sql.push(" WHERE (");
        condition_sql(&self.root, &mut sql, now);
        sql.push(")");
        match &self.sort {
            Sort::Random => {
                sql.push(" ORDER BY random()");
            }
            Sort::Fields(fields) => {
                sql.push(" ORDER BY ");
                for (index, (field, descending)) in fields.iter().enumerate() {
                    if index > 0 {
                        sql.push(", ");
                    }
                    // Empty values last either way, as a listener expects.
                    sql.push(&format!(
                        "CASE WHEN {expr} IS NULL THEN 1 ELSE 0 END, {expr} {}",
                        if *descending { "DESC" } else { "ASC" },
                        expr = sort_expr(field),
                    ));
                }
                sql.push(", t.id");
            }
        }
        sql.push(&format!(" LIMIT {}", self.limit.unwrap_or(MAX_LIMIT)));
        sql
    }
}

fn sort_expr(field: &Field) -> String {
    match field.kind {
        Kind::Text => format!("LOWER({})", field.expr),
        _ => field.expr.to_string(),
    }
}

fn collect_needs(node: &Node, needs: &mut Vec<Needs>) {
    match node {
        Node::Group { items, .. } => items.iter().for_each(|item| collect_needs(item, needs)),
        Node::Condition(condition) => {
            if !needs.contains(&condition.field.needs) {
                needs.push(condition.field.needs);
            }
        }
    }
}

fn invalid(field: &str, message: impl Into<String>) -> Error {
    Error::invalid(field, message.into())
}

fn group(any: bool, value: &Value, path: &str, depth: usize, count: &mut usize) -> Result<Node> {
    if depth > MAX_DEPTH {
        return Err(invalid(
            path,
            format!("groups nest at most {MAX_DEPTH} deep"),
        ));
    }
    let items = value
        .as_array()
        .ok_or_else(|| invalid(path, "must be a list of conditions and groups"))?;
    if items.is_empty() {
        return Err(invalid(path, "must hold at least one condition"));
    }
    let mut nodes = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("{path}[{index}]");
        let object = item
            .as_object()
            .filter(|object| object.len() == 1)
            .ok_or_else(|| invalid(&at, "must be an object of one operator or group"))?;
        let (key, inner) = object.iter().next().expect("one entry");
        let at = format!("{at}.{key}");
        if key == "all" || key == "any" {
            nodes.push(group(key == "any", inner, &at, depth + 1, count)?);
            continue;
        }
        *count += 1;
        if *count > MAX_CONDITIONS {
            return Err(invalid(
                &at,
                format!("rules hold at most {MAX_CONDITIONS} conditions"),
            ));
        }
        let op = Op::parse(key).ok_or_else(|| {
            invalid(
                &at,
                format!(
                    "unknown operator {key:?}: one of {}",
                    OPS.iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let pair = inner
            .as_object()
            .filter(|pair| pair.len() == 1)
            .ok_or_else(|| invalid(&at, "must be an object of one field and its value"))?;
        let (name, value) = pair.iter().next().expect("one entry");
        let at = format!("{at}.{name}");
        let found = field(name).ok_or_else(|| {
            invalid(
                &at,
                format!(
                    "unknown field {name:?}: one of {}",
                    field_names().join(", ")
                ),
            )
        })?;
        if !op.takes(found.kind) {
            return Err(invalid(
                &at,
                format!("{} does not apply to {}", op.name(), found.names[0]),
            ));
        }
        let value = operand(op, found.kind, value, &at)?;
        nodes.push(Node::Condition(Condition {
            op,
            field: found,
            value,
        }));
    }
    Ok(Node::Group { any, items: nodes })
}

fn operand(op: Op, kind: Kind, value: &Value, path: &str) -> Result<Operand> {
    match op {
        Op::InTheRange => {
            let pair = value
                .as_array()
                .filter(|pair| pair.len() == 2)
                .ok_or_else(|| invalid(path, "must be a list of two values [from, to]"))?;
            Ok(Operand::Range(
                Box::new(scalar(kind, &pair[0], path)?),
                Box::new(scalar(kind, &pair[1], path)?),
            ))
        }
        Op::InTheLast | Op::NotInTheLast => {
            let days = number(value)
                .filter(|days| days.fract() == 0.0 && (1.0..=36_600.0).contains(days))
                .ok_or_else(|| invalid(path, "must be a number of days from 1 to 36600"))?;
            Ok(Operand::Days(days as i64))
        }
        _ => scalar(kind, value, path),
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|number| number.is_finite())
}

fn scalar(kind: Kind, value: &Value, path: &str) -> Result<Operand> {
    match kind {
        Kind::Text => {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                _ => return Err(invalid(path, "must be text")),
            };
            if text.chars().count() > MAX_TEXT {
                return Err(invalid(
                    path,
                    format!("must be at most {MAX_TEXT} characters"),
                ));
            }
            Ok(Operand::Text(text))
        }
        Kind::Number => number(value)
            .map(Operand::Number)
            .ok_or_else(|| invalid(path, "must be a number")),
        Kind::Bool => match value {
            Value::Bool(flag) => Ok(Operand::Bool(*flag)),
            Value::String(text) if text.eq_ignore_ascii_case("true") => Ok(Operand::Bool(true)),
            Value::String(text) if text.eq_ignore_ascii_case("false") => Ok(Operand::Bool(false)),
            _ => Err(invalid(path, "must be true or false")),
        },
        Kind::Date => {
            let text = value
                .as_str()
                .ok_or_else(|| invalid(path, "must be a date, YYYY-MM-DD"))?;
            date(text)
                .map(Operand::Date)
                .ok_or_else(|| invalid(path, "must be a date, YYYY-MM-DD"))
        }
    }
}

/// `YYYY-MM-DD` (or a whole RFC 3339 time) as µs since the epoch, at midnight UTC.
fn date(text: &str) -> Option<i64> {
    if let Some(at) = Timestamp::parse_rfc3339(text) {
        return Some(at.as_micros());
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let day = time::Date::parse(text.trim(), &format).ok()?;
    Some(day.midnight().assume_utc().unix_timestamp() * 1_000_000)
}

fn date_text(micros: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(micros.div_euclid(1_000_000))
        .map(|at| {
            let date = at.date();
            format!(
                "{:04}-{:02}-{:02}",
                date.year(),
                u8::from(date.month()),
                date.day()
            )
        })
        .unwrap_or_default()
}

fn operand_json(operand: &Operand) -> Value {
    match operand {
        Operand::Text(text) => json!(text),
        Operand::Number(number) if number.fract() == 0.0 && number.abs() < 1e15 => {
            json!(*number as i64)
        }
        Operand::Number(number) => json!(number),
        Operand::Date(micros) => json!(date_text(*micros)),
        Operand::Bool(flag) => json!(flag),
        Operand::Days(days) => json!(days),
        Operand::Range(from, to) => json!([operand_json(from), operand_json(to)]),
    }
}

fn node_json(node: &Node) -> Value {
    match node {
        Node::Group { any, items } => json!({
            (if *any { "any" } else { "all" }): items.iter().map(node_json).collect::<Vec<_>>()
        }),
        Node::Condition(condition) => json!({
            condition.op.name(): { condition.field.names[0]: operand_json(&condition.value) }
        }),
    }
}

/// A `LIKE` pattern matching `text` literally (`\` escapes), lower case.
fn like(prefix: &str, text: &str, suffix: &str) -> String {
    let mut pattern = String::from(prefix);
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push_str(suffix);
    pattern
}

fn bind_scalar(sql: &mut Sql, operand: &Operand) {
    match operand {
        Operand::Text(text) => sql.push_bind(text.to_lowercase()),
        Operand::Number(number) => sql.push_bind(*number),
        Operand::Date(micros) => sql.push_bind(*micros),
        Operand::Bool(flag) => sql.push_bind(i64::from(*flag)),
        Operand::Days(days) => sql.push_bind(*days),
        Operand::Range(..) => sql.push("NULL"),
    };
}

fn condition_sql(node: &Node, sql: &mut Sql, now: Timestamp) {
    match node {
        Node::Group { any, items } => {
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    sql.push(if *any { " OR " } else { " AND " });
                }
                sql.push("(");
                condition_sql(item, sql, now);
                sql.push(")");
            }
        }
        Node::Condition(condition) => {
            let field = condition.field;
            // Text compares without regard to case, on both engines.
            let expr = match field.kind {
                Kind::Text => format!("LOWER({})", field.expr),
                _ => field.expr.to_string(),
            };
            let day = 86_400_000_000i64;
            match (condition.op, &condition.value) {
                (Op::Is, Operand::Date(at)) => {
                    // The whole day.
                    sql.push(&format!("{expr} >= ")).push_bind(*at);
                    sql.push(&format!(" AND {expr} < ")).push_bind(*at + day);
                }
                (Op::IsNot, Operand::Date(at)) => {
                    sql.push(&format!("({expr} IS NULL OR {expr} < "))
                        .push_bind(*at);
                    sql.push(&format!(" OR {expr} >= "))
                        .push_bind(*at + day)
                        .push(")");
                }
                (Op::Is, value) => {
                    sql.push(&format!("{expr} = "));
                    bind_scalar(sql, value);
                }
                (Op::IsNot, value) => {
                    sql.push(&format!("({expr} IS NULL OR {expr} <> "));
                    bind_scalar(sql, value);
                    sql.push(")");
                }
                (Op::Contains | Op::StartsWith | Op::EndsWith, Operand::Text(text)) => {
                    let (prefix, suffix) = match condition.op {
                        Op::Contains => ("%", "%"),
                        Op::StartsWith => ("", "%"),
                        _ => ("%", ""),
                    };
                    sql.push(&format!("{expr} LIKE "))
                        .push_bind(like(prefix, text, suffix))
                        .push(" ESCAPE '\\'");
                }
                (Op::NotContains, Operand::Text(text)) => {
                    sql.push(&format!("({expr} IS NULL OR {expr} NOT LIKE "))
                        .push_bind(like("%", text, "%"))
                        .push(" ESCAPE '\\')");
                }
                (Op::Gt | Op::After, value) => {
                    sql.push(&format!("{expr} > "));
                    bind_scalar(sql, value);
                }
                (Op::Lt | Op::Before, value) => {
                    sql.push(&format!("{expr} < "));
                    bind_scalar(sql, value);
                }
                (Op::InTheRange, Operand::Range(from, to)) => {
                    let to_end = match to.as_ref() {
                        // A range of days includes its last day.
                        Operand::Date(at) => Operand::Date(*at + day - 1),
                        other => other.clone(),
                    };
                    sql.push(&format!("{expr} >= "));
                    bind_scalar(sql, from);
                    sql.push(&format!(" AND {expr} <= "));
                    bind_scalar(sql, &to_end);
                }
                (Op::InTheLast, Operand::Days(days)) => {
                    sql.push(&format!("{expr} >= "))
                        .push_bind(now.as_micros() - days * day);
                }
                (Op::NotInTheLast, Operand::Days(days)) => {
                    sql.push(&format!("({expr} IS NULL OR {expr} < "))
                        .push_bind(now.as_micros() - days * day)
                        .push(")");
                }
                // `parse` pairs each operator with the values it takes.
                _ => {
                    sql.push("1 = 0");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(value: Value) -> Result<Rules> {
        Rules::parse(&value)
    }

    #[test]
    fn an_nsp_file_parses_and_prints_canonically() {
        let rules = parse(json!({
            "name": "Recent loved jazz", "comment": "x",
            "all": [
                {"is": {"loved": true}},
                {"any": [{"contains": {"Genre": "jazz"}}, {"inTheRange": {"year": [1955, 1965]}}]},
                {"inTheLast": {"dateAdded": 30}}
            ],
            "sort": "-playCount,title", "order": "asc", "limit": 100
        }))
        .unwrap();
        assert_eq!(
            rules.to_json(),
            json!({
                "all": [
                    {"is": {"loved": true}},
                    {"any": [{"contains": {"genre": "jazz"}}, {"inTheRange": {"year": [1955, 1965]}}]},
                    {"inTheLast": {"dateadded": 30}}
                ],
                "sort": "-playcount,title", "limit": 100
            })
        );
        assert!(rules.relative_to_now());
        // Canonical JSON parses to the same rules.
        assert_eq!(Rules::parse(&rules.to_json()).unwrap(), rules);
    }

    #[test]
    fn unknown_fields_operators_and_keys_are_refused_by_path() {
        let error =
            parse(json!({"all": [{"is": {"loved": true}}, {"contains": {"comment": "x"}}]}))
                .unwrap_err();
        assert_eq!(error.field(), Some("rules.all[1].contains.comment"));
        let error = parse(json!({"any": [{"inPlaylist": {"id": "x"}}]})).unwrap_err();
        assert_eq!(error.field(), Some("rules.any[0].inPlaylist"));
        let error =
            parse(json!({"all": [{"is": {"title": "x"}}], "limitPercent": 10})).unwrap_err();
        assert_eq!(error.field(), Some("rules.limitPercent"));
        let error = parse(json!({"all": [{"gt": {"title": "x"}}]})).unwrap_err();
        assert_eq!(error.field(), Some("rules.all[0].gt.title"));
        let error = parse(json!({"all": [{"is": {"year": "nineteen"}}]})).unwrap_err();
        assert_eq!(error.field(), Some("rules.all[0].is.year"));
        let error = parse(json!({"all": [{"is": {"title": "x"}}], "sort": "nope"})).unwrap_err();
        assert_eq!(error.field(), Some("rules.sort.nope"));
        assert!(parse(json!({"all": []})).is_err());
        assert!(parse(json!({"all": [{"is": {"title": "x"}}], "limit": 0})).is_err());
    }

    #[test]
    fn values_are_bound_never_written_into_the_statement() {
        let rules = parse(json!({"all": [
            {"is": {"title": "x' OR 1=1; DROP TABLE tracks; --"}},
            {"contains": {"artist": "100%_\\"}}
        ], "sort": "title"}))
        .unwrap();
        let sql = rules.select(DatabaseKind::Sqlite, "user", Timestamp::from_micros(0));
        assert!(!sql.text().contains("DROP"), "{}", sql.text());
        assert!(!sql.text().contains("100%"), "{}", sql.text());
        assert_eq!(like("%", "100%_\\", "%"), "%100\\%\\_\\\\%");
    }

    #[test]
    fn nesting_and_size_are_bounded() {
        let mut deep = json!({"is": {"title": "x"}});
        for _ in 0..MAX_DEPTH + 1 {
            deep = json!({"all": [deep]});
        }
        assert!(Rules::parse(&deep).is_err());
        let many: Vec<Value> = (0..=MAX_CONDITIONS)
            .map(|_| json!({"is": {"year": 1}}))
            .collect();
        assert!(parse(json!({"any": many})).is_err());
    }
}
