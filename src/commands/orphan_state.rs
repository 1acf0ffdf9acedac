//! `cdkd state orphan`: drop a stack's record, or some of its resources, leaving AWS untouched.

use super::Session;
use crate::cli::StateOrphanArgs;
use crate::error::{Error, ExitStatus, Result};

pub async fn run(_session: &Session, _args: &StateOrphanArgs) -> Result<ExitStatus> {
    Err(Error::NotImplemented {
        command: "state orphan",
    })
}
