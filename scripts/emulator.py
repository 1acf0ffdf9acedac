"""Launcher and helpers for the local AWS emulator (moto in server mode).

Run it with the Python of the emulator venv (scripts/emulator does this):

    emulator.py serve --host 127.0.0.1 --port 5000 [--latency-ms N]
        Serve moto's WSGI app with werkzeug, answering every request N ms after it
        arrived (moto's own processing counted inside them), with the
        Cloud Control API emulator (cloudcontrol_emulator.py), Lambda Invoke
        (lambda_invocations.py: recorded, and run with cdkd's local Lambda runtime) and
        Step Functions executions of Cloud Control state machines (stepfunctions_waiter.py)
        in front of it.
    emulator.py free-port [--host 127.0.0.1]
        Print a TCP port that is free right now.
    emulator.py wait URL [--timeout S] [--pid PID]
        Poll URL until it answers (any HTTP status) or S seconds pass; give up
        early when PID dies. Exit 0 when it answered, 1 otherwise.
    emulator.py ping URL
        Exit 0 when URL answers (any HTTP status) within 5 s, 1 otherwise.

The latency is injected inside the server (a WSGI middleware, LatencyMiddleware), not by a proxy: this
kernel has no netem, and a proxy adds its own Nagle/delayed-ACK stalls. Each request
sleeps in its own werkzeug thread, so parallel requests are delayed in parallel, the
way network round trips are.
"""

import argparse
import os
import socket
import sys
import time
import urllib.error
import urllib.request


def cmd_free_port(args: argparse.Namespace) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((args.host, 0))
        print(s.getsockname()[1])
    return 0


