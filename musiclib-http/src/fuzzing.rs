//! For the fuzz targets only (`fuzz/` at the repository root): the smallest entry points into
//! request parsing that is private to this crate, so a target runs the very code a route
//! runs. Not an API: hidden from the docs, called by nothing else.

use musiclib_core::social::{NewLike, NewPlay};

use crate::error::ApiError;
use crate::v1::sync::PushIn;

/// A `POST /sync/push` body through what the route does before it touches the database:
/// the JSON extractor, the event times, and core's checks of a push.
pub fn sync_push(body: &[u8]) -> Result<(Vec<NewLike>, Vec<NewPlay>), ApiError> {
    let push: PushIn = crate::extract::parse_json(body)?;
    let (likes, plays) = push.into_core()?;
    musiclib_core::fuzzing::check_push(&likes, &plays)?;
    Ok((likes, plays))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &[u8]) -> ApiError {
        let error = sync_push(body).expect_err("refused");
        assert_eq!(error.status().as_u16(), 422, "{error:?}");
        error
    }

    /// The hardest bodies of the `sync_push` fuzz target, kept here: deep nesting, many
    /// events, long ids, odd numbers.
    #[test]
    fn hostile_push_bodies_are_clean_422s() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        refused(deep.as_bytes());
        let deep_inside = format!(
            r#"{{"likes":[{{"client_event_id":{}1{}}}]}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        refused(deep_inside.as_bytes());
        refused(b"");
        refused(b"\xff");
        refused(br#"{"likes":[],"plays":[],"more":[]}"#);
        refused(br#"{"plays":[{"client_event_id":"p","track_id":"01a21145-4596-74b4-8df4-a01be70b0815","played_at":"2026-01-01T00:00:00Z","seconds_played":1e400}]}"#);
        refused(br#"{"plays":[{"client_event_id":"p","track_id":"01a21145-4596-74b4-8df4-a01be70b0815","played_at":"2026-01-01T00:00:00Z","seconds_played":-0.5}]}"#);
        refused(br#"{"likes":[{"client_event_id":" ","track_id":"01a21145-4596-74b4-8df4-a01be70b0815","liked":true,"event_time":"2026-01-01T00:00:00Z"}]}"#);

        let like = |index: usize| {
            format!(
                r#"{{"client_event_id":"e{index}","track_id":"01a21145-4596-74b4-8df4-a01be70b0815","liked":true,"event_time":"2026-01-01T00:00:00Z"}}"#
            )
        };
        let many: Vec<String> = (0..5_001).map(like).collect();
        let body = format!(r#"{{"likes":[{}]}}"#, many.join(","));
        assert_eq!(refused(body.as_bytes()).status().as_u16(), 422);
        let body = format!(r#"{{"likes":[{}]}}"#, many[..5_000].join(","));
        assert_eq!(sync_push(body.as_bytes()).unwrap().0.len(), 5_000);

        let long_id = "x".repeat(201);
        let body = format!(
            r#"{{"likes":[{{"client_event_id":"{long_id}","track_id":"01a21145-4596-74b4-8df4-a01be70b0815","liked":false,"event_time":"2026-01-01T00:00:00Z"}}]}}"#
        );
        refused(body.as_bytes());
    }

    /// Times at the ends of the calendar, with offsets that carry them past it: refused, or
    /// written back (as `/sync/changes` writes them) to the same instant.
    #[test]
    fn event_times_at_the_calendar_ends_round_trip_or_are_refused() {
        for time in [
            "0000-01-01T00:00:00+00:01",
            "0000-01-01T00:00:00-23:59",
            "9999-12-31T23:59:59-00:01",
            "9999-12-31T23:59:59.999999999+23:59",
            "1969-12-31T23:59:59.9999995Z",
            "2026-02-29T00:00:00Z",
            "2026-11-21T10:00:00.1234567Z",
        ] {
            let body = format!(
                r#"{{"likes":[{{"client_event_id":"e","track_id":"t","liked":true,"event_time":"{time}"}}]}}"#
            );
            match sync_push(body.as_bytes()) {
                Ok((likes, _)) => {
                    let written = likes[0].event_time.to_rfc3339();
                    assert_eq!(
                        musiclib_core::Timestamp::parse_rfc3339(&written),
                        Some(likes[0].event_time),
                        "{time} written as {written:?}"
                    );
                }
                Err(error) => assert_eq!(error.status().as_u16(), 422, "{time}"),
            }
        }
    }
}
