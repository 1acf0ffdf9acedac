//! `--require-approval`: the confirmation asked after a stack's plan is known and before
//! anything changes. On a terminal the user is asked (one stack at a time); elsewhere the
//! deploy is refused unless `--yes` approves every change up front.

use std::io::{BufRead as _, IsTerminal};
use std::sync::Mutex;

use crate::cli::RequireApproval;
use crate::engine::deploy::Approve;
use crate::plan::{ChangeKind, ChangeSet};

/// Whether `changes` need a confirmation under `level`.
pub fn needs_approval(level: RequireApproval, changes: &ChangeSet) -> bool {
    match level {
        RequireApproval::Never => false,
        RequireApproval::AnyChange => changes.has_changes(),
        RequireApproval::Destructive => changes
            .changes
            .iter()
            .any(|c| matches!(c.kind, ChangeKind::Replace | ChangeKind::Delete)),
        RequireApproval::Broadening => changes.security.broadening,
    }
}

fn level_name(level: RequireApproval) -> &'static str {
    match level {
        RequireApproval::Never => "never",
        RequireApproval::AnyChange => "any-change",
        RequireApproval::Destructive => "destructive",
        RequireApproval::Broadening => "broadening",
    }
}

/// The lines that show what needs approval: `  [-] Queue (AWS::SQS::Queue) delete`; for
/// `broadening`, the security tables (IAM statements, managed policies, security groups).
pub fn describe(level: RequireApproval, changes: &ChangeSet) -> Vec<String> {
    if level == RequireApproval::Broadening {
        return crate::plan::security::render::tables(&changes.security);
    }
    changes
        .changes
        .iter()
        .filter(|c| match level {
            RequireApproval::Destructive => {
                matches!(c.kind, ChangeKind::Replace | ChangeKind::Delete)
            }
            _ => c.kind != ChangeKind::NoChange,
        })
        .map(|c| {
            let (mark, verb) = match c.kind {
                ChangeKind::Create => ("[+]", "create"),
                ChangeKind::Update => ("[~]", "update"),
                ChangeKind::Replace => ("[-/+]", "replace"),
                ChangeKind::Delete => ("[-]", "delete"),
                ChangeKind::NoChange => ("[ ]", "no change"),
            };
            format!("  {mark} {} ({}) {verb}", c.logical_id, c.resource_type)
        })
        .collect()
}

/// The gate one deploy uses for all its stacks.
pub struct ApprovalGate {
    level: RequireApproval,
    yes: bool,
    interactive: bool,
    /// One question on the terminal at a time, even with stacks deploying in parallel.
    asking: Mutex<()>,
}

impl ApprovalGate {
    /// `interactive`: stdin and stderr are terminals.
    pub fn new(level: RequireApproval, yes: bool) -> Self {
        ApprovalGate {
            level,
            yes,
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            asking: Mutex::new(()),
        }
    }
}

impl Approve for ApprovalGate {
    fn approve(&self, stack: &str, changes: &ChangeSet) -> Result<(), String> {
        if !needs_approval(self.level, changes) || self.yes {
            return Ok(());
        }
        let level = level_name(self.level);
        if !self.interactive {
            // What widens is shown even when it cannot be asked about.
            if self.level == RequireApproval::Broadening {
                let _one_at_a_time = self.asking.lock().unwrap_or_else(|p| p.into_inner());
                super::info(format!("{stack}: these changes broaden permissions:"));
                for line in describe(self.level, changes) {
                    super::info(line);
                }
            }
            return Err(format!(
                "these changes need approval (--require-approval {level}) and there is \
                 no terminal to ask on; pass --yes to approve them (review them first with \
                 --dry-run)"
            ));
        }
        let _one_at_a_time = self.asking.lock().unwrap_or_else(|p| p.into_inner());
        super::info(format!(
            "{stack}: these changes need approval (--require-approval {level}):"
        ));
        for line in describe(self.level, changes) {
            super::info(line);
        }
        super::info("Do you wish to deploy these changes (y/n)?");
        let mut answer = String::new();
        // Reading a line blocks this worker only; other stacks keep going.
        let read = tokio::task::block_in_place(|| std::io::stdin().lock().read_line(&mut answer));
        match read {
            Ok(_) if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Ok(()),
            Ok(_) => Err("the changes were not approved".to_owned()),
            Err(e) => Err(format!("cannot read the answer from stdin ({e})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ResourceChange;

    fn set(kinds: &[ChangeKind]) -> ChangeSet {
        let mut s = ChangeSet::new("S");
        for (i, k) in kinds.iter().enumerate() {
            s.changes
                .push(ResourceChange::new(&format!("R{i}"), "AWS::SQS::Queue", *k));
        }
        s
    }

    #[test]
    fn levels() {
        let create = set(&[ChangeKind::Create, ChangeKind::NoChange]);
        let delete = set(&[ChangeKind::Update, ChangeKind::Delete]);
        let none = set(&[ChangeKind::NoChange]);
        assert!(!needs_approval(RequireApproval::Never, &delete));
        assert!(needs_approval(RequireApproval::AnyChange, &create));
        assert!(!needs_approval(RequireApproval::AnyChange, &none));
        assert!(!needs_approval(RequireApproval::Destructive, &create));
        assert!(needs_approval(RequireApproval::Destructive, &delete));
        assert_eq!(
            describe(RequireApproval::Destructive, &delete),
            vec!["  [-] R1 (AWS::SQS::Queue) delete"]
        );
    }

    #[test]
    fn refuses_without_a_terminal_unless_yes() {
        let delete = set(&[ChangeKind::Delete]);
        let gate = ApprovalGate {
            level: RequireApproval::Destructive,
            yes: false,
            interactive: false,
            asking: Mutex::new(()),
        };
        let err = gate.approve("S", &delete).unwrap_err();
        assert!(
            err.contains("--yes") && err.contains("destructive"),
            "{err}"
        );
        let gate = ApprovalGate { yes: true, ..gate };
        assert!(gate.approve("S", &delete).is_ok());
    }

    #[test]
    fn broadening_asks_only_when_permissions_widen() {
        let mut widened = set(&[ChangeKind::Create]);
        let new = serde_json::json!({"Roles": ["r"], "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}});
        widened.security = crate::plan::security::analyze([crate::plan::security::Sides {
            logical_id: "P",
            resource_type: "AWS::IAM::Policy",
            old: None,
            new: new.as_object(),
        }]);
        let queue_only = set(&[ChangeKind::Create, ChangeKind::Delete]);
        assert!(needs_approval(RequireApproval::Broadening, &widened));
        assert!(!needs_approval(RequireApproval::Broadening, &queue_only));
        let lines = describe(RequireApproval::Broadening, &widened);
        assert_eq!(lines[0], "IAM Statement Changes");
        assert!(
            lines.iter().any(|l| l.contains("s3:GetObject")),
            "{lines:?}"
        );
        let gate = ApprovalGate {
            level: RequireApproval::Broadening,
            yes: false,
            interactive: false,
            asking: Mutex::new(()),
        };
        assert!(gate
            .approve("S", &widened)
            .unwrap_err()
            .contains("broadening"));
        assert!(gate.approve("S", &queue_only).is_ok());
    }
}
