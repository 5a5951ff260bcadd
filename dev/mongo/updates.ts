// Update documents applied the way mongod applies them; the operators themselves come from mingo.
import { Aggregator, update as mingoUpdate } from 'mingo'
import { ObjectId, serialize } from 'bson'
import { CommandError } from './errors.js'
import { MINGO_OPTIONS, cloneValue, equalityFields, isPlainObject, keyOf, setPath } from './values.js'
import type { Doc } from './values.js'

const OPERATORS = new Set([
  '$addToSet', '$bit', '$currentDate', '$inc', '$max', '$min', '$mul', '$pop', '$pull', '$pullAll',
  '$push', '$rename', '$set', '$setOnInsert', '$unset'
])

export type UpdateSpec = Doc | Doc[]

function immutableId (): CommandError {
  return new CommandError(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
}

function isReplacement (update: Doc): boolean {
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
    result = cloneValue(original)
    if (Object.keys(modifier).length > 0) {
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
