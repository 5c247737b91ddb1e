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
// "probe": one acquire, prints "epoch N" or "error STATUS CODE"; "ops":
// through an attached client, a 2-part multipart upload to "big" (5 MiB of
// "a", 1 MiB of "b"), CopyObject to big-copy, DeleteObjects of big, a put
// and a DeleteObject of "small"; then detached, a put of "small" that must
// fail; prints "ops ok STATUS" (that failure's status). It prints
// and exits: "lost-client ..." 3 (LeaseLost), "refused-proxy CODE STATUS" 4.
// FENCEGATE_UNSIGNED=1 sends unsigned lock calls.
"use strict";

const {
  S3Client, PutObjectCommand, CreateMultipartUploadCommand, UploadPartCommand,
  CompleteMultipartUploadCommand, CopyObjectCommand, DeleteObjectsCommand, DeleteObjectCommand,
} = require("@aws-sdk/client-s3");
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
  if (mode === "ops") {
    await lock.acquire();
    lock.attach(s3);
    const up = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "big" }));
    const parts = [];
    for (const [n, fill, size] of [[1, "a", 5 << 20], [2, "b", 1 << 20]]) {
      const r = await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "big", UploadId: up.UploadId,
        PartNumber: n, Body: Buffer.alloc(size, fill) }));
      parts.push({ PartNumber: n, ETag: r.ETag });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: "big", UploadId: up.UploadId,
      MultipartUpload: { Parts: parts } }));
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: "big-copy", CopySource: `${bucket}/big` }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "small", Body: "s" }));
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: "big" }] } }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "small" }));
    await lock.release();
    lock.detach(s3);
    const status = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "small", Body: "s" }))
      .then(() => 200, (e) => e.$metadata && e.$metadata.httpStatusCode);
    console.log(`ops ok ${status}`);
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
