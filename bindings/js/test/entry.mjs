// The entry of the package the tests drive: src/core.mjs, or with
// RCIP_JS_ENTRY=cjs the CommonJS entry cjs/core.cjs that make js generates
// from it (make test-js runs the tests through both).
import { createRequire } from 'node:module';
import * as esm from '../src/core.mjs';

const which = process.env.RCIP_JS_ENTRY ?? 'esm';
if (which !== 'esm' && which !== 'cjs') throw new Error(`RCIP_JS_ENTRY must be esm or cjs, not ${which}`);

/** The module namespace (ESM) or `module.exports` (CommonJS) of the entry. */
export const api = which === 'cjs' ? createRequire(import.meta.url)('../cjs/core.cjs') : esm;
