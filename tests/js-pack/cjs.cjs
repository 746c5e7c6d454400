// Run from a fresh project that installed the packed tarball (make
// test-js-pack): the CommonJS entry of `rcip/core` creates a runtime, binds a
// capability and invokes it.
'use strict';
const assert = require('node:assert/strict');
const { RCIP_PROTOCOL_VERSION, createRcipRuntime, defineRcipApplication, defineRcipCapability } = require('rcip/core');

// The installed copy, through the "require" condition.
assert.match(require.resolve('rcip/core'), /\/node_modules\/rcip\/cjs\/core\.cjs$/);

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

async function main() {
  const runtime = createRcipRuntime(app);
  const unbind = runtime.host.bindCapability(add, { execute: async ({ a, b }) => ({ sum: a + b }) });
  const outcome = await runtime.client.invoke({ capabilityId: 'math.add', input: { a: 2, b: 3 } });
  assert.equal(outcome.status, 'succeeded');
  assert.deepEqual(outcome.output, { sum: 5 });
  // Snapshots are deeply frozen through this entry too (this script is strict).
  assert.throws(() => {
    runtime.client.getSnapshot().revision = -1;
  }, TypeError);
  unbind();
  runtime.close();
  console.log('cjs.cjs: require of rcip/core: invoke succeeded, snapshot frozen');
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
