// Update documents applied the way mongod applies them; the operators themselves come from mingo.
import { Aggregator, update as mingoUpdate } from 'mingo'
import { ObjectId, serialize } from 'bson'
import { CommandError } from './errors.js'
import { MINGO_OPTIONS, cloneValue, equalityFields, formatKeyValue, isPlainObject, keyOf, setPath } from './values.js'
import type { Doc } from './values.js'

const OPERATORS = new Set([
  '$addToSet', '$bit', '$currentDate', '$inc', '$max', '$min', '$mul', '$pop', '$pull', '$pullAll',
  '$push', '$rename', '$set', '$setOnInsert', '$unset'
])

export type UpdateSpec = Doc | Doc[]

function immutableId (): CommandError {
  return new CommandError(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
}

export function isReplacement (update: Doc): boolean {
  return Object.keys(update).every((key) => !key.startsWith('$'))
}

function checkOperators (update: Doc): void {
  const paths: string[] = []
  for (const [operator, fields] of Object.entries(update)) {
    if (!operator.startsWith('$') || !OPERATORS.has(operator)) {
      throw new CommandError(9, `Unknown modifier: ${operator}. Expected a valid update modifier or pipeline-style update specified as an array`)
    }
    if (!isPlainObject(fields)) {
      throw new CommandError(9, `Modifiers operate on fields but we found type ${Array.isArray(fields) ? 'array' : typeof fields} instead. For example: {$mod: {<field>: ...}} not {$set: <${typeof fields}>}`)
    }
    for (const path of Object.keys(fields)) {
      const target = operator === '$rename' ? [path, String(fields[path])] : [path]
      for (const candidate of target) {
        const clash = paths.find((other) => other === candidate || other.startsWith(candidate + '.') || candidate.startsWith(other + '.'))
        if (clash !== undefined) throw new CommandError(40, `Updating the path '${candidate}' would create a conflict at '${clash}'`)
        paths.push(candidate)
      }
    }
  }
}

/**
 * The document after `update` is applied to `original` (never modified). `inserting` is true for
 * the document an upsert creates, where `$setOnInsert` applies.
 */
export function applyUpdate (original: Doc, update: UpdateSpec, options: { filter: Doc, arrayFilters?: Doc[] | undefined, inserting: boolean }): Doc {
  let result: Doc
  if (Array.isArray(update)) {
    const [output] = new Aggregator(update, MINGO_OPTIONS).run([cloneValue(original)])
    if (output === undefined || !isPlainObject(output)) throw new CommandError(2, 'update pipeline produced no document')
    result = output
  } else if (isReplacement(update)) {
    if ('_id' in update && original._id !== undefined && keyOf(update._id) !== keyOf(original._id)) throw immutableId()
    const { _id: ignoredId, ...rest } = cloneValue(update)
    result = original._id === undefined ? cloneValue(update) : { _id: original._id, ...rest }
  } else {
    checkOperators(update)
    const { $setOnInsert: onInsert, ...operators } = update
    const modifier: Doc = { ...operators }
    if (options.inserting && isPlainObject(onInsert)) modifier.$set = { ...(isPlainObject(modifier.$set) ? modifier.$set : {}), ...onInsert }
    const plain = plainUpdate(original, modifier)
    result = plain ?? cloneValue(original)
    if (plain === undefined && Object.keys(modifier).length > 0) {
      try {
        // mingo applies the update only where the condition matches; a document being inserted is
        // the upsert's seed, which need not match the whole filter (an `$or`, a range), so it has none.
        const condition = options.inserting ? undefined : options.filter
        mingoUpdate(result, modifier, options.arrayFilters, condition, { cloneMode: 'deep', queryOptions: MINGO_OPTIONS })
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error)
        if (message.includes("immutable field '_id'")) throw immutableId()
        throw new CommandError(2, message)
      }
    }
  }
  if (original._id !== undefined && keyOf(result._id) !== keyOf(original._id)) throw immutableId()
  return result
}

/** A number held in one of BSON's numeric classes (a long, a decimal, a double or int kept as such). */
function isBsonNumber (value: unknown): boolean {
  const type = typeof value === 'object' && value !== null ? (value as { _bsontype?: unknown })._bsontype : undefined
  return type === 'Long' || type === 'Decimal128' || type === 'Double' || type === 'Int32'
}

