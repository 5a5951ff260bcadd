// Requests to the backend. The session SDK wraps `fetch` for the API's origin: it sends the
// session cookies, the anti-CSRF `rid` header, and refreshes an expired access token once before
// retrying, so nothing here deals with tokens.
import { apiUrl } from '../config.js'

export class ApiError extends Error {
  /** `retryAfter`: the answer's Retry-After header (seconds or a date), when it had one. */
  constructor (readonly status: number, readonly code: string | undefined, message: string, readonly body: unknown = null, readonly retryAfter: string | null = null) {
    super(message)
  }
}

/** `file`: a body sent as it is (a calendar file) with its content type, in place of JSON. */
export async function api<T = void> (path: string, init: { method?: string, body?: unknown, query?: Record<string, string>, file?: { body: Blob, type: string } } = {}): Promise<T> {
  const url = new URL(apiUrl + path)
  for (const [name, value] of Object.entries(init.query ?? {})) url.searchParams.set(name, value)
  const json = init.body === undefined ? undefined : JSON.stringify(init.body)
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    credentials: 'include',
    headers: init.file !== undefined ? { 'content-type': init.file.type } : json === undefined ? {} : { 'content-type': 'application/json' },
    ...(init.file !== undefined ? { body: init.file.body } : json === undefined ? {} : { body: json })
  })
  if (response.status === 204) return undefined as T
  const text = await response.text()
  let body: unknown = null
  try {
    body = text === '' ? null : JSON.parse(text)
  } catch {
    body = text
  }
  if (!response.ok) {
    const fields = (body ?? {}) as { code?: string, message?: string }
    throw new ApiError(response.status, fields.code, fields.message ?? `${response.status} ${response.statusText}`, body, response.headers.get('retry-after'))
  }
  return body as T
}
