"""Resource records, resource requests, and the generic in-memory backing.

A *record* is a resource Cloud Control created: its type, identifier and the properties
last applied (write-only ones included; read-only ones are not properties, they are
computed). Where it lives depends on its type:

- moto-backed types (moto_backed.py): the resource is created, updated and deleted
  through moto's CloudFormation models, so it is real in moto's own APIs, and moto's
  model is the truth (a queue deleted through SQS is gone for Cloud Control too);
- every other type: the generic backing below, a dict, with read-only properties
  generated once at creation (ARNs, ids, names).

A *request* is one CreateResource / UpdateResource / DeleteResource. The emulator does
the work when the request arrives and only reveals the outcome (SUCCESS or FAILED) once
the client has polled GetResourceRequestStatus a set number of times (faults.py).

Errors: HandlerFailure -> the request ends FAILED with a handler error code;
ApiError -> the API call itself answers an error (HTTP 400/500).
"""

from __future__ import annotations

import base64
import copy
import json
import re
import secrets
import string
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import apigateway
from .patch import PatchError, apply_patch, remove_paths, values_differ
from .schema import TypeSchema, split

TERMINAL = {"SUCCESS", "FAILED", "CANCEL_COMPLETE"}
DEFAULT_PAGE = 50


class ApiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


class HandlerFailure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Context:
    """Who asks, and where: from the request's SigV4 scope and Host header."""

    account: str
    region: str
    base_url: str  # scheme://host:port the request came to (moto builds SQS URLs from it)

    @property
    def partition(self) -> str:
        if self.region.startswith("cn-"):
            return "aws-cn"
        if self.region.startswith("us-gov-"):
            return "aws-us-gov"
        return "aws"


@dataclass
class Record:
    type_name: str
    identifier: str
    properties: dict[str, Any]
    read_only: dict[str, Any]  # generated read-only values (generic backing; moto fallbacks)
    backing: str  # "generic" or "moto"
    created: float = field(default_factory=time.time)


@dataclass
class ResourceRequest:
    token: str
    account: str
    region: str
    type_name: str
    operation: str  # CREATE / UPDATE / DELETE
    identifier: str | None
    client_token: str | None
    fingerprint: str
    polls_left: int
    final: dict[str, Any]  # OperationStatus, and Identifier / ResourceModel / ErrorCode / StatusMessage
    status: str = "IN_PROGRESS"
    created: float = field(default_factory=time.time)
    event_time: float = field(default_factory=time.time)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def event(self, *, initial: bool = False) -> dict[str, Any]:
        ev: dict[str, Any] = {
            "TypeName": self.type_name,
            "RequestToken": self.token,
            "Operation": self.operation,
            "OperationStatus": self.status,
            "EventTime": self.event_time,
        }
        if self.status == self.final["OperationStatus"]:
            for key in ("Identifier", "ResourceModel", "ErrorCode", "StatusMessage"):
                if self.final.get(key) is not None:
                    ev[key] = self.final[key]
        elif self.identifier and not (initial and self.operation == "CREATE"):
            ev["Identifier"] = self.identifier
        if self.status == "CANCEL_COMPLETE":
            ev["StatusMessage"] = "Request cancelled"
        return ev


# -- helpers -------------------------------------------------------------------------------
_ALNUM = string.ascii_lowercase + string.digits


def random_id(n: int = 10) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(n))


def type_parts(type_name: str) -> tuple[str, str]:
    parts = type_name.split("::")
    return (parts[1].lower(), parts[2]) if len(parts) == 3 else ("custom", type_name)


def generated_name(type_name: str) -> str:
    """A name for a resource whose name property the caller left out, as CloudFormation does."""
    return f"cc-{type_parts(type_name)[1].lower()}-{random_id(12)}"


def encode_token(offset: int) -> str:
    return base64.b64encode(json.dumps({"o": offset}).encode()).decode()


def decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        offset = json.loads(base64.b64decode(token))["o"]
        if isinstance(offset, int) and offset >= 0:
            return offset
    except (ValueError, KeyError, TypeError):
        pass
    raise ApiError("InvalidRequestException", "Invalid NextToken")


def top_level(paths: list[str]) -> list[str]:
    return [p for p in paths if "/" not in p]


def readable(schema: TypeSchema, properties: dict) -> dict:
    """Properties as a read handler returns them: without the write-only ones."""
    return remove_paths(properties, [split(p) for p in schema.write_only])


def without_read_only(schema: TypeSchema, properties: dict) -> dict:
    return remove_paths(properties, [split(p) for p in schema.read_only])


