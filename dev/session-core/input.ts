import { createHash, timingSafeEqual } from 'node:crypto'

/** A request the core refuses outright: HTTP 400 with a plain-text message, as the real core answers. */
export class BadRequest extends Error {
  readonly statusCode = 400
}

export const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex')

/** Constant-time comparison of two secrets of any length (their digests have equal length). */
export function safeEqual (a: string, b: string): boolean {
  const left = createHash('sha256').update(a, 'utf8').digest()
  const right = createHash('sha256').update(b, 'utf8').digest()
  return timingSafeEqual(left, right)
}

// Bodies and query strings are typed from the CDI schema, but they arrive from the network:
// every field is checked before use. `field` keeps the name tied to the schema type.
export function field<T extends object> (source: T | undefined, name: keyof T & string): unknown {
  return source === undefined || source === null ? undefined : (source as Record<string, unknown>)[name]
}

export function extraField (source: object | undefined, name: string): unknown {
  return source === undefined || source === null ? undefined : (source as Record<string, unknown>)[name]
}

const invalid = (name: string) => new BadRequest(`Field name '${name}' is invalid in JSON input`)

export function requireString (value: unknown, name: string): string {
  if (typeof value !== 'string') throw invalid(name)
  return value
}

export function optionalString (value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined
  return requireString(value, name)
}

export function optionalBoolean (value: unknown, name: string): boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value === 'boolean') return value
  // Query strings carry booleans as text.
  if (value === 'true') return true
  if (value === 'false') return false
  throw invalid(name)
}

export function requireBoolean (value: unknown, name: string): boolean {
  const flag = optionalBoolean(value, name)
  if (flag === undefined) throw invalid(name)
  return flag
}

export function isPlainObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function optionalObject (value: unknown, name: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined
  if (!isPlainObject(value)) throw invalid(name)
  return value
}

export function requireObject (value: unknown, name: string): Record<string, unknown> {
  const object = optionalObject(value, name)
  if (object === undefined) throw invalid(name)
  return object
}

export function stringArray (value: unknown, name: string): string[] {
  if (!Array.isArray(value) || !value.every((item): item is string => typeof item === 'string')) throw invalid(name)
  return value
}

/** The core stores emails trimmed and lower-cased, and compares them that way. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase()
