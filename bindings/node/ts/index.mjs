// The ESM entry of acp-host (`import { Host } from 'acp-host'`), copied to dist/index.mjs by
// `npm run build:ts`. It re-exports the CommonJS build (dist/index.js), so both module systems
// share one instance of the addon and its classes (no dual-package hazard: an `AcpError` thrown
// to ESM code is `instanceof` the one CJS code sees). test/package.test.mjs checks that this list
// equals the CommonJS exports.
import cjs from './index.js';

export const {
  Host,
  Agent,
  Session,
  Pool,
  PooledSession,
  AcpError,
  ServiceError,
  SESSION_HISTORY_LIMIT,
  methods,
  contentFromFile,
  resourceLink,
  Registry,
} = cjs;

export default cjs;
