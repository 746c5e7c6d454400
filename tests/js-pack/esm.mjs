// Run from a fresh project that installed the packed tarball (make
// test-js-pack): the ESM entry of `rcip/core` creates a runtime, binds a
// capability and invokes it; both entries work in one program.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as esm from 'rcip/core';
import { RCIP_PROTOCOL_VERSION, createRcipRuntime, defineRcipApplication, defineRcipCapability, rawJson } from 'rcip/core';

// The installed copy, through the "import" condition.
assert.match(import.meta.resolve('rcip/core'), /\/node_modules\/rcip\/src\/core\.mjs$/);

const add = defineRcipCapability({
  id: 'math.add',
  title: 'Add',
  description: 'Adds two numbers.',
  scopeIds: [],
  effect: 'read',
  inputSchema: {
    type: 'object',
    properties: { a: { type: 'number' }, b: { type: 'number' } },
    required: ['a', 'b'],
    additionalProperties: false,
  },
  outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
});
const app = defineRcipApplication({
  protocolVersion: RCIP_PROTOCOL_VERSION,
  application: { id: 'math', name: 'Math', description: 'Arithmetic.' },
  scopes: [],
  capabilities: [add],
});

const runtime = createRcipRuntime(app);
const unbind = runtime.host.bindCapability(add, { execute: ({ a, b }) => ({ sum: a + b }) });
const outcome = await runtime.client.invoke({ capabilityId: 'math.add', input: { a: 2, b: 3 } });
assert.equal(outcome.status, 'succeeded');
assert.deepEqual(outcome.output, { sum: 5 });
const refused = await runtime.client.invoke({ capabilityId: 'math.add', input: { a: 2 } });
assert.equal(refused.status, 'failed');
assert.equal(refused.error.code, 'INPUT_INVALID');
unbind();
runtime.close();

// The CommonJS entry from the same program: the same names, and a value made
// by one copy (rawJson) accepted by a runtime of the other.
const cjs = createRequire(import.meta.url)('rcip/core');
assert.match(createRequire(import.meta.url).resolve('rcip/core'), /\/node_modules\/rcip\/cjs\/core\.cjs$/);
assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
const other = cjs.createRcipRuntime(app);
other.host.bindCapability('math.add', { execute: () => rawJson('{"sum": 7}') });
const mixed = await other.client.invoke({ capabilityId: 'math.add', input: rawJson('{"a": 3, "b": 4}') });
assert.equal(mixed.status, 'succeeded');
assert.deepEqual(mixed.output, { sum: 7 });
other.close();

console.log('esm.mjs: import of rcip/core: invoke succeeded, INPUT_INVALID refused, CommonJS entry has the same names');
