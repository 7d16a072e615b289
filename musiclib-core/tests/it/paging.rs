//! Lists of a large library: pages at any offset and in every documented sort are the same
//! rows, in the same order, as one long read (the offset is skipped over the sort's index,
//! and only the page's rows are read in full), and the library search's short queries answer
//! the shortest matching titles first.

use musiclib_core::auth::Caller;
use musiclib_core::catalog::{
    AlbumFilter, AlbumList, AlbumSortKey, Sort, TrackFilter, TrackSortKey,
};
use musiclib_core::domain::Page;

use crate::backend_test;
use crate::support::*;

const TRACKS: usize = 180;

/// One key of a documented sort order, as a row holds it.
#[derive(Debug, Clone)]
enum Key {
    /// Compared lower-cased, in the database's collation (`lower(...)`, as the sorts do).
    Text(Option<String>),
    Number(Option<i64>),
}

/// The keys of a track in the documented order of `key` (`catalog::query::track_order`),
/// then its id (every column in the sort's direction).
fn track_keys(key: TrackSortKey, t: &musiclib_core::domain::Track) -> (Vec<Key>, String) {
    use Key::{Number, Text};
    let keys = match key {
        TrackSortKey::Title => vec![Text(Some(t.title.clone()))],
        TrackSortKey::Artist => vec![
            Text(t.artist_name.clone()),
            Text(t.album_title.clone()),
            Number(t.disc_number),
            Number(t.track_number),
        ],
        TrackSortKey::Album => vec![
            Text(t.album_title.clone()),
            Number(t.disc_number),
            Number(t.track_number),
        ],
        TrackSortKey::Year => vec![Number(t.year)],
        TrackSortKey::TrackNumber => vec![Number(t.disc_number), Number(t.track_number)],
        TrackSortKey::Duration => vec![Number(t.duration_ms)],
        TrackSortKey::CreatedAt => vec![Number(Some(t.created_at.as_micros()))],
        TrackSortKey::UpdatedAt => vec![Number(Some(t.updated_at.as_micros()))],
    };
    (keys, t.id.to_string())
}

/// The keys of an album in the documented order of `key` (`catalog::query::album_order`),
/// then its id; by artist, the albums without one come last either way (checked apart).
fn album_keys(key: AlbumSortKey, a: &musiclib_core::domain::Album) -> (Vec<Key>, String) {
    use Key::{Number, Text};
    let title = Text(Some(musiclib_core::text::name_key(&a.title)));
    let keys = match key {
        AlbumSortKey::Title => vec![title],
        AlbumSortKey::Artist => vec![
            Text(a.artist_name.clone()),
            Text(a.artist_id.as_ref().map(|id| id.to_string())),
            title,
        ],
        AlbumSortKey::Year => vec![Number(a.year), title],
        AlbumSortKey::CreatedAt => vec![Number(Some(a.created_at.as_micros()))],
    };
    (keys, a.id.to_string())
}

/// How the database orders each pair of texts, lower-cased (its collation: byte order on
/// SQLite, the database's own on PostgreSQL, which may order spaces and punctuation
/// otherwise).
async fn text_orders(
    library: &TestLibrary,
    pairs: Vec<(String, String)>,
) -> std::collections::HashMap<(String, String), std::cmp::Ordering> {
    let mut orders = std::collections::HashMap::new();
    let pairs: Vec<(String, String)> = pairs
        .into_iter()
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    for chunk in pairs.chunks(300) {
        let placeholder = |n: usize| match library.backend {
            Backend::Embedded => format!("?{n}"),
            Backend::ScaleOut => format!("${n}"),
        };
        let rows: Vec<String> = (0..chunk.len())
            .map(|index| {
                format!(
                    "SELECT CAST({index} AS BIGINT) AS n, CAST({} AS TEXT) AS a, CAST({} AS TEXT) AS b",
                    placeholder(2 * index + 1),
                    placeholder(2 * index + 2)
                )
            })
            .collect();
        let sql = format!(
            "SELECT n, CAST(CASE WHEN lower(a) < lower(b) THEN -1 WHEN lower(a) = lower(b) THEN 0 ELSE 1 END AS BIGINT)
             FROM ({}) p ORDER BY n",
            rows.join(" UNION ALL ")
        );
        let mut query = sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(sql));
        for (a, b) in chunk {
            query = query.bind(a.clone()).bind(b.clone());
        }
        let answers = query
            .fetch_all(musiclib_core::testing::pool(library))
            .await
            .expect("compare texts");
        assert_eq!(answers.len(), chunk.len());
        for (position, ((index, order), pair)) in answers.into_iter().zip(chunk).enumerate() {
            assert_eq!(index as usize, position, "the answers in the pairs' order");
            orders.insert(pair.clone(), order.cmp(&0));
        }
    }
    orders
}

