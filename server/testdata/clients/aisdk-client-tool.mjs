// The Vercel AI SDK's chat client running a client-side tool against
// Cairn's POST /v1/agents/{agent}/chat, the AI SDK's way: onToolCall runs
// the tool (it has no execute on the server), addToolOutput gives its
// output, and sendAutomaticallyWhen (lastAssistantMessageIsCompleteWithToolCalls)
// re-posts the messages so the session continues.
//
//   node aisdk-client-tool.mjs BASE AGENT TOKEN CHAT_ID TEXT TOOL OUTPUT_JSON
//
// OUTPUT_JSON {"error": "…"} fails the call instead (state output-error).
// Prints the final messages as JSON. AI_MODULE picks the package.
const ai = await import(process.env.AI_MODULE ?? "ai");
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = ai;

class State {
  constructor() { this.messages = []; this.status = "ready"; this.error = undefined; }
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; };
  snapshot = (v) => structuredClone(v);
}

class Chat extends AbstractChat {
  constructor(init) { super({ ...init, state: new State() }); }
}

const [base, agent, token, id, text, tool, outputJSON] = process.argv.slice(2);
const output = JSON.parse(outputJSON);
const errors = [];
const ran = [];
const chat = new Chat({
  id,
  transport: new DefaultChatTransport({ api: `${base}/v1/agents/${agent}/chat`, headers: { Authorization: `Bearer ${token}` } }),
  onError: (e) => errors.push(String(e && e.message || e)),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
  onToolCall: ({ toolCall }) => {
    if (toolCall.toolName !== tool) return;
    ran.push(toolCall.input);
    // Not awaited inside onToolCall (the SDK's advice): it would deadlock.
    if (output.error) {
      chat.addToolOutput({ state: "output-error", tool, toolCallId: toolCall.toolCallId, errorText: output.error });
    } else {
      chat.addToolOutput({ tool, toolCallId: toolCall.toolCallId, output });
    }
  },
});

await chat.sendMessage({ text });
// The automatic re-post runs after sendMessage returns: wait (10 s at
// most) for the answer that follows the tool's output.
const answered = () => chat.messages.some((m) => m.role === "assistant" && m.parts.some((p) => p.type === "text"));
for (let i = 0; i < 200 && !(answered() && chat.status === "ready") && chat.status !== "error"; i++) await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ status: chat.status, errors, ran, messages: chat.messages }));
