// errors.js — the exceptions of the fencegate lock client. Every one is a
// FencegateError; LockHeld and LeaseLost are answers (another worker holds
// the lock; this worker's lease is gone), not failures of the proxy or the
// network.
"use strict";

/** A lock call failed: status (HTTP, or undefined when no answer came),
 * code (the proxy's error code), message. */
class FencegateError extends Error {
  constructor(message, { status, code } = {}) {
    super(message);
    this.name = "FencegateError";
    this.status = status;
    this.code = code;
  }
}

/** acquire() found the lock held: holder and epoch of the current lease,
 * retryAfterMs until it lapses at most. */
class LockHeld extends FencegateError {
  constructor(message, { holder, epoch, retryAfterMs } = {}) {
    super(message, { status: 409, code: "LockHeld" });
    this.name = "LockHeld";
    this.holder = holder;
    this.epoch = epoch;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The lease is gone: a renewal was refused, or the worker's own monotonic
 * deadline passed first. No write may be sent under its epoch. */
class LeaseLost extends FencegateError {
  constructor(message, { epoch, currentEpoch } = {}) {
    super(message, { status: currentEpoch ? 409 : undefined, code: "LeaseLost" });
    this.name = "LeaseLost";
    this.epoch = epoch;
    this.currentEpoch = currentEpoch;
  }
}

module.exports = { FencegateError, LockHeld, LeaseLost };
