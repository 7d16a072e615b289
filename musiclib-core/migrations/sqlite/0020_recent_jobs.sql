-- The admin's list of recent jobs (GET /admin/jobs), newest first, all or of one kind.
CREATE INDEX jobs_recent ON jobs (created_at);
CREATE INDEX jobs_kind_recent ON jobs (kind, created_at);
