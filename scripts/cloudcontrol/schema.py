"""Resource-type metadata for the Cloud Control emulator.

Where it comes from, first found wins, per type:

1. The repository's snapshot, data/resource-schemas.json (scripts/gen-resource-schemas
   writes it; $CDKD_CLOUDCONTROL_SCHEMAS names another file): primaryIdentifier,
   additionalIdentifiers, createOnly / writeOnly / readOnly properties of every type.
2. cfn-lint's registry schemas, when the cfnlint package is importable (moto[server]
   installs it into the emulator venv): the same lists, plus `required` and the top-level
   property definitions, which the emulator uses to validate desired states and to pick
   plausible values for read-only properties. Only read, per type, on first use.
3. A few built-in entries (so the emulator still works with neither of the above).

A type found nowhere: an `AWS::` type is refused (TypeNotFoundException) when a schema
source is loaded, as Cloud Control refuses it; any other type (a test's own
`Test::Thing::Widget`) gets primaryIdentifier [Id].

Property paths are kept as in the snapshot: no "/properties/" prefix, "/" between
segments, "*" for every element of an array ("Tags/*/Key").
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "/properties/"
ROOT = Path(__file__).resolve().parent.parent.parent
SNAPSHOT = ROOT / "data" / "resource-schemas.json"

# Used only when neither the snapshot nor cfn-lint is there.
BUILTIN: dict[str, dict] = {
    "AWS::SQS::Queue": {"p": ["QueueUrl"], "r": ["QueueUrl", "Arn"], "c": ["FifoQueue", "QueueName"]},
    "AWS::S3::Bucket": {"p": ["BucketName"], "r": ["Arn", "DomainName"], "c": ["BucketName"]},
    "AWS::Logs::LogGroup": {"p": ["LogGroupName"], "r": ["Arn"], "c": ["LogGroupName"]},
    "AWS::ApiGateway::Resource": {
        "p": ["RestApiId", "ResourceId"],
        "r": ["ResourceId"],
        "c": ["PathPart", "ParentId", "RestApiId"],
    },
    "AWS::ApiGatewayV2::Route": {
        "p": ["ApiId", "RouteId"],
        "r": ["RouteId"],
        "w": ["AuthorizerId", "RequestParameters"],
        "c": ["ApiId"],
    },
}


@dataclass
class TypeSchema:
    type_name: str
    primary: list[str]
    additional: list[list[str]] = field(default_factory=list)
    create_only: list[str] = field(default_factory=list)
    write_only: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    # From cfn-lint's full schema, when there is one:
    required: list[str] = field(default_factory=list)
    properties: dict | None = None  # top-level property definitions
    closed: bool = False  # additionalProperties: false
    source: str = "fallback"

    def property_type(self, name: str) -> str | None:
        """The JSON type of a top-level property ("string", ...), None when unknown."""
        if not self.properties or name not in self.properties:
            return None
        kind = self.properties[name].get("type")
        if isinstance(kind, list):
            return "string" if "string" in kind else (kind[0] if kind else None)
        return kind


def split(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


def _strip_prefix(paths) -> list[str]:
    out = []
    for p in paths or []:
        if isinstance(p, str):
            out.append(p[len(PREFIX) :] if p.startswith(PREFIX) else p.lstrip("/"))
    return out


class SchemaRegistry:
    """Type name -> TypeSchema, loaded lazily and cached."""

    def __init__(self, snapshot: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, TypeSchema | None] = {}
        self._snapshot_path = snapshot or Path(os.environ.get("CDKD_CLOUDCONTROL_SCHEMAS") or SNAPSHOT)
        self._snapshot: dict[str, dict] | None = None
        self._cfnlint_dir: Path | None = None
        self._cfnlint_index: dict[str, str] | None = None
        self._load_sources()

    # -- sources ------------------------------------------------------------------------
    def _load_sources(self) -> None:
        try:
            data = json.loads(self._snapshot_path.read_text(encoding="utf-8"))
            self._snapshot = data["types"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"cloudcontrol: no schema snapshot at {self._snapshot_path} ({e})", file=sys.stderr)
        try:
            spec = importlib.util.find_spec("cfnlint")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            base = Path(list(spec.submodule_search_locations)[0]) / "data" / "schemas"
            try:
                index = json.loads((base / "providers" / "us-east-1.json").read_text(encoding="utf-8"))
                self._cfnlint_dir = base / "resources"
                self._cfnlint_index = index
            except (OSError, ValueError):
                pass

    @property
    def has_source(self) -> bool:
        return self._snapshot is not None or self._cfnlint_index is not None

    def _full_schema(self, type_name: str) -> dict | None:
        if not self._cfnlint_index or type_name not in self._cfnlint_index:
            return None
        try:
            path = self._cfnlint_dir / f"{self._cfnlint_index[type_name]}.json"  # type: ignore[operator]
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    # -- lookup -------------------------------------------------------------------------
    def get(self, type_name: str) -> TypeSchema | None:
        """The schema of a type; None when Cloud Control would not know the type."""
        with self._lock:
            if type_name not in self._cache:
                self._cache[type_name] = self._build(type_name)
            return self._cache[type_name]

    def _build(self, type_name: str) -> TypeSchema | None:
        full = self._full_schema(type_name)
        entry = (self._snapshot or {}).get(type_name)
        if entry is not None:
            schema = TypeSchema(
                type_name,
                primary=list(entry.get("p", [])),
                additional=[list(g) for g in entry.get("a", [])],
                create_only=list(entry.get("c", [])),
                write_only=list(entry.get("w", [])),
                read_only=list(entry.get("r", [])),
                source="snapshot",
            )
        elif full is not None:
            schema = TypeSchema(
                type_name,
                primary=_strip_prefix(full.get("primaryIdentifier")),
                additional=[_strip_prefix(g) for g in full.get("additionalIdentifiers") or []],
                create_only=_strip_prefix(full.get("createOnlyProperties")),
                write_only=_strip_prefix(full.get("writeOnlyProperties")),
                read_only=_strip_prefix(full.get("readOnlyProperties")),
                source="cfn-lint",
            )
        elif type_name in BUILTIN:
            e = BUILTIN[type_name]
            schema = TypeSchema(
                type_name,
                primary=list(e["p"]),
                create_only=list(e.get("c", [])),
                write_only=list(e.get("w", [])),
                read_only=list(e.get("r", [])),
                source="builtin",
            )
        elif type_name.startswith("AWS::") and self.has_source:
            return None
        else:
            return TypeSchema(type_name, primary=["Id"], source="fallback")
        if full is not None:
            schema.required = [r for r in full.get("required") or [] if isinstance(r, str)]
            props = full.get("properties")
            schema.properties = props if isinstance(props, dict) else None
            schema.closed = full.get("additionalProperties") is False and schema.properties is not None
        if not schema.primary:
            schema.primary = ["Id"]
        return schema
