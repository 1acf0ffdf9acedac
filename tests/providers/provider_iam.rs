//! The IAM SDK providers (Role, Policy, ManagedPolicy, InstanceProfile) against the emulator.
//!
//! Run: `eval "$(./scripts/emulator start)" && cargo test --test provider_iam`.

use crate::support;

use std::sync::Arc;

use cdkd::aws::{ClientOptions, Clients};
use cdkd::provider::{Provider, ProviderContext, Provisioned, ResourceRequest, UpdateOutcome};
use serde_json::{json, Map, Value};

const ROLE: &str = "AWS::IAM::Role";
const POLICY: &str = "AWS::IAM::Policy";
const MANAGED: &str = "AWS::IAM::ManagedPolicy";
const PROFILE: &str = "AWS::IAM::InstanceProfile";

fn trust(service: &str) -> Value {
    json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})
}

fn allow(action: &str) -> Value {
    json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}]})
}

fn props(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("properties are an object")
}

struct Env {
    clients: Clients,
    stack: String,
    iam: aws_sdk_iam::Client,
}

impl Env {
    async fn new() -> Self {
        Env {
            clients: Clients::load(&ClientOptions::default()).await,
            stack: support::unique_name("IamStack"),
            iam: aws_sdk_iam::Client::new(&support::sdk_config().await),
        }
    }

    fn ctx(&self) -> ProviderContext<'_> {
        ProviderContext {
            clients: &self.clients,
            stack_name: &self.stack,
            region: "us-east-1",
            account_id: "123456789012",
            partition: "aws",
            no_wait: false,
        }
    }

    /// A role made straight through the SDK, for the providers that attach to one.
    async fn role(&self) -> String {
        let name = support::unique_name("role");
        self.iam
            .create_role()
            .role_name(&name)
            .assume_role_policy_document(trust("ec2.amazonaws.com").to_string())
            .send()
            .await
            .expect("CreateRole");
        name
    }

    async fn user(&self) -> String {
        let name = support::unique_name("user");
        self.iam
            .create_user()
            .user_name(&name)
            .send()
            .await
            .expect("CreateUser");
        name
    }

    async fn group(&self) -> String {
        let name = support::unique_name("group");
        self.iam
            .create_group()
            .group_name(&name)
            .send()
            .await
            .expect("CreateGroup");
        name
    }

    async fn inline_on_role(&self, role: &str, policy: &str) -> Option<Value> {
        match self
            .iam
            .get_role_policy()
            .role_name(role)
            .policy_name(policy)
            .send()
            .await
        {
            Ok(out) => Some(decode(out.policy_document())),
            Err(e) => {
                assert!(is_no_such_entity(&e), "{e:?}");
                None
            }
        }
    }
}

fn provider(resource_type: &str) -> Arc<dyn Provider> {
    cdkd::provider::sdk::all()
        .into_iter()
        .find(|p| p.resource_types().contains(&resource_type))
        .unwrap_or_else(|| panic!("an SDK provider for {resource_type}"))
}

fn request<'a>(
    logical_id: &'a str,
    resource_type: &'a str,
    properties: &'a Map<String, Value>,
) -> ResourceRequest<'a> {
    ResourceRequest {
        logical_id,
        resource_type,
        properties,
        client_token: None,
    }
}

/// IAM documents come back URL-encoded (real IAM) or as JSON (moto).
fn decode(raw: &str) -> Value {
    if let Ok(v) = serde_json::from_str(raw) {
        return v;
    }
    let mut out = Vec::new();
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if let Some(byte) = hex
            .filter(|_| b[i] == b'%')
            .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    serde_json::from_slice(&out).expect("a JSON document")
}

fn updated(outcome: UpdateOutcome) -> Provisioned {
    match outcome {
        UpdateOutcome::Updated(p) => p,
        other => panic!("expected an in-place update, got {other:?}"),
    }
}

fn needs_replacement(outcome: UpdateOutcome, property: &str) {
    match outcome {
        UpdateOutcome::NeedsReplacement { reason } => {
            assert!(reason.contains(property), "{reason}")
        }
        other => panic!("expected NeedsReplacement for {property}, got {other:?}"),
    }
}

fn is_no_such_entity<E: aws_sdk_iam::error::ProvideErrorMetadata, R>(
    e: &aws_sdk_iam::error::SdkError<E, R>,
) -> bool {
    e.as_service_error().and_then(|s| s.code()) == Some("NoSuchEntity")
}

