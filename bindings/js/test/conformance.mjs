// The JavaScript conformance runner (tests/conformance/FORMAT.md): drives
// rcip for JavaScript (bindings/js/src/core.mjs) through its public API
// only, step by step as the native runner (conformance/src/run.rs) drives
// the C ABI, and compares each transcript with the scenario's `expected` by
// the same rules (conformance/src/compare.rs: ids normalised by first
// appearance, free message texts except the host's own, validation issues
// as a multiset of (instancePath, keyword), numbers as doubles).
//
//   node conformance.mjs DIR|FILE...          check; prints failures and "N passed, M failed"
//   node conformance.mjs --print FILE         print the scenario's transcript
//
// A step yields its result after the event loop has run every Promise
// reaction the step started (one macrotask turn, setImmediate), so an
// outcome that the core delivered within the step counts as settled, as in
// the native runner.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { api } from './entry.mjs';

const { createRcipRuntime, rawJson } = api;

const CLOCK_START = 1_767_225_600_000; // 2026-01-01T00:00:00Z

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** The C ABI's result kinds the native runner prints (conformance/src/abi.rs `kind`). */
function kind(error) {
  const code = error && error.code;
  switch (code) {
    case 'INVALID_CATALOG':
    case 'NOT_IN_CATALOG':
    case 'ALREADY_BOUND':
    case 'UNKNOWN_SCOPE':
    case 'PRIMARY_NOT_ACTIVE':
    case 'PREFLIGHT_BATCH_INVALID':
      return code;
    case 'INVALID_ARGUMENT':
    case 'INVALID_JSON':
      return 'INVALID_ARGUMENT';
    default:
      return 'UNEXPECTED_RESULT';
  }
}

const entry = (fn) => {
  try {
    fn();
    return { ok: true };
  } catch (e) {
    return { error: kind(e) };
  }
};

function abortError() {
  const e = new Error('aborted by the scenario');
  e.name = 'AbortError';
  return e;
}

/** A Promise with its settle functions. */
function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

