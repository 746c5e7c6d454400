// Must NOT type-check: the handler returns a string where the capability
// declares `sum: number` (make test-js-types expects tsc to refuse it).
import { createRcipRuntime, defineRcipApplication, defineRcipCapability } from '../../bindings/js/src/core.mjs';

const add = defineRcipCapability<{ a: number; b: number }, { sum: number }>({ id: 'math.add' });
const app = defineRcipApplication({ application: { id: 'm', name: 'M' }, capabilities: [add] });
const runtime = createRcipRuntime(app);
runtime.host.bindCapability(add, { execute: (input) => ({ sum: String(input.a + input.b) }) });
