//! `cdkd import`'s options.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The stack to import into.
    pub stack: String,
    /// A resource to adopt, as LogicalId=physicalId (repeatable).
    #[arg(long = "resource", value_name = "LOGICAL_ID=PHYSICAL_ID")]
    pub resources: Vec<String>,
    /// A JSON file mapping logical ids to physical ids.
    #[arg(long, value_name = "FILE")]
    pub resource_mapping: Option<PathBuf>,
    /// The same mapping given inline as JSON.
    #[arg(long, value_name = "JSON")]
    pub resource_mapping_inline: Option<String>,
    /// Adopt every resource of the CloudFormation stack of the same name, then retire that stack.
    #[arg(long)]
    pub migrate_from_cloudformation: bool,
    /// Overwrite existing state records for the named resources.
    #[arg(long)]
    pub force: bool,
    /// Template parameter value, as [STACK:]KEY=VALUE (repeatable); `*:KEY=VALUE` or
    /// `KEY=VALUE` is for every stack, `STACK:` wins for its stack. Values are not remembered
    /// between deploys (state has no place for them): pass them on every run.
    #[arg(long = "parameters", value_name = "[STACK:]KEY=VALUE")]
    pub parameters: Vec<String>,
}
