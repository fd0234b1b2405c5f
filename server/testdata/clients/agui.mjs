// AG-UI's own client (HttpAgent from @ag-ui/client) against Cairn's
// POST /v1/agents/{agent}/ag-ui.
//
//   node agui.mjs URL TOKEN THREAD TEXT ANSWERS
//
// Runs the agent with TEXT; then, for each entry of ANSWERS (a JSON list of
// payloads), resumes every pending interrupt with {status: "resolved",
// payload} (a payload {"cancel": true} cancels instead). Prints the runs'
// outcomes, the events' types and the messages as JSON.
import { HttpAgent } from "@ag-ui/client";

const [url, token, threadId, text, answers] = process.argv.slice(2);
const agent = new HttpAgent({ url, threadId, headers: token ? { Authorization: `Bearer ${token}` } : {} });
const outcomes = [];
const types = [];
const errors = [];
const subscriber = {
  onEvent: ({ event }) => { types.push(event.type); },
  onRunFinishedEvent: ({ event }) => { outcomes.push(event.outcome ?? null); },
  onRunErrorEvent: ({ event }) => { errors.push({ code: event.code, message: event.message }); },
};
agent.subscribe(subscriber);
agent.addMessage({ id: "u1", role: "user", content: text });
const run = async (input) => {
  try { await agent.runAgent(input); } catch (e) { errors.push({ thrown: String(e && e.message || e) }); }
};
await run({});
for (const payload of JSON.parse(answers)) {
  const last = outcomes[outcomes.length - 1];
  const interrupts = (last && last.type === "interrupt") ? last.interrupts : [];
  await run({ resume: interrupts.map((i) => payload.cancel ? { interruptId: i.id, status: "cancelled" } : { interruptId: i.id, status: "resolved", payload }) });
}
console.log(JSON.stringify({ outcomes, errors, types, messages: agent.messages }));
