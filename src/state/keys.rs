//! The key layout of the state bucket, shared with the TypeScript cdkd.
//!
//! ```text
//! {prefix}/{stack}/{region}/state.json               the record (schema v2+)
//! {prefix}/{stack}/{region}/lock.json                the stack lock
//! {prefix}/{stack}/{region}/rollback-journal.json    the rollback journal
//! {prefix}/{stack}/{region}/create-tokens.json       the create-token ledger
//! {prefix}/{stack}/{region}/deployments/...          the deployment event store
//! {prefix}/{stack}/state.json                        legacy record (version 1), read only
//! {prefix}/{stack}/lock.json                         legacy lock (not region-scoped)
//! {prefix}/_index/{region}/exports.json              the exports index
//! cdkd-bootstrap/{region}.json                       asset-storage marker (outside the prefix)
//! custom-resource-responses/{requestId}.json         custom-resource response placeholders
//! ```
//!
//! A nested stack's child is keyed by `{parent}~{childLogicalId}` (and a
//! grandchild by `{parent}~{child}~{grandchild}`). The default prefix is
//! `cdkd`; an empty prefix is a real key space and is kept as given.

/// The default `--state-prefix`.
pub const DEFAULT_STATE_PREFIX: &str = "cdkd";
/// The record's file name.
pub const STATE_FILE: &str = "state.json";
/// The lock's file name.
pub const LOCK_FILE: &str = "lock.json";
/// The rollback journal's file name.
pub const ROLLBACK_JOURNAL_FILE: &str = "rollback-journal.json";
/// The create-token ledger's file name.
pub const CREATE_TOKENS_FILE: &str = "create-tokens.json";
/// The folder of the deployment event store under a stack's region.
pub const DEPLOYMENTS_DIR: &str = "deployments";
/// The exports-index folder under the prefix.
pub const EXPORT_INDEX_DIR: &str = "_index";
/// The asset-storage marker folder, outside the prefix so stack listing never
/// mistakes it for a stack.
pub const BOOTSTRAP_MARKER_DIR: &str = "cdkd-bootstrap";
/// The default folder of custom-resource response placeholders.
pub const CUSTOM_RESOURCE_RESPONSE_PREFIX: &str = "custom-resource-responses";
/// Joins a nested child's logical id to its parent's stack name.
pub const NESTED_STACK_SEPARATOR: char = '~';

/// Key builder for one state prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateKeys {
    prefix: String,
}

impl Default for StateKeys {
    fn default() -> Self {
        StateKeys::new(DEFAULT_STATE_PREFIX)
    }
}

/// A record a key names: the stack and, for a region-scoped key, its region
/// (`None` for the legacy layout).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackRef {
    pub stack_name: String,
    pub region: Option<String>,
}

