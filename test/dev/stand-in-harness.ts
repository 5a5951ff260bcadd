// Test helpers every provider stand-in's tests use alike: a settable clock, a browser step that
// follows no redirect, the control surface over HTTP, and a loopback webhook receiver.
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Teardown { teardown (fn: () => unknown): void }

/** A settable clock: tests move time instead of waiting. */
export function testClock (start = Date.now()): { now: () => number, advance: (ms: number) => void } {
  let current = start
  return { now: () => current, advance: (ms) => { current += ms } }
}

export interface Visit {
  status: number
  body: string
  location: URL
  /** The sign-in cookie the stand-in set, as a browser would keep it. */
  cookie: string | undefined
}

/** Follows nothing: answers where the authorization endpoint sends the browser. */
export async function visit (url: string, cookie?: string, init: RequestInit = {}): Promise<Visit> {
  const response = await fetch(url, { redirect: 'manual', ...init, headers: { ...(cookie === undefined ? {} : { cookie }), ...(init.headers as Record<string, string> | undefined) } })
  const location = response.headers.get('location')
  const setCookie = response.headers.get('set-cookie')
  return {
    status: response.status,
    body: await response.text(),
    location: new URL(location ?? 'about:blank'),
    cookie: setCookie === null ? cookie : setCookie.split(';', 1)[0]
  }
}

/** Calls the control surface over HTTP, as the local stack and benchmarks do. */
export async function control<T = Record<string, unknown>> (standIn: { url: string }, method: string, path: string, body?: unknown): Promise<{ status: number, body: T }> {
  const response = await fetch(`${standIn.url}/_control${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: (text === '' ? undefined : JSON.parse(text)) as T }
}

export interface ReceivedRequest {
  url: URL
  headers: Record<string, string>
  body: string
}

/** An HTTP server on 127.0.0.1 that reads each whole request and lets `answer` reply; answers its `/notifications` URL. */
export async function startWebhookServer (t: Teardown, answer: (received: ReceivedRequest, response: ServerResponse) => void): Promise<string> {
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => { body += chunk.toString('utf8') })
    request.on('end', () => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value
      answer({ url: new URL(request.url ?? '/', 'http://127.0.0.1'), headers, body }, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }))
  const { port } = server.address() as AddressInfo
  return `http://127.0.0.1:${port}/notifications`
}

/** Polls until `read` holds `count` entries or the time is up; answers what it holds then. */
export async function waitForCount<T> (read: () => T[], count: number, timeoutMs = 5000): Promise<T[]> {
  const deadline = Date.now() + timeoutMs
  while (read().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  return read()
}