def validate(schema: TypeSchema, properties: dict) -> None:
    """Cloud Control's model validation, at the top level: required and unknown keys."""
    missing = [r for r in schema.required if r not in properties and r not in schema.read_only]
    if missing:
        raise HandlerFailure("InvalidRequest", f"Model validation failed (#: required key [{missing[0]}] not found)")
    if schema.closed and schema.properties is not None:
        extra = sorted(k for k in properties if k not in schema.properties)
        if extra:
            raise HandlerFailure("InvalidRequest", f"Model validation failed (#: extraneous key [{extra[0]}] is not permitted)")


def plausible_value(schema: TypeSchema, ctx: Context, prop: str, props: dict) -> Any:
    """A stand-in for a read-only property the emulator cannot know; None to leave it out."""
    definition = (schema.properties or {}).get(prop)
    kind = schema.property_type(prop)
    if kind in ("integer", "number"):
        return 1
    if kind is None and (definition is not None or schema.properties is None):
        # An object behind a $ref, or no schema at all: only names that say what they hold.
        if not prop.endswith(("Arn", "ARN", "Id", "Name", "Url", "URL", "Uri")):
            return None
    elif kind != "string":
        return None
    service, resource = type_parts(schema.type_name)
    if prop.endswith(("Arn", "ARN")):
        named = [str(v) for k, v in props.items() if k.endswith("Name") and isinstance(v, str)]
        ids = [str(props[p]) for p in schema.primary if p in props and not str(props[p]).startswith("arn:")]
        suffix = (named or ids or [random_id(12)])[0]
        return f"arn:{ctx.partition}:{service}:{ctx.region}:{ctx.account}:{resource.lower()}/{suffix}"
    if prop.endswith(("Url", "URL", "Uri")):
        return f"https://{random_id()}.{service}.{ctx.region}.amazonaws.com"
    if re.search(r"(Time|Date|At)$", prop):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if prop.endswith("Name"):
        return generated_name(schema.type_name)
    return random_id()


# -- generic backing -------------------------------------------------------------------------
class GenericBacking:
    """Resources that exist only in this emulator: the record is the resource."""

    name = "generic"

    def create(self, ctx: Context, schema: TypeSchema, props: dict) -> tuple[str, dict, dict]:
        props = copy.deepcopy(props)
        generated: dict[str, Any] = {}
        for prop in schema.primary:
            if prop not in props and prop not in schema.read_only:
                props[prop] = generated_name(schema.type_name) if prop.endswith("Name") else random_id()
        # Ids first, ARNs last: an ARN names the resource by its identifier.
        order = sorted(top_level(schema.read_only), key=lambda p: p.endswith(("Arn", "ARN")))
        for prop in order:
            value = plausible_value(schema, ctx, prop, {**props, **generated})
            if value is not None:
                generated[prop] = value
        identifier = identifier_of(schema, {**props, **generated})
        return identifier, props, generated

    def read_only(self, ctx: Context, schema: TypeSchema, record: Record) -> dict | None:
        return dict(record.read_only)

    def update(self, ctx: Context, schema: TypeSchema, record: Record, props: dict) -> None:
        pass

    def delete(self, ctx: Context, schema: TypeSchema, record: Record) -> None:
        pass

    def external(self, ctx: Context, schema: TypeSchema, only: str | None = None) -> dict[str, dict]:
        return {}


def identifier_of(schema: TypeSchema, model: dict) -> str:
    parts = []
    for prop in schema.primary:
        if model.get(prop) in (None, ""):
            raise HandlerFailure("InvalidRequest", f"Model validation failed (#: required key [{prop}] not found)")
        parts.append(str(model[prop]))
    return "|".join(parts)


