//! The CDK's defensive `DependsOn` edges from VPC Lambdas (and the role, policy, function URL
//! and event-source mapping around them) onto the private subnets' default route and route
//! table association, which a deploy drops by default, as upstream cdkd does
//! (`--no-aggressive-vpc-parallel` keeps them).
//!
//! The CDK adds them so nothing invokes the function before its egress path exists: a runtime
//! concern. At deploy time none of these calls needs the route: Lambda accepts a function
//! whose VPC networking is still being set up (it stays `Pending`), and the role, policy, URL,
//! permission and mapping calls accept such a function. Dropping the edge lets the function
//! (and whatever waits on it, a CloudFront origin on its URL) start while the NAT gateway
//! stabilizes. Only `DependsOn` edges between exactly these type pairs go; a `Ref` or
//! `Fn::GetAtt` edge between them stays, and so does every other `DependsOn`.

/// (dependent type, dependency type) pairs whose `DependsOn` is relaxed.
pub const DEFENSIVE_DEPENDS_ON: &[(&str, &str)] = &[
    ("AWS::IAM::Role", "AWS::EC2::Route"),
    ("AWS::IAM::Role", "AWS::EC2::SubnetRouteTableAssociation"),
    ("AWS::IAM::Policy", "AWS::EC2::Route"),
    ("AWS::IAM::Policy", "AWS::EC2::SubnetRouteTableAssociation"),
    ("AWS::Lambda::Function", "AWS::EC2::Route"),
    (
        "AWS::Lambda::Function",
        "AWS::EC2::SubnetRouteTableAssociation",
    ),
    ("AWS::Lambda::Url", "AWS::EC2::Route"),
    ("AWS::Lambda::Url", "AWS::EC2::SubnetRouteTableAssociation"),
    ("AWS::Lambda::EventSourceMapping", "AWS::EC2::Route"),
    (
        "AWS::Lambda::EventSourceMapping",
        "AWS::EC2::SubnetRouteTableAssociation",
    ),
];

/// Whether a `DependsOn` from a `from` resource onto a `to` resource is a defensive one.
pub fn is_defensive(from: &str, to: &str) -> bool {
    DEFENSIVE_DEPENDS_ON
        .iter()
        .any(|(f, t)| *f == from && *t == to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_pairs_are_defensive() {
        assert!(is_defensive("AWS::Lambda::Function", "AWS::EC2::Route"));
        assert!(is_defensive(
            "AWS::IAM::Policy",
            "AWS::EC2::SubnetRouteTableAssociation"
        ));
        assert!(!is_defensive("AWS::EC2::Route", "AWS::Lambda::Function"));
        assert!(!is_defensive(
            "AWS::Lambda::Function",
            "AWS::EC2::NatGateway"
        ));
        assert!(!is_defensive("AWS::SQS::Queue", "AWS::EC2::Route"));
    }
}
