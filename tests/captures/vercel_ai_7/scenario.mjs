// The scripted conversation of the AI SDK 7 captures (vercel_ai_7, vercel_ai_7_legacy,
// vercel_ai_7_openinference), without package imports: each capture passes in the `ai` module and
// MockLanguageModelV4 it resolved from its own node_modules, `callOptions` (how that setup attaches
// the session id) and `around` (runs each generateText, e.g. inside an OpenInference session).
export async function converse({ ai, MockLanguageModelV4, callOptions, around = (f) => f() }) {
  const { generateText, tool, jsonSchema, stepCountIs } = ai;
  const cityTool = (description, execute) => tool({
    description,
    inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    execute,
  });
  const tools = {
    get_weather: cityTool('Current weather for a city.', async ({ city }) => ({ city, temp_c: { Paris: 18, London: 14, Berlin: 11 }[city] ?? 20 })),
    get_time: cityTool('Local time in a city.', async ({ city }) => `12:00 in ${city}`),
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
    delete_account: tool({
      description: 'Delete a user account (needs a human to approve).',
      inputSchema: jsonSchema({ type: 'object', properties: { login: { type: 'string' } }, required: ['login'] }),
      execute: async ({ login }) => ({ deleted: login }),
    }),
  };

  const call = (toolName, args, toolCallId) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(args) });
  const text = (t) => ({ type: 'text', text: t });

  // [user message or approval answer, model responses of that generateText]
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

  const model = new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId: 'scripted-model',
    doGenerate: async () => {
      const content = SCRIPT[n++];
      if (content === undefined) throw new Error('script exhausted');
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
  let pending = [];
  for (const [input] of TURNS) {
    if (typeof input === 'string') {
      messages.push({ role: 'user', content: input });
    } else {  // the user's answer to the approval requests of the previous turn (AI SDK docs, "Tool Execution Approval")
      messages.push({ role: 'tool', content: pending.map((p) => ({ type: 'tool-approval-response', approvalId: p.approvalId, approved: input.approve })) });
    }
    const result = await around(() => generateText({
      model,
      instructions: 'Help with travel questions and accounts. Use tools.',
      messages,
      tools,
      toolApproval: { delete_account: 'user-approval' },
      stopWhen: stepCountIs(5),
      ...callOptions,
    }));
    messages.push(...result.responseMessages);
    pending = result.content.filter((p) => p.type === 'tool-approval-request' && !p.isAutomatic);
    console.log('turn output:', JSON.stringify(result.text), 'approval requests:', pending.map((p) => p.toolCall.toolCallId));
  }
  if (n !== SCRIPT.length) throw new Error(`script not consumed: ${n}/${SCRIPT.length}`);
}

// Ground truth of the conversation as the trace of `integration` can show it.
export function expected({ integration, versions, convId, sessionNote }) {
  const LEGACY = integration === 'LegacyOpenTelemetry';
  const c = (name, args, step, call_id, extra = {}) => ({ name, arguments: args, error: false, step, call_id, ...extra });
  // The approval turns as the trace shows them. The asking run ends on the request it did not
  // execute (invoke_agent / ai.generateText finish reason `tool-calls`): pending. The approved call
  // runs in the next generateText under the same call id; under LegacyOpenTelemetry that execution
  // exports no span (its onToolExecutionStart needs a step span, and the approved call runs before
  // the first step), but its result is in the first step's model input (a tool-result in
  // ai.prompt.messages). A denial is the next run's model input too: an `execution-denied` tool
  // result (@ai-sdk/otel: tool_call_response {denied: true}): rejected.
  const alice = { login: 'alice' };
  const asked = (login) => c('delete_account', { login }, 0, `call_del_${login}`, { status: 'pending' });
  const approvalTurns = [
    { calls: [asked('alice')] },
    { calls: [c('delete_account', alice, 0, 'call_del_alice', { requested_in_turn: false })] },
  ];
  const refused = c('delete_account', { login: 'bob' }, 0, 'call_del_bob',
    { error: true, status: 'rejected', requested_in_turn: false });
    return {
    framework: 'vercel-ai-sdk',
    telemetry_integration: integration,
    library_versions: versions,
    conversation_id: convId,
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
      ...approvalTurns,
      { calls: [asked('bob')] },
      { calls: [refused] },
      { calls: [asked('carol')] },
    ],
    user_answers: { call_del_alice: 'approved', call_del_bob: 'denied', call_del_carol: null },
    notes: 'MockLanguageModelV4 scripted; generateText with stopWhen stepCountIs(5); one generateText = one turn (one trace). '
      + sessionNote
      + ' Turn 1 step 0 = two tool-call parts in one response (executed concurrently). convert_currency throws; the SDK '
      + "turns it into a tool-error part and the loop continues. Turns 4-8: toolApproval { delete_account: 'user-approval' }; "
      + 'each answer is a tool message with a tool-approval-response, then generateText again (AI SDK docs). '
      + (LEGACY ? 'LegacyOpenTelemetry exports no span for the approved execution (it runs before the first step span); '
        + 'its result is the tool-result in the first doGenerate\'s ai.prompt.messages. '
        : 'The approved call runs at the start of the next generateText, under invoke_agent, before step 1. ')
      + 'A run that stops for approval ends with finish reason tool-calls and the request unexecuted: pending. '
      + 'The denial is the next run\'s model input: an execution-denied tool result '
      + (LEGACY ? '(ai.prompt.messages of ai.generateText.doGenerate): rejected.'
        : '(gen_ai.input.messages tool_call_response {denied: true} of the chat span): rejected.'),
    };
}
