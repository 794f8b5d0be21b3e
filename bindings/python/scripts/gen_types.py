#!/usr/bin/env python3
"""Generate ``acp_host/_schema.py`` (the typed event payloads) from ``schema/events.schema.json``.

    python3 bindings/python/scripts/gen_types.py           # rewrite _schema.py
    python3 bindings/python/scripts/gen_types.py --check   # exit 1 if _schema.py is stale

Stdlib only, runnable from any directory, importable (``generate(schema) -> str``; the drift test
regenerates in memory). The output is for Python >= 3.9 with the stdlib only:

- an object becomes a ``TypedDict``; its optional keys go in a ``total=False`` subclass of a
  private ``_XRequired`` class (``Required``/``NotRequired`` need 3.11);
- ``const``/``enum`` strings become ``Literal[...]``, ``oneOf``/``anyOf`` a ``Union`` alias,
  ``[T, null]`` ``Optional[T]``; ``Any``/``Dict[str, Any]`` only where the schema is open;
- a tagged variant (schemars: ``{"$ref": X, "properties": {tag: {"const": v}}}``) becomes a class
  inheriting ``X`` plus ``tag: Literal[v]``, so mypy narrows the union on ``u[tag] == v``;
- the catch-all member of an open tagged union (``{tag: string, not: {known tags}}``) is left out
  of the ``Union``: kept, it would stop the narrowing. Such values still arrive at runtime;
- per event kind: ``<Kind>Event``, a ``Protocol`` of the event envelope whose ``kind`` is that
  ``Literal`` and whose ``data`` is that kind's payload; ``AnyEvent`` is their ``Union``.

Definitions are written in schema order; a class's bases come first. Names used before they are
defined are quoted in module-level aliases (class bodies need no quoting: the module uses
``from __future__ import annotations``).
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "schema" / "events.schema.json"
OUT = ROOT / "bindings" / "python" / "python" / "acp_host" / "_schema.py"
REGENERATE = "python3 bindings/python/scripts/gen_types.py (or scripts/gen-types)"

WIDTH = 100
# Names the generated module itself uses: a definition may not shadow them.
RESERVED = {"Any", "Dict", "List", "Literal", "Optional", "Protocol", "Tuple", "TypedDict", "Union",
            "AnyEvent", "EventKind", "EVENT_KINDS", "EventData", "EventEnvelope", "SessionUpdateKind"}


class SchemaError(Exception):
    """The schema uses a shape this generator does not translate (fix the generator)."""


def pascal(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", s) if p)


def first_paragraph(desc: Optional[str]) -> str:
    if not desc:
        return ""
    return " ".join(desc.strip().split("\n\n")[0].split())


def first_sentence(desc: Optional[str]) -> str:
    para = first_paragraph(desc)
    # A sentence ends at a stop followed by a capital (so "e.g. `x`" does not end one).
    m = re.match(r"(.+?[.!?])(\s+[A-Z]|$)", para)
    return m.group(1) if m else para


def docstring(text: str, indent: str) -> List[str]:
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = textwrap.wrap(text, WIDTH - len(indent) - 6, break_on_hyphens=False, break_long_words=False)
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [indent + ln for ln in lines[1:]] + [f'{indent}"""']


def comment(text: str, indent: str = "") -> List[str]:
    if not text:
        return []
    width = WIDTH - len(indent) - 3
    return [f"{indent}#: {ln}" for ln in textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)]


def literal(values: Sequence[Any]) -> str:
    # Spelled as a Union of one-value Literals: mypy reads it the same, and mypy.stubtest (run on
    # the whole package) accepts such an alias only when it is a Union at runtime too.
    parts = [f"Literal[{json.dumps(v)}]" for v in values]
    return parts[0] if len(parts) == 1 else "Union[" + ", ".join(parts) + "]"


def union(members: List[str]) -> str:
    seen: List[str] = []
    for m in members:
        if m not in seen:
            seen.append(m)
    if "Any" in seen:
        return "Any"
    return seen[0] if len(seen) == 1 else "Union[" + ", ".join(seen) + "]"


def optional(t: str) -> str:
    return t if t in ("Any", "None") or t.startswith("Optional[") else f"Optional[{t}]"


