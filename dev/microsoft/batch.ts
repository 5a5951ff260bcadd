// Graph's JSON batching, `POST /v1.0/$batch`: up to 20 requests in one call, each answered as if it
// had been sent alone with the batch's token. Each one goes through the stand-in's own routes, so
// permissions, armed faults, counters and errors apply to it exactly as to a direct call.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { GraphError } from './errors.js'
import { newGuid } from './secrets.js'

/** "JSON batch requests are currently limited to 20 individual requests." */
const MAX_BATCH_REQUESTS = 20

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
type Method = typeof METHODS[number]
const WRITES: ReadonlySet<Method> = new Set(['POST', 'PUT', 'PATCH'])

// The batch's own credentials speak for every request in it; these are the transport's, not the request's.
const NOT_FORWARDED = new Set(['authorization', 'host', 'content-length', 'connection', 'transfer-encoding'])
const NOT_ANSWERED = new Set(['content-length', 'connection', 'date', 'keep-alive', 'transfer-encoding'])
// Graph spells these in lower case on its answers; other header names in the usual capitalisation.
const LOWER_CASE_HEADERS = new Set(['request-id', 'client-request-id'])

interface BatchItem {
  id: string
  method: Method
  url: string
  headers: Record<string, string>
  body?: unknown
  dependsOn: string[]
}

interface BatchResponse {
  id: string
  status: number
  headers: Record<string, string>
  body?: unknown
  /** A JSON body as the request's route wrote it, placed in the answer as it is. */
  json?: string
}

const badRequest = (message: string): GraphError => new GraphError(400, 'BadRequest', message)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function headerOf (headers: Record<string, string>, name: string): string | undefined {
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

function readItem (raw: unknown): BatchItem {
  if (!isObject(raw)) throw badRequest('Invalid batch payload format: each request must be a JSON object.')
  const { id, method, url, headers, body, dependsOn } = raw
  if (typeof id !== 'string' || id === '') throw badRequest('Invalid batch payload format: each request needs an \'id\' string.')
  if (typeof method !== 'string' || !(METHODS as readonly string[]).includes(method.toUpperCase())) {
    throw badRequest(`Invalid batch payload format: request with id '${id}' needs a 'method' of ${METHODS.join(', ')}.`)
  }
  if (typeof url !== 'string' || url === '') throw badRequest(`Invalid batch payload format: request with id '${id}' needs a 'url' string.`)
  const readHeaders: Record<string, string> = {}
  if (headers !== undefined && headers !== null) {
    if (!isObject(headers)) throw badRequest(`Invalid batch payload format: 'headers' of request with id '${id}' must be a JSON object.`)
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string') throw badRequest(`Invalid batch payload format: header '${name}' of request with id '${id}' must be a string.`)
      readHeaders[name] = value
    }
  }
  if (dependsOn !== undefined && (!Array.isArray(dependsOn) || !dependsOn.every((entry) => typeof entry === 'string'))) {
    throw badRequest(`Invalid batch payload format: 'dependsOn' of request with id '${id}' must be an array of request ids.`)
  }
  return {
    id,
    method: method.toUpperCase() as Method,
    url,
    headers: readHeaders,
    ...(body === undefined ? {} : { body }),
    dependsOn: (dependsOn as string[] | undefined) ?? []
  }
}

/**
 * The requests of a batch, or the 400 that refuses the whole batch before any of them runs: too many
 * requests, a request without id, method or url, an id used twice (ids compare without case), a
 * write without its body or Content-Type, and dependencies that are neither fully sequential nor
 * fully parallel or that name no earlier request.
 */
function readBatch (body: unknown): BatchItem[] {
  if (!isObject(body) || !Array.isArray(body['requests'])) throw badRequest('Invalid batch payload format: a \'requests\' array is required.')
  const raw: unknown[] = body['requests']
  if (raw.length > MAX_BATCH_REQUESTS) throw badRequest('Number of requests inside batch exceeds the limit.')
  if (raw.length === 0) throw badRequest('Invalid batch payload format: the \'requests\' array is empty.')
  const items = raw.map(readItem)

  const seen = new Set<string>()
  for (const item of items) {
    const key = item.id.toLowerCase()
    if (seen.has(key)) throw badRequest(`Request Id ${item.id} has to be unique in a batch`)
    seen.add(key)
  }

  for (const item of items) {
    if (!WRITES.has(item.method)) continue
    const contentType = headerOf(item.headers, 'content-type')
    if (item.body === undefined) throw badRequest(`Write request id : ${item.id} does not contain Content-Type header or body.`)
    if (contentType === undefined || contentType === '') throw badRequest(`Write request with id '${item.id}' does not contain a Content-Type header.`)
  }

  if (items.some((item) => item.dependsOn.length > 0)) {
    const earlier = new Set<string>()
    items.forEach((item, index) => {
      if (index > 0 && item.dependsOn.length === 0) throw badRequest('Batch should be either fully sequential or fully parallel.')
      for (const dependency of item.dependsOn) {
        if (!earlier.has(dependency.toLowerCase())) throw badRequest(`Invalid dependency for request Id ${item.id}: '${dependency}' is not an earlier request of the batch.`)
      }
      earlier.add(item.id.toLowerCase())
    })
  }
  return items
}

