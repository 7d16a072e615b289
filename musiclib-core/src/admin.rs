//! Server administration: operations only an admin may run. Server settings and sources come
//! from the environment (ARCHITECTURE.md, "Configuration"), so changing them here is refused
//! as not supported, after the permission check every admin operation makes.

use crate::auth::Caller;
use crate::{Error, Result};

/// The administration service.
#[derive(Clone, Debug)]
pub struct Admin;

impl Admin {
    /// Refuses to change server settings, which come from the environment: not supported
    /// (after the admin check).
    pub fn change_settings(&self, caller: &Caller) -> Result<std::convert::Infallible> {
        caller.require_admin()?;
        Err(Error::NotSupported(
            "server settings come from the environment; change them there and restart".into(),
        ))
    }

    /// Refuses to change a source, which is configured in the environment: not supported
    /// (after the admin check).
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
