// The Vercel AI SDK's own chat client (AbstractChat with DefaultChatTransport,
// what useChat runs) against Cairn's POST /v1/agents/{agent}/chat.
//
//   node aisdk.mjs BASE AGENT TOKEN CHAT_ID TEXT DECISIONS
//
// DECISIONS is a JSON list of rounds; a round is a list of answers
// [{"match": "production", "approved": true, "reason": "…", "edit": {…}}],
// each for the pending approval whose tool input contains match. A round
// answers with addToolApprovalResponse and re-posts (sendMessage()).
// Prints the final messages as JSON.
// AI_MODULE picks the package (ai, or the pinned aliases ai7, ai6strict).
const { AbstractChat, DefaultChatTransport } = await import(process.env.AI_MODULE ?? "ai");

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

const [base, agent, token, id, text, decisions] = process.argv.slice(2);
const errors = [];
const chat = new Chat({
  id,
  transport: new DefaultChatTransport({ api: `${base}/v1/agents/${agent}/chat`, headers: { Authorization: `Bearer ${token}` } }),
  onError: (e) => errors.push(String(e && e.message || e)),
});

const pending = () => chat.messages.flatMap((m) => m.parts).filter((p) => p.state === "approval-requested");

await chat.sendMessage({ text });
for (const round of JSON.parse(decisions)) {
  const edited = {};
  for (const answer of round) {
    const p = pending().find((p) => JSON.stringify(p.input).includes(answer.match));
    if (!p) throw new Error(`no pending approval matches ${answer.match}: ${JSON.stringify(chat.messages)}`);
    if (answer.edit) edited[p.approval.id] = answer.edit;
    await chat.addToolApprovalResponse({ id: p.approval.id, approved: answer.approved, reason: answer.reason });
  }
  await chat.sendMessage(undefined, Object.keys(edited).length ? { body: { editedArguments: edited } } : undefined);
}
console.log(JSON.stringify({ status: chat.status, errors, messages: chat.messages }));
