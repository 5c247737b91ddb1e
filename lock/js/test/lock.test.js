// Unit tests of the fencegate Node client, with no network: a fake
// transport answers as the proxy's lock API does, a fake clock moves time,
// and an @aws-sdk/client-s3 client (when installed) sends to a request
// handler that records instead of connecting. Run: npm test (in lock/js,
// after npm install) or FENCEGATE_MODULE=DIR node --test test/ for an
// installed copy. The proxy itself is tested by tests/e2e/test_client_node.py.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const path = require("node:path");

const pkg = process.env.FENCEGATE_MODULE || path.join(__dirname, "..");
const { Lock, FencegateError, LockHeld, LeaseLost } = require(pkg);

class Clock {
  constructor() { this.now = 1000; }
}

function fakeProxy(answers) {
  const calls = [];
  const fn = typeof answers === "function" ? answers : null;
  const list = Array.isArray(answers) ? [...answers] : [];
  const transport = async ({ method, url, headers, body }) => {
    const op = url.split("/").pop();
    calls.push({ method, url, headers, body, payload: body ? JSON.parse(body) : undefined, op });
    const [status, obj] = fn ? fn(op) : list.shift();
    return { status, body: typeof obj === "string" ? obj : JSON.stringify(obj) };
  };
  return { calls, transport, ops: () => calls.map((c) => c.op) };
}

// Resolves with the signal's reason once aborted; the timer keeps the event
// loop alive (the lock's own timers are unref'd) and fails after ms.
function aborted(signal, ms = 3000) {
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
    signal.addEventListener("abort", () => { clearTimeout(guard); resolve(signal.reason); });
  });
}

const GRANT = { lock: "jobs", epoch: 7, holder: "w1", ttlMs: 30000 };
const HELD = { error: "LockHeld", message: "held", holder: "w0", epoch: 6, retryAfterMs: 2500 };
const LOST = { error: "LockLost", message: "epoch 7 is not current", epoch: 7, currentEpoch: 8 };

function newLock(proxy, opts = {}) {
  const clock = opts.clockObj || new Clock();
  return new Lock({
    endpoint: "http://gate:8080", name: "jobs", holder: "w1", credentials: false, keep: false,
    transport: proxy.transport, clock: () => clock.now,
    sleep: async (ms) => { clock.now += ms; }, ...opts,
  });
}

test("acquire: epoch, deadline from the send time, JSON body", async () => {
  const clock = new Clock();
  const p = fakeProxy([[200, GRANT]]);
  const lk = newLock(p, { clockObj: clock, ttlMs: 12500 });
  assert.equal(await lk.acquire(), 7);
  assert.equal(lk.epoch, 7);
  assert.equal(lk.deadline, 1000 + 12500);
  assert.equal(p.calls[0].method, "POST");
  assert.equal(p.calls[0].url, "http://gate:8080/_fence/locks/jobs/acquire");
  assert.deepEqual(p.calls[0].payload, { ttlMs: 12500, holder: "w1" });
  assert.equal(p.calls[0].headers.authorization, undefined);
  assert.equal(lk.signal.aborted, false);
});

test("acquire: a held lock is LockHeld with its holder", async () => {
  const lk = newLock(fakeProxy([[409, HELD]]));
  await assert.rejects(lk.acquire(), (e) => e instanceof LockHeld && e.holder === "w0" &&
    e.epoch === 6 && e.retryAfterMs === 2500);
  assert.equal(lk.epoch, null);
});

test("acquire: waitMs polls until free, at most every second", async () => {
  const clock = new Clock();
  const p = fakeProxy([[409, HELD], [409, HELD], [200, GRANT]]);
  const lk = newLock(p, { clockObj: clock });
  assert.equal(await lk.acquire({ waitMs: 5000 }), 7);
  assert.deepEqual(p.ops(), ["acquire", "acquire", "acquire"]);
  assert.equal(clock.now, 3000);
  assert.equal(lk.deadline, 3000 + 30000);
});

test("acquire: waitMs gives up", async () => {
  const clock = new Clock();
  const lk = newLock(fakeProxy(() => [409, HELD]), { clockObj: clock });
  await assert.rejects(lk.acquire({ waitMs: 2500 }), LockHeld);
  assert.ok(clock.now <= 3500);
});

