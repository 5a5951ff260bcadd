// One collection: documents keyed by their `_id`, and hashed indexes kept in step with them.
import { Query } from 'mingo'
import { CommandError } from './errors.js'
import {
  MINGO_OPTIONS, equalityFields, formatKeyValue, inFields, isIndexableScalar, isPlainObject, keyOf, pathValues
} from './values.js'
import type { Doc } from './values.js'
import type { UpdateSpec } from './updates.js'

export interface IndexSpec {
  v: 2
  key: Doc
  name: string
  unique?: boolean
  sparse?: boolean
  partialFilterExpression?: Doc
  expireAfterSeconds?: number
}

interface IndexKey { key: string, values: unknown[] }

const SEPARATOR = '\u0001'
/** Index lookups of more `$in` combinations than this scan instead, as a real planner would weigh it. */
const MAX_COMBINATIONS = 100_000

export class Index {
  readonly spec: IndexSpec
  readonly fields: string[]
  readonly entries = new Map<string, Set<string>>()
  // For a compound index, ids by the values of each leading part of its fields (the first, the
  // first two, ...), so that equalities on a prefix (a user id, say, with a range on the next
  // field) do not scan the collection: mongod bounds an index scan by any prefix of its key.
  readonly #byPrefix: Array<Map<string, Set<string>>>
  readonly #partial: Query | undefined

  constructor (spec: IndexSpec) {
    this.spec = spec
    this.fields = Object.keys(spec.key)
    this.#partial = spec.partialFilterExpression === undefined ? undefined : new Query(spec.partialFilterExpression, MINGO_OPTIONS)
    this.#byPrefix = this.fields.slice(1).map(() => new Map())
  }

  /** The keys a document has in this index, or none when sparse or partial rules leave it out. */
  keysOf (document: Doc): IndexKey[] {
    if (this.#partial !== undefined && !this.#partial.test(document)) return []
    const perField = this.fields.map((field) => pathValues(document, field))
    if (this.spec.sparse === true && perField.every((values) => values.length === 1 && values[0] === undefined)) return []
    let tuples: unknown[][] = [[]]
    for (const values of perField) {
      tuples = tuples.flatMap((tuple) => values.map((value) => [...tuple, value]))
    }
    const keys = new Map<string, IndexKey>()
    for (const values of tuples) {
      const key = values.map(keyOf).join(SEPARATOR)
      if (!keys.has(key)) keys.set(key, { key, values })
    }
    return [...keys.values()]
  }

  add (id: string, document: Doc): void {
    for (const { key, values } of this.keysOf(document)) {
      addTo(this.entries, key, id)
      this.#prefixKeys(values).forEach((prefixKey, length) => { addTo(this.#byPrefix[length] as Map<string, Set<string>>, prefixKey, id) })
    }
  }

  remove (id: string, document: Doc): void {
    for (const { key, values } of this.keysOf(document)) {
      removeFrom(this.entries, key, id)
      this.#prefixKeys(values).forEach((prefixKey, length) => { removeFrom(this.#byPrefix[length] as Map<string, Set<string>>, prefixKey, id) })
    }
  }

  /** The keys of a full key's leading parts: of its first field, of its first two, ... (not of all). */
  #prefixKeys (values: unknown[]): string[] {
    const keys: string[] = []
    let prefix = ''
    for (let length = 0; length < this.#byPrefix.length; length++) {
      prefix = length === 0 ? keyOf(values[0]) : prefix + SEPARATOR + keyOf(values[length])
      keys.push(prefix)
    }
    return keys
  }