/// Asserts `rows` (keys, id) are in their documented order: each key ascending (or all
/// descending), NULLs after values ascending on PostgreSQL and before them on SQLite (the
/// other way round descending), ties broken by the id.
async fn assert_in_order(
    library: &TestLibrary,
    rows: &[(Vec<Key>, String)],
    descending: bool,
    what: &str,
) {
    use std::cmp::Ordering;
    let mut pairs = Vec::new();
    for pair in rows.windows(2) {
        for (a, b) in pair[0].0.iter().zip(&pair[1].0) {
            if let (Key::Text(Some(a)), Key::Text(Some(b))) = (a, b) {
                pairs.push((a.clone(), b.clone()));
            }
        }
    }
    let texts = text_orders(library, pairs).await;
    let nulls_first = library.backend == Backend::Embedded;
    let nullable = |a: Option<()>, b: Option<()>| match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) if nulls_first => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) if nulls_first => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(_), Some(_)) => Ordering::Equal,
    };
    for (index, pair) in rows.windows(2).enumerate() {
        let ((keys_a, id_a), (keys_b, id_b)) = (&pair[0], &pair[1]);
        let mut order = Ordering::Equal;
        for (a, b) in keys_a.iter().zip(keys_b) {
            order = match (a, b) {
                (Key::Text(Some(a)), Key::Text(Some(b))) => texts[&(a.clone(), b.clone())],
                (Key::Text(a), Key::Text(b)) => {
                    nullable(a.as_ref().map(|_| ()), b.as_ref().map(|_| ()))
                }
                (Key::Number(Some(a)), Key::Number(Some(b))) => a.cmp(b),
                (Key::Number(a), Key::Number(b)) => nullable(a.map(|_| ()), b.map(|_| ())),
                _ => unreachable!("keys of one order"),
            };
            if order != Ordering::Equal {
                break;
            }
        }
        // (Ids are UUIDs of one shape: every collation orders them as their bytes.)
        let order = order.then_with(|| id_a.cmp(id_b));
        let expected = if descending {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        assert_eq!(
            order,
            expected,
            "{what}: rows {index} and {} out of order: {pair:?}",
            index + 1
        );
    }
}

/// [`assert_in_order`] for tracks in the order of `sort`.
async fn assert_tracks_in_order(
    library: &TestLibrary,
    tracks: &[musiclib_core::domain::Track],
    sort: Sort<TrackSortKey>,
    what: &str,
) {
    let rows: Vec<_> = tracks.iter().map(|t| track_keys(sort.key, t)).collect();
    assert_in_order(library, &rows, sort.descending, what).await;
}

/// [`assert_in_order`] for albums in the order of `sort`: by artist, those without one last.
async fn assert_albums_in_order(
    library: &TestLibrary,
    albums: &[musiclib_core::domain::Album],
    sort: Sort<AlbumSortKey>,
    what: &str,
) {
    let with_artist = albums.iter().take_while(|a| a.artist_id.is_some()).count();
    let (first, rest) = if sort.key == AlbumSortKey::Artist {
        assert!(
            rest_without_artist(&albums[with_artist..]),
            "{what}: albums without artist not last"
        );
        albums.split_at(with_artist)
    } else {
        (albums, &albums[albums.len()..])
    };
    let rows: Vec<_> = first.iter().map(|a| album_keys(sort.key, a)).collect();
    assert_in_order(library, &rows, sort.descending, what).await;
    // Those without an artist: by title, then id, in the sort's direction.
    let rows: Vec<_> = rest
        .iter()
        .map(|a| album_keys(AlbumSortKey::Title, a))
        .collect();
    assert_in_order(library, &rows, sort.descending, what).await;
}

fn rest_without_artist(albums: &[musiclib_core::domain::Album]) -> bool {
    albums.iter().all(|a| a.artist_id.is_none())
}

/// Every page of `read` (pages of `size`), concatenated, with the total each page reported.
async fn all_pages<T, F, Fut>(size: i64, count: usize, read: F) -> (Vec<T>, Vec<i64>)
where
    F: Fn(Page) -> Fut,
    Fut: std::future::Future<Output = musiclib_core::Result<musiclib_core::domain::Paged<T>>>,
{
    let mut items = Vec::new();
    let mut totals = Vec::new();
    let mut offset = 0;
    while (offset as usize) < count + size as usize {
        let page = read(Page::new(Some(size), Some(offset)).unwrap())
            .await
            .unwrap();
        totals.push(page.total);
        let done = page.items.is_empty();
        items.extend(page.items);
        if done {
            break;
        }
        offset += size;
    }
    (items, totals)
}

/// A new user of `library`, as a caller.
async fn new_caller(library: &TestLibrary, name: &str, admin: bool) -> Caller {
    Caller {
        user: library
            .accounts()
            .create_user(name, "long enough password", admin)
            .await
            .unwrap(),
    }
}

/// The first `count` tracks of `library` in the default order.
async fn first_tracks(library: &TestLibrary, count: i64) -> Vec<musiclib_core::domain::Track> {
    library
        .catalog()
        .list_tracks(
            &TrackFilter::default(),
            None,
            Page::new(Some(count), None).unwrap(),
        )
        .await
        .unwrap()
        .items
}

