//! A create that resumes an interrupted run's create: sent under the ledger's token (the
//! ClientToken, and the seed of a generated name), and, when the service answers that the
//! resource already exists while the ledger shows an entry inherited from an earlier run,
//! the resource that run made is adopted (read back by name) instead of failing or making a
//! second one.
//!
//! Adoption never takes a resource state already records (the old resource of a replacement
//! or another logical id's): such an answer is a real name clash and fails as it came.

use serde_json::Value;

use super::execute::Run;
use super::tokens::Token;
use crate::provider::naming::with_create_token;
use crate::provider::{
    schema, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest,
};
use crate::state::ResourceState;
use crate::ui;

/// Error codes with which services answer a create of a name that is taken.
const ALREADY_EXISTS_CODES: &[&str] = &[
    "AlreadyExists",
    "AlreadyExistsException",
    "EntityAlreadyExists",
    "ParameterAlreadyExists",
    "ResourceAlreadyExistsException",
    "ResourceExistsException",
    "BucketAlreadyOwnedByYou",
    "ResourceConflictException",
    "ResourceInUseException",
    "QueueAlreadyExists",
    "InvalidGroup.Duplicate",
];

/// Whether a provider error says the resource already exists.
pub(super) fn is_already_exists(e: &ProviderError) -> bool {
    let text = e.to_string();
    ALREADY_EXISTS_CODES.iter().any(|code| {
        text.match_indices(code).any(|(at, _)| {
            let after = text[at + code.len()..].chars().next();
            let before = text[..at].chars().last();
            !after.is_some_and(|c| c.is_ascii_alphanumeric())
                && !before.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    })
}

/// Sends the create under `token` and adopts on AlreadyExists when the token was inherited.
pub(super) async fn create_or_adopt(
    run: &Run,
    provider: &dyn Provider,
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    token: Option<&Token>,
    previous: Option<&ResourceState>,
) -> Result<Provisioned, ProviderError> {
    let Some(token) = token else {
        return crate::provider::deadline::create(provider, ctx, req).await;
    };
    let (result, generated) = with_create_token(
        &token.value,
        crate::provider::deadline::create(provider, ctx, req),
    )
    .await;
    let error = match result {
        Ok(made) => return Ok(made),
        Err(e) => e,
    };
    if !token.inherited || !is_already_exists(&error) {
        return Err(error);
    }
    let Some(name) = generated.or_else(|| declared_identifier(req)) else {
        return Err(error);
    };
    let taken_by_state = run
        .book
        .state()
        .await
        .resources
        .values()
        .any(|r| r.physical_id.as_deref() == Some(name.as_str()))
        || previous.is_some_and(|p| p.physical_id.as_deref() == Some(name.as_str()));
    if taken_by_state {
        return Err(error);
    }
    match provider.import(ctx, req, &name).await {
        Ok(made) => {
            ui::info(format!(
                "  {} {}: took over {name}, created by an interrupted earlier deploy",
                req.logical_id, req.resource_type
            ));
            Ok(made)
        }
        Err(e) => {
            tracing::debug!("adopting {name} for {} failed: {e}", req.logical_id);
            Err(error)
        }
    }
}

/// The value of a single-property primary identifier the template declares (a declared name).
fn declared_identifier(req: &ResourceRequest<'_>) -> Option<String> {
    let ids = schema::primary_identifier(req.resource_type)?;
    let [only] = ids else { return None };
    match req.properties.get(only.as_str())? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(message: &str) -> ProviderError {
        ProviderError::Failed {
            logical_id: "Q".into(),
            resource_type: "T".into(),
            message: message.into(),
        }
    }

    #[test]
    fn already_exists_is_told_by_its_code() {
        assert!(is_already_exists(&failed(
            "ssm PutParameter on /x failed: ParameterAlreadyExists: The parameter already exists."
        )));
        assert!(is_already_exists(&failed(
            "iam CreateRole on r failed: EntityAlreadyExists: Role with name r already exists."
        )));
        assert!(is_already_exists(&failed("FAILED AlreadyExists: taken")));
        assert!(!is_already_exists(&failed(
            "ValidationException: bad value"
        )));
        assert!(!is_already_exists(&failed("NotAlreadyExistsX")));
    }
}
