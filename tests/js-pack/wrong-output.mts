// Must NOT type-check (make test-js-pack expects TS2322): through the
// "import" condition's declarations, a handler returning a string where the
// capability declares `sum: number`.
import { createRcipRuntime, defineRcipApplication, defineRcipCapability } from 'rcip/core';

const add = defineRcipCapability<{ a: number; b: number }, { sum: number }>({ id: 'math.add' });
const app = defineRcipApplication({ application: { id: 'm', name: 'M' }, capabilities: [add] });
const runtime = createRcipRuntime(app);
runtime.host.bindCapability(add, { execute: (input) => ({ sum: String(input.a + input.b) }) });
