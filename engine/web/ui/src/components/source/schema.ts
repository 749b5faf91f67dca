/** The format's JSON Schema (GET /api/schema), fetched once for the YAML pane's completion and hover. */
import { api } from '../../api/client';
import type { Schema } from '../../model/schemaDocs';

let schema: Schema | null = null;
let loading: Promise<void> | null = null;

export function loadSchema(): Promise<void> {
  loading ??= api.schema().then((r) => { schema = r.schema as Schema; }, () => { loading = null; });
  return loading;
}

/** The schema once loaded (completion and hover offer nothing before). */
export function schemaNow(): Schema | null {
  return schema;
}
