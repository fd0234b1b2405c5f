// The SSE reader against the event-stream format's corner cases, fed in
// awkward chunks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readMessages } from "../dist/index.js";

function stream(...chunks) {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const x of chunks) c.enqueue(enc.encode(x));
      c.close();
    },
  });
}

async function read(...chunks) {
  const out = [];
  for await (const m of readMessages(stream(...chunks))) out.push([m.event, m.data, m.id]);
  return out;
}

test("messages", async () => {
  assert.deepEqual(
    await read(": keep-alive\n\n", 'id: 9\nevent: tool_started\ndata: {"seq":9}\n\n', 'event: model_delta\r', '\ndata:{"seq":0}\r\n\r\n',
      "data: one\ndata: two\n\n", "event: nothing\n\n", "id: 10\ndata: cut off"),
    [
      ["tool_started", '{"seq":9}', "9"],
      ["model_delta", '{"seq":0}', undefined],
      ["message", "one\ntwo", undefined],
    ],
  );
});

test("a multi-byte character split across chunks", async () => {
  const bytes = new TextEncoder().encode("data: café\n\n");
  const s = new ReadableStream({ start(c) { c.enqueue(bytes.slice(0, 10)); c.enqueue(bytes.slice(10)); c.close(); } });
  const out = [];
  for await (const m of readMessages(s)) out.push(m.data);
  assert.deepEqual(out, ["café"]);
});
