-- The legacy (Subsonic) interface: Bob revealed his app password, "Kq7mXvB3nRt8HwPz4sYeLc2D",
-- stored encrypted under LEGACY_SECRET_KEY "migration-test legacy key" (the test opens the
-- library with it), bound to his id, with its SHA-256 for the apiKey lookup.
UPDATE users
   SET legacy_password_enc = 'v1:000102030405060708090a0b:61a779482b21a3bb9fb593d06b0ba10dbc40c2ec2e2cc24eacecc2698449a5a3b8ca6ca2d8829ef0',
       legacy_key_digest = '0917983f3c633568b63ab27d4e16ae58319ad5c89959661040a6c9da87e97975',
       updated_at = 1700008000000000
 WHERE id = '018b0000-0000-7000-8000-00000000a002';
