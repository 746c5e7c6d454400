// The WebAssembly smoke test of the rcip core (docs/ARCHITECTURE.md,
// "Platforms"; `make test-wasm`). Loads the rcip-wasm-smoke module built for
// wasm32-unknown-unknown, gives it a clock it controls (env.now_ms), entropy
// for the hash seeds (env.random_fill, crypto.getRandomValues) and a panic
// reporter, runs its steps (crates/rcip-wasm-smoke/src/lib.rs) and asserts
// every outcome against docs/PIPELINE.md (sections 4, 5 and 8). Prints
// `wasm smoke: N passed, M failed` last; exits 1 on any failure.
//
// Usage: node tests/wasm/smoke.mjs PATH/TO/rcip_wasm_smoke.wasm

import { readFileSync } from "node:fs";
import { webcrypto } from "node:crypto";

const path = process.argv[2];
if (!path) {
  console.error("usage: node tests/wasm/smoke.mjs PATH/TO/rcip_wasm_smoke.wasm");
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}
function finish() {
  console.log(`wasm smoke: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

// The host clock, epoch milliseconds; only this script moves it.
let now = Date.UTC(2026, 0, 15, 9, 0, 0);
let memory;
let panicText = null;
const decoder = new TextDecoder();
const imports = {
  env: {
    now_ms: () => now,
    random_fill: (ptr, len) => {
      // getRandomValues fills at most 65536 bytes a call.
      for (let off = 0; off < len; off += 65536) {
        webcrypto.getRandomValues(new Uint8Array(memory.buffer, ptr + off, Math.min(65536, len - off)));
      }
      return 0;
    },
    panic_message: (ptr, len) => {
      panicText = decoder.decode(new Uint8Array(memory.buffer, ptr, len));
    },
  },
};

const module = new WebAssembly.Module(readFileSync(path));
const foreign = WebAssembly.Module.imports(module).filter((i) => i.module !== "env");
if (foreign.length > 0) {
  // wasm-bindgen imports: getrandom's wasm_js backend was linked instead of
  // the custom one (build with RUSTFLAGS='--cfg getrandom_backend="custom"').
  check("the module imports only env.*", false, foreign.map((i) => `${i.module}.${i.name}`));
  finish();
}
const instance = await WebAssembly.instantiate(module, imports);
memory = instance.exports.memory;
const ex = instance.exports;

// Runs one step and parses its report.
function step(name) {
  let len;
  try {
    len = ex[name]();
  } catch (e) {
    check(`${name} runs without a trap`, false, panicText ?? String(e));
    finish();
  }
  const ptr = ex.smoke_report_ptr();
  const report = JSON.parse(decoder.decode(new Uint8Array(memory.buffer, ptr, len)));
  check(`${name} reports no step error`, report.error === undefined || report.error === null, report.error);
  return report;
}
const phases = (seen) => seen.events.map((e) => `${e.invocationId}:${e.phase}${e.errorCode ? `:${e.errorCode}` : ""}`);

// ---- setup: catalog, the clockless builder, the smoke runtime
const setup = step("smoke_setup");
check("platform: no threads, no system clock", setup.platform.threads === false && setup.platform.systemClock === false, setup.platform);
check(
  "try_build without a clock is refused, naming RuntimeBuilder::clock",
  typeof setup.tryBuildWithoutClock === "string" && setup.tryBuildWithoutClock.includes("RuntimeBuilder::clock"),
  setup.tryBuildWithoutClock,
);
check("build without a clock falls back without a trap", setup.fallbackBuilt === true && setup.fallbackNextDeadline === null, setup);
check("the builder bindings are in revision 0", setup.revision === 0, setup.revision);
check(
  "the three capabilities listed",
  Array.isArray(setup.listed) && setup.listed.map((c) => c.id).join(",") === "notes.list,notes.add,notes.sync",
  setup.listed,
);

// ---- invocations, two confirmations, one approval
const run = step("smoke_run");
check("valid read succeeds", run.read.status === "succeeded" && run.read.output?.notes?.length === 2, run.read);
check(
  "schema-invalid read fails INPUT_INVALID with issues",
  run.invalid.status === "failed" && run.invalid.error?.code === "INPUT_INVALID" && run.invalid.error?.validationIssues?.length === 2,
  run.invalid,
);
check(
  "non-JSON input fails INPUT_INVALID without issues",
  run.notJson.status === "failed" && run.notJson.error?.code === "INPUT_INVALID" && !(run.notJson.error?.validationIssues?.length > 0),
  run.notJson,
);
for (const [name, w] of [["write1", run.write1], ["write2", run.write2]]) {
  check(
    `${name} asks for confirmation, expiring TTL after the host clock`,
    w.status === "confirmation_required" && w.confirmation?.expiresAt === run.now + 30000 && w.confirmation?.effect === "write",
    w,
  );
}
check(
  "the policy's reason is the confirmation's description",
  run.write1.confirmation?.description === "Adding a note needs the user's approval.",
  run.write1.confirmation,
);
check("approval re-runs the write: succeeded", run.approved.status === "succeeded" && run.approved.output?.saved === true, run.approved);
check("next deadline is the second confirmation's", run.nextDeadline === run.write2.confirmation?.expiresAt, run);
check("the second confirmation is pending", run.expiringPending === true, run);
check(
  "lifecycle events in order, stamped by the host clock",
  phases(run.seen).join(" ") ===
    [
      "read-1:requested", "read-1:started", "read-1:succeeded",
      "read-2:requested", "read-2:failed:INPUT_INVALID",
      "write-1:requested", "write-1:confirmation_requested",
      "write-2:requested", "write-2:confirmation_requested",
      "write-1:requested", "write-1:started", "write-1:succeeded",
    ].join(" ") && run.seen.events.every((e) => e.timestamp === run.now),
  phases(run.seen),
);
check("handlers ran for read-1 and the approved write-1 only", run.seen.handled.join(",") === "read-1,write-1", run.seen.handled);
check(
  "confirmation notices: opened, opened, closed approved",
  run.seen.confirmations.map((c) => c.event + (c.reason ? `:${c.reason}` : "")).join(",") === "opened,opened,closed:approved",
  run.seen.confirmations,
);

// ---- expiry by the host clock and manual timers
now = run.nextDeadline - 1;
const early = step("smoke_run_due_timers");
check("one millisecond early nothing expires", early.expired === 0 && early.expiringPending === true, early);
now = run.nextDeadline;
const due = step("smoke_run_due_timers");
check("at expiresAt the confirmation expires", due.expired === 1 && due.expiringPending === false && due.nextDeadline === null, due);
check(
  "expiry event: write-2 failed CONFIRMATION_EXPIRED stamped expiresAt",
  phases(due.seen).join(" ") === "write-2:failed:CONFIRMATION_EXPIRED" && due.seen.events[0]?.timestamp === run.nextDeadline,
  due.seen.events,
);
check(
  "expiry notice: closed expired",
  due.seen.confirmations.length === 1 && due.seen.confirmations[0].event === "closed" && due.seen.confirmations[0].reason === "expired",
  due.seen.confirmations,
);

// ---- after the expiry
const after = step("smoke_after_expiry");
check(
  "approving the expired confirmation returns its receipt CONFIRMATION_EXPIRED",
  after.receipt.status === "failed" && after.receipt.error?.code === "CONFIRMATION_EXPIRED" && after.receipt.invocationId === "write-2",
  after.receipt,
);
check("the receipt is returned once, then CONFIRMATION_NOT_FOUND", after.receiptAgain.error?.code === "CONFIRMATION_NOT_FOUND", after.receiptAgain);
check("the approved confirmation is gone: CONFIRMATION_NOT_FOUND", after.approvedAgain.error?.code === "CONFIRMATION_NOT_FOUND", after.approvedAgain);
check("a blocking invoke of a synchronous handler works", after.blocking?.status === "succeeded", after);
check("a wait for an outcome that arrived takes it", after.waited?.status === "succeeded", after.waited);
check("a wait for an outcome still to come answers WrongContext at once", after.syncWait === "WrongContext", after.syncWait);
check("a poll for it answers TimedOut", after.syncPoll === "TimedOut", after.syncPoll);
check(
  "a blocking invoke of a deferred handler is refused, not blocked",
  typeof after.syncBlockingError === "string" && after.syncBlockingError.includes("no threads"),
  after.syncBlockingError,
);
check("the host's event loop settles both deferred invocations", after.settled === 2, after.settled);
check("then the pending outcome is there", after.syncAfter?.status === "succeeded" && after.syncAfter?.output?.synced === 2, after.syncAfter);
check("nothing is left pending", after.stats?.pendingConfirmations === 0 && after.stats?.pendingInvocations === 0, after.stats);

// ---- close
const closed = step("smoke_close");
check("the runtime closes", closed.closed === true && closed.stats?.closed === true, closed);

finish();