#[tokio::test]
async fn role_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(ROLE);
    let managed_a = "arn:aws:iam::aws:policy/ReadOnlyAccess";
    let managed_b = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess";
    let boundary = "arn:aws:iam::aws:policy/PowerUserAccess";

    let v1 = props(json!({
        "AssumeRolePolicyDocument": trust("lambda.amazonaws.com"),
        "Description": "first",
        "MaxSessionDuration": 7200,
        "Path": "/cdkd/",
        "ManagedPolicyArns": [managed_a],
        "Policies": [
            {"PolicyName": "keep", "PolicyDocument": allow("s3:GetObject")},
            {"PolicyName": "drop", "PolicyDocument": allow("sqs:SendMessage")}
        ],
        "Tags": [{"Key": "team", "Value": "a"}, {"Key": "gone", "Value": "soon"}]
    }));
    let req = request("MyRole", ROLE, &v1);
    let created = p.create(&ctx, &req).await.expect("create");
    let name = created.physical_id.clone();
    assert!(
        name.contains("MyRole") && name.len() <= 64,
        "generated name {name}"
    );
    assert_eq!(p.ref_value(ROLE, &name, &created.attributes), json!(name));

    // Attributes against IAM's own answer.
    let role = env
        .iam
        .get_role()
        .role_name(&name)
        .send()
        .await
        .expect("GetRole")
        .role
        .expect("role");
    assert_eq!(created.attributes["Arn"], json!(role.arn()));
    assert_eq!(created.attributes["RoleId"], json!(role.role_id()));
    assert_eq!(
        role.arn(),
        format!("arn:aws:iam::123456789012:role/cdkd/{name}")
    );
    assert_eq!(role.path(), "/cdkd/");
    assert_eq!(role.description(), Some("first"));
    assert_eq!(role.max_session_duration(), Some(7200));
    assert_eq!(
        env.inline_on_role(&name, "keep").await,
        Some(allow("s3:GetObject"))
    );

    // Read reports the properties as CloudFormation names them.
    let read = p
        .read(&ctx, &req, &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["RoleName"], json!(name));
    assert_eq!(
        read["AssumeRolePolicyDocument"],
        trust("lambda.amazonaws.com")
    );
    assert_eq!(read["ManagedPolicyArns"], json!([managed_a]));
    assert_eq!(read["MaxSessionDuration"], json!(7200));
    assert_eq!(read["Description"], json!("first"));
    let mut inline: Vec<&str> = read["Policies"]
        .as_array()
        .expect("policies")
        .iter()
        .filter_map(|p| p["PolicyName"].as_str())
        .collect();
    inline.sort_unstable();
    assert_eq!(inline, ["drop", "keep"]);
    assert_eq!(read["Tags"].as_array().map(Vec::len), Some(2));

    // In place: every mutable property at once.
    let v2 = props(json!({
        "AssumeRolePolicyDocument": trust("ecs-tasks.amazonaws.com"),
        "Description": "second",
        "MaxSessionDuration": 3600,
        "Path": "/cdkd/",
        "ManagedPolicyArns": [managed_b],
        "PermissionsBoundary": boundary,
        "Policies": [
            {"PolicyName": "keep", "PolicyDocument": allow("s3:PutObject")},
            {"PolicyName": "new", "PolicyDocument": allow("sns:Publish")}
        ],
        "Tags": [{"Key": "team", "Value": "b"}]
    }));
    let req2 = request("MyRole", ROLE, &v2);
    let up = updated(p.update(&ctx, &req2, &name, &v1).await.expect("update"));
    assert_eq!(up.physical_id, name);
    assert_eq!(up.attributes, created.attributes);
    let role = env
        .iam
        .get_role()
        .role_name(&name)
        .send()
        .await
        .expect("GetRole")
        .role
        .expect("role");
    assert_eq!(role.description(), Some("second"));
    assert_eq!(role.max_session_duration(), Some(3600));
    assert_eq!(
        decode(role.assume_role_policy_document().expect("trust")),
        trust("ecs-tasks.amazonaws.com")
    );
    assert_eq!(
        role.permissions_boundary()
            .and_then(|b| b.permissions_boundary_arn()),
        Some(boundary)
    );
    let attached = env
        .iam
        .list_attached_role_policies()
        .role_name(&name)
        .send()
        .await
        .expect("list attached");
    let arns: Vec<&str> = attached
        .attached_policies()
        .iter()
        .filter_map(|a| a.policy_arn())
        .collect();
    assert_eq!(arns, [managed_b]);
    assert_eq!(
        env.inline_on_role(&name, "keep").await,
        Some(allow("s3:PutObject"))
    );
    assert_eq!(
        env.inline_on_role(&name, "new").await,
        Some(allow("sns:Publish"))
    );
    assert_eq!(env.inline_on_role(&name, "drop").await, None);
    let tags = env
        .iam
        .list_role_tags()
        .role_name(&name)
        .send()
        .await
        .expect("tags");
    let tags: Vec<(&str, &str)> = tags.tags().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(tags, [("team", "b")]);

    // Removing the boundary and description in place.
    let mut v3 = v2.clone();
    v3.remove("PermissionsBoundary");
    v3.remove("Description");
    let req3 = request("MyRole", ROLE, &v3);
    updated(p.update(&ctx, &req3, &name, &v2).await.expect("update 2"));
    let role = env
        .iam
        .get_role()
        .role_name(&name)
        .send()
        .await
        .expect("GetRole")
        .role
        .expect("role");
    assert!(role.permissions_boundary().is_none());
    assert!(role.description().unwrap_or_default().is_empty());

    // Create-only properties replace.
    let mut moved = v3.clone();
    moved.insert("Path".into(), json!("/other/"));
    needs_replacement(
        p.update(&ctx, &request("MyRole", ROLE, &moved), &name, &v3)
            .await
            .expect("update"),
        "Path",
    );
    let mut renamed = v3.clone();
    renamed.insert("RoleName".into(), json!(support::unique_name("renamed")));
    needs_replacement(
        p.update(&ctx, &request("MyRole", ROLE, &renamed), &name, &v3)
            .await
            .expect("update"),
        "RoleName",
    );

    // Import adopts it with the same attributes.
    let imported = p.import(&ctx, &req3, &name).await.expect("import");
    assert_eq!(imported.attributes, created.attributes);

    // Delete strips attachments and inline policies first; a second delete succeeds.
    p.delete(&ctx, &req3, &name).await.expect("delete");
    let gone = env
        .iam
        .get_role()
        .role_name(&name)
        .send()
        .await
        .expect_err("role deleted");
    assert!(is_no_such_entity(&gone));
    p.delete(&ctx, &req3, &name).await.expect("delete again");
    assert!(p.read(&ctx, &req3, &name).await.expect("read").is_none());
}

