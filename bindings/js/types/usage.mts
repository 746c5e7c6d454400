// A typed usage example: `tsc --noEmit --strict` must accept it.
import { createRcipRuntime, defineRcipApplication, defineRcipCapability, RCIP_PROTOCOL_VERSION } from '../src/core.mjs';

const add = defineRcipCapability<{ a: number; b: number }, { sum: number }>({ id: 'math.add' });
const app = defineRcipApplication({ application: { id: 'm', name: 'M' }, capabilities: [add] });
const runtime = createRcipRuntime(app, { policy: () => ({ decision: 'allow' }) });
const unbind = runtime.host.bindCapability(add, { execute: (input) => ({ sum: input.a + input.b }) });
const v: '1.0' = RCIP_PROTOCOL_VERSION;
void runtime.client.invoke({ capabilityId: add.id, input: { a: 1, b: 2 } }).then((o) => o.status);
unbind();
void v;
