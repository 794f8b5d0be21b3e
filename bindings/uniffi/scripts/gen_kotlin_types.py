#!/usr/bin/env python3
"""Generate the Kotlin event payload types (``dev.acphost.payloads``) from schema/events.schema.json.

    python3 bindings/uniffi/scripts/gen_kotlin_types.py           # rewrite Payloads.kt
    python3 bindings/uniffi/scripts/gen_kotlin_types.py --check   # exit 1 if Payloads.kt is stale

Stdlib only, offline, runnable from any directory (the drift check of scripts/test-kotlin). The
output decodes with kotlinx.serialization's JSON tree (``JsonElement``): no compiler plugin, and
every decoder is LENIENT by construction:

- an object definition becomes a ``data class``; unknown fields are ignored; an optional field
  that is absent, null or of the wrong shape is ``null``; a missing or wrong required field makes
  the object undecodable (the nearest enclosing union, or the event payload, becomes ``Unknown``);
- a tagged union (``oneOf``/``anyOf`` of ``{"$ref": X, "properties": {tag: {"const": v}}}``)
  becomes a ``sealed interface`` with one class per tag (the fields of ``X`` flattened into it)
  and ``Unknown(raw)`` for unknown tags and members that do not decode; untagged members are
  tried in order;
- a union of string constants becomes a ``sealed interface`` of ``data object``s with a ``value``
  and ``Unknown(raw)`` for values this version does not know;
- per event kind, the payload class implements ``EventPayload``; ``EventPayload.decode(kind,
  data)`` never throws (unknown kinds and undecodable payloads are ``EventPayload.Unknown``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT / "schema" / "events.schema.json"
OUT = ROOT / "bindings" / "uniffi" / "kotlin" / "src" / "main" / "kotlin" / "dev" / "acphost" / "payloads" / "Payloads.kt"
WIDTH = 100

KEYWORDS = {"as", "break", "class", "continue", "do", "else", "false", "for", "fun", "if", "in", "interface",
            "is", "null", "object", "package", "return", "super", "this", "throw", "true", "try", "typealias",
            "typeof", "val", "var", "when", "while"}
# Names the generated file itself uses.
RESERVED = {"EventPayload", "JsonElement", "JsonObject", "JsonPrimitive", "JsonNull", "Json", "List", "String",
            "Long", "Double", "Boolean", "Unknown"}


class SchemaError(Exception):
    """The schema uses a shape this generator does not translate (fix the generator)."""


def pascal(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", str(s)) if p)


def camel(key: str) -> str:
    name = key.lstrip("_")
    name = re.sub(r"[^0-9A-Za-z_]", "_", name) or "field"
    if name[0].isdigit():
        name = "f" + name
    return f"`{name}`" if name in KEYWORDS else name


def first_paragraph(desc: Optional[str]) -> str:
    if not desc:
        return ""
    return " ".join(desc.strip().split("\n\n")[0].split())


def kdoc(desc: Optional[str], indent: str) -> List[str]:
    text = first_paragraph(desc).replace("*/", "*&#47;").replace("/*", "&#47;*")
    if not text:
        return []
    lines = textwrap.wrap(text, WIDTH - len(indent) - 4, break_on_hyphens=False, break_long_words=False)
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**"] + [f"{indent} * {ln}" for ln in lines] + [f"{indent} */"]


def kstr(s: str) -> str:
    return json.dumps(s).replace("$", "\\$")


def ref_name(node: Dict[str, Any]) -> str:
    ref = str(node["$ref"])
    if not ref.startswith("#/$defs/"):
        raise SchemaError(f"unsupported $ref {ref!r}")
    return ref[len("#/$defs/"):]


def tag_of(node: Dict[str, Any]) -> Optional[Tuple[str, Any]]:
    props = node.get("properties") or {}
    consts = [(k, v["const"]) for k, v in props.items() if isinstance(v, dict) and "const" in v]
    return consts[0] if len(consts) == 1 else None


class Field:
    def __init__(self, key: str, ktype: str, decoder: str, required: bool, doc: str) -> None:
        self.key, self.ktype, self.decoder, self.required, self.doc = key, ktype, decoder, required, doc
        self.name = camel(key)


class Generator:
    def __init__(self, schema: Dict[str, Any]) -> None:
        self.schema = schema
        self.defs: Dict[str, Any] = schema.get("$defs", {})
        clash = RESERVED.intersection(self.defs)
        if clash:
            raise SchemaError(f"definitions shadow generated names: {sorted(clash)}")
        self.kinds: Dict[str, str] = {}
        for kind, node in schema.get("properties", {}).items():
            self.kinds[kind] = ref_name(node)
        self.payload_defs = set(self.kinds.values())

    # ------------------------------------------------------------------ classification
    def members(self, node: Dict[str, Any]) -> Optional[List[Any]]:
        return node.get("oneOf") or node.get("anyOf")

    def shape(self, name: str) -> str:
        """object | object_union | union | enum | alias | raw."""
        node = self.defs[name]
        members = self.members(node)
        if node.get("properties") is not None and members:
            return "object_union"
        if node.get("type") == "object" or node.get("properties") is not None:
            return "object"
        if members:
            kept = [m for m in members if not self.catch_all(m)]
            if kept and all(m.get("type") == "string" and isinstance(m.get("const"), str) for m in kept):
                return "enum"
            if kept and all("$ref" in m for m in kept):
                return "union"
            return "raw"
        if isinstance(node.get("enum"), list) and all(isinstance(v, str) for v in node["enum"]):
            return "enum"
        if node.get("type") in ("string", "integer", "number", "boolean") or "$ref" in node:
            return "alias"
        return "raw"

    @staticmethod
    def catch_all(m: Any) -> bool:
        if not isinstance(m, dict):
            return True
        if "not" in m:
            return True
        if "$ref" in m or "const" in m:
            return False
        tag_props = m.get("properties") or {}
        return bool(tag_props) and all("const" not in (v or {}) for v in tag_props.values()) or (
            m.get("type") == "string" and "const" not in m)

    # ------------------------------------------------------------------ types
    def type_of(self, node: Any) -> Tuple[str, str, bool]:
        """(Kotlin type, decoder lambda over a JsonElement `it`, nullable)."""
        if not isinstance(node, dict) or not node:
            return "JsonElement", "{ it }", False
        if "$ref" in node:
            return self.ref_type(ref_name(node))
        members = self.members(node)
        if members:
            non_null = [m for m in members if not (isinstance(m, dict) and m.get("type") == "null")]
            if len(non_null) == 1 and len(members) == 2:
                t, dec, _ = self.type_of(non_null[0])
                return t, dec, True
            return "JsonElement", "{ it }", False
        ty = node.get("type")
        nullable = False
        if isinstance(ty, list):
            nullable = "null" in ty
            rest = [t for t in ty if t != "null"]
            ty = rest[0] if len(rest) == 1 else None
        if ty == "string":
            return "kotlin.String", "D::str", nullable
        if ty == "integer":
            return "kotlin.Long", "D::long", nullable
        if ty == "number":
            return "kotlin.Double", "D::double", nullable
        if ty == "boolean":
            return "kotlin.Boolean", "D::bool", nullable
        if ty == "array":
            it, idec, inull = self.type_of(node.get("items"))
            skip = "true" if node.get("x-deserialize-skip-invalid-items") else "false"
            if inull:
                return f"List<{it}?>", f"{{ D.list(it, {skip}) {{ e -> D.nullable(e, {idec}) }} }}", nullable
            return f"List<{it}>", f"{{ D.list(it, {skip}, {idec}) }}", nullable
        if ty == "object":
            return "JsonObject", "D::obj", nullable
        return "JsonElement", "{ it }", nullable

    def ref_type(self, name: str) -> Tuple[str, str, bool]:
        if name not in self.defs:
            raise SchemaError(f"$ref to a missing definition {name!r}")
        shape = self.shape(name)
        if shape in ("object", "object_union", "union", "enum"):
            return f"§{name}§", f"§{name}§::decode", False
        if shape == "alias":
            node = self.defs[name]
            return self.type_of({k: v for k, v in node.items() if k != "description"})
        return "JsonElement", "{ it }", False

    def fields(self, node: Dict[str, Any], skip: Optional[str] = None) -> List[Field]:
        required = set(node.get("required") or [])
        out: List[Field] = []
        for key, prop in (node.get("properties") or {}).items():
            if key == skip:
                continue
            t, dec, nullable = self.type_of(prop)
            req = key in required and not nullable
            out.append(Field(key, t, dec, req, (prop if isinstance(prop, dict) else {}).get("description", "")))
        return out

    # ------------------------------------------------------------------ emitters
    def data_class(self, name: str, fields: List[Field], doc: str, supers: List[str], indent: str,
                   extra: Optional[Field] = None) -> List[str]:
        out = kdoc(doc, indent)
        all_fields = fields + ([extra] if extra else [])
        sup = (" : " + ", ".join(supers)) if supers else ""
        if not all_fields:
            out.append(f"{indent}data object {name}{sup} {{")
            out.append(f"{indent}    internal fun decode(e: JsonElement): {name} = D.obj(e).let {{ {name} }}")
            out.append(f"{indent}}}")
            return out
        out.append(f"{indent}data class {name}(")
        for f in all_fields:
            out += kdoc(f.doc, indent + "    ")
            if f.required:
                out.append(f"{indent}    val {f.name}: {f.ktype},")
            else:
                out.append(f"{indent}    val {f.name}: {f.ktype}? = null,")
        out.append(f"{indent}){sup} {{")
        out.append(f"{indent}    internal companion object {{")
        out.append(f"{indent}        fun decode(e: JsonElement): {name} {{")
        out.append(f"{indent}            val o = D.obj(e)")
        out.append(f"{indent}            return {name}(")
        for f in fields:
            fn = "req" if f.required else "opt"
            out.append(f"{indent}                D.{fn}(o, {kstr(f.key)}, {f.decoder}),")
        if extra:
            out.append(f"{indent}                ({extra.decoder})(e),")
        out.append(f"{indent}            )")
        out.append(f"{indent}        }}")
        out.append(f"{indent}    }}")
        out.append(f"{indent}}}")
        return out

    def emit_object(self, name: str) -> List[str]:
        node = self.defs[name]
        supers = ["EventPayload"] if name in self.payload_defs else []
        extra = None
        if self.shape(name) == "object_union":
            extra = Field("variant", f"{name}Variant", f"{name}Variant::decode", True,
                          "The variant part (by its tag).")
        out = self.data_class(name, self.fields(node), node.get("description", ""), supers, "", extra)
        if extra:
            out += [""] + self.union(f"{name}Variant", self.members(node) or [], "The variants of [" + name + "].", [])
        return out

    def emit_enum(self, name: str) -> List[str]:
        node = self.defs[name]
        members = self.members(node)
        if members is None:
            values = [(v, "") for v in node["enum"]]
        else:
            values = [(m["const"], m.get("description", "")) for m in members if not self.catch_all(m)]
        out = kdoc(node.get("description", ""), "")
        out.append(f"sealed interface {name} {{")
        out.append("    /** The value on the wire. */")
        out.append("    val value: kotlin.String")
        for (v, doc), vn in zip(values, self._enum_names(values)):
            out += kdoc(doc, "    ")
            out.append(f"    data object {vn} : {name} {{ override val value: kotlin.String get() = {kstr(v)} }}")
        out.append("    /** A value this version does not know (a newer agent): [raw] as sent. */")
        out.append(f"    data class Unknown(val raw: JsonElement) : {name} {{")
        out.append("        override val value: kotlin.String get() = (raw as? JsonPrimitive)?.content ?: raw.toString()")
        out.append("    }")
        out.append("    companion object {")
        out.append(f"        internal fun decode(e: JsonElement): {name} = when ((e as? JsonPrimitive)?.takeIf {{ it.isString }}?.content) {{")
        for (v, _), vn in zip(values, self._enum_names(values)):
            out.append(f"            {kstr(v)} -> {vn}")
        out.append("            else -> Unknown(e)")
        out.append("        }")
        out.append("    }")
        out.append("}")
        return out

    @staticmethod
    def _enum_names(values: List[Tuple[str, str]]) -> List[str]:
        names: List[str] = []
        for v, _ in values:
            vn = pascal(v) or "Empty"
            if vn == "Unknown":
                vn = "UnknownValue"
            while vn in names:
                vn += "_"
            names.append(vn)
        return names

    def union(self, name: str, members: List[Any], doc: str, supers: List[str]) -> List[str]:
        sup = (" : " + ", ".join(supers)) if supers else ""
        out = kdoc(doc, "")
        out.append(f"sealed interface {name}{sup} {{")
        tagged: List[Tuple[str, str, str]] = []  # (tag key, tag value, class name)
        untagged: List[str] = []
        names = set()
        for m in members:
            if self.catch_all(m):
                continue
            tag = tag_of(m)
            if tag is not None:
                key, value = tag
                vn = pascal(value) or "Empty"
            elif "$ref" in m:
                key, value = None, None
                vn = ref_name(m)
            else:
                raise SchemaError(f"{name}: a member without a tag or $ref")
            if vn == "Unknown":
                vn = "UnknownValue"
            if vn in ("List", "JsonElement", "JsonObject", "JsonPrimitive", "D", "Companion"):
                raise SchemaError(f"{name}: a variant named {vn} would shadow a name the decoders use")
            while vn in names:
                vn += "_"
            names.add(vn)
            fields: List[Field] = []
            extra = None
            if "$ref" in m:
                target = ref_name(m)
                if self.shape(target) == "object":
                    fields += self.fields(self.defs[target], skip=key)
                else:
                    t, dec, _ = self.ref_type(target)
                    extra = Field("value", t, dec, True, "")
            fields += self.fields(m, skip=key)
            out += [""] + self.data_class(vn, fields, m.get("description", ""), [name], "    ", extra)
            if key is not None:
                tagged.append((key, value, vn))
            else:
                untagged.append(vn)
        out.append("")
        out.append("    /** A variant this version does not know, or one that did not decode: [raw] as sent. */")
        out.append(f"    data class Unknown(val raw: JsonElement) : {name}")
        out.append("")
        out.append("    companion object {")
        out.append(f"        internal fun decode(e: JsonElement): {name} {{")
        keys = sorted({k for k, _, _ in tagged})
        if len(keys) > 1:
            raise SchemaError(f"{name}: more than one tag key {keys}")
        if keys:
            out.append(f"            val tag = D.tag(e, {kstr(keys[0])})")
            out.append("            val byTag: " + name + "? = runCatching {")
            out.append("                when (tag) {")
            for _, value, vn in tagged:
                out.append(f"                    {kstr(value)} -> {vn}.decode(e)")
            out.append("                    else -> null")
            out.append("                }")
            out.append("            }.getOrNull()")
            out.append("            if (byTag != null) return byTag")
            known = ", ".join(kstr(v) for _, v, _ in tagged)
            out.append(f"            if (tag in setOf({known})) return Unknown(e)")
        for vn in untagged:
            out.append(f"            runCatching {{ {vn}.decode(e) }}.getOrNull()?.let {{ return it }}")
        out.append("            return Unknown(e)")
        out.append("        }")
        out.append("    }")
        out.append("}")
        return out

    def emit_union(self, name: str) -> List[str]:
        node = self.defs[name]
        supers = ["EventPayload"] if name in self.payload_defs else []
        return self.union(name, self.members(node) or [], node.get("description", ""), supers)

    def event_payload(self) -> List[str]:
        out = [
            "/**",
            " * The typed `data` of an event, by its kind (docs/EVENTS.md). Every payload class of a kind",
            " * implements it; [decode] never throws: a kind this version does not know, or data that does",
            " * not decode as its kind's, is [Unknown] with the raw JSON.",
            " */",
            "sealed interface EventPayload {",
            "    /** An unknown kind, or data that did not decode ([reason] says why); [raw] as sent (null: not JSON). */",
            "    data class Unknown(val kind: String, val raw: JsonElement?, val reason: String) : EventPayload",
            "",
            "    companion object {",
            "        /** The event kinds this version has a payload type for. */",
            "        val KINDS: Set<String> = setOf(",
        ]
        for kind in self.kinds:
            out.append(f"            {kstr(kind)},")
        out += [
            "        )",
            "",
            "        /** [data] (JSON text) decoded as the payload of [kind]. Never throws. */",
            "        fun decode(kind: String, data: String): EventPayload {",
            "            val raw = try {",
            "                D.json.parseToJsonElement(data)",
            "            } catch (e: Exception) {",
            "                return Unknown(kind, null, \"not JSON: ${e.message}\")",
            "            }",
            "            return decode(kind, raw)",
            "        }",
            "",
            "        /** [raw] decoded as the payload of [kind]. Never throws. */",
            "        fun decode(kind: String, raw: JsonElement): EventPayload = try {",
            "            when (kind) {",
        ]
        for kind, name in self.kinds.items():
            out.append(f"                {kstr(kind)} -> {name}.decode(raw)")
        out += [
            "                else -> Unknown(kind, raw, \"unknown kind\")",
            "            }",
            "        } catch (e: Exception) {",
            "            Unknown(kind, raw, e.message ?: e.toString())",
            "        }",
            "    }",
            "}",
        ]
        return out

    def support(self) -> List[str]:
        return [
            "/** Thrown inside decoders only; callers see `Unknown` variants (or a `null` optional field). */",
            "internal class PayloadDecodeException(message: String) : Exception(message)",
            "",
            "/** The decoding primitives the generated classes use (lenient: see the file header). */",
            "internal object D {",
            "    val json = Json { ignoreUnknownKeys = true }",
            "",
            "    fun fail(what: String): Nothing = throw PayloadDecodeException(what)",
            "",
            "    fun obj(e: JsonElement): JsonObject = e as? JsonObject ?: fail(\"expected an object\")",
            "",
            "    fun str(e: JsonElement): String =",
            "        (e as? JsonPrimitive)?.takeIf { it.isString }?.content ?: fail(\"expected a string\")",
            "",
            "    fun long(e: JsonElement): Long =",
            "        (e as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull ?: fail(\"expected an integer\")",
            "",
            "    fun double(e: JsonElement): Double =",
            "        (e as? JsonPrimitive)?.takeIf { !it.isString }?.doubleOrNull ?: fail(\"expected a number\")",
            "",
            "    fun bool(e: JsonElement): Boolean =",
            "        (e as? JsonPrimitive)?.takeIf { !it.isString }?.booleanOrNull ?: fail(\"expected a boolean\")",
            "",
            "    fun <T> nullable(e: JsonElement, f: (JsonElement) -> T): T? = if (e is JsonNull) null else f(e)",
            "",
            "    fun <T> list(e: JsonElement, skipInvalid: Boolean, f: (JsonElement) -> T): List<T> {",
            "        val a = e as? JsonArray ?: fail(\"expected an array\")",
            "        if (!skipInvalid) return a.map(f)",
            "        return a.mapNotNull { runCatching { f(it) }.getOrNull() }",
            "    }",
            "",
            "    /** A required field: missing, null or undecodable fails the enclosing object. */",
            "    fun <T> req(o: JsonObject, key: String, f: (JsonElement) -> T): T {",
            "        val v = o[key] ?: fail(\"missing required field `$key`\")",
            "        if (v is JsonNull) fail(\"required field `$key` is null\")",
            "        return try {",
            "            f(v)",
            "        } catch (e: Exception) {",
            "            fail(\"field `$key`: ${e.message}\")",
            "        }",
            "    }",
            "",
            "    /** An optional field: missing, null or undecodable is null. */",
            "    fun <T> opt(o: JsonObject, key: String, f: (JsonElement) -> T): T? {",
            "        val v = o[key] ?: return null",
            "        if (v is JsonNull) return null",
            "        return runCatching { f(v) }.getOrNull()",
            "    }",
            "",
            "    fun tag(e: JsonElement, key: String): String? =",
            "        ((e as? JsonObject)?.get(key) as? JsonPrimitive)?.takeIf { it.isString }?.content",
            "}",
        ]

    @staticmethod
    def qualify(block: List[str], nested: bool) -> List[str]:
        """Def references: plain at the top level; qualified inside a sealed interface, where a
        variant's name (`String`, `ToolCall`) may shadow a definition's."""
        pre = "dev.acphost.payloads." if nested else ""
        return [re.sub(r"§([A-Za-z0-9_]+)§", lambda m: pre + m.group(1), ln) for ln in block]

    def generate(self) -> str:
        out = [
            "// GENERATED FILE, do not edit: the typed event payloads (docs/EVENTS.md), generated from",
            "// schema/events.schema.json by bindings/uniffi/scripts/gen_kotlin_types.py. Regenerate with",
            "// `python3 bindings/uniffi/scripts/gen_kotlin_types.py` after the schema changes; scripts/test-kotlin",
            "// checks it is current. Lenient: unknown fields are ignored, unknown kinds, tags and enum",
            "// values and undecodable payloads are `Unknown` variants carrying the raw JSON.",
            "@file:Suppress(\"ktlint\", \"unused\", \"RedundantVisibilityModifier\")",
            "",
            "package dev.acphost.payloads",
            "",
            "import kotlinx.serialization.json.Json",
            "import kotlinx.serialization.json.JsonArray",
            "import kotlinx.serialization.json.JsonElement",
            "import kotlinx.serialization.json.JsonNull",
            "import kotlinx.serialization.json.JsonObject",
            "import kotlinx.serialization.json.JsonPrimitive",
            "import kotlinx.serialization.json.booleanOrNull",
            "import kotlinx.serialization.json.doubleOrNull",
            "import kotlinx.serialization.json.longOrNull",
            "",
        ]
        out += self.event_payload()
        for name in self.defs:
            shape = self.shape(name)
            if shape in ("object", "object_union"):
                block = self.emit_object(name)
            elif shape == "union":
                block = self.emit_union(name)
            elif shape == "enum":
                block = self.emit_enum(name)
            else:
                if name in self.payload_defs:
                    raise SchemaError(f"event payload {name} is not an object or a union")
                continue
            out += [""] + self.qualify(block, shape != "object")
        out += [""] + self.support()
        return "\n".join(out) + "\n"


def generate(schema: Dict[str, Any]) -> str:
    return Generator(schema).generate()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    ap.add_argument("--schema", type=Path, default=SCHEMA)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    text = generate(json.loads(args.schema.read_text(encoding="utf-8")))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"gen_kotlin_types: stale: {args.out.relative_to(ROOT)} (run {Path(__file__).relative_to(ROOT)})",
                  file=sys.stderr)
            return 1
        print("gen_kotlin_types: Kotlin payload types up to date", file=sys.stderr)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
