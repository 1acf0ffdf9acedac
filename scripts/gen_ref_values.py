#!/usr/bin/env python3
"""Write cdkd's `Ref` table (data/ref-values.json): what CloudFormation's `Ref` returns for
every resource type whose primary identifier has more than one part.

    scripts/gen_ref_values.py [OUTPUT_FILE]      # default: data/ref-values.json

Cloud Control (and cdkd's state) identify such a resource by its primary identifier's
values joined with "|" (an API Gateway resource is "<restApiId>|<resourceId>"), but
CloudFormation's `Ref` of it often returns one of those values (the resource id), or a
recorded attribute (an ARN). The table says which, per type.

Sources, in order of precedence:

1. HAND below: entries written for this project, each with the reason (the value the
   CloudFormation resource reference documents as "Ref returns" where the machine-readable
   source only has its default).
2. aws-cdk-lib's generated L1 classes (fixtures/node_modules/aws-cdk-lib, the version
   fixtures/package.json pins). Every `Cfn<Type>` has a `<type>Ref` getter that rebuilds the
   resource's identifier from `this.ref`: a field set to `this.ref` is the part `Ref`
   returns ("aws-cdk-lib"); fields set to `Fn.select(i, Fn.split("|", this.ref))` mean
   `Ref` returns the whole joined identifier, CDK's default for a composite identifier
   ("aws-cdk-lib-default"). CDK apps synthesize those very expressions, so a template
   that splits a Ref expects exactly this shape.

The types come from data/resource-schemas.json (scripts/gen-resource-schemas); a type it
lists with a composite primary identifier that neither source covers fails the run.

Output (one type per line, sorted; deterministic):

    {"source":"...","types":{
    "AWS::ApiGateway::Method":{"from":"aws-cdk-lib-default","ref":"joined"},
    "AWS::ApiGateway::Resource":{"from":"aws-cdk-lib","name":"ResourceId","ref":"segment"},
    "AWS::AppSync::ApiKey":{"from":"hand","name":"Arn","ref":"attribute"},
    ...}}

    ref "joined"     the whole "|"-joined primary identifier
    ref "segment"    the primary-identifier part `name`
    ref "attribute"  the read-only property (Fn::GetAtt attribute) `name`

This script only reads files; it never runs node or imports aws-cdk-lib.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "data" / "resource-schemas.json"
CDK = ROOT / "fixtures" / "node_modules" / "aws-cdk-lib"
PIN = ROOT / "fixtures" / "package.json"

# type -> (ref kind, name or None, why). Kept short; every one is checked against the schema.
HAND: dict[str, tuple[str, str | None, str]] = {
    "AWS::AppSync::ApiKey": ("attribute", "Arn", "Ref returns the API key's ARN"),
    "AWS::ApplicationAutoScaling::ScalingPolicy": ("segment", "Arn", "Ref returns the scaling policy ARN"),
    "AWS::AutoScaling::LifecycleHook": ("segment", "LifecycleHookName", "Ref returns the hook's name"),
    "AWS::AutoScaling::ScheduledAction": ("segment", "ScheduledActionName", "Ref returns the action's name"),
    "AWS::AutoScalingPlans::ScalingPlan": ("attribute", "ScalingPlanArn", "Ref returns the scaling plan ARN"),
    "AWS::Config::AggregationAuthorization": ("attribute", "AggregationAuthorizationArn", "Ref returns the authorization's ARN"),
    "AWS::EC2::VPCCidrBlock": ("segment", "Id", "Ref returns the CIDR block's association id"),
    "AWS::EMR::InstanceGroupConfig": ("segment", "InstanceGroupId", "Ref returns the instance group id"),
    "AWS::ElasticBeanstalk::ApplicationVersion": ("segment", "Id", "Ref returns the version's name"),
    "AWS::ElasticBeanstalk::ConfigurationTemplate": ("segment", "TemplateName", "Ref returns the template's name"),
    "AWS::GroundStation::MissionProfile": ("segment", "Arn", "Ref returns the mission profile ARN"),
    "AWS::GuardDuty::Filter": ("segment", "Name", "Ref returns the filter's name"),
    "AWS::GuardDuty::IPSet": ("segment", "Id", "Ref returns the IPSet's id"),
    "AWS::GuardDuty::Master": ("segment", "MasterId", "Ref returns the administrator account id"),
    "AWS::GuardDuty::Member": ("segment", "MemberId", "Ref returns the member account id"),
    "AWS::GuardDuty::ThreatIntelSet": ("segment", "Id", "Ref returns the ThreatIntelSet's id"),
    "AWS::OpenSearchServerless::AccessPolicy": ("segment", "Name", "Ref returns the policy's name"),
    "AWS::OpenSearchServerless::SecurityPolicy": ("segment", "Name", "Ref returns the policy's name"),
    "AWS::SES::ReceiptRule": ("segment", "RuleName", "Ref returns the rule's name"),
    "AWS::ServiceDiscovery::Instance": ("segment", "InstanceId", "Ref returns the instance id"),
    "AWS::VerifiedPermissions::IdentitySource": ("segment", "IdentitySourceId", "Ref returns the identity source id"),
    "AWS::VerifiedPermissions::Policy": ("segment", "PolicyId", "Ref returns the policy id"),
    "AWS::Wisdom::AssistantAssociation": ("segment", "AssistantAssociationId", "Ref returns the association id"),
}

CLASS = re.compile(r'static CFN_RESOURCE_TYPE_NAME="([^"]+)"')
GETTER = re.compile(r"get \w+Ref\(\)\{return\{(.*?)\}\}")
FIELD = re.compile(r"(\w+):(.*?)(?=,\w+:|$)")
SPLIT = re.compile(r'^cdk\(\)\.Fn\.select\((\d+),cdk\(\)\.Fn\.split\("\|",this\.ref\)\)$')


def fail(message: str) -> None:
    sys.exit(f"gen_ref_values: {message}")


def cdk_getters() -> dict[str, dict[str, str]]:
    """Every L1 type's reference getter, as field name -> JavaScript expression."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(CDK.glob("*/lib/*.generated.js")):
        text = path.read_text(encoding="utf-8")
        marks = list(CLASS.finditer(text))
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            getter = GETTER.search(text, mark.end(), end)
            if getter:
                out[mark.group(1)] = {m.group(1): m.group(2) for m in FIELD.finditer(getter.group(1))}
    return out


