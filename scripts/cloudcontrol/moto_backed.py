"""Resource types the Cloud Control emulator creates through moto, so they are real.

moto's CloudFormation support maps a resource type to a model class with
create_from_cloudformation_json / update_from_cloudformation_json /
delete_from_cloudformation_json (moto/cloudformation/parsing.py). The emulator calls
those with the Cloud Control desired state as the CloudFormation properties, so an
AWS::SQS::Queue created through Cloud Control is a queue SQS ListQueues shows, and a
queue deleted through SQS is gone for Cloud Control's GetResource too.

Only the types in ADAPTERS are backed this way: each was checked end to end
(scripts/cloudcontrol/selftest.py) and needs a little per-type knowledge moto's models
do not carry (where the backend keeps its resources, how the identifier is spelled).
Every other type, including ones moto has a CloudFormation model for, uses the generic
store. moto's models apply a subset of each type's properties (e.g. an S3 bucket's
encryption and tags, not its versioning); GetResource still returns every property the
caller set, as the store records them.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable
from urllib.parse import urlparse

from .schema import TypeSchema
from .store import Context, HandlerFailure, Record, already_exists, generated_name, plausible_value, top_level


def _backend(module: str, attr: str, ctx: Context, *, global_scope: bool = False) -> Any:
    mod = importlib.import_module(module)
    backends = getattr(mod, attr)
    return backends[ctx.account][ctx.partition if global_scope else ctx.region]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@dataclass
class Adapter:
    models: Callable[[Context], dict]  # key -> moto model, every resource of the type
    identifier: Callable[[Any, Context], str] = lambda m, ctx: m.name
    key: Callable[[str], str] = lambda identifier: identifier  # identifier -> models() key
    name_key: Callable[[str, Context], str] = lambda name, ctx: name  # name -> models() key
    name_of: Callable[[Any], str] = lambda m: m.name
    read: Callable[[Any], dict] | None = None  # properties read back from the model
    update: Callable[[Any, dict, Context], None] | None = None  # replaces moto's update
    after_create: Callable[[Any, dict, Context], None] | None = None
    before_delete: Callable[[Any, Context], None] | None = None
    fifo_suffix: bool = False
    prepare: Callable[[dict, Context], dict] | None = None  # the properties as moto's model reads them
    lowercase_name: bool = False  # the service lowercases names (RDS identifiers)


# -- per-type knowledge ------------------------------------------------------------------
def _sqs_read(q: Any) -> dict:
    out = {}
    for prop in ("DelaySeconds", "MaximumMessageSize", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "VisibilityTimeout"):
        value = getattr(q, _snake(prop), None)
        if value is not None:
            out[prop] = int(value)
    out["QueueName"] = q.name
    return out


def _logs_update(group: Any, props: dict, ctx: Context) -> None:
    backend = _backend("moto.logs.models", "logs_backends", ctx)
    if props.get("RetentionInDays") is not None:
        backend.put_retention_policy(group.name, props["RetentionInDays"])
    elif group.retention_in_days is not None:
        backend.delete_retention_policy(group.name)


def _logs_read(group: Any) -> dict:
    out = {"LogGroupName": group.name}
    if group.retention_in_days is not None:
        out["RetentionInDays"] = int(group.retention_in_days)
    return out


def _iam(ctx: Context) -> Any:
    return _backend("moto.iam.models", "iam_backends", ctx, global_scope=True)


def _role_attach(role: Any, props: dict, ctx: Context) -> None:
    wanted = set(props.get("ManagedPolicyArns") or [])
    for arn in set(role.managed_policies) - wanted:
        _iam(ctx).detach_role_policy(arn, role.name)
    for arn in wanted - set(role.managed_policies):
        _iam(ctx).attach_role_policy(arn, role.name)


def _role_update(role: Any, props: dict, ctx: Context) -> None:
    iam = _iam(ctx)
    role.description = props.get("Description", "")
    role.max_session_duration = props.get("MaxSessionDuration", 3600)
    if "AssumeRolePolicyDocument" in props:
        doc = props["AssumeRolePolicyDocument"]
        iam.update_assume_role_policy(role.name, doc if isinstance(doc, str) else json.dumps(doc))
    wanted = {p["PolicyName"]: p["PolicyDocument"] for p in props.get("Policies") or []}
    for name in list(role.policies):
        if name not in wanted:
            role.delete_policy(name)
    for name, doc in wanted.items():
        role.put_policy(name, doc if isinstance(doc, str) else json.dumps(doc))
    _role_attach(role, props, ctx)


def _role_detach(role: Any, ctx: Context) -> None:
    for arn in list(role.managed_policies):
        _iam(ctx).detach_role_policy(arn, role.name)


def _ssm_models(ctx: Context) -> dict:
    params = _backend("moto.ssm.models", "ssm_backends", ctx)._parameters
    # A defaultdict: read it without creating keys.
    return {name: versions[-1] for name, versions in list(params.items()) if versions}


def _truthy(value: Any) -> bool:
    return str(value).lower() == "true"


def _rds_prepare(props: dict, ctx: Context) -> dict:
    """moto's DBInstance model reads DBSubnetGroupName / DBSecurityGroups as the model objects
    its own stacks pass; Cloud Control carries names. A subnet or parameter group moto's RDS
    does not hold (this emulator keeps those types in its generic store) is left out of the
    model, which moto would otherwise refuse; the record keeps every property as sent."""
    rds = _backend("moto.rds.models", "rds_backends", ctx)
    out = dict(props)
    subnet_group = out.pop("DBSubnetGroupName", None)
    if isinstance(subnet_group, str) and subnet_group in rds.subnet_groups:
        out["DBSubnetGroupName"] = SimpleNamespace(name=subnet_group)
    parameter_group = out.pop("DBParameterGroupName", None)
    if isinstance(parameter_group, str) and parameter_group in rds.db_parameter_groups:
        out["DBParameterGroupName"] = parameter_group
    if out.get("DBSecurityGroups"):
        out["DBSecurityGroups"] = [SimpleNamespace(name=g) for g in out["DBSecurityGroups"] if isinstance(g, str)]
    return out


def _rds_protection(db: Any, props: dict, ctx: Context) -> None:
    # moto's CloudFormation model leaves DeletionProtection out; RDS applies it.
    db.deletion_protection = _truthy(props.get("DeletionProtection"))


def _rds_read(db: Any) -> dict:
    return {
        "DBInstanceIdentifier": db.db_instance_identifier,
        "DeletionProtection": bool(db.deletion_protection),
        "DBInstanceArn": db.db_instance_arn,
        "DbiResourceId": db.dbi_resource_id,
        "Endpoint": {"Address": db.address, "Port": str(db.port), "HostedZoneId": "Z2R2ITUGPM61AM"},
    }


def _lambda_functions(ctx: Context) -> dict:
    storage = _backend("moto.awslambda.models", "lambda_backends", ctx)._lambdas
    return {name: versions["latest"] for name, versions in list(storage._functions.items())}


def _lambda_update(fn: Any, props: dict, ctx: Context) -> None:
    """The configuration through moto's own UpdateFunctionConfiguration path. moto's
    CloudFormation update also re-reads Code, which it expects base64-encoded rather than as
    CloudFormation's inline text; the code is create-time in this emulator."""
    fn.update_configuration({k: v for k, v in props.items() if k != "Code"})


