// worker.cjs — a fenced read-modify-write step with @aws-sdk/client-s3 and
// the fencegate package: lock.run takes the lock, renews it on a timer and
// releases it; lock.attach puts its token on the client's writes and
// refuses them once the lease is lost. Adds 1 to the number at BUCKET/KEY
// and prints it; exit 3 when another worker holds the lock. From a clone,
// once: `npm install --prefix examples` (examples/package.json: the SDK and
// ../lock/js).
//
//   FENCEGATE=http://127.0.0.1:8080 node examples/worker.cjs BUCKET KEY
const { S3Client, GetObjectCommand, PutObjectCommand } = require("@aws-sdk/client-s3");
const { Lock, LockHeld } = require("fencegate");

const gate = process.env.FENCEGATE || "http://127.0.0.1:8080";
const [bucket, key] = process.argv.slice(2);
const lock = new Lock({ endpoint: gate, name: bucket, ttlMs: 30000 });
const s3 = lock.attach(new S3Client({ endpoint: gate, forcePathStyle: true, region: process.env.AWS_REGION || "us-east-1" }));
lock.run(async () => {
  const old = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
    .then((r) => r.Body.transformToString(), (e) => { if (e.name === "NoSuchKey") return "0"; throw e; });
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: String(Number(old) + 1) }));
  console.log(Number(old) + 1);
}).catch((e) => { console.error(e.message); process.exit(e instanceof LockHeld ? 3 : 1); });