def _answers(url: str, timeout: float) -> bool:
    # No proxies: the emulator is on loopback whatever HTTP(S)_PROXY says.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as resp:
            resp.read()
        return True
    except urllib.error.HTTPError:
        return True  # it answered, with an error status: it is up
    except (OSError, ValueError):
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cmd_wait(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if args.pid and not _pid_alive(args.pid):
            return 1
        if _answers(args.url, timeout=5.0):
            return 0
        time.sleep(0.1)
    return 1


def cmd_ping(args: argparse.Namespace) -> int:
    return 0 if _answers(args.url, timeout=5.0) else 1


# WSGI environ key: when the request's connection was accepted (time.monotonic()).
ARRIVED_AT = "cdkd.emulator.arrived_at"


class LatencyMiddleware:
    """WSGI middleware: answer each request `delay_s` after it reached the server (its
    connection's arrival, else its arrival at this middleware), the way a real service
    answers a call in N ms whatever its own work inside them.

    The app runs first and its whole response is built; the middleware then sleeps whatever
    is left of the N ms (nothing when the app took longer). Sleeping *before* the app
    instead would add moto's processing time to every round trip, and since moto serves
    requests one at a time under the GIL, that processing piles up when many calls arrive
    together: a benchmark of parallel calls would measure moto's throughput, not the N ms
    round trips it asked for. The sleep releases the GIL, so parallel requests wait in
    parallel."""

    def __init__(self, app, delay_s: float) -> None:
        self.app = app
        self.delay_s = delay_s

    def __call__(self, environ, start_response):
        answer_at = environ.get(ARRIVED_AT, time.monotonic()) + self.delay_s
        result = self.app(environ, start_response)
        try:
            body = list(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        remaining = answer_at - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        return body


class AtomicConditionalWrites:
    """WSGI middleware: serialize conditional writes (If-Match / If-None-Match on PUT, POST and
    DELETE), which S3 applies atomically but moto checks-then-writes without a lock, so two
    racing writers could both win. Reads and unconditional writes stay concurrent. The lock
    covers the whole response body, which is where moto may do the write."""

    def __init__(self, app) -> None:
        import threading

        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        conditional = environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE") and (
            "HTTP_IF_MATCH" in environ or "HTTP_IF_NONE_MATCH" in environ
        )
        if not conditional:
            return self.app(environ, start_response)
        with self.lock:
            return list(self.app(environ, start_response))


def _skip_per_request_rescans() -> None:
    """Memoise two lookups moto repeats on every request although their answer never changes
    while the server runs: the list of its service packages (a directory listing plus ~180
    stat calls, asked twice per request to route it) and a response class's method names
    (inspect.getmembers). Together they were about half of moto's time per request, and
    moto serves requests one at a time under the GIL, so they capped how many calls the
    emulator answers per second: with latency injected, a benchmark of many parallel calls
    measured that cap instead of the round trips. Same answers, computed once."""
    import functools

    from moto import backends
    from moto.core import responses

    modules = frozenset(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    responses.method_names_from_class = functools.lru_cache(maxsize=None)(
        responses.method_names_from_class
    )


def _keep_modified_rds_subnet_groups() -> None:
    """moto 5.2.5's ModifyDBSubnetGroup takes the group out of its table and never puts it
    back, so the group a modify answered for is gone for every later call. Real RDS keeps it:
    the same call, putting the group back under its name."""
    from moto.rds.models import RDSBackend

    modify = RDSBackend.modify_db_subnet_group

    def keeping(self, subnet_name, description, subnets):  # type: ignore[no-untyped-def]
        group = modify(self, subnet_name, description, subnets)
        self.subnet_groups[subnet_name] = group
        return group

    RDSBackend.modify_db_subnet_group = keeping


def cmd_serve(args: argparse.Namespace) -> int:
    # Own session: a Ctrl-C in the shell that ran `scripts/emulator start` must not
    # reach the server; `scripts/emulator stop` ends it by pid.
    try:
        os.setsid()
    except OSError:
        pass

    os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    # moto builds some URLs (SQS queue URLs, ...) from MOTO_PORT; moto_server sets it too.
    os.environ["MOTO_PORT"] = str(args.port)

    from werkzeug.serving import run_simple

    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )

    class NoDelayRequestHandler(MotoRequestHandler):
        # TCP_NODELAY on every accepted socket (socketserver.StreamRequestHandler.setup):
        # werkzeug writes the status/headers and the body separately, and Nagle plus the
        # client's delayed ACK would otherwise add ~40 ms to some small responses.
        disable_nagle_algorithm = True

        # The moment the connection reached the server, for LatencyMiddleware: the N ms of
        # a round trip then also cover werkzeug's thread start and request parsing. One
        # request per connection (werkzeug answers every request with Connection: close).
        def setup(self) -> None:
            self.arrived_at = time.monotonic()
            super().setup()

        def make_environ(self):
            environ = super().make_environ()
            environ[ARRIVED_AT] = self.arrived_at
            return environ

    _skip_per_request_rescans()
    _keep_modified_rds_subnet_groups()

    # The same app moto_server builds (moto/server.py main()).
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # type: ignore[attr-defined]

    # The Cloud Control API, which moto lacks, answered in front of moto on the same port
    # (scripts/cloudcontrol_emulator.py); every other request goes to moto unchanged.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cloudcontrol_emulator import wrap as with_cloudcontrol

    served = with_cloudcontrol(AtomicConditionalWrites(app))
    # Lambda Invoke recorded for tests and, for Node.js / Python functions, run with cdkd's
    # local Lambda runtime (scripts/lambda_invocations.py): moto runs code only through Docker.
    from lambda_invocations import wrap as with_lambda_invocations

    served = with_lambda_invocations(served)
    # Executions of the state machines Cloud Control holds (the CDK provider framework's
    # isComplete waiter): Lambda Tasks with Retry / Catch (scripts/stepfunctions_waiter.py).
    from stepfunctions_waiter import wrap as with_stepfunctions_waiter

    served = with_stepfunctions_waiter(served)
    if args.latency_ms > 0:
        served = LatencyMiddleware(served, args.latency_ms / 1000.0)

    print(
        f"cdkd emulator: moto + Cloud Control on http://{args.host}:{args.port} "
        f"latency={args.latency_ms}ms pid={os.getpid()}",
        file=sys.stderr,
        flush=True,
    )
    run_simple(
        args.host,
        args.port,
        served,
        threaded=True,
        use_reloader=False,
        request_handler=NoDelayRequestHandler,
    )
    return 0


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="emulator.py")
    sub = parser.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("serve")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency-ms", type=int, default=0)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("free-port")
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(func=cmd_free_port)

    p = sub.add_parser("wait")
    p.add_argument("url")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--pid", type=int, default=0)
    p.set_defaults(func=cmd_wait)

    p = sub.add_parser("ping")
    p.add_argument("url")
    p.set_defaults(func=cmd_ping)

    args = parser.parse_args(argv)
    if getattr(args, "latency_ms", 0) < 0:
        parser.error("--latency-ms must be >= 0")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
