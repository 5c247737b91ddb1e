// worker.cjs — a read-modify-write worker with @aws-sdk/client-s3: the lock
// from fencegate's lock HTTP API, the object through fencegate's S3 API with
// the token as object metadata, a renewal, a release. A write whose epoch is
// no longer current gets 409 from the proxy and is never stored.
//
//   FENCEGATE=http://127.0.0.1:8080 node examples/worker.cjs BUCKET KEY
//
// It adds 1 to the number stored at BUCKET/KEY and prints the new value;
// exit 3 when another worker holds the lock.
const { S3Client, GetObjectCommand, PutObjectCommand } = require("@aws-sdk/client-s3");

const gate = process.env.FENCEGATE || "http://127.0.0.1:8080";

async function lockApi(lock, op, body) {
  const r = await fetch(`${gate}/_fence/locks/${lock}/${op}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return [r.status, await r.json()];
}

async function main() {
  const [bucket, key] = process.argv.slice(2);
  const [st, grant] = await lockApi(bucket, "acquire", { ttlMs: 30000, holder: "worker.cjs" });
  if (st === 409) {
    console.error(`held by ${grant.holder}`);
    return 3;
  }
  if (st !== 200) {
    console.error(`acquire: ${st} ${JSON.stringify(grant)}`);
    return 1;
  }
  const s3 = new S3Client({
    endpoint: gate, region: "us-east-1", forcePathStyle: true,
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID || "worker",
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY || "worker",
    },
  });
  let old = 0;
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    old = parseInt(await got.Body.transformToString(), 10);
  } catch (e) {
    if (e.name !== "NoSuchKey") throw e;
  }
  await s3.send(new PutObjectCommand({
    Bucket: bucket, Key: key, Body: String(old + 1),
    Metadata: { "fencing-token": String(grant.epoch) },
  }));
  await lockApi(bucket, "renew", { epoch: grant.epoch });
  await lockApi(bucket, "release", { epoch: grant.epoch });
  console.log(old + 1);
  return 0;
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(1); });
