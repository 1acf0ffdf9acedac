//! `cdkd gc`: its options.

use clap::Args;

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Never delete an object or image younger than this, referenced or not (it protects
    /// publishes in flight and recent rollback targets): a number and a unit, s, m, h or d
    /// [default: 30d].
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// List what would be deleted, with sizes and ages; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan (and what was deleted) as JSON.
    #[arg(long)]
    pub json: bool,
}
