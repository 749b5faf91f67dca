/** Key/value rows (Start inputs, variables, run inputs): values typed as YAML/JSON scalars. */

/** Text shown for a value: strings as they are (quoted when they would read as something else), the rest as JSON. */
export function formatScalar(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') {
    const reread = parseScalar(value);
    return reread === value ? value : JSON.stringify(value);
  }
  return JSON.stringify(value);
}

/** Text typed in a cell → value: JSON when it parses (numbers, true/false/null, lists, objects, "quoted"), YAML words, else the text. */
export function parseScalar(text: string): unknown {
  const t = text.trim();
  if (t === '') return '';
  if (/^(true|True|TRUE)$/.test(t)) return true;
  if (/^(false|False|FALSE)$/.test(t)) return false;
  if (/^(null|Null|NULL|~)$/.test(t)) return null;
  if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) return Number(t);
  if (/^[[{"]/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return text;
    }
  }
  return text;
}
