// Capture: a Mastra agent (@mastra/core) traced by Mastra's observability with @mastra/otel-exporter
// (OTel GenAI conventions), offline with the AI SDK's MockLanguageModelV4 (Mastra drives AI SDK 7
// models; the mock scripts doGenerate, which generate() calls, and doStream). Set up as Mastra's docs say: `new Mastra({
// observability: new Observability({ configs: { otel: { serviceName, exporters: [new OtelExporter(...)] } } }) })`;
// the exporter gets an in-memory SpanExporter (`exporter` option) instead of an OTLP endpoint.
// Conversation: Mastra memory threads, `agent.generate(msg, { memory: { thread, resource } })`
// (@mastra/memory on the Mastra storage). Approval: `requireApproval: true` on the tool, `generate()`
// returns `finishReason: 'suspended'`, then `approveToolCallGenerate` / `declineToolCallGenerate`.
// Serialises exactly what the JS OTLP exporters send: ProtobufTraceSerializer -> spans.otlp.pb,
// JsonTraceSerializer -> spans.otlp.json.
import { writeFileSync, readFileSync } from 'node:fs';
import { Mastra } from '@mastra/core/mastra';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { InMemoryStore } from '@mastra/core/storage';
import { Memory } from '@mastra/memory';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ProtobufTraceSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { z } from 'zod';

const HERE = new URL('.', import.meta.url).pathname;
const THREAD = 'conv-mastra-0001';

const tools = {
  get_weather: createTool({
    id: 'get_weather', description: 'Current weather for a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, temp_c: { Paris: 18, London: 14, Berlin: 11 }[city] ?? 20 }),
  }),
  get_time: createTool({
    id: 'get_time', description: 'Local time in a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `12:00 in ${city}`,
  }),
  convert_currency: createTool({
    id: 'convert_currency', description: 'Convert money between currencies.',
    inputSchema: z.object({ amount: z.number(), from_currency: z.string(), to_currency: z.string() }),
    execute: async ({ from_currency, to_currency }) => {
      throw new Error(`FX service unavailable for ${from_currency}->${to_currency}`);
    },
  }),
  delete_account: createTool({
    id: 'delete_account', description: 'Delete a user account (needs a human to approve).',
    inputSchema: z.object({ login: z.string() }),
    requireApproval: true,
    execute: async ({ login }) => ({ deleted: login }),
  }),
};

const call = (toolName, args, toolCallId) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(args) });
const text = (t) => ({ type: 'text', text: t });
const APPROVE = (approved) => ({ approve: approved });
const TURNS = [
  ["What's the weather in Paris and London, and what time is it in Paris?", [
    [call('get_weather', { city: 'Paris' }, 'call_w_paris'), call('get_weather', { city: 'London' }, 'call_w_london')],
    [call('get_time', { city: 'Paris' }, 'call_t_paris')],
    [text('Paris 18C, London 14C; it is 12:00 in Paris.')],
  ]],
  ['Convert 100 EUR to USD, and tell me the weather in Berlin.', [
    [call('convert_currency', { amount: 100, from_currency: 'EUR', to_currency: 'USD' }, 'call_fx')],
    [call('get_weather', { city: 'Berlin' }, 'call_w_berlin')],
    [text('The FX service failed; Berlin is 11C.')],
  ]],
  ["Thanks, that's all!", [[text("You're welcome!")]]],
  ["Please delete alice's account.", [[call('delete_account', { login: 'alice' }, 'call_del_alice')]]],
  [APPROVE(true), [[text("alice's account is deleted.")]]],
  ["And bob's account.", [[call('delete_account', { login: 'bob' }, 'call_del_bob')]]],
  [APPROVE(false), [[text("I did not delete bob's account.")]]],
  ["And carol's.", [[call('delete_account', { login: 'carol' }, 'call_del_carol')]]],
];
const SCRIPT = TURNS.flatMap(([, rs]) => rs);
let n = 0;
const usage = { inputTokens: { total: 50, noCache: 50, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } };
const streamOf = (content, i) => {
  const parts = [{ type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: `resp_${i}`, modelId: 'scripted-model', timestamp: new Date(1700000000000 + i * 1000) }];
  for (const c of content) {
    if (c.type === 'text') parts.push({ type: 'text-start', id: `t${i}` }, { type: 'text-delta', id: `t${i}`, delta: c.text }, { type: 'text-end', id: `t${i}` });
    else parts.push(c);
  }
  const hasTool = content.some((c) => c.type === 'tool-call');
  parts.push({ type: 'finish', finishReason: { unified: hasTool ? 'tool-calls' : 'stop', raw: hasTool ? 'tool_calls' : 'stop' }, usage });
  return convertArrayToReadableStream(parts);
};
const model = new MockLanguageModelV4({
  provider: 'mock-provider',
  modelId: 'scripted-model',
  doGenerate: async () => {
    const content = SCRIPT[n++];
    if (content === undefined) throw new Error('script exhausted');
    const hasTool = content.some((c) => c.type === 'tool-call');
    return {
      content, usage, warnings: [],
      finishReason: { unified: hasTool ? 'tool-calls' : 'stop', raw: hasTool ? 'tool_calls' : 'stop' },
      response: { id: `resp_${n}`, modelId: 'scripted-model', timestamp: new Date(1700000000000 + n * 1000) },
    };
  },
  doStream: async () => {
    const content = SCRIPT[n++];
    if (content === undefined) throw new Error('script exhausted');
    return { stream: streamOf(content, n) };
  },
});

