import type { BlockType, Diagram, Format } from '../api/types';
import { linkKeys, type LinkKeys } from '../model/format';
import formatJson from './format.json';

export function orderAgent(): Diagram {
  return {
    diagram: 'order-agent',
    description: 'Answers a customer question.',
    tools: 'registry/orders.yaml',
    blocks: [
      { id: 'start', type: 'Start', error_level: 'Handle', max_steps: 40, inputs: { question: 'Where is 42?' },
        variables: { history: [] }, next: 'ask' },
      { id: 'ask', type: 'ClaudeRequest', label: 'Ask Claude', with: { model: 'claude-sonnet-5-5', request: '{{ question }}', temperature: 0.2 },
        set: { answer: '{{ result }}' },
        next: [{ to: 'dispatch', when: '{{ called_tools | length > 0 }}' }, { to: 'done' }], on_error: 'apologise', 'x-note': 'keep me' },
      { id: 'dispatch', type: 'ToolDispatch', with: { calls: '{{ calls }}' }, next: 'ask' },
      { id: 'apologise', type: 'Set', set: { answer: 'Sorry' } },
      { id: 'done', type: 'Set' },
    ],
  };
}

export function loopDiagram(): Diagram {
  return {
    diagram: 'classify',
    blocks: [
      { id: 'start', type: 'Start', next: 'each' },
      { id: 'each', type: 'Loop', with: { for_each: '{{ messages }}' }, body: 'classify', next: 'report' },
      { id: 'classify', type: 'GroqChatRequest', with: { model: 'm' }, next: 'tag' },
      { id: 'tag', type: 'Set', set: { label: '{{ result }}' }, next: 'each' },
      { id: 'report', type: 'Set', on_error: 'oops' },
      { id: 'oops', type: 'Set' },
    ],
  };
}

export const palette: BlockType[] = [
  { type: 'Start', description: 'start', inputs_schema: { type: 'object', properties: {} }, settings_schema: null, outputs: [], ports: [],
    body_names: [], table_fields: {}, is_start: true },
  { type: 'ClaudeRequest', description: 'claude', inputs_schema: { type: 'object', properties: {} }, settings_schema: null,
    outputs: ['result', 'called_tools', 'history', 'usage', 'stop_reason'], ports: [], body_names: [],
    table_fields: { history: 'history', tools: 'tools' }, is_start: false },
  { type: 'Loop', description: 'loop', inputs_schema: { type: 'object', properties: {} }, settings_schema: null, outputs: ['iterations', 'collected'],
    ports: ['body'], body_names: ['item', 'index'], table_fields: {}, is_start: false },
  { type: 'Set', description: 'set', inputs_schema: { type: 'object', properties: {} }, settings_schema: null, outputs: [], ports: [],
    body_names: [], table_fields: {}, is_start: false },
];

/** The server's GET /api/format answer (tests/web/test_api_models.py checks this file is the server's own). */
export const format: Format = formatJson;

/** The link keys the page draws and edits with, from the format and the palette above. */
export const keys: LinkKeys = linkKeys(format, palette);
