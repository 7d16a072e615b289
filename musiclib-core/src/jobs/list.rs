//! The admin's view of the queue: recent jobs, newest first.

use super::queue::{JobRow, JOB_COLUMNS};
use super::{Job, JobState, Jobs};
use crate::auth::Caller;
use crate::domain::{Page, Paged};
use crate::Result;

/// Which jobs [`Jobs::list`] returns.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// Only jobs of this kind (a [`super::JobKind::NAME`]).
    pub kind: Option<String>,
}

impl Jobs {
    /// Admin only: jobs matching `filter`, newest first.
    pub async fn list(
        &self,
        caller: &Caller,
        filter: &JobFilter,
        page: Page,
    ) -> Result<Paged<Job>> {
        caller.require_admin()?;
        let db = self.db();
        let mut sql = db.sql("");
        if let Some(state) = filter.state {
            sql.push_condition()
                .push("state = ")
                .push_bind(state.as_str());
        }
        if let Some(kind) = &filter.kind {
            sql.push_condition()
                .push("kind = ")
                .push_bind(kind.as_str());
        }
        sql.fetch_page::<JobRow, _>(
            db.pool(),
            "SELECT COUNT(*) FROM jobs",
            &format!("SELECT {JOB_COLUMNS} FROM jobs"),
            "created_at DESC, id DESC",
            page,
        )
        .await
    }
}
