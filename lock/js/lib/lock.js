// lock.js — Lock: one lease on a lock of fencegate's lock HTTP API, held by
// this process. It acquires (an epoch: the fencing token), renews on a timer
// every ttl/3, and keeps the lease's end by the process's monotonic clock
// (performance.now()), so a worker that was paused (GC, SIGSTOP, a stalled
// network) knows its lease is over without asking anyone; `signal` aborts
// when it is. It does not fence writes: the proxy does, from the token the
// writes carry (lock.attach, attach.js).
//
// States: idle (no epoch), held (epoch set, not lost, deadline ahead), lost
// (renewal refused or deadline passed — final until the next acquire; the
// signal is aborted), released (epoch kept for reference, deadline null).
"use strict";

const os = require("node:os");
const { performance } = require("node:perf_hooks");
const { FencegateError, LeaseLost, LockHeld } = require("./errors");
const { Caller, lockPath } = require("./http");
const { attach, detach } = require("./attach");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Lock {
  /**
   * endpoint: the proxy (http[s]://host:port); name: the lock; ttlMs: lease
   * length; holder: a label (default host:pid); credentials: undefined (the
   * AWS chain), false (unsigned) or {accessKeyId, secretAccessKey,
   * sessionToken} or a provider; region (default AWS_REGION, else
   * us-east-1); ca: PEM text of a CA bundle (default AWS_CA_BUNDLE /
   * SSL_CERT_FILE); timeoutMs per call; keep: renew on a timer after
   * acquire (default true). clock, sleep and transport are for tests.
   */
  constructor({ endpoint, name, ttlMs = 30000, holder, credentials, region, ca, timeoutMs = 10000,
    keep = true, transport, clock = () => performance.now(), sleep: sleepFn = sleep } = {}) {
    if (!endpoint || !name) throw new TypeError("Lock needs endpoint and name");
    if (!(ttlMs > 0)) throw new TypeError("ttlMs must be positive");
    this.name = name;
    this.ttlMs = Math.round(ttlMs);
    this.holder = holder || `${os.hostname()}:${process.pid}`;
    this.keep = keep;
    this.timeoutMs = timeoutMs;
    this.lostReason = null;
    this.lastError = null; // the last renewal failure that was retried
    this._caller = new Caller({ endpoint, credentials, region, ca, timeoutMs, transport });
    this._clock = clock;
    this._sleep = sleepFn;
    this._epoch = null;
    this._deadline = null;
    this._lost = false;
    this._controller = new AbortController();
    this._renewTimer = null;
    this._deadlineTimer = null;
  }

  /** The fencing token of the lease last acquired, or null. */
  get epoch() { return this._epoch; }
  /** When the lease ends by performance.now(), or null when not held. */
  get deadline() { return this._deadline; }
  get lost() { return this._lost; }
  /** Aborted (reason: a LeaseLost) when the lease is lost. */
  get signal() { return this._controller.signal; }

  remainingMs() {
    return this._deadline === null || this._lost ? 0 : Math.max(0, this._deadline - this._clock());
  }

  _lose(reason) {
    if (this._lost) return;
    this._lost = true;
    this.lostReason = reason;
    this._stopTimers();
    this._controller.abort(new LeaseLost(`lease on lock "${this.name}" (epoch ${this._epoch}) lost: ${reason}`,
      { epoch: this._epoch }));
  }

  /** The epoch while the lease is held and ahead of its deadline; otherwise
   * marks it lost and throws LeaseLost. */
  check() {
    if (this._epoch === null || this._deadline === null) {
      throw new LeaseLost(`lock "${this.name}" is not held`, { epoch: this._epoch });
    }
    if (!this._lost && this._clock() >= this._deadline) {
      this._lose(`the lease of epoch ${this._epoch} passed its deadline before a renewal`);
    }
    if (this._lost) {
      throw new LeaseLost(`lease on lock "${this.name}" (epoch ${this._epoch}) lost: ${this.lostReason}`,
        { epoch: this._epoch });
    }
    return this._epoch;
  }

  // The error for a renewal or release that did not succeed: LeaseLost (and
  // the lease lost) when the proxy says the epoch is no longer current.
  _refused(op, epoch, status, obj) {
    if (status === 409 && obj.error === "LockLost") {
      if (this._epoch === epoch) this._lose(`${op} refused: epoch ${obj.currentEpoch} is current`);
      return new LeaseLost(obj.message || "lease lost", { epoch, currentEpoch: obj.currentEpoch });
    }
    return this._failed(op, status, obj);
  }

  _failed(op, status, obj) {
    return new FencegateError(`${op} of lock "${this.name}": HTTP ${status} ${obj.error || ""}: ${obj.message || ""}`,
      { status, code: obj.error });
  }

  /** Takes the lock; resolves to the epoch. A held lock is polled for up to
   * waitMs, then LockHeld (holder, epoch, retryAfterMs). Starts renewing
   * unless the Lock was made with keep: false. */
  async acquire({ waitMs = 0 } = {}) {
    const end = this._clock() + waitMs;
    for (;;) {
      const t0 = this._clock();
      const { status, obj } = await this._caller.call("POST", lockPath(this.name, "acquire"),
        { ttlMs: this.ttlMs, holder: this.holder });
      if (status === 200) {
        this._stopTimers();
        this._epoch = Number(obj.epoch);
        this._deadline = t0 + this.ttlMs; // sent at t0: ends no later
        this._lost = false;
        this.lostReason = null;
        this._controller = new AbortController();
        if (this.keep) this._startTimers();
        return this._epoch;
      }
      if (status !== 409 || obj.error !== "LockHeld") throw this._failed("acquire", status, obj);
      const retry = Number(obj.retryAfterMs) || 1000;
      const left = end - this._clock();
      if (left <= 0) {
        throw new LockHeld(obj.message || `lock "${this.name}" is held`,
          { holder: obj.holder, epoch: obj.epoch, retryAfterMs: retry });
      }
      await this._sleep(Math.max(50, Math.min(retry, 1000, left)));
    }
  }

  /** Extends the lease by ttlMs from now. LeaseLost (and lost) if another
   * epoch took over or the deadline already passed; FencegateError for
   * other failures (the lease unchanged). */
  async renew() {
    const epoch = this.check();
    const t0 = this._clock();
    const timeout = Math.max(100, Math.min(this.timeoutMs, this._deadline - t0));
    const { status, obj } = await this._caller.call("POST", lockPath(this.name, "renew"),
      { epoch, ttlMs: this.ttlMs }, timeout);
    if (status === 200) {
      if (this._epoch === epoch && !this._lost) {
        this._deadline = t0 + this.ttlMs;
        if (this._deadlineTimer) this._armDeadline();
      }
      return this.check();
    }
    throw this._refused("renewal", epoch, status, obj);
  }

  /** Stops renewing and ends the lease. LeaseLost if the proxy says the
   * epoch was no longer ours, FencegateError on other errors. */
  async release() {
    this._stopTimers();
    const epoch = this._epoch;
    if (epoch === null) return;
    const { status, obj } = await this._caller.call("POST", lockPath(this.name, "release"), { epoch });
    this._deadline = null;
    if (status === 200) return;
    throw this._refused("release", epoch, status, obj);
  }

  // A lost lease may still be the latest (nobody took over): release it so
  // others need not wait for it to lapse; any answer is fine.
  async _releaseQuietly() {
    this._stopTimers();
    const epoch = this._epoch;
    this._deadline = null;
    if (epoch === null) return;
    await this._caller.call("POST", lockPath(this.name, "release"), { epoch }).catch(() => {});
  }

  /** The lock's status as the proxy reports it. */
  async status() {
    const { status, obj } = await this._caller.call("GET", lockPath(this.name));
    if (status !== 200) throw this._failed("status", status, obj);
    return obj;
  }

  /** Acquires, runs fn(signal, lock), releases; rejects with LeaseLost if
   * the lease was lost meanwhile (fn's own error wins). */
  async run(fn, { waitMs = 0 } = {}) {
    await this.acquire({ waitMs });
    let result;
    try {
      result = await fn(this.signal, this);
    } catch (e) {
      await this._releaseQuietly();
      throw e;
    }
    try {
      this.check();
    } catch (e) {
      await this._releaseQuietly();
      throw e;
    }
    await this.release();
    return result;
  }

  // ---- renewal timers -----------------------------------------------------

  _startTimers() {
    this._armDeadline();
    this._armRenew(this.ttlMs / 3);
  }

  _armDeadline() {
    clearTimeout(this._deadlineTimer);
    this._deadlineTimer = setTimeout(() => {
      if (this._deadline !== null && this._clock() >= this._deadline) {
        this._lose("the lease passed its deadline before a renewal");
      } else if (this._deadline !== null) {
        this._armDeadline();
      }
    }, Math.max(0, this._deadline - this._clock()));
    this._deadlineTimer.unref();
  }

  _armRenew(ms) {
    clearTimeout(this._renewTimer);
    this._renewTimer = setTimeout(() => this._renewTick(), ms);
    this._renewTimer.unref();
  }

  async _renewTick() {
    this._renewTimer = null;
    if (this._lost || this._deadline === null) return;
    try {
      await this.renew();
      if (!this._lost && this._deadline !== null) this._armRenew(this.ttlMs / 3);
    } catch (e) {
      if (e instanceof LeaseLost) return;
      this.lastError = e;
      if (!this._lost && this._deadline !== null) this._armRenew(Math.min(this.ttlMs / 9, 1000));
    }
  }

  _stopTimers() {
    clearTimeout(this._renewTimer);
    clearTimeout(this._deadlineTimer);
    this._renewTimer = null;
    this._deadlineTimer = null;
  }

  /** Adds middleware to an @aws-sdk/client-s3 v3 client: the token (and,
   * with lockName, the lock's name) on every object write, signed; a write
   * throws LeaseLost instead of being sent once the lease is lost or past
   * its deadline. Returns the client. */
  attach(client, { lockName = true } = {}) {
    return attach(this, client, lockName);
  }

  /** Undoes attach(client). */
  detach(client) {
    detach(this, client);
  }
}

module.exports = { Lock };
