//! `cdkd diff` for people: the layout of `cdk diff` (a "Stack X" header, `[+] [-] [~]` rows with
//! types and logical ids, only the changed sub-properties under each), colour only when asked
//! (on a terminal), and every template- or state-controlled text stripped of control and bidi
//! characters so a name cannot rewrite the terminal or reorder what is shown.

use serde_json::Value;

use crate::engine::diff::{OutputChange, OutputDiff, PropertyChange, ResourceDiff, StackDiff};
use crate::plan::ChangeKind;
use crate::redact::fold::is_invisible;

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Renders every stack's diff (nested stacks after their parent).
pub fn render(diffs: &[StackDiff], colour: bool) -> String {
    let mut p = Printer {
        out: String::new(),
        colour,
    };
    for (i, d) in diffs.iter().enumerate() {
        if i > 0 {
            p.out.push('\n');
        }
        p.stack(d, None);
    }
    p.out
}

/// Only the security tables of every stack (`cdkd diff --security-only`).
pub fn render_security(diffs: &[StackDiff], colour: bool) -> String {
    let mut p = Printer {
        out: String::new(),
        colour,
    };
    for (i, d) in diffs.iter().enumerate() {
        if i > 0 {
            p.out.push('\n');
        }
        p.security_only(d);
    }
    p.out
}

/// Text with control, bidi and other invisible characters removed.
pub fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() && !is_invisible(*c))
        .collect()
}

/// A value as one line: a string as itself, anything else as compact JSON.
pub fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => clean(s),
        other => clean(&other.to_string()),
    }
}

struct Printer {
    out: String,
    colour: bool,
}

impl Printer {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("{code}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }

    fn line(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn stack(&mut self, d: &StackDiff, parent: Option<&str>) {
        let mut header = format!("Stack {}", clean(&d.stack_name));
        if let (Some(parent), Some(id)) = (parent, &d.parent_logical_id) {
            header.push_str(&format!(
                " (nested stack {} of {})",
                clean(id),
                clean(parent)
            ));
        }
        if d.new_stack {
            header.push_str(" (not deployed yet)");
        }
        let header = self.paint(BOLD, &header);
        self.line(&header);
        if !d.blocking.is_empty() {
            self.line("Blocking");
            for b in &d.blocking {
                let text = format!("[!] {}", clean(b));
                let text = self.paint(RED, &text);
                self.line(&text);
            }
        }
        let own_changes = !d.resources.is_empty() || !d.outputs.is_empty();
        if !own_changes {
            self.line("There were no differences");
        }
        if !d.resources.is_empty() {
            self.line("Resources");
            for r in &d.resources {
                self.resource(r);
            }
        }
        if !d.outputs.is_empty() {
            if !d.resources.is_empty() {
                self.out.push('\n');
            }
            self.line("Outputs");
            for o in &d.outputs {
                self.output(o);
            }
        }
        if !d.security.is_empty() {
            self.out.push('\n');
            self.security(d);
        }
        for n in &d.notes {
            let text = format!("Note: {}", clean(n));
            self.line(&text);
        }
        for child in &d.nested {
            self.out.push('\n');
            self.stack(child, Some(&d.stack_name));
        }
    }

    /// The security tables (crate::plan::security::render), every line cleaned.
    fn security(&mut self, d: &StackDiff) {
        for line in crate::plan::security::render::tables(&d.security) {
            self.line(&clean(&line));
        }
    }

    fn security_only(&mut self, d: &StackDiff) {
        let header = self.paint(BOLD, &format!("Stack {}", clean(&d.stack_name)));
        self.line(&header);
        if d.security.is_empty() {
            self.line("There were no security-related changes");
        } else {
            self.security(d);
        }
        for child in &d.nested {
            self.out.push('\n');
            self.security_only(child);
        }
    }

    fn mark(&self, kind: ChangeKind) -> String {
        match kind {
            ChangeKind::Create => self.paint(GREEN, "[+]"),
            ChangeKind::Delete => self.paint(RED, "[-]"),
            _ => self.paint(YELLOW, "[~]"),
        }
    }

    fn resource(&mut self, r: &ResourceDiff) {
        let mut text = format!(
            "{} {} {}",
            self.mark(r.change),
            clean(&r.resource_type),
            clean(&r.logical_id)
        );
        if let Some(route) = r.route {
            text.push_str(&format!(" ({route})"));
        }
        if r.change == ChangeKind::Replace {
            text.push_str(&format!(" {}", self.paint(RED, "replace")));
        }
        if let Some(old) = &r.old_type {
            text.push_str(&format!(" [type changed from {}]", clean(old)));
        }
        self.line(&text);
        let count = r.properties.len();
        for (i, p) in r.properties.iter().enumerate() {
            self.property(p, i + 1 == count);
        }
    }

    fn property(&mut self, p: &PropertyChange, last: bool) {
        let (branch, indent) = if last {
            (" └─", "    ")
        } else {
            (" ├─", " │  ")
        };
        let mark = match (&p.old, &p.new) {
            (None, Some(_)) => self.paint(GREEN, "[+]"),
            (Some(_), None) => self.paint(RED, "[-]"),
            _ => self.paint(YELLOW, "[~]"),
        };
        let mut text = format!("{branch} {mark} {}", clean(&p.path));
        if p.requires_replacement {
            text.push_str(&format!(" {}", self.paint(RED, "[requires replacement]")));
        }
        if p.replacement_propagated {
            text.push_str(" [replacement propagated]");
        }
        if p.attribute_propagated {
            text.push_str(" [attribute propagated]");
        }
        if p.known_after_deploy {
            text.push_str(" [known after deploy]");
        }
        self.line(&text);
        self.values(indent, p.old.as_ref(), p.new.as_ref(), false);
    }

    fn values(&mut self, indent: &str, old: Option<&Value>, new: Option<&Value>, withheld: bool) {
        let mut lines = Vec::new();
        if withheld {
            lines.push(self.paint(
                RED,
                "[-] (withheld: the stored value may be a secret an older cdkd stored; \
                 run cdkd scrub)",
            ));
        }
        if let Some(o) = old {
            lines.push(self.paint(RED, &format!("[-] {}", shown(o))));
        }
        if let Some(n) = new {
            lines.push(self.paint(GREEN, &format!("[+] {}", shown(n))));
        }
        let count = lines.len();
        for (i, l) in lines.into_iter().enumerate() {
            let branch = if i + 1 == count { "└─" } else { "├─" };
            self.line(&format!("{indent} {branch} {l}"));
        }
    }

    fn output(&mut self, o: &OutputDiff) {
        let kind = match o.change {
            OutputChange::Add => ChangeKind::Create,
            OutputChange::Remove => ChangeKind::Delete,
            OutputChange::Update => ChangeKind::Update,
        };
        let what = if o.export { "Export" } else { "Output" };
        let text = format!("{} {what} {}", self.mark(kind), clean(&o.key));
        self.line(&text);
        self.values("", o.old.as_ref(), o.new.as_ref(), o.old_withheld);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_stripped() {
        assert_eq!(clean("a\u{202E}b\x1b[31mc\u{200B}d\n"), "ab[31mcd");
        assert_eq!(shown(&serde_json::json!({"k": "v"})), "{\"k\":\"v\"}");
    }
}
