"""In-process check of the Cloud Control emulator against moto, without a server.

Run it with the emulator venv's Python (after a moto bump, say):

    .emulator/venv/bin/python scripts/cloudcontrol/selftest.py

For every moto-backed type it creates a resource through Cloud Control, checks that the
resource exists in moto's backend, updates it, deletes it and checks it is gone from
moto; then it exercises the generic store, idempotency and the faults. It exits 1 on
the first failed check. The Rust integration test (tests/providers/cloudcontrol_emulator.rs)
covers the same ground through the real SDK and a real server.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from werkzeug.test import Client  # noqa: E402

from cloudcontrol_emulator import wrap  # noqa: E402

AUTH = "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/cloudcontrolapi/aws4_request, SignedHeaders=host, Signature=0"
ACCOUNT, REGION = "123456789012", "us-east-1"


def app():
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return wrap(DomainDispatcherApplication(create_backend_app))


class CC:
    def __init__(self) -> None:
        self.app = app()
        self.client = Client(self.app)

    def call(self, op: str, expect_error: str | None = None, **params):
        resp = self.client.post(
            "/",
            data=json.dumps(params),
            headers={"X-Amz-Target": f"CloudApiService.{op}", "Content-Type": "application/x-amz-json-1.0", "Authorization": AUTH},
        )
        body = json.loads(resp.get_data() or b"{}")
        if expect_error:
            check(resp.status_code >= 400 and body.get("__type") == expect_error, f"{op}: wanted {expect_error}, got {resp.status_code} {body}")
            return body
        check(resp.status_code == 200, f"{op} {params}: HTTP {resp.status_code} {body}")
        return body

    def fault(self, spec: dict) -> dict:
        resp = self.client.post("/_cloudcontrol/faults", data=json.dumps(spec))
        check(resp.status_code == 200, f"fault {spec}: {resp.status_code} {resp.get_data(as_text=True)}")
        return json.loads(resp.get_data())

    def wait(self, event: dict) -> tuple[dict, int]:
        polls = 0
        while event["OperationStatus"] in ("PENDING", "IN_PROGRESS"):
            polls += 1
            check(polls < 20, "request never finished")
            event = self.call("GetResourceRequestStatus", RequestToken=event["RequestToken"])["ProgressEvent"]
        return event, polls

    def create(self, type_name: str, props: dict, ok: bool = True) -> dict:
        ev = self.call("CreateResource", TypeName=type_name, DesiredState=json.dumps(props))["ProgressEvent"]
        check(ev["OperationStatus"] == "IN_PROGRESS", f"create answered {ev}")
        ev, _ = self.wait(ev)
        if ok:
            check(ev["OperationStatus"] == "SUCCESS", f"create {type_name} {props}: {ev}")
        return ev

    def get(self, type_name: str, identifier: str) -> dict:
        desc = self.call("GetResource", TypeName=type_name, Identifier=identifier)["ResourceDescription"]
        return json.loads(desc["Properties"])

    def update(self, type_name: str, identifier: str, patch: list) -> dict:
        ev = self.call("UpdateResource", TypeName=type_name, Identifier=identifier, PatchDocument=json.dumps(patch))["ProgressEvent"]
        return self.wait(ev)[0]

    def delete(self, type_name: str, identifier: str) -> dict:
        ev = self.call("DeleteResource", TypeName=type_name, Identifier=identifier)["ProgressEvent"]
        return self.wait(ev)[0]


def check(cond: bool, what: str) -> None:
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)


def backend(module: str, attr: str, scope: str = REGION):
    mod = importlib.import_module(module)
    return getattr(mod, attr)[ACCOUNT][scope]


ROLE_DOC = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}

# type -> (desired state, patch, in_moto(identifier) -> bool, check(model) after the patch)
MOTO_CASES = {
    "AWS::SQS::Queue": (
        {"QueueName": "st-queue", "VisibilityTimeout": 30},
        [{"op": "replace", "path": "/VisibilityTimeout", "value": 45}],
        lambda i: "st-queue" in backend("moto.sqs.models", "sqs_backends").queues,
        lambda m: m["VisibilityTimeout"] == 45 and m["Arn"].endswith(":st-queue"),
    ),
    "AWS::S3::Bucket": (
        {"BucketName": "st-bucket", "Tags": [{"Key": "a", "Value": "b"}]},
        [{"op": "add", "path": "/VersioningConfiguration", "value": {"Status": "Enabled"}}],
        lambda i: i in backend("moto.s3.models", "s3_backends", "aws").buckets,
        lambda m: m["Arn"] == "arn:aws:s3:::st-bucket" and m["VersioningConfiguration"]["Status"] == "Enabled",
    ),
    "AWS::Logs::LogGroup": (
        {"LogGroupName": "/st/group", "RetentionInDays": 7},
        [{"op": "replace", "path": "/RetentionInDays", "value": 14}],
        lambda i: i in backend("moto.logs.models", "logs_backends").groups,
        lambda m: m["RetentionInDays"] == 14 and backend("moto.logs.models", "logs_backends").groups["/st/group"].retention_in_days == 14,
    ),
    "AWS::SNS::Topic": (
        {"TopicName": "st-topic"},
        [{"op": "add", "path": "/DisplayName", "value": "Shown"}],
        lambda i: i in backend("moto.sns.models", "sns_backends").topics,
        lambda m: m["TopicArn"].endswith(":st-topic") and m["DisplayName"] == "Shown",
    ),
    "AWS::SSM::Parameter": (
        {"Name": "/st/param", "Type": "String", "Value": "one"},
        [{"op": "replace", "path": "/Value", "value": "two"}],
        lambda i: bool(backend("moto.ssm.models", "ssm_backends")._parameters.get(i)),
        lambda m: m["Value"] == "two" and backend("moto.ssm.models", "ssm_backends").get_parameter("/st/param").value == "two",
    ),
    "AWS::DynamoDB::Table": (
        {
            "TableName": "st-table",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
        [{"op": "add", "path": "/DeletionProtectionEnabled", "value": False}],
        lambda i: i in backend("moto.dynamodb.models", "dynamodb_backends").tables,
        lambda m: m["Arn"].endswith(":table/st-table"),
    ),
    "AWS::IAM::Role": (
        {
            "RoleName": "st-role",
            "AssumeRolePolicyDocument": ROLE_DOC,
            "ManagedPolicyArns": ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"],
        },
        [{"op": "add", "path": "/Description", "value": "described"}],
        lambda i: any(r.name == i for r in backend("moto.iam.models", "iam_backends", "aws").roles.values()),
        lambda m: m["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/st-role" and m["RoleId"] and m["Description"] == "described",
    ),
    "AWS::IAM::User": (
        {"UserName": "st-user"},
        [{"op": "add", "path": "/Path", "value": "/"}],
        lambda i: i in backend("moto.iam.models", "iam_backends", "aws").users,
        lambda m: m["Arn"] == f"arn:aws:iam::{ACCOUNT}:user/st-user",
    ),
    "AWS::Events::EventBus": (
        {"Name": "st-bus"},
        [{"op": "add", "path": "/Description", "value": "d"}],
        lambda i: i in backend("moto.events.models", "events_backends").event_buses,
        lambda m: m["Arn"].endswith(":event-bus/st-bus"),
    ),
    "AWS::Kinesis::Stream": (
        {"Name": "st-stream", "ShardCount": 1},
        [{"op": "replace", "path": "/ShardCount", "value": 2}],
        lambda i: i in backend("moto.kinesis.models", "kinesis_backends").streams,
        lambda m: m["Arn"].endswith(":stream/st-stream") and m["ShardCount"] == 2,
    ),
    "AWS::ECR::Repository": (
        {"RepositoryName": "st-repo"},
        [{"op": "add", "path": "/ImageTagMutability", "value": "IMMUTABLE"}],
        lambda i: i in backend("moto.ecr.models", "ecr_backends").repositories,
        lambda m: m["Arn"].endswith(":repository/st-repo") and "RepositoryUri" in m,
    ),
    "AWS::EC2::Volume": (
        {"AvailabilityZone": "us-east-1a", "Size": 8},
        [{"op": "add", "path": "/Tags", "value": [{"Key": "a", "Value": "b"}]}],
        lambda i: i in backend("moto.ec2.models", "ec2_backends").volumes,
        lambda m: m["VolumeId"].startswith("vol-") and m["Size"] == 8,
    ),
    "AWS::KMS::Key": (
        {"Description": "st-key", "Tags": [{"Key": "a", "Value": "b"}]},
        [{"op": "replace", "path": "/Description", "value": "st-key-2"}],
        lambda i: i in backend("moto.kms.models", "kms_backends").keys,
        lambda m: m["Arn"].endswith(f":key/{m['KeyId']}") and backend("moto.kms.models", "kms_backends").keys[m["KeyId"]].description == "st-key-2",
    ),
    "AWS::RDS::DBInstance": (
        {"DBInstanceIdentifier": "St-DB", "Engine": "mysql", "DBInstanceClass": "db.t3.micro", "AllocatedStorage": "20", "MasterUsername": "admin", "ManageMasterUserPassword": True},
        [{"op": "add", "path": "/DeletionProtection", "value": False}],
        lambda i: i in backend("moto.rds.models", "rds_backends").databases,
        lambda m: m["DBInstanceIdentifier"] == "st-db" and m["DeletionProtection"] is False and m["Endpoint"],
    ),
}


# Types with no name: a second create of the same properties is a second resource, as in AWS.
NAMELESS = {"AWS::EC2::Volume", "AWS::KMS::Key"}


def moto_types(cc: CC) -> None:
    for type_name, (props, patch, in_moto, after) in MOTO_CASES.items():
        ev = cc.create(type_name, props)
        ident = ev["Identifier"]
        check(in_moto(ident), f"{type_name} {ident}: not in moto after create")
        model = cc.get(type_name, ident)
        ev = cc.update(type_name, ident, patch)
        check(ev["OperationStatus"] == "SUCCESS", f"{type_name} update: {ev}")
        model = cc.get(type_name, ident)
        check(after(model), f"{type_name} after update: {model}")
        ids = [d["Identifier"] for d in cc.call("ListResources", TypeName=type_name)["ResourceDescriptions"]]
        check(ident in ids, f"{type_name}: {ident} not listed in {ids}")
        if type_name not in NAMELESS:
            again = cc.create(type_name, props, ok=False)
            check(again["OperationStatus"] == "FAILED" and again["ErrorCode"] == "AlreadyExists", f"{type_name} second create: {again}")
        ev = cc.delete(type_name, ident)
        check(ev["OperationStatus"] == "SUCCESS", f"{type_name} delete: {ev}")
        check(not in_moto(ident), f"{type_name} {ident}: still in moto after delete")
        cc.call("GetResource", expect_error="ResourceNotFoundException", TypeName=type_name, Identifier=ident)
        print(f"ok  {type_name}: {ident}")


def moto_both_ways(cc: CC) -> None:
    # A queue made through SQS is visible to Cloud Control, and one deleted through SQS is gone.
    sqs = backend("moto.sqs.models", "sqs_backends")
    sqs.create_queue("st-outside")
    ids = [d["Identifier"] for d in cc.call("ListResources", TypeName="AWS::SQS::Queue")["ResourceDescriptions"]]
    check(any(i.endswith("/st-outside") for i in ids), f"outside queue not listed: {ids}")
    ev = cc.create("AWS::SQS::Queue", {})
    name = ev["Identifier"].rsplit("/", 1)[-1]
    check(name in sqs.queues, f"generated queue {name} not in moto")
    sqs.delete_queue(name)
    cc.call("GetResource", expect_error="ResourceNotFoundException", TypeName="AWS::SQS::Queue", Identifier=ev["Identifier"])
    ev = cc.create("AWS::SQS::Queue", {"FifoQueue": True})
    check(ev["Identifier"].endswith(".fifo"), f"fifo queue name: {ev}")
    bad = cc.create("AWS::IAM::Role", {"RoleName": "st-bad"}, ok=False)
    check(bad["ErrorCode"] == "InvalidRequest" and "AssumeRolePolicyDocument" in bad["StatusMessage"], f"role without policy: {bad}")
    # RDS refuses to delete a protected instance, as AWS does; an update can lift it.
    rds = backend("moto.rds.models", "rds_backends")
    ev = cc.create("AWS::RDS::DBInstance", {"Engine": "mysql", "DBInstanceClass": "db.t3.micro", "MasterUsername": "admin", "DeletionProtection": True})
    ident = ev["Identifier"]
    check(ident == ident.lower() and rds.databases[ident].deletion_protection, f"protected instance: {ev}")
    refused = cc.delete("AWS::RDS::DBInstance", ident)
    check(refused["OperationStatus"] == "FAILED" and ident in rds.databases, f"protected delete: {refused}")
    cc.update("AWS::RDS::DBInstance", ident, [{"op": "replace", "path": "/DeletionProtection", "value": False}])
    check(cc.delete("AWS::RDS::DBInstance", ident)["OperationStatus"] == "SUCCESS", "unprotected delete")
    # A subnet group this emulator keeps in its generic store, not in moto's RDS.
    ev = cc.create("AWS::RDS::DBInstance", {"Engine": "postgres", "DBInstanceClass": "db.t3.micro", "DBSubnetGroupName": "st-generic-group"})
    check(cc.get("AWS::RDS::DBInstance", ev["Identifier"])["DBSubnetGroupName"] == "st-generic-group", "subnet group kept")
    cc.delete("AWS::RDS::DBInstance", ev["Identifier"])
    print("ok  moto both ways")


def generic(cc: CC) -> None:
    t = "AWS::ApiGatewayV2::Route"
    ev = cc.create(t, {"ApiId": "api123", "RouteKey": "GET /a", "AuthorizerId": "auth1", "AuthorizationType": "CUSTOM"})
    ident = ev["Identifier"]
    check(ident.startswith("api123|") and len(ident.split("|")) == 2, f"composite identifier {ident}")
    model = cc.get(t, ident)
    check("AuthorizerId" not in model and model["RouteId"] == ident.split("|")[1], f"generic model {model}")
    check(cc.get(t, json.dumps({"ApiId": "api123", "RouteId": model["RouteId"]}))["RouteKey"] == "GET /a", "JSON identifier")
    ev = cc.update(t, ident, [{"op": "replace", "path": "/RouteKey", "value": "GET /b"}])
    check(ev["OperationStatus"] == "SUCCESS", f"update {ev}")
    check(cc.get(t, ident)["RouteKey"] == "GET /b", "update applied")
    cc.call("UpdateResource", expect_error="NotUpdatableException", TypeName=t, Identifier=ident,
            PatchDocument=json.dumps([{"op": "replace", "path": "/ApiId", "value": "other"}]))  # fmt: skip
    bad = cc.create(t, {"ApiId": "api123"}, ok=False)
    check(bad["ErrorCode"] == "InvalidRequest" and "RouteKey" in bad["StatusMessage"], f"required: {bad}")
    bad = cc.create(t, {"ApiId": "api123", "RouteKey": "x", "Bogus": 1}, ok=False)
    check(bad["ErrorCode"] == "InvalidRequest" and "Bogus" in bad["StatusMessage"], f"extraneous: {bad}")
    check(cc.delete(t, ident)["OperationStatus"] == "SUCCESS", "delete")
    ev = cc.delete(t, ident)
    check(ev["OperationStatus"] == "FAILED" and ev["ErrorCode"] == "NotFound", f"delete again {ev}")
    ev = cc.update(t, ident, [{"op": "replace", "path": "/RouteKey", "value": "x"}])
    check(ev["OperationStatus"] == "FAILED" and ev["ErrorCode"] == "NotFound", f"update unknown {ev}")
    cc.call("CreateResource", expect_error="TypeNotFoundException", TypeName="AWS::Nope::Nothing", DesiredState="{}")
    ev = cc.create("Test::Thing::Widget", {"Size": 3})
    check(cc.get("Test::Thing::Widget", ev["Identifier"])["Id"] == ev["Identifier"], "fallback Id")
    # paging
    for n in range(5):
        cc.create("AWS::AppConfig::Application", {"Name": f"app{n}"})
    pages, token = 0, None
    seen = []
    while True:
        params = {"TypeName": "AWS::AppConfig::Application", "MaxResults": 2}
        if token:
            params["NextToken"] = token
        out = cc.call("ListResources", **params)
        pages += 1
        seen += [d["Identifier"] for d in out["ResourceDescriptions"]]
        token = out.get("NextToken")
        if not token:
            break
    check(pages == 3 and len(set(seen)) == 5, f"paging: {pages} pages, {seen}")
    print("ok  generic store")


def requests_and_faults(cc: CC) -> None:
    t = "AWS::AppConfig::Environment"
    # idempotency
    body = {"TypeName": t, "DesiredState": json.dumps({"ApplicationId": "a1", "Name": "e"}), "ClientToken": "tok-1"}
    first = cc.call("CreateResource", **body)["ProgressEvent"]
    second = cc.call("CreateResource", **body)["ProgressEvent"]
    check(first["RequestToken"] == second["RequestToken"], "client token replay")
    cc.call("CreateResource", expect_error="ClientTokenConflictException", **{**body, "DesiredState": "{}"})
    first, _ = cc.wait(first)
    # polls
    cc.fault({"polls": {"polls": 3, "TypeName": t, "count": 1}})
    ev = cc.call("CreateResource", TypeName=t, DesiredState=json.dumps({"ApplicationId": "a1", "Name": "e2"}))["ProgressEvent"]
    ev, polls = cc.wait(ev)
    check(polls == 4 and ev["OperationStatus"] == "SUCCESS", f"polls: {polls} {ev}")
    # injected failure
    cc.fault({"fail_create": {"TypeName": t, "ErrorCode": "ServiceLimitExceeded", "StatusMessage": "too many"}})
    ev = cc.create(t, {"ApplicationId": "a1", "Name": "e3"}, ok=False)
    check(ev["ErrorCode"] == "ServiceLimitExceeded" and ev["StatusMessage"] == "too many", f"fail_create {ev}")
    # throttling
    ids = cc.fault({"throttle": {"count": 2, "TypeName": t}})["ids"]
    cc.call("GetResource", expect_error="ThrottlingException", TypeName=t, Identifier="x")
    cc.call("GetResource", expect_error="ThrottlingException", TypeName=t, Identifier="x")
    cc.call("GetResource", expect_error="ResourceNotFoundException", TypeName=t, Identifier="x")
    state = json.loads(cc.client.get("/_cloudcontrol/faults").get_data())
    fired = [f["fired"] for f in state["faults"] if f["id"] == ids[0]]
    check(fired == [2], f"throttle fired {fired}")
    # busy, cancel
    cc.fault({"polls": {"polls": 5, "TypeName": t, "count": 1}})
    ev = cc.call("CreateResource", TypeName=t, DesiredState=json.dumps({"ApplicationId": "a1", "Name": "e4"}))["ProgressEvent"]
    st = cc.call("GetResourceRequestStatus", RequestToken=ev["RequestToken"])["ProgressEvent"]
    cc.call("DeleteResource", expect_error="ConcurrentOperationException", TypeName=t, Identifier=st["Identifier"])
    out = cc.call("CancelResourceRequest", RequestToken=ev["RequestToken"])["ProgressEvent"]
    check(out["OperationStatus"] == "CANCEL_COMPLETE", f"cancel {out}")
    cc.call("CancelResourceRequest", expect_error="ConcurrentModificationException", RequestToken=ev["RequestToken"])
    listed = cc.call("ListResourceRequests", ResourceRequestStatusFilter={"OperationStatuses": ["CANCEL_COMPLETE"]})
    check(any(s["RequestToken"] == ev["RequestToken"] for s in listed["ResourceRequestStatusSummaries"]), "list requests")
    cc.call("GetResourceRequestStatus", expect_error="RequestTokenNotFoundException", RequestToken="nope")
    print("ok  requests and faults")


def rest_api(cc: CC) -> None:
    api = cc.create("AWS::ApiGateway::RestApi", {"Name": "st-api"})["Identifier"]
    root = cc.get("AWS::ApiGateway::RestApi", api)["RootResourceId"]
    check(len(api) == 10 and len(root) == 10 and api != root, f"rest api ids {api} {root}")
    res = cc.create("AWS::ApiGateway::Resource", {"RestApiId": api, "ParentId": root, "PathPart": "a"})["Identifier"]
    rid = res.split("|")[1]
    ok = cc.create("AWS::ApiGateway::Method", {"RestApiId": api, "ResourceId": rid, "HttpMethod": "GET", "AuthorizationType": "NONE"})
    check(ok["Identifier"] == f"{api}|{rid}|GET", f"method {ok}")
    bad = cc.create("AWS::ApiGateway::Method", {"RestApiId": api, "ResourceId": res, "HttpMethod": "PUT", "AuthorizationType": "NONE"}, ok=False)
    check(bad["ErrorCode"] == "NotFound" and "Invalid Resource identifier" in bad["StatusMessage"], f"composite ResourceId: {bad}")
    bad = cc.create("AWS::ApiGateway::Stage", {"RestApiId": api, "StageName": "s", "DeploymentId": "nope"}, ok=False)
    check(bad["ErrorCode"] == "NotFound", f"unknown deployment: {bad}")
    print("ok  rest api references")


def main() -> int:
    os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    cc = CC()
    moto_types(cc)
    moto_both_ways(cc)
    generic(cc)
    rest_api(cc)
    requests_and_faults(cc)
    print("selftest passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
