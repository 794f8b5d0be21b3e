#!/usr/bin/env node
// Builds the debug addon for this machine and generates index.d.ts and binding.js, as
// `napi build --platform --js binding.js --dts index.d.ts` does, without its second compile of the
// dependency tree: napi always passes `--target <host>` to cargo, and an explicit --target puts
// every artifact under target/<triple>/, apart from the workspace build's target/debug/ (~200 s
// on 2 cores). Here cargo builds into target/debug/ with the workspace build's shape
// (scripts/lib/cargo.sh), so only acp-host-node itself compiles again; then the addon is copied
// under the name napi gives it (acp-host.<platform>.node) and @napi-rs/cli's own generateTypeDef
// and writeJsBinding write the two generated files.
//
// The type definitions: napi-derive appends one fragment per #[napi] item to
// $NAPI_TYPE_DEF_TMP_FOLDER/acp-host-node while it expands the crate. The crate's build script
// (napi_build::setup) tracks that variable and NAPI_FORCE_BUILD_ACP_HOST_NODE, so cargo compiles
// the crate again whenever the folder changes or the fragments are missing: the file always
// describes the source just compiled (the drift check in scripts/test-node depends on it). Only
// the library is built with the variable: the unit-test build of the same crate would write the
// same file at the same time.
//
// The release addon (npm run build:release, scripts/release-artifacts) stays napi's own build.
// Usage: node scripts/build-addon.mjs     (npm run build)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateTypeDef, parseTriple, readNapiConfig, writeJsBinding } from '@napi-rs/cli';

const PKG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CRATE = 'acp-host-node';

const run = (cmd, args, env) => execFileSync(cmd, args, { cwd: PKG_DIR, env, stdio: ['ignore', 'pipe', 'inherit'] }).toString();

const writeAtomic = (dest, write) => {
  const tmp = `${dest}.${process.pid}.tmp`;
  write(tmp);
  fs.renameSync(tmp, dest);
};

const metadata = JSON.parse(run('cargo', ['metadata', '--format-version', '1', '--no-deps'], process.env));
const targetDir = metadata.target_directory;
const host = run('rustc', ['-vV'], process.env).match(/^host: (\S+)$/m)?.[1];
if (!host) throw new Error('rustc -vV names no host triple');
const target = parseTriple(host);

const typeDefDir = path.join(targetDir, 'napi-rs', `${CRATE}-dev-typedef`);
fs.mkdirSync(typeDefDir, { recursive: true });
const env = { ...process.env, NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir };
if (!fs.existsSync(path.join(typeDefDir, CRATE))) {
  env[`NAPI_FORCE_BUILD_${CRATE.replace(/-/g, '_').toUpperCase()}`] = Date.now().toString();
}
// The dev profile and the features of scripts/lib/cargo.sh's build_workspace, which builds the
// workspace with --all-features: acp-host's json-schema is the one feature that selection adds
// (tools/workspace-hack makes the dependencies' features equal), so asking for it here reuses the
// workspace's acp-host and every dependency instead of compiling a variant of them.
execFileSync(
  'cargo',
  ['build', '-p', CRATE, '--lib', '--features', 'acp-host/json-schema'],
  { cwd: PKG_DIR, env, stdio: 'inherit' },
);

const lib = CRATE.replace(/-/g, '_');
const srcName =
  target.platform === 'darwin' ? `lib${lib}.dylib` : target.platform === 'win32' ? `${lib}.dll` : `lib${lib}.so`;
const config = await readNapiConfig(path.join(PKG_DIR, 'package.json'));
const dest = path.join(PKG_DIR, `${config.binaryName}.${target.platformArchABI}.node`);
// Renamed into place: a process that has the previous addon loaded keeps its mapping.
writeAtomic(dest, (tmp) => fs.copyFileSync(path.join(targetDir, 'debug', srcName), tmp));

const { exports, dts } = await generateTypeDef({
  typeDefDir,
  configDtsHeader: config.dtsHeader,
  configDtsHeaderFile: config.dtsHeaderFile,
  constEnum: config.constEnum,
  runtimeStringEnum: config.runtimeStringEnum,
  cwd: PKG_DIR,
  // What napi declares for a --platform build with a JS loader and no WASI target.
  declareBindingTarget: (names) => names.length > 0,
});
writeAtomic(path.join(PKG_DIR, 'index.d.ts'), (tmp) => fs.writeFileSync(tmp, dts));
await writeJsBinding({
  platform: true,
  idents: exports,
  jsBinding: 'binding.js',
  binaryName: config.binaryName,
  packageName: config.packageName,
  version: process.env.npm_new_version ?? config.packageJson.version,
  outputDir: PKG_DIR,
  wasiFlavors: [],
});