test("errors: S3 XML and JSON bodies give the proxy's code; not LockHeld", async () => {
  const xml = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no lock permission</Message></Error>";
  let lk = newLock(fakeProxy([[403, xml]]));
  await assert.rejects(lk.acquire(), (e) => e instanceof FencegateError && !(e instanceof LockHeld) &&
    e.status === 403 && e.code === "AccessDenied" && /no lock permission/.test(e.message));
  lk = newLock(fakeProxy([[503, { error: "ServiceUnavailable", message: "store down" }]]));
  await assert.rejects(lk.acquire(), (e) => e.code === "ServiceUnavailable");
  lk = newLock({ transport: async () => { throw new Error("ECONNREFUSED"); } });
  await assert.rejects(lk.acquire(), (e) => e instanceof FencegateError && e.status === undefined);
});

test("renew: sends epoch and ttlMs, extends the deadline", async () => {
  const clock = new Clock();
  const p = fakeProxy([[200, GRANT], [200, GRANT]]);
  const lk = newLock(p, { clockObj: clock, ttlMs: 9000 });
  await lk.acquire();
  clock.now += 5000;
  await lk.renew();
  assert.deepEqual(p.calls[1].payload, { epoch: 7, ttlMs: 9000 });
  assert.equal(lk.deadline, 6000 + 9000);
});

test("renew: refused is lost, the signal aborts with LeaseLost", async () => {
  const lk = newLock(fakeProxy([[200, GRANT], [409, LOST]]));
  await lk.acquire();
  await assert.rejects(lk.renew(), (e) => e instanceof LeaseLost && e.currentEpoch === 8);
  assert.equal(lk.lost, true);
  assert.equal(lk.signal.aborted, true);
  assert.ok(lk.signal.reason instanceof LeaseLost);
  assert.throws(() => lk.check(), LeaseLost);
});

test("past the deadline: lost without asking the proxy", async () => {
  const clock = new Clock();
  const p = fakeProxy([[200, GRANT]]);
  const lk = newLock(p, { clockObj: clock, ttlMs: 3000 });
  await lk.acquire();
  assert.equal(lk.check(), 7);
  clock.now += 3000;
  assert.throws(() => lk.check(), LeaseLost);
  await assert.rejects(lk.renew(), LeaseLost);
  assert.deepEqual(p.ops(), ["acquire"]);
  assert.equal(lk.signal.aborted, true);
});

test("a failed renewal keeps the lease", async () => {
  const lk = newLock(fakeProxy([[200, GRANT], [503, { error: "ServiceUnavailable", message: "x" }]]));
  await lk.acquire();
  await assert.rejects(lk.renew(), (e) => !(e instanceof LeaseLost) && e.status === 503);
  assert.equal(lk.lost, false);
  assert.equal(lk.check(), 7);
});

test("release, and run(): acquire, fn, release; LeaseLost if lost inside", async () => {
  let p = fakeProxy([[200, GRANT], [200, { ...GRANT, released: true }]]);
  let lk = newLock(p);
  await lk.acquire();
  await lk.release();
  assert.deepEqual(p.calls[1].payload, { epoch: 7 });
  assert.equal(lk.deadline, null);
  assert.throws(() => lk.check(), LeaseLost);

  p = fakeProxy([[200, GRANT], [200, GRANT]]);
  lk = newLock(p);
  assert.equal(await lk.run(async (signal) => { assert.equal(signal.aborted, false); return 42; }), 42);
  assert.deepEqual(p.ops(), ["acquire", "release"]);

  const clock = new Clock();
  p = fakeProxy([[200, GRANT], [409, LOST]]);
  lk = newLock(p, { clockObj: clock, ttlMs: 1000 });
  await assert.rejects(lk.run(async () => { clock.now += 1000; }), LeaseLost);
  assert.deepEqual(p.ops(), ["acquire", "release"]); // a quiet release: maybe still the latest

  p = fakeProxy([[200, GRANT], [200, GRANT]]);
  lk = newLock(p);
  await assert.rejects(lk.run(async () => { throw new RangeError("mine"); }), RangeError);
  assert.deepEqual(p.ops(), ["acquire", "release"]);
});

test("the renewal timer renews every ttl/3 (real clock)", async () => {
  const p = fakeProxy(() => [200, GRANT]);
  const lk = new Lock({ endpoint: "http://gate:8080", name: "jobs", ttlMs: 300, credentials: false, transport: p.transport });
  await lk.acquire();
  await new Promise((r) => setTimeout(r, 750));
  await lk.release();
  const renews = p.ops().filter((o) => o === "renew").length;
  assert.ok(renews >= 4 && renews <= 8, `renews: ${renews}`);
  assert.equal(lk.lost, false);
});