backend_test! {
    async fn pages_at_any_offset_are_one_read_in_every_sort(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, TRACKS, 7).await;
        let catalog = library.catalog();
        for name in TrackSortKey::NAMES {
            for descending in [false, true] {
                let sort = Sort { key: TrackSortKey::parse(name).unwrap(), descending };
                let whole = catalog
                    .list_tracks(&TrackFilter::default(), Some(sort), Page::new(Some(200), None).unwrap())
                    .await
                    .unwrap();
                assert_eq!(whole.total, TRACKS as i64);
                assert_eq!(whole.items.len(), TRACKS);
                assert_tracks_in_order(&library, &whole.items, sort, &format!("sort {name} descending {descending}")).await;
                let everything = TrackFilter::default();
                let (paged, totals) = all_pages(37, TRACKS, |page| {
                    catalog.list_tracks(&everything, Some(sort), page)
                })
                .await;
                let ids = |tracks: &[musiclib_core::domain::Track]| {
                    tracks.iter().map(|t| t.id.to_string()).collect::<Vec<_>>()
                };
                assert_eq!(ids(&paged), ids(&whole.items), "sort {name} descending {descending}");
                assert!(totals.iter().all(|total| *total == TRACKS as i64), "{totals:?}");
                // Pages read without counting the list are the same pages.
                let mut uncounted = Vec::new();
                for offset in (0..TRACKS + 37).step_by(37) {
                    let page = Page::new(Some(37), Some(offset as i64)).unwrap();
                    uncounted.extend(catalog.track_page(&everything, Some(sort), page).await.unwrap());
                }
                assert_eq!(ids(&uncounted), ids(&whole.items), "track_page, sort {name} descending {descending}");
            }
        }
        // Sorted by title, case-insensitive: the order of the lower-cased titles.
        let by_title = catalog
            .list_tracks(
                &TrackFilter::default(),
                Some(Sort { key: TrackSortKey::Title, descending: false }),
                Page::new(Some(200), None).unwrap(),
            )
            .await
            .unwrap();
        let titles: Vec<String> = by_title.items.iter().map(|t| t.title.to_lowercase()).collect();
        let mut sorted = titles.clone();
        sorted.sort();
        // The collations may order spaces differently; the first letters never disagree.
        let firsts = |titles: &[String]| titles.iter().map(|t| t.chars().next()).collect::<Vec<_>>();
        assert_eq!(firsts(&titles), firsts(&sorted));

        // A filter with the deep page: the genre's tracks only, in the same order paged.
        let genre = by_title.items[0].genre.clone().unwrap();
        let jazz = TrackFilter { genre: Some(genre.to_uppercase()), ..Default::default() };
        let whole = catalog
            .list_tracks(&jazz, None, Page::new(Some(200), None).unwrap())
            .await
            .unwrap();
        assert!(whole.total > 0 && whole.items.iter().all(|t| t.genre.as_ref() == Some(&genre)));
        let (paged, _) = all_pages(3, whole.items.len(), |page| catalog.list_tracks(&jazz, None, page)).await;
        assert_eq!(
            paged.iter().map(|t| &t.id).collect::<Vec<_>>(),
            whole.items.iter().map(|t| &t.id).collect::<Vec<_>>()
        );

        // Albums in every sort, and artists. Two albums lose their artist: they come after
        // the others when sorted by artist, either way.
        let orphaned = musiclib_core::testing::execute(
            &library,
            "UPDATE albums SET artist_id = NULL WHERE id IN (SELECT id FROM albums ORDER BY id LIMIT 2)",
            &[],
        )
        .await;
        assert_eq!(orphaned, 2);
        for key in [AlbumSortKey::Title, AlbumSortKey::Artist, AlbumSortKey::Year, AlbumSortKey::CreatedAt] {
            for descending in [false, true] {
                let sort = Sort { key, descending };
                let whole = catalog
                    .list_albums(&AlbumFilter::default(), Some(sort), Page::new(Some(200), None).unwrap())
                    .await
                    .unwrap();
                assert_eq!(whole.items.len(), TRACKS / 10);
                assert!(whole.items.iter().all(|album| album.track_count == 10));
                assert_albums_in_order(&library, &whole.items, sort, &format!("albums {key:?} {descending}")).await;
                let every_album = AlbumFilter::default();
                let (paged, _) = all_pages(4, whole.items.len(), |page| {
                    catalog.list_albums(&every_album, Some(sort), page)
                })
                .await;
                assert_eq!(
                    paged.iter().map(|a| &a.id).collect::<Vec<_>>(),
                    whole.items.iter().map(|a| &a.id).collect::<Vec<_>>(),
                    "{key:?} {descending}"
                );
                if key == AlbumSortKey::Artist {
                    let names: Vec<Option<String>> =
                        whole.items.iter().map(|a| a.artist_name.as_ref().map(|n| n.to_lowercase())).collect();
                    assert!(names[..names.len() - 2].iter().all(Option::is_some) && names[names.len() - 2..].iter().all(Option::is_none), "{names:?}");
                    let mut sorted = names.clone();
                    sorted[..names.len() - 2].sort();
                    if descending {
                        sorted[..names.len() - 2].reverse();
                    }
                    assert_eq!(names, sorted);
                    // A filter that keeps every album sorts in the database: the same order.
                    let everything = AlbumFilter { q: Some(" ".into()), ..Default::default() };
                    let filtered = catalog.list_albums(&everything, Some(sort), Page::new(Some(200), None).unwrap()).await.unwrap();
                    assert_eq!(
                        filtered.items.iter().map(|a| &a.id).collect::<Vec<_>>(),
                        whole.items.iter().map(|a| &a.id).collect::<Vec<_>>(),
                        "{descending}"
                    );
                }
            }
        }
        let whole = catalog.list_artists(None, Page::new(Some(200), None).unwrap()).await.unwrap();
        let (paged, _) = all_pages(1, whole.items.len(), |page| catalog.list_artists(None, page)).await;
        assert_eq!(
            paged.iter().map(|a| &a.id).collect::<Vec<_>>(),
            whole.items.iter().map(|a| &a.id).collect::<Vec<_>>()
        );

        // The legacy album lists read ids first, then rows: same albums, same order, with
        // their counts.
        let caller: Caller = user(&library, "lister").await;
        for kind in [AlbumList::AlphabeticalByName, AlbumList::AlphabeticalByArtist, AlbumList::Newest] {
            let whole = catalog.album_list(&caller, &kind, Page::clamped(500, 0, 500)).await.unwrap();
            assert_eq!(whole.len(), TRACKS / 10, "{kind:?}");
            let mut paged = Vec::new();
            for offset in (0..TRACKS / 10).step_by(5) {
                paged.extend(catalog.album_list(&caller, &kind, Page::clamped(5, offset as i64, 500)).await.unwrap());
            }
            assert_eq!(
                paged.iter().map(|a| (&a.id, a.track_count, a.duration_ms)).collect::<Vec<_>>(),
                whole.iter().map(|a| (&a.id, a.track_count, a.duration_ms)).collect::<Vec<_>>(),
                "{kind:?}"
            );
        }

        // Tracks with audio only: a placeholder is left out of the pages and of the count.
        let all = first_tracks(&library, 200).await;
        let gone = all[5].id.clone();
        musiclib_core::testing::make_placeholder(&library, &gone).await;
        let with_audio = TrackFilter { with_audio: true, ..Default::default() };
        let listed = catalog.list_tracks(&with_audio, None, Page::new(Some(200), None).unwrap()).await.unwrap();
        assert_eq!(listed.total, TRACKS as i64 - 1);
        let (paged, _) = all_pages(7, TRACKS, |page| catalog.list_tracks(&with_audio, None, page)).await;
        let expected: Vec<_> = all.iter().map(|t| &t.id).filter(|id| **id != gone).collect();
        assert_eq!(paged.iter().map(|t| &t.id).collect::<Vec<_>>(), expected);
        assert_eq!(listed.items.iter().map(|t| &t.id).collect::<Vec<_>>(), expected);
    }
}

