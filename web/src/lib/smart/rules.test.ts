import { describe, expect, it } from 'vitest';
import {
  errorTarget,
  fromRules,
  newCondition,
  parseNsp,
  rowPaths,
  shapeOf,
  toRules,
  withoutPath,
  type ConditionRow,
  type GroupRow,
  type JsonObject,
} from './rules';

// An .nsp as Navidrome writes them: camelCase fields, `order` beside `sort`, nested groups.
const NSP = `{
  "name": "80s and 90s favourites",
  "comment": "Loved or played a lot, <b>not</b> HTML",
  "public": true,
  "all": [
    { "inTheRange": { "year": [1980, 1999] } },
    { "any": [
      { "is": { "loved": true } },
      { "gt": { "playCount": 10 } },
      { "all": [ { "contains": { "genre": "rock" } }, { "inTheLast": { "lastPlayed": 90 } } ] }
    ] },
    { "notContains": { "albumArtist": "Various" } },
    { "after": { "dateAdded": "2020-01-31" } }
  ],
  "sort": "year,-rating",
  "order": "desc",
  "limit": 100
}`;

// The same rules written by hand in the server's canonical form.
const CANONICAL: JsonObject = {
  all: [
    { inTheRange: { year: [1980, 1999] } },
    { any: [{ is: { loved: true } }, { gt: { playcount: 10 } }, { all: [{ contains: { genre: 'rock' } }, { inTheLast: { lastplayed: 90 } }] }] },
    { notContains: { albumartist: 'Various' } },
    { after: { dateadded: '2020-01-31' } },
  ],
  sort: '-year,rating',
  limit: 100,
};

describe('smart playlist rules and the editor model', () => {
  it('imports an .nsp: name and comment apart, the rest as rules', () => {
    const nsp = parseNsp(NSP);
    expect(nsp.name).toBe('80s and 90s favourites');
    expect(nsp.description).toBe('Loved or played a lot, <b>not</b> HTML');
    expect(Object.keys(nsp.rules).sort()).toEqual(['all', 'limit', 'order', 'sort']);
  });

  it('turns an .nsp into the same rules as written by hand', () => {
    expect(toRules(fromRules(parseNsp(NSP).rules))).toEqual(CANONICAL);
  });

  it('round-trips canonical rules exactly, and the model through rules', () => {
    expect(toRules(fromRules(CANONICAL))).toEqual(CANONICAL);
    const model = fromRules(CANONICAL);
    const again = fromRules(toRules(model));
    // Keys are new on every read; everything else is equal.
    const strip = (json: unknown): unknown => JSON.parse(JSON.stringify(json, (k, v) => (k === 'key' ? undefined : v)));
    expect(strip(again)).toEqual(strip(model));
  });

  it('builds the tree: groups, conditions, sort keys and limit', () => {
    const model = fromRules(CANONICAL);
    expect(model.root.match).toBe('all');
    expect(model.root.rows.map((r) => r.type)).toEqual(['condition', 'group', 'condition', 'condition']);
    const group = model.root.rows[1] as GroupRow;
    expect(group.match).toBe('any');
    expect((group.rows[1] as ConditionRow).field).toBe('playcount');
    expect(model.sort).toEqual([
      { field: 'year', descending: true },
      { field: 'rating', descending: false },
    ]);
    expect(model.limit).toBe(100);
    expect(model.random).toBe(false);
  });

  it('reads `any` at the top, random order, and `order: desc` without a sort', () => {
    expect(toRules(fromRules({ any: [{ is: { genre: 'Jazz' } }], sort: 'random' }))).toEqual({
      any: [{ is: { genre: 'Jazz' } }],
      sort: 'random',
    });
    expect(toRules(fromRules({ all: [{ is: { genre: 'Jazz' } }], order: 'desc' }))).toEqual({
      all: [{ is: { genre: 'Jazz' } }],
      sort: '-title',
    });
  });

  it('keeps what it cannot show, so the server refuses it by name', () => {
    const odd: JsonObject = {
      all: [{ is: { genre: 'Jazz', year: 2000 } }, { contains: { comment: 'live' } }, 'text'],
      any: [],
      shuffle: true,
    };
    const model = fromRules(odd);
    expect(model.root.rows.map((r) => r.type)).toEqual(['raw', 'condition', 'raw']);
    expect(toRules(model)).toEqual(odd);
  });

  it('names each row by the path the server uses in a 422', () => {
    const model = fromRules(CANONICAL);
    const group = model.root.rows[1] as GroupRow;
    const nested = group.rows[2] as GroupRow;
    const paths = rowPaths(model);
    expect(paths.get(model.root.rows[0]!.key)).toBe('rules.all[0]');
    expect(paths.get(nested.rows[1]!.key)).toBe('rules.all[1].any[2].all[1]');

    expect(errorTarget(model, 'rules.all[1].any[2].all[1].inTheLast.lastplayed')).toBe(nested.rows[1]!.key);
    expect(errorTarget(model, 'rules.all[1].any')).toBe(group.key);
    expect(errorTarget(model, 'rules.all[3].after.dateadded')).toBe(model.root.rows[3]!.key);
    expect(errorTarget(model, 'rules.all')).toBe(model.root.key);
    expect(errorTarget(model, 'rules.sort.bogus')).toBe('sort');
    expect(errorTarget(model, 'rules.limit')).toBe('limit');
    expect(errorTarget(model, 'name')).toBe(null);
    expect(withoutPath('rules.limit: must be a whole number', 'rules.limit')).toBe('must be a whole number');
  });

  it('picks a value input by kind and operator, and a fitting empty condition', () => {
    expect(shapeOf('date', 'inTheLast')).toBe('days');
    expect(shapeOf('date', 'inTheRange')).toBe('dateRange');
    expect(shapeOf('number', 'inTheRange')).toBe('numberRange');
    expect(shapeOf('bool', 'is')).toBe('bool');
    expect(shapeOf('text', 'startsWith')).toBe('text');
    const year = newCondition({ name: 'year', kind: 'number', operators: ['is', 'gt', 'inTheRange'] });
    expect([year.field, year.operator, year.value]).toEqual(['year', 'is', null]);
    const title = newCondition({ name: 'title', kind: 'text', operators: ['is', 'contains'] });
    expect([title.operator, title.value]).toEqual(['contains', '']);
  });

  it('refuses a file that is not a JSON object', () => {
    expect(() => parseNsp('nope')).toThrow('not JSON');
    expect(() => parseNsp('[1]')).toThrow('not a JSON object');
  });
});
