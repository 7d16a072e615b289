// Smart-playlist rules (the JSON of Navidrome's .nsp files, as `POST /playlists` takes them) and
// the editor's model of them: a tree of groups and conditions with keys for Svelte's lists.
// Rules → model → rules gives the same rules back (field names in lower case, `order` folded
// into `sort`, as the server's canonical form); what the editor cannot show as a row (a
// condition of two fields, a key rules do not have) is kept as it is, so the server judges it
// and a file is never half-imported.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type Match = 'all' | 'any';
export interface ConditionRow {
  type: 'condition';
  key: number;
  operator: string;
  /** In lower case (the server matches field names without regard to case). */
  field: string;
  value: Json;
}
export interface GroupRow {
  type: 'group';
  key: number;
  match: Match;
  rows: Row[];
}
/** A rule the editor cannot show as a row, kept as it is (the server says what is wrong). */
export interface RawRow {
  type: 'raw';
  key: number;
  json: Json;
}
export type Row = ConditionRow | GroupRow | RawRow;
export interface SortKey {
  field: string;
  descending: boolean;
}
export interface RulesModel {
  root: GroupRow;
  random: boolean;
  /** Sort keys, first first; empty: the server's default (title). */
  sort: SortKey[];
  limit: number | null;
  /** Keys the editor does not know, sent back as they came (the server refuses them by name). */
  extra: JsonObject;
}

/** What `GET /playlists/rules/fields` says of a field. */
export interface FieldInfo {
  name: string;
  kind: string;
  operators: string[];
}

let nextKey = 1;
const key = () => nextKey++;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isMatch(name: string): name is Match {
  return name === 'all' || name === 'any';
}

export function emptyGroup(match: Match = 'all'): GroupRow {
  return { type: 'group', key: key(), match, rows: [] };
}

export function newCondition(field: FieldInfo | undefined): ConditionRow {
  const name = field?.name ?? 'title';
  const operator = field ? defaultOperator(field) : 'contains';
  return { type: 'condition', key: key(), field: name, operator, value: defaultValue(field?.kind ?? 'text', operator) };
}

export function emptyModel(): RulesModel {
  return { root: emptyGroup('all'), random: false, sort: [], limit: null, extra: {} };
}

/** The operator a new condition on `field` starts with. */
export function defaultOperator(field: FieldInfo): string {
  const preferred = field.kind === 'text' ? 'contains' : 'is';
  return field.operators.includes(preferred) ? preferred : (field.operators[0] ?? 'is');
}

/** How a condition's value is entered. */
export type Shape = 'text' | 'number' | 'date' | 'bool' | 'days' | 'numberRange' | 'dateRange';

export function shapeOf(kind: string, operator: string): Shape {
  if (operator === 'inTheLast' || operator === 'notInTheLast') return 'days';
  if (operator === 'inTheRange') return kind === 'date' ? 'dateRange' : 'numberRange';
  if (kind === 'number') return 'number';
  if (kind === 'date') return 'date';
  if (kind === 'bool') return 'bool';
  return 'text';
}

/** The value an empty condition of this shape starts with. */
export function defaultValue(kind: string, operator: string): Json {
  switch (shapeOf(kind, operator)) {
    case 'days':
      return 30;
    case 'numberRange':
      return [null, null];
    case 'dateRange':
      return ['', ''];
    case 'number':
      return null;
    case 'bool':
      return true;
    default:
      return '';
  }
}

function row(json: Json): Row {
  if (isObject(json)) {
    const keys = Object.keys(json);
    if (keys.length === 1) {
      const name = keys[0]!;
      const inner = json[name]!;
      if (isMatch(name) && Array.isArray(inner)) {
        return { type: 'group', key: key(), match: name, rows: inner.map(row) };
      }
      if (!isMatch(name) && isObject(inner)) {
        const fields = Object.keys(inner);
        if (fields.length === 1) {
          const field = fields[0]!;
          return { type: 'condition', key: key(), operator: name, field: field.toLowerCase(), value: inner[field]! };
        }
      }
    }
  }
  return { type: 'raw', key: key(), json };
}

function sortKeys(sort: string, descendingOrder: boolean): SortKey[] {
  return sort
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const descending = part.startsWith('-');
      const field = part.replace(/^[-+]\s*/, '').toLowerCase();
      return { field, descending: descending !== descendingOrder };
    });
}

