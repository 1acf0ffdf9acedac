//! A property map for services whose resources are a bag of string attributes (SQS queue
//! attributes, SNS topic and subscription attributes): each CloudFormation property of the
//! same name is one attribute, sent in the string form the service takes and read back into
//! the JSON type CloudFormation uses, so the diff after a deploy compares like with like.

use serde_json::Value;

use crate::provider::props::Props;
use crate::provider::ProviderError;

/// The JSON type of a property whose attribute is a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Bool,
    Str,
    /// A JSON document (a policy): an object in the template, serialized in the attribute.
    Json,
}

/// One CloudFormation property that sets the service attribute of the same name.
#[derive(Debug, Clone, Copy)]
pub struct Attribute {
    pub name: &'static str,
    pub kind: Kind,
    /// The value that restores the service default when the property is removed.
    pub default: &'static str,
}

pub const fn attr(name: &'static str, kind: Kind, default: &'static str) -> Attribute {
    Attribute {
        name,
        kind,
        default,
    }
}

impl Attribute {
    /// The attribute value the property asks for, in the string form the service takes.
    pub fn request_value(&self, props: &Props<'_>) -> Result<Option<String>, ProviderError> {
        Ok(match self.kind {
            Kind::Int => props.i64(self.name)?.map(|n| n.to_string()),
            Kind::Bool => props.bool(self.name)?.map(|b| b.to_string()),
            Kind::Str => props.str(self.name)?,
            Kind::Json => props.json_document(self.name)?,
        })
    }
}

/// An attribute's string as the CloudFormation property would carry it; a value that does
/// not parse as its kind is kept as the string the service returned.
pub fn property_value(kind: Kind, raw: &str) -> Value {
    let text = || Value::String(raw.to_owned());
    match kind {
        Kind::Int => raw
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| text()),
        Kind::Bool => match raw {
            "true" | "True" => Value::Bool(true),
            "false" | "False" => Value::Bool(false),
            _ => text(),
        },
        Kind::Str => text(),
        Kind::Json => serde_json::from_str(raw).unwrap_or_else(|_| text()),
    }
}

/// The property names of `tables` followed by `others`: a provider's supported properties.
pub fn names(tables: &[&[Attribute]], others: &[&'static str]) -> Vec<&'static str> {
    tables
        .iter()
        .flat_map(|t| t.iter().map(|a| a.name))
        .chain(others.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_values_read_back_as_properties() {
        assert_eq!(property_value(Kind::Int, "30"), Value::from(30));
        assert_eq!(property_value(Kind::Int, "x"), Value::from("x"));
        assert_eq!(property_value(Kind::Bool, "true"), Value::Bool(true));
        assert_eq!(property_value(Kind::Bool, "False"), Value::Bool(false));
        assert_eq!(
            property_value(Kind::Json, r#"{"maxReceiveCount":3}"#),
            serde_json::json!({"maxReceiveCount": 3})
        );
        assert_eq!(property_value(Kind::Str, "x"), Value::from("x"));
    }

    #[test]
    fn names_are_the_tables_then_the_others() {
        const T: &[Attribute] = &[attr("A", Kind::Str, ""), attr("B", Kind::Int, "0")];
        assert_eq!(names(&[T], &["Tags"]), ["A", "B", "Tags"]);
    }
}
