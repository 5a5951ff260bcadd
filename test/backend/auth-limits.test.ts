import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import tap, { test } from 'tap'
import { startSessionCore } from '../../dev/session-core/index.js'
import { AUTH_LIMITS } from '../../lib/auth-limits.js'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'

// The session core is reached through a counting proxy, so the test sees which requests made
// the core check a password. The session library keeps one configuration per process, so the
// whole file uses it.
const passwordChecks: string[] = []
// While set, the core takes this long to make a password-reset token (a slow core, or a slow mail).
let resetTokenDelayMs = 0
const apiKey = randomBytes(16).toString('hex')
const core = await startSessionCore({ apiKey })
const target = new URL(core.uri)
const proxy = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
  if (incoming.method === 'POST' && /\/recipe\/signin$/.test(incoming.url ?? '')) passwordChecks.push(incoming.url ?? '')
  const delay = incoming.method === 'POST' && /\/recipe\/user\/password\/reset\/token$/.test(incoming.url ?? '') ? resetTokenDelayMs : 0
  setTimeout(() => { forward(incoming, outgoing) }, delay)
})

function forward (incoming: IncomingMessage, outgoing: ServerResponse): void {
  const forwarded = httpRequest({ host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers }, (answer) => {
    outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
    answer.pipe(outgoing)
  })
  incoming.pipe(forwarded)
}
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
process.env.SESSIONS_URI = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
process.env.SESSIONS_KEY = apiKey
tap.teardown(async () => {
  proxy.close()
  await core.close()
})

function signInRequest (email: string, password: string, address = '198.51.100.7') {
  return {
    method: 'POST' as const,
    url: '/api/auth/signin',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', 'x-forwarded-for': address },
    payload: { formFields: [{ id: 'email', value: email }, { id: 'password', value: password }] }
  }
}

test('wrong passwords for one account are limited, from any address', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const email = uniqueEmail('guessed')
  await signUp(app, { email, password: 'the real password 1' })

  // The sign-up was the account's first request.
  for (let attempt = 2; attempt <= AUTH_LIMITS.perAccount.max; attempt++) {
    const answer = await app.inject(signInRequest(email, `guess ${attempt}`, `198.51.100.${attempt}`))
    t.equal(answer.json().status, 'WRONG_CREDENTIALS_ERROR', `attempt ${attempt} is answered`)
  }
  const limited = await app.inject(signInRequest(email.toUpperCase(), 'the real password 1', '203.0.113.50'))
  t.equal(limited.statusCode, 429, 'then refused, even with the right password, from a new address, in another case')
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.match(limited.json().message, /^Too many attempts; try again in \d+ seconds$/)
  const retryAfter = Number(limited.headers['retry-after'])
  t.ok(retryAfter > 0 && retryAfter <= AUTH_LIMITS.perAccount.windowMs / 1000, `Retry-After ${retryAfter} s`)
  t.notOk(limited.headers['sx-access-token'], 'no session')
  t.notMatch(log.text(), new RegExp(email.replace(/[.+]/g, '\\$&'), 'i'), 'the account is not named in the log')

  const reset = await app.inject({ ...signInRequest(email, ''), url: '/api/auth/user/password/reset/token', payload: { formFields: [{ id: 'email', value: email }] } })
  t.equal(reset.statusCode, 429, 'password reset for the account counts against the same limit')
  const other = await app.inject(signInRequest(uniqueEmail('bystander'), 'whatever pw 1'))
  t.equal(other.statusCode, 200, 'another account is not affected')
})

test('one address is limited across accounts; another address is not', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const { max } = AUTH_LIMITS.perAddress.credentials
  for (let attempt = 1; attempt <= max; attempt++) {
    const answer = await app.inject(signInRequest(uniqueEmail('spray'), 'password one 1', '192.0.2.10'))
    if (answer.statusCode !== 200) t.fail(`attempt ${attempt} answered ${answer.statusCode}`)
  }
  const limited = await app.inject({
    method: 'POST',
    url: '/api/auth/signup',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', 'x-forwarded-for': '192.0.2.10' },
    payload: { formFields: [{ id: 'email', value: uniqueEmail('spray') }, { id: 'password', value: 'password one 1' }] }
  })
  t.equal(limited.statusCode, 429, 'sign-up from the same address shares the limit')
  t.ok(Number(limited.headers['retry-after']) > 0)
  const elsewhere = await app.inject(signInRequest(uniqueEmail('spray'), 'password one 1', '192.0.2.11'))
  t.equal(elsewhere.statusCode, 200)

  const refreshes = AUTH_LIMITS.perAddress.refresh.max
  let last = 0
  for (let attempt = 0; attempt <= refreshes; attempt++) {
    last = (await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'sx-auth-mode': 'header', 'x-forwarded-for': '192.0.2.20' } })).statusCode
  }
  t.equal(last, 429, 'refresh has its own limit per address')
  const health = await app.inject({ method: 'GET', url: '/api/health', headers: { 'x-forwarded-for': '192.0.2.10' } })
  t.equal(health.statusCode, 200, 'other routes are never limited')
})

test('a sign-in for an unknown email makes the core check a password, as a known one does', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const known = uniqueEmail('known')
  await signUp(app, { email: known, password: 'known password 1' })
  // The first unknown sign-in also creates the decoy account once.
  await app.inject(signInRequest(uniqueEmail('warm-up'), 'any password 1', '192.0.2.30'))

  passwordChecks.length = 0
  const knownAnswer = await app.inject(signInRequest(known, 'wrong password 1', '192.0.2.31'))
  const checksForKnown = passwordChecks.length
  passwordChecks.length = 0
  const unknownAnswer = await app.inject(signInRequest(uniqueEmail('unknown'), 'wrong password 1', '192.0.2.32'))
  const checksForUnknown = passwordChecks.length

  t.same(knownAnswer.json(), { status: 'WRONG_CREDENTIALS_ERROR' })
  t.same(unknownAnswer.json(), knownAnswer.json(), 'the same answer')
  t.equal(checksForKnown, 1, 'a known email: one password check')
  t.equal(checksForUnknown, checksForKnown, 'an unknown email: the same password work at the core')
})

test('a password-reset request answers as fast for an account as for an unknown email; the work follows', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const known = uniqueEmail('reset-known')
  await signUp(app, { email: known, password: 'known password 2' })
  resetTokenDelayMs = 3000
  t.teardown(() => { resetTokenDelayMs = 0 })

  const timed = async (email: string, address: string) => {
    const started = performance.now()
    const answer = await app.inject({ ...signInRequest(email, '', address), url: '/api/auth/user/password/reset/token', payload: { formFields: [{ id: 'email', value: email }] } })
    return { answer, millis: performance.now() - started }
  }
  const forKnown = await timed(known, '192.0.2.40')
  const forUnknown = await timed(uniqueEmail('reset-unknown'), '192.0.2.41')
  t.same(forKnown.answer.json(), { status: 'OK' })
  t.same(forUnknown.answer.json(), forKnown.answer.json(), 'the same answer')
  t.ok(forKnown.millis < resetTokenDelayMs, `an account's answer does not wait for its reset token (${Math.round(forKnown.millis)} ms)`)
  t.notOk(log.lines().some((line) => line.msg === 'password reset link (not delivered in test)'), 'the link is not made yet when the answer leaves')
  t.ok(await waitFor(() => log.lines().some((line) => line.msg === 'password reset link (not delivered in test)'), 5000), 'then it is', { lines: log.lines().slice(-5) })
})
