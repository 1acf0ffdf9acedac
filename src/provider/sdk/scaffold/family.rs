//! One provider for a family of types that share a service client (KMS keys and aliases,
//! Route 53 zones and records): [`family_provider!`] writes its `Provider` impl, which sends
//! each call to the module of the resource's type. Every module offers the same six items, so
//! a family is its table of types and nothing else:
//! `PROPERTIES`, `create(ctx, &client, req)`, `update(ctx, &client, req, id, previous)`,
//! `delete(ctx, &client, req, id)`, `read(ctx, &client, req, id)` and
//! `provisioned_of(ctx, &client, req, id)` (what a create reports, `None` when gone), which
//! import answers with, or with an error naming the service when the resource does not exist.

/// `family_provider!(Name, "service", client_fn, { TYPE => module, ... })`.
macro_rules! family_provider {
    ($name:ident, $service:literal, $client:path, { $($ty:path => $module:ident),+ $(,)? }) => {
        #[doc = concat!("The SDK provider for the ", $service, " family.")]
        pub struct $name;

        #[async_trait::async_trait]
        impl $crate::provider::Provider for $name {
            fn resource_types(&self) -> &'static [&'static str] {
                &[$($ty),+]
            }

            fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
                $(if resource_type == $ty {
                    return Some($module::PROPERTIES.to_vec());
                })+
                None
            }

            async fn create(
                &self,
                ctx: &$crate::provider::ProviderContext<'_>,
                req: &$crate::provider::ResourceRequest<'_>,
            ) -> Result<$crate::provider::Provisioned, $crate::provider::ProviderError> {
                let c = $client(ctx);
                $(if req.resource_type == $ty {
                    return $module::create(ctx, &c, req).await;
                })+
                Err($crate::provider::ProviderError::failed(req, concat!("not a ", $service, " type")))
            }

            async fn update(
                &self,
                ctx: &$crate::provider::ProviderContext<'_>,
                req: &$crate::provider::ResourceRequest<'_>,
                physical_id: &str,
                previous: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<$crate::provider::UpdateOutcome, $crate::provider::ProviderError> {
                let c = $client(ctx);
                $(if req.resource_type == $ty {
                    return $module::update(ctx, &c, req, physical_id, previous).await;
                })+
                Err($crate::provider::ProviderError::failed(req, concat!("not a ", $service, " type")))
            }

            async fn delete(
                &self,
                ctx: &$crate::provider::ProviderContext<'_>,
                req: &$crate::provider::ResourceRequest<'_>,
                physical_id: &str,
            ) -> Result<(), $crate::provider::ProviderError> {
                let c = $client(ctx);
                $(if req.resource_type == $ty {
                    return $module::delete(ctx, &c, req, physical_id).await;
                })+
                Err($crate::provider::ProviderError::failed(req, concat!("not a ", $service, " type")))
            }

            async fn read(
                &self,
                ctx: &$crate::provider::ProviderContext<'_>,
                req: &$crate::provider::ResourceRequest<'_>,
                physical_id: &str,
            ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, $crate::provider::ProviderError> {
                let c = $client(ctx);
                $(if req.resource_type == $ty {
                    return $module::read(ctx, &c, req, physical_id).await;
                })+
                Err($crate::provider::ProviderError::failed(req, concat!("not a ", $service, " type")))
            }

            async fn import(
                &self,
                ctx: &$crate::provider::ProviderContext<'_>,
                req: &$crate::provider::ResourceRequest<'_>,
                physical_id: &str,
            ) -> Result<$crate::provider::Provisioned, $crate::provider::ProviderError> {
                let c = $client(ctx);
                let mut found = None;
                $(if req.resource_type == $ty {
                    found = $module::provisioned_of(ctx, &c, req, physical_id).await?;
                })+
                found.ok_or_else(|| {
                    $crate::provider::ProviderError::failed(
                        req,
                        format!(concat!("{} does not exist in ", $service, "; check the id"), physical_id),
                    )
                })
            }
        }
    };
}
pub(crate) use family_provider;
