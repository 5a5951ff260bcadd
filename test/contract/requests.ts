// Requests generated from the OpenAPI document's schemas (json-schema-faker), valid and invalid,
// and the check of every answer against the operation's declared responses (ajv, compiled from the
// same document). The contract test (openapi-contract.test.ts) sends them to a real app.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { ValidateFunction } from 'ajv'
import { createGeneratorSync } from 'json-schema-faker'
import { SCHEMA_FORMATS } from '../../plugins/external/request-bodies.js'
import { TIME_ZONE_FORMAT } from '../../schemas/event.js'

export const DOCUMENT_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'openapi.json')

type Schema = Record<string, unknown>
interface MediaType { schema?: Schema }
interface Response { description: string, content?: Record<string, MediaType>, headers?: Record<string, { schema?: Schema }> }
interface Parameter { name: string, in: 'query' | 'path' | 'header', required?: boolean, schema: Schema, example?: unknown }
export interface Operation {
  method: string
  path: string
  security?: Array<Record<string, string[]>>
  parameters?: Parameter[]
  requestBody?: { required?: boolean, content: Record<string, MediaType> }
  responses: Record<string, Response>
}

export interface OpenApiDocument {
  openapi: string
  paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>
}

export function readDocument (): OpenApiDocument {
  return JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as OpenApiDocument
}

export function operationsOf (document: OpenApiDocument): Operation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ ...operation, method: method.toUpperCase(), path })))
}

// One validator for requests and answers, with the formats the services register.
const ajv = new Ajv2020({ strict: false, allErrors: false })
addFormats.default(ajv)
for (const [name, format] of Object.entries(SCHEMA_FORMATS)) ajv.addFormat(name, format)
const compiled = new WeakMap<Schema, ValidateFunction>()

function validatorOf (schema: Schema): ValidateFunction {
  let validate = compiled.get(schema)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  return validate
}

function isValid (schema: Schema, value: unknown): boolean {
  return validatorOf(schema)(value)
}

const ZONES = Intl.supportedValuesOf('timeZone')
const generatorOptions = {
  seed: Number(process.env.CONTRACT_SEED ?? 20251126),
  optionalsProbability: 0.5,
  maxItems: 3,
  maxLength: 40,
  formats: { [TIME_ZONE_FORMAT]: (random: { next: () => number }) => ZONES[Math.floor(random.next() * ZONES.length)] ?? 'UTC' }
}
// Values from the schemas' keywords alone, and values that start from the schemas' `examples`
// where there are some: rules no schema can state (an end after its start) hold in those, so a
// write gets past its checks to the store.
const generators = {
  random: createGeneratorSync(generatorOptions),
  fromExamples: createGeneratorSync({ ...generatorOptions, useExamplesValue: true })
}

/** A value of the schema, checked against it (the generator does not honour every keyword together); undefined when none came. */
function validValue (schema: Schema, from: keyof typeof generators = 'random'): unknown {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const value = generators[from].generate(schema)
    if (isValid(schema, value)) return value
  }
  return undefined
}

/** A request as the test sends it. */
export interface GeneratedRequest {
  kind: 'valid' | 'invalid' | 'no credentials'
  /** What was broken, for the failure message. */
  label: string
  method: string
  url: string
  headers: Record<string, string>
  payload?: string
}

function schemaType (schema: Schema): string | undefined {
  const type = schema['type']
  return typeof type === 'string' ? type : undefined
}

/** Values of another JSON type than the schema's: `"true"` for a boolean, 12345 for a string. */
function wrongTypeOf (schema: Schema): unknown[] {
  switch (schemaType(schema)) {
    case 'string': return [12345, null]
    case 'boolean': return ['true', 1]
    case 'integer': case 'number': return ['1', true]
    case 'array': return [{}, 'x']
    case 'object': return ['x', []]
    default: return [12345, 'x', null, {}]
  }
}

/** Text values for a parameter that its schema refuses (a date that is no date, an oversized value, ...). */
const BAD_TEXT = ['5811-82-43T00:00:00Z', '5811-82-43', 'Mars/Olympus_Mons', 'not-a-value', '', 'x'.repeat(5000)]

function pathOf (operation: Operation, params: Record<string, string>): string {
  return operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(params[name] ?? 'x'))
}

function queryString (query: Record<string, string>): string {
  const text = new URLSearchParams(query).toString()
  return text === '' ? '' : `?${text}`
}

