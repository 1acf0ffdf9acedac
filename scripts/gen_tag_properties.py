#!/usr/bin/env python3
"""Write cdkd's stack-tag table (src/engine/deploy/tag_properties.json): for every
CloudFormation resource type that takes tags, the property that carries them and its shape,
so that a deploy can give every resource its stack's tags as CloudFormation propagates them
(src/engine/deploy/stack_tags.rs).

Run through scripts/gen-tag-properties, which installs the pinned cfn-lint into a throwaway
venv and passes its version on the command line:

    gen_tag_properties.py CFN_LINT_VERSION OUTPUT_FILE

The schemas are cfn-lint's package data (cfnlint/data/schemas/providers/us-east-1.json and
resources/<hash>.json), read as files; cfnlint is never imported.

Which property: the schema's `tagging.tagProperty` (default /properties/Tags). A type whose
schema says `taggable: false` is left out. A type with no `tagging` section (older
schemas) is taken when it has a top-level `Tags` property of a known shape. A tag property
below the top level (EC2 `TagSpecifications/*/Tags`) is left out.

Shapes (the table's second column):

    list  an array of {"Key": ..., "Value": ...} objects
    asg   an array of {"Key", "Value", "PropagateAtLaunch"} (AWS::AutoScaling::AutoScalingGroup;
          stack tags are propagated to the group's instances, as CloudFormation does)
    map   an object of key -> value (e.g. AWS::SSM::Parameter `Tags`, Cognito `UserPoolTags`)

Any other shape is left out (counted on stderr). Output: one JSON object, one type per line,
sorted; deterministic.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PREFIX = "/properties/"


def resolve(schema: dict, node: dict, depth: int = 0) -> dict:
    ref = node.get("$ref")
    if depth < 8 and isinstance(ref, str) and ref.startswith("#/definitions/"):
        target = schema.get("definitions", {}).get(ref[len("#/definitions/"):], {})
        return resolve(schema, target, depth + 1)
    return node


def branches(schema: dict, node: dict) -> list[dict]:
    node = resolve(schema, node)
    alternatives = node.get("oneOf") or node.get("anyOf")
    if isinstance(alternatives, list):
        return [resolve(schema, a) for a in alternatives if isinstance(a, dict)]
    return [node]


def shape(schema: dict, prop: dict) -> str | None:
    prop = resolve(schema, prop)
    types = prop.get("type")
    types = types if isinstance(types, list) else [types]
    if "array" in types:
        for item in branches(schema, prop.get("items") or {}):
            keys = set((item.get("properties") or {}).keys())
            if {"Key", "Value"} <= keys:
                return "asg" if "PropagateAtLaunch" in keys else "list"
        return None
    if "object" in types or prop.get("patternProperties") or prop.get("format") == "json":
        if prop.get("properties"):
            return None  # a structured object (CloudFront AnycastIpList {Items: [...]})
        return "map"
    return None


def entry(schema: dict) -> tuple[str, str] | None | str:
    tagging = schema.get("tagging")
    if isinstance(tagging, dict):
        if tagging.get("taggable") is False:
            return None
        path = tagging.get("tagProperty", PREFIX + "Tags")
    else:
        path = PREFIX + "Tags"
    if not isinstance(path, str) or not path.startswith(PREFIX) or "/" in path[len(PREFIX):]:
        return "skipped"
    name = path[len(PREFIX):]
    prop = (schema.get("properties") or {}).get(name)
    if not isinstance(prop, dict):
        return "skipped" if isinstance(tagging, dict) else None
    found = shape(schema, prop)
    return (name, found) if found else "skipped"


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: gen_tag_properties.py CFN_LINT_VERSION OUTPUT_FILE")
    version, output = sys.argv[1], Path(sys.argv[2])

    import importlib.metadata
    import importlib.util

    installed = importlib.metadata.version("cfn-lint")
    if installed != version:
        sys.exit(f"gen_tag_properties: cfn-lint {installed} installed, {version} wanted")
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("gen_tag_properties: cannot locate the cfnlint package")
    schemas = Path(list(spec.submodule_search_locations)[0]) / "data" / "schemas"
    provider = schemas / "providers" / "us-east-1.json"
    if not provider.is_file():
        sys.exit(f"gen_tag_properties: {provider} not found (cfn-lint layout changed?)")
    hashes = json.loads(provider.read_text(encoding="utf-8"))
    schema_date = ""
    version_file = schemas / "version.json"
    if version_file.is_file():
        schema_date = json.loads(version_file.read_text(encoding="utf-8")).get("schema_date", "")

    lines, skipped = [], []
    for type_name in sorted(hashes):
        schema = json.loads((schemas / "resources" / f"{hashes[type_name]}.json").read_text(encoding="utf-8"))
        found = entry(schema)
        if found == "skipped":
            skipped.append(type_name)
        elif found:
            row = json.dumps(list(found), separators=(",", ":"))
            lines.append(f"{json.dumps(type_name)}:{row}")

    header = {
        "generated_by": "scripts/gen-tag-properties from the CloudFormation resource schemas in "
        f"cfn-lint {version} (us-east-1); do not edit by hand",
        "schema_date": schema_date,
        "shapes": "list: [{Key,Value}], asg: [{Key,Value,PropagateAtLaunch}], map: {key: value}",
    }
    head = json.dumps(header, separators=(",", ":"))[:-1]
    text = head + ',"types":{\n' + ",\n".join(lines) + "\n}}\n"
    json.loads(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(output.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    print(
        f"gen_tag_properties: wrote {len(lines)} types to {output}; left out {len(skipped)} "
        f"taggable types of another shape: {', '.join(skipped)}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
