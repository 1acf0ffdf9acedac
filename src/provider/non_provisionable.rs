//! Resource types the Cloud Control API cannot provision: their registry schema declares no
//! handlers (DescribeType reports them NON_PROVISIONABLE). They are legacy types CloudFormation
//! provisions itself, plus the types CloudFormation implements (custom resources, wait
//! conditions, macros, the CDK's metadata). The registry never routes these to Cloud Control:
//! each is served by a cdkd provider, skipped, or refused before anything is created.
//!
//! The list is generated from the same cfn-lint snapshot as `data/resource-schemas.json`
//! (cfn-lint 1.58.0, us-east-1) by `scripts/list_non_provisionable.py`; regenerate both
//! together.

/// Sorted, so lookups can binary-search.
pub const NON_PROVISIONABLE_TYPES: &[&str] = &[
    "AWS::AppMesh::GatewayRoute",
    "AWS::AppMesh::Mesh",
    "AWS::AppMesh::Route",
    "AWS::AppMesh::VirtualGateway",
    "AWS::AppMesh::VirtualNode",
    "AWS::AppMesh::VirtualRouter",
    "AWS::AppMesh::VirtualService",
    "AWS::CDK::Metadata",
    "AWS::CloudFormation::CustomResource",
    "AWS::CloudFormation::Macro",
    "AWS::CloudFormation::WaitCondition",
    "AWS::CloudFormation::WaitConditionHandle",
    "AWS::CloudFront::StreamingDistribution",
    "AWS::CloudWatch::AnomalyDetector",
    "AWS::CodeBuild::Project",
    "AWS::CodeStar::GitHubRepository",
    "AWS::DAX::Cluster",
    "AWS::DMS::ReplicationInstance",
    "AWS::DocDB::DBCluster",
    "AWS::DocDB::DBInstance",
    "AWS::EC2::ClientVpnEndpoint",
    "AWS::EC2::ClientVpnTargetNetworkAssociation",
    "AWS::EC2::NetworkInterfacePermission",
    "AWS::EMR::Cluster",
    "AWS::ElastiCache::SecurityGroup",
    "AWS::ElastiCache::SecurityGroupIngress",
    "AWS::ElasticLoadBalancingV2::ListenerCertificate",
    "AWS::Elasticsearch::Domain",
    "AWS::FSx::FileSystem",
    "AWS::Glue::DevEndpoint",
    "AWS::Greengrass::ConnectorDefinition",
    "AWS::Greengrass::ConnectorDefinitionVersion",
    "AWS::Greengrass::CoreDefinition",
    "AWS::Greengrass::CoreDefinitionVersion",
    "AWS::Greengrass::DeviceDefinition",
    "AWS::Greengrass::DeviceDefinitionVersion",
    "AWS::Greengrass::FunctionDefinition",
    "AWS::Greengrass::FunctionDefinitionVersion",
    "AWS::Greengrass::Group",
    "AWS::Greengrass::GroupVersion",
    "AWS::Greengrass::LoggerDefinition",
    "AWS::Greengrass::LoggerDefinitionVersion",
    "AWS::Greengrass::ResourceDefinition",
    "AWS::Greengrass::ResourceDefinitionVersion",
    "AWS::Greengrass::SubscriptionDefinition",
    "AWS::Greengrass::SubscriptionDefinitionVersion",
    "AWS::IAM::AccessKey",
    "AWS::IAM::UserToGroupAddition",
    "AWS::IoTThingsGraph::FlowTemplate",
    "AWS::KinesisAnalytics::Application",
    "AWS::KinesisAnalytics::ApplicationOutput",
    "AWS::KinesisAnalytics::ApplicationReferenceDataSource",
    "AWS::KinesisAnalyticsV2::ApplicationCloudWatchLoggingOption",
    "AWS::KinesisAnalyticsV2::ApplicationOutput",
    "AWS::KinesisAnalyticsV2::ApplicationReferenceDataSource",
    "AWS::LakeFormation::DataLakeSettings",
    "AWS::LakeFormation::Permissions",
    "AWS::LakeFormation::Resource",
    "AWS::ManagedBlockchain::Member",
    "AWS::ManagedBlockchain::Node",
    "AWS::MediaLive::Channel",
    "AWS::MediaStore::Container",
    "AWS::Pinpoint::ADMChannel",
    "AWS::Pinpoint::APNSChannel",
    "AWS::Pinpoint::APNSSandboxChannel",
    "AWS::Pinpoint::APNSVoipChannel",
    "AWS::Pinpoint::APNSVoipSandboxChannel",
    "AWS::Pinpoint::App",
    "AWS::Pinpoint::ApplicationSettings",
    "AWS::Pinpoint::BaiduChannel",
    "AWS::Pinpoint::Campaign",
    "AWS::Pinpoint::EmailChannel",
    "AWS::Pinpoint::EmailTemplate",
    "AWS::Pinpoint::EventStream",
    "AWS::Pinpoint::GCMChannel",
    "AWS::Pinpoint::PushTemplate",
    "AWS::Pinpoint::SMSChannel",
    "AWS::Pinpoint::Segment",
    "AWS::Pinpoint::SmsTemplate",
    "AWS::Pinpoint::VoiceChannel",
    "AWS::PinpointEmail::ConfigurationSet",
    "AWS::PinpointEmail::ConfigurationSetEventDestination",
    "AWS::PinpointEmail::DedicatedIpPool",
    "AWS::PinpointEmail::Identity",
    "AWS::QLDB::Ledger",
    "AWS::RDS::DBSecurityGroup",
    "AWS::RDS::DBSecurityGroupIngress",
    "AWS::Redshift::ClusterSecurityGroup",
    "AWS::Redshift::ClusterSecurityGroupIngress",
    "AWS::Route53::RecordSetGroup",
    "AWS::SageMaker::ExperimentTrialComponent",
    "AWS::WAF::ByteMatchSet",
    "AWS::WAF::IPSet",
    "AWS::WAF::Rule",
    "AWS::WAF::SizeConstraintSet",
    "AWS::WAF::SqlInjectionMatchSet",
    "AWS::WAF::WebACL",
    "AWS::WAF::XssMatchSet",
    "AWS::WAFRegional::ByteMatchSet",
    "AWS::WAFRegional::GeoMatchSet",
    "AWS::WAFRegional::IPSet",
    "AWS::WAFRegional::RateBasedRule",
    "AWS::WAFRegional::RegexPatternSet",
    "AWS::WAFRegional::Rule",
    "AWS::WAFRegional::SizeConstraintSet",
    "AWS::WAFRegional::SqlInjectionMatchSet",
    "AWS::WAFRegional::WebACL",
    "AWS::WAFRegional::WebACLAssociation",
    "AWS::WAFRegional::XssMatchSet",
    "Alexa::ASK::Skill",
];

/// Whether Cloud Control cannot provision `resource_type`.
pub fn is_non_provisionable(resource_type: &str) -> bool {
    NON_PROVISIONABLE_TYPES
        .binary_search(&resource_type)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_every_type_is_in_the_schema_snapshot() {
        assert!(NON_PROVISIONABLE_TYPES.windows(2).all(|w| w[0] < w[1]));
        for t in NON_PROVISIONABLE_TYPES {
            assert!(super::super::schema::schema_for(t).is_some(), "{t}");
        }
        assert!(is_non_provisionable(
            "AWS::CloudFormation::WaitConditionHandle"
        ));
        assert!(is_non_provisionable("AWS::CodeBuild::Project"));
        assert!(!is_non_provisionable("AWS::Events::EventBus"));
    }
}
