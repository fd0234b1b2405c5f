// The official A2A JavaScript SDK (@a2a-js/sdk 1.3, protocol 1.0) as a
// client of a Cairn agent: discover its card, send a message, see
// input-required with the interrupts, approve with a data part, get the
// artifact; a stale seq and a second approval; then the same over a stream.
// Prints one JSON line per step for server/a2a_js_test.go.
// Usage: node a2a.mjs BASE_URL [TOKEN]
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';

const [base, token] = process.argv.slice(2);
const opts = token ? { serviceParameters: { Authorization: `Bearer ${token}` } } : undefined;
const out = (o) => console.log(JSON.stringify(o));
const part = (content) => ({ content, metadata: undefined, filename: '', mediaType: '' });
const message = (parts, task) => ({
  messageId: crypto.randomUUID(), contextId: task?.contextId ?? '', taskId: task?.id ?? '', role: Role.ROLE_USER,
  parts, metadata: undefined, extensions: [], referenceTaskIds: [],
});
const text = (t) => part({ $case: 'text', value: t });
const decide = (task, seq, interruptId) =>
  message([part({ $case: 'data', value: { seq, decisions: [{ interrupt_id: interruptId, action: 'approve' }] } })], task);
const stateName = (s) => TaskState[s];
const pause = (status) => status.message.parts.find((p) => p.content?.$case === 'data').content.value;
const fails = async (f) => { try { await f(); return ''; } catch (e) { return String(e?.message ?? e); } };

const client = await new ClientFactory().createFromUrl(base);
const card = await client.getAgentCard();
out({ step: 'card', name: card.name, streaming: card.capabilities?.streaming ?? false, skills: card.skills.map((s) => s.id),
  url: card.supportedInterfaces[0]?.url, security: Object.keys(card.securitySchemes ?? {}) });

const task = await client.sendMessage({ message: message([text('ship web')]) }, opts);
const p = pause(task.status);
out({ step: 'paused', task: task.id, state: stateName(task.status.state), seq: p.seq, interrupts: p.interrupts,
  text: task.status.message.parts.find((x) => x.content?.$case === 'text')?.content.value });
out({ step: 'stale', error: await fails(() => client.sendMessage({ message: decide(task, p.seq - 1, p.interrupts[0].id) }, opts)) });
const done = await client.sendMessage({ message: decide(task, p.seq, p.interrupts[0].id) }, opts);
out({ step: 'approved', state: stateName(done.status.state), artifact: done.artifacts[0]?.parts[0]?.content?.value });
out({ step: 'again', error: await fails(() => client.sendMessage({ message: decide(task, p.seq, p.interrupts[0].id) }, opts)) });
const got = await client.getTask({ id: task.id, tenant: '' }, opts);
out({ step: 'get', state: stateName(got.status.state) });

const seen = [];
let last;
for await (const ev of client.sendMessageStream({ message: message([text('ship web')]) }, opts)) {
  const { $case, value } = ev.payload;
  seen.push($case === 'statusUpdate' || $case === 'task' ? `${$case}:${stateName(value.status.state)}` : $case);
  last = value;
}
const sp = pause(last.status);
const streamTask = { id: last.taskId, contextId: last.contextId };
const resumed = [];
let artifact;
for await (const ev of client.sendMessageStream({ message: decide(streamTask, sp.seq, sp.interrupts[0].id) }, opts)) {
  const { $case, value } = ev.payload;
  resumed.push($case === 'statusUpdate' || $case === 'task' ? `${$case}:${stateName(value.status.state)}` : $case);
  if ($case === 'artifactUpdate') artifact = value.artifact.parts[0].content.value;
}
out({ step: 'stream', paused: seen, resumed, artifact });
