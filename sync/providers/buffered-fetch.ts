// The provider adapters' fetch (CalDAV, Microsoft Graph, Google through gaxios): each answer is
// read whole as soon as its headers arrive, through a connection pool of its own. Why not the
// global fetch: once undici is loaded (the Sync service uses it), it becomes the global fetch's dispatcher, and undici 7's
// HTTP/1 parser throws an uncatchable assertion, ending the process, when a server closes the
// connection while a response body waits for a slow reader (nodejs/undici#5360; the fix is in
// undici 8, which needs Node 22). CalDAV servers such as Radicale close the connection after each
// answer, and a calendar query answers megabytes; nothing promises other servers never do. A body
// consumed in flowing mode from its first byte never makes the parser wait. Redirects are not
// followed (a provider's redirect is an answer to look at, not to chase with the credentials).
import { Agent, request } from 'undici'

const dispatcher = new Agent({ keepAliveTimeout: 4_000 })
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

export async function bufferedFetch (input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = input instanceof Request ? input.url : String(input)
  const headers = Object.fromEntries(new Headers(init.headers).entries())
  const body = bodyOf(init.body)
  // What fetch itself would add for a form body.
  if (init.body instanceof URLSearchParams && headers['content-type'] === undefined) headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8'
  const answer = await request(url, {
    dispatcher,
    method: (init.method ?? 'GET').toUpperCase() as Method,
    headers,
    ...(body === undefined ? {} : { body }),
    ...(init.signal == null ? {} : { signal: init.signal })
  })
  const bytes = await answer.body.arrayBuffer()
  const responseHeaders = new Headers()
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue
    for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one)
  }
  return new Response(NULL_BODY_STATUSES.has(answer.statusCode) ? null : bytes, { status: answer.statusCode, headers: responseHeaders })
}