/** The name mongod gives a value's BSON type in its messages. */
function bsonTypeName (value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'string') return 'string'
  if (typeof value === 'boolean') return 'bool'
  if (value instanceof Date) return 'date'
  if (Array.isArray(value)) return 'array'
  if (isPlainObject(value)) return 'object'
  return typeof value === 'object' ? String((value as { _bsontype?: unknown })._bsontype ?? 'object').toLowerCase() : typeof value
}

/**
 * `$set`, `$unset` and `$inc` of numbers, on paths through embedded documents only (no array, no
 * null, no positional or numeric part on the way): what most writes are, applied here directly.
 * mingo's general update builds its operator context and a query on every call, which was most of
 * the stand-in's time for such a write. Undefined where mingo's rules are needed.
 */
function plainUpdate (original: Doc, modifier: Doc): Doc | undefined {
  const steps: Array<{ operator: string, segments: string[], value: unknown }> = []
  for (const [operator, fields] of Object.entries(modifier)) {
    if (operator !== '$set' && operator !== '$unset' && operator !== '$inc') return undefined
    for (const [path, value] of Object.entries(fields as Doc)) {
      const segments = path.split('.')
      if (segments.some((segment) => segment === '' || segment.startsWith('$') || /^\d+$/.test(segment))) return undefined
      let holder: unknown = original
      for (const [depth, segment] of segments.slice(0, -1).entries()) {
        holder = isPlainObject(holder) ? holder[segment] : undefined
        if (holder === undefined || isPlainObject(holder)) continue
        if (Array.isArray(holder)) return undefined
        // A field inside a value that is not a document: nothing to unset, nothing that can be made.
        if (operator === '$unset') break
        throw new CommandError(28, `Cannot create field '${segments[depth + 1] as string}' in element ${formatKeyValue({ [segment]: holder })}`)
      }
      if (operator === '$inc') {
        const current = isPlainObject(holder) ? holder[segments[segments.length - 1] as string] : undefined
        if (typeof value !== 'number' || isBsonNumber(current)) return undefined
        if (current !== undefined && typeof current !== 'number') {
          throw new CommandError(14, `Cannot apply $inc to a value of non-numeric type. ${formatKeyValue({ _id: original._id })} has the field '${segments[segments.length - 1] as string}' of non-numeric type ${bsonTypeName(current)}`)
        }
      }
      steps.push({ operator, segments, value })
    }
  }
  const result = cloneValue(original)
  for (const { operator, segments, value } of steps) {
    const field = segments[segments.length - 1] as string
    if (operator === '$unset') {
      let holder: unknown = result
      for (const segment of segments.slice(0, -1)) holder = isPlainObject(holder) ? holder[segment] : undefined
      if (isPlainObject(holder)) delete holder[field]
      continue
    }
    let holder: Doc = result
    for (const segment of segments.slice(0, -1)) {
      if (holder[segment] === undefined) holder[segment] = {}
      holder = holder[segment] as Doc
    }
    holder[field] = operator === '$inc' ? (holder[field] as number | undefined ?? 0) + (value as number) : cloneValue(value)
  }
  return result
}

/** The document an upsert inserts: the filter's equality fields, then the update. */
export function upsertDocument (filter: Doc, update: UpdateSpec, arrayFilters: Doc[] | undefined): Doc {
  let seed: Doc = {}
  if (Array.isArray(update) || !isReplacement(update)) {
    for (const [path, value] of equalityFields(filter)) setPath(seed, path, cloneValue(value))
    seed = applyUpdate(seed, update, { filter, arrayFilters, inserting: true })
  } else {
    seed = cloneValue(update)
    const filterId = equalityFields(filter).get('_id')
    if (seed._id === undefined && filterId !== undefined) seed._id = cloneValue(filterId)
  }
  return withId(seed)
}

/** mongod stores `_id` first and generates one when the client did not. */
export function withId (document: Doc): Doc {
  if (document._id === undefined) return { _id: new ObjectId(), ...document }
  if (Object.keys(document)[0] === '_id') return document
  const { _id: id, ...rest } = document
  return { _id: id, ...rest }
}

export function sameDocument (a: Doc, b: Doc): boolean {
  return Buffer.from(serialize(a)).equals(serialize(b))
}
