#!/usr/bin/env python3
"""Write cdkd's resource-type metadata snapshot (data/resource-schemas.json).

Run through scripts/gen-resource-schemas, which installs the pinned cfn-lint into a
throwaway venv and passes its version on the command line:

    gen_resource_schemas.py CFN_LINT_VERSION OUTPUT_FILE

The CloudFormation registry schemas come from cfn-lint's package data:
cfnlint/data/schemas/providers/us-east-1.json maps every resource type available in
us-east-1 to a content hash, and cfnlint/data/schemas/resources/<hash>.json is that
type's provider schema. cfn-lint stores them with its own validation patches already
applied; those patches touch property constraints only, never the four identifier and
mutability lists copied here. This script only reads files: it never imports cfnlint
(so cfn-lint's dependencies need not be installed) and never reads cfn-lint's
download cache.

Output format (one JSON object, one resource type per line, types and keys sorted):

    {"source":"cfn-lint 1.58.0 us-east-1","schema_date":"...","prefix":"/properties/",
    "types":{
    "AWS::S3::Bucket":{"c":["BucketName",...],"p":["BucketName"],"r":["Arn",...],"w":[...]},
    ...
    }}

    p  primaryIdentifier       (order kept: it is the order of a composite identifier)
    a  additionalIdentifiers   (a list of identifier lists)
    c  createOnlyProperties
    w  writeOnlyProperties
    r  readOnlyProperties
    g  further Fn::GetAtt attributes: paths cfn-lint accepts in Fn::GetAtt although they
       are not read-only (cfnlint/schema/_getatts.py: the types whose every property is an
       attribute, and the per-type exceptions), minus those already in r

Every path is written without the common "/properties/" prefix (the "prefix" field):
"/properties/Tags/*/Key" is stored as "Tags/*/Key". The script fails if a schema has a
path that does not start with the prefix, so the prefix can always be put back. Lists
keep the schema's order, minus exact duplicates (a few schemas list a path twice).
Empty or absent lists are omitted.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

PREFIX = "/properties/"
REGION_FILE = "us-east-1.json"
LIST_KEYS = {
    "primaryIdentifier": "p",
    "createOnlyProperties": "c",
    "writeOnlyProperties": "w",
    "readOnlyProperties": "r",
}


def strip(type_name: str, key: str, path: object) -> str:
    if not isinstance(path, str) or not path.startswith(PREFIX) or path == PREFIX:
        sys.exit(f"gen_resource_schemas: {type_name} {key}: unexpected path {path!r}")
    return path[len(PREFIX) :]


def dedup(items: list) -> list:
    seen = set()
    out = []
    for item in items:
        marker = json.dumps(item)
        if marker not in seen:
            seen.add(marker)
            out.append(item)
    return out


def getatt_lists(package: Path) -> tuple[set[str], dict[str, list[str]]]:
    """cfn-lint's GetAtt special cases, read (not imported) from cfnlint/schema/_getatts.py:
    the types whose every property is an attribute, and extra attributes per type."""
    source = package / "schema" / "_getatts.py"
    found: dict[str, object] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("_all_property_types", "_exceptions"):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    if set(found) != {"_all_property_types", "_exceptions"}:
        sys.exit(f"gen_resource_schemas: {source}: GetAtt lists not found (cfn-lint layout changed?)")
    return set(found["_all_property_types"]), dict(found["_exceptions"])


def property_paths(schema: dict, node: dict, path: str, depth: int = 0) -> list[str]:
    """Every attribute path under `node` the way cfn-lint's GetAtts walks it: into objects,
    through local $refs, stopping at arrays of objects or arrays."""
    if depth > 8:
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        target = schema.get("definitions", {}).get(ref[len("#/definitions/"):], {})
        return property_paths(schema, target, path, depth + 1)
    types = node.get("type")
    types = types if isinstance(types, list) else [types]
    if "object" in types:
        out = []
        for name, sub in (node.get("properties") or {}).items():
            out += property_paths(schema, sub, f"{path}/{name}" if path else name, depth + 1)
        return out
    if "array" in types and (node.get("items") or {}).get("type") in ("object", "array"):
        return []
    return [path] if path else []


def getatt_extra(type_name: str, schema: dict, lists: tuple[set[str], dict[str, list[str]]]) -> list[str]:
    every, exceptions = lists
    if type_name in every:
        paths = property_paths(schema, {"type": "object", "properties": schema.get("properties") or {}}, "")
    else:
        paths = list(exceptions.get(type_name, []))
    read_only = {strip(type_name, "readOnlyProperties", p) for p in schema.get("readOnlyProperties") or []}
    return dedup([p for p in paths if p not in read_only])


def entry(type_name: str, schema: dict, lists: tuple[set[str], dict[str, list[str]]]) -> dict:
    out: dict = {}
    for key, short in LIST_KEYS.items():
        paths = schema.get(key) or []
        stripped = dedup([strip(type_name, key, p) for p in paths])
        if stripped:
            out[short] = stripped
    groups = []
    for group in schema.get("additionalIdentifiers") or []:
        ids = dedup([strip(type_name, "additionalIdentifiers", p) for p in group])
        if ids:
            groups.append(ids)
    groups = dedup(groups)
    if groups:
        out["a"] = groups
    extra = getatt_extra(type_name, schema, lists)
    if extra:
        out["g"] = extra
    if "p" not in out:
        sys.exit(f"gen_resource_schemas: {type_name} has no primaryIdentifier")
    return dict(sorted(out.items()))


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: gen_resource_schemas.py CFN_LINT_VERSION OUTPUT_FILE")
    version, output = sys.argv[1], Path(sys.argv[2])

    import importlib.metadata
    import importlib.util

    installed = importlib.metadata.version("cfn-lint")
    if installed != version:
        sys.exit(f"gen_resource_schemas: cfn-lint {installed} installed, {version} wanted")
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gen_resource_schemas: cannot locate the cfnlint package")
    package = Path(list(spec.submodule_search_locations)[0])
    lists = getatt_lists(package)
    schemas = package / "data" / "schemas"
    provider = schemas / "providers" / REGION_FILE
    resources = schemas / "resources"
    if not provider.is_file():
        sys.exit(f"gen_resource_schemas: {provider} not found (cfn-lint layout changed?)")

    hashes = json.loads(provider.read_text(encoding="utf-8"))
    schema_date = ""
    version_file = schemas / "version.json"
    if version_file.is_file():
        schema_date = json.loads(version_file.read_text(encoding="utf-8")).get("schema_date", "")

    lines = []
    for type_name in sorted(hashes):
        schema = json.loads((resources / f"{hashes[type_name]}.json").read_text(encoding="utf-8"))
        if schema.get("typeName") != type_name:
            sys.exit(f"gen_resource_schemas: {type_name}: schema says {schema.get('typeName')!r}")
        body = json.dumps(entry(type_name, schema, lists), separators=(",", ":"), ensure_ascii=False)
        lines.append(f"{json.dumps(type_name)}:{body}")

    header = {
        "source": f"cfn-lint {version} us-east-1",
        "schema_date": schema_date,
        "prefix": PREFIX,
    }
    head = json.dumps(header, separators=(",", ":"))[:-1]
    text = head + ',"types":{\n' + ",\n".join(lines) + "\n}}\n"
    json.loads(text)  # the output must be valid JSON
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    print(
        f"gen_resource_schemas: wrote {len(lines)} types, {len(text.encode())} bytes to {output}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
