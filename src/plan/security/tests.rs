//! The analysis on hand-made sides; the rendering against the golden file
//! fixtures/golden/security/tables.txt (`UPDATE_GOLDEN=1` rewrites it).

use super::*;
use serde_json::json;

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

fn one(id: &str, t: &str, old: Option<Value>, new: Option<Value>) -> SecurityChanges {
    let (old, new) = (old.map(props), new.map(props));
    analyze([Sides {
        logical_id: id,
        resource_type: t,
        old: old.as_ref(),
        new: new.as_ref(),
    }])
}

fn queue_policy(statements: Value) -> Value {
    json!({
        "Queues": ["https://sqs/q"],
        "PolicyDocument": {"Version": "2012-10-17", "Statement": statements}
    })
}

fn send() -> Value {
    json!({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*",
           "Principal": {"Service": "sns.amazonaws.com"}})
}

#[test]
fn an_added_allow_statement_broadens() {
    let c = one(
        "P",
        "AWS::SQS::QueuePolicy",
        None,
        Some(queue_policy(json!([send()]))),
    );
    assert!(c.broadening);
    assert_eq!(c.statements.len(), 1);
    let row = &c.statements[0];
    assert_eq!(row.sign, Sign::Added);
    assert_eq!(
        row.resource, "https://sqs/q",
        "a * resource reads as the queue"
    );
    assert_eq!(row.principal, "Service:sns.amazonaws.com");
}

#[test]
fn an_unchanged_statement_is_no_row_and_a_removed_one_does_not_broaden() {
    let before = queue_policy(json!([send()]));
    let c = one(
        "P",
        "AWS::SQS::QueuePolicy",
        Some(before.clone()),
        Some(before.clone()),
    );
    assert!(c.is_empty() && !c.broadening);
    let c = one(
        "P",
        "AWS::SQS::QueuePolicy",
        Some(before),
        Some(queue_policy(json!([]))),
    );
    assert_eq!(c.statements.len(), 1);
    assert_eq!(c.statements[0].sign, Sign::Removed);
    assert!(!c.broadening);
}

#[test]
fn deny_statements_broaden_when_removed_not_when_added() {
    let deny = json!({"Effect": "Deny", "Action": "s3:*", "Resource": "*"});
    let doc = |s: Value| json!({"Roles": ["r"], "PolicyDocument": {"Statement": s}});
    let added = one(
        "Pol",
        "AWS::IAM::Policy",
        Some(doc(json!([]))),
        Some(doc(json!([deny.clone()]))),
    );
    assert!(!added.broadening);
    assert_eq!(
        added.statements[0].principal, "AWS:r",
        "the policy's role is the principal"
    );
    let removed = one(
        "Pol",
        "AWS::IAM::Policy",
        Some(doc(json!([deny]))),
        Some(doc(json!([]))),
    );
    assert!(removed.broadening);
}

#[test]
fn role_trust_policy_inline_policies_and_managed_policies() {
    let role = json!({
        "AssumeRolePolicyDocument": {"Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
            "Principal": {"Service": "lambda.amazonaws.com"}}]},
        "Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"], "Resource": "arn:aws:s3:::b/*"}]}}],
        "ManagedPolicyArns": ["arn:aws:iam::aws:policy/ReadOnlyAccess"]
    });
    let c = one("Role", "AWS::IAM::Role", None, Some(role.clone()));
    assert!(c.broadening);
    assert_eq!(c.statements.len(), 2);
    let trust = c
        .statements
        .iter()
        .find(|r| r.action == "sts:AssumeRole")
        .expect("trust");
    assert_eq!(trust.resource, "${Role.Arn}");
    let inline = c
        .statements
        .iter()
        .find(|r| r.action.contains("s3:"))
        .expect("inline");
    assert_eq!(inline.action, "s3:GetObject\ns3:PutObject");
    assert_eq!(inline.principal, "AWS:${Role}");
    assert_eq!(c.managed_policies.len(), 1);
    assert_eq!(c.managed_policies[0].resource, "${Role}");
    // Only a managed policy added: still broadening.
    let mut more = role.clone();
    more["ManagedPolicyArns"]
        .as_array_mut()
        .expect("list")
        .push(json!("arn:aws:iam::aws:policy/AdministratorAccess"));
    let c = one("Role", "AWS::IAM::Role", Some(role), Some(more));
    assert!(c.statements.is_empty() && c.broadening);
    assert_eq!(
        c.managed_policies[0].managed_policy_arn,
        "arn:aws:iam::aws:policy/AdministratorAccess"
    );
}

