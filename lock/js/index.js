// fencegate — the lock client for Node workers that write through a
// fencegate proxy. Lock takes a lease (an epoch, the fencing token) from the
// proxy's lock HTTP API, renews it on a timer, knows its end by the monotonic
// clock and aborts lock.signal when it is lost; lock.attach(s3Client) puts
// the token on every write of an @aws-sdk/client-s3 v3 client and refuses
// to send one once the lease is gone.
"use strict";

const { Lock } = require("./lib/lock");
const { FencegateError, LockHeld, LeaseLost } = require("./lib/errors");

module.exports = { Lock, FencegateError, LockHeld, LeaseLost };
