// A real MCP client (the official TypeScript SDK) of Cairn's MCP approval
// gateway, for cmd/cairn's gateway tests. Prints one JSON line per step.
//   node gateway.mjs call URL PATH CONTENT      tools/list, then write_file (held until decided)
//   node gateway.mjs reconnect URL PATH CONTENT  write_file with an idempotency key, gone after 1.5 s;
//                                               a second client repeats it and waits
//   node gateway.mjs elicit PATH CONTENT COMMAND ARGS...  over stdio; approves when asked
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
const out = (v) => console.log(JSON.stringify(v));
const held = { timeout: 120_000 };

async function http(url, capabilities = {}) {
  const client = new Client({ name: "gateway-test", version: "1" }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

if (mode === "call") {
  const [url, path, content] = rest;
  const client = await http(url);
  const tools = await client.listTools();
  out({ tools: tools.tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? false, approval: t._meta?.["io.cairn/approval"] ?? "" })) });
  const result = await client.callTool({ name: "fs__write_file", arguments: { path, content } }, undefined, held);
  out({ result });
  await client.close();
} else if (mode === "reconnect") {
  const [url, path, content] = rest;
  const call = { name: "fs__write_file", arguments: { path, content }, _meta: { "io.cairn/idempotency-key": "write-once" } };
  const first = await http(url);
  try {
    await first.callTool(call, undefined, { timeout: 1500 });
    out({ first: "answered" });
  } catch (err) {
    out({ first: "gone", error: String(err.message ?? err) });
  }
  await first.close();
  const second = await http(url);
  out({ second: "calling" });
  const result = await second.callTool(call, undefined, held);
  out({ result });
  await second.close();
} else if (mode === "elicit") {
  const [path, content, command, ...args] = rest;
  const client = new Client({ name: "gateway-test", version: "1" }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: "accept", content: { action: "approve" } };
  });
  await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
  const result = await client.callTool({ name: "fs__write_file", arguments: { path, content } }, undefined, held);
  out({ asked, result });
  await client.close();
} else {
  console.error("usage: node gateway.mjs call|reconnect|elicit …");
  process.exit(2);
}