backend_test! {
    async fn short_searches_answer_the_shortest_titles_first(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        // More tracks than a short query looks through in title order before it reads them
        // all, so both ways are taken.
        const MANY: usize = 2100;
        musiclib_core::testing::insert_library_tracks(&library, MANY, 11).await;
        let everything = TrackFilter::default();
        let (all, _) = all_pages(200, MANY, |page| library.catalog().list_tracks(&everything, None, page)).await;
        assert_eq!(all.len(), MANY);
        let queries = ["e", "o", "lo", "ve", "ñ", "ón", "zz", "20", "x", "love"];
        let mut answers = Vec::new();
        for q in queries {
            let everything = library.catalog().search_library(q, 5).await.unwrap();
            answers.push(ids_of(&everything));
            let found = everything.tracks;
            let key = musiclib_core::text::name_key(q);
            let matches = |t: &musiclib_core::domain::Track| {
                [Some(&t.title), t.artist_name.as_ref(), t.album_title.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|text| musiclib_core::text::name_key(text).contains(&key))
            };
            let mut expected: Vec<usize> = all
                .iter()
                .filter(|t| matches(t))
                .map(|t| t.title.chars().count())
                .collect();
            expected.sort();
            expected.truncate(5);
            assert!(found.iter().all(matches), "{q}: {found:?}");
            assert_eq!(found.is_empty(), expected.is_empty(), "{q}");
            assert_eq!(
                found.iter().map(|t| t.title.chars().count()).collect::<Vec<_>>(),
                expected,
                "{q}: the shortest matching titles, shortest first"
            );
        }

        // Once the search texts are in memory, the same answers come from there.
        wait_for_search_shelf(&library).await;
        for (q, answer) in queries.iter().zip(&answers) {
            let found = library.catalog().search_library(q, 5).await.unwrap();
            assert_eq!(&ids_of(&found), answer, "{q}");
        }
        // A change is found at once (the shelf is no longer current), and again once the
        // shelf has been read anew.
        let caller = Caller {
            user: library.accounts().create_user("keeper", "long enough password", true).await.unwrap(),
        };
        let renamed = &all[MANY / 2];
        let patch = musiclib_core::catalog::TrackPatch { title: Some("Qwxyz".into()), ..Default::default() };
        library.catalog().patch_track(&caller, &renamed.id, &patch).await.unwrap();
        for _ in 0..2 {
            let found = library.catalog().search_library("wxy", 5).await.unwrap().tracks;
            assert_eq!(found.iter().map(|t| &t.id).collect::<Vec<_>>(), [&renamed.id]);
            wait_for_search_shelf(&library).await;
        }
        library.delete_track(&caller, &renamed.id).await.unwrap();
        assert!(library.catalog().search_library("wxy", 5).await.unwrap().tracks.is_empty());
    }
}

/// The ids of a search's tracks, albums and artists, in order.
fn ids_of(found: &musiclib_core::catalog::LibrarySearch) -> [Vec<String>; 3] {
    [
        found.tracks.iter().map(|t| t.id.to_string()).collect(),
        found.albums.iter().map(|a| a.id.to_string()).collect(),
        found.artists.iter().map(|a| a.id.to_string()).collect(),
    ]
}

