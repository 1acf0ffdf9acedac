//! The security changes as boxed text tables, the three `cdk diff` shows: IAM statement
//! changes, IAM policy (managed-policy) changes and security-group changes. A cell holding
//! several values (two actions, a condition) spans several lines.

use super::SecurityChanges;

/// The tables for `changes`, each with its title line; empty when there is nothing to show.
pub fn tables(changes: &SecurityChanges) -> Vec<String> {
    let mut out = Vec::new();
    if !changes.statements.is_empty() {
        let rows = changes.statements.iter().map(|r| {
            vec![
                r.sign.mark().to_owned(),
                r.resource.clone(),
                r.effect.clone(),
                r.action.clone(),
                r.principal.clone(),
                r.condition.clone(),
            ]
        });
        out.push("IAM Statement Changes".to_owned());
        out.extend(table(
            &["", "Resource", "Effect", "Action", "Principal", "Condition"],
            rows,
        ));
    }
    if !changes.managed_policies.is_empty() {
        let rows = changes.managed_policies.iter().map(|r| {
            vec![
                r.sign.mark().to_owned(),
                r.resource.clone(),
                r.managed_policy_arn.clone(),
            ]
        });
        out.push("IAM Policy Changes".to_owned());
        out.extend(table(&["", "Resource", "Managed Policy ARN"], rows));
    }
    if !changes.security_groups.is_empty() {
        let rows = changes.security_groups.iter().map(|r| {
            vec![
                r.sign.mark().to_owned(),
                r.group.clone(),
                r.direction.clone(),
                r.protocol.clone(),
                r.peer.clone(),
            ]
        });
        out.push("Security Group Changes".to_owned());
        out.extend(table(&["", "Group", "Dir", "Protocol", "Peer"], rows));
    }
    out
}

/// A boxed table: a header row, then each row, a rule between every two.
fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Vec<String> {
    let mut all: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    all.extend(rows);
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            all.iter()
                .filter_map(|row| row.get(c))
                .flat_map(|cell| cell.lines().map(|l| l.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule = |left: &str, mid: &str, right: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        format!("{left}{}{right}", parts.join(mid))
    };
    let mut out = vec![rule("┌", "┬", "┐")];
    for (i, row) in all.iter().enumerate() {
        if i > 0 {
            out.push(rule("├", "┼", "┤"));
        }
        let height = row
            .iter()
            .map(|c| c.lines().count().max(1))
            .max()
            .unwrap_or(1);
        for line in 0..height {
            let cells: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(c, w)| {
                    let text = row
                        .get(c)
                        .and_then(|cell| cell.lines().nth(line))
                        .unwrap_or("");
                    let pad = w - text.chars().count();
                    format!(" {text}{} ", " ".repeat(pad))
                })
                .collect();
            out.push(format!("│{}│", cells.join("│")));
        }
    }
    out.push(rule("└", "┴", "┘"));
    out
}
