// Contract tests generated from the OpenAPI document (openapi.json, itself generated from the
// TypeBox schemas): for every operation, valid and invalid requests are generated from its
// schemas and sent to a real app (with the real Sync service behind it, the Google stand-in as the
// sign-in provider, Apple sign-in off), and every answer is checked against the operation's
// declared responses: status, media type and body.
import { randomBytes } from 'node:crypto'
import { test } from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { startGoogle } from '../../dev/google/index.js'
import { DEFAULT_PRICE, startStripeStandIn } from '../../dev/stripe/index.js'
import { documentedBlocks } from '../../dev/openapi-blocks.js'
import { buildApp, listen, signUp, startDependencies, uniqueEmail, WEB_URL, type SignedIn } from '../helper.js'
import { startSyncService } from '../events/sync-service.js'
import { DOCUMENT_FILE, operationsOf, readDocument, requestsFor, violationOf, type Answer, type GeneratedRequest, type KnownValues, type Operation } from './requests.js'

const VALID_REQUESTS_PER_OPERATION = 6
const EVENT_BODY = { title: 'Contract', startDate: '2026-05-04T09:00:00Z', endDate: '2026-05-04T10:00:00Z', timeZone: 'UTC' }
const GOOGLE_CLIENT = { clientId: '123456789012-contract.apps.googleusercontent.com', clientSecret: 'GOCSPX-contract-secret' }

test('the committed OpenAPI document is a valid OpenAPI 3.1 document', async (t) => {
  const result = await new Validator().validate(DOCUMENT_FILE)
  t.same(result.errors ?? [], [], 'no schema errors')
  t.ok(result.valid, 'valid')
  t.equal(readDocument().openapi, '3.1.0')
})

