// The provider adapters' fetch (CalDAV, Microsoft Graph, Google through gaxios): each answer is
// read whole as soon as its headers arrive, through a connection pool of its own. Why not the
// global fetch: once undici is loaded (the Sync service uses it), it becomes the global fetch's dispatcher, and undici 7's
// HTTP/1 parser throws an uncatchable assertion, ending the process, when a server closes the
// connection while a response body waits for a slow reader (nodejs/undici#5360; the fix is in
// undici 8, which needs Node 22). CalDAV servers such as Radicale close the connection after each
// answer, and a calendar query answers megabytes; nothing promises other servers never do. A body
// consumed in flowing mode from its first byte never makes the parser wait. Redirects are not
// followed (a provider's redirect is an answer to look at, not to chase with the credentials).
import { channel } from 'node:diagnostics_channel'
import { Agent, request, type Dispatcher } from 'undici'
import { checkUrl, guardedDispatcher, type AddressPolicy } from './address-guard.js'

/** A provider answered more than its limit: the request failed, and what came was dropped. */
export class ProviderAnswerTooLargeError extends Error {
  override name = 'ProviderAnswerTooLargeError'
}

/** Statuses whose answer has no body (Fetch standard, "null body status"). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304])
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'PROPFIND' | 'REPORT' | 'OPTIONS' | 'HEAD'

/** The request bodies the adapters send (JSON and XML text, forms, bytes); anything else is refused, never dropped. */
function bodyOf (body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  if (body instanceof URLSearchParams) return body.toString()
  if (body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  throw new TypeError('bufferedFetch sends text, form or byte bodies only')
}

/**
 * Drops an answer's body unread. undici's body fails with an abort error when destroyed before its
 * end, and one nobody listens to would end the process: the failure is the caller's to report.
 */
function discard (body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {})
  body.destroy()
}

/** An answer read whole, but never past `maxBytes`: a larger one fails before it fills the memory. */
async function readLimited (body: Dispatcher.ResponseData['body'], maxBytes: number, url: string): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > maxBytes) {
      discard(body)
      throw new ProviderAnswerTooLargeError(`the answer of ${new URL(url).host} is larger than ${maxBytes} bytes`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size)
}

export type ProviderFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

type ProviderName = 'google' | 'microsoft' | 'caldav'

/** What each provider request publishes on PROVIDER_REQUEST_CHANNEL when it ends. */
export interface ProviderRequestReport {
  provider: ProviderName
  /** The method and the API's resource (`GET events`, `POST token`, `REPORT`): never an id or a user's URL. */
  operation: string
  /** The answer's status, or `error` when none came (refused, timed out, too large). */
  status: string
  seconds: number
}

/** The process's provider requests, for whoever counts them (the metrics). */
export const PROVIDER_REQUEST_CHANNEL = 'calendar:provider-request'
const providerRequests = channel(PROVIDER_REQUEST_CHANNEL)

/** Words of the cloud APIs' paths that name a resource; any other segment is an id, a calendar's name or a user's. */
const RESOURCE_WORDS = new Set(['events', 'calendarList', 'calendars', 'watch', 'stop', 'instances', 'token', 'delta', 'subscriptions', 'calendarView', '$batch', 'batch', 'colors', 'settings', 'freeBusy', 'calendarGroups', 'userinfo'])

/** The operation a request is: its method, and for the cloud APIs the last resource word of its path. */
function operationOf (provider: ProviderName, method: string, url: string): string {
  if (provider === 'caldav' || !URL.canParse(url)) return method
  const segments = new URL(url).pathname.split('/')
  for (let index = segments.length - 1; index >= 0; index--) {
    const segment = segments[index] ?? ''
    if (RESOURCE_WORDS.has(segment)) return `${method} ${segment}`
  }
  return `${method} other`
}

export interface ProviderFetchOptions {
  /** Whose API this fetch calls: the label its requests are counted under. */
  provider: ProviderName
  /** The largest answer read (documented per provider); past it the request fails with ProviderAnswerTooLargeError. */
  maxBytes: number
  /** For addresses a user supplied: only what the policy permits is reached (address-guard.ts). */
  policy?: AddressPolicy
}

/** A fetch for provider answers: read at once, within `maxBytes`, over its own pool (and address policy). */
export function providerFetch (options: ProviderFetchOptions): ProviderFetch {
  const dispatcher = options.policy === undefined ? new Agent({ keepAliveTimeout: 4_000 }) : guardedDispatcher(options.policy)
  return async (input, init = {}) => {
    const url = input instanceof Request ? input.url : String(input)
    const method = (init.method ?? 'GET').toUpperCase() as Method
    if (!providerRequests.hasSubscribers) return await fetchBuffered(url, method, init)
    const started = performance.now()
    let status = 'error'
    try {
      const response = await fetchBuffered(url, method, init)
      status = String(response.status)
      return response
    } finally {
      const report: ProviderRequestReport = { provider: options.provider, operation: operationOf(options.provider, method, url), status, seconds: (performance.now() - started) / 1000 }
      providerRequests.publish(report)
    }
  }

  async function fetchBuffered (url: string, method: Method, init: RequestInit): Promise<Response> {
    if (options.policy !== undefined) checkUrl(options.policy, new URL(url))
    const headers = Object.fromEntries(new Headers(init.headers).entries())
    const body = bodyOf(init.body)
    // What fetch itself would add for a form body.
    if (init.body instanceof URLSearchParams && headers['content-type'] === undefined) headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8'
    const answer = await request(url, {
      dispatcher,
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      ...(init.signal == null ? {} : { signal: init.signal })
    })
    const declared = Number(answer.headers['content-length'])
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      discard(answer.body)
      throw new ProviderAnswerTooLargeError(`the answer of ${new URL(url).host} says it is ${declared} bytes, more than ${options.maxBytes}`)
    }
    const bytes = await readLimited(answer.body, options.maxBytes, url)
    const responseHeaders = new Headers()
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one)
    }
    return new Response(NULL_BODY_STATUSES.has(answer.statusCode) ? null : oneChunk(bytes), { status: answer.statusCode, headers: responseHeaders })
  }
}

/**
 * The bytes read as a body of one chunk, taken as they are: given the bytes themselves, Response
 * copies them (a 10 MB CalDAV answer held the event loop tens of milliseconds on a busy machine),
 * and the CalDAV adapter hands this very buffer on to its parsing worker (caldav/dav-answers.ts).
 */
function oneChunk (bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start (controller) {
      controller.enqueue(bytes)
      controller.close()
    }
  })
}

/**
 * Google's and Microsoft's answers (a page of up to 2,500 events, a batch of 20 requests) stay
 * far below this; it bounds what a misbehaving endpoint can make Sync hold.
 */
const CLOUD_PROVIDER_ANSWER_LIMIT_BYTES = 32 * 1024 * 1024

export const googleFetch: ProviderFetch = providerFetch({ provider: 'google', maxBytes: CLOUD_PROVIDER_ANSWER_LIMIT_BYTES })
export const microsoftFetch: ProviderFetch = providerFetch({ provider: 'microsoft', maxBytes: CLOUD_PROVIDER_ANSWER_LIMIT_BYTES })
