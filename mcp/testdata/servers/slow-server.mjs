// A slow upstream MCP server for the gateway's crash tests (stdio): its
// destructive tool `deploy` appends "start KEY PID" to $RUNS, takes
// $SLOW_MS (default 3000) ms, appends "end KEY", and answers.
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const server = new Server({ name: "slow", version: "1" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{
    name: "deploy",
    description: "Deploy a build to an environment (slowly).",
    inputSchema: { type: "object", properties: { env: { type: "string" } }, required: ["env"] },
    annotations: { destructiveHint: true },
  }],
}));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const key = req.params.arguments?.env ?? "?";
  appendFileSync(process.env.RUNS, `start ${key} ${process.pid}\n`);
  await new Promise((ok) => setTimeout(ok, Number(process.env.SLOW_MS ?? 3000)));
  appendFileSync(process.env.RUNS, `end ${key}\n`);
  return { content: [{ type: "text", text: `deployed to ${key}` }] };
});
await server.connect(new StdioServerTransport());
