-- An internet radio station.
INSERT INTO radio_stations (id, name, stream_url, homepage_url, created_at, updated_at) VALUES
    ('018b0000-0000-7000-8000-00000000f201', 'Radio Nocturne', 'https://radio.example.com/nocturne.aac', 'https://radio.example.com/', 1700013000000000, 1700013000000000);