def _no_moto_update(model: Any, props: dict, ctx: Context) -> None:
    """moto's own update would delete and re-create the resource (losing what hangs off
    it, like an event bus's rules): keep the moto resource, record the properties."""


def _kms(ctx: Context) -> Any:
    return _backend("moto.kms.models", "kms_backends", ctx)


def _kms_keys(ctx: Context) -> dict:
    """The keys KMS still serves: one pending deletion is gone, as for Cloud Control."""
    return {k: key for k, key in _kms(ctx).keys.items() if key.key_state != "PendingDeletion"}


def _kms_prepare(props: dict, ctx: Context) -> dict:
    """moto's model takes the policy as the API's text and the tags in KMS's own shape."""
    policy = props.get("KeyPolicy") or {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": f"arn:{ctx.partition}:iam::{ctx.account}:root"}, "Action": "kms:*", "Resource": "*"}],
    }
    props["KeyPolicy"] = policy if isinstance(policy, str) else json.dumps(policy)
    props["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in props.get("Tags", [])]
    return props


def _kms_update(key: Any, props: dict, ctx: Context) -> None:
    """moto's Key model has no CloudFormation update: the settings Cloud Control changes in
    place, set on the model as KMS's own calls would."""
    key.description = props.get("Description", "")
    key.enabled = str(props.get("Enabled", True)).lower() == "true"
    key.key_state = "Enabled" if key.enabled else "Disabled"
    key.key_rotation_status = str(props.get("EnableKeyRotation", False)).lower() == "true"
    if props.get("KeyPolicy") is not None:
        policy = props["KeyPolicy"]
        key.policy = policy if isinstance(policy, str) else json.dumps(policy)


ADAPTERS: dict[str, Adapter] = {
    "AWS::SQS::Queue": Adapter(
        models=lambda ctx: dict(_backend("moto.sqs.models", "sqs_backends", ctx).queues),
        # Like the SQS API through the emulator: the URL names the host the request came to.
        identifier=lambda q, ctx: q.url(urlparse(ctx.base_url)),
        key=lambda url: url.rstrip("/").rsplit("/", 1)[-1],
        read=_sqs_read,
        fifo_suffix=True,
    ),
    "AWS::S3::Bucket": Adapter(
        models=lambda ctx: dict(_backend("moto.s3.models", "s3_backends", ctx, global_scope=True).buckets),
    ),
    "AWS::Logs::LogGroup": Adapter(
        models=lambda ctx: dict(_backend("moto.logs.models", "logs_backends", ctx).groups),
        read=_logs_read,
        update=_logs_update,
    ),
    "AWS::SNS::Topic": Adapter(
        models=lambda ctx: dict(_backend("moto.sns.models", "sns_backends", ctx).topics),
        identifier=lambda t, ctx: t.arn,
        name_key=lambda name, ctx: f"arn:{ctx.partition}:sns:{ctx.region}:{ctx.account}:{name}",
    ),
    "AWS::SSM::Parameter": Adapter(models=_ssm_models),
    "AWS::DynamoDB::Table": Adapter(
        models=lambda ctx: dict(_backend("moto.dynamodb.models", "dynamodb_backends", ctx).tables),
    ),
    "AWS::IAM::Role": Adapter(
        models=lambda ctx: {r.name: r for r in _iam(ctx).roles.values()},
        update=_role_update,
        after_create=_role_attach,
        before_delete=_role_detach,
    ),
    # Real in IAM: an access key (cdkd's SDK provider) can be made for it.
    "AWS::IAM::User": Adapter(
        models=lambda ctx: dict(_iam(ctx).users),
        update=_no_moto_update,
    ),
    "AWS::Events::EventBus": Adapter(
        models=lambda ctx: dict(_backend("moto.events.models", "events_backends", ctx).event_buses),
        update=_no_moto_update,
    ),
    "AWS::Kinesis::Stream": Adapter(
        models=lambda ctx: dict(_backend("moto.kinesis.models", "kinesis_backends", ctx).streams),
        identifier=lambda s, ctx: s.stream_name,
        name_of=lambda s: s.stream_name,
    ),
    "AWS::ECR::Repository": Adapter(
        models=lambda ctx: dict(_backend("moto.ecr.models", "ecr_backends", ctx).repositories),
    ),
    # Real in Lambda: GetFunction and the SDK provider's calls see it (so a function can move
    # between the Cloud Control and SDK routes, src/engine/deploy/route.rs).
    "AWS::Lambda::Function": Adapter(
        models=_lambda_functions,
        identifier=lambda f, ctx: f.function_name,
        name_of=lambda f: f.function_name,
        read=lambda f: {"FunctionName": f.function_name},
        update=_lambda_update,
    ),
    # Real in KMS: DescribeKey and the SDK provider's calls see it (so a key can move between
    # the Cloud Control and SDK routes, src/engine/deploy/route.rs).
    "AWS::KMS::Key": Adapter(
        models=_kms_keys,
        identifier=lambda k, ctx: k.id,
        name_of=lambda k: k.id,
        read=lambda k: {"KeyId": k.id, "Arn": k.arn},
        update=_kms_update,
        prepare=_kms_prepare,
    ),
    # Real in EC2: DescribeVolumes lists it and CreateSnapshot (a final snapshot) works on it.
    "AWS::EC2::Volume": Adapter(
        models=lambda ctx: dict(_backend("moto.ec2.models", "ec2_backends", ctx).volumes),
        identifier=lambda v, ctx: v.id,
        name_of=lambda v: v.id,
        read=lambda v: {"VolumeId": v.id, "Size": v.size, "AvailabilityZone": v.zone.name},
        update=_no_moto_update,
        # moto's Volume model has no delete of its own.
        before_delete=lambda v, ctx: _backend("moto.ec2.models", "ec2_backends", ctx).delete_volume(v.id),
    ),
    # Real in RDS: DescribeDBInstances lists it, a final snapshot (CreateDBSnapshot) can be
    # taken of it, and DeleteDBInstance's refusal under DeletionProtection applies.
    "AWS::RDS::DBInstance": Adapter(
        models=lambda ctx: dict(_backend("moto.rds.models", "rds_backends", ctx).databases),
        identifier=lambda db, ctx: db.db_instance_identifier,
        name_of=lambda db: db.db_instance_identifier,
        read=_rds_read,
        update=_rds_protection,
        after_create=_rds_protection,
        prepare=_rds_prepare,
        lowercase_name=True,
    ),
}


def classify(exc: Exception) -> HandlerFailure:
    """A moto exception as the handler error Cloud Control would report."""
    if isinstance(exc, HandlerFailure):
        return exc
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else "?"
        return HandlerFailure("InvalidRequest", f"Model validation failed (#: required key [{key}] not found)")
    code = str(getattr(exc, "error_type", "") or getattr(exc, "code", "") or "")
    message = str(getattr(exc, "message", "") or exc or type(exc).__name__)
    text = f"{type(exc).__name__} {code}"
    for pattern, handler_code in (
        (r"AlreadyExist|ResourceInUse|InUse|Conflict", "AlreadyExists"),
        (r"NotFound|NoSuch|NonExistent|DoesNotExist", "NotFound"),
        (r"Throttl", "Throttling"),
        (r"LimitExceeded", "ServiceLimitExceeded"),
        (r"AccessDenied", "AccessDenied"),
        (r"Validation|Invalid|Malformed|TypeError|ValueError", "InvalidRequest"),
    ):
        if re.search(pattern, text):
            return HandlerFailure(handler_code, f"{code or type(exc).__name__}: {message}")
    return HandlerFailure("GeneralServiceException", f"{code or type(exc).__name__}: {message}")


class MotoBacking:
    name = "moto"

    def __init__(self) -> None:
        from moto.cloudformation.parsing import get_model_map

        self._model_map = get_model_map()

    def supports(self, type_name: str) -> bool:
        return type_name in ADAPTERS and type_name in self._model_map

    def _find(self, ctx: Context, type_name: str, identifier: str) -> Any:
        adapter = ADAPTERS[type_name]
        return adapter.models(ctx).get(adapter.key(identifier))

    def canonical(self, ctx: Context, schema: TypeSchema, identifier: str) -> str:
        model = self._find(ctx, schema.type_name, identifier)
        return ADAPTERS[schema.type_name].identifier(model, ctx) if model is not None else identifier

    def _read_only(self, ctx: Context, schema: TypeSchema, model: Any, identifier: str) -> dict:
        out: dict[str, Any] = {}
        for prop in top_level(schema.read_only):
            if schema.primary == [prop]:
                out[prop] = identifier
                continue
            value = None
            try:
                value = model.get_cfn_attribute(prop)
            except Exception:  # noqa: BLE001 - moto raises a zoo of types for "not supported"
                attr = getattr(type(model), _snake(prop), None) or getattr(model, _snake(prop), None)
                if attr is not None and not callable(attr):
                    value = getattr(model, _snake(prop), None)
            if isinstance(value, (str, int, float, bool)):
                out[prop] = value
        return out

    def _model_view(self, ctx: Context, schema: TypeSchema, model: Any, identifier: str) -> dict:
        adapter = ADAPTERS[schema.type_name]
        view = self._read_only(ctx, schema, model, identifier)
        if adapter.read is not None:
            view.update(adapter.read(model))
        return view

    # -- the backing interface (store.py) ----------------------------------------------
    def create(self, ctx: Context, schema: TypeSchema, props: dict) -> tuple[str, dict, dict]:
        adapter = ADAPTERS[schema.type_name]
        cls = self._model_map[schema.type_name]
        props = copy.deepcopy(props)
        name_prop = cls.cloudformation_name_type() or None
        name = props.get(name_prop) if name_prop else None
        if not name:
            name = generated_name(schema.type_name)
            if adapter.fifo_suffix and str(props.get("FifoQueue")).lower() == "true":
                name += ".fifo"
            if name_prop:
                props[name_prop] = name
        if adapter.lowercase_name:
            name = str(name).lower()
            if name_prop:
                props[name_prop] = name
        existing = adapter.models(ctx).get(adapter.name_key(str(name), ctx))
        if existing is not None:
            raise HandlerFailure("AlreadyExists", already_exists(schema, adapter.identifier(existing, ctx)))
        try:
            model_props = copy.deepcopy(props)
            if adapter.prepare is not None:
                model_props = adapter.prepare(model_props, ctx)
            model = cls.create_from_cloudformation_json(str(name), {"Properties": model_props}, ctx.account, ctx.region)
        except Exception as e:  # noqa: BLE001
            raise classify(e) from None
        if adapter.after_create is not None:
            try:
                adapter.after_create(model, props, ctx)
            except Exception as e:  # noqa: BLE001 - a failed create leaves nothing behind
                self._delete_model(ctx, schema, model, props)
                raise classify(e) from None
        identifier = adapter.identifier(model, ctx)
        # Stand-ins for read-only properties moto's model does not know.
        known = self._model_view(ctx, schema, model, identifier)
        fallback = {}
        for prop in top_level(schema.read_only):
            if prop not in known:
                value = plausible_value(schema, ctx, prop, {**props, **known})
                if value is not None:
                    fallback[prop] = value
        return identifier, props, fallback

    def read_only(self, ctx: Context, schema: TypeSchema, record: Record) -> dict | None:
        model = self._find(ctx, schema.type_name, record.identifier)
        if model is None:
            return None
        return self._model_view(ctx, schema, model, record.identifier)

    def update(self, ctx: Context, schema: TypeSchema, record: Record, props: dict) -> None:
        adapter = ADAPTERS[schema.type_name]
        cls = self._model_map[schema.type_name]
        model = self._find(ctx, schema.type_name, record.identifier)
        if model is None:
            raise HandlerFailure("NotFound", f"Resource of type '{schema.type_name}' with identifier '{record.identifier}' was not found.")
        try:
            if adapter.update is not None:
                adapter.update(model, props, ctx)
            elif not hasattr(cls.update_from_cloudformation_json, "__isabstractmethod__"):
                cls.update_from_cloudformation_json(
                    original_resource=model,
                    new_resource_name=adapter.name_of(model),
                    cloudformation_json={"Properties": copy.deepcopy(props)},
                    account_id=ctx.account,
                    region_name=ctx.region,
                )
            # else: moto cannot update this type; the record keeps the new properties.
        except Exception as e:  # noqa: BLE001
            raise classify(e) from None

    def delete(self, ctx: Context, schema: TypeSchema, record: Record) -> None:
        model = self._find(ctx, schema.type_name, record.identifier)
        if model is None:
            return
        try:
            self._delete_model(ctx, schema, model, record.properties)
        except Exception as e:  # noqa: BLE001
            raise classify(e) from None

    def _delete_model(self, ctx: Context, schema: TypeSchema, model: Any, props: dict) -> None:
        adapter = ADAPTERS[schema.type_name]
        if adapter.before_delete is not None:
            adapter.before_delete(model, ctx)
        try:  # as moto's own stack deletion does (ResourceMap._delete_resource)
            model.delete(ctx.account, ctx.region)
        except (TypeError, AttributeError):
            cls = self._model_map[schema.type_name]
            cls.delete_from_cloudformation_json(model.physical_resource_id, {"Properties": copy.deepcopy(props)}, ctx.account, ctx.region)

    def external(self, ctx: Context, schema: TypeSchema, only: str | None = None) -> dict[str, dict]:
        """Models of resources moto has, whoever created them (identifier -> full model)."""
        adapter = ADAPTERS[schema.type_name]
        cls = self._model_map[schema.type_name]
        name_prop = cls.cloudformation_name_type() or None
        if only is not None:
            model = self._find(ctx, schema.type_name, only)
            models = [model] if model is not None else []
        else:
            models = list(adapter.models(ctx).values())
        out = {}
        for model in models:
            identifier = adapter.identifier(model, ctx)
            view = self._model_view(ctx, schema, model, identifier)
            if name_prop:
                view.setdefault(name_prop, adapter.name_of(model))
            if len(schema.primary) == 1:
                view.setdefault(schema.primary[0], identifier)
            out[identifier] = view
        return out