test('every operation answers generated requests as its document declares', async (t) => {
  const deps = await startDependencies(t)
  const sync = await startSyncService(t, deps.databaseUri(`sync_${randomBytes(4).toString('hex')}`))
  const google = await startGoogle({ clients: [{ ...GOOGLE_CLIENT, redirectUris: [`${WEB_URL}/auth/extprovider/callback`] }], notificationRetries: 0 })
  t.teardown(() => google.close())
  // The document describes every optional block (dev/openapi-blocks.ts): they are on here too,
  // billing against the Stripe stand-in, the mailer against an address that answers nothing.
  const blocks = documentedBlocks() as { billing: Record<string, unknown> & { secretKey: string, webhookSecret: string }, email: Record<string, unknown> }
  const stripe = await startStripeStandIn({ secretKey: blocks.billing.secretKey, webhookSecret: blocks.billing.webhookSecret })
  t.teardown(() => stripe.close())
  const { app, config } = await buildApp(t, deps, {
    syncUrl: sync.url,
    internalAuthToken: sync.internalAuthToken,
    extra: {
      extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url },
      // The stand-in's price: the document does not depend on it, a checkout does.
      billing: { ...blocks.billing, endpointBase: stripe.url, priceId: DEFAULT_PRICE.id },
      email: { ...blocks.email, apiBase: 'http://127.0.0.1:9' }
    }
  })
  const base = await listen(app)

  const password = 'correct horse 1'
  const newSession = async (): Promise<SignedIn> => await signUp(app, { email: uniqueEmail('contract'), password })
  const main = await newSession()
  // Sign-out and refresh change the session they are given: each has one of its own.
  const sessions = { signOut: await newSession(), refresh: await newSession() }

  function credentialsFor (operation: Operation): Record<string, string> {
    const schemes = new Set((operation.security ?? []).flatMap((requirement) => Object.keys(requirement)))
    if (schemes.has('serviceToken')) return { authorization: `Bearer ${config.backend.serviceToken}` }
    if (schemes.has('refreshBearer')) return { authorization: `Bearer ${sessions.refresh.refreshToken}`, 'sx-auth-mode': 'header' }
    if (schemes.has('maintenanceIdToken')) return { authorization: 'Bearer not-an-id-token' }
    if (schemes.has('bearer')) return operation.path === '/api/auth/signout' ? sessions.signOut.headers : main.headers
    return {}
  }

  async function send (operation: Operation, request: GeneratedRequest): Promise<Answer> {
    // A stream that opens stays open: its status and headers are all there is to check.
    if (operation.path === '/api/events/stream' && request.kind === 'valid') {
      const aborted = new AbortController()
      const response = await fetch(base + request.url, { headers: request.headers, signal: aborted.signal })
      const answer = { statusCode: response.status, headers: { 'content-type': response.headers.get('content-type') ?? '' }, body: response.status === 200 ? '' : await response.text() }
      aborted.abort()
      return answer
    }
    const response = await app.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, ...(request.payload === undefined ? {} : { payload: request.payload }) })
    // A refresh rotates the refresh token: the next one sends the new token.
    const rotated = response.headers['sx-refresh-token']
    if (typeof rotated === 'string' && rotated !== '') sessions.refresh.refreshToken = rotated
    return { statusCode: response.statusCode, headers: response.headers, body: response.body }
  }

  /** The session library refuses a form in a 200 whose `status` says so; its SDKs expect that. */
  function libraryRefusal (operation: Operation, answer: Answer): boolean {
    if (!operation.path.startsWith('/api/auth/') || answer.statusCode !== 200) return false
    const body = JSON.parse(answer.body) as { status?: unknown }
    return typeof body.status === 'string' && body.status !== 'OK'
  }

  function isShed (answer: Answer): boolean {
    return answer.statusCode === 503 && answer.body.includes('"OVERLOADED"')
  }

  /** Events of the signed-in user for the operations on one event, made afresh for each (a DELETE removes them). */
  async function knownValues (operation: Operation): Promise<KnownValues> {
    // Zones and locales a generator makes up are (rightly) refused: a stored body shows the 200 too.
    if (operation.path === '/api/user/preferences' && operation.method === 'PUT') return { body: { weekStart: 'monday', timeZone: 'Asia/Calcutta', locale: 'de-DE', calendarColors: { own: '#0b8043' } } }
    if (operation.path === '/api/events/import') return { body: ['BEGIN:VCALENDAR', 'VERSION:2.0', 'BEGIN:VEVENT', `UID:contract-${randomBytes(4).toString('hex')}`, 'DTSTART:20260504T090000Z', 'DTEND:20260504T100000Z', 'SUMMARY:Contract', 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n') }
    if (operation.path !== '/api/event/{id}') return {}
    const ids = Array.from({ length: VALID_REQUESTS_PER_OPERATION / 2 }, () => randomBytes(12).toString('hex'))
    for (const [index, _id] of ids.entries()) {
      const made = await app.inject({
        method: 'POST',
        url: '/api/event',
        headers: main.headers,
        payload: { _id, ...EVENT_BODY, title: `Contract ${index}` }
      })
      if (made.statusCode !== 204) throw new Error(`the event for ${operation.method} ${operation.path} was not made: ${made.statusCode} ${made.body}`)
    }
    return { path: { id: ids }, ...(operation.method === 'PUT' ? { body: { ...EVENT_BODY, title: 'Changed by the contract run' } } : {}) }
  }

  const operations = operationsOf(readDocument())
  let shed = 0
  const violations: string[] = []
  const counts = { operations: 0, valid: 0, invalid: 0, 'no credentials': 0 }
  // Which statuses each operation answered, so a run shows what it reached (a 204, not only 400s).
  const statuses = new Map<string, Map<number, number>>()
  for (const operation of operations) {
    counts.operations += 1
    const requests = requestsFor(operation, credentialsFor(operation), VALID_REQUESTS_PER_OPERATION, await knownValues(operation))
    for (const request of requests) {
      counts[request.kind] += 1
      const name = `${request.method} ${operation.path} (${request.kind}: ${request.label})`
      // Credentials may be refreshed between requests.
      const headers = { ...request.headers, ...(request.kind === 'no credentials' ? {} : credentialsFor(operation)) }
      const answer = await send(operation, { ...request, headers })
      const seen = statuses.get(`${operation.method} ${operation.path}`) ?? new Map<number, number>()
      seen.set(answer.statusCode, (seen.get(answer.statusCode) ?? 0) + 1)
      statuses.set(`${operation.method} ${operation.path}`, seen)
      const violation = violationOf(operation, answer)
      if (violation !== undefined) violations.push(`${name}: ${violation}`)
      // A request shed while the machine is overloaded is answered as declared (checked above) but
      // says nothing of how its input is taken.
      if (isShed(answer)) {
        shed += 1
        continue
      }
      if (request.kind === 'valid' && answer.statusCode >= 500) violations.push(`${name}: valid input answered ${answer.statusCode} ${answer.body.slice(0, 200)}`)
      if (request.kind === 'invalid' && !(answer.statusCode >= 400 && answer.statusCode < 500) && !libraryRefusal(operation, answer)) {
        violations.push(`${name}: invalid input answered ${answer.statusCode} ${answer.body.slice(0, 200)}`)
      }
      if (request.kind === 'no credentials' && answer.statusCode !== 401) violations.push(`${name}: answered ${answer.statusCode} without credentials`)
    }
  }
  const total = counts.valid + counts.invalid + counts['no credentials']
  t.comment(`contract: ${counts.operations} operations, ${total} requests (${counts.valid} valid, ${counts.invalid} invalid, ${counts['no credentials']} without credentials), ${violations.length} violations, ${shed} shed under load`)
  for (const [operation, seen] of statuses) t.comment(`${operation}: ${[...seen].map(([status, times]) => `${status}x${times}`).join(' ')}`)
  t.same(violations, [], 'every answer matches the document')
  t.equal(counts.operations, operations.length, 'every operation of the document was exercised')
  t.ok(shed < total / 10, `few requests were shed under load (${shed})`)
  t.ok(counts.valid >= operations.length && counts.invalid >= operations.length, 'each operation got valid and invalid requests')

  // Sign in with Apple is off here (Google is on, so the library's provider recipe is): its
  // form_post callback is no route of this service, whatever the body.
  const malformed: Array<[string, string]> = [['application/json', '{"code":'], ['application/json', 'null'], ['application/x-www-form-urlencoded', 'code=x&state=y'], ['text/plain', 'code']]
  for (const [contentType, payload] of malformed) {
    const response = await app.inject({ method: 'POST', url: '/api/auth/callback/apple', headers: { 'content-type': contentType }, payload })
    t.ok(response.statusCode >= 400 && response.statusCode < 500, `Apple's callback answers ${response.statusCode} to a ${contentType} body while Apple sign-in is off`)
  }
  const plain = await app.inject({ method: 'POST', url: '/api/auth/callback/apple', headers: { 'content-type': 'application/json' }, payload: '{"code":"x","state":"y"}' })
  t.equal(plain.statusCode, 404, 'a well-formed post to it is a 404')
})
