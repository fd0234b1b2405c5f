// Cairn's benchmark scenarios on two JS peers, with fake in-process models:
// the model asks for the tool `lookup`, the tool runs, the model answers.
// Prints Go benchmark lines (one "pkg:" block per peer) for benchstat.
//   node run.mjs            COUNT=5 by default; PEER=langgraph for one peer
import { Agent, run, tool, Usage, setTracingDisabled } from '@openai/agents';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool as lcTool } from '@langchain/core/tools';
import { MemorySaver, Command, interrupt } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

import { availableParallelism } from 'node:os';

const COUNT = Number(process.env.COUNT || 5);
// Go suffixes benchmark names with GOMAXPROCS; match it so benchstat pairs rows.
const SUFFIX = `-${availableParallelism()}`;
setTracingDisabled(true); // no exporter: nothing to send, and nothing to measure

// bench runs fn for ~1 s (after a warm-up) and prints ns/op like `go test -bench`.
async function bench(name, fn) {
  for (let i = 0; i < 200; i++) await fn(i);
  for (let c = 0; c < COUNT; c++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    while (elapsed < 1_000_000_000n) {
      await fn(n++);
      elapsed = process.hrtime.bigint() - start;
    }
    console.log(`${name}${SUFFIX}\t${n}\t${(Number(elapsed) / n).toFixed(0)} ns/op`);
  }
}

// ---- OpenAI Agents JS ----------------------------------------------------
class FakeModel {
  constructor(toolName = 'lookup') { this.toolName = toolName; }
  async getResponse(req) {
    const items = Array.isArray(req.input) ? req.input : [];
    const last = items[items.length - 1];
    const usage = new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 });
    if (last && last.type === 'function_call_result') {
      return { usage, output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }] };
    }
    const args = this.toolName === 'lookup' ? '{"q":"x"}' : '{"input":"go"}';
    return { usage, output: [{ type: 'function_call', callId: 'call_1', name: this.toolName, arguments: args, status: 'completed' }] };
  }
  async *getStreamedResponse() { throw new Error('not streaming'); }
}

function oaAgent(needsApproval) {
  const lookup = tool({ name: 'lookup', description: 'Look up.', parameters: z.object({ q: z.string() }), needsApproval, execute: async () => 'ok' });
  return new Agent({ name: 'main', instructions: 'be brief', model: new FakeModel(), tools: [lookup] });
}

async function openaiAgents() {
  console.log('pkg: openai-agents');
  const plain = oaAgent(false);
  await bench('BenchmarkTurn', async () => {
    const r = await run(plain, 'go');
    if (r.finalOutput !== 'done') throw new Error('turn: ' + r.finalOutput);
  });
  const pauseResume = async (agent) => {
    let r = await run(agent, 'go');
    if (r.interruptions.length !== 1) throw new Error('no interruption');
    // Through the serialised state, as an app that stores it would.
    const state = await (r.state.constructor).fromString(agent, r.state.toString());
    state.approve(state.getInterruptions()[0]);
    r = await run(agent, state);
    if (r.finalOutput !== 'done') throw new Error('resume: ' + r.finalOutput);
  };
  const gated = oaAgent(true);
  await bench('BenchmarkPauseResume/store=memory', () => pauseResume(gated));
  // Depth 2: the parent calls the child through asTool; the child's gated
  // tool interrupts the outer run.
  const child = oaAgent(true);
  const parent = new Agent({ name: 'parent', instructions: 'be brief', model: new FakeModel('child'),
    tools: [child.asTool({ toolName: 'child', toolDescription: 'Child.' })] });
  await bench('BenchmarkNestedPauseResume', () => pauseResume(parent));
}

// ---- LangGraph.js --------------------------------------------------------
class FakeChat extends BaseChatModel {
  _llmType() { return 'fake'; }
  bindTools() { return this; }
  async _generate(messages) {
    const last = messages[messages.length - 1];
    const msg = last && last._getType() === 'tool'
      ? new AIMessage('done')
      : new AIMessage({ content: '', tool_calls: [{ id: 'call_1', name: 'lookup', args: { q: 'x' } }] });
    return { generations: [{ text: typeof msg.content === 'string' ? msg.content : '', message: msg }] };
  }
}

async function langgraph() {
  console.log('pkg: langgraph');
  const plainTool = lcTool(async () => 'ok', { name: 'lookup', description: 'Look up.', schema: z.object({ q: z.string() }) });
  const plain = createReactAgent({ llm: new FakeChat({}), tools: [plainTool] });
  await bench('BenchmarkTurn', async () => {
    const out = await plain.invoke({ messages: [{ role: 'user', content: 'go' }] });
    if (out.messages[out.messages.length - 1].content !== 'done') throw new Error('turn');
  });
  const gatedTool = lcTool(async () => {
    const answer = interrupt({ question: 'approve lookup?' });
    if (answer !== 'approved') return 'rejected';
    return 'ok';
  }, { name: 'lookup', description: 'Look up.', schema: z.object({ q: z.string() }) });
  const gated = createReactAgent({ llm: new FakeChat({}), tools: [gatedTool], checkpointer: new MemorySaver() });
  await bench('BenchmarkPauseResume/store=memory', async (i) => {
    const config = { configurable: { thread_id: `t${i}-${Math.random()}` } };
    const paused = await gated.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    if (!paused.__interrupt__ || paused.__interrupt__.length !== 1) throw new Error('no interrupt');
    const out = await gated.invoke(new Command({ resume: 'approved' }), config);
    if (out.messages[out.messages.length - 1].content !== 'done') throw new Error('resume');
  });
}

// PEER=openai-agents or PEER=langgraph runs one; the default runs both.
const peer = process.env.PEER;
if (!peer || peer === 'openai-agents') await openaiAgents();
if (!peer || peer === 'langgraph') await langgraph();