#[tokio::test]
async fn role_with_explicit_name_and_bad_input() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(ROLE);
    let name = support::unique_name("explicit-role");
    let v =
        props(json!({"RoleName": name, "AssumeRolePolicyDocument": trust("ec2.amazonaws.com")}));
    let req = request("Named", ROLE, &v);
    let created = p.create(&ctx, &req).await.expect("create");
    assert_eq!(created.physical_id, name);

    // A second role of the same name fails with IAM's message, naming the resource.
    let err = p
        .create(&ctx, &req)
        .await
        .expect_err("duplicate")
        .to_string();
    assert!(
        err.starts_with("Named (AWS::IAM::Role): iam CreateRole"),
        "{err}"
    );
    assert!(err.contains("EntityAlreadyExists"), "{err}");
    assert!(!err.contains('\n'), "one line: {err}");

    // A missing trust policy is a clear error, and a failed furnish leaves nothing behind.
    let missing = props(json!({"RoleName": support::unique_name("no-trust")}));
    let err = p
        .create(&ctx, &request("NoTrust", ROLE, &missing))
        .await
        .expect_err("missing")
        .to_string();
    assert!(err.contains("AssumeRolePolicyDocument"), "{err}");
    let broken_name = support::unique_name("broken");
    let broken = props(json!({
        "RoleName": broken_name,
        "AssumeRolePolicyDocument": trust("ec2.amazonaws.com"),
        "ManagedPolicyArns": ["arn:aws:iam::123456789012:policy/does-not-exist"]
    }));
    p.create(&ctx, &request("Broken", ROLE, &broken))
        .await
        .expect_err("unknown managed policy");
    let leftover = env
        .iam
        .get_role()
        .role_name(&broken_name)
        .send()
        .await
        .expect_err("cleaned up");
    assert!(is_no_such_entity(&leftover));

    p.delete(&ctx, &req, &name).await.expect("delete");
}

