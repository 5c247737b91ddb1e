// fenced_worker.cjs — a worker for the Node client's SIGSTOP tests
// (test_client_node.py), on the installed fencegate package and
// @aws-sdk/client-s3 (found through NODE_PATH).
//
//   node fenced_worker.cjs URL BUCKET KEY NAME TTL_S MODE
//
// MODE "attach": takes lock BUCKET, lock.attach(s3), writes NAME:i to
// BUCKET/KEY every 50 ms (at most 400 times), printing "wrote i"; "raw": the
// same with only the token header put on (so the proxy must refuse);
// "takeover": waits up to 10 s for the lock, writes NAME:final, releases;
// "probe": one acquire, prints "epoch N" or "error STATUS CODE". It prints
// and exits: "lost-client ..." 3 (LeaseLost), "refused-proxy CODE STATUS" 4.
// FENCEGATE_UNSIGNED=1 sends unsigned lock calls.
"use strict";

const { S3Client, PutObjectCommand } = require("@aws-sdk/client-s3");
const { Lock, LeaseLost, FencegateError } = require("fencegate");

const [url, bucket, key, name, ttl, mode] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const s3 = new S3Client({ endpoint: url, region: "us-east-1", forcePathStyle: true, maxAttempts: 1 });
  const lock = new Lock({ endpoint: url, name: bucket, ttlMs: Number(ttl) * 1000, holder: name,
    credentials: process.env.FENCEGATE_UNSIGNED ? false : undefined });
  if (mode === "probe") {
    try {
      console.log(`epoch ${await lock.acquire()}`);
      await lock.release();
    } catch (e) {
      if (!(e instanceof FencegateError)) throw e;
      console.log(`error ${e.status} ${e.code}`);
    }
    return 0;
  }
  if (mode === "takeover") {
    await lock.acquire({ waitMs: 10000 });
    lock.attach(s3);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${name}:final` }));
    console.log(`took epoch ${lock.epoch}`);
    await lock.release();
    return 0;
  }
  console.log(`epoch ${await lock.acquire()}`);
  if (mode === "attach") {
    lock.attach(s3);
  } else {
    s3.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === "PutObjectCommand") args.request.headers["x-fencing-token"] = String(lock.epoch);
      return next(args);
    }, { step: "build" });
  }
  try {
    for (let i = 1; i <= 400; i++) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `${name}:${i}` }));
      console.log(`wrote ${i}`);
      await sleep(50);
    }
  } catch (e) {
    if (e instanceof LeaseLost) {
      console.log(`signal aborted ${lock.signal.aborted}`);
      console.log(`lost-client ${e.message}`);
      return 3;
    }
    if (e.$metadata) {
      console.log(`refused-proxy ${e.name} ${e.$metadata.httpStatusCode}`);
      return 4;
    }
    throw e;
  }
  await lock.release();
  console.log("done");
  return 0;
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(1); });