const exporter = new InMemorySpanExporter();
const otel = new OtelExporter({ provider: { custom: { endpoint: 'http://127.0.0.1:4318', protocol: 'http/protobuf' } }, exporter });
const agent = new Agent({
  id: 'travel_assistant', name: 'travel_assistant',
  instructions: 'Help with travel questions and accounts. Use tools.',
  model, tools, memory: new Memory(),
});
const mastra = new Mastra({
  agents: { travel_assistant: agent },
  storage: new InMemoryStore(),
  observability: new Observability({ configs: { otel: { serviceName: 'tooltrail-capture-mastra', exporters: [otel] } } }),
});
const travel = mastra.getAgent('travel_assistant');
const memory = { thread: THREAD, resource: 'user-1' };

let suspended = null;
for (const [input] of TURNS) {
  let out;
  if (typeof input === 'string') {
    out = await travel.generate(input, { memory, maxSteps: 5 });
  } else {
    const args = { runId: suspended.runId, toolCallId: suspended.suspendPayload?.toolCallId, memory };
    out = input.approve ? await travel.approveToolCallGenerate(args) : await travel.declineToolCallGenerate(args);
  }
  suspended = out.finishReason === 'suspended' ? out : null;
  console.log('turn:', out.finishReason, JSON.stringify(out.text), suspended ? suspended.suspendPayload?.toolCallId : '');
}
if (n !== SCRIPT.length) throw new Error(`script not consumed: ${n}/${SCRIPT.length}`);
// span-ended events reach the exporter asynchronously; flush before shutdown (which empties the
// in-memory exporter)
await new Promise((r) => setTimeout(r, 1000));
await otel.flush();
const spans = exporter.getFinishedSpans().slice().sort((a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]));
writeFileSync(HERE + 'spans.otlp.pb', ProtobufTraceSerializer.serializeRequest(spans));
const json = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString('utf8'));
writeFileSync(HERE + 'spans.otlp.json', JSON.stringify(json, null, 1) + '\n');

const ver = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version;
const c = (name, args, step, call_id, extra = {}) => ({ name, arguments: args, error: false, step, call_id, ...extra });
const expected = {
  framework: 'mastra',
  library_versions: Object.fromEntries(['@mastra/core', '@mastra/memory', '@mastra/observability', '@mastra/otel-exporter',
    'ai', '@opentelemetry/sdk-trace-base', '@opentelemetry/otlp-transformer'].map((p) => [p, ver(p)]).concat([['node', process.versions.node]])),
  conversation_id: THREAD,
  turns: [
    { calls: [
      c('get_weather', { city: 'Paris' }, 0, 'call_w_paris'),
      c('get_weather', { city: 'London' }, 0, 'call_w_london'),
      c('get_time', { city: 'Paris' }, 1, 'call_t_paris'),
    ] },
    { calls: [
      { ...c('convert_currency', { amount: 100, from_currency: 'EUR', to_currency: 'USD' }, 0, 'call_fx'), error: true },
      c('get_weather', { city: 'Berlin' }, 1, 'call_w_berlin'),
    ] },
    { calls: [] },
    // the asking run and its approved resumption are one trace (the resumed run is a nested invoke_agent)
    { calls: [c('delete_account', { login: 'alice' }, 0, 'call_del_alice')] },
    // declined in the same trace: no tool span; the nested run's agent_run input is {approved: false, toolCallId}
    { calls: [c('delete_account', { login: 'bob' }, 0, 'call_del_bob', { error: true, status: 'rejected' })] },
    // never answered: the run ends suspended (its agent_run output {status: suspended, reason: tool-call-approval})
    { calls: [c('delete_account', { login: 'carol' }, 0, 'call_del_carol', { status: 'pending' })] },
  ],
  user_answers: { call_del_alice: 'approved', call_del_bob: 'declined', call_del_carol: null },
  notes: 'MockLanguageModelV4 scripted (doGenerate); agent.generate with maxSteps 5; one generate = one trace, and an '
    + 'approveToolCallGenerate / declineToolCallGenerate resumption joins the asking trace as a nested invoke_agent, so '
    + 'the 8 calls of the script are 6 turns. Conversation: memory thread -> gen_ai.conversation.id (and '
    + 'mastra.metadata.threadId) on every span. The model\'s tool calls are only in child model_chunk spans of chat '
    + '(mastra.model_chunk.output {toolName, toolCallId, toolInput}). Tools run one after another (parallel calls do not '
    + 'overlap). convert_currency throws: status ERROR, error.type unknown, exception event; the loop continues. '
    + 'Approval: requireApproval on delete_account; the asking run\'s agent_run output is {status: suspended, '
    + 'reason: tool-call-approval, toolName, toolCallId} (pending), a decline resumes as a nested agent_run whose '
    + 'input is {approved: false, toolName, toolCallId} and runs no tool span (rejected); an approval runs the '
    + 'call\'s execute_tool span in the same trace (executed).',
};
writeFileSync(HERE + 'expected.json', JSON.stringify(expected, null, 2) + '\n');
console.log('spans:', spans.length);
await mastra.shutdown();
