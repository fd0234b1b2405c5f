// An A2A agent on the official A2A JavaScript SDK's server (@a2a-js/sdk
// 1.3, express): a booking agent that asks which date, then books it. It
// counts the tasks it started and the answers it got (GET /count), so a
// test can tell that a caller started one task and answered it once.
// With A2A_SLOW_MS set, a new task works that long before it asks.
// Usage: node a2a-server.mjs   (prints "listening on URL")
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';

let answers = 0;
let tasks = 0;
const slow = Number(process.env.A2A_SLOW_MS || 0);
const now = () => new Date().toISOString();
const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const says = (taskId, contextId, t) => ({
  messageId: crypto.randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [text(t)],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});

const booking = {
  async execute(ctx, bus) {
    const said = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    if (!ctx.task) {
      tasks++;
      const ask = { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: says(ctx.taskId, ctx.contextId, 'Which date?'), timestamp: now() };
      const task = { id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined };
      if (slow > 0) {
        bus.publish(AgentEvent.task({ ...task, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() } }));
        await new Promise((done) => setTimeout(done, slow));
        bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined, status: ask }));
      } else {
        bus.publish(AgentEvent.task({ ...task, status: ask }));
      }
      bus.finished();
      return;
    }
    answers++;
    bus.publish(AgentEvent.task(ctx.task));
    bus.publish(AgentEvent.artifactUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: 'booking', name: 'booking', description: '', parts: [text(`booked for ${said}`)], metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
    }));
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.finished();
  },
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: 'booking', description: 'Books a table; asks which date.', version: '1',
    supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
    provider: undefined, documentationUrl: undefined, iconUrl: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], signatures: [],
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: [{ id: 'book', name: 'book', description: 'Book a table.', tags: ['booking'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), booking);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.get('/count', (req, res) => res.json({ answers, tasks }));
  console.log(`listening on ${url}`);
});
