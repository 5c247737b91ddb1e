// attach.js — lock.attach(client) for @aws-sdk/client-s3 v3 clients: two
// middlewares. At the build step (before signing) an object write gets
// x-fencing-token (and x-fencing-lock), so SigV4 signs them; at the end of
// finalizeRequest (each attempt, retries included) a write whose lease is
// lost or past its deadline throws LeaseLost instead of going out. Reads are
// left alone. It decides nothing about fencing: the proxy does.
"use strict";

// The S3 commands that change an object (the proxy fences them).
const WRITES = new Set([
  "PutObjectCommand", "CopyObjectCommand", "DeleteObjectCommand", "DeleteObjectsCommand",
  "CreateMultipartUploadCommand", "UploadPartCommand", "UploadPartCopyCommand",
  "CompleteMultipartUploadCommand", "AbortMultipartUploadCommand",
  "PutObjectTaggingCommand", "DeleteObjectTaggingCommand", "PutObjectAclCommand",
  "PutObjectRetentionCommand", "PutObjectLegalHoldCommand", "RestoreObjectCommand",
]);

let nextId = 1;
const ids = new WeakMap(); // lock -> its middleware names

function names(lock) {
  if (!ids.has(lock)) {
    const n = nextId++;
    ids.set(lock, { token: `fencegateToken${n}`, check: `fencegateCheck${n}` });
  }
  return ids.get(lock);
}

function attach(lock, client, lockName) {
  if (!client || !client.middlewareStack) throw new TypeError("lock.attach needs an @aws-sdk/client-s3 v3 client");
  const n = names(lock);
  detach(lock, client); // attaching twice replaces
  client.middlewareStack.add((next, context) => async (args) => {
    if (WRITES.has(context.commandName) && args.request && args.request.headers) {
      args.request.headers["x-fencing-token"] = String(lock.check());
      if (lockName) args.request.headers["x-fencing-lock"] = lock.name;
    }
    return next(args);
  }, { step: "build", name: n.token, override: true });
  client.middlewareStack.add((next) => async (args) => {
    if (args.request && args.request.headers && args.request.headers["x-fencing-token"] !== undefined) {
      lock.check();
    }
    return next(args);
  }, { step: "finalizeRequest", priority: "low", name: n.check, override: true });
  return client;
}

function detach(lock, client) {
  const n = names(lock);
  client.middlewareStack.remove(n.token);
  client.middlewareStack.remove(n.check);
}

module.exports = { attach, detach, WRITES };
