"""AWS Cloud Control API emulator, served in the same process and port as moto.

scripts/emulator.py wraps moto's WSGI app in `CloudControlMiddleware`: a request whose
X-Amz-Target starts with "CloudApiService." is Cloud Control (AWS JSON 1.0 protocol,
service cloudcontrolapi, API version 2021-09-30) and is answered here; /_cloudcontrol/*
is this emulator's control API (faults, reset); everything else goes to moto unchanged.
So one AWS_ENDPOINT_URL serves both, and the real aws-sdk-cloudcontrol client needs no
extra configuration.

Operations: CreateResource, GetResource, UpdateResource (RFC 6902 PatchDocument),
DeleteResource, ListResources (NextToken paging, ResourceModel filter),
GetResourceRequestStatus, CancelResourceRequest, ListResourceRequests. The shapes and
error codes follow botocore's service model (botocore/data/cloudcontrol/2021-09-30).

Behaviour:
- Mutations are asynchronous, as in AWS: the call answers a ProgressEvent IN_PROGRESS;
  the work is done at once, and GetResourceRequestStatus reveals SUCCESS or FAILED after
  the client has polled it K times (K = 1 by default; see cloudcontrol/faults.py).
- Handler errors end the request FAILED with a handler error code: AlreadyExists
  (create of an existing identifier), NotFound (update / delete of an unknown one),
  InvalidRequest (a desired state missing a required property or carrying an unknown
  one, per the type's schema), or what a fault injects. GetResource of an unknown
  identifier answers ResourceNotFoundException; a patch touching a create-only property
  answers NotUpdatableException; a second mutation of a resource whose previous request
  is still IN_PROGRESS answers ConcurrentOperationException; a client token reused with
  different parameters answers ClientTokenConflictException, reused with the same ones
  answers the original request.
- Identifiers follow the type's primaryIdentifier (a composite one joined with "|");
  write-only properties are never returned; read-only ones are computed (moto) or
  generated once (generic store). See cloudcontrol/store.py and moto_backed.py.
- Account and region come from the request's SigV4 credential scope, as in moto
  (MOTO_ACCOUNT_ID, x-moto-account-id, the access key; default 123456789012).
- POST /moto-api/reset (moto's own reset) clears this emulator's state too.

Control API (see cloudcontrol/README.md and cloudcontrol/faults.py):
    GET|POST|DELETE /_cloudcontrol/faults   fault injection
    POST /_cloudcontrol/reset               forget every record, request and fault
    GET  /_cloudcontrol/resources           what the emulator holds (for debugging)
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import traceback
import uuid
from typing import Any, Callable

from werkzeug.wrappers import Request, Response

from cloudcontrol.faults import FaultError, Faults
from cloudcontrol.schema import SchemaRegistry, TypeSchema
from cloudcontrol.store import (
    ApiError,
    Context,
    HandlerFailure,
    ResourceRequest,
    Store,
    new_token,
    page,
)

TARGET_PREFIX = "CloudApiService."
CONTENT_TYPE = "application/x-amz-json-1.0"
CONTROL_PREFIX = "/_cloudcontrol"
DEFAULT_ACCOUNT = "123456789012"
DEFAULT_REGION = "us-east-1"
TYPE_NAME = re.compile(r"^[A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}$")
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/,\s]+)/")


def _required(params: dict, name: str) -> Any:
    value = params.get(name)
    if value is None or value == "":
        raise ApiError("InvalidRequestException", f"1 validation error detected: Value null at '{name}' failed to satisfy constraint: Member must not be null")
    return value


def _json_object(text: Any, what: str) -> Any:
    if not isinstance(text, str):
        raise ApiError("InvalidRequestException", f"{what} must be a JSON string")
    try:
        return json.loads(text)
    except ValueError as e:
        raise ApiError("InvalidRequestException", f"{what} is not valid JSON: {e}") from None


def _compact(obj: Any) -> Any:
    """Drop None members (the JSON protocol leaves absent members out)."""
    if isinstance(obj, dict):
        return {k: _compact(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_compact(v) for v in obj]
    return obj


class CloudControlMiddleware:
    """WSGI middleware: Cloud Control and /_cloudcontrol here, the rest to `app` (moto)."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.faults = Faults()
        self.schemas = SchemaRegistry()
        self._store: Store | None = None
        self._store_lock = threading.Lock()

    @property
    def store(self) -> Store:
        # moto's CloudFormation models import most of moto: do it on first use, not at start.
        with self._store_lock:
            if self._store is None:
                from cloudcontrol.moto_backed import MotoBacking

                self._store = Store(MotoBacking())
            return self._store

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        path = environ.get("PATH_INFO", "")
        if target.startswith(TARGET_PREFIX):
            response = self._api(Request(environ), target[len(TARGET_PREFIX) :])
            return response(environ, start_response)
        if path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/"):
            return self._control(Request(environ))(environ, start_response)
        if path.rstrip("/") == "/moto-api/reset" and environ.get("REQUEST_METHOD") == "POST":
            self.reset()
        return self.app(environ, start_response)

    def reset(self) -> None:
        self.faults.reset()
        if self._store is not None:
            self._store.reset()

    # -- the AWS API ----------------------------------------------------------------------
    def _api(self, request: Request, operation: str) -> Response:
        request_id = str(uuid.uuid4())
        try:
            handler = OPERATIONS.get(operation)
            if handler is None:
                raise ApiError("UnknownOperationException", f"Unknown operation {operation}")
            try:
                params = json.loads(request.get_data() or b"{}")
            except ValueError:
                raise ApiError("SerializationException", "The request body is not valid JSON") from None
            if not isinstance(params, dict):
                raise ApiError("SerializationException", "The request body must be a JSON object")
            ctx = self._context(request)
            injected = self.faults.take_error(operation, self._fault_type(params))
            if injected:
                raise ApiError(injected["Code"], injected["Message"], injected["Status"])
            body = _compact(handler(self, ctx, params))
            return self._respond(200, body, request_id)
        except ApiError as e:
            return self._respond(e.status, {"__type": e.code, "Message": e.message}, request_id, e.code)
        except Exception as e:  # noqa: BLE001 - an emulator bug: say so, do not hang the client
            traceback.print_exc(file=sys.stderr)
            message = f"cloudcontrol emulator bug: {type(e).__name__}: {e}"
            return self._respond(500, {"__type": "ServiceInternalErrorException", "Message": message}, request_id, "ServiceInternalErrorException")

    @staticmethod
    def _respond(status: int, body: dict, request_id: str, error: str | None = None) -> Response:
        headers = {"x-amzn-RequestId": request_id}
        if error:
            headers["x-amzn-ErrorType"] = error
        return Response(json.dumps(body), status=status, headers=headers, content_type=CONTENT_TYPE)

    def _context(self, request: Request) -> Context:
        match = CREDENTIAL.search(request.headers.get("Authorization", ""))
        access_key, region = (match.group(1), match.group(2)) if match else (None, DEFAULT_REGION)
        if os.environ.get("MOTO_ACCOUNT_ID"):
            account = os.environ["MOTO_ACCOUNT_ID"]
        elif request.headers.get("x-moto-account-id"):
            account = request.headers["x-moto-account-id"]
        elif access_key:
            from moto.iam.models import get_account_id_from

            account = get_account_id_from(access_key)
        else:
            account = DEFAULT_ACCOUNT
        return Context(account=account, region=region, base_url=request.host_url.rstrip("/"))

    def _fault_type(self, params: dict) -> str | None:
        if isinstance(params.get("TypeName"), str):
            return params["TypeName"]
        token = params.get("RequestToken")
        if isinstance(token, str) and self._store is not None:
            req = self._store.requests.get(token)
            return req.type_name if req else None
        return None

    def _schema(self, params: dict) -> TypeSchema:
        type_name = _required(params, "TypeName")
        if not isinstance(type_name, str) or not TYPE_NAME.match(type_name):
            raise ApiError("InvalidRequestException", f"Invalid TypeName {type_name!r}")
        schema = self.schemas.get(type_name)
        if schema is None:
            raise ApiError("TypeNotFoundException", f"The type '{type_name}' cannot be found.")
        return schema

    def _replay(self, ctx: Context, params: dict, fingerprint: str) -> ResourceRequest | None:
        """The earlier request a reused ClientToken names, if any (idempotency)."""
        earlier = self.store.by_client_token(ctx, params.get("ClientToken"))
        if earlier is None:
            return None
        if earlier.fingerprint != fingerprint:
            raise ApiError("ClientTokenConflictException", f"ClientToken {params['ClientToken']} was used for a different request")
        return earlier

    def _start(self, ctx: Context, params: dict, schema: TypeSchema, operation: str, fingerprint: str, identifier: str | None, work: Callable[[], dict]) -> dict:
        """Run a mutation (or its injected failure) and record the request."""
        failure = self.faults.take_failure(operation, schema.type_name)
        if failure:
            final = {"OperationStatus": "FAILED", "ErrorCode": failure["ErrorCode"], "StatusMessage": failure["StatusMessage"]}
        else:
            try:
                final = {"OperationStatus": "SUCCESS", **work()}
            except HandlerFailure as f:
                final = {"OperationStatus": "FAILED", "ErrorCode": f.code, "StatusMessage": f.message}
        identifier = final.get("Identifier") or identifier
        if final["OperationStatus"] == "FAILED" and identifier and operation != "CREATE":
            final["Identifier"] = identifier
        req = ResourceRequest(
            token=new_token(),
            account=ctx.account,
            region=ctx.region,
            type_name=schema.type_name,
            operation=operation,
            identifier=identifier,
            client_token=params.get("ClientToken"),
            fingerprint=fingerprint,
            polls_left=self.faults.polls_for(operation, schema.type_name),
            final=final,
        )
        self.store.add_request(req)
        return {"ProgressEvent": req.event(initial=True)}

    def create_resource(self, ctx: Context, params: dict) -> dict:
        schema = self._schema(params)
        desired_text = _required(params, "DesiredState")
        fingerprint = json.dumps(["CREATE", schema.type_name, desired_text])
        with self.store.lock:
            earlier = self._replay(ctx, params, fingerprint)
            if earlier:
                return {"ProgressEvent": earlier.event()}
            desired = _json_object(desired_text, "DesiredState")
            if not isinstance(desired, dict):
                raise ApiError("InvalidRequestException", "DesiredState must be a JSON object")

            def work() -> dict:
                identifier, model = self.store.create(ctx, schema, desired, self.faults.validate)
                return {"Identifier": identifier, "ResourceModel": json.dumps(model)}

            return self._start(ctx, params, schema, "CREATE", fingerprint, None, work)

    def update_resource(self, ctx: Context, params: dict) -> dict:
        schema = self._schema(params)
        identifier = _required(params, "Identifier")
        patch_text = _required(params, "PatchDocument")
        fingerprint = json.dumps(["UPDATE", schema.type_name, identifier, patch_text])
        with self.store.lock:
            earlier = self._replay(ctx, params, fingerprint)
            if earlier:
                return {"ProgressEvent": earlier.event()}
            plan = self.store.plan_update(ctx, schema, identifier, _json_object(patch_text, "PatchDocument"))
            if plan is None:
                rec_id = identifier

                def work() -> dict:
                    raise HandlerFailure("NotFound", f"Resource of type '{schema.type_name}' with identifier '{identifier}' was not found.")

            else:
                rec_id, props = plan
                self._not_busy(ctx, schema, rec_id)

                def work() -> dict:
                    model = self.store.update(ctx, schema, rec_id, props, self.faults.validate)
                    return {"Identifier": rec_id, "ResourceModel": json.dumps(model)}

            return self._start(ctx, params, schema, "UPDATE", fingerprint, rec_id, work)

    def delete_resource(self, ctx: Context, params: dict) -> dict:
        schema = self._schema(params)
        identifier = _required(params, "Identifier")
        fingerprint = json.dumps(["DELETE", schema.type_name, identifier])
        with self.store.lock:
            earlier = self._replay(ctx, params, fingerprint)
            if earlier:
                return {"ProgressEvent": earlier.event()}
            rec_id = self.store.resolve(ctx, schema, identifier)
            self._not_busy(ctx, schema, rec_id)

            def work() -> dict:
                return {"Identifier": self.store.delete(ctx, schema, rec_id)}

            return self._start(ctx, params, schema, "DELETE", fingerprint, rec_id, work)

    def _not_busy(self, ctx: Context, schema: TypeSchema, rec_id: str) -> None:
        if self.store.busy(ctx, schema.type_name, rec_id):
            raise ApiError(
                "ConcurrentOperationException",
                f"Another resource request is in progress for the resource of type '{schema.type_name}' with identifier '{rec_id}'.",
            )

    def get_resource(self, ctx: Context, params: dict) -> dict:
        schema = self._schema(params)
        identifier = _required(params, "Identifier")
        with self.store.lock:
            rec_id = self.store.resolve(ctx, schema, identifier)
            model = self.store.get(ctx, schema, rec_id)
        if model is None:
            raise ApiError("ResourceNotFoundException", f"Resource of type '{schema.type_name}' with identifier '{identifier}' was not found.")
        return {"TypeName": schema.type_name, "ResourceDescription": {"Identifier": rec_id, "Properties": json.dumps(model)}}

    def list_resources(self, ctx: Context, params: dict) -> dict:
        schema = self._schema(params)
        model_filter = None
        if params.get("ResourceModel"):
            model_filter = _json_object(params["ResourceModel"], "ResourceModel")
            if not isinstance(model_filter, dict):
                raise ApiError("InvalidRequestException", "ResourceModel must be a JSON object")
        items = self.store.list(ctx, schema, model_filter)
        chunk, next_token = page(items, params.get("NextToken"), params.get("MaxResults"))
        return {
            "TypeName": schema.type_name,
            "ResourceDescriptions": [{"Identifier": i, "Properties": json.dumps(m)} for i, m in chunk],
            "NextToken": next_token,
        }

    def _request(self, params: dict) -> ResourceRequest:
        token = _required(params, "RequestToken")
        req = self.store.requests.get(token)
        if req is None:
            raise ApiError("RequestTokenNotFoundException", f"Request with token {token} was not found")
        return req

    def get_resource_request_status(self, ctx: Context, params: dict) -> dict:
        with self.store.lock:
            req = self._request(params)
            if not req.done:
                if req.polls_left > 0:
                    req.polls_left -= 1
                else:
                    req.status = req.final["OperationStatus"]
                    req.event_time = time.time()
            return {"ProgressEvent": req.event()}

    def cancel_resource_request(self, ctx: Context, params: dict) -> dict:
        with self.store.lock:
            req = self._request(params)
            if req.done:
                raise ApiError("ConcurrentModificationException", f"Resource request {req.token} has already completed ({req.status}) and cannot be cancelled.", 500)
            # The work was done when the request arrived and stays done (a cancel does not
            # roll back in AWS either); only the request's outcome is discarded.
            req.status = "CANCEL_COMPLETE"
            req.event_time = time.time()
            return {"ProgressEvent": req.event()}

    def list_resource_requests(self, ctx: Context, params: dict) -> dict:
        flt = params.get("ResourceRequestStatusFilter") or {}
        operations = set(flt.get("Operations") or [])
        statuses = set(flt.get("OperationStatuses") or [])
        reqs = [
            r for r in self.store.requests_of(ctx)
            if (not operations or r.operation in operations) and (not statuses or r.status in statuses)
        ]  # fmt: skip
        chunk, next_token = page(reqs, params.get("NextToken"), params.get("MaxResults"))
        return {"ResourceRequestStatusSummaries": [r.event() for r in chunk], "NextToken": next_token}

    # -- the control API -------------------------------------------------------------------
    def _control(self, request: Request) -> Response:
        sub = request.path[len(CONTROL_PREFIX) :].strip("/")
        try:
            if sub == "faults" and request.method == "GET":
                return self._json(200, self.faults.snapshot())
            if sub == "faults" and request.method == "POST":
                try:
                    body = json.loads(request.get_data() or b"{}")
                except ValueError:
                    raise FaultError("the body is not valid JSON") from None
                return self._json(200, self.faults.configure(body))
            if sub == "faults" and request.method == "DELETE":
                self.faults.reset()
                return self._json(200, {"ok": True})
            if sub == "reset" and request.method == "POST":
                self.reset()
                return self._json(200, {"ok": True})
            if sub == "resources" and request.method == "GET":
                return self._json(200, self._dump())
        except FaultError as e:
            return self._json(400, {"error": str(e)})
        return self._json(404, {"error": f"no such control endpoint: {request.method} {request.path}"})

    @staticmethod
    def _json(status: int, body: Any) -> Response:
        return Response(json.dumps(body, indent=1), status=status, content_type="application/json")

    def _dump(self) -> dict:
        if self._store is None:
            return {"resources": [], "requests": 0}
        with self._store.lock:
            resources = [
                {"Account": acct, "Region": region, "TypeName": rec.type_name, "Identifier": rec.identifier, "Backing": rec.backing}
                for (acct, region, _), bucket in self._store.records.items()
                for rec in bucket.values()
            ]
            return {"resources": resources, "requests": len(self._store.requests)}


OPERATIONS: dict[str, Callable[[CloudControlMiddleware, Context, dict], dict]] = {
    "CreateResource": CloudControlMiddleware.create_resource,
    "GetResource": CloudControlMiddleware.get_resource,
    "UpdateResource": CloudControlMiddleware.update_resource,
    "DeleteResource": CloudControlMiddleware.delete_resource,
    "ListResources": CloudControlMiddleware.list_resources,
    "GetResourceRequestStatus": CloudControlMiddleware.get_resource_request_status,
    "CancelResourceRequest": CloudControlMiddleware.cancel_resource_request,
    "ListResourceRequests": CloudControlMiddleware.list_resource_requests,
}


def wrap(app: Callable) -> CloudControlMiddleware:
    """moto's WSGI app with the Cloud Control API in front of it (scripts/emulator.py)."""
    return CloudControlMiddleware(app)
