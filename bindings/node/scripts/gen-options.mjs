#!/usr/bin/env node
// Generates ts/generated/options.ts (the option documents of docs/OPTIONS.md as TypeScript
// interfaces) from the core's option table, `acp_host::options::table_json()`, which the built
// addon exports as `optionsTable()`. So every option the core takes is typed here, with its doc,
// range and default, and cannot drift: test/options.test.mjs checks the committed file.
//
// Usage (after the addon is built): node bindings/node/scripts/gen-options.mjs [--check]
//   --check: write nothing; exit 1 when the committed file differs from a fresh generation.

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const PACKAGE = join(HERE, '..');
export const OUTPUT_PATH = join(PACKAGE, 'ts', 'generated', 'options.ts');

/** The interface each document of the table becomes, and the prefix of its paths. */
const DOCUMENTS = [
  ['Host options', 'HostOptionsDocument', ''],
  ['Agent spec', 'AgentSpecDocument', ''],
  ['Session options', 'SessionOptionsDocument', ''],
  ['Pool options', 'PoolSettingsDocument', 'pool.'],
];

const BANNER = `/* eslint-disable */
/**
 * GENERATED FILE, do not edit: the option documents of docs/OPTIONS.md, generated from the
 * core's option table (\`acp_host::options::table_json()\`) by
 * bindings/node/scripts/gen-options.mjs. Regenerate with \`npm run gen-options\` (in
 * bindings/node, after building the addon) when the table changes.
 *
 * \`undefined\` is "not given" (the default). The core checks every value: a bad one throws
 * \`AcpError\` \`invalid_config\` with \`data.path\` naming it.
 */`;

/** The TypeScript type of a table type (the strings of \`markdown::type_name\`). */
export function tsType(ty) {
  const literals = (s) => [...s.matchAll(/`"([^"`]*)"`/g)].map((m) => `'${m[1]}'`);
  if (ty === 'boolean') return 'boolean';
  if (ty.startsWith('integer ')) return 'number';
  if (ty.startsWith('milliseconds ')) return ty.includes('`null`') ? 'number | null' : 'number';
  if (ty.startsWith('list of `')) return `Array<${literals(ty).join(' | ')}>`;
  if (ty.startsWith('`"')) return literals(ty).join(' | ');
  if (ty === 'non-empty string') return 'string';
  if (ty === 'list of strings') return 'string[]';
  if (ty.startsWith('absolute path')) return 'string';
  if (ty.startsWith('list of absolute paths')) return 'string[]';
  if (ty.startsWith('object: name')) return 'Record<string, string | null | undefined>';
  if (ty === 'list of objects') return 'Array<Record<string, unknown>>';
  if (ty.startsWith('preset name')) return 'PolicyValue';
  if (ty === 'object') return 'object';
  throw new Error(`gen-options: no TypeScript type for the table type \`${ty}\``);
}

function comment(row, indent) {
  const lines = [row.doc, '', `Type: ${row.type}. Default: ${row.default}.`];
  const words = lines.join('\n').split('\n');
  const out = [];
  for (const para of words) {
    let line = '';
    for (const w of para.split(' ')) {
      if (line && line.length + w.length + 1 > 96 - indent.length) {
        out.push(line);
        line = w;
      } else line = line ? `${line} ${w}` : w;
    }
    out.push(line);
  }
  return `${indent}/**\n${out.map((l) => `${indent} *${l ? ` ${l}` : ''}`).join('\n')}\n${indent} */\n`;
}

/** The members of the object at `prefix` (`''`: the document itself). */
function members(rows, prefix, indent) {
  let out = '';
  const depth = prefix.split('.').length;
  for (const row of rows) {
    if (!row.path.startsWith(prefix) || row.path.split('.').length !== depth) continue;
    const name = row.path.slice(prefix.length);
    const required = row.default === 'required';
    let type = tsType(row.type);
    if (type === 'object') type = `{\n${members(rows, `${row.path}.`, `${indent}  `)}${indent}}`;
    out += comment(row, indent) + `${indent}${name}${required ? '' : '?'}: ${type};\n`;
  }
  return out;
}

export function generate(table) {
  let out = `${BANNER}\n\n/** A permission policy: a preset, an absolute path of a JSON policy file, \`{ file }\`, or a policy document (docs/PERMISSIONS.md). */\n`;
  // A path is typed as an absolute one (POSIX, a Windows drive, UNC): a misspelt preset is a type error.
  out += 'export type PolicyValue =\n  | \'deny-all\'\n  | \'read-only\'\n  | \'ask\'\n  | `/${string}`\n  | `${string}:\\\\${string}`\n  | `${string}:/${string}`\n  | `\\\\\\\\${string}`\n  | { file: string }\n  | Record<string, unknown>;\n';
  for (const [title, name, prefix] of DOCUMENTS) {
    // Options only another face takes (the C face's `services`) are not Node's.
    const rows = table
      .filter((r) => r.document === title && (r.face === null || r.face === 'Node'))
      .map((r) => ({ ...r, path: r.path.slice(prefix.length) }));
    if (rows.length === 0) throw new Error(`gen-options: the table has no document \`${title}\``);
    out += `\n/** ${title} (docs/OPTIONS.md). */\nexport interface ${name} {\n${members(rows, '', '  ')}}\n`;
  }
  return out;
}

/** The table of the built addon. */
export function addonTable() {
  const require = createRequire(import.meta.url);
  return require(join(PACKAGE, 'binding.js')).optionsTable();
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const fresh = generate(addonTable());
  if (process.argv.includes('--check')) {
    const committed = readFileSync(OUTPUT_PATH, 'utf8');
    if (committed !== fresh) {
      process.stderr.write(`gen-options: ${OUTPUT_PATH} is stale: run node bindings/node/scripts/gen-options.mjs\n`);
      process.exit(1);
    }
  } else writeFileSync(OUTPUT_PATH, fresh);
}
