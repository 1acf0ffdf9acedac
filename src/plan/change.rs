//! The change set: what a deploy will do to each resource, and why.
//!
//! Data only. The deploy engine computes it (diffing the template against
//! state, classifying replacements, propagating them to dependents); `diff`
//! renders it; the executor acts on it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happens to one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChangeKind {
    /// In the template, not in state.
    Create,
    /// Changed in place.
    Update,
    /// Deleted and created again (a new physical id).
    Replace,
    /// In state, not in the (condition-pruned) template.
    Delete,
    NoChange,
}

/// Why a resource has its [`ChangeKind`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum ChangeReason {
    /// Not recorded in state.
    New,
    /// Gone from the template, or its `Condition` is now false.
    Removed,
    /// One or more properties differ from state.
    PropertiesChanged,
    /// `Type` changed; CloudFormation replaces the resource.
    TypeChanged { old: String, new: String },
    /// A changed property cannot be updated in place.
    ImmutableProperty { path: String },
    /// A resource it references is replaced, so the value it reads (a
    /// physical id or an attribute) will move.
    ReplacementPropagated { from: String },
    /// A resource it reads an attribute of is updated in a way that can move
    /// that attribute.
    AttributePropagated { from: String, attribute: String },
    /// The user asked for it (`--replace`, `--recreate-via-*`).
    Requested { flag: String },
}

/// One property that differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertyDiff {
    /// Dotted path inside `Properties`, e.g. `VersioningConfiguration.Status`.
    pub path: String,
    /// `None` when the property is being added.
    pub old: Option<Value>,
    /// `None` when the property is being removed.
    pub new: Option<Value>,
    /// Changing it means a new physical resource.
    pub requires_replacement: bool,
}

/// The planned change to one resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChange {
    pub logical_id: String,
    pub resource_type: String,
    pub kind: ChangeKind,
    pub reasons: Vec<ChangeReason>,
    pub property_diffs: Vec<PropertyDiff>,
}

impl ResourceChange {
    /// A change with no reasons or property diffs yet.
    pub fn new(logical_id: &str, resource_type: &str, kind: ChangeKind) -> Self {
        ResourceChange {
            logical_id: logical_id.to_string(),
            resource_type: resource_type.to_string(),
            kind,
            reasons: Vec::new(),
            property_diffs: Vec::new(),
        }
    }

    /// Whether any property diff requires replacement.
    pub fn requires_replacement(&self) -> bool {
        self.property_diffs.iter().any(|d| d.requires_replacement)
    }
}

/// How many resources of each kind a change set holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeCounts {
    pub create: usize,
    pub update: usize,
    pub replace: usize,
    pub delete: usize,
    pub no_change: usize,
}

impl ChangeCounts {
    /// Everything except `no_change`.
    pub fn changed(&self) -> usize {
        self.create + self.update + self.replace + self.delete
    }
}

/// The planned changes to one stack's resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeSet {
    pub stack: String,
    /// One entry per resource, in template order, then deletions in state order.
    pub changes: Vec<ResourceChange>,
    /// The IAM and security-group part of the changes (`--require-approval broadening`, the
    /// diff's security tables).
    #[serde(
        default,
        skip_serializing_if = "super::security::SecurityChanges::is_empty"
    )]
    pub security: super::security::SecurityChanges,
}

impl ChangeSet {
    pub fn new(stack: &str) -> Self {
        ChangeSet {
            stack: stack.to_string(),
            changes: Vec::new(),
            security: Default::default(),
        }
    }

    /// Whether any resource is created, updated, replaced or deleted.
    pub fn has_changes(&self) -> bool {
        self.changes.iter().any(|c| c.kind != ChangeKind::NoChange)
    }

    pub fn counts(&self) -> ChangeCounts {
        let mut c = ChangeCounts::default();
        for change in &self.changes {
            *match change.kind {
                ChangeKind::Create => &mut c.create,
                ChangeKind::Update => &mut c.update,
                ChangeKind::Replace => &mut c.replace,
                ChangeKind::Delete => &mut c.delete,
                ChangeKind::NoChange => &mut c.no_change,
            } += 1;
        }
        c
    }

    pub fn get(&self, logical_id: &str) -> Option<&ResourceChange> {
        self.changes.iter().find(|c| c.logical_id == logical_id)
    }

    pub fn get_mut(&mut self, logical_id: &str) -> Option<&mut ResourceChange> {
        self.changes.iter_mut().find(|c| c.logical_id == logical_id)
    }

    /// The changes of one kind, in order.
    pub fn of_kind(&self, kind: ChangeKind) -> impl Iterator<Item = &ResourceChange> + '_ {
        self.changes.iter().filter(move |c| c.kind == kind)
    }
}
