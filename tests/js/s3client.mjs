// s3client.mjs — one S3 operation through the AWS SDK for JavaScript v3,
// for the end-to-end client suite (tests/e2e/test_clients_*.py).
//
//   node s3client.mjs ENDPOINT OP JSON-ARGS
//
// Credentials and region come from the standard AWS environment. Prints one
// JSON line: {"ok": true, ...result} or {"ok": false, "name", "status",
// "message"}; exits 0 either way (a failed S3 call is a result the test
// checks), 2 on bad usage. It decides nothing: the Python test asserts.
import { readFileSync } from "node:fs";
import {
  S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand,
  DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command,
  CopyObjectCommand, CreateBucketCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

const [endpoint, op, json] = process.argv.slice(2);
if (!endpoint || !op) {
  console.error("usage: node s3client.mjs ENDPOINT OP JSON-ARGS");
  process.exit(2);
}
const a = json ? JSON.parse(json) : {};
const client = new S3Client({
  endpoint, forcePathStyle: true, region: process.env.AWS_REGION || "us-east-1",
  maxAttempts: 1,
});
// an extra header on every request (X-Fencing-Token) when asked, signed
// like any other header because it is added before signing
if (a.headers) {
  client.middlewareStack.add((next) => async (args) => {
    for (const [k, v] of Object.entries(a.headers)) args.request.headers[k] = v;
    return next(args);
  }, { step: "build", name: "fencegateHeaders" });
}

const body = () => (a.file ? readFileSync(a.file) : Buffer.from(a.body ?? ""));

const ops = {
  async create_bucket() { await client.send(new CreateBucketCommand({ Bucket: a.bucket })); return {}; },
  async put() {
    const r = await client.send(new PutObjectCommand({
      Bucket: a.bucket, Key: a.key, Body: body(), Metadata: a.metadata,
      ContentType: a.contentType,
    }));
    return { etag: r.ETag };
  },
  async get() {
    const r = await client.send(new GetObjectCommand({ Bucket: a.bucket, Key: a.key }));
    const bytes = Buffer.from(await r.Body.transformToByteArray());
    return { body: bytes.toString("base64"), metadata: r.Metadata, etag: r.ETag };
  },
  async head() {
    const r = await client.send(new HeadObjectCommand({ Bucket: a.bucket, Key: a.key }));
    return { metadata: r.Metadata, etag: r.ETag, length: r.ContentLength };
  },
  async delete() { await client.send(new DeleteObjectCommand({ Bucket: a.bucket, Key: a.key })); return {}; },
  async delete_many() {
    const r = await client.send(new DeleteObjectsCommand({
      Bucket: a.bucket, Delete: { Objects: a.keys.map((Key) => ({ Key })) },
    }));
    return { deleted: (r.Deleted || []).map((d) => d.Key),
             errors: (r.Errors || []).map((e) => ({ key: e.Key, code: e.Code })) };
  },
  async list() {
    const keys = [];
    let token;
    do {
      const r = await client.send(new ListObjectsV2Command({
        Bucket: a.bucket, Prefix: a.prefix, ContinuationToken: token,
      }));
      for (const o of r.Contents || []) keys.push(o.Key);
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return { keys };
  },
  async copy() {
    const r = await client.send(new CopyObjectCommand({
      Bucket: a.bucket, Key: a.key, CopySource: `${a.bucket}/${encodeURIComponent(a.source)}`,
      Metadata: a.metadata, MetadataDirective: a.directive,
    }));
    return { etag: r.CopyObjectResult && r.CopyObjectResult.ETag };
  },
  // s3-request-presigner: a presigned PUT (a.method "put") or GET URL. With
  // the SDK's default checksums a presigned PUT carries the CRC32 of an
  // empty body (x-amz-checksum-crc32=AAAAAA==), which S3 then holds the
  // upload to; WHEN_REQUIRED, as AWS advises for presigning, leaves it out
  async presign() {
    const signer = new S3Client({
      endpoint, forcePathStyle: true, region: process.env.AWS_REGION || "us-east-1",
      requestChecksumCalculation: "WHEN_REQUIRED",
    });
    const Command = a.method === "put" ? PutObjectCommand : GetObjectCommand;
    const url = await getSignedUrl(signer, new Command({ Bucket: a.bucket, Key: a.key }),
      { expiresIn: 300 });
    return { url };
  },
  // lib-storage: multipart for bodies over partSize (5 MiB minimum)
  async upload() {
    const up = new Upload({
      client, params: { Bucket: a.bucket, Key: a.key, Body: body(), Metadata: a.metadata },
      partSize: a.partSize || 5 * 1024 * 1024, queueSize: 2, leavePartsOnError: false,
    });
    const r = await up.done();
    return { etag: r.ETag };
  },
};

if (!ops[op]) {
  console.error(`s3client: unknown op '${op}'`);
  process.exit(2);
}
try {
  const r = await ops[op]();
  console.log(JSON.stringify({ ok: true, ...r }));
} catch (e) {
  console.log(JSON.stringify({
    ok: false, name: e.name, status: e.$metadata && e.$metadata.httpStatusCode,
    message: String(e.message || e),
  }));
}
