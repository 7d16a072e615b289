-- Internet radio stations (issue 37): managed by admins, listed for every signed-in user.
-- The server touches a station's stream URL only to relay it (its checks are in core
-- `stations`); the home page is only shown.
CREATE TABLE radio_stations (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    stream_url   TEXT NOT NULL,
    homepage_url TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX radio_stations_name ON radio_stations (name);