async fn wait_for_search_shelf(library: &musiclib_core::Library) {
    for _ in 0..500 {
        if library.catalog().search_shelf_is_current().await.unwrap() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the search shelf was never read");
}

/// Every page after `cursor`, from the first, by the cursors the pages give.
async fn all_chunks<T, F, Fut>(read: F) -> Vec<T>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = musiclib_core::Result<musiclib_core::catalog::Chunk<T>>>,
{
    let mut items = Vec::new();
    let mut cursor = String::new();
    for _ in 0..1000 {
        let chunk = read(cursor).await.unwrap();
        items.extend(chunk.items);
        match chunk.next_cursor {
            Some(next) => cursor = next,
            None => return items,
        }
    }
    panic!("cursors never ended");
}

backend_test! {
    async fn cursors_walk_the_same_rows_as_offsets(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, TRACKS, 3).await;
        let catalog = library.catalog();
        let filters = [
            TrackFilter::default(),
            TrackFilter { year: Some(1990), ..Default::default() },
            TrackFilter { q: Some("lo".into()), ..Default::default() },
        ];
        for filter in &filters {
            for name in ["title", "created_at", "updated_at"] {
                for descending in [false, true] {
                    let sort = Sort { key: TrackSortKey::parse(name).unwrap(), descending };
                    let whole = catalog
                        .list_tracks(filter, Some(sort), Page::new(Some(200), None).unwrap())
                        .await
                        .unwrap();
                    assert_tracks_in_order(&library, &whole.items, sort, &format!("{filter:?} {name} {descending}")).await;
                    let walked = all_chunks(|cursor| async move {
                        catalog.list_tracks_after(filter, Some(sort), 17, &cursor).await
                    })
                    .await;
                    assert_eq!(
                        walked.iter().map(|t| &t.id).collect::<Vec<_>>(),
                        whole.items.iter().map(|t| &t.id).collect::<Vec<_>>(),
                        "{filter:?} {name} {descending}"
                    );
                }
            }
        }
        // The first page says the total, like the offset envelope.
        let first = catalog.list_tracks_after(&TrackFilter::default(), None, 10, "").await.unwrap();
        assert_eq!((first.total, first.items.len(), first.limit), (TRACKS as i64, 10, 10));
        // A cursor belongs to its sort; sorts with NULL keys page by offset only; junk is refused.
        let title = Sort { key: TrackSortKey::Title, descending: false };
        let cursor = first.next_cursor.unwrap();
        let other = Sort { key: TrackSortKey::Title, descending: true };
        for (sort, cursor) in [
            (other, cursor.as_str()),
            (Sort { key: TrackSortKey::Year, descending: false }, ""),
            (title, "not a cursor"),
        ] {
            let error = catalog
                .list_tracks_after(&TrackFilter::default(), Some(sort), 10, cursor)
                .await
                .unwrap_err();
            assert_eq!(error.kind(), musiclib_core::ErrorKind::InvalidInput, "{error}");
        }
        assert!(catalog.list_tracks_after(&TrackFilter::default(), Some(title), 0, "").await.is_err());

        for key in [AlbumSortKey::Title, AlbumSortKey::CreatedAt] {
            for descending in [false, true] {
                let sort = Sort { key, descending };
                let whole = catalog
                    .list_albums(&AlbumFilter::default(), Some(sort), Page::new(Some(200), None).unwrap())
                    .await
                    .unwrap();
                assert_albums_in_order(&library, &whole.items, sort, &format!("albums {key:?} {descending}")).await;
                let walked = all_chunks(|cursor| async move {
                    catalog.list_albums_after(&AlbumFilter::default(), Some(sort), 4, &cursor).await
                })
                .await;
                assert_eq!(
                    walked.iter().map(|a| (&a.id, a.track_count)).collect::<Vec<_>>(),
                    whole.items.iter().map(|a| (&a.id, a.track_count)).collect::<Vec<_>>(),
                    "{key:?} {descending}"
                );
            }
        }
        let whole = catalog.list_artists(None, Page::new(Some(200), None).unwrap()).await.unwrap();
        let walked = all_chunks(|cursor| async move { catalog.list_artists_after(None, 1, &cursor).await }).await;
        assert_eq!(
            walked.iter().map(|a| (&a.id, a.track_count)).collect::<Vec<_>>(),
            whole.items.iter().map(|a| (&a.id, a.track_count)).collect::<Vec<_>>()
        );
    }
}

backend_test! {
    async fn a_kept_count_follows_every_change(backend: Backend) {
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, 30, 1).await;
        let catalog = library.catalog();
        let total = |filter: TrackFilter| async move {
            catalog.list_tracks(&filter, None, Page::new(Some(1), None).unwrap()).await.unwrap().total
        };
        assert_eq!(total(TrackFilter::default()).await, 30);
        assert_eq!(total(TrackFilter::default()).await, 30, "kept");
        // More tracks, a deletion and an edit: each is counted at once.
        musiclib_core::testing::insert_library_tracks(&library, 5, 2).await;
        assert_eq!(total(TrackFilter::default()).await, 35);
        let admin = musiclib_core::auth::Caller {
            user: library.accounts().create_user("keeper", "long enough password", true).await.unwrap(),
        };
        let first = catalog.list_tracks(&TrackFilter::default(), None, Page::new(Some(1), None).unwrap()).await.unwrap().items.remove(0);
        library.delete_track(&admin, &first.id).await.unwrap();
        assert_eq!(total(TrackFilter::default()).await, 34);
        let year = TrackFilter { year: Some(1800), ..Default::default() };
        assert_eq!(total(year.clone()).await, 0);
        let second = catalog.list_tracks(&TrackFilter::default(), None, Page::new(Some(1), None).unwrap()).await.unwrap().items.remove(0);
        catalog
            .patch_track(&admin, &second.id, &musiclib_core::catalog::TrackPatch { year: Some(1800), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(total(year).await, 1);
    }
}

backend_test! {
    async fn a_page_after_a_change_is_read_afresh(backend: Backend) {
        // Reading page after page by offset leaves a bookmark where each page ends; a change
        // to the tracks in between must not make the next page start from a stale one.
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, 40, 3).await;
        let catalog = library.catalog();
        let everything = TrackFilter::default();
        let by_title = Sort { key: TrackSortKey::Title, descending: false };
        let page = |offset| Page::new(Some(10), Some(offset)).unwrap();
        let ids = |tracks: &[musiclib_core::domain::Track]| {
            tracks.iter().map(|t| t.id.to_string()).collect::<Vec<_>>()
        };
        let first = catalog.list_tracks(&everything, Some(by_title), page(0)).await.unwrap();
        // The first page's first track moves to the end of the title order.
        let admin = Caller {
            user: library.accounts().create_user("editor", "long enough password", true).await.unwrap(),
        };
        catalog
            .patch_track(
                &admin,
                &first.items[0].id,
                &musiclib_core::catalog::TrackPatch { title: Some("zzzz last".into()), ..Default::default() },
            )
            .await
            .unwrap();
        let whole = catalog
            .list_tracks(&everything, Some(by_title), Page::new(Some(100), None).unwrap())
            .await
            .unwrap();
        for offset in [10, 20, 30] {
            let next = catalog.list_tracks(&everything, Some(by_title), page(offset)).await.unwrap();
            assert_eq!(
                ids(&next.items),
                ids(&whole.items[offset as usize..offset as usize + 10]),
                "offset {offset}"
            );
        }
    }
}

