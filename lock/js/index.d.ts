// Types of the fencegate lock client (index.js).
export interface Credentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
export interface LockOptions {
  endpoint: string;
  name: string;
  ttlMs?: number;
  holder?: string;
  credentials?: false | Credentials | (() => Promise<Credentials>);
  region?: string;
  ca?: string;
  timeoutMs?: number;
  keep?: boolean;
}
export class FencegateError extends Error { status?: number; code?: string }
export class LockHeld extends FencegateError { holder?: string; epoch?: number; retryAfterMs?: number }
export class LeaseLost extends FencegateError { epoch?: number; currentEpoch?: number }
export class Lock {
  constructor(options: LockOptions);
  readonly name: string;
  readonly epoch: number | null;
  readonly deadline: number | null;
  readonly lost: boolean;
  readonly signal: AbortSignal;
  lostReason: string | null;
  lastError: Error | null;
  remainingMs(): number;
  check(): number;
  acquire(options?: { waitMs?: number }): Promise<number>;
  renew(): Promise<number>;
  release(): Promise<void>;
  status(): Promise<Record<string, unknown>>;
  run<T>(fn: (signal: AbortSignal, lock: Lock) => Promise<T>, options?: { waitMs?: number }): Promise<T>;
  attach<C extends { middlewareStack: unknown }>(client: C, options?: { lockName?: boolean }): C;
  detach(client: { middlewareStack: unknown }): void;
}
