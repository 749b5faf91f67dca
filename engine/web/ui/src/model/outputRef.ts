/**
 * What a click on a block's output chip writes (issue 43, fix 8): a reference to that output as the engine's
 * templates read it. Inside the block's own `set` the output is in scope by its name (`{{ result }}`); anywhere
 * else it is read through the variable the block's `set` gives it (`set: {answer: "{{ result }}"}`: `{{ answer }}`),
 * and where no variable holds it yet, one named like the output is added to the block's `set` first.
 */

export interface OutputReference {
  /** the text to insert */
  text: string;
  /** a `set` row to add first: the variable that will hold the output */
  addSet?: { key: string; value: string };
}

const template = (name: string) => `{{ ${name} }}`;

/** The `set` key whose value is exactly the output (`{{ result }}`, spaces aside), if any. */
export function variableHolding(output: string, set: unknown): string | null {
  if (!set || typeof set !== 'object' || Array.isArray(set)) return null;
  const exact = new RegExp(`^\\s*\\{\\{-?\\s*${output.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*-?\\}\\}\\s*$`);
  for (const [key, value] of Object.entries(set as Record<string, unknown>)) if (typeof value === 'string' && exact.test(value)) return key;
  return null;
}

export function outputReference(output: string, set: unknown, inOwnSet: boolean): OutputReference {
  if (inOwnSet) return { text: template(output) };
  const held = variableHolding(output, set);
  if (held) return { text: template(held) };
  const taken = new Set(set && typeof set === 'object' && !Array.isArray(set) ? Object.keys(set) : []);
  let key = output;
  for (let n = 2; taken.has(key); n++) key = `${output}_${n}`;
  return { text: template(key), addSet: { key, value: template(output) } };
}