/** The editor's model of rules (a whole .nsp minus its name, comment and public flag). */
export function fromRules(rules: { readonly [key: string]: unknown }): RulesModel {
  const model = emptyModel();
  // The server's document types a rule set's values as `unknown`: they are parsed JSON.
  const rest = { ...rules } as JsonObject;
  const top = 'all' in rest || !('any' in rest) ? 'all' : 'any';
  const rows = rest[top];
  model.root = emptyGroup(top);
  if (Array.isArray(rows)) {
    model.root.rows = rows.map(row);
    delete rest[top];
  }
  // `order: desc` turns every sort key round (as Navidrome and the server read it).
  const order = rest.order;
  const descending = typeof order === 'string' && order.toLowerCase() === 'desc';
  if (typeof order === 'string' && /^(asc|desc)$/i.test(order)) delete rest.order;
  const sort = rest.sort;
  if (typeof sort === 'string') {
    if (sort.trim().toLowerCase() === 'random') model.random = true;
    else model.sort = sortKeys(sort, descending);
    delete rest.sort;
  } else if (sort === undefined && descending) {
    model.sort = [{ field: 'title', descending: true }];
  }
  if (typeof rest.limit === 'number') {
    model.limit = rest.limit;
    delete rest.limit;
  }
  model.extra = rest;
  return model;
}

function rowJson(one: Row): Json {
  switch (one.type) {
    case 'group':
      return { [one.match]: one.rows.map(rowJson) };
    case 'condition':
      return { [one.operator]: { [one.field]: one.value } };
    case 'raw':
      return one.json;
  }
}

/** The rules of a model, as the server takes them. */
export function toRules(model: RulesModel): JsonObject {
  const rules: JsonObject = { [model.root.match]: model.root.rows.map(rowJson) };
  if (model.random) rules.sort = 'random';
  else if (model.sort.length) rules.sort = model.sort.map((k) => (k.descending ? '-' : '') + k.field).join(',');
  if (model.limit !== null) rules.limit = model.limit;
  return { ...rules, ...model.extra };
}

/** An .nsp file's parts: its name and comment, and the rules (everything else). */
export interface Nsp {
  name: string | null;
  description: string | null;
  rules: JsonObject;
}

export class NspError extends Error {}

export function parseNsp(text: string): Nsp {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new NspError('not JSON');
  }
  if (!isObject(json)) throw new NspError('not a JSON object');
  const { name, comment, public: _public, ...rules } = json;
  void _public;
  return {
    name: typeof name === 'string' ? name : null,
    description: typeof comment === 'string' ? comment : null,
    rules,
  };
}

/** Each row's path in the rules, as the server names it in a 422's `field` (`rules.all[1].any[0]`). */
export function rowPaths(model: RulesModel): Map<number, string> {
  const paths = new Map<number, string>();
  const walk = (group: GroupRow, path: string) => {
    paths.set(group.key, path);
    group.rows.forEach((one, i) => {
      const here = `${path}.${group.match}[${i}]`;
      if (one.type === 'group') walk(one, here);
      else paths.set(one.key, here);
    });
  };
  walk(model.root, 'rules');
  return paths;
}

/**
 * Where a 422's `field` points in the editor: a row's key (the deepest row whose path it is
 * inside), `sort` or `limit`; null when it points nowhere the editor shows.
 */
export function errorTarget(model: RulesModel, field: string | null | undefined): number | 'sort' | 'limit' | null {
  if (!field) return null;
  if (field === 'rules.sort' || field.startsWith('rules.sort.') || field === 'rules.order') return 'sort';
  if (field === 'rules.limit') return 'limit';
  let best: number | null = null;
  let length = -1;
  for (const [rowKey, path] of rowPaths(model)) {
    const inside = field === path || field.startsWith(`${path}.`) || field.startsWith(`${path}[`);
    if (inside && path.length > length) {
      best = rowKey;
      length = path.length;
    }
  }
  return best;
}

/** A 422 message without the path it starts with (shown beside the row the path names). */
export function withoutPath(message: string, field: string | null | undefined): string {
  return field && message.startsWith(`${field}: `) ? message.slice(field.length + 2) : message;
}