function parametersIn (operation: Operation, where: Parameter['in']): Parameter[] {
  return (operation.parameters ?? []).filter((parameter) => parameter.in === where)
}

/** Parameter values of a valid request: the required ones always, the others half of the time. */
function validParameters (operation: Operation, where: Parameter['in'], index: number): Record<string, string> | undefined {
  const values: Record<string, string> = {}
  for (const parameter of parametersIn(operation, where)) {
    if (parameter.required !== true && index % 2 === 1) continue
    // A parameter's example sits beside its schema in the document.
    const from = generatorFor(index)
    const value = from === 'fromExamples' && parameter.example !== undefined && isValid(parameter.schema, parameter.example)
      ? parameter.example
      : validValue(parameter.schema, from)
    if (value === undefined) return undefined
    values[parameter.name] = String(value)
  }
  return values
}

/** Every other request starts from the examples. */
function generatorFor (index: number): keyof typeof generators {
  return Math.floor(index / 2) % 2 === 0 ? 'fromExamples' : 'random'
}

function jsonSchemaOfBody (operation: Operation): Schema | undefined {
  return operation.requestBody?.content['application/json']?.schema
}

/** The media type of a body that is not JSON (an .ics import's text/calendar): such a body is sent as the known text. */
function textMediaTypeOf (operation: Operation): string | undefined {
  return Object.keys(operation.requestBody?.content ?? {}).find((type) => type !== 'application/json')
}

/**
 * Generated requests of one operation; `credentials` are the headers that meet its security.
 * `known` names values of path parameters that exist (an event of the signed-in user) and a body the
 * service's own rules accept (the schema cannot say that an end follows its start): every other
 * valid request takes them, so the operation is reached past its 404 and 400 too.
 */
export interface KnownValues { path?: Record<string, string[]>, body?: unknown }

