//! How assets are published (deploy, publish-assets) and where they are read from (diff):
//! upstream cdkd's flags, turned into `crate::assets::PublishOptions`.

use clap::Args;

use crate::assets::{PublishOptions, DEFAULT_IMAGE_BUILDS, DEFAULT_PUBLISH_CONCURRENCY};

#[derive(Debug, Clone, Copy, Default, Args)]
pub struct AssetStorage {
    /// Use the CDK bootstrap's bucket and repository that the asset manifest names, verbatim,
    /// even in a region `cdkd bootstrap` opted into cdkd-owned asset storage (for an app
    /// deployed by both CloudFormation and cdkd while it migrates).
    #[arg(long)]
    pub use_cdk_bootstrap_assets: bool,
}

#[derive(Debug, Clone, Copy, Args)]
pub struct AssetPublishing {
    /// Asset publish operations at once (S3 uploads, image pushes).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_PUBLISH_CONCURRENCY as u32,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub asset_publish_concurrency: u32,
    /// Docker image builds (or asset executables) at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_IMAGE_BUILDS as u32,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub image_build_concurrency: u32,
    #[command(flatten)]
    pub storage: AssetStorage,
}

impl AssetStorage {
    /// The options of a command that reads templates without publishing.
    pub fn options(self) -> PublishOptions {
        PublishOptions {
            use_cdk_bootstrap_assets: self.use_cdk_bootstrap_assets,
            ..PublishOptions::default()
        }
    }
}

impl AssetPublishing {
    pub fn options(self) -> PublishOptions {
        PublishOptions {
            concurrency: self.asset_publish_concurrency as usize,
            image_builds: self.image_build_concurrency as usize,
            use_cdk_bootstrap_assets: self.storage.use_cdk_bootstrap_assets,
        }
    }
}
