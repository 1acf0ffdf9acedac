//! What the resolver cannot know by itself: the engine implements these.

use serde_json::Value;

use super::error::LookupError;

/// Physical ids and attributes of this stack's resources, from state or
/// from what this run has created so far.
pub trait ResourceLookup {
    /// The value of `Ref` for resource `logical_id` (usually its physical
    /// id); `None` while it has none.
    fn ref_value(&self, logical_id: &str) -> Option<Value>;
    /// The value of `Fn::GetAtt [logical_id, attribute]`. `attribute` is
    /// everything after the first dot (`Endpoint.Address`, `Outputs.Url`).
    fn get_att(&self, logical_id: &str, attribute: &str) -> Option<Value>;
}

/// A lookup that knows no resource (every resource reference fails as
/// "not available yet").
#[derive(Debug, Clone, Copy, Default)]
pub struct NoResources;

impl ResourceLookup for NoResources {
    fn ref_value(&self, _: &str) -> Option<Value> {
        None
    }
    fn get_att(&self, _: &str, _: &str) -> Option<Value> {
        None
    }
}

/// The arguments of one `Fn::GetStackOutput`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackOutputRequest {
    pub stack_name: String,
    pub output_name: String,
    /// The producer's region; `None` means the consumer's own.
    pub region: Option<String>,
    /// A role to assume for a cross-account read.
    pub role_arn: Option<String>,
}

/// Reads outside this stack: other stacks' exports and outputs,
/// availability zones, SSM parameters. Every method defaults to
/// [`LookupError::NotAvailable`], so an implementation only wires what it
/// has.
pub trait ExternalLookup {
    /// `Fn::ImportValue`: the value another stack exported as `export_name`.
    fn import_value(&self, export_name: &str) -> Result<Value, LookupError> {
        let _ = export_name;
        Err(LookupError::NotAvailable("the exports index".into()))
    }

    /// `Fn::GetStackOutput`: an output of another stack.
    fn stack_output(&self, request: &StackOutputRequest) -> Result<Value, LookupError> {
        let _ = request;
        Err(LookupError::NotAvailable(
            "reading another stack's outputs".into(),
        ))
    }

    /// `Fn::GetAZs`: the availability zones of `region`.
    fn availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        let _ = region;
        Err(LookupError::NotAvailable(
            "the availability zone lookup".into(),
        ))
    }

    /// The value of SSM parameter `name`, for `AWS::SSM::Parameter::Value<...>`
    /// template parameters. List types split the returned string on commas.
    fn ssm_parameter(&self, name: &str) -> Result<String, LookupError> {
        let _ = name;
        Err(LookupError::NotAvailable("the SSM parameter lookup".into()))
    }
}

/// An [`ExternalLookup`] with nothing wired.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExternalLookup;

impl ExternalLookup for NoExternalLookup {}
