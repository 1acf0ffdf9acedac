"""Lambda Invoke on the emulator: a WSGI middleware in front of moto.

moto runs Lambda code only through Docker, which the test machines do not have. This
middleware answers Invoke itself for every function moto knows, records the request, and
RUNS the function when its runtime is one cdkd's local Lambda runtime supports (Node.js
nodejs18.x and later, Python python3.9 and later): the code moto holds, its handler,
environment, timeout and memory go to `cdkd local run-invocation` (the binary named by
CDKD_LAMBDA_RUNNER), with the emulator as the handler's AWS endpoint. Any other runtime
(or no runner configured) is answered as if the handler returned null, and a test can play
the handler: read the recorded envelope, PUT a cfn-response to its ResponseURL.

    POST   /2015-03-31/functions/{name}/invocations   Lambda Invoke (the real API path)
    GET    /_lambda/invocations[?function=NAME]        the recorded invocations, oldest first
    DELETE /_lambda/invocations                        forget them

An Invoke of a function moto does not hold goes to moto unchanged, which answers
ResourceNotFoundException as Lambda does. Otherwise the answer is Lambda's for the invocation
type: RequestResponse 200 with the function's result (a failed function: 200 with
X-Amz-Function-Error: Unhandled and Lambda's error document; LogType Tail: the last 4 KB of
the logs in X-Amz-Log-Result), Event 202 at once with the function run in a background
thread, DryRun 204. `POST /moto-api/reset` forgets the invocations too.

Each recorded invocation is a JSON object:

    {"function": "<name or ARN as called>", "functionArn": "...", "qualifier": null,
     "invocationType": "RequestResponse", "account": "...", "region": "...",
     "payload": <the request body as JSON, or as a string when it is not JSON>,
     "time": <unix seconds>,
     "outcome": null until a run ends, then {"status": "success" | "error" | "init-error" |
                "timeout" | "exited" | "runner-error" | "not-run", "logs": "...", ...}}
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import uuid
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
        fn = _function(account, region, name, qualifier)
        if fn is None:
            return None  # moto answers: ResourceNotFoundException
        function_arn = getattr(fn, "function_arn", None) or name
        # The body has to be read before moto could see it, so read it only once we answer.
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length > 0 else b""
        text = raw.decode("utf-8", errors="replace")
        try:
            payload: Any = json.loads(text) if text else None
        except ValueError:
            payload = text
        invocation_type = environ.get("HTTP_X_AMZ_INVOCATION_TYPE") or "RequestResponse"
        record = {
            "function": name,
            "functionArn": function_arn,
            "qualifier": qualifier,
            "invocationType": invocation_type,
            "account": account,
            "region": region,
            "payload": payload,
            "time": time.time(),
            "outcome": None,
        }
        with self.lock:
            self.recorded.append(record)
        request_id = _request_id()
        if invocation_type == "DryRun":
            return _answer(start_response, "204 No Content", b"", request_id)
        runnable = _runnable(fn)
        if invocation_type == "Event":
            if runnable:
                threading.Thread(target=self._run, args=(fn, raw, record, environ), daemon=True).start()
            else:
                self._finish(record, {"status": "not-run"})
            return _answer(start_response, "202 Accepted", b"", request_id)
        headers = [("X-Amz-Executed-Version", "$LATEST"), ("Content-Type", "application/json")]
        if not runnable:
            self._finish(record, {"status": "not-run"})
            return _answer(start_response, "200 OK", b"null", request_id, headers)
        outcome = self._run(fn, raw, record, environ)
        if (environ.get("HTTP_X_AMZ_LOG_TYPE") or "") == "Tail":
            tail = (outcome.get("logs") or "").encode()[-4096:]
            headers.append(("X-Amz-Log-Result", base64.b64encode(tail).decode()))
        if outcome.get("status") == "success":
            body = (outcome.get("payload") or "null").encode()
        else:
            headers.append(("X-Amz-Function-Error", "Unhandled"))
            error = outcome.get("error") or {"errorType": "Runtime.Unavailable", "errorMessage": outcome.get("errorMessage", "the function could not be run")}
            body = json.dumps(error).encode()
        return _answer(start_response, "200 OK", body, request_id, headers)

    def _finish(self, record: dict, outcome: dict) -> None:
        with self.lock:
            record["outcome"] = outcome

    def _run(self, fn: Any, event: bytes, record: dict, environ: dict) -> dict:
        outcome = run_function(fn, event, environ)
        self._finish(record, outcome)
        return outcome

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


def _function(account: str, region: str, name: str, qualifier: "str | None") -> Any:
    """The function moto holds under `name` (a name, partial or full ARN), else None."""
    from moto.awslambda.models import lambda_backends

    if name.startswith("arn:"):
        parts = name.split(":")
        if len(parts) >= 5:
            region, account = parts[3] or region, parts[4] or account
    try:
        return lambda_backends[account][region].get_function(name, qualifier)
    except Exception:  # noqa: BLE001 - any lookup failure means "not held": moto answers
        return None


# -- running a function with cdkd's local Lambda runtime ----------------------------------
RUNTIME = re.compile(r"^(?:nodejs(\d+)\.x|python3\.(\d+))$")


def runtime_supported(runtime: "str | None") -> bool:
    """nodejs18.x and later, python3.9 and later: what `cdkd local run-invocation` runs."""
    match = RUNTIME.match(runtime or "")
    if not match:
        return False
    node, python = match.groups()
    return int(node) >= 18 if node else int(python) >= 9


def _runner() -> "str | None":
    runner = os.environ.get("CDKD_LAMBDA_RUNNER") or ""
    return runner if runner and os.path.isfile(runner) and os.access(runner, os.X_OK) else None


def _runnable(fn: Any) -> bool:
    return (
        _runner() is not None
        and runtime_supported(getattr(fn, "run_time", None))
        and getattr(fn, "package_type", "Zip") != "Image"
        and bool(getattr(fn, "code_bytes", b""))
    )


def run_function(fn: Any, event: bytes, environ: dict) -> dict:
    """One invocation of `fn` through `cdkd local run-invocation`; its outcome document."""
    runner = _runner()
    if runner is None:
        return {"status": "runner-error", "errorMessage": "CDKD_LAMBDA_RUNNER names no executable"}
    match = CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    access_key = match.group(1) if match else "testing"
    port = os.environ.get("MOTO_PORT", "5000")
    timeout = int(getattr(fn, "timeout", 3) or 3)
    with tempfile.TemporaryDirectory(prefix="cdkd-emulator-lambda-") as scratch:
        code = os.path.join(scratch, "code.zip")
        with open(code, "wb") as out:
            out.write(fn.code_bytes)
        env_file = os.path.join(scratch, "environment.json")
        with open(os.open(env_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            json.dump({k: str(v) for k, v in (fn.environment_vars or {}).items()}, out)
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        child_env.update(
            {
                # The handler's SDK calls reach this emulator, as the caller's account.
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                "AWS_ACCESS_KEY_ID": access_key,
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_REGION": fn.region,
                "AWS_EC2_METADATA_DISABLED": "true",
                "AWS_CONFIG_FILE": "/dev/null",
                "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            }
        )
        command = [
            runner, "local", "run-invocation",
            "--code", code,
            "--runtime", fn.run_time,
            "--handler", fn.handler or "",
            "--timeout", str(timeout),
            "--memory", str(getattr(fn, "memory_size", 128) or 128),
            "--function-name", fn.function_name,
            "--function-arn", fn.function_arn,
            "--environment", env_file,
        ]
        try:
            done = subprocess.run(
                command, input=event, capture_output=True, cwd=scratch, env=child_env,
                timeout=timeout + 60,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return {"status": "runner-error", "errorMessage": f"{runner}: {error}"}
    lines = [l for l in done.stdout.decode("utf-8", errors="replace").splitlines() if l.strip()]
    try:
        outcome = json.loads(lines[-1]) if lines else None
    except ValueError:
        outcome = None
    if not isinstance(outcome, dict):
        message = done.stderr.decode("utf-8", errors="replace").strip()[-2000:]
        outcome = {"status": "runner-error", "errorMessage": message or f"the runner exited with {done.returncode}"}
    import sys

    print(
        f"lambda: {fn.function_name} ({fn.run_time}) -> {outcome.get('status')}\n{outcome.get('logs') or outcome.get('errorMessage') or ''}",
        file=sys.stderr,
        flush=True,
    )
    return outcome


def _deliver_sns(invocations: LambdaInvocations) -> None:
    """SNS topics' Lambda subscriptions: moto delivers a notification in process (through
    Docker), so a function the runner can run gets it from the runner instead, asynchronously
    as SNS delivers, recorded like an `Event` invocation (`"source": "sns"`)."""
    from moto.awslambda.models import LambdaBackend

    original = LambdaBackend.send_sns_message

    def send_sns_message(self: Any, function_name: str, message: str, subject: "str | None" = None, qualifier: "str | None" = None) -> None:
        fn = self._lambdas.get_function_by_name_or_arn_with_qualifier(function_name, qualifier)
        if not _runnable(fn):
            return original(self, function_name, message, subject=subject, qualifier=qualifier)
        event = {"Records": [{
            "EventVersion": "1.0",
            "EventSource": "aws:sns",
            "Sns": {
                "Type": "Notification",
                "MessageId": str(uuid.uuid4()),
                "Subject": subject,
                "Message": message,
                "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                "MessageAttributes": {},
            },
        }]}
        record = {
            "function": function_name,
            "functionArn": getattr(fn, "function_arn", None) or function_name,
            "qualifier": qualifier,
            "invocationType": "Event",
            "source": "sns",
            "account": fn.account_id,
            "region": fn.region,
            "payload": event,
            "time": time.time(),
            "outcome": None,
        }
        with invocations.lock:
            invocations.recorded.append(record)
        raw = json.dumps(event).encode()
        threading.Thread(target=invocations._run, args=(fn, raw, record, {}), daemon=True).start()

    LambdaBackend.send_sns_message = send_sns_message  # type: ignore[method-assign]


def wrap(app: Callable) -> LambdaInvocations:
    """`app` with Lambda Invoke answered here (scripts/emulator.py), and SNS deliveries to
    Lambda run the same way."""
    invocations = LambdaInvocations(app)
    _deliver_sns(invocations)
    return invocations
