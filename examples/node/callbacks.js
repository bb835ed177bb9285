// A receiver of herald's status callbacks (docs/sql.md, "Status callbacks"), with
// nothing but Node's standard library. It verifies each request as the Standard
// Webhooks specification says — a v1a (Ed25519) signature against the channel's
// whpk_ public key, and a timestamp within five minutes — then prints the event and
// answers 204. Anything that does not verify gets 401 and is not printed.
//
//   HERALD_WEBHOOK_PUBLIC_KEY=whpk_… PORT=8080 node examples/node/callbacks.js
//
// herald delivers at least once: deduplicate on the webhook-id header (or the
// payload's offset) before acting twice on one event.
"use strict";
const http = require("node:http");
const crypto = require("node:crypto");

const publicKey = (process.env.HERALD_WEBHOOK_PUBLIC_KEY || "").replace(/^whpk_/, "");
if (Buffer.from(publicKey, "base64").length !== 32) {
  console.error("callbacks.js: set HERALD_WEBHOOK_PUBLIC_KEY to the channel's whpk_ public key (herald webhook-secret prints it)");
  process.exit(2);
}
const key = crypto.createPublicKey({
  key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey, "base64").toString("base64url") },
  format: "jwk",
});
const seen = new Set(); // webhook-ids already processed (keep them longer in real life)

function verified(headers, body) {
  const id = headers["webhook-id"], ts = headers["webhook-timestamp"];
  if (!id || !/^\d+$/.test(ts || "") || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const signed = Buffer.concat([Buffer.from(`${id}.${ts}.`), body]);
  return (headers["webhook-signature"] || "").split(" ").some((s) =>
    s.startsWith("v1a,") && crypto.verify(null, signed, key, Buffer.from(s.slice(4), "base64")));
}

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (req.method !== "POST" || !verified(req.headers, body)) {
      res.writeHead(401).end();
      return;
    }
    const id = req.headers["webhook-id"];
    if (!seen.has(id)) {
      seen.add(id);
      const { payload } = JSON.parse(body); // herald's webhook: {id, channel, recipient, payload, …}
      console.log(`${payload.event} message ${payload.message.message_id} (${payload.idempotency_key ?? "no key"}): ${payload.message.status}`);
    }
    res.writeHead(204).end();
  });
}).listen(Number(process.env.PORT || 8080), "127.0.0.1", () => console.log("listening"));
