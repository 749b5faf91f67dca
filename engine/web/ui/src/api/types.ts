/** The JSON contract of the diagrama studio server (see engine/web). */

export type JsonSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  multipleOf?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  definitions?: Record<string, JsonSchema>;
  format?: string;
  [key: string]: unknown;
};

export interface Session {
  read_only: boolean;
  allow_online: boolean;
  root: string;
}

export type TableKind = 'history' | 'tools' | string;

export interface BlockType {
  type: string;
  description: string;
  inputs_schema: JsonSchema | null;
  settings_schema: JsonSchema | null;
  outputs: string[];
  ports: string[];
  body_names?: string[];
  table_fields?: Record<string, TableKind>;
}

export interface DiagramSummary {
  path: string;
  name: string;
  description: string;
  valid: boolean;
  blocks: number;
}

export interface LinkSpec {
  to: string;
  when?: string;
  [key: string]: unknown;
}

export type NextValue = string | Array<LinkSpec | string>;

export interface Block {
  id: string;
  type: string;
  label?: string;
  position?: [number, number];
  error_level?: string;
  message_level?: string;
  with?: Record<string, unknown>;
  set?: Record<string, unknown>;
  next?: NextValue;
  on_error?: string;
  body?: string;
  [key: string]: unknown;
}

export interface Diagram {
  diagram?: string;
  description?: string;
  tools?: string;
  blocks: Block[];
  [key: string]: unknown;
}

export interface Problem {
  /** Set when the problem is in another file than the diagram (a tool registry, a CSV): relative to the folder. */
  file: string | null;
  line: number | null;
  column: number | null;
  block: string | null;
  field: string | null;
  message: string;
  hint: string | null;
  severity: 'error' | 'warning';
}

export type LinkKind = 'next' | 'error' | 'body';

export interface CompiledLink {
  source: string;
  target: string;
  kind: LinkKind;
  when: string | null;
  order: number;
}

export interface EffectiveLevel {
  value: string;
  from: string;
}

export interface Compiled {
  links: CompiledLink[];
  bodies: Array<{ loop: string; members: string[] }>;
  levels: Record<string, { error_level?: EffectiveLevel; message_level?: EffectiveLevel }>;
  scope: Record<string, { with?: string[]; set?: string[]; when?: string[] }>;
}

export interface Registry {
  group: string;
  description: string;
  tools: Array<{ name: string; description: string }>;
}

export interface DiagramFile {
  path: string;
  hash: string;
  diagram: Diagram;
  problems: Problem[];
  compiled: Compiled | null;
  registries: Registry[];
}

export interface SaveResult {
  hash: string;
  problems: Problem[];
  compiled: Compiled | null;
}

export interface CsvPreview {
  columns: string[];
  rows: unknown[][];
  total: number;
}

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'interrupted';

export interface RunSummary {
  run_id: string;
  status: RunStatus;
  started: string;
  duration_ms: number | null;
  steps: number;
}

export interface RunStep {
  block: string;
  block_type: string;
  status: string;
  duration_ms: number | null;
  /** the block the step's link led to, and which port (`next`, `on_error`, `body`) */
  next?: string | null;
  via?: string | null;
  model?: string | null;
  inputs: unknown;
  outputs: unknown;
  error: unknown;
  /** `[input, output]` */
  tokens: unknown;
  /** names of the tools a request block called */
  called_tools?: unknown;
  /** older trace readers' names for the same facts */
  link?: unknown;
  tool_calls?: unknown;
}

export interface RunData {
  run_id: string;
  diagram: string;
  status: RunStatus;
  errors: Array<{ block: string | null; type: string; message: string }>;
  blocks: string[];
  links: Array<[string, string]>;
  /** the block whose unhandled error ended the run (null if none); older servers sent a list */
  failed: string | string[] | null;
  passes: Record<string, number>;
  steps: RunStep[];
  events: unknown[];
  count: number;
}

export interface ScenarioResult {
  file: string;
  name: string;
  passed: boolean;
  failures: string[];
}
