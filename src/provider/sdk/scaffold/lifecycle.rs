//! The steps every SDK provider's create / update / delete / read takes the same way: the
//! record a create reports, the replacement an update answers for a create-only change, the
//! not-found-is-gone rule of deletes and reads, and a field AWS must have returned.

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use super::Service;
use crate::provider::props::changed_properties;
use crate::provider::sdk::is_not_found;
use crate::provider::{schema, ProviderError, Provisioned, ResourceRequest, UpdateOutcome};

/// A physical id and the `Fn::GetAtt` attributes a create reports.
pub fn provisioned(physical_id: impl Into<String>, attributes: &[(&str, Value)]) -> Provisioned {
    Provisioned {
        physical_id: physical_id.into(),
        attributes: attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    }
}

/// The replacement an update must answer when a create-only property (as the schema snapshot
/// says, or one of `also` that the service cannot change in place although the schema lets
/// it) moved; `None` when every change can be made in place. The engine plans replacement
/// from the schema, so for schema properties this only guards a direct call.
pub fn create_only_change(
    req: &ResourceRequest<'_>,
    previous: &Map<String, Value>,
    also: &[&str],
) -> Option<UpdateOutcome> {
    changed_properties(previous, req.properties)
        .into_iter()
        .find(|name| {
            schema::is_create_only(req.resource_type, name) || also.contains(&name.as_str())
        })
        .map(|name| UpdateOutcome::NeedsReplacement {
            reason: format!("{name} changed and cannot be updated in place"),
        })
}

impl Service {
    /// A call's answer, or `None` when the service says what it names does not exist: a
    /// read finds nothing, a delete has nothing left to do. Any other failure is the
    /// resource's error.
    pub fn unless_gone<T, E>(
        self,
        result: Result<T, SdkError<E, HttpResponse>>,
        req: &ResourceRequest<'_>,
        operation: &'static str,
        target: &str,
    ) -> Result<Option<T>, ProviderError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        match result {
            Ok(out) => Ok(Some(out)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(self.err(req, operation, target, &e)),
        }
    }

    /// [`Service::unless_gone`] for a service that names its not-found errors per kind of
    /// resource (RDS's `DBInstanceNotFound` and `DBSubnetGroupNotFoundFault`, ELBv2's
    /// `TargetGroupNotFound`): a code ending with one of `suffixes` also says it is gone.
    pub fn unless_gone_coded<T, E>(
        self,
        result: Result<T, SdkError<E, HttpResponse>>,
        req: &ResourceRequest<'_>,
        operation: &'static str,
        target: &str,
        suffixes: &[&str],
    ) -> Result<Option<T>, ProviderError>
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        match result {
            Err(e)
                if crate::aws::error_code(&e)
                    .is_some_and(|c| suffixes.iter().any(|s| c.ends_with(s))) =>
            {
                Ok(None)
            }
            other => self.unless_gone(other, req, operation, target),
        }
    }

    /// A string field the service must have returned (an id, an ARN), or a typed error
    /// naming what was missing: never an empty id recorded in state.
    pub fn required<'a>(
        self,
        req: &ResourceRequest<'_>,
        value: Option<&'a str>,
        what: &str,
    ) -> Result<&'a str, ProviderError> {
        value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| ProviderError::failed(req, format!("{} returned no {what}", self.0)))
    }
}
