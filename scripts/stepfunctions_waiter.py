"""Step Functions executions of the state machines the Cloud Control emulator holds.

cdkd creates AWS::StepFunctions::StateMachine through Cloud Control, which this emulator keeps
in its generic store (scripts/cloudcontrol/), so moto's Step Functions never sees them, and
moto would not run a Task state anyway. The CDK's provider framework (custom_resources.Provider
with an isComplete handler) starts its waiter state machine from its onEvent handler and relies
on the execution: a Task invoking the framework's isComplete Lambda, retried (Retry) until it
answers, with a Catch to an onTimeout Task. This middleware runs exactly that much of Amazon
States Language for such state machines, in a background thread:

    Task   Resource: a Lambda function ARN, or arn:aws:states:::lambda:invoke with
           Parameters.FunctionName (and Payload / Payload.$ "$"); the invocation is a real
           Lambda Invoke sent to this emulator (so it runs, scripts/lambda-invocations.md);
           Retry (ErrorEquals, IntervalSeconds, MaxAttempts, BackoffRate), Catch (ErrorEquals,
           Next, ResultPath), Next / End
    Pass   Result, Next / End
    Succeed, Fail

Any other state fails the execution (States.Runtime), said in the emulator's log.

    POST / X-Amz-Target: AWSStepFunctions.StartExecution       for a Cloud Control state machine
    POST / X-Amz-Target: AWSStepFunctions.DescribeExecution    for an execution started here

Everything else (and a state machine moto holds) goes to moto unchanged.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Callable

TARGET = "AWSStepFunctions."
JSON = "application/x-amz-json-1.0"
# The Runtime API and our own endpoint are on loopback: never through a proxy.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class StepFunctionsWaiter:
    """WSGI middleware: StartExecution / DescribeExecution of Cloud Control state machines."""

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.executions: dict[str, dict] = {}

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target not in (TARGET + "StartExecution", TARGET + "DescribeExecution"):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length > 0 else b""
        try:
            params = json.loads(raw or b"{}")
        except ValueError:
            params = {}
        answered = None
        if target.endswith("StartExecution"):
            answered = self._start(environ, params)
        else:
            with self.lock:
                execution = self.executions.get(params.get("executionArn", ""))
            if execution is not None:
                answered = {k: v for k, v in execution.items() if not k.startswith("_")}
        if answered is None:
            # Not ours: moto reads the body we consumed from a fresh stream.
            import io

            environ["wsgi.input"] = io.BytesIO(raw)
            environ["CONTENT_LENGTH"] = str(len(raw))
            return self.app(environ, start_response)
        body = json.dumps(answered).encode()
        start_response("200 OK", [("Content-Type", JSON), ("Content-Length", str(len(body))), ("x-amzn-RequestId", str(uuid.uuid4()))])
        return [body]

    def _start(self, environ: dict, params: dict) -> "dict | None":
        arn = params.get("stateMachineArn") or ""
        if _moto_holds(arn):
            return None
        definition = _cloudcontrol_definition(environ, arn)
        if definition is None:
            return None
        name = params.get("name") or str(uuid.uuid4())
        parts = arn.split(":")
        execution_arn = ":".join(parts[:5] + ["execution", parts[-1], name]) if len(parts) >= 7 else f"{arn}:{name}"
        execution = {
            "executionArn": execution_arn,
            "stateMachineArn": arn,
            "name": name,
            "status": "RUNNING",
            "startDate": time.time(),
            "input": params.get("input") or "{}",
        }
        with self.lock:
            self.executions[execution_arn] = execution
        auth = environ.get("HTTP_AUTHORIZATION", "")
        threading.Thread(target=self._run, args=(execution, definition, auth), daemon=True).start()
        return {"executionArn": execution_arn, "startDate": execution["startDate"]}

    def _run(self, execution: dict, definition: dict, auth: str) -> None:
        try:
            output = run_machine(definition, json.loads(execution["input"]), auth)
            update = {"status": "SUCCEEDED", "output": json.dumps(output)}
        except StatesError as error:
            update = {"status": "FAILED", "error": error.name, "cause": error.cause}
        except Exception as error:  # noqa: BLE001 - an emulator bug fails the execution, said
            update = {"status": "FAILED", "error": "States.Runtime", "cause": f"emulator: {error!r}"}
        update["stopDate"] = time.time()
        print(f"stepfunctions: {execution['executionArn']} {update['status']} {update.get('error', '')}", file=sys.stderr, flush=True)
        with self.lock:
            execution.update(update)


class StatesError(Exception):
    def __init__(self, name: str, cause: str) -> None:
        super().__init__(f"{name}: {cause}")
        self.name = name
        self.cause = cause


def _endpoint() -> str:
    return f"http://127.0.0.1:{os.environ.get('MOTO_PORT', '5000')}"


def _moto_holds(arn: str) -> bool:
    from moto.stepfunctions.models import stepfunctions_backends

    parts = arn.split(":")
    if len(parts) < 7:
        return False
    try:
        stepfunctions_backends[parts[4]][parts[3]].describe_state_machine(arn)
        return True
    except Exception:  # noqa: BLE001 - not held
        return False


def _cloudcontrol_definition(environ: dict, arn: str) -> "dict | None":
    """The definition of the Cloud Control state machine `arn`, through GetResource."""
    body = json.dumps({"TypeName": "AWS::StepFunctions::StateMachine", "Identifier": arn}).encode()
    request = urllib.request.Request(
        _endpoint() + "/",
        data=body,
        method="POST",
        headers={
            "X-Amz-Target": "CloudApiService.GetResource",
            "Content-Type": JSON,
            "Authorization": environ.get("HTTP_AUTHORIZATION", ""),
        },
    )
    try:
        with OPENER.open(request, timeout=30) as answer:
            described = json.loads(answer.read())
    except Exception:  # noqa: BLE001 - not a Cloud Control state machine
        return None
    properties = json.loads(described.get("ResourceDescription", {}).get("Properties") or "{}")
    text = properties.get("DefinitionString")
    definition = properties.get("Definition")
    if isinstance(text, str):
        definition = json.loads(text)
    return definition if isinstance(definition, dict) else None


def _invoke(function: str, payload: Any, auth: str) -> Any:
    """A real Lambda Invoke through this emulator; the result, or StatesError."""
    from urllib.parse import quote

    request = urllib.request.Request(
        f"{_endpoint()}/2015-03-31/functions/{quote(function, safe='')}/invocations",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": auth, "X-Amz-Invocation-Type": "RequestResponse"},
    )
    try:
        with OPENER.open(request, timeout=960) as answer:
            text = answer.read().decode() or "null"
            failed = answer.headers.get("X-Amz-Function-Error")
    except urllib.error.HTTPError as error:
        raise StatesError("Lambda.ServiceException", error.read().decode(errors="replace")) from None
    if failed:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = {}
        raise StatesError(doc.get("errorType") or "Lambda.Unknown", text)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _matches(equals: list, name: str) -> bool:
    return "States.ALL" in equals or name in equals or (name.startswith("States.") is False and "States.TaskFailed" in equals)


def _task(state: dict, data: Any, auth: str) -> Any:
    resource = state.get("Resource", "")
    if resource.startswith("arn:aws:states:::lambda:invoke"):
        params = state.get("Parameters") or {}
        function = params.get("FunctionName")
        payload = data if params.get("Payload.$") == "$" or "Payload" not in params else params["Payload"]
        return {"Payload": _invoke(function, payload, auth), "StatusCode": 200}
    if ":lambda:" in resource and ":function:" in resource:
        return _invoke(resource, data, auth)
    raise StatesError("States.Runtime", f"the emulator runs Lambda Tasks only, not {resource}")


def run_machine(definition: dict, data: Any, auth: str) -> Any:
    states = definition.get("States") or {}
    name = definition.get("StartAt")
    while True:
        state = states.get(name)
        if state is None:
            raise StatesError("States.Runtime", f"no state {name!r}")
        kind = state.get("Type")
        if kind == "Succeed":
            return data
        if kind == "Fail":
            raise StatesError(state.get("Error", "States.Fail"), state.get("Cause", ""))
        if kind == "Pass":
            data = state.get("Result", data)
        elif kind == "Task":
            try:
                data = _with_retry(state, data, auth)
            except StatesError as error:
                catcher = next((c for c in state.get("Catch") or [] if _matches(c.get("ErrorEquals") or [], error.name)), None)
                if catcher is None:
                    raise
                info = {"Error": error.name, "Cause": error.cause}
                path = catcher.get("ResultPath", "$")
                if path == "$":
                    data = info
                elif isinstance(path, str) and path.startswith("$.") and isinstance(data, dict):
                    data = {**data, path[2:]: info}
                name = catcher["Next"]
                continue
        else:
            raise StatesError("States.Runtime", f"the emulator does not run {kind} states ({name})")
        if state.get("End"):
            return data
        name = state.get("Next")


def _with_retry(state: dict, data: Any, auth: str) -> Any:
    attempts: dict[int, int] = {}
    while True:
        try:
            return _task(state, data, auth)
        except StatesError as error:
            for index, retrier in enumerate(state.get("Retry") or []):
                if not _matches(retrier.get("ErrorEquals") or [], error.name):
                    continue
                done = attempts.get(index, 0)
                if done >= int(retrier.get("MaxAttempts", 3)):
                    raise
                attempts[index] = done + 1
                interval = float(retrier.get("IntervalSeconds", 1)) * float(retrier.get("BackoffRate", 2.0)) ** done
                time.sleep(interval)
                break
            else:
                raise


def wrap(app: Callable) -> StepFunctionsWaiter:
    """`app` with Cloud Control state machines executed here (scripts/emulator.py)."""
    return StepFunctionsWaiter(app)
