// TypeScript declarations for bindings/js/src/core.mjs (rcip for JavaScript).
// Shapes follow the reference's `@binaried/rcip/core` 2.0.x names; items marked
// rcip are extensions. Outcome, snapshot and event objects are the core's JSON
// (docs/PIPELINE.md) and are typed loosely where the core owns their shape.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The protocol version this runtime implements. */
export declare const RCIP_PROTOCOL_VERSION: '1.0';

/** rcip: JSON text passed to the core unchanged. Throws TypeError for a non-string. */
export interface RawJson { readonly __rcipRawJson: unique symbol }
export declare function rawJson(text: string): RawJson;

export interface RcipScopeDefinition { id: string; [key: string]: Json | undefined }
export interface RcipCapabilityDefinition<Input = Json, Output = Json> {
  id: string;
  readonly __input?: Input;
  readonly __output?: Output;
  [key: string]: unknown;
}
export interface RcipApplicationDefinition {
  application: { id: string; name: string; description?: string; [key: string]: Json | undefined };
  [key: string]: unknown;
}

export declare function defineRcipScope<S extends RcipScopeDefinition>(definition: S): S;
export declare function defineRcipCapability<Input = Json, Output = Json>(
  definition: Omit<RcipCapabilityDefinition<Input, Output>, '__input' | '__output'>,
): RcipCapabilityDefinition<Input, Output>;
export declare function defineRcipApplication<A extends RcipApplicationDefinition>(definition: A): A;

export interface RcipContext { activeScopeIds: string[]; primaryScopeId?: string }
export type RcipPolicyDecision = { decision: 'allow' | 'deny' | 'confirm'; reason?: string };

export interface RcipRuntimeOptions {
  policy?: (context: Json) => RcipPolicyDecision | Promise<RcipPolicyDecision>;
  confirmationTtlMs?: number;
  onEvent?: (event: Json) => void;
  /** rcip */ onConfirmation?: (notice: Json) => void;
  /** rcip: epoch milliseconds; default Date.now */ now?: () => number;
  /** rcip */ timers?: 'manual';
  /** rcip */ limits?: { maxPayloadLen?: number; maxDepth?: number };
  /** Not supported yet: throws TypeError when given. */ createId?: never;
}

export type RcipOutcome = { status: string; [key: string]: Json | undefined };

export interface RcipExecuteContext {
  invocationId: string;
  capabilityId: string;
  semanticContext: Json;
  signal: AbortSignal;
}

export interface RcipClient {
  getSnapshot(): Readonly<{ revision: number; [key: string]: unknown }>;
  listCapabilities(filter?: { context?: RcipContext; availableOnly?: boolean; scopeId?: string; effect?: string }): Json[];
  subscribe(listener: () => void): () => void;
  invoke<Input = Json>(request: {
    capabilityId: string;
    input?: Input | RawJson;
    invocationId?: string;
    signal?: AbortSignal;
  }): Promise<RcipOutcome> & { invocationId: string };
  preflight(requests: { capabilityId: string; input?: Json | RawJson }[], options?: { signal?: AbortSignal }): Promise<Json>;
}

export interface RcipHost {
  bindCapability<Input, Output>(
    definition: RcipCapabilityDefinition<Input, Output> | string,
    binding: {
      execute(input: Input, context: RcipExecuteContext): Output | RawJson | Promise<Output | RawJson>;
      getAvailability?(): Json;
    },
  ): () => void;
  setContext(context: RcipContext): void;
  /** rcip */ clearContext(): void;
  refresh(): void;
  resolveConfirmation(confirmationId: string, approved: boolean): Promise<RcipOutcome>;
}

export interface RcipRuntime {
  readonly client: RcipClient;
  readonly host: RcipHost;
  /** rcip */ runDueTimers(): number;
  /** rcip */ close(): void;
}

export declare function createRcipRuntime(
  definition: RcipApplicationDefinition,
  options?: RcipRuntimeOptions,
): RcipRuntime;
