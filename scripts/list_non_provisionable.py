#!/usr/bin/env python3
"""Print the resource types whose registry schema declares no handlers (Cloud Control cannot
provision them: DescribeType reports them NON_PROVISIONABLE), as the Rust list in
src/provider/non_provisionable.rs.

    .emulator/venv/bin/python scripts/list_non_provisionable.py [CFNLINT_PACKAGE_DIR]

It reads the same cfn-lint package data as scripts/gen_resource_schemas.py (the us-east-1
provider map and the per-type schemas) and never imports cfnlint.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: "list[str]") -> int:
    if len(argv) > 1:
        root = Path(argv[1])
    else:
        import importlib.util

        spec = importlib.util.find_spec("cfnlint")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("list_non_provisionable: cfn-lint is not installed; pass its package dir")
        root = Path(list(spec.submodule_search_locations)[0])
    schemas = root / "data" / "schemas"
    providers = json.loads((schemas / "providers" / "us-east-1.json").read_text())
    out = []
    for type_name, digest in sorted(providers.items()):
        schema = json.loads((schemas / "resources" / f"{digest}.json").read_text())
        handlers = schema.get("handlers") or {}
        if "create" not in handlers:
            out.append(type_name)
    for t in out:
        print(f'    "{t}",')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