async function run(scenario) {
  let clock = CLOCK_START;
  const rec = { events: [], policyCalls: [], handlerCalls: [] };
  const policyScript = Array.isArray(scenario.options?.policy) ? scenario.options.policy : null;
  let policyIndex = 0;
  const deferredPolicies = [];
  const deferredHandlers = new Map();

  const decisionOf = (entry) => {
    const decision = typeof entry === 'string' ? entry : entry?.decision;
    switch (decision) {
      case 'throw':
        return { throws: true };
      case 'invalid':
        return { value: { decision: 'maybe' } };
      case 'allow':
      case 'deny':
      case 'confirm': {
        const d = { decision };
        if (entry && typeof entry === 'object' && 'reason' in entry) d.reason = entry.reason;
        return { value: d };
      }
      default:
        throw new Error(`unknown policy decision ${JSON.stringify(entry)}`);
    }
  };

  const options = {
    now: () => clock,
    timers: 'manual',
    onEvent: (event) => rec.events.push(event),
  };
  const o = scenario.options ?? {};
  if (typeof o.confirmationTtlMs === 'number') options.confirmationTtlMs = o.confirmationTtlMs;
  if (o.limits) options.limits = o.limits;
  if (policyScript) {
    options.policy = (ctx) => {
      const cap = ctx.capability;
      rec.policyCalls.push({
        capabilityId: cap.id,
        input: ctx.input,
        semanticContext: ctx.semanticContext,
        confirmed: ctx.confirmed,
        phase: ctx.phase,
        bound: cap.bound,
        available: cap.available,
        relevance: cap.relevance,
      });
      const i = Math.min(policyIndex, Math.max(policyScript.length - 1, 0));
      policyIndex += 1;
      const scripted = policyScript[i] ?? null;
      if (scripted === 'defer') {
        const d = deferred();
        deferredPolicies.push(d);
        return d.promise;
      }
      const { throws, value } = decisionOf(scripted);
      if (throws) throw new Error('policy script throws');
      return value;
    };
  }

  let runtime;
  try {
    runtime = createRcipRuntime(scenario.catalog, options);
  } catch (e) {
    return { create: { error: kind(e) }, transcript: [] };
  }
  const { client, host } = runtime;

  const bindings = new Map(); // name -> { unbind, availability: { script } }
  const subs = new Map(); // name -> { unsubscribe, count, seen }
  const tokens = new Map(); // name -> AbortController
  const calls = new Map(); // name -> call state

  const token = (name) => {
    if (!tokens.has(name)) tokens.set(name, new AbortController());
    return tokens.get(name);
  };
  const signalOf = (step) => (typeof step.cancel === 'string' ? token(step.cancel).signal : undefined);

  const track = (name, promise, preflight, invocationId) => {
    const call = { result: undefined, error: undefined, preflight, invocationId };
    promise.then(
      (r) => {
        call.result = r;
      },
      (e) => {
        call.error = kind(e);
      },
    );
    if (typeof name === 'string') calls.set(name, call);
    return call;
  };
  const callEntry = (call) => {
    if (call.error !== undefined) return { error: call.error };
    if (call.result !== undefined) return call.preflight ? { report: call.result } : { outcome: call.result };
    return { pending: true };
  };
  const inputOf = (request) =>
    typeof request.inputRaw === 'string' ? rawJson(request.inputRaw) : (request.input ?? null);

  const handlerFor = (script) => (input, ctx) => {
    rec.handlerCalls.push({
      capabilityId: ctx.capabilityId,
      invocationId: ctx.invocationId,
      input,
      semanticContext: ctx.semanticContext,
    });
    if (script === 'defer') {
      const d = deferred();
      deferredHandlers.set(ctx.invocationId, d);
      return d.promise;
    }
    if (script && typeof script === 'object') {
      if ('return' in script) return script.return;
      if (script.echo === true) return input;
      if (typeof script.returnRaw === 'string') return rawJson(script.returnRaw);
      if (typeof script.throw === 'string') {
        throw script.throw === 'abort' ? abortError() : new Error('handler script throws');
      }
    }
    throw new Error(`unknown handler script ${JSON.stringify(script)}`);
  };

  const transcript = [];
  for (const step of scenario.steps ?? []) {
    const s = (k) => (typeof step[k] === 'string' ? step[k] : '');
    let out;
    switch (step.op) {
      case 'bind': {
        const availability = { script: step.availability ?? null };
        const getAvailability = () => {
          const a = availability.script;
          if (a === null) return { available: true };
          if (a === 'throw') throw new Error('availability script throws');
          return a;
        };
        try {
          const unbind = host.bindCapability(s('capabilityId'), {
            execute: handlerFor(step.handler),
            getAvailability,
          });
          bindings.set(s('binding'), { unbind, availability });
          out = { ok: true };
        } catch (e) {
          out = { error: kind(e) };
        }
        break;
      }
      case 'unbind':
        out = entry(() => bindings.get(s('binding')).unbind());
        break;
      case 'set_availability':
        bindings.get(s('binding')).availability.script = step.availability ?? null;
        out = { ok: true };
        break;
      case 'set_context':
        out = entry(() => host.setContext(step.context));
        break;
      case 'clear_context':
        out = entry(() => host.clearContext());
        break;
      case 'refresh':
        out = entry(() => host.refresh());
        break;
      case 'snapshot':
        out = { snapshot: client.getSnapshot() };
        break;
      case 'list':
        try {
          out = { ids: client.listCapabilities(step.filter ?? {}).map((c) => c.id) };
        } catch (e) {
          out = { error: kind(e) };
        }
        break;
      case 'subscribe': {
        const sub = { count: 0, seen: 0, unsubscribe: null };
        sub.unsubscribe = client.subscribe(() => {
          sub.count += 1;
        });
        subs.set(s('sub'), sub);
        out = { ok: true };
        break;
      }
      case 'unsubscribe': {
        const sub = subs.get(s('sub'));
        if (sub) sub.unsubscribe();
        out = { ok: true };
        break;
      }
      case 'notifications': {
        const sub = subs.get(s('sub'));
        const n = sub.count - sub.seen;
        sub.seen = sub.count;
        out = { count: n };
        break;
      }
      case 'invoke': {
        const request = step.request ?? {};
        const promise = client.invoke({
          capabilityId: request.capabilityId ?? '',
          input: inputOf(request),
          invocationId: typeof request.invocationId === 'string' ? request.invocationId : undefined,
          signal: signalOf(step),
        });
        const call = track(step.call, promise, false, promise.invocationId);
        await turn();
        out = callEntry(call);
        break;
      }
      case 'confirm': {
        let confirmationId;
        let invocationId;
        if (typeof step.confirmationId === 'string') {
          confirmationId = step.confirmationId;
        } else {
          const of = calls.get(s('of'));
          confirmationId = of.result?.confirmation?.id ?? '';
          invocationId = of.result?.invocationId;
        }
        const promise = host.resolveConfirmation(confirmationId, step.approved === true);
        const call = track(step.call, promise, false, invocationId);
        await turn();
        out = callEntry(call);
        break;
      }
      case 'await': {
        const call = calls.get(s('call'));
        out = call ? callEntry(call) : { error: 'UNKNOWN_CALL' };
        break;
      }
      case 'policy': {
        const d = deferredPolicies.shift();
        if (!d) throw new Error('no deferred policy call');
        const scripted = step.throw === true ? 'throw' : step.decision;
        const { throws, value } = decisionOf(scripted);
        if (throws) d.reject(new Error('policy script throws'));
        else d.resolve(value);
        await turn();
        out = { ok: true };
        break;
      }
      case 'complete':
      case 'fail': {
        const id = calls.get(s('call'))?.invocationId ?? '';
        const d = deferredHandlers.get(id);
        if (!d) throw new Error(`no deferred handler for ${id}`);
        deferredHandlers.delete(id);
        if (step.op === 'complete') {
          d.resolve(typeof step.outputRaw === 'string' ? rawJson(step.outputRaw) : (step.output ?? null));
        } else {
          d.reject(step.abort === true ? abortError() : new Error('the scenario fails the handler'));
        }
        await turn();
        out = { ok: true };
        break;
      }
      case 'cancel':
        token(s('token')).abort();
        await turn();
        out = { ok: true };
        break;
      case 'advance':
        clock += typeof step.ms === 'number' ? step.ms : 0;
        runtime.runDueTimers();
        await turn();
        out = { ok: true };
        break;
      case 'events':
        out = { events: rec.events.splice(0) };
        break;
      case 'policy_calls':
        out = { calls: rec.policyCalls.splice(0) };
        break;
      case 'handler_calls':
        out = { calls: rec.handlerCalls.splice(0) };
        break;
      case 'preflight': {
        const requests = (Array.isArray(step.requests) ? step.requests : []).map((r) => ({
          capabilityId: r.capabilityId ?? '',
          input: inputOf(r),
        }));
        const promise = client.preflight(requests, { signal: signalOf(step) });
        const call = track(step.call, promise, true);
        await turn();
        out = callEntry(call);
        break;
      }
      default:
        out = { error: `UNKNOWN_OP ${step.op}` };
    }
    transcript.push(out);
  }
  runtime.close();
  await turn();
  return { create: { ok: true }, transcript };
}

