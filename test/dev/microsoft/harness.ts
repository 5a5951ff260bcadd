// Shared pieces of the Microsoft stand-in's tests: a started stand-in, the code flow as an
// application runs it (PKCE, state, the stand-in's non-interactive consent), Graph calls over
// HTTP, and a webhook receiver that answers the validation handshake.
import { createHash, randomBytes } from 'node:crypto'
import { startMicrosoft } from '../../../dev/microsoft/index.js'
import type { MicrosoftOptions, MicrosoftStandIn } from '../../../dev/microsoft/index.js'
import { control, startWebhookServer, visit, waitForCount } from '../stand-in-harness.js'
import type { Teardown, Visit } from '../stand-in-harness.js'

export { control, testClock, visit } from '../stand-in-harness.js'

export const CLIENT = {
  clientId: '8f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e',
  clientSecret: 'stand~in.test-secret_1234567890',
  redirectUris: ['http://127.0.0.1:3000/auth/extprovider2/callback']
}
export const REDIRECT_URI = CLIENT.redirectUris[0] ?? ''
const SCOPES = 'offline_access openid email profile Calendars.ReadWrite User.Read'

export async function startStandIn (t: Teardown, options: MicrosoftOptions = {}): Promise<MicrosoftStandIn> {
  const microsoft = await startMicrosoft({ clients: [CLIENT], ...options })
  t.teardown(() => microsoft.close())
  return microsoft
}

export function pkce (): { verifier: string, challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export function authorizeUrl (microsoft: MicrosoftStandIn, params: Record<string, string>, tenant = 'common'): string {
  const query = new URLSearchParams({ client_id: CLIENT.clientId, redirect_uri: REDIRECT_URI, response_type: 'code', scope: SCOPES, ...params })
  return `${microsoft.url}/${tenant}/oauth2/v2.0/authorize?${query.toString()}`
}

export interface Json {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

export async function tokenRequest (microsoft: MicrosoftStandIn, form: Record<string, string>, tenant = 'common', headers: Record<string, string> = {}): Promise<Json> {
  const response = await fetch(`${microsoft.url}/${tenant}/oauth2/v2.0/token`, { method: 'POST', headers, body: new URLSearchParams(form) })
  return { status: response.status, headers: response.headers, body: await response.json() as Record<string, unknown> }
}

interface Tokens {
  access_token: string
  refresh_token: string
  id_token: string
  scope: string
  expires_in: number
  token_type: string
}

export interface Connection {
  tokens: Tokens
  redirect: Visit
}

/** The whole code flow: PKCE (S256) and state, consent without a page (`login_hint` + `approve=1`), the code exchange. */
export async function connect (microsoft: MicrosoftStandIn, email: string, extra: Record<string, string> = {}): Promise<Connection> {
  const { verifier, challenge } = pkce()
  const redirect = await visit(authorizeUrl(microsoft, { state: 'state-value', login_hint: email, code_challenge: challenge, code_challenge_method: 'S256', approve: '1', ...extra }))
  const code = redirect.location.searchParams.get('code')
  if (code === null) throw new Error(`no code in ${redirect.location.toString()} (${redirect.status} ${redirect.body.slice(0, 200)})`)
  const answer = await tokenRequest(microsoft, {
    grant_type: 'authorization_code', client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, code, redirect_uri: REDIRECT_URI, code_verifier: verifier
  })
  if (answer.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(answer.body)}`)
  return { tokens: answer.body as unknown as Tokens, redirect }
}

/** A Graph call: `path` starts after `/v1.0`, or is a whole URL (a nextLink or deltaLink). */
export async function graph (microsoft: MicrosoftStandIn, token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Json> {
  const url = path.startsWith('http') ? path : `${microsoft.graphUrl}${path}`
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> }
}

export async function defaultCalendarId (microsoft: MicrosoftStandIn, email: string): Promise<string> {
  const account = await control<{ calendars: Array<{ id: string, isDefaultCalendar: boolean }> }>(microsoft, 'GET', `/accounts/${email}`)
  const calendar = account.body.calendars.find((entry) => entry.isDefaultCalendar)
  if (calendar === undefined) throw new Error(`no default calendar for ${email}`)
  return calendar.id
}

interface Received {
  path: string
  query: URLSearchParams
  headers: Record<string, string>
  body: string
}

export interface Receiver {
  url: string
  /** Validation requests (those with `validationToken`). */
  validations: Received[]
  /** Notification POSTs. */
  notifications: Received[]
  /** How the receiver answers validation: echo the token (as a correct endpoint does), or fail in one of the ways Graph refuses. */
  validateWith: (mode: 'echo' | 'no-echo' | 'html' | 'slow') => void
  /** The status notifications are answered with from now on. */
  respondWith: (status: number) => void
  /** Items of every notification body received so far, in order. */
  items: () => Array<Record<string, unknown>>
  waitForItems: (count: number, timeoutMs?: number) => Promise<Array<Record<string, unknown>>>
}

/** A webhook receiver on 127.0.0.1, as an application implements one. */
export async function startReceiver (t: Teardown, slowMs = 1500): Promise<Receiver> {
  const validations: Received[] = []
  const notifications: Received[] = []
  let mode: 'echo' | 'no-echo' | 'html' | 'slow' = 'echo'
  let status = 202
  const url = await startWebhookServer(t, ({ url, headers, body }, response) => {
    const received = { path: url.pathname, query: url.searchParams, headers, body }
    const token = url.searchParams.get('validationToken')
    if (token !== null) {
      validations.push(received)
      if (mode === 'echo') response.writeHead(200, { 'content-type': 'text/plain' }).end(token)
      else if (mode === 'no-echo') response.writeHead(200, { 'content-type': 'text/plain' }).end('')
      else if (mode === 'html') response.writeHead(200, { 'content-type': 'text/html' }).end(token)
      else setTimeout(() => response.writeHead(200, { 'content-type': 'text/plain' }).end(token), slowMs)
      return
    }
    notifications.push(received)
    response.writeHead(status).end()
  })
  const items = (): Array<Record<string, unknown>> =>
    notifications.flatMap((notification) => (JSON.parse(notification.body) as { value: Array<Record<string, unknown>> }).value)
  return {
    url,
    validations,
    notifications,
    validateWith: (next) => { mode = next },
    respondWith: (next) => { status = next },
    items,
    waitForItems: async (count, timeoutMs = 5000) => await waitForCount(items, count, timeoutMs)
  }
}
