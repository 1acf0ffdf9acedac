"""Fault injection for the Cloud Control emulator, switched on over HTTP by a test.

    POST   /_cloudcontrol/faults   add faults (JSON object below); answers {"ids": [...]}
    GET    /_cloudcontrol/faults   every fault with its `fired` count, and the settings
    DELETE /_cloudcontrol/faults   remove every fault (same as {"reset": true})

The POST body is a JSON object; every key it has is applied, in this order:

    "reset": true          remove every fault first (settings go back to their defaults)
    "clear": {"TypeName": T}   remove the faults scoped to type T
    "throttle": N | {"count": N, "TypeName": T, "Operation": OP}
        the next N matching API calls answer ThrottlingException (HTTP 400, the real
        error shape) and do nothing; the SDK's standard retry absorbs up to 2 of them
    "error": {"Code": "ServiceInternalErrorException", "Message": "...", "Status": 500,
              "count": N, "TypeName": T, "Operation": OP}
        the same for any Cloud Control error code (Status defaults to 500 for the
        server-fault codes, 400 otherwise)
    "fail_create" / "fail_update" / "fail_delete":
        {"TypeName": T, "ErrorCode": "InvalidRequest", "StatusMessage": "...", "count": N}
        the next N matching requests are accepted (IN_PROGRESS), change nothing, and then
        report FAILED with that handler error code (default GeneralServiceException) and
        status message; a list of such objects adds several
    "polls": K | {"polls": K, "TypeName": T, "Operation": OP, "count": N}
        matching new requests answer IN_PROGRESS to K GetResourceRequestStatus calls
        before their final status (the default is 1; $CDKD_CLOUDCONTROL_POLLS changes
        it). Without "count" it holds until reset; with it, for the next N requests.
        The most specific match wins (TypeName and Operation, then either, then none).
    "validate": false      stop checking desired states against the schema (required
                           and unknown top-level properties); true turns it back on

Scopes: "TypeName" limits a fault to one resource type (for GetResourceRequestStatus and
CancelResourceRequest, the type of the request named); "Operation" to an API call
("CreateResource", "GetResource", ...) or, equally, to CREATE / UPDATE / DELETE. Tests
that run in parallel against one emulator should scope their faults (by a type only
they use) and give them a count, and not reset each other's.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import Any

SERVER_FAULTS = {
    "ServiceInternalErrorException",
    "HandlerInternalFailureException",
    "HandlerFailureException",
    "NetworkFailureException",
    "ConcurrentModificationException",
}
API_OPERATION = {"CREATE": "CreateResource", "UPDATE": "UpdateResource", "DELETE": "DeleteResource"}
HANDLER_ERROR_CODES = {
    "NotUpdatable", "InvalidRequest", "AccessDenied", "UnauthorizedTaggingOperation",
    "InvalidCredentials", "AlreadyExists", "NotFound", "ResourceConflict", "Throttling",
    "ServiceLimitExceeded", "NotStabilized", "GeneralServiceException", "ServiceInternalError",
    "ServiceTimeout", "NetworkFailure", "InternalFailure",
}  # fmt: skip
MAX_KEPT = 500  # spent faults kept for GET, at most


class FaultError(ValueError):
    """A malformed fault request (answered with HTTP 400)."""


@dataclass
class Fault:
    id: str
    kind: str  # "error", "fail", "polls"
    type_name: str | None = None
    operation: str | None = None  # API name or CREATE/UPDATE/DELETE
    count: int | None = None  # None: until reset
    fired: int = 0
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.count is None or self.fired < self.count

    def matches(self, api_operation: str | None, operation: str | None, type_name: str | None) -> bool:
        if self.type_name is not None and self.type_name != type_name:
            return False
        if self.operation is not None and self.operation not in (api_operation, operation):
            return False
        return self.live

    def specificity(self) -> int:
        return (self.type_name is not None) + (self.operation is not None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "fired": self.fired, "count": self.count}
        if self.type_name:
            out["TypeName"] = self.type_name
        if self.operation:
            out["Operation"] = self.operation
        out.update(self.params)
        return out


def _int(value: Any, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FaultError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return value


def _default_polls() -> int:
    try:
        return max(0, int(os.environ.get("CDKD_CLOUDCONTROL_POLLS", "1")))
    except ValueError:
        return 1


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._faults: list[Fault] = []
        self.validate = True
        self.default_polls = _default_polls()

    # -- configuration (HTTP) ----------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self.validate = True
            self.default_polls = _default_polls()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "faults": [f.to_json() for f in self._faults],
                "settings": {"validate": self.validate, "default_polls": self.default_polls},
            }

    def configure(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise FaultError("the body must be a JSON object")
        known = {"reset", "clear", "throttle", "error", "fail_create", "fail_update", "fail_delete", "polls", "validate"}
        unknown = sorted(set(body) - known)
        if unknown:
            raise FaultError(f"unknown keys {unknown}; known: {sorted(known)}")
        new: list[Fault] = []
        # Parse everything before changing anything: a bad body changes nothing.
        if "throttle" in body:
            spec = body["throttle"]
            spec = {"count": spec} if not isinstance(spec, dict) else dict(spec)
            spec.setdefault("Code", "ThrottlingException")
            spec.setdefault("Message", "Rate exceeded")
            spec.setdefault("Status", 400)
            new.append(self._error(spec))
        if "error" in body:
            for spec in body["error"] if isinstance(body["error"], list) else [body["error"]]:
                new.append(self._error(spec))
        for key in ("fail_create", "fail_update", "fail_delete"):
            if key in body:
                for spec in body[key] if isinstance(body[key], list) else [body[key]]:
                    new.append(self._fail(key[5:].upper(), spec))
        if "polls" in body:
            new.append(self._polls(body["polls"]))
        if "validate" in body and not isinstance(body["validate"], bool):
            raise FaultError("validate must be true or false")
        clear = body.get("clear")
        if clear is not None and not (isinstance(clear, dict) and isinstance(clear.get("TypeName"), str)):
            raise FaultError('clear wants {"TypeName": "..."}')

        with self._lock:
            if body.get("reset"):
                self._faults.clear()
                self.validate = True
                self.default_polls = _default_polls()
            if clear is not None:
                self._faults = [f for f in self._faults if f.type_name != clear["TypeName"]]
            if "validate" in body:
                self.validate = body["validate"]
            for f in new:
                f.id = f"f{next(self._ids)}"
                if f.kind == "polls" and f.type_name is None and f.operation is None and f.count is None:
                    self.default_polls = f.params["polls"]  # a plain {"polls": K}: the new default
                else:
                    self._faults.append(f)
            self._trim()
        return {"ids": [f.id for f in new]}

    @staticmethod
    def _scope(spec: dict) -> dict[str, Any]:
        type_name, operation = spec.get("TypeName"), spec.get("Operation")
        if type_name is not None and not isinstance(type_name, str):
            raise FaultError("TypeName must be a string")
        if operation is not None and not isinstance(operation, str):
            raise FaultError("Operation must be a string")
        count = spec.get("count")
        if count is not None:
            count = _int(count, "count", 1)
        return {"type_name": type_name, "operation": operation, "count": count}

    def _error(self, spec: Any) -> Fault:
        if not isinstance(spec, dict):
            raise FaultError("an error fault is a JSON object")
        code = spec.get("Code")
        if not isinstance(code, str) or not code:
            raise FaultError("an error fault needs a Code (e.g. ThrottlingException)")
        status = _int(spec.get("Status", 500 if code in SERVER_FAULTS else 400), "Status", 400)
        scope = self._scope(spec)
        if scope["count"] is None:
            scope["count"] = 1
        message = str(spec.get("Message") or f"Injected {code}")
        return Fault("", "error", params={"Code": code, "Message": message, "Status": status}, **scope)

    def _fail(self, operation: str, spec: Any) -> Fault:
        if not isinstance(spec, dict):
            raise FaultError(f"fail_{operation.lower()} is a JSON object (or a list of them)")
        code = spec.get("ErrorCode", "GeneralServiceException")
        if code not in HANDLER_ERROR_CODES:
            raise FaultError(f"ErrorCode {code!r} is not a handler error code: {sorted(HANDLER_ERROR_CODES)}")
        scope = self._scope({**spec, "Operation": operation})
        if scope["count"] is None:
            scope["count"] = 1
        message = str(spec.get("StatusMessage") or f"Injected {operation} failure")
        return Fault("", "fail", params={"ErrorCode": code, "StatusMessage": message}, **scope)

    def _polls(self, spec: Any) -> Fault:
        if not isinstance(spec, dict):
            spec = {"polls": spec}
        polls = _int(spec.get("polls"), "polls")
        return Fault("", "polls", params={"polls": polls}, **self._scope(spec))

    def _trim(self) -> None:
        spent = [f for f in self._faults if not f.live]
        if len(spent) > MAX_KEPT:
            drop = {id(f) for f in spent[: len(spent) - MAX_KEPT]}
            self._faults = [f for f in self._faults if id(f) not in drop]

    # -- consulted by the emulator -------------------------------------------------------
    def take_error(self, api_operation: str, type_name: str | None) -> dict[str, Any] | None:
        """An injected API error for this call ({"Code", "Message", "Status"}), if any."""
        with self._lock:
            for f in self._faults:
                if f.kind == "error" and f.matches(api_operation, None, type_name):
                    f.fired += 1
                    return dict(f.params)
        return None

    def take_failure(self, operation: str, type_name: str) -> dict[str, Any] | None:
        """An injected handler failure ({"ErrorCode", "StatusMessage"}), if any."""
        with self._lock:
            for f in self._faults:
                if f.kind == "fail" and f.matches(API_OPERATION[operation], operation, type_name):
                    f.fired += 1
                    return dict(f.params)
        return None

    def polls_for(self, operation: str, type_name: str) -> int:
        with self._lock:
            best: Fault | None = None
            for f in self._faults:
                if f.kind == "polls" and f.matches(API_OPERATION[operation], operation, type_name):
                    if best is None or f.specificity() > best.specificity():
                        best = f
            if best is None:
                return self.default_polls
            best.fired += 1
            return best.params["polls"]
