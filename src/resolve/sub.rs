//! `Fn::Sub`: `${Name}` substitution.
//!
//! A placeholder is looked up in this order: the variables map of the
//! two-element form, `Resource.Attribute` (split at the first dot) when the
//! part before the dot is a resource, a pseudo parameter, a template
//! parameter, a resource's `Ref`. `${!Text}` writes `${Text}` literally. A
//! placeholder naming none of these is kept as written and reported as a
//! warning; a name that is known but has no value yet (a resource not
//! created, an unknown account id) is an error.

use indexmap::IndexMap;
use serde_json::Value;

use super::error::{type_name, ResolveErrorKind};
use super::{Resolver, R};

const F: &str = "Fn::Sub";

impl Resolver<'_> {
    pub(super) fn sub(&mut self, arg: &Value) -> R<Value> {
        let (text, vars) = match arg {
            Value::String(s) => (s.as_str(), None),
            Value::Array(items) if (1..=2).contains(&items.len()) => {
                let Some(text) = items[0].as_str() else {
                    return self.fail(ResolveErrorKind::InvalidArguments {
                        function: F,
                        message: format!(
                            "the template must be a string, got {}",
                            type_name(&items[0])
                        ),
                    });
                };
                match items.get(1) {
                    None => (text, None),
                    Some(Value::Object(m)) => (text, Some(m)),
                    Some(other) => {
                        return self.fail(ResolveErrorKind::InvalidArguments {
                            function: F,
                            message: format!(
                                "the variables must be an object, got {}",
                                type_name(other)
                            ),
                        })
                    }
                }
            }
            other => {
                return self.fail(ResolveErrorKind::InvalidArguments {
                    function: F,
                    message: format!(
                        "expected a string or [string, {{variables}}], got {}",
                        type_name(other)
                    ),
                })
            }
        };

        let mut values: IndexMap<&str, String> = IndexMap::new();
        if let Some(vars) = vars {
            let mark = self.enter_index(1);
            for (name, raw) in vars {
                let m = self.enter(name);
                let v = self.eval_text(raw, F)?;
                self.leave(m);
                values.insert(name.as_str(), v);
            }
            self.leave(mark);
        }

        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                // An unclosed `${` is plain text.
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let name = &after[..end];
            if let Some(literal) = name.strip_prefix('!') {
                out.push_str("${");
                out.push_str(literal);
                out.push('}');
            } else {
                match self.placeholder(name, &values)? {
                    Some(v) => out.push_str(&v),
                    None => {
                        out.push_str("${");
                        out.push_str(name);
                        out.push('}');
                        self.warn(format!(
                            "Fn::Sub placeholder ${{{name}}} names no variable, parameter, pseudo parameter or resource; kept as written"
                        ));
                    }
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(Value::String(out))
    }

    /// The text for `${name}`; `None` when the name is unknown.
    fn placeholder(&mut self, name: &str, vars: &IndexMap<&str, String>) -> R<Option<String>> {
        if let Some(v) = vars.get(name) {
            return Ok(Some(v.clone()));
        }
        if name.starts_with("AWS::") {
            return match self.ctx.pseudo(name) {
                // `AWS::NotificationARNs`, the one list-valued pseudo parameter (always empty:
                // cdkd sets no stack notifications), is its elements joined with commas, as
                // CloudFormation substitutes it; the empty list is the empty string.
                Ok(Some(Value::Array(items))) => {
                    let texts: Vec<String> = items
                        .iter()
                        .map(|v| self.coerce_text(v, F))
                        .collect::<R<_>>()?;
                    Ok(Some(texts.join(",")))
                }
                Ok(Some(v)) => self.coerce_text(&v, F).map(Some),
                Ok(None) => self.fail(ResolveErrorKind::NoValue("an Fn::Sub placeholder")),
                Err(ResolveErrorKind::UnknownPseudoParameter(_)) => Ok(None),
                Err(kind) => self.fail(kind),
            };
        }
        if let Some((resource, attribute)) = name.split_once('.') {
            if self.template.resources.contains_key(resource) {
                let v = self.resource_att(resource, attribute)?;
                return self.coerce_text(&v, F).map(Some);
            }
            return Ok(None);
        }
        if let Some(r) = self.parameter(name) {
            return self.coerce_text(&r?, F).map(Some);
        }
        if self.template.resources.contains_key(name) {
            let v = self.resource_ref(name)?;
            return self.coerce_text(&v, F).map(Some);
        }
        Ok(None)
    }
}