/** `/me/events`, `me/events?$select=...`: relative to the version, as Graph resolves them; undefined for anything else. */
function resolveUrl (url: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return undefined
  const resolved = new URL(`/v1.0/${url.replace(/^\/+/, '')}`, 'http://graph.invalid')
  // `..` segments are resolved away by URL: whatever lands outside the version is not a Graph request.
  if (!resolved.pathname.startsWith('/v1.0/')) return undefined
  return `${resolved.pathname}${resolved.search}`
}

const canonicalHeader = (name: string): string =>
  LOWER_CASE_HEADERS.has(name) ? name : name.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('-')

/** A refusal the batch itself gives for one of its requests, in Graph's error envelope. */
function refusal (id: string, error: GraphError): BatchResponse {
  const requestId = newGuid()
  return { id, status: error.statusCode, headers: { 'Content-Type': 'application/json' }, body: error.body(requestId, requestId, new Date()) }
}

/** What a request's answer becomes in `responses`: JSON bodies as JSON, text as a string, other bytes in base64. */
function answerOf (id: string, status: number, rawHeaders: Record<string, unknown>, payload: Buffer): BatchResponse {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(rawHeaders)) {
    if (NOT_ANSWERED.has(name.toLowerCase()) || value === undefined) continue
    headers[canonicalHeader(name.toLowerCase())] = Array.isArray(value) ? value.map(String).join(', ') : String(value)
  }
  if (payload.length === 0) return { id, status, headers }
  const contentType = (headers['Content-Type'] ?? '').toLowerCase()
  // The stand-in's routes write their JSON with Fastify's serializer, so it is valid JSON; read
  // and written again, a series' instances cost more than the rest of the batch.
  if (/^application\/([\w.+-]+\+)?json/.test(contentType)) return { id, status, headers, json: payload.toString('utf8') }
  if (contentType.startsWith('text/')) return { id, status, headers, body: payload.toString('utf8') }
  return { id, status, headers, body: payload.toString('base64') }
}

/** A write's body as it goes on the wire: JSON for JSON media types, a string for text, else base64 decoded. */
function payloadOf (item: BatchItem): string | Buffer | undefined {
  if (!WRITES.has(item.method) || item.body === undefined) return undefined
  const contentType = (headerOf(item.headers, 'content-type') ?? '').toLowerCase()
  if (typeof item.body !== 'string' || /^application\/([\w.+-]+\+)?json/.test(contentType)) return JSON.stringify(item.body)
  return contentType.startsWith('text/') ? item.body : Buffer.from(item.body, 'base64')
}

const failed = (status: number): boolean => status >= 400

export async function batchRoutes (app: FastifyInstance): Promise<void> {
  /** One request of the batch, sent through the whole app as a request of its own. */
  const run = async (request: FastifyRequest, item: BatchItem): Promise<BatchResponse> => {
    const url = resolveUrl(item.url)
    if (url === undefined) return refusal(item.id, badRequest(`Invalid request URL '${item.url}': batch request URLs are relative to the version, e.g. '/me/events'.`))
    if (/^\/v1\.0\/\$batch$/i.test(url.split('?', 1)[0] ?? '')) return refusal(item.id, badRequest('Nested batch requests are not supported.'))
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(item.headers)) if (!NOT_FORWARDED.has(name.toLowerCase())) headers[name] = value
    const authorization = request.headers.authorization
    if (authorization !== undefined) headers['authorization'] = authorization
    const payload = payloadOf(item)
    const answer = await app.inject({ method: item.method, url, headers, ...(payload === undefined ? {} : { payload }) })
    return answerOf(item.id, answer.statusCode, answer.headers, answer.rawPayload)
  }

  app.post('/$batch', { config: { operation: 'batch' } }, async (request, reply) => {
    const items = readBatch(request.body)
    const statuses = new Map<string, number>()
    const responses: BatchResponse[] = []
    // One after another in the order given, which is also every dependency's order (readBatch
    // checked that each names an earlier request).
    for (const item of items) {
      const dependencyFailed = item.dependsOn.some((dependency) => failed(statuses.get(dependency.toLowerCase()) ?? 424))
      const response = dependencyFailed
        ? refusal(item.id, new GraphError(424, 'FailedDependency', 'The request depends on a request of the batch that failed.'))
        : await run(request, item)
      statuses.set(item.id.toLowerCase(), response.status)
      responses.push(response)
    }
    // Graph does not keep the requests' order ("Individual responses might appear in a different
    // order than the requests"): answering in reverse keeps a client from relying on it.
    const answers = responses.reverse().map(({ json, ...response }) => json === undefined
      ? JSON.stringify(response)
      : `${JSON.stringify(response).slice(0, -1)},"body":${json}}`)
    return reply.code(200).type('application/json').send(`{"responses":[${answers.join(',')}]}`)
  })
}
