import fp from 'fastify-plugin'
import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifyRequest, FastifyServerOptions } from 'fastify'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { isValidTimeZone } from '../../lib/events/time.js'
import { TIME_ZONE_FORMAT } from '../../schemas/event.js'

/** The charsets a text body may declare: the JSON parser reads every body as UTF-8. */
const ACCEPTED_CHARSETS = new Set(['utf-8', 'utf8'])

/** Formats of this project's schemas beside ajv-formats' standard ones. */
export const SCHEMA_FORMATS = {
  [TIME_ZONE_FORMAT]: { type: 'string', validate: isValidTimeZone }
} as const

/** What a request is told when a value fails one of those formats (ajv would say `must match format "..."`). */
export const FORMAT_MESSAGES: Record<string, string> = {
  [TIME_ZONE_FORMAT]: 'must be an IANA time zone name'
}

type ValidatorFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
// @fastify/ajv-compiler's declared types describe its compile function as ajv's; what Fastify
// hands the factory and calls the result with is this.
interface CompilerOptions { customOptions?: Record<string, unknown>, plugins?: unknown[] }
type RouteCompile = (route: { httpPart?: string }) => unknown
type Pool = (externalSchemas: Record<string, unknown>, options: CompilerOptions) => RouteCompile

/**
 * Fastify options that validate each part of a request by what it can be. Query strings, path
 * parameters and headers are text by nature, so `?limit=5` may be read as a number. A JSON body
 * already carries its types: it is checked as sent, never coerced (a `null` or `123` title, or
 * `"false"` for a boolean, is a 400, not an empty string, "123" or false).
 */
export function validationOptions (): Pick<FastifyServerOptions, 'ajv' | 'schemaController' | 'serializerOpts'> {
  const pool = AjvCompiler() as unknown as Pool
  function buildValidator (externalSchemas: Record<string, unknown>, options: CompilerOptions): RouteCompile {
    const textual = pool(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: 'array' } })
    const exact = pool(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: false } })
    return (route) => route.httpPart === 'body' ? exact(route) : textual(route)
  }
  return {
    ajv: { customOptions: { removeAdditional: false, useDefaults: true, formats: SCHEMA_FORMATS } },
    schemaController: { compilersFactory: { buildValidator: buildValidator as unknown as ValidatorFactory } },
    // The serializer picks the branch of a union (an event date) with ajv too.
    serializerOpts: { ajv: { formats: SCHEMA_FORMATS } }
  }
}

function declaredCharset (request: FastifyRequest): string | undefined {
  const header = request.headers['content-type']
  if (header === undefined) return undefined
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(header)
  return match?.[1]?.toLowerCase()
}

function refuseCharset (charset: string): TypedHttpError {
  return new TypedHttpError(415, 'UNSUPPORTED_CHARSET', `Request bodies are read as UTF-8; charset ${charset.slice(0, 40)} is not accepted`)
}

/**
 * What a service reads as a body: text in UTF-8 only (any other declared charset is a 415, checked
 * before any parser, so the parsers a route scope adds keep the rule), and never a form: no route
 * of either service takes one (Apple's form post goes to the web client's callback, which turns it
 * into a GET), so no route can be reached with a body its schema was not written for.
 */
export const requestBodies = fp(async function requestBodies (fastify) {
  // A callback hook: it runs on every request, most of them without a body or a charset.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    const charset = declaredCharset(request)
    if (charset !== undefined && !ACCEPTED_CHARSETS.has(charset)) {
      done(refuseCharset(charset), payload)
      return
    }
    done(null, payload)
  })

  fastify.addContentTypeParser('application/x-www-form-urlencoded', (_request, _payload, done) => {
    done(new TypedHttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'This route takes JSON bodies only'), undefined)
  })
}, { name: 'request-bodies' })