def lower_first(s: str) -> str:
    return s[:1].lower() + s[1:]


def identifier_part(type_name: str, field: str, primary: list[str]) -> str:
    """The primary-identifier property a CDK reference field names (`modelName` -> `Name`)."""
    resource = type_name.split("::")[2]
    flat = [p.replace("/", "") for p in primary]
    for prop, f in zip(primary, flat):
        if field in (lower_first(f), lower_first(resource + f)):
            return prop
    ends = [prop for prop, f in zip(primary, flat) if field.lower().endswith(f.lower())]
    if len(ends) == 1:
        return ends[0]
    fail(f"{type_name}: cannot tell which of {primary} the reference field {field!r} is")
    return ""


def from_cdk(type_name: str, primary: list[str], fields: dict[str, str]) -> dict | None:
    refs = [f for f, e in fields.items() if e == "this.ref"]
    if refs:
        return {"from": "aws-cdk-lib", "name": identifier_part(type_name, refs[0], primary), "ref": "segment"}
    # Every identifier field a split of Ref (CDK's spec may list more parts than the
    # snapshot does); an extra `this.attr…` field is the resource's ARN, beside the identifier.
    parts = [e for e in fields.values() if not e.startswith("this.attr")]
    if parts and all(SPLIT.match(e) for e in parts):
        return {"from": "aws-cdk-lib-default", "ref": "joined"}
    return None


def from_hand(type_name: str, schema: dict) -> dict:
    kind, name, _why = HAND[type_name]
    if kind == "segment" and name not in schema["p"]:
        fail(f"{type_name}: hand entry names {name}, not a primary-identifier part")
    if kind == "attribute" and name not in schema.get("r", []):
        fail(f"{type_name}: hand entry names {name}, not a read-only property")
    entry = {"from": "hand", "ref": kind}
    if name:
        entry["name"] = name
    return dict(sorted(entry.items()))


def main() -> None:
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "ref-values.json"
    pinned = json.loads(PIN.read_text(encoding="utf-8"))["dependencies"]["aws-cdk-lib"]
    meta = CDK / "package.json"
    if not meta.is_file():
        fail(f"{CDK} is missing: run `cd fixtures && npm install --no-package-lock --no-audit --no-fund`")
    installed = json.loads(meta.read_text(encoding="utf-8"))["version"]
    if installed != pinned:
        fail(f"aws-cdk-lib {installed} installed, {pinned} pinned in fixtures/package.json")
    snapshot = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    getters = cdk_getters()
    if not getters:
        fail(f"no reference getters found under {CDK} (aws-cdk-lib layout changed?)")
    unknown = sorted(set(HAND) - set(snapshot["types"]))
    if unknown:
        fail(f"hand entries for types the schema snapshot does not list: {unknown}")

    lines = []
    for type_name, schema in sorted(snapshot["types"].items()):
        primary = schema["p"]
        if len(primary) < 2:
            continue
        if type_name in HAND:
            entry = from_hand(type_name, schema)
        else:
            entry = from_cdk(type_name, primary, getters.get(type_name, {}))
        if entry is None:
            fail(f"{type_name}: aws-cdk-lib has no reference getter built on Ref; add a HAND entry")
        lines.append(f"{json.dumps(type_name)}:{json.dumps(entry, separators=(',', ':'))}")

    header = {"source": f"aws-cdk-lib {installed} reference getters, hand entries; {snapshot['source']}"}
    text = json.dumps(header, separators=(",", ":"))[:-1] + ',"types":{\n' + ",\n".join(lines) + "\n}}\n"
    json.loads(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    print(f"gen_ref_values: wrote {len(lines)} types to {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
