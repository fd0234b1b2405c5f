// The Vercel AI SDK's chat outside React (Node, Svelte, Vue): AbstractChat
// with the small state useChat keeps in React. `npm install ai@6` (ai 7
// needs Node 22).
import { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

class State {
  messages = [];
  status = "ready";
  error = undefined;
  pushMessage = (m) => { this.messages = this.messages.concat(m); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; };
  snapshot = (v) => structuredClone(v);
}
class Chat extends AbstractChat {
  constructor(init) { super({ ...init, state: new State() }); }
}

const base = process.env.CAIRN_URL ?? "http://localhost:8080";
const chat = new Chat({
  id: `chat-${Date.now()}`, // the session's id
  transport: new DefaultChatTransport({ api: `${base}/v1/agents/main/chat` }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
});

await chat.sendMessage({ text: "Deploy the latest build to production." });
const part = chat.messages.at(-1).parts.find((p) => p.state === "approval-requested");
console.log(part.type, part.input); // tool-deploy_code { environment: 'production' }
await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
while (chat.status !== "ready" && chat.status !== "error") await new Promise((r) => setTimeout(r, 20));
console.log(chat.messages.at(-1).parts.filter((p) => p.type === "text").map((p) => p.text).join(""));
