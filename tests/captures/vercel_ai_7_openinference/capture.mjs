// Capture: Vercel AI SDK 7 spans through OpenInference's span processor (@arizeai/openinference-vercel),
// offline with MockLanguageModelV4; the conversation is ../vercel_ai_7/scenario.mjs (packages resolved here).
// Set up as that package's README says: `registerTelemetry(new OpenTelemetry({...}))` with its recommended
// supplemental options, and `OpenInferenceSimpleSpanProcessor` on a `NodeTracerProvider`; the session id
// the OpenInference way, `context.with(setSession(context.active(), { sessionId }), ...)` around each call
// (the processor's `propagateContextAttributes`, on by default, copies `session.id` onto every span).
// Serialises exactly what the JS OTLP exporters send: ProtobufTraceSerializer -> spans.otlp.pb,
// JsonTraceSerializer -> spans.otlp.json.
import { writeFileSync, readFileSync } from 'node:fs';
import * as ai from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { OpenTelemetry } from '@ai-sdk/otel';
import { OpenInferenceSimpleSpanProcessor } from '@arizeai/openinference-vercel';
import { setSession } from '@arizeai/openinference-core';
import { SEMRESATTRS_PROJECT_NAME } from '@arizeai/openinference-semantic-conventions';
import { context } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ProtobufTraceSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { converse, expected } from '../vercel_ai_7/scenario.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const CONV_ID = 'conv-vercel-ai-7-openinference-0001';

// deterministic ids
let seed = 7272n;
const next = () => { seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n); return seed; };
const hex = (n, w) => n.toString(16).padStart(w, '0');
const idGenerator = {
  generateTraceId: () => hex(next(), 16) + hex(next(), 16),
  generateSpanId: () => hex(next(), 16),
};

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'tooltrail-capture-vercel-ai-7-openinference', [SEMRESATTRS_PROJECT_NAME]: 'tooltrail-capture' }),
  spanProcessors: [new OpenInferenceSimpleSpanProcessor({ exporter })],
  idGenerator,
});
provider.register();
ai.registerTelemetry(new OpenTelemetry({
  usage: true, providerMetadata: true, embedding: true, reranking: true,
  runtimeContext: true, headers: true, toolChoice: true, schema: true,
}));

await converse({
  ai, MockLanguageModelV4,
  callOptions: { telemetry: { functionId: 'travel_assistant' } },
  around: (run) => context.with(setSession(context.active(), { sessionId: CONV_ID }), run),
});
await provider.forceFlush();

const spans = exporter.getFinishedSpans().slice().sort((a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]));
writeFileSync(HERE + 'spans.otlp.pb', ProtobufTraceSerializer.serializeRequest(spans));
const json = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString('utf8'));
writeFileSync(HERE + 'spans.otlp.json', JSON.stringify(json, null, 1) + '\n');

const ver = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version;
const truth = expected({
  integration: 'OpenTelemetry + OpenInferenceSimpleSpanProcessor',
  versions: Object.fromEntries(['ai', '@ai-sdk/otel', '@arizeai/openinference-vercel', '@arizeai/openinference-core',
    '@opentelemetry/sdk-trace-node', '@opentelemetry/otlp-transformer'].map((p) => [p, ver(p)]).concat([['node', process.versions.node]])),
  convId: CONV_ID,
  sessionNote: 'Conversation id via OpenInference setSession around each generateText (-> session.id on every span).',
});
writeFileSync(HERE + 'expected.json', JSON.stringify(truth, null, 2) + '\n');
console.log('spans:', spans.length, '->', HERE);
