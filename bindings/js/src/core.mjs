// rcip for JavaScript: the reference's core API (`@binaried/rcip/core` 2.0.x
// names and shapes) over the rcip core compiled to WebAssembly
// (crates/rcip-wasm, built by `make js` into bindings/js/pkg).
//
// This module holds no protocol rule: catalog checks, validation, policy
// defaults, confirmations, cancellation, codes and messages all come from
// the core (docs/PIPELINE.md). It converts between JavaScript values and
// JSON text, turns the core's callbacks into Promises, ties AbortSignals to
// cancellation tokens and drives the core's manual timers from setTimeout.
//
// Plain JSON only: a value that is not plain JSON (undefined, NaN, Infinity,
// a function, a BigInt, a class instance, a cycle) is never converted into
// something else; it is sent as text the core refuses, so the core answers
// with its own code and message (INPUT_INVALID / OUTPUT_INVALID, "... must
// be a JSON value.").

import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const wasm = require('../pkg/rcip_wasm.js');

/** The protocol version this runtime implements: the literal "1.0". */
export const RCIP_PROTOCOL_VERSION = '1.0';

// ----- JSON at the boundary ---------------------------------------------------

// Symbol.for, not Symbol: the CommonJS entry (cjs/core.cjs, generated from
// this file) is a second copy of this module when one program both imports
// and requires the package, and a rawJson value made by one copy must be
// recognised by the other.
const RAW = Symbol.for('rcip.rawJson');

/**
 * rcip extension: JSON text passed to the core unchanged (as `input` of
 * invoke or preflight, or as a handler's result). For hosts that already
 * hold JSON text, and for the conformance runner's raw inputs.
 */
export function rawJson(text) {
  if (typeof text !== 'string') throw new TypeError('rawJson takes a string');
  return Object.freeze({ [RAW]: text });
}

/** Text that is not JSON: the core refuses it as "not a JSON value". */
const NOT_JSON = 'undefined';

function isPlainObject(v) {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** True when `value` is plain JSON (checked without recursion). */
function isPlainJson(value) {
  const stack = [value];
  const seen = new Set();
  while (stack.length > 0) {
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
      case 'boolean':
        continue;
      case 'number':
        if (!Number.isFinite(v)) return false;
        continue;
      case 'object':
        if (v === null) continue;
        if (seen.has(v)) return false;
        seen.add(v);
        if (Array.isArray(v)) {
          for (let i = 0; i < v.length; i++) {
            if (!(i in v)) return false;
            stack.push(v[i]);
          }
        } else if (isPlainObject(v)) {
          if (Object.getOwnPropertySymbols(v).length > 0) return false;
          for (const k of Object.keys(v)) stack.push(v[k]);
        } else {
          return false;
        }
        continue;
      default:
        return false;
    }
  }
  return true;
}

/** JSON text for a value: raw text as is, plain JSON stringified, else text the core refuses. */
function toJsonText(value) {
  if (value !== null && typeof value === 'object' && RAW in value) return value[RAW];
  if (!isPlainJson(value)) return NOT_JSON;
  return JSON.stringify(value);
}

function deepFreeze(value) {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
      Object.freeze(v);
      for (const k of Object.keys(v)) stack.push(v[k]);
    }
  }
  return value;
}

/** JSON text the core wrote, as a deeply frozen value. */
function fromCore(text) {
  return deepFreeze(JSON.parse(text));
}

function isThenable(v) {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof v.then === 'function';
}

function isAbort(e) {
  return e !== null && typeof e === 'object' && e.name === 'AbortError';
}

// ----- definitions ------------------------------------------------------------

// The define* functions return their definition, frozen; the core checks it
// when a runtime is created (docs/PIPELINE.md section 1).

/** A scope definition `{ id, title, description, ... }`. */
export function defineRcipScope(definition) {
  return deepFreeze(structuredClone(definition));
}

/** A capability definition `{ id, title, description, scopeIds, effect, inputSchema, outputSchema, ... }`. */
export function defineRcipCapability(definition) {
  return deepFreeze(structuredClone(definition));
}

/** An application definition `{ protocolVersion, application, scopes, capabilities }`: the catalog. */
export function defineRcipApplication(definition) {
  return deepFreeze(structuredClone(definition));
}

// ----- the runtime --------------------------------------------------------------

/**
 * Creates an isolated runtime `{ client, host }` over an application
 * definition. Throws the core's error (with `code`, e.g. INVALID_CATALOG)
 * when the definition is refused.
 *
 * Options (the reference's): `policy(context)` returning (or resolving to)
 * `{ decision: 'allow' | 'deny' | 'confirm', reason? }`; `confirmationTtlMs`;
 * `onEvent(event)`. rcip extensions: `onConfirmation(notice)`; `now()` (the
 * clock, epoch ms; default `Date.now`); `timers: 'manual'` (no setTimeout:
 * call `runtime.runDueTimers()` yourself); `limits: { maxPayloadLen,
 * maxDepth }`. `createId` is not supported yet and throws.
 */
