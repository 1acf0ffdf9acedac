//! The routing table users read in docs/routing.md, rendered from the registry itself so the
//! document cannot drift from the binary (a test compares them).

use super::{schema, sdk, Registry};

/// The registry cdkd deploys with: every SDK provider, Cloud Control for the rest.
pub fn default_registry() -> Registry {
    let mut registry = Registry::new();
    for provider in sdk::all() {
        registry = registry.with_sdk(provider);
    }
    registry.with_cloud_control(std::sync::Arc::new(
        super::cloudcontrol::CloudControlProvider::new(),
    ))
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
         refused before anything is created.\n\n\
         | type | route |\n| --- | --- |\n",
    );
    for t in &sdk_types {
        out.push_str(&format!("| `{t}` | SDK |\n"));
    }
    out.push_str(&format!(
        "| every other type in the schema snapshot ({} of {total}, {}) | Cloud Control |\n",
        total.saturating_sub(sdk_types.len()),
        schema::source().unwrap_or("unknown source")
    ));
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
        let err = r.route("X", "Custom::Nope").expect_err("refused");
        assert!(err.to_string().contains("Custom::Nope is not supported"));
    }
}