# -- the store -------------------------------------------------------------------------------
class Store:
    """Every record and request, behind one lock (werkzeug serves requests in threads)."""

    def __init__(self, moto_backing: Any = None) -> None:
        self.lock = threading.RLock()
        self.generic = GenericBacking()
        self.moto = moto_backing
        self.records: dict[tuple[str, str, str], dict[str, Record]] = {}
        self.requests: dict[str, ResourceRequest] = {}
        self.client_tokens: dict[tuple[str, str, str], str] = {}

    def reset(self) -> None:
        with self.lock:
            self.records.clear()
            self.requests.clear()
            self.client_tokens.clear()

    def backing(self, type_name: str) -> Any:
        if self.moto is not None and self.moto.supports(type_name):
            return self.moto
        return self.generic

    def _bucket(self, ctx: Context, type_name: str) -> dict[str, Record]:
        return self.records.setdefault((ctx.account, ctx.region, type_name), {})

    # -- identifiers ----------------------------------------------------------------------
    def resolve(self, ctx: Context, schema: TypeSchema, identifier: str) -> str:
        """The primary identifier a caller's identifier names (it may be a JSON object of
        identifier properties, or a single-property additional identifier)."""
        text = identifier.strip()
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                raise ApiError("InvalidRequestException", f"Invalid identifier {identifier!r}") from None
            if isinstance(obj, dict):
                if all(p in obj for p in schema.primary):
                    return "|".join(str(obj[p]) for p in schema.primary)
                for group in schema.additional:
                    if all(p in obj for p in group):
                        for rec_id, model in self._models(ctx, schema).items():
                            if all(str(model.get(p)) == str(obj[p]) for p in group):
                                return rec_id
            return text
        if self.backing(schema.type_name).name == "moto":
            return self.moto.canonical(ctx, schema, identifier)
        if identifier in self._bucket(ctx, schema.type_name):
            return identifier
        for group in schema.additional:
            if len(group) == 1:
                for rec_id, model in self._models(ctx, schema).items():
                    if str(model.get(group[0])) == identifier:
                        return rec_id
        return identifier

    # -- reads ----------------------------------------------------------------------------
    def _model(self, ctx: Context, schema: TypeSchema, record: Record) -> dict | None:
        """The full model of a record (write-only included), or None when it is gone."""
        ro = self.backing(schema.type_name).read_only(ctx, schema, record)
        if ro is None:
            return None
        return {**record.properties, **record.read_only, **ro}

    def _models(self, ctx: Context, schema: TypeSchema) -> dict[str, dict]:
        """identifier -> full model, for every resource of the type (records and, for
        moto-backed types, resources created some other way)."""
        out: dict[str, dict] = {}
        bucket = self._bucket(ctx, schema.type_name)
        for rec_id, record in list(bucket.items()):
            model = self._model(ctx, schema, record)
            if model is None:
                del bucket[rec_id]  # deleted behind Cloud Control's back
            else:
                out[rec_id] = model
        for ext_id, model in self.backing(schema.type_name).external(ctx, schema).items():
            out.setdefault(ext_id, model)
        return out

    def get(self, ctx: Context, schema: TypeSchema, identifier: str) -> dict | None:
        """The readable model (no write-only properties) of one resource, or None."""
        with self.lock:
            rec_id = self.resolve(ctx, schema, identifier)
            bucket = self._bucket(ctx, schema.type_name)
            if rec_id in bucket:
                model = self._model(ctx, schema, bucket[rec_id])
                if model is None:
                    del bucket[rec_id]
                    return None
                return readable(schema, model)
            external = self.backing(schema.type_name).external(ctx, schema, only=rec_id)
            if rec_id in external:
                return readable(schema, external[rec_id])
            return None

    def list(self, ctx: Context, schema: TypeSchema, model_filter: dict | None) -> list[tuple[str, dict]]:
        with self.lock:
            models = self._models(ctx, schema)
            out = []
            for rec_id, model in models.items():
                if model_filter and any(model.get(k) != v for k, v in model_filter.items()):
                    continue
                out.append((rec_id, readable(schema, model)))
            return out

    # -- writes ---------------------------------------------------------------------------
    def create(self, ctx: Context, schema: TypeSchema, desired: dict, validating: bool) -> tuple[str, dict]:
        """Create a resource; returns (identifier, readable model). Raises HandlerFailure."""
        with self.lock:
            props = without_read_only(schema, desired)
            if validating:
                validate(schema, props)
            self._check_references(ctx, schema.type_name, props)
            backing = self.backing(schema.type_name)
            identifier, props, ro = backing.create(ctx, schema, props)
            bucket = self._bucket(ctx, schema.type_name)
            if identifier in bucket and self._model(ctx, schema, bucket[identifier]) is not None:
                raise HandlerFailure("AlreadyExists", already_exists(schema, identifier))
            record = Record(schema.type_name, identifier, props, ro, backing.name)
            bucket[identifier] = record
            return identifier, readable(schema, self._model(ctx, schema, record) or {})

    def plan_update(self, ctx: Context, schema: TypeSchema, identifier: str, patch_ops: Any) -> tuple[str, dict] | None:
        """Check an update before accepting it: (primary identifier, new properties), or None
        when there is no such resource. Raises ApiError for a patch Cloud Control refuses."""
        with self.lock:
            rec_id = self.resolve(ctx, schema, identifier)
            current = self.get(ctx, schema, rec_id)
            if current is None:
                return None
            try:
                desired = apply_patch(current, patch_ops)
            except PatchError as e:
                raise ApiError("InvalidRequestException", f"Invalid patch document: {e}") from None
            if not isinstance(desired, dict):
                raise ApiError("InvalidRequestException", "Invalid patch document: the result is not a JSON object")
            changed = [p for p in schema.create_only if values_differ(current, desired, split(p))]
            if changed:
                paths = ", ".join(f"/properties/{p}" for p in changed)
                raise ApiError("NotUpdatableException", f"Invalid patch update: createOnlyProperties [{paths}] cannot be updated")
            changed = [p for p in schema.read_only if values_differ(current, desired, split(p))]
            if changed:
                paths = ", ".join(f"/properties/{p}" for p in changed)
                raise ApiError("InvalidRequestException", f"Invalid patch update: readOnlyProperties [{paths}] cannot be updated")
            return rec_id, without_read_only(schema, desired)

    def update(self, ctx: Context, schema: TypeSchema, rec_id: str, props: dict, validating: bool) -> dict:
        """Apply planned properties; returns the readable model. Raises HandlerFailure."""
        with self.lock:
            if validating:
                validate(schema, props)
            self._check_references(ctx, schema.type_name, props)
            record = self._bucket(ctx, schema.type_name).get(rec_id)
            if record is None:
                record = self._adopt(ctx, schema, rec_id)
            self.backing(schema.type_name).update(ctx, schema, record, props)
            record.properties = props
            model = self._model(ctx, schema, record)
            if model is None:
                raise HandlerFailure("NotFound", not_found(schema, rec_id))
            return readable(schema, model)

    def delete(self, ctx: Context, schema: TypeSchema, identifier: str) -> str:
        """Delete a resource; returns its primary identifier. Raises HandlerFailure."""
        with self.lock:
            rec_id = self.resolve(ctx, schema, identifier)
            if self.get(ctx, schema, rec_id) is None:
                raise HandlerFailure("NotFound", not_found(schema, identifier))
            bucket = self._bucket(ctx, schema.type_name)
            record = bucket.get(rec_id) or self._adopt(ctx, schema, rec_id)
            self.backing(schema.type_name).delete(ctx, schema, record)
            bucket.pop(rec_id, None)
            return rec_id

    def _check_references(self, ctx: Context, type_name: str, props: dict) -> None:
        """A service's own check that the ids a resource names exist (apigateway.py)."""

        def models(other: str) -> list[dict]:
            return [{**r.properties, **r.read_only} for r in self._bucket(ctx, other).values()]

        try:
            apigateway.check(type_name, props, models)
        except apigateway.MissingReference as e:
            raise HandlerFailure("NotFound", str(e)) from None

    def _adopt(self, ctx: Context, schema: TypeSchema, rec_id: str) -> Record:
        """A record for a moto resource Cloud Control did not create (to update or delete it)."""
        model = self.backing(schema.type_name).external(ctx, schema, only=rec_id).get(rec_id)
        if model is None:
            raise HandlerFailure("NotFound", not_found(schema, rec_id))
        record = Record(schema.type_name, rec_id, without_read_only(schema, model), {}, "moto")
        self._bucket(ctx, schema.type_name)[rec_id] = record
        return record

    # -- requests -------------------------------------------------------------------------
    def add_request(self, req: ResourceRequest) -> None:
        with self.lock:
            self.requests[req.token] = req
            if req.client_token:
                self.client_tokens[(req.account, req.region, req.client_token)] = req.token

    def by_client_token(self, ctx: Context, client_token: str | None) -> ResourceRequest | None:
        if not client_token:
            return None
        with self.lock:
            token = self.client_tokens.get((ctx.account, ctx.region, client_token))
            return self.requests.get(token) if token else None

    def busy(self, ctx: Context, type_name: str, identifier: str) -> bool:
        """Is another request on this resource still in progress (as its client sees it)?"""
        with self.lock:
            return any(
                not r.done and r.account == ctx.account and r.region == ctx.region
                and r.type_name == type_name and r.identifier == identifier
                for r in self.requests.values()
            )  # fmt: skip

    def requests_of(self, ctx: Context) -> list[ResourceRequest]:
        with self.lock:
            reqs = [r for r in self.requests.values() if r.account == ctx.account and r.region == ctx.region]
        return sorted(reqs, key=lambda r: r.created, reverse=True)


def new_token() -> str:
    return str(uuid.uuid4())


def not_found(schema: TypeSchema, identifier: str) -> str:
    return f"Resource of type '{schema.type_name}' with identifier '{identifier}' was not found."


def already_exists(schema: TypeSchema, identifier: str) -> str:
    return f"Resource of type '{schema.type_name}' with identifier '{identifier}' already exists."


def page(items: list, next_token: str | None, max_results: int | None) -> tuple[list, str | None]:
    start = decode_token(next_token)
    if max_results is not None and (isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 100):
        raise ApiError("InvalidRequestException", f"MaxResults must be between 1 and 100, got {max_results!r}")
    size = max_results or DEFAULT_PAGE
    chunk = items[start : start + size]
    more = start + size < len(items)
    return chunk, (encode_token(start + size) if more else None)

