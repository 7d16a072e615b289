//! Keyset (cursor) paging of the catalogue lists: a page read after the last row of the
//! previous one, found by its sort key and id on the sort's index, so the thousandth page of
//! a library costs what the first does. Offered for the sorts whose keys are never NULL (a
//! NULL has no place in a row comparison, and the two databases order it apart): tracks by
//! title, creation or last change; albums by title or creation; artists by name.
//!
//! A cursor is opaque to clients: base64url of the sort it belongs to, the last row's key and
//! its id. An empty cursor asks for the first page.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cache::VersionedCache;
use crate::db::{Db, Sql};
use crate::domain::Page;
use crate::ids::{uuid_number, uuid_text};
use crate::{Error, Result};

/// One page read by cursor.
#[derive(Debug, Clone)]
pub struct Chunk<T> {
    /// The page.
    pub items: Vec<T>,
    /// Total matching count.
    pub total: i64,
    /// Page size asked for.
    pub limit: i64,
    /// Where the next page starts; `None` after the last page.
    pub next_cursor: Option<String>,
}

impl<T> Chunk<T> {
    /// Maps the items, keeping the paging.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Chunk<U> {
        Chunk {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            limit: self.limit,
            next_cursor: self.next_cursor,
        }
    }
}

/// The sort key a keyset page walks: a column that is never NULL, and the type it has.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyColumn {
    /// The sort as the cursor names it (`tracks:title`, `albums:-created_at`).
    pub(crate) sort: &'static str,
    /// The column or expression, as its index has it (`lower(t.title)`).
    pub(crate) column: &'static str,
    /// The id column, the tie-breaker (`t.id`).
    pub(crate) id: &'static str,
    /// Whether the key is text (else an integer).
    pub(crate) text: bool,
    /// Descending.
    pub(crate) descending: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Key {
    Int(i64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Position {
    /// The sort the cursor belongs to.
    s: String,
    /// The last row's key.
    k: Key,
    /// The last row's id.
    i: String,
}

const MAX_CURSOR: usize = 2048;

fn encode(position: &Position) -> String {
    let json = serde_json::to_vec(position).expect("a position serializes");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode(cursor: &str, key: &KeyColumn) -> Result<Option<Position>> {
    if cursor.is_empty() {
        return Ok(None);
    }
    let invalid = || Error::invalid("cursor", "not a cursor this list gave out");
    if cursor.len() > MAX_CURSOR {
        return Err(invalid());
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid())?;
    let position: Position = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if position.s != key.sort {
        return Err(Error::invalid(
            "cursor",
            format!(
                "the cursor belongs to the sort {:?}, not {:?}: start again with an empty cursor",
                position.s, key.sort
            ),
        ));
    }
    if matches!(position.k, Key::Text(_)) != key.text {
        return Err(invalid());
    }
    Ok(Some(position))
}

/// The ids of the page after `cursor` of the rows `filters` (a `WHERE` fragment) selects
/// from `from` (`FROM tracks t`, with joins), in `key` order, and the cursor of the next page.
pub(crate) async fn page_ids(
    db: &Db,
    from: &str,
    filters: &Sql,
    key: KeyColumn,
    limit: i64,
    cursor: &str,
) -> Result<(Vec<String>, Option<String>)> {
    page_ids_from(db, from, filters, key, limit, cursor, 0).await
}

/// As [`page_ids`], the page that starts `skip` rows after `cursor`.
pub(crate) async fn page_ids_from(
    db: &Db,
    from: &str,
    filters: &Sql,
    key: KeyColumn,
    limit: i64,
    cursor: &str,
    skip: i64,
) -> Result<(Vec<String>, Option<String>)> {
    let walk = walk_after(filters, &key, decode(cursor, &key)?, limit, skip);
    let rows = fetch_keyed(db, walk.prefixed(&key_head(&key, from)), &key).await?;
    Ok(next_page(rows, &key, limit))
}

/// A row a keyset page can end on: its id is half of the next page's cursor.
pub(crate) trait PageRow {
    /// The row's id.
    fn page_id(&self) -> &str;
}

impl PageRow for String {
    fn page_id(&self) -> &str {
        self
    }
}

/// A row of a keyset page and its sort key.
#[derive(sqlx::FromRow)]
struct KeyedRow<T, K> {
    #[sqlx(flatten)]
    row: T,
    page_key: K,
}

/// As [`page_ids_from`], the page's rows read whole by the same walk, `R` as `fields` (a
/// select list) reads it: no second read of each row by its id. The `skip` rows before the
/// page are walked on the index alone first, so the page's statement reads, and works out
/// the columns of, only the page's rows.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn page_rows_from<R>(
    db: &Db,
    fields: &str,
    from: &str,
    filters: &Sql,
    key: KeyColumn,
    limit: i64,
    cursor: &str,
    skip: i64,
) -> Result<(Vec<R>, Option<String>)>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + PageRow + Send + Unpin,
{
    let mut position = decode(cursor, &key)?;
    if skip > 0 {
        // The rows skipped are found on the index alone (both databases read the page's
        // sort key and id from it), not read whole: the page starts after the last of them.
        let walk = walk_after(filters, &key, position, 0, skip - 1);
        let Some((id, value)) = fetch_keyed(db, walk.prefixed(&key_head(&key, from)), &key)
            .await?
            .pop()
        else {
            return Ok((Vec::new(), None));
        };
        position = Some(Position {
            s: key.sort.to_string(),
            k: value,
            i: id,
        });
    }
    let walk = walk_after(filters, &key, position, limit, 0);
    let select = walk.prefixed(&format!(
        "SELECT {fields}, {column} AS page_key {from}",
        column = key.column
    ));
    let rows: Vec<(R, Key)> = if key.text {
        select
            .fetch_all::<KeyedRow<R, String>, _>(db.pool())
            .await?
            .into_iter()
            .map(|keyed| (keyed.row, Key::Text(keyed.page_key)))
            .collect()
    } else {
        select
            .fetch_all::<KeyedRow<R, i64>, _>(db.pool())
            .await?
            .into_iter()
            .map(|keyed| (keyed.row, Key::Int(keyed.page_key)))
            .collect()
    };
    Ok(next_page(rows, &key, limit))
}

/// The filter, ordering and window (`limit` + 1 rows, to tell whether a page follows) of the
/// walk that starts `skip` rows after `position`.
fn walk_after(
    filters: &Sql,
    key: &KeyColumn,
    position: Option<Position>,
    limit: i64,
    skip: i64,
) -> Sql {
    let mut select = filters.clone();
    let (compare, dir) = if key.descending {
        ("<", "DESC")
    } else {
        (">", "ASC")
    };
    if let Some(position) = &position {
        // The key alone first (`>=`), which SQLite seeks the index with; the row comparison
        // then drops the rows up to the last one read.
        let value = match &position.k {
            Key::Int(value) => select.arg(*value),
            Key::Text(value) => select.arg(value.as_str()),
        };
        let id = select.arg(position.i.as_str());
        select.push_condition().push(&format!(
            "{column} {compare}= {value} AND ({column}, {key_id}) {compare} ({value}, {id})",
            column = key.column,
            key_id = key.id,
        ));
    }
    select.push(&format!(
        " ORDER BY {column} {dir}, {id} {dir} LIMIT {} OFFSET {}",
        limit + 1,
        skip.max(0),
        column = key.column,
        id = key.id,
    ));
    select
}

/// The page of the walk's `rows` (at most `limit` + 1, each with its key) and the cursor of
/// the next page, if there is one.
fn next_page<T>(mut rows: Vec<(T, Key)>, key: &KeyColumn, limit: i64) -> (Vec<T>, Option<String>)
where
    T: PageRow,
{
    let next = if rows.len() as i64 > limit {
        rows.truncate(limit as usize);
        rows.last()
            .map(|(row, value)| cursor_at(key, value.clone(), row.page_id().to_string()))
    } else {
        None
    };
    (rows.into_iter().map(|(row, _)| row).collect(), next)
}

/// The head of a walk that reads each row's id and key alone, from the sort's index.
fn key_head(key: &KeyColumn, from: &str) -> String {
    format!("SELECT {}, {} {from}", key.id, key.column)
}

/// The rows (id, key) of `select`, whose two columns are a row's id and its `key` value.
async fn fetch_keyed(db: &Db, select: Sql, key: &KeyColumn) -> Result<Vec<(String, Key)>> {
    Ok(if key.text {
        select
            .fetch_all::<(String, String), _>(db.pool())
            .await?
            .into_iter()
            .map(|(id, value)| (id, Key::Text(value)))
            .collect()
    } else {
        select
            .fetch_all::<(String, i64), _>(db.pool())
            .await?
            .into_iter()
            .map(|(id, value)| (id, Key::Int(value)))
            .collect()
    })
}

/// The cursor of the page after the row `id` whose key is `value`.
fn cursor_at(key: &KeyColumn, value: Key, id: String) -> String {
    encode(&Position {
        s: key.sort.to_string(),
        k: value,
        i: id,
    })
}

/// The cursors at every `step`-th row of the rows `filters` selects from `from` in `key`
/// order: the n-th (from 1) is where the page at offset n × `step` starts. One walk of the
/// sort's index, numbering its rows.
pub(crate) async fn marks(
    db: &Db,
    from: &str,
    filters: &Sql,
    key: KeyColumn,
    step: i64,
) -> Result<Vec<String>> {
    let dir = if key.descending { "DESC" } else { "ASC" };
    let mut select = filters.prefixed(&format!(
        "SELECT id, sort_key FROM (SELECT {id} AS id, {column} AS sort_key,
                ROW_NUMBER() OVER (ORDER BY {column} {dir}, {id} {dir}) AS n {from}",
        id = key.id,
        column = key.column,
    ));
    select.push(&format!(") numbered WHERE n % {step} = 0 ORDER BY n"));
    Ok(fetch_keyed(db, select, &key)
        .await?
        .into_iter()
        .map(|(id, value)| cursor_at(&key, value, id))
        .collect())
}

/// The name a list's places are kept under: its sort and its filter.
fn list_name(key: &KeyColumn, filters: &Sql) -> String {
    format!("{} {}", key.sort, filters.cache_key())
}

/// Every how many rows of a list a page start is kept as a mark ([`Places`]): a page at any
/// offset skips fewer rows than this.
pub(crate) const MARK_STEP: i64 = 500;

/// Known places in the keyset-sorted lists, so that a page asked for by offset is read by key
/// instead of skipping every row before it. All are valid at the sync clock they were found
/// at: every insert, change and deletion of a track (and so of an album, which comes and goes
/// with its tracks) moves the clock, and what was known is then found again.
///
/// - Bookmarks: each page leaves one (its last row's key) at the offset after it, so a sync
///   app reading the whole library by offset, page after page (Subsonic `search3`), pays
///   for each page what the first costs.
/// - Marks: the key of every [`MARK_STEP`]-th row, found by one numbered walk of the sort's
///   index, in the background, the first time a page deeper than that is wanted; a page
///   then skips fewer than `MARK_STEP` rows.
/// - Orders, for the sorts a row comparison cannot resume (keys that may be NULL, over
///   several columns: tracks by artist, album, year, number or length): every id of the
///   list in sort order, as 16-byte UUIDs (1.6 MB for 100,000 tracks), read by one walk of
///   the sort's index in the background the first time a deep page is wanted. A page is then
///   a slice of it.
#[derive(Debug)]
pub(crate) struct Places {
    bookmarks: VersionedCache<(String, i64), i64, String>,
    marks: Arc<VersionedCache<String, i64, Arc<Vec<String>>>>,
    orders: Arc<VersionedCache<String, i64, Arc<Vec<u128>>>>,
    /// The lists whose marks or order are being found.
    marking: Arc<Mutex<HashSet<String>>>,
}

impl Default for Places {
    fn default() -> Self {
        Places {
            bookmarks: VersionedCache::new("page_bookmarks", Duration::from_secs(600), 4096),
            marks: Arc::new(VersionedCache::new(
                "page_marks",
                Duration::from_secs(600),
                64,
            )),
            // A few lists: each holds every id of its list.
            orders: Arc::new(VersionedCache::new(
                "list_orders",
                Duration::from_secs(600),
                8,
            )),
            marking: Default::default(),
        }
    }
}

impl Places {
    /// The ids of the page `page` of the rows `filters` selects from `from` in `key` order,
    /// read from a known place at `clock` (the sync clock, read before), leaving the bookmark
    /// of the page after it; `None` when no place is known (a shallow page without a
    /// bookmark, or marks still being found): read it by offset.
    pub(crate) async fn page(
        &self,
        db: &Db,
        from: &'static str,
        filters: &Sql,
        key: KeyColumn,
        page: Page,
        clock: i64,
    ) -> Result<Option<Vec<String>>> {
        self.read_from_place(
            db,
            from,
            filters,
            key,
            page,
            clock,
            |cursor, skip| async move {
                page_ids_from(db, from, filters, key, page.limit(), &cursor, skip).await
            },
        )
        .await
    }

    /// As [`Places::page`], the page's rows read whole by the walk that finds them
    /// ([`page_rows_from`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn page_rows<R>(
        &self,
        db: &Db,
        fields: &str,
        from: &'static str,
        filters: &Sql,
        key: KeyColumn,
        page: Page,
        clock: i64,
    ) -> Result<Option<Vec<R>>>
    where
        R: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + PageRow + Send + Unpin,
    {
        self.read_from_place(
            db,
            from,
            filters,
            key,
            page,
            clock,
            |cursor, skip| async move {
                page_rows_from(db, fields, from, filters, key, page.limit(), &cursor, skip).await
            },
        )
        .await
    }

    /// The page `page` read by `read` (from a cursor, skipping some rows) at the place
    /// [`Places::start`] finds, leaving the bookmark of the page after it; `None` when no
    /// place is known.
    #[allow(clippy::too_many_arguments)]
    async fn read_from_place<T, F, Fut>(
        &self,
        db: &Db,
        from: &'static str,
        filters: &Sql,
        key: KeyColumn,
        page: Page,
        clock: i64,
        read: F,
    ) -> Result<Option<Vec<T>>>
    where
        F: FnOnce(String, i64) -> Fut,
        Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>)>>,
    {
        let list = list_name(&key, filters);
        Ok(
            match self.start(db, from, filters, key, page, clock, &list) {
                None => None,
                Some(None) => Some(Vec::new()),
                Some(Some((cursor, skip))) => {
                    let (rows, next) = read(cursor, skip).await?;
                    self.leave_bookmark(list, page, clock, next);
                    Some(rows)
                }
            },
        )
    }

    /// Where the page `page` of `list` starts at `clock`: the cursor to walk from and how
    /// many rows to skip after it, `Some(None)` when it is past the end of the list, `None`
    /// when no place is known (finding the list's marks if the page is deep).
    #[allow(clippy::too_many_arguments, clippy::option_option)]
    fn start(
        &self,
        db: &Db,
        from: &'static str,
        filters: &Sql,
        key: KeyColumn,
        page: Page,
        clock: i64,
        list: &str,
    ) -> Option<Option<(String, i64)>> {
        if page.offset() == 0 {
            return Some(Some((String::new(), 0)));
        }
        if let Some(cursor) = self
            .bookmarks
            .get(&(list.to_string(), page.offset()), &clock)
        {
            return Some(Some((cursor, 0)));
        }
        if page.offset() < MARK_STEP {
            return None;
        }
        let Some(marks) = self.marks.get(&list.to_string(), &clock) else {
            self.find_marks(db, from, filters, key, list.to_string(), clock);
            return None;
        };
        // Past the last mark by a whole step: past the end of the list.
        Some(
            marks
                .get((page.offset() / MARK_STEP - 1) as usize)
                .map(|cursor| (cursor.clone(), page.offset() % MARK_STEP)),
        )
    }

    /// Keeps `next`, the cursor after page `page` of `list`, as the start of the page after.
    fn leave_bookmark(&self, list: String, page: Page, clock: i64, next: Option<String>) {
        if let Some(next) = next {
            self.bookmarks
                .insert((list, page.offset() + page.limit()), clock, next);
        }
    }

    /// The ids of page `page` of the rows `head` (`SELECT <id> FROM …`) selects with
    /// `filters`, in `order`, and the list's length, from the list's order in memory; `None`
    /// for a shallow page (an offset walk is as cheap) or while the order is being found:
    /// read it by offset.
    pub(crate) async fn page_in_order(
        &self,
        db: &Db,
        head: &str,
        filters: &Sql,
        order: &str,
        page: Page,
    ) -> Result<Option<(Vec<String>, i64)>> {
        if page.offset() < MARK_STEP {
            return Ok(None);
        }
        let clock = db.sync_clock().await?;
        let mut ids = filters.prefixed(head);
        ids.push(&format!(" ORDER BY {order}"));
        let list = format!("{head} ORDER BY {order} {}", filters.cache_key());
        Ok(self.page_in_order_at(db, list, &ids, page, clock))
    }

    /// As [`Places::page_in_order`], for the list `ids` selects (every id, in the list's
    /// order), named `list`, at `clock`.
    fn page_in_order_at(
        &self,
        db: &Db,
        list: String,
        ids: &Sql,
        page: Page,
        clock: i64,
    ) -> Option<(Vec<String>, i64)> {
        if page.offset() < MARK_STEP {
            return None;
        }
        let Some(order) = self.orders.get(&list, &clock) else {
            self.find_order(db, ids, list, clock);
            return None;
        };
        let len = order.len() as i64;
        let start = page.offset().min(len);
        let end = (page.offset() + page.limit()).min(len);
        let ids = order[start as usize..end as usize]
            .iter()
            .map(|id| uuid_text(*id))
            .collect();
        Some((ids, len))
    }

    /// Reads the order of a list in the background (see [`Places::walk_once`]). A list
    /// holding an id that is not a UUID keeps no order.
    fn find_order(&self, db: &Db, ids: &Sql, list: String, clock: i64) {
        let (db, orders, ids) = (db.clone(), self.orders.clone(), ids.clone());
        self.walk_once(list.clone(), async move {
            use futures::TryStreamExt;
            let read = ids
                .fetch::<(String,)>(db.pool())
                .try_fold(Some(Vec::new()), |order, (id,)| async move {
                    Ok(order.and_then(|mut order: Vec<u128>| {
                        order.push(uuid_number(&id)?);
                        Some(order)
                    }))
                })
                .await;
            match read {
                Ok(Some(order)) => orders.insert(list, clock, Arc::new(order)),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, "reading a list's order"),
            }
        });
    }

    /// Finds the marks of a list in the background (see [`Places::walk_once`]).
    fn find_marks(
        &self,
        db: &Db,
        from: &'static str,
        filters: &Sql,
        key: KeyColumn,
        list: String,
        clock: i64,
    ) {
        let (db, marks, filters) = (db.clone(), self.marks.clone(), filters.clone());
        self.walk_once(list.clone(), async move {
            match self::marks(&db, from, &filters, key, MARK_STEP).await {
                Ok(found) => marks.insert(list, clock, Arc::new(found)),
                Err(error) => tracing::warn!(%error, "finding where a list's pages start"),
            }
        });
    }

    /// Whether no background walk (of marks or of an order) is running.
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn walks_settled(&self) -> bool {
        self.marking.lock().expect("poisoned").is_empty()
    }

    /// Runs `walk` (a walk of the list `list`) in the background unless one is running: a
    /// library being imported changes at every track, and a walk for every deep page would
    /// cost more than the offsets it saves. What a walk finds after the clock was read is no
    /// older than it.
    fn walk_once(
        &self,
        list: String,
        walk: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        if !self.marking.lock().expect("poisoned").insert(list.clone()) {
            return;
        }
        let marking = self.marking.clone();
        tokio::spawn(async move {
            walk.await;
            marking.lock().expect("poisoned").remove(&list);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TITLE: KeyColumn = KeyColumn {
        sort: "tracks:title",
        column: "lower(t.title)",
        id: "t.id",
        text: true,
        descending: false,
    };

    #[tokio::test]
    async fn a_deep_page_in_order_is_a_slice_of_the_order_at_its_clock() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&format!("sqlite://{}", dir.path().join("o.db").display()))
            .await
            .unwrap();
        let places = Places::default();
        let order: Vec<u128> = (0..1_200).map(|_| uuid::Uuid::now_v7().as_u128()).collect();
        places
            .orders
            .insert("list".into(), 7, Arc::new(order.clone()));
        let text = |ids: &[u128]| ids.iter().map(|id| uuid_text(*id)).collect::<Vec<_>>();
        // Rows that are not ids: their list keeps no order.
        let ids = db.sql("SELECT 'not an id' UNION ALL SELECT 'nor this'");
        let page = |offset, clock| {
            places.page_in_order_at(
                &db,
                "list".into(),
                &ids,
                Page::new(Some(50), Some(offset)).unwrap(),
                clock,
            )
        };
        // A shallow page is read by offset.
        assert_eq!(page(499, 7), None);
        assert_eq!(page(500, 7), Some((text(&order[500..550]), 1_200)));
        assert_eq!(page(1_170, 7), Some((text(&order[1_170..]), 1_200)));
        assert_eq!(page(1_300, 7), Some((Vec::new(), 1_200)));
        // At another clock the order is read again (here: rows that are no ids, so none).
        assert_eq!(page(500, 8), None);
        // The walk it started ends (the deadline only guards against a hang).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !places.marking.lock().unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "the walk never ended");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(places.orders.get(&"list".to_string(), &8).is_none());
        assert_eq!(page(500, 7), Some((text(&order[500..550]), 1_200)));
    }

    #[test]
    fn cursors_round_trip_and_belong_to_their_sort() {
        let position = Position {
            s: "tracks:title".into(),
            k: Key::Text("love song".into()),
            i: "abc".into(),
        };
        let cursor = encode(&position);
        assert_eq!(decode(&cursor, &TITLE).unwrap(), Some(position));
        assert_eq!(decode("", &TITLE).unwrap(), None);
        for bad in ["%%%", "bm90IGpzb24", &"A".repeat(5000)] {
            let error = decode(bad, &TITLE).unwrap_err();
            assert_eq!(error.kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
        let other = encode(&Position {
            s: "tracks:-title".into(),
            k: Key::Text("x".into()),
            i: "abc".into(),
        });
        let error = decode(&other, &TITLE).unwrap_err();
        assert!(
            format!("{error}").contains("belongs to the sort"),
            "{error}"
        );
        let wrong_type = encode(&Position {
            s: "tracks:title".into(),
            k: Key::Int(3),
            i: "abc".into(),
        });
        assert!(decode(&wrong_type, &TITLE).is_err());
    }
}
