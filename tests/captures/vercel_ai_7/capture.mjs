// Capture: Vercel AI SDK 7 (`ai`) with its OpenTelemetry integration from `@ai-sdk/otel`, offline with
// MockLanguageModelV4. AI_SDK_OTEL=legacy selects `LegacyOpenTelemetry` (the ai.* spans) instead of
// `OpenTelemetry` (GenAI conventions); CAPTURE_OUT names the folder written (default: this one).
// Telemetry is turned on as the AI SDK 7 docs say (docs/03-ai-sdk-core/60-telemetry.mdx): once,
// `registerTelemetry(new OpenTelemetry(...))`; there is no per-call flag. AI SDK 7 has no session or
// conversation id of its own (v6's `experimental_telemetry.metadata` is gone): the documented way to
// attach one is `runtimeContext` + `telemetry.includeRuntimeContext`, which `OpenTelemetry` exports
// with its `runtimeContext: true` supplemental option (-> `ai.settings.context.sessionId`).
// Serialises exactly what the JS OTLP exporters send: ProtobufTraceSerializer -> spans.otlp.pb,
// JsonTraceSerializer -> spans.otlp.json.
import { writeFileSync, readFileSync } from 'node:fs';
import * as ai from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { OpenTelemetry, LegacyOpenTelemetry } from '@ai-sdk/otel';
import { context, trace } from '@opentelemetry/api';
import { TracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ProtobufTraceSerializer, JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { converse, expected } from './scenario.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const OUT = (process.env.CAPTURE_OUT ?? HERE).replace(/\/?$/, '/');
const LEGACY = process.env.AI_SDK_OTEL === 'legacy';
const CONV_ID = LEGACY ? 'conv-vercel-ai-7-legacy-0001' : 'conv-vercel-ai-7-0001';

// deterministic ids
let seed = LEGACY ? 7171n : 7070n;
const next = () => { seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n); return seed; };
const hex = (n, w) => n.toString(16).padStart(w, '0');
const idGenerator = {
  generateTraceId: () => hex(next(), 16) + hex(next(), 16),
  generateSpanId: () => hex(next(), 16),
};

const exporter = new InMemorySpanExporter();
// OpenTelemetry JS 3.x (sdk-trace-node is folded into sdk-trace): provider + context manager as its README sets them up
context.setGlobalContextManager(new AsyncLocalStorageContextManager());
const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': LEGACY ? 'tooltrail-capture-vercel-ai-7-legacy' : 'tooltrail-capture-vercel-ai-7' }),
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
  idGenerator,
});
trace.setGlobalTracerProvider(provider);
ai.registerTelemetry(LEGACY ? new LegacyOpenTelemetry() : new OpenTelemetry({ runtimeContext: true, agentSpanName: 'functionId' }));

await converse({
  ai, MockLanguageModelV4,
  callOptions: {
    runtimeContext: { sessionId: CONV_ID, userId: 'user-1' },
    telemetry: { functionId: 'travel_assistant', includeRuntimeContext: { sessionId: true } },
  },
});
await provider.forceFlush();

const spans = exporter.getFinishedSpans().slice().sort((a, b) => (a.startTime[0] - b.startTime[0]) || (a.startTime[1] - b.startTime[1]));
writeFileSync(OUT + 'spans.otlp.pb', ProtobufTraceSerializer.serializeRequest(spans));
const json = JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString('utf8'));
writeFileSync(OUT + 'spans.otlp.json', JSON.stringify(json, null, 1) + '\n');

const ver = (p) => JSON.parse(readFileSync(new URL(`./node_modules/${p}/package.json`, import.meta.url))).version;
const truth = expected({
  integration: LEGACY ? 'LegacyOpenTelemetry' : 'OpenTelemetry',
  versions: Object.fromEntries(['ai', '@ai-sdk/otel', '@opentelemetry/sdk-trace', '@opentelemetry/otlp-transformer']
    .map((p) => [p, ver(p)]).concat([['node', process.versions.node]])),
  convId: CONV_ID,
  sessionNote: 'Conversation id via runtimeContext.sessionId + telemetry.includeRuntimeContext (-> ai.settings.context.sessionId'
    + (LEGACY ? ', on every span).' : ', on invoke_agent and step spans only; OpenTelemetry({ runtimeContext: true })).'),
});
writeFileSync(OUT + 'expected.json', JSON.stringify(truth, null, 2) + '\n');
console.log('spans:', spans.length, '->', OUT);
