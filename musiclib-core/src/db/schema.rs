//! The two migration sets describe one schema: applied to SQLite and to PostgreSQL, they give
//! the same tables, the same columns with the same portable types and nullability, the same
//! keys, unique constraints and indexes. Only the dialect seam's own objects differ, and they
//! are listed here by name.

use std::collections::{BTreeMap, BTreeSet};

use super::{DatabaseKind, Db};

/// SQLite's FTS5 search index (a virtual table, its shadow tables, and the id map).
const SQLITE_ONLY_TABLES: &[&str] = &[
    "track_search_ids",
    "tracks_search",
    "tracks_search_config",
    "tracks_search_content",
    "tracks_search_data",
    "tracks_search_docsize",
    "tracks_search_idx",
    "sqlite_sequence",
];

/// SQLite's index for the library search's scans (PostgreSQL's btree indexes bound an entry's
/// size, which a long title could pass; it scans the table instead).
const SQLITE_ONLY_INDEXES: &[&str] = &["tracks_search_scan"];

/// PostgreSQL's trigram indexes, serving the same searches.
const POSTGRES_ONLY_INDEXES: &[&str] = &[
    "tracks_search_trgm",
    "albums_title_trgm",
    "artists_name_trgm",
];

/// One table, normalised.
#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    /// Column → (portable type, NOT NULL).
    columns: BTreeMap<String, (&'static str, bool)>,
    primary_key: Vec<String>,
    /// Column lists of UNIQUE constraints (and unique indexes).
    unique: BTreeSet<Vec<String>>,
    /// Named indexes → (unique, columns).
    indexes: BTreeMap<String, (bool, Vec<String>)>,
}

type Schema = BTreeMap<String, Table>;

/// TEXT, INTEGER (every integer width) or REAL (every float width).
fn portable(declared: &str) -> &'static str {
    let declared = declared.to_ascii_lowercase();
    if declared.contains("int") {
        "integer"
    } else if declared.contains("real") || declared.contains("double") || declared.contains("float")
    {
        "real"
    } else if declared.contains("text") || declared.contains("char") {
        "text"
    } else {
        "other"
    }
}

async fn sqlite_schema(db: &Db) -> Schema {
    let pool = db.pool();
    let tables: Vec<String> = db
        .sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> '_sqlx_migrations'")
        .fetch_scalars(pool)
        .await
        .unwrap();
    let mut schema = Schema::new();
    for name in tables
        .into_iter()
        .filter(|name| !SQLITE_ONLY_TABLES.contains(&name.as_str()))
    {
        let mut table = Table::default();
        let columns: Vec<(String, String, i64, i64)> = db
            .sql(r#"SELECT name, type, "notnull", pk FROM pragma_table_info($1)"#)
            .bind(name.as_str())
            .fetch_all(pool)
            .await
            .unwrap();
        let mut key: Vec<(i64, String)> = Vec::new();
        for (column, declared, not_null, pk) in columns {
            if pk > 0 {
                key.push((pk, column.clone()));
            }
            // A primary key column is never null, declared so or not.
            table
                .columns
                .insert(column, (portable(&declared), not_null != 0 || pk > 0));
        }
        key.sort();
        table.primary_key = key.into_iter().map(|(_, column)| column).collect();
        let indexes: Vec<(String, i64, String)> = db
            .sql(r#"SELECT name, "unique", origin FROM pragma_index_list($1)"#)
            .bind(name.as_str())
            .fetch_all(pool)
            .await
            .unwrap();
        for (index, unique, origin) in indexes {
            let columns: Vec<String> = db
                .sql("SELECT COALESCE(name, '(expression)') FROM pragma_index_info($1) ORDER BY seqno")
                .bind(index.as_str())
                .fetch_scalars(pool)
                .await
                .unwrap();
            match origin.as_str() {
                "pk" => {}
                "u" => {
                    table.unique.insert(columns);
                }
                _ if SQLITE_ONLY_INDEXES.contains(&index.as_str()) => {}
                _ => {
                    table.indexes.insert(index, (unique != 0, columns));
                }
            }
        }
        schema.insert(name, table);
    }
    schema
}

async fn postgres_schema(db: &Db) -> Schema {
    let pool = db.pool();
    let tables: Vec<String> = db
        .sql(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations'",
        )
        .fetch_scalars(pool)
        .await
        .unwrap();
    let mut schema = Schema::new();
    for name in tables {
        let mut table = Table::default();
        let columns: Vec<(String, String, String)> = db
            .sql(
                "SELECT column_name::text, data_type::text, is_nullable::text FROM information_schema.columns
                 WHERE table_schema = 'public' AND table_name = $1",
            )
            .bind(name.as_str())
            .fetch_all(pool)
            .await
            .unwrap();
        for (column, declared, nullable) in columns {
            table
                .columns
                .insert(column, (portable(&declared), nullable == "NO"));
        }
        let indexes: Vec<(String, i64, i64, i64, String)> = db
            .sql(
                "SELECT i.relname::text,
                        CAST(CASE WHEN ix.indisunique THEN 1 ELSE 0 END AS BIGINT),
                        CAST(CASE WHEN ix.indisprimary THEN 1 ELSE 0 END AS BIGINT),
                        CAST(CASE WHEN EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid)
                             THEN 1 ELSE 0 END AS BIGINT),
                        (SELECT string_agg(COALESCE(a.attname::text, '(expression)'), ',' ORDER BY k.ord)
                           FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
                           LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum)
                 FROM pg_index ix
                 JOIN pg_class t ON t.oid = ix.indrelid
                 JOIN pg_class i ON i.oid = ix.indexrelid
                 JOIN pg_namespace n ON n.oid = t.relnamespace
                 WHERE n.nspname = 'public' AND t.relname = $1",
            )
            .bind(name.as_str())
            .fetch_all(pool)
            .await
            .unwrap();
        for (index, unique, primary, constraint, columns) in indexes {
            let columns: Vec<String> = columns.split(',').map(str::to_string).collect();
            if primary != 0 {
                table.primary_key = columns;
            } else if constraint != 0 {
                table.unique.insert(columns);
            } else if !POSTGRES_ONLY_INDEXES.contains(&index.as_str()) {
                table.indexes.insert(index, (unique != 0, columns));
            }
        }
        schema.insert(name, table);
    }
    schema
}

#[tokio::test]
#[cfg_attr(
    not(musiclib_services),
    ignore = "needs PostgreSQL: run the README test command"
)]
async fn both_migration_sets_make_the_same_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Db::connect(&format!(
        "sqlite://{}",
        dir.path().join("schema.db").display()
    ))
    .await
    .unwrap();
    sqlite.migrate().await.unwrap();
    let postgres = Db::connect(&crate::testing::create_postgres_database().await)
        .await
        .unwrap();
    assert_eq!(postgres.kind(), DatabaseKind::Postgres);
    postgres.migrate().await.unwrap();

    let (sqlite, postgres) = (
        sqlite_schema(&sqlite).await,
        postgres_schema(&postgres).await,
    );
    assert!(sqlite.len() >= 20, "read {} tables", sqlite.len());
    assert_eq!(
        sqlite.keys().collect::<Vec<_>>(),
        postgres.keys().collect::<Vec<_>>(),
        "the same tables"
    );
    for (name, table) in &sqlite {
        assert_eq!(
            table, &postgres[name],
            "table {name} differs between the dialects"
        );
    }
}
