// What the conformance scenarios do not reach: the JavaScript side of the
// layer (setTimeout-driven timers, AbortSignal into a handler, Promise
// policies, frozen snapshots, plain-JSON refusal). node --test.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { api } from './entry.mjs';

const { RCIP_PROTOCOL_VERSION, createRcipRuntime, defineRcipApplication, defineRcipCapability, defineRcipScope } = api;

const notes = defineRcipScope({ id: 'notes', title: 'Notes', description: 'The note list.' });
const list = defineRcipCapability({
  id: 'notes.list',
  title: 'List notes',
  description: 'Lists the notes.',
  scopeIds: [notes.id],
  effect: 'read',
  inputSchema: { type: 'object' },
  outputSchema: { type: 'object', properties: { notes: { type: 'array' } }, required: ['notes'] },
});
const add = defineRcipCapability({
  id: 'notes.add',
  title: 'Add note',
  description: 'Adds a note.',
  scopeIds: [notes.id],
  effect: 'write',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'object' },
});
const definition = defineRcipApplication({
  protocolVersion: RCIP_PROTOCOL_VERSION,
  application: { id: 'notes', name: 'Notes', description: 'Notes.' },
  scopes: [notes],
  capabilities: [list, add],
});

test('a refused definition throws the core error with its code', () => {
  assert.throws(() => createRcipRuntime({ ...definition, protocolVersion: '2.0' }), (e) => e.code === 'INVALID_CATALOG');
});

test('invoke resolves with the outcome; snapshots are frozen and stable per revision', async () => {
  const runtime = createRcipRuntime(definition);
  const unbind = runtime.host.bindCapability(list, { execute: async () => ({ notes: ['a'] }) });
  const s1 = runtime.client.getSnapshot();
  assert.equal(s1, runtime.client.getSnapshot());
  assert.ok(Object.isFrozen(s1) && Object.isFrozen(s1.capabilities[0]));
  const outcome = await runtime.client.invoke({ capabilityId: 'notes.list', input: {} });
  assert.equal(outcome.status, 'succeeded');
  assert.deepEqual(outcome.output, { notes: ['a'] });
  runtime.host.refresh();
  assert.notEqual(s1, runtime.client.getSnapshot());
  unbind();
  assert.throws(() => runtime.host.bindCapability('nope', { execute: () => ({}) }), (e) => e.code === 'NOT_IN_CATALOG');
  runtime.close();
});

test('values that are not plain JSON get the core refusal', async () => {
  const runtime = createRcipRuntime(definition);
  runtime.host.bindCapability(list, { execute: () => ({ notes: [NaN] }) });
  const bad = await runtime.client.invoke({ capabilityId: 'notes.list', input: { when: new Date(0) } });
  assert.equal(bad.error.code, 'INPUT_INVALID');
  const out = await runtime.client.invoke({ capabilityId: 'notes.list', input: {} });
  assert.equal(out.error.code, 'OUTPUT_INVALID');
  runtime.close();
});

test('a Promise policy, a confirmation, and its expiry from setTimeout', async () => {
  const notices = [];
  const runtime = createRcipRuntime(definition, {
    confirmationTtlMs: 30,
    policy: async ({ capability, confirmed }) =>
      capability.effect === 'read' || confirmed ? { decision: 'allow' } : { decision: 'confirm' },
    onConfirmation: (n) => notices.push(n.event),
  });
  runtime.host.bindCapability(add, { execute: () => ({}) });
  const first = await runtime.client.invoke({ capabilityId: 'notes.add', input: { text: 'x' } });
  assert.equal(first.status, 'confirmation_required');
  const approved = await runtime.host.resolveConfirmation(first.confirmation.id, true);
  assert.equal(approved.status, 'succeeded');
  const second = await runtime.client.invoke({ capabilityId: 'notes.add', input: { text: 'y' } });
  await new Promise((r) => setTimeout(r, 80));
  // Closed by the timer, before anyone resolved it.
  assert.deepEqual(notices, ['opened', 'closed', 'opened', 'closed']);
  const late = await runtime.host.resolveConfirmation(second.confirmation.id, true);
  assert.equal(late.error.code, 'CONFIRMATION_EXPIRED');
  assert.deepEqual(notices, ['opened', 'closed', 'opened', 'closed']);
  runtime.close();
});

test('an AbortSignal cancels a running handler and reaches it', async () => {
  const runtime = createRcipRuntime(definition);
  let handlerSignal;
  runtime.host.bindCapability(list, {
    execute: (_input, { signal }) =>
      new Promise((_resolve, reject) => {
        handlerSignal = signal;
        signal.addEventListener('abort', () => reject(Object.assign(new Error('stop'), { name: 'AbortError' })));
      }),
  });
  const controller = new AbortController();
  const pending = runtime.client.invoke({ capabilityId: 'notes.list', input: {}, signal: controller.signal });
  assert.equal(typeof pending.invocationId, 'string');
  controller.abort();
  const outcome = await pending;
  assert.equal(outcome.error.code, 'EXECUTION_ABORTED');
  assert.ok(handlerSignal.aborted);
  runtime.close();
});
