//! What happens to an AWS resource when cdkd deletes the record of it: CloudFormation's
//! `DeletionPolicy` / `UpdateReplacePolicy`, and the stack's and resources' termination and
//! deletion protection.
//!
//! - Which policy governs a delete ([`Governing`]): `DeletionPolicy` for a destroy, a resource
//!   removed from the template and the rollback of a create; `UpdateReplacePolicy` for the old
//!   resource of a replacement; none for a delete a rollback needs to put things back (the new
//!   resource of a replacement it reverts).
//! - The policy itself ([`deletion_policy`]): the recorded one, else CloudFormation's default,
//!   which is `Snapshot` for an `AWS::RDS::DBCluster` and a standalone `AWS::RDS::DBInstance`
//!   and `Delete` for everything else.
//! - `Retain` keeps the resource on every delete; `RetainExceptOnCreate` keeps it except on the
//!   rollback of the deploy that created it ([`keeps_on_create_rollback`]).
//! - `Snapshot` takes the final snapshot first ([`snapshot`]) unless `--skip-final-snapshot`.
//! - `--remove-protection` turns the resource's deletion protection off first ([`protection`]).
//!   The stack-level `terminationProtection` refusal is the destroy command's, and a deploy's
//!   for its nested stacks (`deploy::nested`).
//!
//! The steps run inside [`crate::engine::deploy::delete_recorded`], the one per-resource delete.

pub mod protection;
pub mod snapshot;

use crate::provider::{Provider, ProviderContext};
use crate::state::{ResourcePolicy, ResourceState};
use crate::ui;

/// The run's flags that change how resources are deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeleteRules {
    /// `--skip-final-snapshot`: delete `Snapshot` resources without their final snapshot.
    pub skip_final_snapshot: bool,
    /// `--remove-protection`: turn resource-level deletion protection off before the delete.
    pub remove_protection: bool,
}

/// Which of a record's policies governs a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Governing {
    /// `DeletionPolicy`: a destroy, a removed resource, the rollback of a create.
    Deletion,
    /// `UpdateReplacePolicy`: the old resource of a replacement.
    Replacement,
    /// Neither: a delete a rollback needs to restore the previous state.
    Plain,
}

/// How one delete is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deletion {
    pub rules: DeleteRules,
    pub governing: Governing,
}

impl Deletion {
    /// A delete no policy governs, with no protection flip.
    pub const PLAIN: Deletion = Deletion {
        rules: DeleteRules {
            skip_final_snapshot: false,
            remove_protection: false,
        },
        governing: Governing::Plain,
    };
}

impl DeleteRules {
    /// A delete governed by `DeletionPolicy`.
    pub fn on_delete(self) -> Deletion {
        Deletion {
            rules: self,
            governing: Governing::Deletion,
        }
    }

    /// The delete of a replaced resource, governed by `UpdateReplacePolicy`.
    pub fn on_replace(self) -> Deletion {
        Deletion {
            rules: self,
            governing: Governing::Replacement,
        }
    }
}

/// The `DeletionPolicy` in force: the recorded one, else CloudFormation's default.
pub fn deletion_policy(rec: &ResourceState) -> ResourcePolicy {
    if let Some(p) = &rec.deletion_policy {
        return p.clone();
    }
    let standalone_instance = rec.resource_type == "AWS::RDS::DBInstance"
        && !rec
            .properties
            .get("DBClusterIdentifier")
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.is_empty());
    if rec.resource_type == "AWS::RDS::DBCluster" || standalone_instance {
        ResourcePolicy::Snapshot
    } else {
        ResourcePolicy::Delete
    }
}

/// The `UpdateReplacePolicy` in force (`Delete` when none is recorded).
pub fn update_replace_policy(rec: &ResourceState) -> ResourcePolicy {
    rec.update_replace_policy
        .clone()
        .unwrap_or(ResourcePolicy::Delete)
}

/// Whether the rollback of the deploy that created the resource keeps it: only `Retain` does
/// (`RetainExceptOnCreate` exists to let that rollback clean up).
pub fn keeps_on_create_rollback(rec: &ResourceState) -> bool {
    rec.deletion_policy == Some(ResourcePolicy::Retain)
}