export function createRcipRuntime(definition, options = {}) {
  if (options.createId !== undefined) {
    throw new TypeError('createRcipRuntime: the createId option is not supported yet by rcip for JavaScript');
  }
  const catalog = new wasm.WasmCatalog(toJsonText(definition));
  const builder = new wasm.WasmRuntimeBuilder(catalog);
  catalog.free();
  const now = typeof options.now === 'function' ? options.now : () => Date.now();
  let schedule = () => {};
  try {
    if (options.confirmationTtlMs !== undefined) builder.confirmationTtlMs(options.confirmationTtlMs);
    if (options.limits) builder.limits(options.limits.maxPayloadLen ?? 0, options.limits.maxDepth ?? 0);
    builder.clock(() => now());
    if (typeof options.policy === 'function') {
      const policy = options.policy;
      builder.policy((request) => {
        const settle = (decide) => {
          try {
            decide();
          } catch {
            try {
              request.fail();
            } catch {
              // settled already
            }
          } finally {
            request.free();
            schedule();
          }
        };
        let answer;
        try {
          answer = policy(fromCore(request.contextJson));
        } catch {
          settle(() => request.fail());
          return;
        }
        if (isThenable(answer)) {
          answer.then(
            (d) => settle(() => request.decideJson(toJsonText(d))),
            () => settle(() => request.fail()),
          );
        } else {
          settle(() => request.decideJson(toJsonText(answer)));
        }
      });
    }
    if (typeof options.onEvent === 'function') {
      const onEvent = options.onEvent;
      builder.onEvent((json) => {
        try {
          onEvent(fromCore(json));
        } catch {
          // observer exceptions are isolated
        }
      });
    }
    if (typeof options.onConfirmation === 'function') {
      const onConfirmation = options.onConfirmation;
      builder.onConfirmation((json) => {
        try {
          onConfirmation(fromCore(json));
        } catch {
          // observer exceptions are isolated
        }
      });
    }
    var core = builder.build();
  } finally {
    builder.free();
  }

  // Timers: the core's manual timers, run from setTimeout at the earliest
  // deadline (unless `timers: 'manual'`).
  const manualTimers = options.timers === 'manual';
  let timer = null;
  let timerAt = null;
  if (!manualTimers) {
    schedule = () => {
      let at;
      try {
        at = core.nextDeadline();
      } catch {
        at = undefined; // closed
      }
      if (at === timerAt) return;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      timerAt = at ?? null;
      if (at === undefined || at === null) return;
      timer = setTimeout(() => {
        timer = null;
        timerAt = null;
        try {
          core.runDueTimers();
        } catch {
          // closed
        }
        schedule();
      }, Math.max(0, at - now()));
      if (typeof timer === 'object' && typeof timer.unref === 'function') timer.unref();
    };
  }

  /** A Promise of one outcome (or report) of a core call taking `done`. */
  function settleWith(start, signal) {
    let token = null;
    let onAbort = null;
    if (signal) {
      token = new wasm.WasmCancelToken();
      if (signal.aborted) token.cancel();
      else {
        onAbort = () => token.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
      }
    }
    let id;
    const promise = new Promise((resolve, reject) => {
      const done = (json) => {
        const outcome = fromCore(json);
        // A pending confirmation keeps the invocation's token: aborting the
        // signal later cancels the confirmation (and an approved re-run),
        // docs/PIPELINE.md section 5. The listener then owns the token.
        const keep = token !== null && onAbort !== null && outcome.status === 'confirmation_required';
        if (!keep) {
          if (onAbort) signal.removeEventListener('abort', onAbort);
          // The core may deliver while the call that was lent the token
          // still runs (wasm-bindgen refuses to free a lent object then).
          if (token) queueMicrotask(() => token.free());
        }
        resolve(outcome);
        schedule();
      };
      try {
        id = start(token, done);
      } catch (e) {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        if (token) token.free();
        reject(e);
      }
    });
    schedule();
    return { promise, id };
  }

  // Bindings and subscriptions stay referenced here until released: the
  // glue frees an object the garbage collector takes, and freeing a binding
  // unbinds it (a subscription ends), which only the host may decide.
  const live = new Set();

  let snapshotCache = null;

  const client = Object.freeze({
    /** The current snapshot: the same deeply frozen object until the revision changes. */
    getSnapshot() {
      const revision = core.revision();
      if (snapshotCache === null || snapshotCache.revision !== revision) {
        snapshotCache = { revision, value: fromCore(core.snapshotJson()) };
      }
      return snapshotCache.value;
    },
    /** The capabilities passing `filter` (`{ context, availableOnly, scopeId, effect }`). */
    listCapabilities(filter = {}) {
      return fromCore(core.listJson(toJsonText(filter)));
    },
    /** Calls `listener()` once per snapshot revision; returns the unsubscribe function. */
    subscribe(listener) {
      const sub = core.subscribe(() => {
        try {
          listener();
        } catch {
          // listener exceptions are isolated
        }
      });
      live.add(sub);
      let active = true;
      return () => {
        if (active) {
          active = false;
          live.delete(sub);
          sub.unsubscribe();
          sub.free();
        }
      };
    },
    /**
     * A Promise of the outcome. rcip extension: the Promise's
     * `invocationId` property is the invocation id, known at once.
     */
    invoke({ capabilityId, input, invocationId, signal } = {}) {
      const text = toJsonText(input);
      const { promise, id } = settleWith(
        (token, done) =>
          token
            ? core.invokeWithToken(capabilityId, text, invocationId, token, done)
            : core.invoke(capabilityId, text, invocationId, done),
        signal,
      );
      promise.invocationId = id;
      return promise;
    },
    /**
     * rcip: checks 1 to 16 proposals `[{ capabilityId, input }]` without
     * running handlers; a Promise of the report. Rejects with the core's
     * error (code PREFLIGHT_BATCH_INVALID) for another count.
     */
    preflight(requests, { signal } = {}) {
      const ids = requests.map((r) => String(r.capabilityId));
      const inputs = requests.map((r) => toJsonText(r.input));
      return settleWith(
        (token, done) =>
          token ? core.preflightWithToken(ids, inputs, token, done) : core.preflight(ids, inputs, done),
        signal,
      ).promise;
    },
  });

  const host = Object.freeze({
    /**
     * Binds `{ execute(input, { invocationId, capabilityId, semanticContext, signal }),
     * getAvailability?() }` to a catalog capability (a definition or its id);
     * returns the unbind function. Throws the core's NOT_IN_CATALOG or
     * ALREADY_BOUND.
     */
    bindCapability(definition, { execute, getAvailability } = {}) {
      const capabilityId = typeof definition === 'string' ? definition : definition.id;
      const handler = (inv) => {
        const settle = (finish) => {
          try {
            finish();
          } catch {
            // settled already (cancelled, or the runtime closed)
          } finally {
            inv.free();
            schedule();
          }
        };
        const controller = new AbortController();
        inv.onCancel(() => controller.abort());
        let result;
        try {
          result = execute(JSON.parse(inv.inputJson), {
            invocationId: inv.id,
            capabilityId: inv.capabilityId,
            semanticContext: fromCore(inv.contextJson),
            signal: controller.signal,
          });
        } catch (e) {
          settle(() => inv.fail(isAbort(e)));
          return;
        }
        if (isThenable(result)) {
          result.then(
            (out) => settle(() => inv.complete(toJsonText(out))),
            (e) => settle(() => inv.fail(isAbort(e))),
          );
        } else {
          settle(() => inv.complete(toJsonText(result)));
        }
      };
      const binding = core.bind(
        capabilityId,
        handler,
        typeof getAvailability === 'function' ? () => getAvailability() : undefined,
      );
      live.add(binding);
      let bound = true;
      return () => {
        if (bound) {
          bound = false;
          live.delete(binding);
          try {
            binding.unbind();
          } finally {
            binding.free();
          }
        }
      };
    },
    /** Publishes `{ activeScopeIds, primaryScopeId? }` and refreshes. */
    setContext(context) {
      core.setContextJson(toJsonText(context));
    },
    /** rcip: sets the context to `{ activeScopeIds: [] }` and refreshes. */
    clearContext() {
      core.clearContext();
    },
    /** Re-evaluates availability and notifies subscribers. */
    refresh() {
      core.refresh();
    },
    /** Resolves a confirmation; a Promise of the final (or rejected) outcome. */
    resolveConfirmation(confirmationId, approved) {
      return settleWith((_token, done) => core.resolveConfirmation(String(confirmationId), approved === true, done))
        .promise;
    },
  });

  return Object.freeze({
    client,
    host,
    /** rcip: runs the timers due now (for `timers: 'manual'`); how many ran. */
    runDueTimers() {
      const n = core.runDueTimers();
      schedule();
      return n;
    },
    /** rcip: closes the runtime; pending work settles as the core closes it. */
    close() {
      core.close();
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  });
}
