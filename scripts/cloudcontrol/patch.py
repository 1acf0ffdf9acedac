"""RFC 6902 JSON Patch over RFC 6901 JSON Pointers, plus the schema-path helpers.

Cloud Control's UpdateResource takes a JSON Patch whose paths are relative to the
resource's properties ("/VisibilityTimeout", "/Tags/0/Value"). `apply_patch` returns a
patched deep copy and raises PatchError (the message says which operation failed).

Schema paths ("Tags/*/Key", see schema.py) select values with "*" for every array
element: `select`, `remove_paths` and `values_differ` work on those.
"""

from __future__ import annotations

import copy
from typing import Any

_MISSING = object()


class PatchError(ValueError):
    pass


def parse_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}: it must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list, token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    i = int(token)
    limit = len(container) + (1 if for_add else 0)
    if i >= limit:
        raise PatchError(f"array index {i} out of range")
    return i


def _parent(doc: Any, tokens: list[str], pointer: str) -> tuple[Any, str]:
    node = doc
    for t in tokens[:-1]:
        if isinstance(node, dict) and t in node:
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, for_add=False)]
        else:
            raise PatchError(f"path {pointer!r} does not exist")
    return node, tokens[-1]


def get_pointer(doc: Any, pointer: str) -> Any:
    node = doc
    for t in parse_pointer(pointer):
        if isinstance(node, dict) and t in node:
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, for_add=False)]
        else:
            raise PatchError(f"path {pointer!r} does not exist")
    return node


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = parse_pointer(pointer)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise PatchError(f"cannot add at {pointer!r}: the parent is not an object or array")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, last = _parent(doc, tokens, pointer)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"cannot remove {pointer!r}: it does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, for_add=False))
    raise PatchError(f"cannot remove {pointer!r}: it does not exist")


def apply_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise PatchError("a JSON Patch document is a JSON array of operations")
    doc = copy.deepcopy(document)
    for n, op in enumerate(operations):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or not isinstance(op.get("path"), str):
            raise PatchError(f"operation {n}: needs string members 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {n} ({kind} {path}): missing 'value'")
        if kind in ("move", "copy") and not isinstance(op.get("from"), str):
            raise PatchError(f"operation {n} ({kind} {path}): missing 'from'")
        try:
            if kind == "add":
                doc = _add(doc, path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                doc, _ = _remove(doc, path)
            elif kind == "replace":
                get_pointer(doc, path)  # must exist
                doc, _ = _remove(doc, path) if parse_pointer(path) else (doc, None)
                doc = _add(doc, path, copy.deepcopy(op["value"]))
            elif kind == "move":
                if path != op["from"] and path.startswith(op["from"] + "/"):
                    raise PatchError("cannot move a value into one of its children")
                doc, value = _remove(doc, op["from"])
                doc = _add(doc, path, value)
            elif kind == "copy":
                doc = _add(doc, path, copy.deepcopy(get_pointer(doc, op["from"])))
            elif kind == "test":
                if get_pointer(doc, path) != op["value"]:
                    raise PatchError(f"test failed: {path} is not {op['value']!r}")
            else:
                raise PatchError(f"unknown op {kind!r}")
        except PatchError as e:
            raise PatchError(f"operation {n} ({kind} {path}): {e}") from None
    return doc


# -- schema paths ("Tags/*/Key") ------------------------------------------------------------
def select(doc: Any, path: list[str]) -> list[Any]:
    """Every value a schema path selects (empty when it selects nothing)."""
    nodes = [doc]
    for seg in path:
        nxt = []
        for node in nodes:
            if seg == "*" and isinstance(node, list):
                nxt.extend(node)
            elif isinstance(node, dict) and seg in node:
                nxt.append(node[seg])
        nodes = nxt
    return nodes


def remove_paths(doc: dict, paths: list[list[str]]) -> dict:
    """A deep copy of `doc` without the values the schema paths select."""
    out = copy.deepcopy(doc)
    for path in paths:
        _remove_path(out, path)
    return out


def _remove_path(node: Any, path: list[str]) -> bool:
    if not path:
        return False
    seg, rest = path[0], path[1:]
    if seg == "*" and isinstance(node, list):
        return any([_remove_path(item, rest) for item in node])
    if isinstance(node, dict) and seg in node:
        if not rest:
            del node[seg]
            return True
        removed = _remove_path(node[seg], rest)
        if removed and node[seg] == {}:
            del node[seg]  # nothing left but what was removed (Code/ZipFile -> no Code)
        return removed
    return False


def values_differ(old: dict, new: dict, path: list[str]) -> bool:
    return select(old, path) != select(new, path)
