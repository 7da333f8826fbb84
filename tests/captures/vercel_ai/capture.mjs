// Capture: Vercel AI SDK (`ai`) experimental_telemetry, offline with MockLanguageModelV3.
// Serialises exactly what the JS OTLP exporters send: ProtobufTraceSerializer -> spans.otlp.pb,
// JsonTraceSerializer -> spans.otlp.json. Conversation id: AI SDK has none of its own; users put it in
// experimental_telemetry.metadata (-> ai.telemetry.metadata.sessionId), as done here.
import { writeFileSync, readFileSync } from 'node:fs';
import { generateText, tool, jsonSchema, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ProtobufTraceSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';

const HERE = new URL('.', import.meta.url).pathname;
const CONV_ID = 'conv-vercel-ai-0001';

// deterministic ids
let seed = 4242n;
const next = () => { seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n); return seed; };
const hex = (n, w) => n.toString(16).padStart(w, '0');
const idGenerator = {
  generateTraceId: () => hex(next(), 16) + hex(next(), 16),
  generateSpanId: () => hex(next(), 16),
};

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'tooltrail-capture-vercel-ai' }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
  idGenerator,
});
provider.register();

const tools = {
  get_weather: tool({
    description: 'Current weather for a city.',
    inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    execute: async ({ city }) => ({ city, temp_c: { Paris: 18, London: 14, Berlin: 11 }[city] ?? 20 }),
  }),
  get_time: tool({
    description: 'Local time in a city.',
    inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    execute: async ({ city }) => `12:00 in ${city}`,
  }),
  convert_currency: tool({
    description: 'Convert money between currencies.',
    inputSchema: jsonSchema({
      type: 'object',
      properties: { amount: { type: 'number' }, from_currency: { type: 'string' }, to_currency: { type: 'string' } },
      required: ['amount', 'from_currency', 'to_currency'],
    }),
    execute: async ({ from_currency, to_currency }) => {
      throw new Error(`FX service unavailable for ${from_currency}->${to_currency}`);
    },
  }),
};

const call = (toolName, args, toolCallId) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(args) });
const text = (t) => ({ type: 'text', text: t });

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
];
const SCRIPT = TURNS.flatMap(([, rs]) => rs);
let n = 0;
const usage = { inputTokens: { total: 50, noCache: 50, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } };

const model = new MockLanguageModelV3({
  provider: 'mock-provider',
  modelId: 'scripted-model',
  doGenerate: async () => {
    const content = SCRIPT[n++];
    const hasTool = content.some((c) => c.type === 'tool-call');
    return {
      content,
      finishReason: { unified: hasTool ? 'tool-calls' : 'stop', raw: hasTool ? 'tool_calls' : 'stop' },
      usage,
      warnings: [],
      response: { id: `resp_${n}`, modelId: 'scripted-model', timestamp: new Date(1700000000000 + n * 1000) },
    };
  },
});

const messages = [];
for (const [prompt] of TURNS) {
  messages.push({ role: 'user', content: prompt });
  const result = await generateText({
    model,
    system: 'Help with travel questions. Use tools.',
    messages,
    tools,
    stopWhen: stepCountIs(5),
    experimental_telemetry: { isEnabled: true, functionId: 'travel_assistant', metadata: { sessionId: CONV_ID, userId: 'user-1' } },
  });
  messages.push(...result.response.messages);
  console.log('turn output:', result.text);
}
if (n !== SCRIPT.length) throw new Error(`script not consumed: ${n}/${SCRIPT.length}`);
await provider.forceFlush();

const spans = exporter.getFinishedSpans().slice().sort((a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]));
writeFileSync(HERE + 'spans.otlp.pb', ProtobufTraceSerializer.serializeRequest(spans));
const json = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString('utf8'));
writeFileSync(HERE + 'spans.otlp.json', JSON.stringify(json, null, 1) + '\n');

const ver = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version;
const expected = {
  framework: 'vercel-ai-sdk',
  library_versions: {
    ai: ver('ai'), '@opentelemetry/sdk-trace-node': ver('@opentelemetry/sdk-trace-node'),
    '@opentelemetry/otlp-transformer': ver('@opentelemetry/otlp-transformer'), node: process.versions.node,
  },
  conversation_id: CONV_ID,
  turns: [
    { calls: [
      { name: 'get_weather', arguments: { city: 'Paris' }, error: false, step: 0, call_id: 'call_w_paris' },
      { name: 'get_weather', arguments: { city: 'London' }, error: false, step: 0, call_id: 'call_w_london' },
      { name: 'get_time', arguments: { city: 'Paris' }, error: false, step: 1, call_id: 'call_t_paris' },
    ] },
    { calls: [
      { name: 'convert_currency', arguments: { amount: 100, from_currency: 'EUR', to_currency: 'USD' }, error: true, step: 0, call_id: 'call_fx' },
      { name: 'get_weather', arguments: { city: 'Berlin' }, error: false, step: 1, call_id: 'call_w_berlin' },
    ] },
    { calls: [] },
  ],
  notes: 'MockLanguageModelV3 scripted; generateText with stopWhen stepCountIs(5); one generateText = one turn '
    + '(root ai.generateText, one trace each). Conversation id only via experimental_telemetry.metadata.sessionId '
    + '(-> ai.telemetry.metadata.sessionId). Turn 1 step 0 = two tool-call parts in one response (executed concurrently). '
    + 'convert_currency throws; the SDK turns it into a tool-error part and the loop continues.',
};
writeFileSync(HERE + 'expected.json', JSON.stringify(expected, null, 2) + '\n');
console.log('spans:', spans.length);