backend_test! {
    async fn deep_pages_from_the_marks_are_the_offsets_rows(backend: Backend) {
        // Past 500 rows, a page of a keyset sort starts from the nearest mark (the key of
        // every 500th row, read in the background on first use) instead of skipping: the
        // same rows as the offset, before and after the marks are known, and after a change.
        const MANY: usize = 5_060;
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, MANY, 11).await;
        let catalog = library.catalog();
        let everything = TrackFilter::default();
        let ids = |tracks: &[musiclib_core::domain::Track]| {
            tracks.iter().map(|t| t.id.to_string()).collect::<Vec<_>>()
        };
        let admin = Caller {
            user: library.accounts().create_user("marker", "long enough password", true).await.unwrap(),
        };
        for (name, descending) in [("title", false), ("title", true), ("created_at", true)] {
            let sort = Sort { key: TrackSortKey::parse(name).unwrap(), descending };
            for round in 0..3 {
                let mut whole = Vec::new();
                for offset in (0..MANY as i64).step_by(200) {
                    whole.extend(
                        catalog
                            .list_tracks(&everything, Some(sort), Page::new(Some(200), Some(offset)).unwrap())
                            .await
                            .unwrap()
                            .items,
                    );
                }
                assert_tracks_in_order(&library, &whole, sort, &format!("{name} {descending} round {round}")).await;
                let whole = ids(&whole);
                assert_eq!(whole.len(), MANY);
                for offset in [4_177_i64, 501, 999, 1_000, 500, 5_059, 5_060, 5_500, 9_000, 2_700] {
                    let page = catalog
                        .list_tracks(&everything, Some(sort), Page::new(Some(50), Some(offset)).unwrap())
                        .await
                        .unwrap();
                    let start = (offset as usize).min(MANY);
                    let end = (start + 50).min(MANY);
                    assert_eq!(ids(&page.items), whole[start..end], "{name} {descending} round {round} offset {offset}");
                    assert_eq!(page.total, MANY as i64);
                }
                if round == 1 {
                    // A change moves every title after the first.
                    let first = catalog.get_track(&musiclib_core::TrackId::parse(&whole[0]).unwrap()).await.unwrap();
                    catalog
                        .patch_track(
                            &admin,
                            &first.id,
                            &musiclib_core::catalog::TrackPatch { title: Some(format!("zzzz {round}")), ..Default::default() },
                        )
                        .await
                        .unwrap();
                }
                musiclib_core::testing::wait_for_list_walks(&library).await;
            }
        }
        // Albums (about ten tracks each) by title and by creation, likewise.
        for (key, descending) in [(AlbumSortKey::Title, false), (AlbumSortKey::CreatedAt, true)] {
            let sort = Sort { key, descending };
            for round in 0..2 {
                let mut whole = Vec::new();
                for offset in (0..600).step_by(200) {
                    whole.extend(
                        catalog
                            .list_albums(&AlbumFilter::default(), Some(sort), Page::new(Some(200), Some(offset)).unwrap())
                            .await
                            .unwrap()
                            .items,
                    );
                }
                assert_albums_in_order(&library, &whole, sort, &format!("albums {key:?} round {round}")).await;
                let whole: Vec<String> = whole.iter().map(|album| album.id.to_string()).collect();
                let count = whole.len() as i64;
                assert!(count > 500, "{count} albums");
                for offset in [count - 1, 500, 501, count, 1_000, 2_000] {
                    let page = catalog
                        .list_albums(&AlbumFilter::default(), Some(sort), Page::new(Some(2), Some(offset)).unwrap())
                        .await
                        .unwrap();
                    let start = (offset as usize).min(whole.len());
                    let end = (start + 2).min(whole.len());
                    let got: Vec<String> = page.items.iter().map(|album| album.id.to_string()).collect();
                    assert_eq!(got, whole[start..end], "albums {key:?} round {round} offset {offset}");
                    // The legacy lists in the same orders (every album here can be played).
                    let kind = if key == AlbumSortKey::Title { AlbumList::AlphabeticalByName } else { AlbumList::Newest };
                    let legacy = catalog.album_list(&admin, &kind, Page::clamped(2, offset, 500)).await.unwrap();
                    let got: Vec<String> = legacy.iter().map(|album| album.id.to_string()).collect();
                    assert_eq!(got, whole[start..end], "{kind:?} round {round} offset {offset}");
                }
                musiclib_core::testing::wait_for_list_walks(&library).await;
            }
        }
    }
}