export function requestsFor (operation: Operation, credentials: Record<string, string>, count: number, known: KnownValues = {}): GeneratedRequest[] {
  const requests: GeneratedRequest[] = []
  const secured = (operation.security ?? []).length > 0
  const bodySchema = jsonSchemaOfBody(operation)

  const build = (kind: GeneratedRequest['kind'], label: string, parts: { path: Record<string, string>, query: Record<string, string>, headers: Record<string, string>, body?: unknown, rawBody?: string, contentType?: string }, withCredentials = true): GeneratedRequest => {
    const headers: Record<string, string> = { ...parts.headers, ...(withCredentials ? credentials : {}) }
    let payload: string | undefined
    if (parts.rawBody !== undefined) payload = parts.rawBody
    else if (parts.body !== undefined) payload = JSON.stringify(parts.body)
    if (payload !== undefined) headers['content-type'] = parts.contentType ?? 'application/json'
    return { kind, label, method: operation.method, url: pathOf(operation, parts.path) + queryString(parts.query), headers, ...(payload === undefined ? {} : { payload }) }
  }

  // A valid base to break one thing of at a time: its optional parameters left out, so that none
  // of them changes what the rest means (a handshake's token makes the body unread).
  type Parts = { path: Record<string, string>, query: Record<string, string>, headers: Record<string, string>, body?: unknown }
  let base: Parts | undefined
  let fallback: Parts | undefined
  for (let index = 0; index < count; index += 1) {
    const generated = validParameters(operation, 'path', index)
    const useKnown = index % 2 === 0
    const existing = useKnown
      ? Object.fromEntries(Object.entries(known.path ?? {}).flatMap(([name, values]) => {
        const value = values[(index / 2) % Math.max(values.length, 1)]
        return value === undefined || generated?.[name] === undefined ? [] : [[name, value]]
      }))
      : {}
    const path = generated === undefined ? undefined : { ...generated, ...existing }
    const query = validParameters(operation, 'query', index)
    const headers = validParameters(operation, 'header', index)
    const body = bodySchema === undefined ? undefined : useKnown && known.body !== undefined ? known.body : validValue(bodySchema, generatorFor(index))
    if (path === undefined || query === undefined || headers === undefined || (bodySchema !== undefined && body === undefined)) continue
    const textType = textMediaTypeOf(operation)
    const text = bodySchema === undefined && textType !== undefined && typeof known.body === 'string' ? { rawBody: known.body, contentType: textType } : {}
    const parts = { path, query, headers, ...(body === undefined ? {} : { body }), ...text }
    const candidate = { path, query, headers: { ...headers }, ...(body === undefined ? {} : { body }) }
    if (index % 2 === 1) base ??= candidate
    fallback ??= candidate
    requests.push(build('valid', `valid #${index}`, parts))
  }
  const valid = base ?? fallback
  if (valid === undefined) throw new Error(`no valid request could be generated for ${operation.method} ${operation.path}`)

  if (secured) requests.push(build('no credentials', 'no credentials', valid, false))

  for (const where of ['path', 'query', 'header'] as const) {
    for (const parameter of parametersIn(operation, where)) {
      const bad = BAD_TEXT.find((text) => !isValid(parameter.schema, text) && !(where === 'header' && text === ''))
      if (bad !== undefined) {
        const changed = { ...valid, [where === 'header' ? 'headers' : where]: { ...valid[where === 'header' ? 'headers' : where], [parameter.name]: bad } }
        requests.push(build('invalid', `${where} ${parameter.name}: ${bad.slice(0, 30)}`, changed))
      }
      if (parameter.required === true && where !== 'path') {
        const key = where === 'header' ? 'headers' : where
        const { [parameter.name]: _left, ...rest } = valid[key]
        requests.push(build('invalid', `${where} ${parameter.name} left out`, { ...valid, [key]: rest }))
      }
    }
  }

  // Only a body the operation takes is read: routes without one ignore a body that is not JSON.
  if (operation.requestBody !== undefined) {
    requests.push(build('invalid', 'unreadable JSON', { ...valid, rawBody: '{"title": ' }))
    requests.push(build('invalid', 'not JSON', { ...valid, rawBody: 'title=x', contentType: 'text/plain' }))
    requests.push(build('invalid', 'a form', { ...valid, rawBody: 'title=x', contentType: 'application/x-www-form-urlencoded' }))
  }
  if (bodySchema !== undefined) {
    const candidates: Array<[string, unknown]> = [['a number for the body', 12345], ['null for the body', null]]
    const object = [valid.body].flat()[0]
    const properties = (bodySchema['properties'] ?? (bodySchema['anyOf'] as Schema[] | undefined)?.[0]?.['properties']) as Record<string, Schema> | undefined
    if (properties !== undefined && typeof object === 'object' && object !== null) {
      const record = object as Record<string, unknown>
      for (const [name, property] of Object.entries(properties)) {
        for (const wrong of wrongTypeOf(property).slice(0, 1)) candidates.push([`${name}: ${JSON.stringify(wrong)}`, { ...record, [name]: wrong }])
        const { [name]: _left, ...without } = record
        candidates.push([`${name} left out`, without])
      }
      candidates.push(['an unknown field', { ...record, unknownField: 'x' }])
    }
    for (const [label, body] of candidates) {
      if (!isValid(bodySchema, body)) requests.push(build('invalid', `body ${label}`, { ...valid, body }))
    }
  }
  return requests
}

export interface Answer { statusCode: number, headers: Record<string, unknown>, body: string }

/** Why the answer breaks the operation's declared responses; undefined when it matches. */
export function violationOf (operation: Operation, answer: Answer): string | undefined {
  const declared = operation.responses[String(answer.statusCode)] ?? operation.responses['default']
  if (declared === undefined) return `status ${answer.statusCode} is not declared (${answer.body.slice(0, 200)})`
  for (const name of Object.keys(declared.headers ?? {})) {
    if (answer.headers[name.toLowerCase()] === undefined) return `status ${answer.statusCode}: the declared header ${name} is missing`
  }
  const contentType = String(answer.headers['content-type'] ?? '')
  if (declared.content === undefined) {
    if (answer.body !== '') return `status ${answer.statusCode} declares no body, got ${contentType} ${answer.body.slice(0, 100)}`
    return undefined
  }
  const mediaType = contentType.split(';')[0]?.trim() ?? ''
  const media = declared.content[mediaType]
  if (media === undefined) return `status ${answer.statusCode}: media type "${mediaType}" is not declared (${Object.keys(declared.content).join(', ')})`
  if (media.schema === undefined) return undefined
  let body: unknown = answer.body
  if (mediaType === 'application/json') {
    try {
      body = JSON.parse(answer.body)
    } catch {
      return `status ${answer.statusCode}: the body is not JSON: ${answer.body.slice(0, 100)}`
    }
  }
  const validate = validatorOf(media.schema)
  if (!validate(body)) return `status ${answer.statusCode}: the body does not match: ${ajv.errorsText(validate.errors)} in ${answer.body.slice(0, 200)}`
  return undefined
}