impl StateKeys {
    pub fn new(prefix: impl Into<String>) -> Self {
        StateKeys {
            prefix: prefix.into(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `{prefix}/`: what a listing of every stack asks for.
    pub fn list_prefix(&self) -> String {
        format!("{}/", self.prefix)
    }

    /// `{prefix}/{stack}/{region}/`: every object of one stack in one region.
    pub fn stack_region_prefix(&self, stack: &str, region: &str) -> String {
        format!("{}/{stack}/{region}/", self.prefix)
    }

    pub fn state(&self, stack: &str, region: &str) -> String {
        self.sibling(stack, region, STATE_FILE)
    }

    pub fn lock(&self, stack: &str, region: &str) -> String {
        self.sibling(stack, region, LOCK_FILE)
    }

    pub fn rollback_journal(&self, stack: &str, region: &str) -> String {
        self.sibling(stack, region, ROLLBACK_JOURNAL_FILE)
    }

    pub fn create_tokens(&self, stack: &str, region: &str) -> String {
        self.sibling(stack, region, CREATE_TOKENS_FILE)
    }

    /// `{prefix}/{stack}/{region}/deployments/`.
    pub fn deployments_prefix(&self, stack: &str, region: &str) -> String {
        format!(
            "{}{DEPLOYMENTS_DIR}/",
            self.stack_region_prefix(stack, region)
        )
    }

    /// The version-1 record key: `{prefix}/{stack}/state.json`.
    pub fn legacy_state(&self, stack: &str) -> String {
        format!("{}/{stack}/{STATE_FILE}", self.prefix)
    }

    /// The version-1 lock key: `{prefix}/{stack}/lock.json`.
    pub fn legacy_lock(&self, stack: &str) -> String {
        format!("{}/{stack}/{LOCK_FILE}", self.prefix)
    }

    /// `{prefix}/_index/{region}/exports.json`.
    pub fn export_index(&self, region: &str) -> String {
        format!("{}/{EXPORT_INDEX_DIR}/{region}/exports.json", self.prefix)
    }

    fn sibling(&self, stack: &str, region: &str, file: &str) -> String {
        format!("{}{file}", self.stack_region_prefix(stack, region))
    }

    /// The record a listed key names, or `None` for any other object:
    /// `{prefix}/{stack}/{region}/state.json` gives the stack and region,
    /// `{prefix}/{stack}/state.json` gives the stack of a legacy record.
    pub fn parse_state_key(&self, key: &str) -> Option<StackRef> {
        let rest = key.strip_prefix(&self.list_prefix())?;
        let mut segments: Vec<&str> = rest.split('/').collect();
        if segments.pop()? != STATE_FILE {
            return None;
        }
        match segments.as_slice() {
            [stack, region] if !stack.is_empty() && !region.is_empty() => Some(StackRef {
                stack_name: (*stack).to_string(),
                region: Some((*region).to_string()),
            }),
            [stack] if !stack.is_empty() => Some(StackRef {
                stack_name: (*stack).to_string(),
                region: None,
            }),
            _ => None,
        }
    }
}

/// `cdkd-bootstrap/{region}.json`.
pub fn bootstrap_marker_key(region: &str) -> String {
    format!("{BOOTSTRAP_MARKER_DIR}/{region}.json")
}

/// `custom-resource-responses/{requestId}.json`.
pub fn custom_resource_response_key(request_id: &str) -> String {
    format!("{CUSTOM_RESOURCE_RESPONSE_PREFIX}/{request_id}.json")
}

/// A nested child's stack name: `{parent}~{childLogicalId}`.
pub fn nested_stack_name(parent: &str, child_logical_id: &str) -> String {
    format!("{parent}{NESTED_STACK_SEPARATOR}{child_logical_id}")
}

/// The parent's stack name and the child's logical id, when `stack` names a
/// nested child (split at the last separator).
pub fn split_nested_stack_name(stack: &str) -> Option<(&str, &str)> {
    let (parent, child) = stack.rsplit_once(NESTED_STACK_SEPARATOR)?;
    (!parent.is_empty() && !child.is_empty()).then_some((parent, child))
}

/// The top-level stack a (possibly nested) stack name belongs to.
pub fn root_stack_name(stack: &str) -> &str {
    stack.split(NESTED_STACK_SEPARATOR).next().unwrap_or(stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let k = StateKeys::default();
        assert_eq!(
            k.state("MyStack", "us-east-1"),
            "cdkd/MyStack/us-east-1/state.json"
        );
        assert_eq!(
            k.lock("MyStack", "us-east-1"),
            "cdkd/MyStack/us-east-1/lock.json"
        );
        assert_eq!(
            k.rollback_journal("MyStack", "us-east-1"),
            "cdkd/MyStack/us-east-1/rollback-journal.json"
        );
        assert_eq!(
            k.create_tokens("MyStack", "us-east-1"),
            "cdkd/MyStack/us-east-1/create-tokens.json"
        );
        assert_eq!(
            k.deployments_prefix("MyStack", "us-east-1"),
            "cdkd/MyStack/us-east-1/deployments/"
        );
        assert_eq!(k.legacy_state("MyStack"), "cdkd/MyStack/state.json");
        assert_eq!(k.legacy_lock("MyStack"), "cdkd/MyStack/lock.json");
        assert_eq!(
            k.export_index("eu-west-1"),
            "cdkd/_index/eu-west-1/exports.json"
        );
        assert_eq!(
            bootstrap_marker_key("us-east-1"),
            "cdkd-bootstrap/us-east-1.json"
        );
        assert_eq!(
            custom_resource_response_key("cdkd-1756000000000-a1b2c3"),
            "custom-resource-responses/cdkd-1756000000000-a1b2c3.json"
        );
        assert_eq!(
            StateKeys::new("team-b").state("S", "r"),
            "team-b/S/r/state.json"
        );
        assert_eq!(StateKeys::new("").state("S", "r"), "/S/r/state.json");
    }

    #[test]
    fn state_keys_parse_back() {
        let k = StateKeys::default();
        for (stack, region) in [
            ("MyStack", "us-east-1"),
            ("Parent~Child~Grand", "ap-northeast-1"),
        ] {
            assert_eq!(
                k.parse_state_key(&k.state(stack, region)),
                Some(StackRef {
                    stack_name: stack.into(),
                    region: Some(region.into())
                })
            );
        }
        assert_eq!(
            k.parse_state_key(&k.legacy_state("Old")),
            Some(StackRef {
                stack_name: "Old".into(),
                region: None
            })
        );
        for other in [
            "cdkd/S/r/lock.json",
            "cdkd/S/r/rollback-journal.json",
            "cdkd/_index/r/exports.json",
            "cdkd/S/r/deployments/state.json",
            "cdkd//r/state.json",
            "cdkd/S//state.json",
            "cdkd/state.json",
            "other/S/r/state.json",
            "cdkd-bootstrap/us-east-1.json",
            "custom-resource-responses/x.json",
        ] {
            assert_eq!(k.parse_state_key(other), None, "{other}");
        }
        let empty = StateKeys::new("");
        assert_eq!(
            empty
                .parse_state_key("/S/r/state.json")
                .map(|r| r.stack_name),
            Some("S".to_string())
        );
    }

    #[test]
    fn nested_names() {
        assert_eq!(
            nested_stack_name("Parent", "ChildStack"),
            "Parent~ChildStack"
        );
        assert_eq!(
            split_nested_stack_name("Parent~Child~Grand"),
            Some(("Parent~Child", "Grand"))
        );
        assert_eq!(split_nested_stack_name("TopLevel"), None);
        assert_eq!(root_stack_name("Parent~Child~Grand"), "Parent");
    }
}
