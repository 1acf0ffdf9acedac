//! `--resource-timeout` / `--resource-warn-after`: deploy's, destroy's and state destroy's
//! per-resource operation deadlines (upstream cdkd's flags; what they do is
//! `crate::provider::deadline`).

use clap::Args;

use crate::provider::deadline::{self, Deadlines, Token};

#[derive(Debug, Clone, Default, Args)]
pub struct ResourceTimeouts {
    /// Warn once when a single resource's create, update or delete has run this long
    /// [default: 5m]. A bare duration (30s, 5m, 1h) sets it for every resource;
    /// TYPE=DURATION (AWS::CloudFront::Distribution=10m) for one type (repeatable).
    #[arg(
        long = "resource-warn-after",
        value_name = "DURATION|TYPE=DURATION",
        value_parser = deadline::parse_token
    )]
    pub warn_after: Vec<Token>,
    /// Abandon a single resource's create, update or delete after this long and fail the
    /// resource (the deploy then rolls back unless --no-rollback) [default: 30m]. A bare
    /// duration for every resource, TYPE=DURATION for one type (repeatable). A custom
    /// resource keeps its handler's full response timeout (1h) unless its own type is named.
    /// A timeout below the 5m warning lowers the warning to half of it.
    #[arg(
        long = "resource-timeout",
        value_name = "DURATION|TYPE=DURATION",
        value_parser = deadline::parse_token
    )]
    pub timeout: Vec<Token>,
}

impl ResourceTimeouts {
    /// Validates the pair and makes it this process's deadlines, printing any notice about a
    /// lowered warn-after.
    pub fn apply(&self) -> Result<(), crate::error::Error> {
        let (deadlines, notices) = Deadlines::new(
            deadline::budget(&self.warn_after),
            deadline::budget(&self.timeout),
        )
        .map_err(crate::error::Error::Usage)?;
        for notice in notices {
            crate::ui::warn(notice);
        }
        deadline::configure(deadlines);
        Ok(())
    }
}
