import fp from 'fastify-plugin'
import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifyRequest, FastifyServerOptions } from 'fastify'
import { TypedHttpError } from './error-bodies.js'

/** The charsets a text body may declare: the JSON and form parsers read every body as UTF-8. */
const ACCEPTED_CHARSETS = new Set(['utf-8', 'utf8'])

/** Limit of a form body (an identity provider's form post carries a code, a state and an ID token). */
export const FORM_BODY_LIMIT = 16 * 1024

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
export function validationOptions (): Pick<FastifyServerOptions, 'ajv' | 'schemaController'> {
  const pool = AjvCompiler() as unknown as Pool
  function buildValidator (externalSchemas: Record<string, unknown>, options: CompilerOptions): RouteCompile {
    const textual = pool(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: 'array' } })
    const exact = pool(externalSchemas, { ...options, customOptions: { ...options.customOptions, coerceTypes: false } })
    return (route) => route.httpPart === 'body' ? exact(route) : textual(route)
  }
  return {
    ajv: { customOptions: { removeAdditional: false, useDefaults: true } },
    schemaController: { compilersFactory: { buildValidator: buildValidator as unknown as ValidatorFactory } }
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

export interface RequestBodiesOptions {
  /** The paths (no query) that take `application/x-www-form-urlencoded`; every other answers 415. */
  formPaths: readonly string[]
}

/**
 * What a service reads as a body: text in UTF-8 only (any other declared charset is a 415, checked
 * before any parser, so the parsers a route scope adds keep the rule), and form bodies only where a
 * path needs one (an identity provider's form post), so no other route can be reached with a body
 * its schema was not written for.
 */
export const requestBodies = fp<RequestBodiesOptions>(async function requestBodies (fastify, options) {
  const formPaths = new Set(options.formPaths)

  // A callback hook: it runs on every request, most of them without a body or a charset.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    const charset = declaredCharset(request)
    if (charset !== undefined && !ACCEPTED_CHARSETS.has(charset)) {
      done(refuseCharset(charset), payload)
      return
    }
    done(null, payload)
  })

  fastify.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    const path = request.url.split('?', 1)[0] ?? ''
    if (!formPaths.has(path)) {
      done(new TypedHttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'This route takes JSON bodies only'), undefined)
      return
    }
    // parseAs 'string': the body is text here. Its limit is checked by hand: a route served from a
    // not-found handler (the session library's) reads bodies up to the server's limit, whatever
    // the parser's own says.
    const text = body as string
    if (Buffer.byteLength(text) > FORM_BODY_LIMIT) {
      done(new TypedHttpError(413, 'BODY_TOO_LARGE', `A form body is at most ${FORM_BODY_LIMIT / 1024} KiB`), undefined)
      return
    }
    done(null, Object.fromEntries(new URLSearchParams(text)))
  })
}, { name: 'request-bodies' })
