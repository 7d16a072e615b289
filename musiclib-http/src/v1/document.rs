//! The last pass over the generated OpenAPI document: the answers every operation can give
//! whatever its handler says, written once here rather than in every annotation, so the
//! document lists every status the server really sends.
//!
//! - an operation with a security requirement answers 401 (no, a malformed, an expired or a
//!   revoked token);
//! - one that reads parameters or a body answers 422 naming the field;
//! - one with a path parameter answers 404 (no such thing, or not yours to see);
//! - one with a body answers 413 past the size limit, one with parameters 414 past the
//!   length of a request line;
//! - every operation answers 503 while the database or the blob store is unreachable.
//!
//! Each is the one JSON error body (`ErrorBody`). A handler's own description of the same
//! status wins.
//!
//! Path parameters get their formats here too: every `{id}` (and `{track}`) is a UUID but a
//! share's (22 base64url characters), a `{segment}` is
//! `seg-NNNNN.ts` (`musiclib_core::media::hls::parse_segment_name`), and a `{source}` is one
//! of the names its route takes.

use serde_json::{json, Map, Value};

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Adds the statuses every operation shares (see the module docs).
pub(crate) fn complete(document: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut value = serde_json::to_value(&document).expect("the OpenAPI document serializes");
    complete_value(&mut value);
    serde_json::from_value(value).expect("the completed OpenAPI document deserializes")
}

/// Marks every object schema without properties (free-form JSON: smart-playlist rules) as
/// taking any properties, as it does: `additionalProperties: true` (without it, generated
/// clients type it as an object that holds nothing).
fn free_form_objects(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let is_object = match object.get("type") {
                Some(Value::String(kind)) => kind == "object",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
                _ => false,
            };
            if is_object
                && !object.contains_key("properties")
                && !object.contains_key("additionalProperties")
            {
                object.insert("additionalProperties".into(), Value::Bool(true));
            }
            for value in object.values_mut() {
                free_form_objects(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(free_form_objects),
        _ => {}
    }
}

fn complete_value(document: &mut Value) {
    if let Some(components) = document.get_mut("components") {
        free_form_objects(components);
    }
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        let shared_parameters = item.get("parameters").cloned();
        for method in METHODS {
            let Some(operation) = item.get_mut(method).and_then(Value::as_object_mut) else {
                continue;
            };
            complete_operation(path, operation, shared_parameters.as_ref());
        }
    }
}

fn complete_operation(path: &str, operation: &mut Map<String, Value>, shared: Option<&Value>) {
    let own_parameters = operation
        .get("parameters")
        .and_then(Value::as_array)
        .is_some_and(|parameters| !parameters.is_empty());
    let shared_parameters = shared
        .and_then(Value::as_array)
        .is_some_and(|parameters| !parameters.is_empty());
    let secured = operation
        .get("security")
        .and_then(Value::as_array)
        .is_some_and(|requirements| {
            requirements
                .iter()
                .any(|requirement| requirement.as_object().is_some_and(|r| !r.is_empty()))
        });
    let has_path_parameter = path.contains('{');
    if let Some(parameters) = operation
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
    {
        for parameter in parameters {
            describe_path_parameter(path, parameter);
        }
    }
    let has_parameters = own_parameters || shared_parameters || has_path_parameter;
    let has_body = operation.contains_key("requestBody");

    let responses = operation
        .entry("responses")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("responses is an object");
    let mut add = |status: &str, description: &str| {
        responses.entry(status.to_string()).or_insert_with(|| {
            json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
            })
        });
    };
    if secured {
        add(
            "401",
            "No access token, or one that is malformed, expired, revoked or of a disabled account (`unauthenticated`)",
        );
    }
    if has_parameters || has_body {
        add(
            "422",
            "A parameter or a body field is missing, malformed or out of bounds (`validation_error`, naming it in `field`)",
        );
    }
    if has_path_parameter {
        add(
            "404",
            "No such resource, or one the caller may not see (`not_found`)",
        );
    }
    if has_body {
        add("413", "The body is larger than the server accepts");
    }
    add(
        "503",
        "The database or the blob store is unreachable for now; retry later (`unavailable`)",
    );
    if own_parameters || shared_parameters {
        // Answered by hyper before any handler, with no body.
        responses.entry("414".to_string()).or_insert_with(
            || json!({"description": "The request line is longer than the server reads"}),
        );
    }
}

/// The schema of a path parameter, from what its route accepts.
fn describe_path_parameter(path: &str, parameter: &mut Value) {
    let name = parameter.get("name").and_then(Value::as_str).unwrap_or("");
    if parameter.get("in").and_then(Value::as_str) == Some("query") && name.ends_with("_id") {
        // A filter by a thing's id (`artist_id`, `album_id`).
        parameter["schema"]["format"] = json!("uuid");
        return;
    }
    if parameter.get("in").and_then(Value::as_str) != Some("path") {
        return;
    }
    let schema = match parameter.get("name").and_then(Value::as_str) {
        // A share's id is its link's secret, not a UUID (`musiclib_core::shares::ShareId`).
        Some("id") if path.starts_with("/shares/") || path.starts_with("/shared/") => {
            json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{22}$"})
        }
        Some("id") | Some("track") => json!({"type": "string", "format": "uuid"}),
        Some("segment") => json!({"type": "string", "pattern": "^seg-[0-9]{5}\\.ts$"}),
        Some("source") if path.ends_with("/scan") => {
            json!({"type": "string", "enum": ["local_folder"]})
        }
        Some("source") if path.ends_with("/search") => {
            json!({"type": "string", "enum": musiclib_core::remote::NAMES})
        }
        _ => return,
    };
    parameter["schema"] = schema;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_shared_statuses_without_replacing_a_handlers_own() {
        let mut document = json!({
            "paths": {
                "/things/{id}": {
                    "get": {
                        "security": [{"bearer": []}],
                        "responses": {"200": {"description": "ok"}, "404": {"description": "mine"}}
                    },
                    "post": {
                        "requestBody": {"content": {}},
                        "responses": {"201": {"description": "made"}}
                    }
                },
                "/open": {
                    "get": {"security": [{}], "responses": {"200": {"description": "ok"}}}
                }
            }
        });
        complete_value(&mut document);
        let get = &document["paths"]["/things/{id}"]["get"]["responses"];
        assert_eq!(get["404"]["description"], "mine");
        for status in ["401", "422", "503"] {
            assert!(get.get(status).is_some(), "{status} missing");
        }
        assert!(get.get("413").is_none());
        let post = &document["paths"]["/things/{id}"]["post"]["responses"];
        assert!(post.get("413").is_some());
        assert!(post.get("401").is_none(), "no security, no 401");
        let open = &document["paths"]["/open"]["get"]["responses"];
        assert!(open.get("401").is_none() && open.get("422").is_none());
        assert!(open.get("503").is_some());
    }
}
