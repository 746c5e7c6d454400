// Type-checked (tsc --strict, make test-js-pack) in a fresh project that
// installed the packed tarball: the "import" condition's declarations.
import { createRcipRuntime, defineRcipApplication, defineRcipCapability, RCIP_PROTOCOL_VERSION } from 'rcip/core';
import type { RcipOutcome } from 'rcip/core';

const add = defineRcipCapability<{ a: number; b: number }, { sum: number }>({ id: 'math.add' });
const app = defineRcipApplication({ protocolVersion: RCIP_PROTOCOL_VERSION, application: { id: 'm', name: 'M' }, capabilities: [add] });
const runtime = createRcipRuntime(app, { policy: () => ({ decision: 'allow' }) });
const unbind = runtime.host.bindCapability(add, { execute: (input) => ({ sum: input.a + input.b }) });
const outcome: Promise<RcipOutcome> = runtime.client.invoke({ capabilityId: add.id, input: { a: 1, b: 2 } });
void outcome;
unbind();
