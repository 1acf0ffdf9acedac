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
    /// With a mapping, also look for every resource it does not name, as an import without
    /// a mapping does (the mapping wins where it names one).
    #[arg(long)]
    pub auto: bool,
    /// Show what would be imported (each resource and its physical id) and write nothing:
    /// no state, no lock.
    #[arg(long, conflicts_with = "migrate_from_cloudformation")]
    pub dry_run: bool,
    /// Write the mapping the import used (logical id -> physical id, as --resource-mapping
    /// reads it) to FILE, before the state is written; also under --dry-run.
    #[arg(long, value_name = "FILE")]
    pub record_resource_mapping: Option<PathBuf>,
    /// A JSON file mapping logical ids to physical ids.
    #[arg(long, value_name = "FILE")]
    pub resource_mapping: Option<PathBuf>,
    /// The same mapping given inline as JSON.
    #[arg(long, value_name = "JSON")]
    pub resource_mapping_inline: Option<String>,
    /// Adopt every resource of a CloudFormation stack, then retire that stack (every resource
    /// kept, DeletionPolicy: Retain): the stack of the same name, or CFN_STACK when given
    /// (a stack deployed under another name). Nested stacks are taken over with it.
    #[arg(long, value_name = "CFN_STACK", num_args = 0..=1, default_missing_value = "")]
    pub migrate_from_cloudformation: Option<String>,
    /// Overwrite existing state records for the named resources; without a mapping (or with
    /// --auto), confirm rebuilding an existing record from what the import finds.
    #[arg(long)]
    pub force: bool,
    /// Template parameter value, as [STACK:]KEY=VALUE (repeatable); `*:KEY=VALUE` or
    /// `KEY=VALUE` is for every stack, `STACK:` wins for its stack. Values are not remembered
    /// between deploys (state has no place for them): pass them on every run.
    #[arg(long = "parameters", value_name = "[STACK:]KEY=VALUE")]
    pub parameters: Vec<String>,
}

impl ImportArgs {
    /// The CloudFormation stack `--migrate-from-cloudformation` takes over: the one it names,
    /// else the cdkd stack's own name (`stack_name`); `None` without the flag.
    pub fn migration_source<'a>(&'a self, stack_name: &'a str) -> Option<&'a str> {
        self.migrate_from_cloudformation.as_deref().map(|name| {
            if name.is_empty() {
                stack_name
            } else {
                name
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn import(args: &[&str]) -> Result<super::ImportArgs, clap::Error> {
        let cli = Cli::try_parse_from(["cdkd", "import"].iter().chain(args))?;
        match cli.command {
            Command::Import(a) => Ok(a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_cloudformation_stack_name_is_optional() {
        let a = import(&["S"]).unwrap();
        assert_eq!(a.migration_source("S"), None);
        let a = import(&["S", "--migrate-from-cloudformation"]).unwrap();
        assert_eq!(a.migration_source("S"), Some("S"));
        let a = import(&["S", "--migrate-from-cloudformation", "--force"]).unwrap();
        assert_eq!(a.migration_source("S"), Some("S"));
        assert!(a.force);
        let a = import(&["S", "--migrate-from-cloudformation", "Legacy"]).unwrap();
        assert_eq!(a.migration_source("S"), Some("Legacy"));
        // A migration writes to CloudFormation: it has no dry run.
        assert!(import(&["S", "--migrate-from-cloudformation", "--dry-run"]).is_err());
        let a = import(&[
            "S",
            "--auto",
            "--dry-run",
            "--record-resource-mapping",
            "m.json",
        ])
        .unwrap();
        assert!(a.auto && a.dry_run);
        assert_eq!(
            a.record_resource_mapping.as_deref(),
            Some(std::path::Path::new("m.json"))
        );
    }
}
