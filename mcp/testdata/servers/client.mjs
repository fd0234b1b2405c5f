// A real MCP client (the official TypeScript SDK) for Cairn's MCP server:
// node client.mjs TOOL INPUT COMMAND ARGS... starts COMMAND over stdio,
// approves every elicitation, calls TOOL with {input: INPUT}, and prints
// {tools, protocol, asked, result} as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [tool, input, command, ...args] = process.argv.slice(2);
const client = new Client({ name: "cairn-ts-test", version: "1" }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({ message: req.params.message, schema: req.params.requestedSchema });
  return { action: "accept", content: { action: "approve" } };
});
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({ name: tool, arguments: { input } });
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name), protocol: transport.protocolVersion ?? null, asked, result }));
await client.close();
