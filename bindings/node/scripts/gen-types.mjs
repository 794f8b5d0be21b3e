#!/usr/bin/env node
// Generates ts/generated/events.ts (the TypeScript types of every event kind's `data`) from the
// committed JSON schema schema/events.schema.json, with json-schema-to-typescript (pinned in
// package.json). The output is committed; test/types.test.mjs checks that it is up to date.
//
// Usage (from any directory): node bindings/node/scripts/gen-types.mjs [--check]
//   --check: write nothing; exit 1 when the committed file differs from a fresh generation.

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { compile } from 'json-schema-to-typescript';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGE = join(HERE, '..');
const REPO = join(PACKAGE, '..', '..');
export const SCHEMA_PATH = join(REPO, 'schema', 'events.schema.json');
export const OUTPUT_PATH = join(PACKAGE, 'ts', 'generated', 'events.ts');

const BANNER = `/* eslint-disable */
/**
 * GENERATED FILE, do not edit: the types of every event kind's \`data\` (docs/EVENTS.md),
 * generated from schema/events.schema.json by bindings/node/scripts/gen-types.mjs
 * (json-schema-to-typescript). Regenerate with \`scripts/gen-types\` (or
 * \`node bindings/node/scripts/gen-types.mjs\`) after the schema changes.
 *
 * The unions are closed here, but agents may send values of newer ACP versions at runtime
 * (new \`sessionUpdate\` kinds, content block types, ...): keep a \`default:\` branch.
 */`;

// Keywords that say nothing about the type: a schema of only these accepts any value.
const ANY_ANNOTATIONS = new Set(['description', 'default', 'examples', 'deprecated']);

// Keywords that only annotate a `$ref` (they do not change the type it stands for).
const REF_ANNOTATIONS = new Set(['$ref', 'description', 'default', 'examples', 'deprecated']);

/**
 * Rewrite the schemars output into the shapes json-schema-to-typescript understands:
 *  - a `$ref` with sibling constraints (schemars' internally tagged enums:
 *    `{"$ref": "#/$defs/ToolCall", "properties": {"sessionUpdate": {"const": "tool_call"}}}`)
 *    becomes `allOf: [{$ref}, {siblings}]`: json2ts drops the siblings of a `$ref`, which would
 *    lose the discriminator and with it all narrowing;
 *  - a `$ref` with only a description becomes `allOf: [{$ref}]`, so the property keeps its doc
 *    comment without json2ts minting a duplicate type (`ToolCallUpdate1`) for the merged node;
 *  - a definition with both `properties` and `oneOf`/`anyOf` (common fields plus tagged
 *    variants) becomes `allOf: [common, {title: <Name>Variant, oneOf}]`, to name the variant part;
 *  - a schema of only annotations (`rawInput`, `data`: any JSON value) becomes `unknown`;
 *  - dropped: `x-deserialize-*` (the Rust decoder's repair hints), `discriminator` (OpenAPI),
 *    `format`, `not` (inexpressible in TypeScript) and inner `title`s (they would become odd
 *    global type names such as `None`).
 */
export function preprocess(schema) {
  const root = clean(schema);
  for (const [name, def] of Object.entries(root.$defs ?? {})) {
    const alt = def.oneOf ? 'oneOf' : def.anyOf ? 'anyOf' : null;
    if (alt && def.properties) {
      const { [alt]: variants, description, ...common } = def;
      root.$defs[name] = {
        ...(description ? { description } : {}),
        allOf: [common, { title: `${name}Variant`, [alt]: variants }],
      };
    }
  }
  // The root's title names the interface with one field per kind.
  return { ...root, title: 'EventData' };
}

// Keywords whose value maps names (property names, definition names) to schemas: their keys are
// names, not keywords, so a property called `title` or `format` is kept.
const NAME_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

function clean(node) {
  if (Array.isArray(node)) return node.map(clean);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith('x-') || k === 'discriminator' || k === 'format' || k === 'not' || k === 'title') continue;
    out[k] = NAME_MAPS.has(k) && v && typeof v === 'object' ? mapValues(v, clean) : clean(v);
  }
  // Only annotations: any JSON value. json2ts would make it an object (`{[k: string]: unknown}`).
  if (Object.keys(out).every((k) => ANY_ANNOTATIONS.has(k)) && Object.keys(out).length > 0) {
    return { ...out, tsType: 'unknown' };
  }
  if ('$ref' in out) {
    const { $ref, description, ...rest } = out;
    const desc = description ? { description } : {};
    if (Object.keys(rest).some((k) => !REF_ANNOTATIONS.has(k))) return { ...desc, allOf: [{ $ref }, rest] };
    if (description) return { ...desc, allOf: [{ $ref }] };
  }
  return out;
}

function mapValues(obj, f) {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, f(v)]));
}

/** The generated TypeScript source, from `schema` (default: the committed schema file). */
export async function generate(schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8'))) {
  const ts = await compile(preprocess(schema), 'EventData', {
    bannerComment: BANNER,
    // Objects are closed unless the schema says otherwise (ACP's `_meta` maps do): an index
    // signature on every object would let `ev.data.anything` type-check and defeat narrowing.
    additionalProperties: false,
    // Every definition, also those no event references directly (named types for consumers).
    unreachableDefinitions: true,
    // Fixed so the output does not depend on where the script runs.
    cwd: PACKAGE,
    strictIndexSignatures: false,
    style: { singleQuote: true, printWidth: 120 },
  });
  // json2ts notes on every definition that EventData's schema references it: noise here.
  return ts
    .replace(/\n \*\n \* This interface was referenced by `EventData`'s JSON-Schema\n \* via the `definition` "[^"]+"\./g, '')
    .replace(/\/\*\*\n \* This interface was referenced by `EventData`'s JSON-Schema\n \* via the `definition` "[^"]+"\.\n \*\/\n/g, '');
}

async function main(argv) {
  const text = await generate();
  const rel = relative(process.cwd(), OUTPUT_PATH) || OUTPUT_PATH;
  if (argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(OUTPUT_PATH, 'utf8');
    } catch {
      // missing: differs
    }
    if (committed !== text) {
      process.stderr.write(`gen-types: ${rel} is out of date: run scripts/gen-types\n`);
      process.exit(1);
    }
    return;
  }
  mkdirSync(dirname(OUTPUT_PATH), { recursive: true });
  writeFileSync(OUTPUT_PATH, text);
  process.stderr.write(`gen-types: wrote ${rel}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await main(process.argv.slice(2));
}
