"""Lambda Invoke without running code: a WSGI middleware in front of moto.

moto runs Lambda code only through Docker, which the test machines do not have, so an Invoke
of a custom resource's handler would fail. This middleware answers Invoke itself for every
function moto knows, records the request, and lets a test play the handler: read the recorded
CloudFormation envelope, then PUT a cfn-response to its ResponseURL.

    POST   /2015-03-31/functions/{name}/invocations   Lambda Invoke (the real API path)
    GET    /_lambda/invocations[?function=NAME]        the recorded invocations, oldest first
    DELETE /_lambda/invocations                        forget them

An Invoke of a function moto does not hold goes to moto unchanged, which answers
ResourceNotFoundException as Lambda does. Otherwise the answer is Lambda's for the invocation
type: RequestResponse 200 with the payload `null` (X-Amz-Executed-Version: $LATEST), Event 202
with no body, DryRun 204. `POST /moto-api/reset` forgets the invocations too.

Each recorded invocation is a JSON object:

    {"function": "<name or ARN as called>", "functionArn": "...", "qualifier": null,
     "invocationType": "RequestResponse", "account": "...", "region": "...",
     "payload": <the request body as JSON, or as a string when it is not JSON>,
     "time": <unix seconds>}
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.parse
from typing import Any, Callable

INVOKE = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations/?$")
CONTROL = "/_lambda/invocations"
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/,\s]+)/")
DEFAULT_ACCOUNT = "123456789012"
DEFAULT_REGION = "us-east-1"


class LambdaInvocations:
    """WSGI middleware: Lambda Invoke and /_lambda here, the rest to `app`."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.recorded: list[dict] = []

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path.rstrip("/") == CONTROL:
            return self._control(environ, method, start_response)
        if path.rstrip("/") == "/moto-api/reset" and method == "POST":
            with self.lock:
                self.recorded.clear()
        match = INVOKE.match(path)
        if match and method == "POST":
            answered = self._invoke(environ, urllib.parse.unquote(match.group(1)), start_response)
            if answered is not None:
                return answered
        return self.app(environ, start_response)

    # -- Invoke ---------------------------------------------------------------------------
    def _invoke(self, environ: dict, name: str, start_response: Callable) -> Any:
        account, region = _account_region(environ)
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        qualifier = (query.get("Qualifier") or [None])[0]
        function_arn = _function_arn(account, region, name, qualifier)
        if function_arn is None:
            return None  # moto answers: ResourceNotFoundException
        # The body has to be read before moto could see it, so read it only once we answer.
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length > 0 else b""
        text = raw.decode("utf-8", errors="replace")
        try:
            payload: Any = json.loads(text) if text else None
        except ValueError:
            payload = text
        invocation_type = environ.get("HTTP_X_AMZ_INVOCATION_TYPE") or "RequestResponse"
        with self.lock:
            self.recorded.append(
                {
                    "function": name,
                    "functionArn": function_arn,
                    "qualifier": qualifier,
                    "invocationType": invocation_type,
                    "account": account,
                    "region": region,
                    "payload": payload,
                    "time": time.time(),
                }
            )
        request_id = _request_id()
        if invocation_type == "Event":
            return _answer(start_response, "202 Accepted", b"", request_id)
        if invocation_type == "DryRun":
            return _answer(start_response, "204 No Content", b"", request_id)
        return _answer(
            start_response,
            "200 OK",
            b"null",
            request_id,
            [("X-Amz-Executed-Version", "$LATEST"), ("Content-Type", "application/json")],
        )

    # -- the control API ------------------------------------------------------------------
    def _control(self, environ: dict, method: str, start_response: Callable) -> Any:
        if method == "DELETE":
            with self.lock:
                self.recorded.clear()
            return _answer(start_response, "200 OK", b"[]", None, [("Content-Type", "application/json")])
        if method != "GET":
            return _answer(start_response, "405 Method Not Allowed", b"", None)
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        wanted = (query.get("function") or [None])[0]
        with self.lock:
            items = [
                r
                for r in self.recorded
                if wanted is None or wanted in (r["function"], r["functionArn"]) or r["functionArn"].endswith(":function:" + wanted)
            ]
            body = json.dumps(items).encode()
        return _answer(start_response, "200 OK", body, None, [("Content-Type", "application/json")])


def _answer(start_response: Callable, status: str, body: bytes, request_id: str | None, headers: "list[tuple[str, str]] | None" = None) -> list:
    out = list(headers or [])
    if request_id:
        out.append(("x-amzn-RequestId", request_id))
    out.append(("Content-Length", str(len(body))))
    start_response(status, out)
    return [body]


def _request_id() -> str:
    import uuid

    return str(uuid.uuid4())


def _account_region(environ: dict) -> "tuple[str, str]":
    match = CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    access_key, region = (match.group(1), match.group(2)) if match else (None, DEFAULT_REGION)
    if os.environ.get("MOTO_ACCOUNT_ID"):
        return os.environ["MOTO_ACCOUNT_ID"], region
    if environ.get("HTTP_X_MOTO_ACCOUNT_ID"):
        return environ["HTTP_X_MOTO_ACCOUNT_ID"], region
    if access_key:
        from moto.iam.models import get_account_id_from

        return get_account_id_from(access_key), region
    return DEFAULT_ACCOUNT, region


def _function_arn(account: str, region: str, name: str, qualifier: "str | None") -> "str | None":
    """The ARN of the function moto holds under `name` (a name, partial or full ARN), else None."""
    from moto.awslambda.models import lambda_backends

    if name.startswith("arn:"):
        parts = name.split(":")
        if len(parts) >= 5:
            region, account = parts[3] or region, parts[4] or account
    try:
        fn = lambda_backends[account][region].get_function(name, qualifier)
    except Exception:  # noqa: BLE001 - any lookup failure means "not held": moto answers
        return None
    return getattr(fn, "function_arn", None) or name


def wrap(app: Callable) -> LambdaInvocations:
    """`app` with Lambda Invoke answered here (scripts/emulator.py)."""
    return LambdaInvocations(app)