backend_test! {
    async fn deep_pages_of_nullable_sorts_come_from_the_order(backend: Backend) {
        // Sorts whose keys may be NULL (by artist, album, year, number, length; albums by
        // artist and year) have no keyset: past 500 rows a page is a slice of the list's
        // order, read once in the background. The same rows as the offset, before and after
        // the order is known, and after a change.
        const MANY: usize = 5_100;
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, MANY, 5).await;
        // NULL keys, which the two databases place apart, and ties.
        musiclib_core::testing::execute(
            &library,
            "UPDATE tracks SET year = NULL, artist_name = NULL, duration_ms = NULL WHERE track_number = 3",
            &[],
        )
        .await;
        let catalog = library.catalog();
        let admin = Caller {
            user: library.accounts().create_user("orderer", "long enough password", true).await.unwrap(),
        };
        let everything = TrackFilter::default();
        let sorts = [
            ("artist", false),
            ("artist", true),
            ("album", true),
            ("year", false),
            ("track_number", true),
            ("duration", false),
        ];
        for (name, descending) in sorts {
            let sort = Sort { key: TrackSortKey::parse(name).unwrap(), descending };
            for round in 0..3 {
                for offset in [1_234_i64, 500, 501, 4_999, 5_000, 5_099, 5_100, 6_000, 700] {
                    let page = Page::new(Some(50), Some(offset)).unwrap();
                    let got = catalog.list_tracks(&everything, Some(sort), page).await.unwrap();
                    // The documented order, NULLs placed as each database does; and the very
                    // rows an offset read gives.
                    assert_tracks_in_order(&library, &got.items, sort, &format!("{name} {descending} round {round} offset {offset}")).await;
                    let ids: Vec<String> = got.items.iter().map(|t| t.id.to_string()).collect();
                    let expected = musiclib_core::testing::track_ids_by_offset(&library, sort, page).await;
                    assert_eq!(ids, expected, "{name} {descending} round {round} offset {offset}");
                    assert_eq!(got.total, MANY as i64, "{name} {descending} round {round} offset {offset}");
                }
                if round == 1 {
                    // A change moves a track from the middle to an end of every sort.
                    let middle = musiclib_core::testing::track_ids_by_offset(
                        &library,
                        sort,
                        Page::new(Some(1), Some(1_000)).unwrap(),
                    )
                    .await;
                    catalog
                        .patch_track(
                            &admin,
                            &musiclib_core::TrackId::parse(&middle[0]).unwrap(),
                            &musiclib_core::catalog::TrackPatch {
                                title: Some("moved".into()),
                                year: Some(2999),
                                track_number: Some(99),
                                ..Default::default()
                            },
                        )
                        .await
                        .unwrap();
                }
                musiclib_core::testing::wait_for_list_walks(&library).await;
            }
        }
        musiclib_core::testing::execute(&library, "UPDATE albums SET year = NULL WHERE title LIKE 'L%'", &[]).await;
        musiclib_core::testing::execute(&library, "UPDATE albums SET artist_id = NULL WHERE title LIKE 'S%'", &[]).await;
        for (key, descending) in [(AlbumSortKey::Artist, false), (AlbumSortKey::Artist, true), (AlbumSortKey::Year, true)] {
            let sort = Sort { key, descending };
            for round in 0..2 {
                for offset in [500_i64, 505, 509, 510, 2, 204, 700] {
                    let page = Page::new(Some(2), Some(offset)).unwrap();
                    let got = catalog.list_albums(&AlbumFilter::default(), Some(sort), page).await.unwrap();
                    assert_albums_in_order(&library, &got.items, sort, &format!("albums {key:?} {descending} round {round} offset {offset}")).await;
                    let ids: Vec<String> = got.items.iter().map(|album| album.id.to_string()).collect();
                    let expected = musiclib_core::testing::album_ids_by_offset(&library, sort, page).await;
                    assert_eq!(ids, expected, "albums {key:?} {descending} round {round} offset {offset}");
                }
                musiclib_core::testing::wait_for_list_walks(&library).await;
            }
        }
    }
}

backend_test! {
    async fn a_listed_playlist_follows_every_change(backend: Backend) {
        // A page of playlists keeps each one's tracks between reads: an add, a remove, a
        // track deleted from the library or a track's new length shows on the next page.
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, 12, 3).await;
        let caller = new_caller(&library, "lister", true).await;
        let tracks = first_tracks(&library, 12).await;
        let playlist = library
            .playlists()
            .create(
                &caller,
                musiclib_core::playlists::NewPlaylist {
                    name: "Kept".into(),
                    description: None,
                    public: false,
                    track_ids: tracks[..3].iter().map(|t| t.id.clone()).collect(),
                    rules: None,
                },
            )
            .await
            .unwrap();
        let listed = || async {
            let page = library.playlists().list(&caller, Page::new(Some(50), None).unwrap()).await.unwrap();
            let one = page.items.into_iter().find(|p| p.id == playlist.id).unwrap();
            (one.track_ids.iter().map(|id| id.to_string()).collect::<Vec<_>>(), one.duration_ms)
        };
        let ids = |range: &[musiclib_core::domain::Track]| range.iter().map(|t| t.id.to_string()).collect::<Vec<_>>();
        let length = |range: &[musiclib_core::domain::Track]| range.iter().filter_map(|t| t.duration_ms).sum::<i64>();
        assert_eq!(listed().await, (ids(&tracks[..3]), length(&tracks[..3])));
        assert_eq!(listed().await, (ids(&tracks[..3]), length(&tracks[..3])));
        library
            .playlists()
            .add_tracks(&caller, &playlist.id, vec![tracks[3].id.clone()], None, None)
            .await
            .unwrap();
        assert_eq!(listed().await, (ids(&tracks[..4]), length(&tracks[..4])));
        library.playlists().remove_tracks(&caller, &playlist.id, vec![0], None).await.unwrap();
        assert_eq!(listed().await, (ids(&tracks[1..4]), length(&tracks[1..4])));
        library.delete_track(&caller, &tracks[2].id).await.unwrap();
        let left = [tracks[1].clone(), tracks[3].clone()];
        assert_eq!(listed().await, (ids(&left), length(&left)));
        musiclib_core::testing::execute(&library, "UPDATE tracks SET duration_ms = 1000 WHERE id = $1", &[tracks[1].id.as_str()]).await;
        assert_eq!(listed().await, (ids(&left), 1000 + tracks[3].duration_ms.unwrap()));
    }
}

