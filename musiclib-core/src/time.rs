//! Timestamps: microseconds since the Unix epoch, as the database stores them.

use std::fmt;

/// A point in time with microsecond precision, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// From microseconds since the epoch.
    pub fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Microseconds since the epoch.
    pub fn as_micros(self) -> i64 {
        self.0
    }

    /// The application clock's now. Rows that need the database clock use [`crate::db::Db::now`].
    pub fn now() -> Self {
        let now = time::OffsetDateTime::now_utc();
        Timestamp((now.unix_timestamp_nanos() / 1000) as i64)
    }

    /// RFC 3339 text in UTC, e.g. `2026-11-21T10:00:00.123456Z`.
    pub fn to_rfc3339(self) -> String {
        let datetime = time::OffsetDateTime::from_unix_timestamp_nanos(self.0 as i128 * 1000)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        datetime
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    /// Parses RFC 3339 text (any offset).
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
            .ok()
            .map(|datetime| Timestamp((datetime.unix_timestamp_nanos() / 1000) as i64))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let timestamp = Timestamp::from_micros(1_763_719_200_123_456);
        let text = timestamp.to_rfc3339();
        assert_eq!(text, "2025-11-21T10:00:00.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&text), Some(timestamp));
    }
}
