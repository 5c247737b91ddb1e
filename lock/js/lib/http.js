// http.js — one JSON call to fencegate's lock API (/_fence/locks/...) over
// node's http/https (a CA bundle from the options or AWS_CA_BUNDLE /
// SSL_CERT_FILE), SigV4-signed (service "s3") with @smithy/signature-v4 when
// credentials are known, and the proxy's error bodies (JSON from the lock
// API, S3 XML from the authentication layer) decoded. It does not retry,
// keep state between calls, or know what a lease is: lock.js does.
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const https = require("node:https");
const { SignatureV4 } = require("@smithy/signature-v4");
const { Sha256 } = require("@aws-crypto/sha256-js");
const { FencegateError } = require("./errors");

/** The default transport: send({method, url, headers, body, timeoutMs}) →
 * {status, body (string)}; HTTP error statuses are answers, network
 * failures reject. ca: PEM text or undefined (the system store). */
function nodeTransport(ca) {
  return ({ method, url, headers, body, timeoutMs }) => new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === "https:" ? https : http;
    const req = mod.request(u, { method, headers, ca, timeout: timeoutMs }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/** {code, message, fields} of an error answer: the lock API's JSON
 * ({"error","message",...}) or S3's XML (<Error><Code>...). */
function decodeError(status, text) {
  const t = (text || "").trim();
  if (t.startsWith("{")) {
    try {
      const obj = JSON.parse(t);
      return { code: obj.error, message: obj.message || t, fields: obj };
    } catch (_) { /* not JSON after all */ }
  }
  if (t.startsWith("<")) {
    const tag = (n) => (t.match(new RegExp(`<${n}>([^<]*)</${n}>`)) || [])[1];
    return { code: tag("Code"), message: tag("Message") || t, fields: {} };
  }
  return { code: undefined, message: t || `HTTP ${status}`, fields: {} };
}

/** The credentials option as a provider: undefined → the AWS chain
 * (@aws-sdk/credential-provider-node; unsigned if it finds none), false →
 * never sign, an object {accessKeyId, secretAccessKey, sessionToken} or an
 * async function returning one. */
function credentialProvider(credentials) {
  if (credentials === false) return null;
  if (typeof credentials === "function") return credentials;
  if (credentials) return async () => credentials;
  let chain;
  return async () => {
    try {
      chain = chain || require("@aws-sdk/credential-provider-node").defaultProvider();
      return await chain();
    } catch (_) {
      return null; // no credentials anywhere: unsigned calls
    }
  };
}

class Caller {
  constructor({ endpoint, credentials, region, ca, timeoutMs = 10000, transport }) {
    this.endpoint = endpoint.replace(/\/+$/, "");
    this.region = region || process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || "us-east-1";
    this.timeoutMs = timeoutMs;
    if (ca === undefined) {
      const file = process.env.AWS_CA_BUNDLE || process.env.SSL_CERT_FILE;
      try {
        ca = file ? fs.readFileSync(file, "utf8") : undefined;
      } catch (e) {
        throw new FencegateError(`cannot read the CA bundle ${file}: ${e.message}`);
      }
    }
    this.transport = transport || nodeTransport(ca);
    this.provider = credentialProvider(credentials);
  }

  /** headers plus SigV4's, or headers unchanged without credentials. */
  async sign(method, url, headers, body) {
    const creds = this.provider ? await this.provider() : null;
    if (!creds) return headers;
    const u = new URL(url);
    const hash = new Sha256();
    hash.update(body || "");
    headers = { ...headers, host: u.host, "x-amz-content-sha256": Buffer.from(await hash.digest()).toString("hex") };
    const signer = new SignatureV4({ service: "s3", region: this.region, credentials: creds, sha256: Sha256, uriEscapePath: false });
    const signed = await signer.sign({
      method, protocol: u.protocol, hostname: u.hostname, port: u.port ? Number(u.port) : undefined,
      path: u.pathname, query: Object.fromEntries(u.searchParams), headers, body,
    });
    return signed.headers;
  }

  /** {status, obj} of one call; an error status gives obj {error, message,
   * ...fields}; a 2xx body that is not a JSON object, or a failed
   * connection, rejects with FencegateError. */
  async call(method, path, payload, timeoutMs) {
    const url = this.endpoint + path;
    const body = payload === undefined ? undefined : JSON.stringify(payload);
    let headers = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    headers = await this.sign(method, url, headers, body);
    let res;
    try {
      res = await this.transport({ method, url, headers, body, timeoutMs: timeoutMs || this.timeoutMs });
    } catch (e) {
      throw new FencegateError(`${method} ${url}: ${e.message}`);
    }
    if (res.status >= 300) {
      const { code, message, fields } = decodeError(res.status, res.body);
      return { status: res.status, obj: { ...fields, error: code, message } };
    }
    let obj;
    try { obj = JSON.parse(res.body); } catch (_) { obj = null; }
    if (!obj || typeof obj !== "object") {
      throw new FencegateError(`${method} ${url}: HTTP ${res.status} with a body that is not JSON`, { status: res.status });
    }
    return { status: res.status, obj };
  }
}

/** /_fence/locks/NAME[/op] with NAME escaped. */
function lockPath(name, op) {
  return `/_fence/locks/${encodeURIComponent(name)}${op ? "/" + op : ""}`;
}

module.exports = { Caller, lockPath, decodeError, nodeTransport };
