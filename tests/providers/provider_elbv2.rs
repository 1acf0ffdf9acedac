//! The ELBv2 SDK provider (LoadBalancer, TargetGroup, Listener, ListenerRule) against the
//! emulator, checked through the ELBv2 API: create with `Ref` / `Fn::GetAtt` as
//! CloudFormation reports them, the changes each type makes in place (security groups and
//! attributes, health checks, default actions, rule priority and conditions), the
//! replacement a create-only change answers, read (equal to what was sent), import by
//! physical id, delete and a second delete of what is gone.
//!
//! Run: `./scripts/test --test providers -- provider_elbv2::`.

use crate::sdk_env::{obj, replaced, Env};

use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Map, Value};

const LB: &str = "AWS::ElasticLoadBalancingV2::LoadBalancer";
const TG: &str = "AWS::ElasticLoadBalancingV2::TargetGroup";
const LISTENER: &str = "AWS::ElasticLoadBalancingV2::Listener";
const RULE: &str = "AWS::ElasticLoadBalancingV2::ListenerRule";

/// Creates, reads (equal to what was sent) and imports (equal to what create reported).
async fn created(env: &Env, ty: &str, props: &Map<String, Value>) -> cdkd::provider::Provisioned {
    let made = env.create(ty, props).await;
    assert_eq!(
        env.ref_of(ty, &made),
        json!(made.physical_id),
        "{ty}: Ref is the ARN"
    );
    assert_eq!(
        env.read(ty, props, &made.physical_id).await.as_ref(),
        Some(props),
        "{ty}: read after create"
    );
    assert_eq!(
        env.import(ty, props, &made.physical_id).await,
        made,
        "{ty}: import"
    );
    made
}