backend_test! {
    async fn history_pages_at_any_offset_follow_every_play(backend: Backend) {
        // A deep page of the history starts from the nearest kept place (the key of every
        // 500th play) instead of skipping: the same plays as one long read, newest first, ties
        // in time broken by the later stored; a new play, even one older than all others,
        // shows on the next page read.
        const PLAYS: usize = 1_230;
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, 3, 5).await;
        let caller = new_caller(&library, "listener", false).await;
        let tracks: Vec<String> = first_tracks(&library, 3).await.into_iter().map(|t| t.id.to_string()).collect();
        let social = library.social();
        let empty = social.history(&caller, Page::new(Some(50), Some(600)).unwrap()).await.unwrap();
        assert_eq!((empty.items.len(), empty.total), (0, 0));
        // (played_at, order stored, client id): every seventh play shares its time with the
        // one before it.
        let mut stored: Vec<(i64, usize, String)> = Vec::new();
        let play = |n: usize| {
            let at = 1_700_000_000_000_000 + ((n * 7919) % PLAYS - usize::from(n.is_multiple_of(7) && n > 0)) as i64 * 1_000;
            musiclib_core::social::NewPlay {
                track_id: tracks[n % 3].clone(),
                played_at: musiclib_core::Timestamp::from_micros(at),
                seconds_played: Some(30.0),
                client_event_id: format!("play-{n}"),
            }
        };
        for chunk in (0..PLAYS).collect::<Vec<_>>().chunks(400) {
            let plays: Vec<_> = chunk.iter().map(|&n| play(n)).collect();
            for p in &plays {
                stored.push((p.played_at.as_micros(), stored.len(), p.client_event_id.clone()));
            }
            social.push_events(&caller, Vec::new(), plays).await.unwrap();
        }
        let newest_first = |stored: &[(i64, usize, String)]| {
            let mut order = stored.to_vec();
            order.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
            order.into_iter().map(|(_, _, id)| id).collect::<Vec<_>>()
        };
        let check = |expected: Vec<String>| {
            let social = social.clone();
            let caller = caller.clone();
            async move {
                // Deep first (the places are found then), then shallow, then deep again.
                for offset in [1_000, 0, 37, 499, 500, 777, 1_000, 1_180, 1_229, 1_231, 1_500, 2_000] {
                    let page = social
                        .history(&caller, Page::new(Some(50), Some(offset)).unwrap())
                        .await
                        .unwrap();
                    assert_eq!(page.total, expected.len() as i64, "offset {offset}");
                    let got: Vec<_> = page.items.iter().map(|p| p.client_event_id.clone()).collect();
                    let start = (offset as usize).min(expected.len());
                    let end = (offset as usize + 50).min(expected.len());
                    assert_eq!(got, expected[start..end], "offset {offset}");
                }
            }
        };
        check(newest_first(&stored)).await;
        // A play older than every other lands at the very end; one as new as the newest, stored
        // later, comes first.
        let mut oldest = play(1);
        oldest.played_at = musiclib_core::Timestamp::from_micros(1_000);
        oldest.client_event_id = "oldest".into();
        let newest_time = stored.iter().map(|s| s.0).max().unwrap();
        let mut tied = play(2);
        tied.played_at = musiclib_core::Timestamp::from_micros(newest_time);
        tied.client_event_id = "tied with the newest".into();
        for p in [oldest, tied] {
            stored.push((p.played_at.as_micros(), stored.len(), p.client_event_id.clone()));
            social.push_events(&caller, Vec::new(), vec![p]).await.unwrap();
            check(newest_first(&stored)).await;
        }
        // Another user's plays are not in it.
        let other = new_caller(&library, "other", false).await;
        social.push_events(&other, Vec::new(), vec![play(3)]).await.unwrap();
        check(newest_first(&stored)).await;
        let theirs = social.history(&other, Page::new(Some(50), Some(0)).unwrap()).await.unwrap();
        assert_eq!(theirs.total, 1);
    }
}

backend_test! {
    async fn a_kept_album_row_follows_every_change(backend: Backend) {
        // Albums listed are kept at the sync clock: a cover found later (an album change with
        // no track change), a deleted track and a track's new length show on the next page.
        let library = TestLibrary::new(backend).await;
        musiclib_core::testing::insert_library_tracks(&library, 30, 4).await;
        let catalog = library.catalog();
        let first = || async {
            catalog
                .list_albums(&AlbumFilter::default(), None, Page::new(Some(1), None).unwrap())
                .await
                .unwrap()
                .items
                .remove(0)
        };
        let album = first().await;
        assert_eq!(first().await.track_count, album.track_count, "kept");
        assert_eq!(album.cover_uri, None);
        musiclib_core::testing::execute(
            &library,
            "UPDATE albums SET cover_uri = 'covers/found-later.jpg' WHERE id = $1",
            &[album.id.as_str()],
        )
        .await;
        assert_eq!(first().await.cover_uri.as_deref(), Some("covers/found-later.jpg"));
        let admin = new_caller(&library, "keeper", true).await;
        let filter = TrackFilter { album_id: Some(album.id.clone()), ..Default::default() };
        let tracks = catalog.list_tracks(&filter, None, Page::new(Some(50), None).unwrap()).await.unwrap().items;
        library.delete_track(&admin, &tracks[0].id).await.unwrap();
        let now = first().await;
        assert_eq!(now.track_count, album.track_count - 1);
        assert_eq!(now.duration_ms, album.duration_ms - tracks[0].duration_ms.unwrap());
        musiclib_core::testing::execute(&library, "UPDATE tracks SET duration_ms = 1000 WHERE id = $1", &[tracks[1].id.as_str()]).await;
        assert_eq!(
            first().await.duration_ms,
            album.duration_ms - tracks[0].duration_ms.unwrap() - tracks[1].duration_ms.unwrap() + 1000
        );
    }
}
