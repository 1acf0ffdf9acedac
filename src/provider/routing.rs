//! The routing table users read in docs/routing.md, rendered from the registry itself so the
//! document cannot drift from the binary (a test compares them).

use std::sync::Arc;

use super::custom::wait_condition::{WaitConditionHandleProvider, WaitConditionProvider};
use super::custom::{CustomResourceProvider, CustomResourceResponses};
use super::non_provisionable::NON_PROVISIONABLE_TYPES;
use super::{is_skipped_type, schema, sdk, Registry, NON_RESOURCE_TYPES};

/// The registry with every provider; custom resources have nowhere to answer, so each is
/// refused with an error saying so (use [`deploy_registry`] to deploy them).
pub fn default_registry() -> Registry {
    registry_with(CustomResourceProvider::new(None))
}

/// The registry `cdkd deploy` uses: custom-resource handlers answer into `responses` (the
/// state bucket), waiting at most `CDKD_CUSTOM_RESOURCE_TIMEOUT` (an hour by default).
pub fn deploy_registry(responses: CustomResourceResponses) -> Registry {
    registry_with(
        CustomResourceProvider::new(Some(responses))
            .with_timeout(super::custom::timeout_from_env()),
    )
}

/// [`deploy_registry`] answering into the state bucket `backend` writes to (its client already
/// targets the bucket's own region, so the presigned ResponseURL is signed for it). Every
/// command that creates, updates or deletes resources (deploy, destroy, rollback) needs this
/// one, or custom resources are refused.
pub fn registry_for(backend: &crate::state::backend::S3Backend) -> Registry {
    deploy_registry(CustomResourceResponses::new(
        backend.client().clone(),
        backend.bucket(),
    ))
}

/// Registers `backend`'s bucket as the process's custom-resource answer path, for registries
/// built with [`default_registry`] (see [`responses::set_process_default`]).
///
/// [`responses::set_process_default`]: super::custom::responses::set_process_default
pub fn use_state_bucket_for_custom_resources(backend: &crate::state::backend::S3Backend) {
    super::custom::responses::set_process_default(CustomResourceResponses::new(
        backend.client().clone(),
        backend.bucket(),
    ));
}

/// Every SDK provider, the wait-condition types, `custom` for custom resources, Cloud Control
/// for the rest.
pub fn registry_with(custom: CustomResourceProvider) -> Registry {
    let mut registry = Registry::new();
    for provider in sdk::all() {
        registry = registry.with_sdk(provider);
    }
    registry
        .with_sdk(Arc::new(WaitConditionHandleProvider))
        .with_sdk(Arc::new(WaitConditionProvider))
        .with_custom(Arc::new(custom))
        .with_cloud_control(Arc::new(super::cloudcontrol::CloudControlProvider::new()))
}

/// docs/routing.md, as Markdown.
pub fn routing_table(registry: &Registry) -> String {
    let sdk_types = registry.sdk_types();
    let total = schema::known_types().count();
    let mut out = String::from(
        "# Resource routing\n\n\
         Generated from the provider registry (`cdkd::provider::routing`); a test keeps it in step with\n\
         the binary. Each type is provisioned through its SDK provider when it has one (recorded as\n\
         `provisionedBy: sdk`), otherwise through the Cloud Control API (`cc-api`). A type in neither is\n\
         refused before anything is created. A resource whose template sets a property its SDK provider\n\
         does not send goes through Cloud Control instead (docs/architecture.md), and a record made\n\
         through Cloud Control stays there.\n\n\
         | type | route |\n| --- | --- |\n",
    );
    for t in &sdk_types {
        out.push_str(&format!("| `{t}` | SDK |\n"));
    }
    if registry.serves_custom_resources() {
        out.push_str(
            "| `AWS::CloudFormation::CustomResource`, every `Custom::*` | custom resource: the \
             ServiceToken's Lambda function or SNS topic (recorded as `sdk`) |\n",
        );
    }
    for t in NON_RESOURCE_TYPES {
        out.push_str(&format!("| `{t}` | skipped (not a resource) |\n"));
    }
    let refused: Vec<&str> = NON_PROVISIONABLE_TYPES
        .iter()
        .copied()
        .filter(|t| registry.route("x", t).is_err() && !is_skipped_type(t))
        .collect();
    let cloud_control = schema::known_types()
        .filter(|t| matches!(registry.route("x", t), Ok(super::Route::CloudControl)))
        .count();
    out.push_str(&format!(
        "| every other type in the schema snapshot ({cloud_control} of {total}, {}) | Cloud Control |\n",
        schema::source().unwrap_or("unknown source")
    ));
    out.push_str(&format!(
        "\n## Refused: not provisionable through Cloud Control\n\n\
         These {} types have no handlers in their registry schema (DescribeType reports them\n\
         NON_PROVISIONABLE) and no cdkd provider, so a template declaring one is refused before\n\
         anything is created.\n\n",
        refused.len()
    ));
    for t in refused {
        out.push_str(&format!("- `{t}`\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_routing_md_matches_the_registry() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/routing.md");
        let rendered = routing_table(&default_registry());
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &rendered).expect("write docs/routing.md");
        }
        let on_disk = std::fs::read_to_string(&path)
            .expect("docs/routing.md exists (UPDATE_GOLDEN=1 writes it)");
        assert_eq!(
            on_disk, rendered,
            "docs/routing.md is stale: run UPDATE_GOLDEN=1 cargo test --lib routing"
        );
    }

    #[test]
    fn sdk_types_route_to_sdk_and_others_to_cloud_control() {
        let r = default_registry();
        assert_eq!(
            r.route("Q", "AWS::SQS::Queue").expect("routed"),
            super::super::Route::Sdk
        );
        assert_eq!(
            r.route("B", "AWS::Events::EventBus").expect("routed"),
            super::super::Route::CloudControl
        );
        let err = r.route("X", "Nope::Not::Known").expect_err("refused");
        assert!(err
            .to_string()
            .contains("Nope::Not::Known is not supported"));
        let err = r
            .route("P", "AWS::CodeBuild::Project")
            .expect_err("refused");
        assert!(err.to_string().contains("cannot provision it"), "{err}");
    }

    #[test]
    fn custom_resources_and_wait_conditions_route_to_cdkd_providers() {
        let r = default_registry();
        for t in [
            "AWS::CloudFormation::CustomResource",
            "Custom::Anything",
            "AWS::CloudFormation::WaitConditionHandle",
            "AWS::CloudFormation::WaitCondition",
        ] {
            assert_eq!(
                r.route("C", t).expect("routed"),
                super::super::Route::Sdk,
                "{t}"
            );
            assert!(r.provider(t, super::super::Route::Sdk).is_some(), "{t}");
        }
    }
}