#[tokio::test]
async fn load_balancer_target_group_listener_and_rule_lifecycle() {
    let env = Env::new("ElbStack").await;
    let elb = Client::new(&env.sdk);
    let (vpc, subnets) = env
        .vpc_with_subnets(62, &["us-east-1a", "us-east-1b"])
        .await;
    let sg1 = env.security_group(&vpc, "lb-one").await;
    let sg2 = env.security_group(&vpc, "lb-two").await;

    // The load balancer: a generated name, attributes and tags.
    let lb1 = obj(json!({
        "Type": "application",
        "Scheme": "internet-facing",
        "Subnets": [subnets[1], subnets[0]],
        "SecurityGroups": [sg1],
        "LoadBalancerAttributes": [{"Key": "idle_timeout.timeout_seconds", "Value": "30"}],
        "Tags": [{"Key": "team", "Value": "a"}],
    }));
    let lb = created(&env, LB, &lb1).await;
    let lb_arn = lb.physical_id.clone();
    let name = lb.attributes["LoadBalancerName"]
        .as_str()
        .expect("name")
        .to_owned();
    assert!(
        name.len() <= 32 && name.to_ascii_lowercase().starts_with("elbstack"),
        "{name}"
    );
    assert_eq!(lb.attributes["LoadBalancerArn"], json!(lb_arn));
    assert!(
        lb.attributes["LoadBalancerFullName"]
            .as_str()
            .is_some_and(|f| f.starts_with(&format!("app/{name}/"))),
        "{:?}",
        lb.attributes
    );
    assert!(lb.attributes["DNSName"]
        .as_str()
        .is_some_and(|d| !d.is_empty()));
    assert!(lb.attributes["CanonicalHostedZoneID"]
        .as_str()
        .is_some_and(|z| !z.is_empty()));
    assert_eq!(lb.attributes["SecurityGroups"], json!([sg1]));
    assert_eq!(
        crate::support::lb_attribute(&elb, &lb_arn, "idle_timeout.timeout_seconds").await,
        "30"
    );

    // In place: security groups, attributes (one dropped back to its default), tags.
    let lb2 = obj(json!({
        "Type": "application",
        "Scheme": "internet-facing",
        "Subnets": [subnets[1], subnets[0]],
        "SecurityGroups": [sg2],
        "LoadBalancerAttributes": [{"Key": "routing.http2.enabled", "Value": "false"}],
        "Tags": [{"Key": "tier", "Value": "web"}],
    }));
    let updated = env.updated(LB, &lb2, &lb_arn, &lb1).await;
    assert_eq!(updated.physical_id, lb_arn);
    assert_eq!(updated.attributes["SecurityGroups"], json!([sg2]));
    assert_eq!(
        crate::support::lb_attribute(&elb, &lb_arn, "idle_timeout.timeout_seconds").await,
        "60",
        "a dropped attribute is reset to its default"
    );
    assert_eq!(
        crate::support::lb_attribute(&elb, &lb_arn, "routing.http2.enabled").await,
        "false"
    );
    assert_eq!(env.read(LB, &lb2, &lb_arn).await, Some(lb2.clone()));
    let mut internal = lb2.clone();
    internal.insert("Scheme".into(), json!("internal"));
    assert!(replaced(env.update(LB, &internal, &lb_arn, &lb2).await).contains("Scheme"));

    // The target group.
    let tg1 = obj(json!({
        "Port": 80,
        "Protocol": "HTTP",
        "VpcId": vpc,
        "TargetType": "ip",
        "HealthCheckPath": "/",
        "HealthCheckIntervalSeconds": 30,
        "Matcher": {"HttpCode": "200"},
        "TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "10"}],
        "Tags": [{"Key": "team", "Value": "a"}],
    }));
    let tg = created(&env, TG, &tg1).await;
    let tg_arn = tg.physical_id.clone();
    assert_eq!(tg.attributes["TargetGroupArn"], json!(tg_arn));
    assert!(
        tg.attributes["TargetGroupFullName"]
            .as_str()
            .is_some_and(|f| f.starts_with("targetgroup/")),
        "{:?}",
        tg.attributes
    );
    let tg2 = obj(json!({
        "Port": 80,
        "Protocol": "HTTP",
        "VpcId": vpc,
        "TargetType": "ip",
        "HealthCheckPath": "/health",
        "HealthCheckIntervalSeconds": 15,
        "Matcher": {"HttpCode": "200-299"},
        "TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "20"}],
        "Tags": [{"Key": "team", "Value": "b"}],
    }));
    assert_eq!(
        env.updated(TG, &tg2, &tg_arn, &tg1).await.physical_id,
        tg_arn
    );
    let live = elb
        .describe_target_groups()
        .target_group_arns(&tg_arn)
        .send()
        .await
        .expect("DescribeTargetGroups");
    let g = &live.target_groups()[0];
    assert_eq!(g.health_check_path(), Some("/health"));
    assert_eq!(g.matcher().and_then(|m| m.http_code()), Some("200-299"));
    assert_eq!(env.read(TG, &tg2, &tg_arn).await, Some(tg2.clone()));
    let mut other_port = tg2.clone();
    other_port.insert("Port".into(), json!(8080));
    assert!(replaced(env.update(TG, &other_port, &tg_arn, &tg2).await).contains("Port"));

    // The listener, forwarding to the group.
    let l1 = obj(json!({
        "LoadBalancerArn": lb_arn,
        "Port": 80,
        "Protocol": "HTTP",
        "DefaultActions": [{"Type": "forward", "TargetGroupArn": tg_arn}],
    }));
    let listener = created(&env, LISTENER, &l1).await;
    let l_arn = listener.physical_id.clone();
    assert_eq!(listener.attributes["ListenerArn"], json!(l_arn));
    let l2 = obj(json!({
        "LoadBalancerArn": lb_arn,
        "Port": 8080,
        "Protocol": "HTTP",
        "DefaultActions": [{"Type": "fixed-response",
            "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain", "MessageBody": "none"}}],
    }));
    assert_eq!(env.updated(LISTENER, &l2, &l_arn, &l1).await, listener);
    let live = elb
        .describe_listeners()
        .listener_arns(&l_arn)
        .send()
        .await
        .expect("DescribeListeners");
    assert_eq!(live.listeners()[0].port(), Some(8080));
    assert_eq!(env.read(LISTENER, &l2, &l_arn).await, Some(l2.clone()));
    let mut elsewhere = l2.clone();
    elsewhere.insert("LoadBalancerArn".into(), json!(format!("{lb_arn}x")));
    assert!(
        replaced(env.update(LISTENER, &elsewhere, &l_arn, &l2).await).contains("LoadBalancerArn")
    );

    // A rule on the listener.
    let r1 = obj(json!({
        "ListenerArn": l_arn,
        "Priority": 10,
        "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}],
        "Actions": [{"Type": "forward", "TargetGroupArn": tg_arn}],
    }));
    let rule = created(&env, RULE, &r1).await;
    let r_arn = rule.physical_id.clone();
    assert_eq!(rule.attributes["RuleArn"], json!(r_arn));
    assert_eq!(rule.attributes["IsDefault"], json!(false));
    let r2 = obj(json!({
        "ListenerArn": l_arn,
        "Priority": 20,
        "Conditions": [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/v2/*"]}}],
        "Actions": [{"Type": "forward", "TargetGroupArn": tg_arn}],
    }));
    assert_eq!(env.updated(RULE, &r2, &r_arn, &r1).await, rule);
    let live = elb
        .describe_rules()
        .rule_arns(&r_arn)
        .send()
        .await
        .expect("DescribeRules");
    assert_eq!(live.rules()[0].priority(), Some("20"));
    assert_eq!(env.read(RULE, &r2, &r_arn).await, Some(r2.clone()));
    let mut moved = r2.clone();
    moved.insert("ListenerArn".into(), json!(format!("{l_arn}x")));
    assert!(replaced(env.update(RULE, &moved, &r_arn, &r2).await).contains("ListenerArn"));

    // Dependents first, as a destroy orders them.
    env.delete_twice(RULE, &r2, &r_arn).await;
    env.delete_twice(LISTENER, &l2, &l_arn).await;
    env.delete_twice(TG, &tg2, &tg_arn).await;
    env.delete_twice(LB, &lb2, &lb_arn).await;
}

/// A nested setting the provider does not send is refused by its path before anything is
/// created, never dropped.
#[tokio::test]
async fn an_unmodelled_nested_action_setting_is_refused_before_any_call() {
    let env = Env::new("ElbRefuse").await;
    let props = obj(json!({
        "LoadBalancerArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/x/1",
        "Port": 80,
        "Protocol": "HTTP",
        "DefaultActions": [{"Type": "jwt-validation", "JwtValidationConfig": {"Issuer": "x"}}],
    }));
    let err = crate::sdk_env::provider(LISTENER)
        .create(&env.ctx(), &crate::sdk_env::req(LISTENER, &props))
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("DefaultActions[0].JwtValidationConfig"),
        "{err}"
    );
}
