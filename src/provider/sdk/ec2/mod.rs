//! Amazon EC2 networking: the resource types of a CDK `Vpc` and its security groups.
//!
//! One provider serves the family (they share a client, tag handling, not-found codes and the
//! waits), one module per type or close family:
//! - [`vpc`]: `AWS::EC2::VPC` (Ref `VpcId`; DNS attributes through ModifyVpcAttribute).
//! - [`subnet`]: `AWS::EC2::Subnet` (Ref `SubnetId`; `MapPublicIpOnLaunch` in place).
//! - [`gateway`]: `AWS::EC2::InternetGateway` and `AWS::EC2::VPCGatewayAttachment`.
//! - [`route`]: `AWS::EC2::RouteTable`, `AWS::EC2::Route`, `AWS::EC2::SubnetRouteTableAssociation`.
//! - [`nat`]: `AWS::EC2::EIP` and `AWS::EC2::NatGateway` (the waits a route and a delete need).
//! - [`security_group`] over [`rules`]: `AWS::EC2::SecurityGroup` with inline rules, and the
//!   standalone `AWS::EC2::SecurityGroupIngress` / `AWS::EC2::SecurityGroupEgress` ([`sg_rule`]).
//!
//! Physical ids are what Cloud Control records for the type (a composite identifier joined
//! with `|`: a route is `rtb-…|0.0.0.0/0`, an Elastic IP `203.0.113.1|eipalloc-…`, an
//! attachment `IGW|vpc-…`), so `Ref` (through `refs::ref_value`) returns what CloudFormation
//! does. Each type states the top-level properties it sends; any other routes the resource
//! through Cloud Control.

mod gateway;
mod nat;
mod route;
mod rules;
mod security_group;
mod sg_rule;
mod subnet;
mod tags;
mod vpc;
mod wait;

use async_trait::async_trait;
use aws_sdk_ec2::Client;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response as HttpResponse;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use serde_json::{Map, Value};

use super::scaffold;
use super::scaffold::lifecycle::{create_only_change, provisioned};
use crate::aws::error_code;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

pub(crate) const VPC: &str = "AWS::EC2::VPC";
pub(crate) const SUBNET: &str = "AWS::EC2::Subnet";
pub(crate) const INTERNET_GATEWAY: &str = "AWS::EC2::InternetGateway";
pub(crate) const GATEWAY_ATTACHMENT: &str = "AWS::EC2::VPCGatewayAttachment";
pub(crate) const ROUTE_TABLE: &str = "AWS::EC2::RouteTable";
pub(crate) const ROUTE: &str = "AWS::EC2::Route";
pub(crate) const ROUTE_TABLE_ASSOCIATION: &str = "AWS::EC2::SubnetRouteTableAssociation";
pub(crate) const EIP: &str = "AWS::EC2::EIP";
pub(crate) const NAT_GATEWAY: &str = "AWS::EC2::NatGateway";
pub(crate) const SECURITY_GROUP: &str = "AWS::EC2::SecurityGroup";
pub(crate) const SECURITY_GROUP_INGRESS: &str = "AWS::EC2::SecurityGroupIngress";
pub(crate) const SECURITY_GROUP_EGRESS: &str = "AWS::EC2::SecurityGroupEgress";

/// Where EC2's errors come from.
const EC2: scaffold::Service = scaffold::Service("ec2");

fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// EC2 says "not found" with a code per kind of id (`InvalidVpcID.NotFound`,
/// `InvalidAllocationID.NotFound`, `InvalidRouteTableID.NotFound`...) and HTTP 400.
fn is_not_found<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    super::is_not_found(err) || error_code(err).is_some_and(|c| c.ends_with(".NotFound"))
}

/// A call's answer, or `None` when EC2 says what it names is gone: a read finds nothing, a
/// delete has nothing left to do. Any other failure is the resource's error.
fn unless_gone<T, E>(
    result: Result<T, SdkError<E, HttpResponse>>,
    req: &ResourceRequest<'_>,
    operation: &'static str,
    target: &str,
) -> Result<Option<T>, ProviderError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match result {
        Err(e) if is_not_found(&e) => Ok(None),
        other => EC2.unless_gone(other, req, operation, target),
    }
}

/// The SDK provider for the EC2 networking types.
pub struct Ec2NetworkProvider;

