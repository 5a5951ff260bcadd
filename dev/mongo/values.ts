// Value helpers shared by the store and the commands: index keys, dotted paths, copies.
import { ObjectId } from 'bson'
import type { Document } from 'bson'

export type Doc = Document

/** Options for every mingo query and pipeline: no server-side JavaScript ($where, $function). */
export const MINGO_OPTIONS = { scriptEnabled: false } as const

interface BsonValue { _bsontype: string }

function isBsonValue (value: unknown): value is BsonValue {
  return typeof value === 'object' && value !== null && typeof (value as Partial<BsonValue>)._bsontype === 'string'
}

export function isPlainObject (value: unknown): value is Doc {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A string that is equal for two values exactly when MongoDB treats them as the same index key.
 * Numbers of every width compare by value; embedded documents compare field by field in order.
 */
export function keyOf (value: unknown): string {
  if (value === undefined || value === null) return 'z'
  switch (typeof value) {
    case 'number': return 'n' + (Object.is(value, -0) ? 0 : value)
    case 'bigint': return 'n' + value.toString()
    case 'string': return 's' + value
    case 'boolean': return value ? 'T' : 'F'
    default: break
  }
  if (value instanceof Date) return 'd' + value.getTime()
  if (value instanceof RegExp) return 'r' + value.source + '/' + value.flags
  if (Array.isArray(value)) return 'a[' + value.map(keyOf).join(',') + ']'
  if (isBsonValue(value)) {
    switch (value._bsontype) {
      case 'ObjectId': return 'o' + (value as unknown as ObjectId).toHexString()
      case 'Long':
      case 'Int32':
      case 'Double':
      case 'Decimal128': return 'n' + String(value)
      case 'Binary': {
        const binary = value as unknown as { sub_type: number, buffer: Uint8Array }
        return 'x' + binary.sub_type + ':' + Buffer.from(binary.buffer).toString('base64')
      }
      default: return value._bsontype + ':' + JSON.stringify(value)
    }
  }
  if (value instanceof Uint8Array) return 'x0:' + Buffer.from(value).toString('base64')
  const entries = Object.entries(value as Doc).map(([k, v]) => JSON.stringify(k) + ':' + keyOf(v))
  return 'O{' + entries.join(',') + '}'
}

/**
 * Every value a dotted path reaches, descending into arrays the way MongoDB indexes and queries
 * do. An array at the end of the path yields its elements (a multikey index entry per element).
 * A path that reaches nothing yields `undefined` once.
 */
export function pathValues (document: unknown, path: string): unknown[] {
  const out: unknown[] = []
  collect(document, path.split('.'), 0, out)
  if (out.length === 0) out.push(undefined)
  return out
}

function collect (value: unknown, segments: string[], depth: number, out: unknown[]): void {
  if (depth === segments.length) {
    if (Array.isArray(value)) {
      if (value.length === 0) out.push(undefined)
      else for (const element of value) out.push(element)
    } else {
      out.push(value)
    }
    return
  }
  const segment = segments[depth] as string
  if (Array.isArray(value)) {
    if (/^\d+$/.test(segment)) collect(value[Number(segment)], segments, depth + 1, out)
    for (const element of value) {
      if (isPlainObject(element)) collect(element, segments, depth, out)
    }
    return
  }
  if (isPlainObject(value) && segment in value) collect(value[segment], segments, depth + 1, out)
}

export function setPath (document: Doc, path: string, value: unknown): void {
  const segments = path.split('.')
  let target: Doc = document
  for (const segment of segments.slice(0, -1)) {
    const next = target[segment]
    if (!isPlainObject(next)) target[segment] = {}
    target = target[segment] as Doc
  }
  target[segments[segments.length - 1] as string] = value
}

/** A deep copy that keeps BSON value classes (they are immutable, so they are shared). */
export function cloneValue<T> (value: T): T {
  if (Array.isArray(value)) return value.map(cloneValue) as T
  if (value instanceof Date) return new Date(value.getTime()) as T
  if (isPlainObject(value)) {
    const copy: Doc = {}
    for (const [k, v] of Object.entries(value)) copy[k] = cloneValue(v)
    return copy as T
  }
  return value
}

function formatValue (value: unknown): string {
  if (value === undefined || value === null) return 'null'
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (value instanceof Date) return `new Date(${value.getTime()})`
  if (Array.isArray(value)) return '[ ' + value.map(formatValue).join(', ') + ' ]'
  if (value instanceof ObjectId) return `ObjectId('${value.toHexString()}')`
  if (isPlainObject(value)) return formatKeyValue(value)
  return String(value)
}

/** mongod's rendering of a key in E11000 messages: `{ email: "a@b.c" }`. */
export function formatKeyValue (keyValue: Doc): string {
  const parts = Object.entries(keyValue).map(([k, v]) => `${k}: ${formatValue(v)}`)
  return parts.length === 0 ? '{}' : '{ ' + parts.join(', ') + ' }'
}

function isOperatorObject (value: unknown): value is Doc {
  if (!isPlainObject(value)) return false
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => k.startsWith('$'))
}

/**
 * The fields a filter pins to one value (`{ a: 1 }`, `{ a: { $eq: 1 } }`, inside `$and`), as
 * MongoDB uses them both to pick an index and to seed an upserted document.
 */
export function equalityFields (filter: Doc): Map<string, unknown> {
  const fields = new Map<string, unknown>()
  const visit = (clause: Doc): void => {
    for (const [key, value] of Object.entries(clause)) {
      if (key === '$and' && Array.isArray(value)) {
        for (const part of value) if (isPlainObject(part)) visit(part)
      } else if (key.startsWith('$')) {
        continue
      } else if (isOperatorObject(value)) {
        if ('$eq' in value && Object.keys(value).length === 1) fields.set(key, value.$eq)
      } else if (!(value instanceof RegExp)) {
        fields.set(key, value)
      }
    }
  }
  visit(filter)
  return fields
}

/** Fields pinned to a set of values with `$in` (for index lookups). */
export function inFields (filter: Doc): Map<string, unknown[]> {
  const fields = new Map<string, unknown[]>()
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith('$') || !isOperatorObject(value)) continue
    const list = value.$in
    if (Object.keys(value).length === 1 && Array.isArray(list) && list.every((v) => !(v instanceof RegExp))) fields.set(key, list)
  }
  return fields
}

/** A scalar that an index lookup can answer exactly (arrays and documents fall back to a scan). */
export function isIndexableScalar (value: unknown): boolean {
  if (value === null || value === undefined) return false
  if (Array.isArray(value) || isPlainObject(value) || value instanceof RegExp) return false
  return true
}
