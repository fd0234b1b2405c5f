// AG-UI's own client (HttpAgent from @ag-ui/client) running a frontend
// tool against Cairn's POST /v1/agents/{agent}/ag-ui, AG-UI's way: the
// tool is declared in the run's tools, the agent's call arrives as
// TOOL_CALL events, the client runs it, adds a tool message with the
// result and runs again.
//
//   node agui-frontend-tool.mjs URL TOKEN THREAD TEXT TOOL OUTPUT_JSON [PARAMETERS_JSON]
//
// Prints the runs' outcomes, the calls it ran and the messages as JSON.
import { HttpAgent } from "@ag-ui/client";

const [url, token, threadId, text, toolName, outputJSON, parametersJSON] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: token ? { Authorization: `Bearer ${token}` } : {} });
const parameters = parametersJSON ? JSON.parse(parametersJSON) : { type: "object", properties: {} };
const tools = [{ name: toolName, description: "Runs in the client.", parameters }];
const outcomes = [];
const errors = [];
const calls = [];
agent.subscribe({
  onToolCallEndEvent: ({ toolCallName, toolCallArgs, event }) => {
    if (toolCallName === toolName) calls.push({ id: event.toolCallId, args: toolCallArgs });
  },
  onRunFinishedEvent: ({ event }) => { outcomes.push(event.outcome ?? null); },
  onRunErrorEvent: ({ event }) => { errors.push({ code: event.code, message: event.message }); },
});
const run = async () => {
  try { await agent.runAgent({ tools }); } catch (e) { errors.push({ thrown: String(e && e.message || e) }); }
};
agent.addMessage({ id: "u1", role: "user", content: text });
await run();
const ran = calls.splice(0);
for (const call of ran) {
  agent.addMessage({ id: "t_" + call.id, role: "tool", toolCallId: call.id, content: outputJSON });
}
if (ran.length) await run();
console.log(JSON.stringify({ outcomes, errors, ran, messages: agent.messages }));
