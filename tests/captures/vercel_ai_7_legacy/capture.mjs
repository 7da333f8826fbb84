// Capture: as ../vercel_ai_7 (same script, same conversation), with `LegacyOpenTelemetry` from
// `@ai-sdk/otel` registered instead of `OpenTelemetry`: the ai.* spans of AI SDK <= 6, now an
// integration of their own. The shared script runs from ../vercel_ai_7 and so resolves its
// packages there (exact versions in that folder's package.json / package-lock.json).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const HERE = new URL('.', import.meta.url).pathname;
const SHARED = new URL('../vercel_ai_7/', import.meta.url).pathname;
if (!existsSync(SHARED + 'node_modules')) {
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--silent'], { cwd: SHARED, stdio: 'inherit' });
}
process.env.AI_SDK_OTEL = 'legacy';
process.env.CAPTURE_OUT = HERE;
await import(SHARED + 'capture.mjs');