def assignment(name: str, expr: str) -> List[str]:
    """``name = expr``, one item a line when too long (only a top-level ``X[a, b, ...]`` is split)."""
    line = f"{name} = {expr}"
    if len(line) <= WIDTH or not expr.endswith("]") or "[" not in expr:
        return [line]
    head, inner = expr[: expr.index("[") + 1], expr[expr.index("[") + 1 : -1]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:i].strip())
            start = i + 1
    items.append(inner[start:].strip())
    return [f"{name} = {head}"] + [f"    {it}," for it in items] + ["]"]


def ref_name(node: Dict[str, Any]) -> str:
    ref = str(node["$ref"])
    prefix = "#/$defs/"
    if not ref.startswith(prefix):
        raise SchemaError(f"unsupported $ref {ref!r}")
    return ref[len(prefix):]


def is_catch_all(node: Any) -> bool:
    """schemars' "any other tag" member of an open tagged union."""
    return isinstance(node, dict) and "not" in node


def tag_of(node: Dict[str, Any]) -> Optional[Tuple[str, Any]]:
    """``(key, value)`` when ``node`` is an object variant distinguished by one ``const`` key."""
    props = node.get("properties") or {}
    consts = [(k, v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v]
    return consts[0] if len(consts) == 1 else None


class Generator:
    def __init__(self, schema: Dict[str, Any]) -> None:
        self.schema = schema
        self.defs: Dict[str, Any] = schema.get("$defs", {})
        clash = RESERVED.intersection(self.defs)
        if clash:
            raise SchemaError(f"definitions shadow generated names: {sorted(clash)}")
        self.blocks: List[List[str]] = []
        self.emitted: Set[str] = set()
        self.in_progress: Set[str] = set()
        self.taken: Set[str] = set(self.defs) | RESERVED
        self.public: List[str] = []
        self.classes: Set[str] = set()
        # name -> its member classes, for objects with tagged variants (see emit_object_union)
        self.union_members: Dict[str, List[str]] = {}

    # ------------------------------------------------------------------ names
    def fresh(self, name: str) -> str:
        """A new class name: ``name``, or ``nameVariant`` if a definition already has it."""
        if name in self.taken:
            name += "Variant"
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def ref(self, name: str, alias: bool) -> str:
        """A reference to a definition; quoted in a module-level alias if not yet defined."""
        if name not in self.defs:
            raise SchemaError(f"$ref to a missing definition {name!r}")
        inlined = self.trivial(name)
        if inlined is not None:
            return self.ref(inlined, alias) if inlined in self.defs else inlined
        return f'"{name}"' if alias and name not in self.emitted else name

    def trivial(self, name: str) -> Optional[str]:
        """What a definition that is one literal or another definition's name stands for: such
        definitions are written in place (mypy.stubtest does not accept them as aliases)."""
        node = self.defs[name]
        members = node.get("oneOf") or node.get("anyOf") if isinstance(node, dict) else None
        if members is not None and not node.get("properties"):
            kept = [m for m in members if not is_catch_all(m)]
            node = kept[0] if len(kept) == 1 else node
        if not isinstance(node, dict):
            return None
        if "const" in node:
            return literal([node["const"]])
        if isinstance(node.get("enum"), list) and len(node["enum"]) == 1 and node["enum"][0] is not None:
            return literal(node["enum"])
        if set(node) - {"description", "title"} == {"$ref"}:
            return ref_name(node)
        return None

    def resolve(self, name: str) -> str:
        """A definition's name, following definitions that only name another one."""
        seen = {name}
        target = self.trivial(name)
        while target is not None and target in self.defs:
            if target in seen:
                raise SchemaError(f"{name}: a cycle of aliases")
            seen.add(target)
            name, target = target, self.trivial(target)
        return name

    def emit_def(self, name: str) -> None:
        if name in self.emitted:
            return
        if self.trivial(name) is not None:
            self.emitted.add(name)
            return
        if name in self.in_progress:
            raise SchemaError(f"{name} inherits from itself")
        self.in_progress.add(name)
        self.emit_named(name, self.defs[name], first_paragraph(self.defs[name].get("description")))
        self.in_progress.discard(name)
        self.emitted.add(name)
        self.public.append(name)

    # ------------------------------------------------------------------ definitions
    def emit_named(self, name: str, node: Any, doc: str) -> None:
        if isinstance(node, dict) and node.get("properties") is not None and self.is_object(node):
            variants = node.get("oneOf") or node.get("anyOf")
            if variants:
                self.emit_object_union(name, node, variants, doc)
            else:
                self.emit_class(name, node, [], doc)
            return
        expr = self.type_expr(node, name, alias=True)
        members = (node.get("oneOf") or node.get("anyOf") or []) if isinstance(node, dict) else []
        if any(is_catch_all(m) for m in members):
            doc += " Other tags may arrive too (not typed)."
        if expr.startswith('"'):
            # A bare string would not be an alias: define the target first.
            target = expr.strip('"')
            if target in self.in_progress:
                raise SchemaError(f"{name} is an alias of itself")
            self.emit_def(target)
            expr = target
        self.blocks.append(comment(doc) + assignment(name, expr))

    @staticmethod
    def is_object(node: Dict[str, Any]) -> bool:
        t = node.get("type", "object")
        return t == "object" or (isinstance(t, list) and "object" in t)

    def emit_class(self, name: str, node: Dict[str, Any], bases: List[str], doc: str,
                   skip: Sequence[str] = ()) -> None:
        """A TypedDict for an object schema (its bases, if any, are emitted first)."""
        for key in node.get("properties", {}):
            if keyword.iskeyword(key) or not key.isidentifier():
                raise SchemaError(f"{name}.{key}: not a Python identifier (needs the functional TypedDict form)")
        if "$ref" in node:
            base = self.resolve(ref_name(node))
            self.emit_def(base)
            if base not in self.classes:
                raise SchemaError(f"{name}: its $ref {base} is not an object")
            bases = bases + [base]
        props = {k: v for k, v in node.get("properties", {}).items() if k not in skip}
        required = set(node.get("required", []))
        fields_req = [(k, v) for k, v in props.items() if k in required]
        fields_opt = [(k, v) for k, v in props.items() if k not in required]
        base_list = ", ".join(bases) if bases else "TypedDict"
        self.classes.add(name)
        lines: List[str] = []
        if fields_req and fields_opt:
            req_name = f"_{name.lstrip('_')}Required"
            self.taken.add(req_name)
            lines += [f"class {req_name}({base_list}):"] + self.fields(name, fields_req) + ["", ""]
            lines += [f"class {name}({req_name}, total=False):"]
            lines += self.doc_then(doc, self.fields(name, fields_opt))
        elif fields_opt:
            lines += [f"class {name}({base_list}, total=False):"]
            lines += self.doc_then(doc, self.fields(name, fields_opt))
        else:
            lines += [f"class {name}({base_list}):"]
            lines += self.doc_then(doc, self.fields(name, fields_req) if fields_req else ([] if doc else ["    pass"]))
        self.blocks.append(lines)

    @staticmethod
    def doc_then(doc: str, body: List[str]) -> List[str]:
        head = docstring(doc, "    ")
        return head + ([""] if head and body else []) + body

    def fields(self, owner: str, fields: List[Tuple[str, Any]]) -> List[str]:
        out: List[str] = []
        for key, node in fields:
            if key != "_meta" and isinstance(node, dict):
                out += comment(first_sentence(node.get("description")), "    ")
            out.append(f"    {key}: {self.type_expr(node, owner + pascal(key), alias=False)}")
        return out

    def emit_object_union(self, name: str, node: Dict[str, Any], variants: List[Any], doc: str) -> None:
        """An object with shared properties and tagged variants: a class per variant (shared
        fields + the variant's ref + its tag) and ``name`` = their Union."""
        members = [v for v in variants if not is_catch_all(v)]
        tag_keys = {t[0] for t in (tag_of(v) for v in members if isinstance(v, dict)) if t}
        shared = self.fresh(f"_{name}Fields")
        self.emit_class(shared, node, [], "", skip=sorted(tag_keys))
        names = [self.emit_variant(name, v, [shared]) for v in members]
        self.union_members[name] = names
        open_note = " Other tags may arrive too (not typed)." if len(members) < len(variants) else ""
        self.blocks.append(comment(doc + open_note) + assignment(name, union(names)))

    def emit_variant(self, union_name: str, node: Any, bases: List[str]) -> str:
        """One member of a union of objects, as a class; returns its name."""
        if not isinstance(node, dict):
            raise SchemaError(f"{union_name}: unsupported union member {node!r}")
        tag = tag_of(node)
        if tag is None and "$ref" in node and not node.get("properties") and not bases:
            target = self.resolve(ref_name(node))
            self.emit_def(target)
            return target
        # Named after its tag value, else its title (e.g. IdleStateUpdate's `stopReason: null`).
        label = str(tag[1]) if tag else node.get("title")
        if not label:
            raise SchemaError(f"{union_name}: an object variant without a const tag or a title: {node!r}")
        name = self.fresh(union_name + pascal(label))
        doc = first_paragraph(node.get("description"))
        if not doc and tag:
            doc = f"``{tag[0]}: {json.dumps(tag[1])}``."
        base = self.resolve(ref_name(node)) if "$ref" in node else None
        if base is not None:
            self.emit_def(base)
        if base is not None and base in self.union_members:
            # The tag over a union of variants (StateUpdate's `idle` over IdleStateUpdate's stop
            # reasons): one class per member, so both tags narrow.
            untagged = {k: v for k, v in node.items() if k != "$ref"}
            subs = []
            for m in self.union_members[base]:
                sub = self.fresh(name + (m[len(base):] if m.startswith(base) else m))
                self.emit_class(sub, untagged, bases + [m], doc)
                self.emitted.add(sub)
                self.public.append(sub)
                subs.append(sub)
            self.blocks.append(comment(doc) + assignment(name, union(subs)))
            self.emitted.add(name)
            self.public.append(name)
            return name
        self.emit_class(name, node, bases, doc)
        self.emitted.add(name)
        self.public.append(name)
        return name

    # ------------------------------------------------------------------ type expressions
    def type_expr(self, node: Any, ctx: str, alias: bool) -> str:
        """The Python type of ``node``; ``ctx`` names classes made for inline objects."""
        if node is True or node == {}:
            return "Any"
        if not isinstance(node, dict):
            raise SchemaError(f"{ctx}: unsupported schema {node!r}")
        if "$ref" in node:
            if node.get("properties"):
                name = self.emit_variant(ctx, node, [])
                return name
            return self.ref(ref_name(node), alias)
        if "const" in node:
            return literal([node["const"]])
        if "enum" in node:
            values = [v for v in node["enum"] if v is not None]
            lit = literal(values)
            return optional(lit) if None in node["enum"] else lit
        variants = node.get("oneOf") or node.get("anyOf")
        if variants is not None and not node.get("properties"):
            return self.union_expr(variants, ctx, alias)
        t = node.get("type")
        if t is None:
            return "Any"
        types = t if isinstance(t, list) else [t]
        nullable = "null" in types
        parts = [self.simple_type(x, node, ctx, alias) for x in types if x != "null"]
        if not parts:
            return "None"
        expr = union(parts)
        return optional(expr) if nullable else expr

    def simple_type(self, t: str, node: Dict[str, Any], ctx: str, alias: bool) -> str:
        if t == "string":
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "array":
            items = node.get("items", True)
            return f"List[{self.type_expr(items, ctx + 'Item', alias)}]"
        if t == "object":
            if node.get("properties"):
                name = self.fresh(ctx)
                self.emit_class(name, node, [], first_paragraph(node.get("description")))
                self.emitted.add(name)
                self.public.append(name)
                return name
            extra = node.get("additionalProperties", True)
            return f"Dict[str, {self.type_expr(extra, ctx + 'Value', alias) if isinstance(extra, dict) else 'Any'}]"
        raise SchemaError(f"{ctx}: unsupported type {t!r}")

    def union_expr(self, variants: List[Any], ctx: str, alias: bool) -> str:
        nullable = False
        consts: List[Any] = []
        members: List[str] = []
        for v in variants:
            if is_catch_all(v):
                continue
            if isinstance(v, dict) and v.get("type") == "null" and len(v) <= 2:
                nullable = True
            elif isinstance(v, dict) and "const" in v:
                consts.append(v["const"])
            elif isinstance(v, dict) and v.get("properties") and tag_of(v):
                members.append(self.emit_variant(ctx, v, []))
            else:
                members.append(self.type_expr(v, ctx, alias))
        if consts:
            members.insert(0, literal(consts))
        expr = union(members) if members else "None"
        return optional(expr) if nullable and expr != "None" else expr

    # ------------------------------------------------------------------ events
    def kinds(self) -> List[Tuple[str, str]]:
        """``(kind, data type)`` per event kind, in schema order."""
        out = []
        for kind, node in self.schema.get("properties", {}).items():
            if isinstance(node, dict) and set(node) <= {"$ref", "description"} and "$ref" in node:
                name = self.resolve(ref_name(node))
                self.emit_def(name)
            else:
                name = self.fresh(pascal(kind) + "Data")
                self.emit_named(name, node, first_paragraph(node.get("description")))
                self.emitted.add(name)
                self.public.append(name)
            out.append((kind, name))
        return out

    def session_update_kinds(self) -> List[str]:
        node = self.defs.get("SessionUpdate")
        if not isinstance(node, dict) or "oneOf" not in node:
            raise SchemaError("SessionUpdate is not a tagged union")
        return [t[1] for t in (tag_of(v) for v in node["oneOf"] if not is_catch_all(v)) if t]

    def event_blocks(self, kinds: List[Tuple[str, str]]) -> None:
        names = [k for k, _ in kinds]
        self.blocks.append(comment("Every event kind (docs/EVENTS.md). New kinds may be added: "
                                   "consumers must tolerate others at runtime.")
                           + assignment("EventKind", literal(names)))
        self.blocks.append(["EVENT_KINDS: Tuple[EventKind, ...] = ("]
                           + [f"    {json.dumps(k)}," for k in names] + [")"])
        self.blocks.append(comment("The ``sessionUpdate`` tags of ``SessionUpdate`` this schema knows.")
                           + assignment("SessionUpdateKind", literal(self.session_update_kinds())))
        self.blocks.append(["class EventData(TypedDict):"]
                           + docstring("Each event kind's ``data`` type (the schema's root: one key per kind).", "    ")
                           + [""] + [f"    {k}: {t}" for k, t in kinds])
        self.blocks.append(ENVELOPE.strip("\n").splitlines())
        event_names = []
        for kind, data in kinds:
            cls = self.fresh(pascal(kind) + "Event")
            event_names.append(cls)
            lines = [f"class {cls}(EventEnvelope, Protocol):"]
            article = "An" if kind[0] in "aeiou" else "A"
            lines += docstring(f"{article} ``{kind}`` event: ``data`` is ``{data}``.", "    ") + [""]
            lines += ["    @property", f"    def kind(self) -> Literal[{json.dumps(kind)}]: ...",
                      "    @property", f"    def data(self) -> {data}: ..."]
            if kind == "session_update":
                lines += ["    @property", "    def update_kind(self) -> str: ..."]
            self.blocks.append(lines)
        self.blocks.append(comment("Any event: narrow on ``ev.kind`` to type ``ev.data``.")
                           + assignment("AnyEvent", union(event_names)))
        self.public += ["EventKind", "EVENT_KINDS", "SessionUpdateKind", "EventData", "EventEnvelope"]
        self.public += event_names + ["AnyEvent"]

    # ------------------------------------------------------------------ module
    def module(self) -> str:
        for name in self.defs:
            self.emit_def(name)
        kinds = self.kinds()
        self.event_blocks(kinds)
        header = HEADER.format(source="schema/events.schema.json", regenerate=REGENERATE)
        body = "\n\n\n".join("\n".join(b) for b in self.blocks)
        exports = "\n".join(f"    {json.dumps(n)}," for n in self.public)
        return f"{header}\n\n\n{body}\n\n\n__all__ = [\n{exports}\n]\n"


HEADER = '''\
# Generated by bindings/python/scripts/gen_types.py from {source}: do not edit.
# Regenerate with: {regenerate}
"""The ACP and host payload types of every event kind, as TypedDicts (see ``acp_host.types``)."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Protocol, Tuple, TypedDict, Union'''

# The envelope every event has (docs/EVENTS.md), as ``acp_host.Event`` exposes it. The runtime
# class is one native type; these Protocols only tell the type checker which ``data`` goes with
# which ``kind``. ``_native.Event`` satisfies ``EventEnvelope`` structurally.
ENVELOPE = '''
class EventEnvelope(Protocol):
    """What every event has (``acp_host.Event``); ``AnyEvent`` members narrow ``kind``/``data``."""

    @property
    def seq(self) -> int: ...
    @property
    def at(self) -> str: ...
    @property
    def agent(self) -> int: ...
    @property
    def session(self) -> Optional[str]: ...
    @property
    def turn(self) -> Optional[int]: ...
    @property
    def kind(self) -> str: ...
    @property
    def replay(self) -> bool: ...
    @property
    def data(self) -> Any: ...
    @property
    def data_json(self) -> str: ...
    @property
    def update_kind(self) -> Optional[str]: ...
    def to_json(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
'''


def generate(schema: Dict[str, Any]) -> str:
    """The text of ``_schema.py`` for ``schema`` (the parsed events.schema.json)."""
    return Generator(schema).module()


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    p.add_argument("--schema", type=Path, default=SCHEMA)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    text = generate(json.loads(args.schema.read_text(encoding="utf-8")))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    if not args.out.exists() or args.out.read_text(encoding="utf-8") != text:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
