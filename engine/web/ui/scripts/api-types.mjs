/**
 * Writes src/api/types.ts from the studio API's JSON Schema (engine/web/api.schema.json, itself written from the
 * server's pydantic models by `python -m engine.web.api_schema`), with json-schema-to-typescript. The npm scripts
 * typecheck, test and build run it first (their `pre` scripts), so a fresh clone and the package build always
 * compile against the server's answers as they are; the output is git-ignored.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const source = resolve(here, '../../api.schema.json');
const target = resolve(here, '../src/api/types.ts');

/** JSON Schema 2020-12's tuples (`prefixItems`, as pydantic writes a tuple) in the older form the generator reads. */
function olderTuples(node) {
  if (Array.isArray(node)) return node.map(olderTuples);
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'prefixItems') out.items = olderTuples(value);
    else if (!(key === 'items' && 'prefixItems' in node)) out[key] = olderTuples(value);
  }
  return out;
}

const schema = olderTuples(JSON.parse(await readFile(source, 'utf8')));
const banner = [
  '/* Generated from engine/web/api.schema.json by engine/web/ui/scripts/api-types.mjs (json-schema-to-typescript);',
  ' * do not edit: change engine/web/models.py and run `python -m engine.web.api_schema`. */',
  "import type { JsonSchema } from '../model/jsonSchema';",
].join('\n');
const text = await compile(schema, 'StudioApi', {
  bannerComment: banner,
  // an object is open only where the schema says so (additionalProperties: true), as pydantic writes it
  additionalProperties: false,
  unreachableDefinitions: true,
  strictIndexSignatures: false,
  cwd: dirname(source),
});
let current = '';
try {
  current = await readFile(target, 'utf8');
} catch {
  // first run
}
if (current !== text) await writeFile(target, text);