  /** Ids under an exact equality on every field; undefined when this index cannot answer it. */
  lookup (equalities: Map<string, unknown>): Set<string> | undefined {
    if (this.#partial !== undefined) return undefined
    const parts: string[] = []
    for (const field of this.fields) {
      if (!equalities.has(field)) return undefined
      const value = equalities.get(field)
      if (!isIndexableScalar(value)) return undefined
      parts.push(keyOf(value))
    }
    return this.entries.get(parts.join(SEPARATOR)) ?? new Set()
  }

  /**
   * Ids under an equality or an `$in` list on every field of the index (each combination looked
   * up, as mongod's index bounds do); undefined when this index cannot answer the filter. A
   * partial index answers only when the filter implies its partial filter, as mongod requires.
   */
  lookupCombinations (equalities: Map<string, unknown>, ins: Map<string, unknown[]>): Set<string> | undefined {
    if (this.#partial !== undefined && !this.#impliedBy(equalities, ins)) return undefined
    let combinations: string[][] = [[]]
    for (const field of this.fields) {
      const values = equalities.has(field) ? [equalities.get(field)] : ins.get(field)
      if (values === undefined || !values.every(isIndexableScalar)) return undefined
      combinations = combinations.flatMap((parts) => values.map((value) => [...parts, keyOf(value)]))
      if (combinations.length > MAX_COMBINATIONS) return undefined
    }
    const ids = new Set<string>()
    for (const parts of combinations) {
      for (const id of this.entries.get(parts.join(SEPARATOR)) ?? []) ids.add(id)
    }
    return ids
  }

  /**
   * Whether every document the filter can match is in this partial index. Only the common form is
   * recognised: a partial filter of `{ field: { $exists: true } }` clauses, implied by an equality
   * or an `$in` of non-null values on each such field.
   */
  #impliedBy (equalities: Map<string, unknown>, ins: Map<string, unknown[]>): boolean {
    const partial = this.spec.partialFilterExpression
    if (partial === undefined) return true
    return Object.entries(partial).every(([field, condition]) => {
      if (!isPlainObject(condition) || Object.keys(condition).length !== 1 || (condition as Doc).$exists !== true) return false
      const values = equalities.has(field) ? [equalities.get(field)] : ins.get(field)
      return values !== undefined && values.every(isIndexableScalar)
    })
  }

  /**
   * For a compound index: ids under the filter's equalities or `$in` lists on the longest leading
   * part of its fields that it pins (a superset of the matches), with that part's length; undefined
   * when it pins not even the first field.
   */
  lookupPrefix (equalities: Map<string, unknown>, ins: Map<string, unknown[]>): { ids: Set<string>, fields: number } | undefined {
    if (this.#partial !== undefined) return undefined
    let combinations: string[][] = [[]]
    let length = 0
    for (const field of this.fields.slice(0, this.#byPrefix.length)) {
      const values = equalities.has(field) ? [equalities.get(field)] : ins.get(field)
      if (values === undefined || !values.every(isIndexableScalar)) break
      const longer = combinations.flatMap((parts) => values.map((value) => [...parts, keyOf(value)]))
      if (longer.length > MAX_COMBINATIONS) break
      combinations = longer
      length++
    }
    if (length === 0) return undefined
    const byPrefix = this.#byPrefix[length - 1] as Map<string, Set<string>>
    const ids = new Set<string>()
    for (const parts of combinations) {
      for (const id of byPrefix.get(parts.join(SEPARATOR)) ?? []) ids.add(id)
    }
    return { ids, fields: length }
  }

  keyValue (values: unknown[]): Doc {
    const keyValue: Doc = {}
    this.fields.forEach((field, i) => { keyValue[field] = values[i] ?? null })
    return keyValue
  }
}

function addTo (map: Map<string, Set<string>>, key: string, id: string): void {
  let ids = map.get(key)
  if (ids === undefined) {
    ids = new Set()
    map.set(key, ids)
  }
  ids.add(id)
}

function removeFrom (map: Map<string, Set<string>>, key: string, id: string): void {
  const ids = map.get(key)
  if (ids === undefined) return
  ids.delete(id)
  if (ids.size === 0) map.delete(key)
}

export interface Change {
  id: string
  before?: Doc | undefined
  after?: Doc | undefined
  /** The update that made this change, so a change stream can tell an update from a replacement. */
  update?: UpdateSpec | undefined
}

export interface Candidates {
  entries: Iterable<[string, Doc]>
  exact: boolean
  /** The index that narrowed the candidates; undefined for a collection scan. */
  index: IndexSpec | undefined
}

const ID_INDEX: IndexSpec = { v: 2, key: { _id: 1 }, name: '_id_' }

export class Collection {
  readonly db: string
  readonly name: string
  readonly options: Doc
  readonly docs = new Map<string, Doc>()
  readonly indexes = new Map<string, Index>()

  constructor (db: string, name: string, options: Doc = {}) {
    this.db = db
    this.name = name
    this.options = options
  }

  get namespace (): string {
    return `${this.db}.${this.name}`
  }

  duplicateKey (indexName: string, keyPattern: Doc, keyValue: Doc): CommandError {
    return new CommandError(11000,
      `E11000 duplicate key error collection: ${this.namespace} index: ${indexName} dup key: ${formatKeyValue(keyValue)}`,
      { keyPattern, keyValue })
  }

  /**
   * Applies a set of document changes all together or not at all: old index entries go first, so
   * a batch may move a unique value from one document to another, then the new ones, each checked
   * against the unique indexes. An updated document keeps its place in natural order.
   */
  applyChanges (changes: Change[]): void {
    for (const change of changes) {
      if (change.before !== undefined) this.#unindex(change.id, change.before)
    }
    const indexed: Change[] = []
    for (const change of changes) {
      if (change.after === undefined) continue
      const conflict = this.#findConflict(change)
      if (conflict !== undefined) {
        for (const done of indexed) this.#unindex(done.id, done.after as Doc)
        for (const undone of changes) if (undone.before !== undefined) this.#index(undone.id, undone.before)
        throw conflict
      }
      this.#index(change.id, change.after)
      indexed.push(change)
    }
    for (const change of changes) {
      if (change.after === undefined) this.docs.delete(change.id)
      else this.docs.set(change.id, change.after)
    }
  }

  #findConflict (change: Change): CommandError | undefined {
    const document = change.after as Doc
    if (change.before === undefined && this.docs.has(change.id)) return this.duplicateKey('_id_', { _id: 1 }, { _id: document._id })
    for (const index of this.indexes.values()) {
      if (index.spec.unique !== true) continue
      for (const { key, values } of index.keysOf(document)) {
        const holders = index.entries.get(key)
        if (holders !== undefined && [...holders].some((holder) => holder !== change.id)) {
          return this.duplicateKey(index.spec.name, index.spec.key, index.keyValue(values))
        }
      }
    }
    return undefined
  }

  /** The id of a document other than `id` holding one of `document`'s unique keys, if any. */
  uniqueHolders (document: Doc): Array<{ index: Index, values: unknown[], ids: Set<string> }> {
    const found: Array<{ index: Index, values: unknown[], ids: Set<string> }> = []
    for (const index of this.indexes.values()) {
      if (index.spec.unique !== true) continue
      for (const { key, values } of index.keysOf(document)) {
        const ids = index.entries.get(key)
        if (ids !== undefined) found.push({ index, values, ids })
      }
    }
    return found
  }

  #index (id: string, document: Doc): void {
    for (const index of this.indexes.values()) index.add(id, document)
  }

  #unindex (id: string, document: Doc): void {
    for (const index of this.indexes.values()) index.remove(id, document)
  }