test("the renewal timer: refused renewal aborts the signal (real clock)", async () => {
  const p = fakeProxy((op) => (op === "renew" ? [409, LOST] : [200, GRANT]));
  const lk = new Lock({ endpoint: "http://gate:8080", name: "jobs", ttlMs: 300, credentials: false, transport: p.transport });
  await lk.acquire();
  const reason = await aborted(lk.signal);
  assert.ok(reason instanceof LeaseLost);
  assert.match(lk.lostReason, /renewal refused/);
});

test("the renewal timer: an unreachable proxy loses the lease at the deadline (real clock)", async () => {
  const p = fakeProxy((op) => (op === "renew" ? [503, { error: "ServiceUnavailable", message: "down" }] : [200, GRANT]));
  const lk = new Lock({ endpoint: "http://gate:8080", name: "jobs", ttlMs: 400, credentials: false, transport: p.transport });
  const t0 = performance.now();
  await lk.acquire();
  await aborted(lk.signal);
  assert.ok(performance.now() - t0 >= 399);
  assert.match(lk.lostReason, /deadline/);
  assert.ok(p.ops().filter((o) => o === "renew").length >= 2);
  assert.ok(lk.lastError);
});

test("lock calls are SigV4-signed for s3 with the payload hash", async () => {
  const p = fakeProxy([[200, GRANT]]);
  const lk = new Lock({ endpoint: "http://127.0.0.1:8080", name: "jobs", region: "eu-west-1", keep: false,
    credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" }, transport: p.transport });
  await lk.acquire();
  const h = p.calls[0].headers;
  assert.match(h.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/s3\/aws4_request/);
  assert.match(h.authorization.split("SignedHeaders=")[1], /x-amz-content-sha256/);
  assert.equal(h["x-amz-content-sha256"], crypto.createHash("sha256").update(p.calls[0].body).digest("hex"));
});

// ---- attach: needs @aws-sdk/client-s3 -------------------------------------

let sdk = null;
try {
  sdk = require(require.resolve("@aws-sdk/client-s3", { paths: [pkg, process.cwd()] }));
} catch (_) { /* not installed: the attach tests are skipped */ }

function recordingClient() {
  const sent = [];
  const { Readable } = require("node:stream");
  const client = new sdk.S3Client({
    endpoint: "http://127.0.0.1:9", region: "us-east-1", forcePathStyle: true, maxAttempts: 1,
    credentials: { accessKeyId: "k", secretAccessKey: "s" },
    requestHandler: {
      handle: async (request) => {
        sent.push(request);
        const xml = "<CopyObjectResult><ETag>\"e\"</ETag></CopyObjectResult>"; // what a copy answers
        return { response: { statusCode: 200, headers: { etag: "\"e\"" }, body: Readable.from([Buffer.from(xml)]) } };
      },
    },
  });
  return { client, sent };
}

test("attach: writes carry the signed token and lock; reads do not; past the deadline nothing is sent",
  { skip: !sdk && "@aws-sdk/client-s3 not installed" }, async () => {
    const clock = new Clock();
    const lk = newLock(fakeProxy([[200, GRANT]]), { clockObj: clock, ttlMs: 10000 });
    await lk.acquire();
    const { client, sent } = recordingClient();
    assert.equal(lk.attach(client), client);
    await client.send(new sdk.PutObjectCommand({ Bucket: "jobs", Key: "k", Body: "v" }));
    await client.send(new sdk.DeleteObjectCommand({ Bucket: "jobs", Key: "k" }));
    await client.send(new sdk.CopyObjectCommand({ Bucket: "jobs", Key: "k2", CopySource: "jobs/k" }));
    assert.equal(sent.length, 3);
    for (const req of sent) {
      assert.equal(req.headers["x-fencing-token"], "7");
      assert.equal(req.headers["x-fencing-lock"], "jobs");
      const signedHeaders = req.headers.authorization.split("SignedHeaders=")[1];
      assert.match(signedHeaders, /x-fencing-lock;x-fencing-token/);
    }
    await client.send(new sdk.HeadObjectCommand({ Bucket: "jobs", Key: "k" }));
    assert.equal(sent[3].headers["x-fencing-token"], undefined);

    clock.now += 10000;
    await assert.rejects(client.send(new sdk.PutObjectCommand({ Bucket: "jobs", Key: "k", Body: "v" })), LeaseLost);
    assert.equal(sent.length, 4);
    assert.equal(lk.lost, true);
    await client.send(new sdk.HeadObjectCommand({ Bucket: "jobs", Key: "k" })); // reads still go
    assert.equal(sent.length, 5);
    lk.detach(client);
    await client.send(new sdk.PutObjectCommand({ Bucket: "jobs", Key: "k", Body: "v" }));
    assert.equal(sent[5].headers["x-fencing-token"], undefined);
  });