impl Deletion {
    /// The policy that governs this delete of `rec`, if any.
    pub fn policy(&self, rec: &ResourceState) -> Option<ResourcePolicy> {
        match self.governing {
            Governing::Deletion => Some(deletion_policy(rec)),
            Governing::Replacement => Some(update_replace_policy(rec)),
            Governing::Plain => None,
        }
    }

    /// The steps before the provider's delete: the protection flip, then the final snapshot.
    /// An error means the resource must not be deleted (no usable snapshot exists).
    pub async fn before_delete(
        &self,
        provider: &dyn Provider,
        ctx: &ProviderContext<'_>,
        logical_id: &str,
        rec: &ResourceState,
        physical_id: &str,
    ) -> Result<(), String> {
        if self.rules.remove_protection {
            protection::turn_off(provider, ctx, logical_id, rec, physical_id).await;
        } else if let Some(property) = protection::recorded_on(rec) {
            // AWS would refuse the delete; refused here, before a final snapshot is taken for a
            // delete that cannot happen.
            return Err(format!(
                "{property} is on, so AWS refuses to delete {logical_id}; it was not deleted: \
                 pass --remove-protection to turn it off first, or deploy with it off"
            ));
        }
        if self.policy(rec) != Some(ResourcePolicy::Snapshot) {
            return Ok(());
        }
        let Some(mechanism) = snapshot::mechanism(&rec.resource_type) else {
            // CloudFormation deletes a type it cannot snapshot as if the policy were Delete.
            return Ok(());
        };
        if self.rules.skip_final_snapshot {
            ui::info(format!(
                "  {logical_id}: deleted without the final snapshot its Snapshot policy asks for \
                 (--skip-final-snapshot)"
            ));
            return Ok(());
        }
        snapshot::take(ctx, mechanism, logical_id, rec, physical_id)
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(t: &str, props: serde_json::Value) -> ResourceState {
        ResourceState::new("p", t, props.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn rds_defaults_to_snapshot_except_for_cluster_members() {
        let standalone = rec("AWS::RDS::DBInstance", json!({}));
        assert_eq!(deletion_policy(&standalone), ResourcePolicy::Snapshot);
        let member = rec("AWS::RDS::DBInstance", json!({"DBClusterIdentifier": "c"}));
        assert_eq!(deletion_policy(&member), ResourcePolicy::Delete);
        let cluster = rec("AWS::RDS::DBCluster", json!({}));
        assert_eq!(deletion_policy(&cluster), ResourcePolicy::Snapshot);
        assert_eq!(
            deletion_policy(&rec("AWS::SQS::Queue", json!({}))),
            ResourcePolicy::Delete
        );
        let mut recorded = standalone.clone();
        recorded.deletion_policy = Some(ResourcePolicy::Delete);
        assert_eq!(deletion_policy(&recorded), ResourcePolicy::Delete);
    }

    #[test]
    fn only_retain_keeps_a_create_its_rollback_deletes() {
        let mut r = rec("AWS::SQS::Queue", json!({}));
        r.deletion_policy = Some(ResourcePolicy::Retain);
        assert!(keeps_on_create_rollback(&r));
        r.deletion_policy = Some(ResourcePolicy::RetainExceptOnCreate);
        assert!(!keeps_on_create_rollback(&r));
        assert!(r.retains_on_delete());
    }

    #[test]
    fn each_delete_reads_its_own_policy() {
        let mut r = rec("AWS::EC2::Volume", json!({}));
        r.deletion_policy = Some(ResourcePolicy::Delete);
        r.update_replace_policy = Some(ResourcePolicy::Snapshot);
        let rules = DeleteRules::default();
        assert_eq!(rules.on_delete().policy(&r), Some(ResourcePolicy::Delete));
        assert_eq!(
            rules.on_replace().policy(&r),
            Some(ResourcePolicy::Snapshot)
        );
        assert_eq!(Deletion::PLAIN.policy(&r), None);
    }
}
