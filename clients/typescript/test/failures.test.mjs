// Every failure of a call is a CairnError: a server that is slow, breaks
// the connection, answers something that is not JSON, or is draining (503,
// Retry-After), which the opt-in retries send again.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { CairnError, Client } from "../dist/index.js";

let server;
let url;
let busyLeft = 0; // 503s still to answer on /v1/sessions/busy

before(async () => {
  server = http.createServer((req, res) => {
    const send = (status, body, headers = {}) => {
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body), ...headers });
      res.end(body);
    };
    if (req.url === "/v1/agents") setTimeout(() => send(200, '{"agents":[]}'), 1000); // slow
    else if (req.url === "/v1/me") send(200, "<html>a proxy's login page</html>", { "Content-Type": "text/html" });
    else if (req.url === "/healthz") {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": 100 });
      res.write('{"status":');
      setTimeout(() => req.socket.destroy(), 50); // the connection breaks mid-answer
    } else if (req.url === "/v1/sessions/busy") {
      if (busyLeft > 0) {
        busyLeft--;
        send(503, '{"error":{"code":"stopping","message":"this server is draining"}}', { "Retry-After": "1" });
      } else send(200, '{"id":"busy","status":"paused","seq":3,"interrupts":[]}');
    } else send(404, '{"error":{"code":"not_found","message":"no such session"}}');
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

async function refused(promise) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof CairnError, `not a CairnError: ${err}`);
    return err;
  }
  assert.fail("the call succeeded");
}

describe("failures", () => {
  test("timeout", async () => {
    const err = await refused(new Client({ baseUrl: url, timeoutMs: 200 }).agents());
    assert.deepEqual([err.status, err.code], [0, "timeout"]);
  });
  test("not JSON", async () => {
    const err = await refused(new Client({ baseUrl: url }).me());
    assert.deepEqual([err.status, err.code], [200, "invalid_response"]);
    assert.match(err.message, /a proxy's login page/);
  });
  test("a broken connection", async () => {
    const err = await refused(new Client({ baseUrl: url }).health());
    assert.deepEqual([err.status, err.code], [0, "connection"]);
  });
  test("unreachable", async () => {
    const probe = net.createServer();
    await new Promise((r) => probe.listen(0, "127.0.0.1", r));
    const port = probe.address().port;
    await new Promise((r) => probe.close(r)); // nobody listens now
    const err = await refused(new Client({ baseUrl: `http://127.0.0.1:${port}` }).health());
    assert.deepEqual([err.status, err.code], [0, "unreachable"]);
  });
  test("503 with Retry-After, and opt-in retries", async () => {
    busyLeft = 1;
    let err = await refused(new Client({ baseUrl: url }).getSession("busy"));
    assert.deepEqual([err.status, err.code, err.retryAfter], [503, "stopping", 1]);

    busyLeft = 2;
    const began = Date.now();
    const s = await new Client({ baseUrl: url, retries: 2 }).getSession("busy");
    assert.deepEqual([s.id, s.status], ["busy", "paused"]);
    assert.ok(Date.now() - began >= 2000, "it waited Retry-After before each retry");

    busyLeft = 3;
    err = await refused(new Client({ baseUrl: url, retries: 1 }).getSession("busy"));
    assert.equal(err.status, 503, "retries spent: the last 503 rejects");
  });
  test("other errors are not retried", async () => {
    const err = await refused(new Client({ baseUrl: url, retries: 5 }).getSession("nope"));
    assert.deepEqual([err.status, err.code, err.retryAfter], [404, "not_found", undefined]);
  });
  test("the caller's abort stays the caller's", async () => {
    const ac = new AbortController();
    const call = new Client({ baseUrl: url }).agents({ signal: ac.signal });
    ac.abort();
    await assert.rejects(call, (err) => err.name === "AbortError");
  });
});
