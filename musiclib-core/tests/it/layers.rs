//! The layers of musiclib-core, held: a top-level module may use (`crate::…`) only modules of
//! its own layer or a lower one, and no two modules use each other, directly or round a loop.
//! The test reads the sources, so a new `use` that points up, or a new module no layer
//! lists, fails here with the file and the path that did it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first (ARCHITECTURE.md draws the same).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation",
        &[
            "ids",
            "time",
            "text",
            "cpu",
            "error",
            "domain",
            "metrics",
            "cache",
            "extension",
            "config",
            "outside",
            "picture",
            "probe",
        ],
    ),
    // The database, the blobs and the job queue; accounts and every permission decision,
    // which every service asks.
    ("storage", &["db", "storage", "jobs", "auth"]),
    ("catalog", &["catalog"]),
    (
        "features",
        &[
            "media",
            "enrichment",
            "ingest",
            "playlists",
            "settings",
            "scrobbling",
            "social",
            "recommend",
            "lyrics",
            "remote",
            "maintenance",
            "shares",
            "podcasts",
            "stations",
            "avatars",
        ],
    ),
    ("workflows", &["workflows", "admin"]),
    ("library", &["library"]),
    // Test and fuzzing support, built over the whole library (tests anywhere may use it).
    ("harness", &["testing", "fuzzing"]),
];

/// Names the crate root re-exports, and the module each comes from.
const ROOT_REEXPORTS: &[(&str, &str)] = &[
    ("Config", "config"),
    ("DatabaseKind", "db"),
    ("Error", "error"),
    ("ErrorKind", "error"),
    ("Result", "error"),
    ("AlbumId", "ids"),
    ("ArtistId", "ids"),
    ("DownloadId", "ids"),
    ("EpisodeId", "ids"),
    ("JobId", "ids"),
    ("PlaylistId", "ids"),
    ("PodcastId", "ids"),
    ("TrackId", "ids"),
    ("UserId", "ids"),
    ("Library", "library"),
    ("Timestamp", "time"),
    // Defined in lib.rs itself.
    ("error_chain", ""),
];

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// The top-level module a file belongs to (`catalog/tracks.rs` → `catalog`).
fn module_of(relative: &Path) -> String {
    let first = relative.components().next().unwrap();
    let first = first.as_os_str().to_str().unwrap();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a file without its comments (doc links are not dependencies).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // Cut at a comment, unless the `//` is inside a string (a URL).
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The first names of every `crate::` path in `code`, `use crate::{a, b::c}` groups included.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // Not the end of a longer identifier (`my_crate::`).
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (index, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && !c.is_whitespace() => {
                        names.push(identifier(&group[index..]).to_string());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(identifier(rest).to_string());
        }
    }
    names
}

/// Every top-level module's uses of the others: module → (used module → the files).
fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let root = source_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|file| module_of(file.strip_prefix(&root).unwrap()))
        .filter(|module| module != "lib")
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap();
        let module = module_of(relative);
        if module == "lib" {
            continue;
        }
        let code = code(&std::fs::read_to_string(&file).unwrap());
        assert!(
            !code.contains("super::super::"),
            "{}: reach another module through `crate::`, not `super::super::`",
            relative.display()
        );
        let uses = graph.entry(module.clone()).or_default();
        for name in crate_paths(&code) {
            let used = match ROOT_REEXPORTS.iter().find(|(export, _)| *export == name) {
                Some((_, "")) => continue,
                Some((_, from)) => from.to_string(),
                None if modules.contains(&name) => name,
                None => panic!(
                    "{}: `crate::{name}` is neither a module nor a re-export this test knows \
                     (add it to ROOT_REEXPORTS)",
                    relative.display()
                ),
            };
            // The harness is compiled for tests alone; a unit test anywhere may use it.
            let harness = LAYERS.last().unwrap().1;
            if used != module && !harness.contains(&used.as_str()) {
                uses.entry(used)
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    graph
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

#[test]
fn every_module_has_a_layer_and_uses_only_its_own_or_lower_ones() {
    let graph = graph();
    let listed: BTreeSet<&str> = LAYERS.iter().flat_map(|(_, m)| m.iter().copied()).collect();
    let present: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    assert_eq!(
        present, listed,
        "the modules in src/ and the ones LAYERS lists differ"
    );
    let mut upward = Vec::new();
    for (module, uses) in &graph {
        let own = layer_of(module).unwrap();
        for (used, files) in uses {
            let theirs = layer_of(used).unwrap();
            if theirs > own {
                upward.push(format!(
                    "{module} ({}) uses {used} ({}) in {files:?}",
                    LAYERS[own].0, LAYERS[theirs].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "uses that point up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_modules_use_each_other_round_a_loop() {
    let graph = graph();
    // Depth-first search; a module met again while still on the path closes a loop.
    fn visit<'a>(
        module: &'a str,
        graph: &'a BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(at) = path.iter().position(|on| *on == module) {
            let mut cycle = path[at..].to_vec();
            cycle.push(module);
            panic!("modules that use each other: {}", cycle.join(" → "));
        }
        path.push(module);
        for used in graph.get(module).into_iter().flat_map(|uses| uses.keys()) {
            visit(used, graph, path, done);
        }
        path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_path_reader_sees_groups_and_plain_paths() {
    let code = code(
        "use crate::{auth::Caller, db::{Db, Tx}, Result};\n\
         let x = crate::media::Quality::Low; // crate::admin in a comment\n\
         let url = \"http://example.org/crate::jobs\";",
    );
    let names = crate_paths(&code);
    assert!(names.starts_with(&["auth".into(), "db".into(), "Result".into(), "media".into()]));
    assert!(!names.contains(&"admin".to_string()));
}

/// Tables with one writer: the file or folder (under `src/`) that alone may hold their
/// writing statements, and for `jobs`, reads too.
const OWNERS: &[(&str, &[&str], &str)] = &[
    // Every column derived from others is computed there (search text, shuffle key).
    (
        "tracks",
        &["INSERT INTO tracks ", "UPDATE tracks "],
        "catalog/writes.rs",
    ),
    (
        "jobs",
        &[
            "INSERT INTO jobs",
            "UPDATE jobs",
            "FROM jobs",
            "JOIN jobs",
            "DELETE FROM jobs",
        ],
        "jobs",
    ),
];

#[test]
fn tables_with_one_writer_are_written_by_it_alone() {
    let root = source_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut strays = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap();
        let shown = relative.to_string_lossy().replace('\\', "/");
        // The test harness sets up states no request reaches (through the owners' helpers
        // where it writes) and reads jobs to check them.
        if shown == "testing.rs" || shown.starts_with("testing/") {
            continue;
        }
        let code = code(&std::fs::read_to_string(&file).unwrap());
        for (table, statements, owner) in OWNERS {
            let owned = shown == *owner
                || shown == format!("{owner}.rs")
                || shown.starts_with(&format!("{owner}/"));
            if owned {
                continue;
            }
            for statement in *statements {
                if code.contains(statement) {
                    strays.push(format!(
                        "{shown}: `{statement}` ({table} is written by {owner})"
                    ));
                }
            }
        }
    }
    assert!(
        strays.is_empty(),
        "statements outside their table's owner:\n{}",
        strays.join("\n")
    );
}