#[tokio::test]
async fn inline_policy_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(POLICY);
    let (role, user, group) = (env.role().await, env.user().await, env.group().await);

    let v1 = props(
        json!({"PolicyName": "grants", "PolicyDocument": allow("s3:GetObject"), "Roles": [role], "Users": [user]}),
    );
    let req = request("RoleDefaultPolicy", POLICY, &v1);
    let created = p.create(&ctx, &req).await.expect("create");
    let id = created.physical_id.clone();
    let stack5: String = env
        .stack
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    assert!(
        id.starts_with(&format!("{stack5}-RoleD-")),
        "CloudFormation-style id: {id}"
    );
    assert_eq!(p.ref_value(POLICY, &id, &created.attributes), json!(id));
    assert_eq!(created.attributes["Id"], json!(id));
    assert_eq!(
        env.inline_on_role(&role, "grants").await,
        Some(allow("s3:GetObject"))
    );
    let on_user = env
        .iam
        .get_user_policy()
        .user_name(&user)
        .policy_name("grants")
        .send()
        .await
        .expect("user policy");
    assert_eq!(decode(on_user.policy_document()), allow("s3:GetObject"));

    let read = p
        .read(&ctx, &req, &id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["PolicyName"], json!("grants"));
    assert_eq!(read["PolicyDocument"], allow("s3:GetObject"));
    assert_eq!(read["Roles"], json!([role]));
    assert_eq!(read["Users"], json!([user]));

    // In place: new document, moved from the user to a group, then renamed.
    let v2 = props(
        json!({"PolicyName": "grants", "PolicyDocument": allow("s3:PutObject"), "Roles": [role], "Groups": [group]}),
    );
    let req2 = request("RoleDefaultPolicy", POLICY, &v2);
    let up = updated(p.update(&ctx, &req2, &id, &v1).await.expect("update"));
    assert_eq!(up.physical_id, id);
    assert_eq!(
        env.inline_on_role(&role, "grants").await,
        Some(allow("s3:PutObject"))
    );
    let on_group = env
        .iam
        .get_group_policy()
        .group_name(&group)
        .policy_name("grants")
        .send()
        .await
        .expect("group policy");
    assert_eq!(decode(on_group.policy_document()), allow("s3:PutObject"));
    let off_user = env
        .iam
        .get_user_policy()
        .user_name(&user)
        .policy_name("grants")
        .send()
        .await
        .expect_err("removed from user");
    assert!(is_no_such_entity(&off_user));

    // AWS::IAM::Policy has no create-only property: a new PolicyName is an in-place update.
    let v3 = props(
        json!({"PolicyName": "renamed", "PolicyDocument": allow("s3:PutObject"), "Roles": [role]}),
    );
    let req3 = request("RoleDefaultPolicy", POLICY, &v3);
    updated(p.update(&ctx, &req3, &id, &v2).await.expect("rename"));
    assert_eq!(env.inline_on_role(&role, "grants").await, None);
    assert_eq!(
        env.inline_on_role(&role, "renamed").await,
        Some(allow("s3:PutObject"))
    );
    let off_group = env
        .iam
        .get_group_policy()
        .group_name(&group)
        .policy_name("grants")
        .send()
        .await
        .expect_err("removed from group");
    assert!(is_no_such_entity(&off_group));

    let imported = p.import(&ctx, &req3, &id).await.expect("import");
    assert_eq!(imported.attributes["Id"], json!(id));

    // Without any entity the policy is refused before anything is called.
    let none = props(json!({"PolicyName": "x", "PolicyDocument": allow("s3:*")}));
    let err = p
        .create(&ctx, &request("Orphan", POLICY, &none))
        .await
        .expect_err("no entity")
        .to_string();
    assert!(err.contains("Roles, Users or Groups"), "{err}");

    p.delete(&ctx, &req3, &id).await.expect("delete");
    assert_eq!(env.inline_on_role(&role, "renamed").await, None);
    p.delete(&ctx, &req3, &id).await.expect("delete again");
    assert!(p.read(&ctx, &req3, &id).await.expect("read").is_none());
    // The entity itself gone is fine too.
    env.iam
        .delete_role()
        .role_name(&role)
        .send()
        .await
        .expect("DeleteRole");
    p.delete(&ctx, &req3, &id)
        .await
        .expect("delete with the role gone");
}