#[async_trait]
impl Provider for Ec2NetworkProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[
            VPC,
            SUBNET,
            INTERNET_GATEWAY,
            GATEWAY_ATTACHMENT,
            ROUTE_TABLE,
            ROUTE,
            ROUTE_TABLE_ASSOCIATION,
            EIP,
            NAT_GATEWAY,
            SECURITY_GROUP,
            SECURITY_GROUP_INGRESS,
            SECURITY_GROUP_EGRESS,
        ]
    }

    fn supported_properties(&self, resource_type: &str) -> Option<Vec<&'static str>> {
        let list: &[&'static str] = match resource_type {
            VPC => vpc::PROPERTIES,
            SUBNET => subnet::PROPERTIES,
            INTERNET_GATEWAY => gateway::GATEWAY_PROPERTIES,
            GATEWAY_ATTACHMENT => gateway::ATTACHMENT_PROPERTIES,
            ROUTE_TABLE => route::TABLE_PROPERTIES,
            ROUTE => route::ROUTE_PROPERTIES,
            ROUTE_TABLE_ASSOCIATION => route::ASSOCIATION_PROPERTIES,
            EIP => nat::EIP_PROPERTIES,
            NAT_GATEWAY => nat::NAT_PROPERTIES,
            SECURITY_GROUP => security_group::PROPERTIES,
            SECURITY_GROUP_INGRESS => sg_rule::INGRESS_PROPERTIES,
            SECURITY_GROUP_EGRESS => sg_rule::EGRESS_PROPERTIES,
            _ => return None,
        };
        Some(list.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let c = client(ctx);
        match req.resource_type {
            VPC => vpc::create(&c, req).await,
            SUBNET => subnet::create(&c, req).await,
            INTERNET_GATEWAY => gateway::create_gateway(&c, req).await,
            GATEWAY_ATTACHMENT => gateway::create_attachment(&c, req).await,
            ROUTE_TABLE => route::create_table(&c, req).await,
            ROUTE => route::create_route(&c, req).await,
            ROUTE_TABLE_ASSOCIATION => route::create_association(&c, req).await,
            EIP => nat::create_eip(&c, req).await,
            NAT_GATEWAY => nat::create_nat(ctx, &c, req).await,
            SECURITY_GROUP => security_group::create(ctx, &c, req).await,
            _ => sg_rule::create(&c, req).await,
        }
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        if let Some(replace) = create_only_change(req, previous, &[]) {
            return Ok(replace);
        }
        let c = client(ctx);
        let id = physical_id;
        match req.resource_type {
            VPC => vpc::update(&c, req, id, previous).await,
            SUBNET => subnet::update(&c, req, id, previous).await,
            INTERNET_GATEWAY => gateway::update_gateway(&c, req, id, previous).await,
            GATEWAY_ATTACHMENT => gateway::update_attachment(&c, req, id, previous).await,
            ROUTE_TABLE => route::update_table(&c, req, id, previous).await,
            ROUTE => route::update_route(&c, req, id, previous).await,
            ROUTE_TABLE_ASSOCIATION => route::update_association(&c, req, id).await,
            EIP => nat::update_eip(&c, req, id, previous).await,
            NAT_GATEWAY => nat::update_nat(&c, req, id, previous).await,
            SECURITY_GROUP => security_group::update(&c, req, id, previous).await,
            _ => sg_rule::update(&c, req, id, previous).await,
        }
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let c = client(ctx);
        let id = physical_id;
        match req.resource_type {
            VPC => vpc::delete(&c, req, id).await,
            SUBNET => subnet::delete(&c, req, id).await,
            INTERNET_GATEWAY => gateway::delete_gateway(&c, req, id).await,
            GATEWAY_ATTACHMENT => gateway::delete_attachment(&c, req, id).await,
            ROUTE_TABLE => route::delete_table(&c, req, id).await,
            ROUTE => route::delete_route(&c, req, id).await,
            ROUTE_TABLE_ASSOCIATION => route::delete_association(&c, req, id).await,
            EIP => nat::delete_eip(&c, req, id).await,
            NAT_GATEWAY => nat::delete_nat(&c, req, id).await,
            SECURITY_GROUP => security_group::delete(&c, req, id).await,
            _ => sg_rule::delete(&c, req, id).await,
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let c = client(ctx);
        let id = physical_id;
        match req.resource_type {
            VPC => vpc::read(&c, req, id).await,
            SUBNET => subnet::read(&c, req, id).await,
            INTERNET_GATEWAY => gateway::read_gateway(&c, req, id).await,
            GATEWAY_ATTACHMENT => gateway::read_attachment(&c, req, id).await,
            ROUTE_TABLE => route::read_table(&c, req, id).await,
            ROUTE => route::read_route(&c, req, id).await,
            ROUTE_TABLE_ASSOCIATION => route::read_association(&c, req, id).await,
            EIP => nat::read_eip(&c, req, id).await,
            NAT_GATEWAY => nat::read_nat(&c, req, id).await,
            SECURITY_GROUP => security_group::read(&c, req, id).await,
            _ => sg_rule::read(&c, req, id).await,
        }
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let c = client(ctx);
        let id = physical_id;
        let found = match req.resource_type {
            VPC => vpc::provisioned_of(&c, req, id).await?,
            SUBNET => subnet::provisioned_of(&c, req, id).await?,
            INTERNET_GATEWAY => gateway::gateway_provisioned(&c, req, id).await?,
            GATEWAY_ATTACHMENT => gateway::attachment_provisioned(&c, req, id).await?,
            ROUTE_TABLE => route::table_provisioned(&c, req, id).await?,
            ROUTE => route::route_provisioned(&c, req, id).await?,
            ROUTE_TABLE_ASSOCIATION => route::association_provisioned(&c, req, id).await?,
            EIP => nat::eip_provisioned(&c, req, id).await?,
            NAT_GATEWAY => nat::nat_provisioned(&c, req, id).await?,
            SECURITY_GROUP => security_group::provisioned_of(&c, req, id).await?,
            _ => sg_rule::provisioned_of(&c, req, id).await?,
        };
        found.ok_or_else(|| {
            ProviderError::failed(req, format!("{id} does not exist in EC2; check the id"))
        })
    }
}
