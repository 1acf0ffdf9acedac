//! Deploy's per-resource escape hatches, as upstream cdkd names them: each type, property or
//! logical id is named explicitly, so every exception is acknowledged one by one.

use clap::Args;

#[derive(Debug, Clone, Default, Args)]
pub struct EscapeHatches {
    /// Try these resource types through Cloud Control even though cdkd refuses them (no SDK
    /// provider, and Cloud Control does not list or cannot provision them); Cloud Control
    /// will likely still fail. Comma-separated, repeatable: AWS::Foo::Bar,Custom::Baz.
    #[arg(
        long = "allow-unsupported-types",
        value_name = "TYPES",
        value_delimiter = ',',
        value_parser = parse_type
    )]
    pub allow_unsupported_types: Vec<String>,
    /// Keep a resource on its SDK provider although that provider does not send this
    /// property: the property is NOT applied in AWS (without the flag the resource goes
    /// through Cloud Control, which sends it, or is refused when Cloud Control cannot serve
    /// the type). Comma-separated TYPE:PROPERTY, repeatable:
    /// AWS::Lambda::Function:DurableConfig.
    #[arg(
        long = "allow-unsupported-properties",
        value_name = "TYPE:PROPERTY",
        value_delimiter = ',',
        value_parser = parse_type_property
    )]
    pub allow_unsupported_properties: Vec<String>,
    /// Delete this recorded resource (by logical id) and create it again through Cloud
    /// Control in this deploy, so its record moves to `provisionedBy: cc-api` and every
    /// property the template sets reaches AWS. Repeatable, one resource each. A stateful type
    /// also needs --force-stateful-recreation (its data is lost).
    #[arg(long = "recreate-via-cc-api", value_name = "LOGICAL_ID", value_parser = parse_logical_id)]
    pub recreate_via_cc_api: Vec<String>,
    /// The reverse: delete this resource that Cloud Control provisioned and create it again
    /// through cdkd's SDK provider for its type (`provisionedBy: sdk`). Repeatable; a
    /// stateful type also needs --force-stateful-recreation.
    #[arg(
        long = "recreate-via-sdk-provider",
        value_name = "LOGICAL_ID",
        value_parser = parse_logical_id
    )]
    pub recreate_via_sdk_provider: Vec<String>,
}

impl EscapeHatches {
    pub fn allowances(&self) -> crate::provider::Allowances {
        crate::provider::Allowances {
            types: self.allow_unsupported_types.iter().cloned().collect(),
            properties: self.allow_unsupported_properties.iter().cloned().collect(),
        }
    }

    pub fn recreate(&self) -> crate::engine::deploy::Recreate {
        crate::engine::deploy::Recreate {
            to_cloud_control: self.recreate_via_cc_api.clone(),
            to_sdk: self.recreate_via_sdk_provider.clone(),
        }
    }
}

/// A CloudFormation logical id: a letter, then letters and digits, at most 255.
fn parse_logical_id(text: &str) -> Result<String, String> {
    let text = text.trim();
    let ok = text.len() <= 255
        && text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && text.chars().all(|c| c.is_ascii_alphanumeric());
    if ok {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a logical id (letters and digits, starting with a letter); name \
             one resource per flag"
        ))
    }
}

fn pascal(part: &str) -> bool {
    part.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && part.chars().all(|c| c.is_ascii_alphanumeric())
}

/// `Namespace::Service::Type` or `Custom::Name`.
fn parse_type(text: &str) -> Result<String, String> {
    let text = text.trim();
    let parts: Vec<&str> = text.split("::").collect();
    if parts.len() >= 2 && parts.iter().all(|p| pascal(p)) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a resource type like AWS::Service::Type or Custom::Name"
        ))
    }
}

/// `AWS::Service::Type:Property`; a custom resource's properties all reach its handler, so a
/// `Custom::` entry could never apply and is refused.
fn parse_type_property(text: &str) -> Result<String, String> {
    let text = text.trim();
    let shaped = text
        .rsplit_once(':')
        .filter(|(ty, property)| !ty.ends_with(':') && parse_type(ty).is_ok() && pascal(property));
    let Some((ty, _)) = shaped else {
        return Err(format!(
            "{text:?} is not TYPE:PROPERTY like AWS::Lambda::Function:DurableConfig"
        ));
    };
    if ty.starts_with("Custom::") || ty == "AWS::CloudFormation::CustomResource" {
        return Err(format!(
            "{text:?}: a custom resource's handler receives every property, so nothing is \
             dropped; use --allow-unsupported-types for a type"
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_type_properties_are_checked_for_shape() {
        assert!(parse_type("AWS::Foo::Bar").is_ok());
        assert!(parse_type("Custom::Seeder").is_ok());
        for bad in ["aws::foo::bar", "AWS", "AWS::Foo::", "AWS:Foo"] {
            assert!(parse_type(bad).is_err(), "{bad}");
        }
        assert!(parse_type_property("AWS::Lambda::Function:DurableConfig").is_ok());
        assert!(parse_logical_id("MyFunction1").is_ok());
        assert!(parse_logical_id("My,Other").is_err());
        for bad in [
            "AWS::Lambda::Function",
            "AWS::Lambda::Function:",
            "AWS::Lambda::Function:durable",
            "Custom::Seeder:Size",
        ] {
            assert!(parse_type_property(bad).is_err(), "{bad}");
        }
    }
}