#[tokio::test]
async fn managed_policy_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(MANAGED);
    let (role, user) = (env.role().await, env.user().await);

    let v1 = props(
        json!({"Description": "cdkd test", "Path": "/cdkd/", "PolicyDocument": allow("s3:GetObject"), "Roles": [role]}),
    );
    let req = request("Managed", MANAGED, &v1);
    let created = p.create(&ctx, &req).await.expect("create");
    let arn = created.physical_id.clone();
    assert!(
        arn.starts_with("arn:aws:iam::123456789012:policy/cdkd/"),
        "{arn}"
    );
    assert_eq!(p.ref_value(MANAGED, &arn, &created.attributes), json!(arn));

    let policy = env
        .iam
        .get_policy()
        .policy_arn(&arn)
        .send()
        .await
        .expect("GetPolicy")
        .policy
        .expect("policy");
    let a = &created.attributes;
    assert_eq!(a["PolicyArn"], json!(policy.arn()));
    assert_eq!(a["PolicyId"], json!(policy.policy_id()));
    assert_eq!(a["DefaultVersionId"], json!(policy.default_version_id()));
    assert_eq!(a["AttachmentCount"], json!(policy.attachment_count()));
    assert_eq!(a["AttachmentCount"], json!(1));
    assert_eq!(a["IsAttachable"], json!(policy.is_attachable()));
    assert_eq!(
        a["PermissionsBoundaryUsageCount"],
        json!(policy.permissions_boundary_usage_count())
    );
    let date = |d: Option<&aws_smithy_types::DateTime>| {
        json!(d.and_then(|d| d.fmt(aws_smithy_types::date_time::Format::DateTime).ok()))
    };
    assert_eq!(a["CreateDate"], date(policy.create_date()));
    assert_eq!(a["UpdateDate"], date(policy.update_date()));

    let read = p
        .read(&ctx, &req, &arn)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["PolicyDocument"], allow("s3:GetObject"));
    assert_eq!(read["Roles"], json!([role]));
    assert_eq!(read["Path"], json!("/cdkd/"));
    assert_eq!(read["Description"], json!("cdkd test"));

    // Six document changes: past IAM's five-version limit, the oldest version makes room.
    let mut previous = v1.clone();
    for (i, action) in [
        "s3:PutObject",
        "s3:ListBucket",
        "sqs:SendMessage",
        "sns:Publish",
        "logs:PutLogEvents",
        "s3:DeleteObject",
    ]
    .iter()
    .enumerate()
    {
        let mut next = previous.clone();
        next.insert("PolicyDocument".into(), allow(action));
        if i == 0 {
            next.insert("Roles".into(), json!([]));
            next.insert("Users".into(), json!([user]));
        }
        let up = updated(
            p.update(&ctx, &request("Managed", MANAGED, &next), &arn, &previous)
                .await
                .expect("update"),
        );
        assert_eq!(up.physical_id, arn);
        previous = next;
    }
    let policy = env
        .iam
        .get_policy()
        .policy_arn(&arn)
        .send()
        .await
        .expect("GetPolicy")
        .policy
        .expect("policy");
    let version = policy.default_version_id().expect("default version");
    let doc = env
        .iam
        .get_policy_version()
        .policy_arn(&arn)
        .version_id(version)
        .send()
        .await
        .expect("version");
    assert_eq!(
        decode(
            doc.policy_version()
                .and_then(|v| v.document())
                .expect("document")
        ),
        allow("s3:DeleteObject")
    );
    let versions = env
        .iam
        .list_policy_versions()
        .policy_arn(&arn)
        .send()
        .await
        .expect("versions");
    assert!(versions.versions().len() <= 5);
    let entities = env
        .iam
        .list_entities_for_policy()
        .policy_arn(&arn)
        .send()
        .await
        .expect("entities");
    assert!(entities.policy_roles().is_empty());
    assert_eq!(
        entities
            .policy_users()
            .iter()
            .filter_map(|u| u.user_name())
            .collect::<Vec<_>>(),
        [user.as_str()]
    );

    // Create-only properties replace.
    for (property, value) in [
        ("Description", json!("other")),
        ("Path", json!("/else/")),
        ("ManagedPolicyName", json!("fixed")),
    ] {
        let mut next = previous.clone();
        next.insert(property.into(), value);
        needs_replacement(
            p.update(&ctx, &request("Managed", MANAGED, &next), &arn, &previous)
                .await
                .expect("update"),
            property,
        );
    }

    let imported = p.import(&ctx, &req, &arn).await.expect("import");
    assert_eq!(
        imported.attributes["PolicyId"],
        created.attributes["PolicyId"]
    );

    // Delete detaches and drops old versions first; a second delete succeeds.
    p.delete(&ctx, &req, &arn).await.expect("delete");
    let gone = env
        .iam
        .get_policy()
        .policy_arn(&arn)
        .send()
        .await
        .expect_err("deleted");
    assert!(is_no_such_entity(&gone));
    p.delete(&ctx, &req, &arn).await.expect("delete again");
    assert!(p.read(&ctx, &req, &arn).await.expect("read").is_none());
}

