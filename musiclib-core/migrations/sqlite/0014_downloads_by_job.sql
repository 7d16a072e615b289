-- A running fetch asks every half second whether its downloads were cancelled
-- (remote::downloads::ABANDONED), by job.
CREATE INDEX downloads_job ON downloads (job_id);