#[test]
fn lambda_permissions_read_as_the_statement_lambda_adds() {
    let c = one(
        "Perm",
        "AWS::Lambda::Permission",
        None,
        Some(json!({
            "Action": "lambda:InvokeFunction", "FunctionName": {"Fn::GetAtt": ["Fn", "Arn"]},
            "Principal": "s3.amazonaws.com", "SourceAccount": "123456789012"
        })),
    );
    assert!(c.broadening);
    let row = &c.statements[0];
    assert_eq!(row.resource, "${Fn.Arn}");
    assert_eq!(row.principal, "Service:s3.amazonaws.com");
    assert_eq!(
        row.condition,
        "\"StringEquals\": {\n  \"AWS:SourceAccount\": \"123456789012\"\n}"
    );
    let account = one(
        "Perm",
        "AWS::Lambda::Permission",
        None,
        Some(json!({
        "Action": "lambda:InvokeFunction", "FunctionName": "f", "Principal": "123456789012"})),
    );
    assert_eq!(
        account.statements[0].principal,
        "AWS:arn:aws:iam::123456789012:root"
    );
}

#[test]
fn security_group_rules_added_broaden_removed_do_not() {
    let group = |ingress: Value| {
        json!({"GroupDescription": "d", "SecurityGroupIngress": ingress,
        "SecurityGroupEgress": [{"IpProtocol": "-1", "CidrIp": "0.0.0.0/0"}]})
    };
    let ssh = json!({"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "0.0.0.0/0"});
    let c = one(
        "Sg",
        "AWS::EC2::SecurityGroup",
        Some(group(json!([]))),
        Some(group(json!([ssh.clone()]))),
    );
    assert!(c.broadening);
    assert_eq!(c.security_groups.len(), 1);
    let row = &c.security_groups[0];
    assert_eq!(
        (row.group.as_str(), row.direction.as_str()),
        ("${Sg.GroupId}", "In")
    );
    assert_eq!(
        (row.protocol.as_str(), row.peer.as_str()),
        ("TCP 22", "Everyone (IPv4)")
    );
    let c = one(
        "Sg",
        "AWS::EC2::SecurityGroup",
        Some(group(json!([ssh]))),
        Some(group(json!([]))),
    );
    assert!(!c.broadening && c.security_groups[0].sign == Sign::Removed);
    let c = one(
        "R",
        "AWS::EC2::SecurityGroupIngress",
        None,
        Some(json!({
        "GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 8443,
        "SourceSecurityGroupId": "sg-2"})),
    );
    assert_eq!(c.security_groups[0].protocol, "TCP 443-8443");
    assert_eq!(c.security_groups[0].peer, "sg-2");
}

#[test]
fn other_types_and_changes_elsewhere_are_not_security_changes() {
    let c = one(
        "Q",
        "AWS::SQS::Queue",
        None,
        Some(json!({"QueueName": "q"})),
    );
    assert!(c.is_empty() && !c.broadening);
    assert!(!is_scrutinized("AWS::SQS::Queue"));
    assert!(is_scrutinized("AWS::Lambda::Permission"));
}

/// Every table, rendered, against the golden file.
#[test]
fn tables_render_as_the_golden_file() {
    let role_new = props(json!({
        "AssumeRolePolicyDocument": {"Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
            "Principal": {"Service": "lambda.amazonaws.com"}}]},
        "ManagedPolicyArns": [{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"},
            ":iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"]]}]
    }));
    let policy_old = props(
        json!({"Roles": [{"Ref": "Role"}], "PolicyDocument": {"Statement": [
        {"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "arn:aws:sqs:us-east-1:1:q"}]}}),
    );
    let policy_new = props(
        json!({"Roles": [{"Ref": "Role"}], "PolicyDocument": {"Statement": [
        {"Effect": "Allow", "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage"],
         "Resource": "arn:aws:sqs:us-east-1:1:q",
         "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]}}),
    );
    let sg_new = props(json!({"SecurityGroupIngress": [
        {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"},
        {"IpProtocol": "icmp", "FromPort": -1, "ToPort": -1, "CidrIpv6": "::/0"}],
        "SecurityGroupEgress": [{"IpProtocol": "-1", "CidrIp": "10.0.0.0/16"}]}));
    let changes = analyze([
        Sides {
            logical_id: "Role",
            resource_type: "AWS::IAM::Role",
            old: None,
            new: Some(&role_new),
        },
        Sides {
            logical_id: "RolePolicy",
            resource_type: "AWS::IAM::Policy",
            old: Some(&policy_old),
            new: Some(&policy_new),
        },
        Sides {
            logical_id: "Sg",
            resource_type: "AWS::EC2::SecurityGroup",
            old: None,
            new: Some(&sg_new),
        },
    ]);
    assert!(changes.broadening);
    let text = render::tables(&changes).join("\n") + "\n";
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden/security/tables.txt");
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(golden.parent().expect("dir")).expect("golden dir");
        std::fs::write(&golden, &text).expect("golden written");
    }
    let want = std::fs::read_to_string(&golden).expect("golden file (UPDATE_GOLDEN=1 writes it)");
    assert_eq!(
        text,
        want,
        "rendered tables differ from {}",
        golden.display()
    );
}