// ----- the comparison (conformance/src/compare.rs) ------------------------------

function hostReasons(scenario) {
  const out = new Set();
  const walk = (v) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'reason' && typeof x === 'string') out.add(x);
        walk(x);
      }
    }
  };
  walk(scenario.options?.policy);
  walk(scenario.steps);
  return out;
}

const sortedKeys = (o) => Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function normalise(value, maps, parent) {
  if (Array.isArray(value)) return value.map((v) => normalise(v, maps, parent));
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const key of sortedKeys(value)) {
      const v = value[key];
      const k = key === 'invocationId' ? 0 : key === 'id' && parent === 'confirmation' ? 1 : null;
      if (k !== null && typeof v === 'string') {
        if (!maps[k].has(v)) maps[k].set(v, `<${k === 0 ? 'invocation' : 'confirmation'}#${maps[k].size + 1}>`);
        out[key] = maps[k].get(v);
      } else {
        out[key] = normalise(v, maps, key);
      }
    }
    return out;
  }
  return value;
}

function show(v) {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 300 ? `${s.slice(0, 300)}...` : s;
}

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function diff(actual, expected, path, reasons, inError) {
  const ta = typeOf(actual);
  const te = typeOf(expected);
  if (ta === 'object' && te === 'object') {
    const missing = sortedKeys(expected).filter((k) => !(k in actual));
    if (missing.length > 0) return `${path}: missing key '${missing[0]}' (expected ${show(expected[missing[0]])})`;
    const extra = sortedKeys(actual).filter((k) => !(k in expected));
    if (extra.length > 0) return `${path}: unexpected key '${extra[0]}' (got ${show(actual[extra[0]])})`;
    for (const key of sortedKeys(expected)) {
      const sub = `${path}.${key}`;
      const av = actual[key];
      const ev = expected[key];
      if (inError && key === 'message') {
        if (typeof av !== 'string') return `${sub}: expected a message string, got ${show(av)}`;
        if (typeof ev === 'string' && reasons.has(ev) && av !== ev) {
          return `${sub}: expected host-supplied text ${show(ev)}, got ${show(av)}`;
        }
        continue;
      }
      if (key === 'reason' && expected.reasonCode === 'AVAILABILITY_CHECK_FAILED') {
        if (typeof av === 'string' && av.length > 0) continue;
        return `${sub}: expected a reason string, got ${show(av)}`;
      }
      const problem =
        inError && key === 'validationIssues' ? diffIssues(av, ev, sub) : diff(av, ev, sub, reasons, key === 'error');
      if (problem) return problem;
    }
    return null;
  }
  if (ta === 'array' && te === 'array') {
    if (actual.length !== expected.length) {
      return `${path}: expected ${expected.length} items, got ${actual.length} (expected ${show(expected)}, got ${show(actual)})`;
    }
    for (let i = 0; i < actual.length; i++) {
      const p = diff(actual[i], expected[i], `${path}[${i}]`, reasons, false);
      if (p) return p;
    }
    return null;
  }
  // Numbers compare as doubles (JSON.parse read both as doubles); other
  // scalars by value and type.
  return ta === te && actual === expected ? null : `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

function diffIssues(actual, expected, path) {
  const keys = (v) => {
    if (!Array.isArray(v)) return null;
    const out = [];
    for (const i of v) {
      if (typeOf(i) !== 'object') return null;
      const s = (k) => (!(k in i) ? 'None' : typeof i[k] === 'string' ? i[k] : JSON.stringify(i[k]));
      out.push([s('instancePath'), s('keyword')]);
    }
    return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  };
  const a = keys(actual);
  if (a === null) return `${path}: expected a list of issues, got ${show(actual)}`;
  const e = keys(expected) ?? [];
  return JSON.stringify(a) === JSON.stringify(e) ? null : `${path}: expected issues ${JSON.stringify(e)}, got ${JSON.stringify(a)}`;
}

function compare(output, scenario) {
  const expected = scenario.expected ?? {};
  const reasons = hostReasons(scenario);
  for (const key of ['create', 'transcript']) {
    if (!(key in output)) return `$: runner output has no '${key}'`;
    const a = normalise(output[key], [new Map(), new Map()], null);
    const e = normalise(expected[key], [new Map(), new Map()], null);
    const p = diff(a, e, `$.${key}`, reasons, false);
    if (p) return p;
  }
  return null;
}

// ----- main ---------------------------------------------------------------------

function scenarioFiles(args) {
  const files = [];
  for (const a of args) {
    if (statSync(a).isDirectory()) {
      files.push(
        ...readdirSync(a)
          .filter((f) => f.endsWith('.json'))
          .sort()
          .map((f) => join(a, f)),
      );
    } else {
      files.push(a);
    }
  }
  return files;
}

async function main(args) {
  if (args[0] === '--print' && args.length === 2) {
    const out = await run(JSON.parse(readFileSync(args[1], 'utf8')));
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  }
  if (args.length === 0 || args[0] === '--help') {
    process.stderr.write('usage: conformance.mjs DIR|FILE... | --print FILE\n');
    return 2;
  }
  let passed = 0;
  let failed = 0;
  for (const file of scenarioFiles(args)) {
    const scenario = JSON.parse(readFileSync(file, 'utf8'));
    let problem;
    try {
      // The transcript goes through JSON text, as the native runner prints it.
      const output = JSON.parse(JSON.stringify(await run(scenario)));
      problem = compare(output, scenario);
    } catch (e) {
      problem = `runner failed: ${e && e.stack ? e.stack : e}`;
    }
    if (problem) {
      failed += 1;
      process.stdout.write(`FAIL ${file}\n     ${problem}\n`);
    } else {
      passed += 1;
    }
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
