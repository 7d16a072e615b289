//! A remote source whose calls are counted for the operators (`crate::metrics`): every
//! search, item read, download and health check, by outcome. [`super::Remote::new`] wraps
//! each source it builds, so a new source is counted without doing anything.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use super::{DownloadRequest, RemoteHit, RemoteSource, SourceError};
use crate::metrics::{Outcome, OutsideCall, Service};

/// `inner`, counted as `service`. Every method of [`RemoteSource`] is passed through.
#[derive(Debug)]
pub(super) struct Metered {
    inner: Box<dyn RemoteSource>,
    service: Service,
}

impl Metered {
    pub(super) fn source(service: Service, inner: impl RemoteSource + 'static) -> Arc<Metered> {
        Arc::new(Metered {
            inner: Box::new(inner),
            service,
        })
    }

    async fn counted<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, SourceError>>,
    ) -> Result<T, SourceError> {
        let started = OutsideCall::start(self.service);
        let result = call.await;
        started.finish(match &result {
            Ok(_) => Outcome::Ok,
            Err(SourceError::NotFound(_)) => Outcome::NotFound,
            Err(SourceError::Unavailable(_)) => Outcome::Unavailable,
            Err(SourceError::RateLimited(_)) => Outcome::RateLimited,
            Err(SourceError::Refused(_)) => Outcome::Refused,
            Err(SourceError::TooLarge(_) | SourceError::Failed(_)) => Outcome::Failed,
        });
        result
    }
}

#[async_trait]
impl RemoteSource for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn check_id(&self, source_id: &str) -> Result<(), String> {
        self.inner.check_id(source_id)
    }

    async fn search(&self, query: &str, limit: usize) -> Result<Vec<RemoteHit>, SourceError> {
        self.counted(self.inner.search(query, limit)).await
    }

    async fn metadata(&self, source_id: &str) -> Result<RemoteHit, SourceError> {
        self.counted(self.inner.metadata(source_id)).await
    }

    async fn download(
        &self,
        source_id: &str,
        request: DownloadRequest<'_>,
    ) -> Result<PathBuf, SourceError> {
        self.counted(self.inner.download(source_id, request)).await
    }

    async fn health(&self) -> Result<(), SourceError> {
        self.counted(self.inner.health()).await
    }
}
