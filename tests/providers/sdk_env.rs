//! The set-up the SDK provider modules share: clients for the emulator, a stack name, the
//! provider of a type from `cdkd::provider::sdk::all()`, and its five operations with a
//! panic that names the type and the step (a test's failure then says what failed).

use crate::support;

use std::sync::Arc;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, Provisioned, ResourceRequest, UpdateOutcome};
use serde_json::{Map, Value};

pub struct Env {
    pub clients: Clients,
    pub stack: String,
    pub sdk: aws_config::SdkConfig,
}

pub fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

pub fn req<'a>(ty: &'a str, props: &'a Map<String, Value>) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id: "Res",
        resource_type: ty,
        properties: props,
        client_token: None,
    }
}

/// The SDK provider that serves `ty`.
pub fn provider(ty: &str) -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&ty))
        .unwrap_or_else(|| panic!("no SDK provider for {ty}"))
}

/// The reason of a replacement; panics on an in-place update.
pub fn replaced(out: UpdateOutcome) -> String {
    match out {
        UpdateOutcome::NeedsReplacement { reason } => reason,
        other => panic!("expected a replacement, got {other:?}"),
    }
}

impl Env {
    pub async fn new(stack_prefix: &str) -> Self {
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name(stack_prefix),
            sdk: support::sdk_config().await,
        }
    }

    pub fn ctx(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: "us-east-1",
            account_id: "123456789012",
            partition: "aws",
            no_wait: false,
        }
    }

    pub async fn create(&self, ty: &str, props: &Map<String, Value>) -> Provisioned {
        provider(ty)
            .create(&self.ctx(), &req(ty, props))
            .await
            .unwrap_or_else(|e| panic!("create {ty}: {e}"))
    }

    pub async fn update(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
        prev: &Map<String, Value>,
    ) -> UpdateOutcome {
        provider(ty)
            .update(&self.ctx(), &req(ty, props), id, prev)
            .await
            .unwrap_or_else(|e| panic!("update {ty}: {e}"))
    }

    /// An update that must happen in place.
    pub async fn updated(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
        prev: &Map<String, Value>,
    ) -> Provisioned {
        match self.update(ty, props, id, prev).await {
            UpdateOutcome::Updated(p) => p,
            other => panic!("{ty}: expected an in-place update, got {other:?}"),
        }
    }

    pub async fn read(
        &self,
        ty: &str,
        props: &Map<String, Value>,
        id: &str,
    ) -> Option<Map<String, Value>> {
        provider(ty)
            .read(&self.ctx(), &req(ty, props), id)
            .await
            .unwrap_or_else(|e| panic!("read {ty}: {e}"))
    }

    pub async fn import(&self, ty: &str, props: &Map<String, Value>, id: &str) -> Provisioned {
        provider(ty)
            .import(&self.ctx(), &req(ty, props), id)
            .await
            .unwrap_or_else(|e| panic!("import {ty}: {e}"))
    }

    /// Deletes, then deletes again (what is gone is success), then reads nothing.
    pub async fn delete_twice(&self, ty: &str, props: &Map<String, Value>, id: &str) {
        for round in ["delete", "second delete"] {
            provider(ty)
                .delete(&self.ctx(), &req(ty, props), id)
                .await
                .unwrap_or_else(|e| panic!("{round} {ty}: {e}"));
        }
        assert_eq!(self.read(ty, props, id).await, None, "{ty} {id} is gone");
    }

    /// A VPC `10.<octet>.0.0/16` with one /24 subnet in each of `zones` (`us-east-1a`...),
    /// made through EC2 directly: the network the ELBv2 and RDS tests place resources in.
    pub async fn vpc_with_subnets(&self, octet: u8, zones: &[&str]) -> (String, Vec<String>) {
        let ec2 = aws_sdk_ec2::Client::new(&self.sdk);
        let vpc = ec2
            .create_vpc()
            .cidr_block(format!("10.{octet}.0.0/16"))
            .send()
            .await
            .expect("CreateVpc")
            .vpc
            .and_then(|v| v.vpc_id)
            .expect("vpc id");
        let mut subnets = Vec::new();
        for (i, zone) in zones.iter().enumerate() {
            let id = ec2
                .create_subnet()
                .vpc_id(&vpc)
                .cidr_block(format!("10.{octet}.{i}.0/24"))
                .availability_zone(*zone)
                .send()
                .await
                .expect("CreateSubnet")
                .subnet
                .and_then(|s| s.subnet_id)
                .expect("subnet id");
            subnets.push(id);
        }
        (vpc, subnets)
    }

    /// A security group in `vpc`, made through EC2 directly.
    pub async fn security_group(&self, vpc: &str, name: &str) -> String {
        aws_sdk_ec2::Client::new(&self.sdk)
            .create_security_group()
            .vpc_id(vpc)
            .group_name(support::unique_name(name))
            .description(name)
            .send()
            .await
            .expect("CreateSecurityGroup")
            .group_id
            .expect("group id")
    }

    /// What `Ref` of the resource returns.
    pub fn ref_of(&self, ty: &str, made: &Provisioned) -> Value {
        provider(ty).ref_value(ty, &made.physical_id, &made.attributes)
    }
}
