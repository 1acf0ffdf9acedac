# cdkd's local Lambda runtime for Python: imports the handler named by _HANDLER from
# LAMBDA_TASK_ROOT and loops on the Lambda Runtime API at AWS_LAMBDA_RUNTIME_API, as the
# Lambda service's own Python runtime does. Written for cdkd (src/lambda_runtime/bootstrap.rs
# embeds it).
import importlib
import json
import os
import sys
import time
import traceback
import urllib.request

API = "http://%s/2018-06-01/runtime" % os.environ.get("AWS_LAMBDA_RUNTIME_API", "")
# The Runtime API is on loopback: never through a proxy the environment names.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(route, body, headers=None):
    request = urllib.request.Request(API + route, data=body, method="POST", headers=headers or {})
    with OPENER.open(request) as answer:
        answer.read()


def error_document(error, error_type=None):
    return {
        "errorMessage": str(error),
        "errorType": error_type or type(error).__name__,
        "stackTrace": traceback.format_tb(error.__traceback__),
    }


class Context:
    def __init__(self, request_id, function_arn, deadline_ms):
        env = os.environ
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = function_arn
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.aws_request_id = request_id
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.identity = None
        self.client_context = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self):
        return max(0, int(self._deadline_ms - time.time() * 1000))


def load_handler():
    spec = os.environ.get("_HANDLER", "")
    module_path, _, function_name = spec.rpartition(".")
    if not module_path or not function_name:
        return None, (ValueError("Bad handler '%s': expected MODULE.FUNCTION" % spec), "Runtime.MalformedHandlerName")
    sys.path.insert(0, os.environ.get("LAMBDA_TASK_ROOT", os.getcwd()))
    try:
        module = importlib.import_module(module_path.replace("/", "."))
    except Exception as error:  # noqa: BLE001 - reported to the Runtime API as Lambda does
        return None, (error, "Runtime.ImportModuleError")
    handler = getattr(module, function_name, None)
    if not callable(handler):
        return None, (AttributeError("Handler '%s' missing on module '%s'" % (function_name, module_path)), "Runtime.HandlerNotFound")
    return handler, None


def main():
    # Whole lines reach the log (stdout and stderr share it), as Lambda's own runtime writes them.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass
    handler, failure = load_handler()
    if failure is not None:
        error, error_type = failure
        traceback.print_exception(type(error), error, error.__traceback__)
        doc = error_document(error, error_type)
        post("/init/error", json.dumps(doc).encode(), {"Lambda-Runtime-Function-Error-Type": error_type})
        sys.exit(1)
    while True:
        with OPENER.open(API + "/invocation/next") as answer:
            request_id = answer.headers.get("Lambda-Runtime-Aws-Request-Id")
            deadline = float(answer.headers.get("Lambda-Runtime-Deadline-Ms") or 0)
            function_arn = answer.headers.get("Lambda-Runtime-Invoked-Function-Arn")
            os.environ["_X_AMZN_TRACE_ID"] = answer.headers.get("Lambda-Runtime-Trace-Id") or ""
            body = answer.read()
        try:
            event = json.loads(body) if body else None
            result = handler(event, Context(request_id, function_arn, deadline))
            payload = json.dumps(result).encode()
        except Exception as error:  # noqa: BLE001
            traceback.print_exception(type(error), error, error.__traceback__)
            doc = error_document(error)
            post("/invocation/%s/error" % request_id, json.dumps(doc).encode(), {"Lambda-Runtime-Function-Error-Type": doc["errorType"]})
            continue
        post("/invocation/%s/response" % request_id, payload)


main()
