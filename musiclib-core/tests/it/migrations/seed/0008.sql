-- A bookmark in Tunnel Vision.
INSERT INTO bookmarks (user_id, track_id, position_ms, comment, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000a001', '018b0000-0000-7000-8000-00000000d002', 61000, 'the chorus', 1700009000000000, 1700009000000000);