  /** Builds an index over the current documents; fails without change on a unique violation. */
  addIndex (spec: IndexSpec): void {
    const index = new Index(spec)
    for (const [id, document] of this.docs) {
      if (spec.unique === true) {
        for (const { key, values } of index.keysOf(document)) {
          const holders = index.entries.get(key)
          if (holders !== undefined && [...holders].some((holder) => holder !== id)) {
            throw this.duplicateKey(spec.name, spec.key, index.keyValue(values))
          }
        }
      }
      index.add(id, document)
    }
    this.indexes.set(spec.name, index)
  }

  /**
   * Documents that may match a filter, narrowed by `_id` or by an index when an equality allows
   * it; natural (insertion) order otherwise. `exact` means the lookup alone decided the match
   * (the filter is nothing but equalities the index answered), so no further test is needed.
   */
  candidates (filter: Doc): Candidates {
    const filterKeys = Object.keys(filter)
    const plainEquality = (fields: string[]): boolean =>
      filterKeys.length === fields.length && filterKeys.every((key) => fields.includes(key) && isIndexableScalar(filter[key]) && !isPlainObject(filter[key]))
    const equalities = equalityFields(filter)
    if (equalities.has('_id') && isIndexableScalar(equalities.get('_id'))) {
      const id = keyOf(equalities.get('_id'))
      const document = this.docs.get(id)
      return { entries: document === undefined ? [] : [[id, document]], exact: plainEquality(['_id']), index: ID_INDEX }
    }
    const ins = inFields(filter)
    const idList = ins.get('_id')
    if (idList !== undefined && idList.every(isIndexableScalar)) return { entries: this.#byIds(new Set(idList.map(keyOf))), exact: false, index: ID_INDEX }
    if (equalities.size > 0) {
      for (const index of this.indexes.values()) {
        const ids = index.lookup(equalities)
        if (ids !== undefined) return { entries: this.#byIds(ids), exact: plainEquality(index.fields), index: index.spec }
      }
    }
    if (ins.size > 0 || equalities.size > 0) {
      for (const index of this.indexes.values()) {
        const ids = index.lookupCombinations(equalities, ins)
        if (ids === undefined) continue
        // Exact when the filter says nothing beyond what the lookup decided.
        const exact = filterKeys.length === index.fields.length && filterKeys.every((key) => index.fields.includes(key) &&
          ((isIndexableScalar(filter[key]) && !isPlainObject(filter[key])) || ins.has(key)))
        return { entries: this.#byIds(ids), exact, index: index.spec }
      }
    }
    if (equalities.size > 0) {
      // As a planner would, the index whose key the filter pins furthest.
      let best: { ids: Set<string>, fields: number, index: Index } | undefined
      for (const index of this.indexes.values()) {
        const found = index.lookupPrefix(equalities, ins)
        if (found !== undefined && found.fields > (best?.fields ?? 0)) best = { ...found, index }
      }
      if (best !== undefined) return { entries: this.#byIds(best.ids), exact: false, index: best.index.spec }
    }
    for (const [field, list] of ins) {
      if (!list.every(isIndexableScalar)) continue
      for (const index of this.indexes.values()) {
        if (index.fields.length !== 1 || index.fields[0] !== field) continue
        const ids = new Set<string>()
        for (const value of list) {
          for (const id of index.lookup(new Map([[field, value]])) ?? []) ids.add(id)
        }
        return { entries: this.#byIds(ids), exact: false, index: index.spec }
      }
    }
    return { entries: this.docs.entries(), exact: filterKeys.length === 0, index: undefined }
  }

  #byIds (ids: Set<string>): Array<[string, Doc]> {
    const found: Array<[string, Doc]> = []
    for (const id of ids) {
      const document = this.docs.get(id)
      if (document !== undefined) found.push([id, document])
    }
    return found
  }

  indexSpecs (): IndexSpec[] {
    return [ID_INDEX, ...[...this.indexes.values()].map((index) => index.spec)]
  }
}