#[tokio::test]
async fn instance_profile_lifecycle() {
    let env = Env::new().await;
    let ctx = env.ctx();
    let p = provider(PROFILE);
    let (first, second) = (env.role().await, env.role().await);

    let v1 = props(json!({"Path": "/cdkd/", "Roles": [first]}));
    let req = request("Profile", PROFILE, &v1);
    let created = p.create(&ctx, &req).await.expect("create");
    let name = created.physical_id.clone();
    assert!(name.contains("Profile"), "{name}");
    assert_eq!(
        p.ref_value(PROFILE, &name, &created.attributes),
        json!(name)
    );
    let profile = env
        .iam
        .get_instance_profile()
        .instance_profile_name(&name)
        .send()
        .await
        .expect("GetInstanceProfile")
        .instance_profile
        .expect("profile");
    assert_eq!(created.attributes["Arn"], json!(profile.arn()));
    assert_eq!(
        profile.arn(),
        format!("arn:aws:iam::123456789012:instance-profile/cdkd/{name}")
    );
    assert_eq!(
        profile
            .roles()
            .iter()
            .map(|r| r.role_name())
            .collect::<Vec<_>>(),
        [first.as_str()]
    );

    let read = p
        .read(&ctx, &req, &name)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(read["Roles"], json!([first]));
    assert_eq!(read["Path"], json!("/cdkd/"));
    assert_eq!(read["Arn"], json!(profile.arn()));

    // In place: the role is swapped.
    let v2 = props(json!({"Path": "/cdkd/", "Roles": [second]}));
    let req2 = request("Profile", PROFILE, &v2);
    let up = updated(p.update(&ctx, &req2, &name, &v1).await.expect("update"));
    assert_eq!(up.attributes, created.attributes);
    let profile = env
        .iam
        .get_instance_profile()
        .instance_profile_name(&name)
        .send()
        .await
        .expect("get")
        .instance_profile
        .expect("profile");
    assert_eq!(
        profile
            .roles()
            .iter()
            .map(|r| r.role_name())
            .collect::<Vec<_>>(),
        [second.as_str()]
    );

    let mut moved = v2.clone();
    moved.insert("Path".into(), json!("/elsewhere/"));
    needs_replacement(
        p.update(&ctx, &request("Profile", PROFILE, &moved), &name, &v2)
            .await
            .expect("update"),
        "Path",
    );
    let mut renamed = v2.clone();
    renamed.insert("InstanceProfileName".into(), json!("other"));
    needs_replacement(
        p.update(&ctx, &request("Profile", PROFILE, &renamed), &name, &v2)
            .await
            .expect("update"),
        "InstanceProfileName",
    );

    assert_eq!(
        p.import(&ctx, &req2, &name)
            .await
            .expect("import")
            .attributes,
        created.attributes
    );

    p.delete(&ctx, &req2, &name).await.expect("delete");
    let gone = env
        .iam
        .get_instance_profile()
        .instance_profile_name(&name)
        .send()
        .await
        .expect_err("deleted");
    assert!(is_no_such_entity(&gone));
    p.delete(&ctx, &req2, &name).await.expect("delete again");
    // The role survives its profile.
    env.iam
        .get_role()
        .role_name(&second)
        .send()
        .await
        .expect("role kept");
}
