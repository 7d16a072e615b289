//! Server administration: operations only an admin may run. Server settings and sources come
//! from the environment (ARCHITECTURE.md, "Configuration"), so changing them here is refused
//! as not supported, after the permission check every admin operation makes.

use crate::auth::Caller;
use crate::{Error, Result};

/// The administration service.
#[derive(Clone, Debug)]
pub struct Admin;

impl Admin {
    /// `PATCH /admin/settings`: server settings come from the environment (spec: always 501).
    pub fn change_settings(&self, caller: &Caller) -> Result<std::convert::Infallible> {
        caller.require_admin()?;
        Err(Error::NotSupported(
            "server settings come from the environment; change them there and restart".into(),
        ))
    }

    /// `PATCH /admin/sources/{source}`: sources are configured in the environment (spec:
    /// always 501).
    pub fn change_source(
        &self,
        caller: &Caller,
        _source: &str,
    ) -> Result<std::convert::Infallible> {
        caller.require_admin()?;
        Err(Error::NotSupported(
            "sources are configured in the environment; change them there and restart".into(),
        ))
    }
}
