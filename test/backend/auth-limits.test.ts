import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import tap, { test } from 'tap'
import { startSessionCore } from '../../dev/session-core/index.js'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
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
// Every request the core receives, and, while set, a failure of the core's own for password checks.
const coreRequests: string[] = []
let coreFailsPasswordChecks = false
const proxy = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
  coreRequests.push(`${incoming.method ?? ''} ${incoming.url ?? ''}`)
  if (incoming.method === 'POST' && /\/recipe\/signin$/.test(incoming.url ?? '')) {
    passwordChecks.push(incoming.url ?? '')
    if (coreFailsPasswordChecks) {
      incoming.resume()
      outgoing.writeHead(500, { 'content-type': 'text/plain' }).end('java.lang.IllegalStateException at /usr/lib/supertokens/core/internal.jar')
      return
    }
  }
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

test('failed guesses lock an account, successes do not count, and its owner is never kept out', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const email = uniqueEmail('guessed')
  const home = '198.51.100.1'
  await app.inject({ ...signInRequest(email, 'the real password 1', home), url: '/api/auth/signup' })

  for (let attempt = 1; attempt <= AUTH_LIMITS.failuresPerAccount.max + 2; attempt++) {
    const answer = await app.inject(signInRequest(email, 'the real password 1', home))
    if (answer.statusCode !== 200 || answer.json().status !== 'OK') t.fail(`sign-in ${attempt} answered ${answer.statusCode} ${answer.body}`)
  }
  t.pass('successful sign-ins do not count')

  // One address guessing one account waits after a few failures; another account is not affected.
  const guesser = '203.0.113.1'
  for (let attempt = 1; attempt <= AUTH_LIMITS.failuresPerAccountAndAddress.max; attempt++) {
    t.equal((await app.inject(signInRequest(email, `guess ${attempt}`, guesser))).json().status, 'WRONG_CREDENTIALS_ERROR')
  }
  const waits = await app.inject(signInRequest(email.toUpperCase(), 'the real password 1', guesser))
  t.equal(waits.statusCode, 429, 'then that address is refused for that account, even with the right password, in another case')
  t.equal(waits.json().code, 'RATE_LIMITED')
  t.notOk(waits.headers['sx-access-token'], 'no session')
  t.equal((await app.inject(signInRequest(uniqueEmail('bystander'), 'whatever pw 1', guesser))).json().status, 'WRONG_CREDENTIALS_ERROR', 'the address may still try other accounts')

  // Guesses from many addresses lock the account for every address it is not known at.
  const lockAccount = async (round: string) => {
    for (let attempt = 1; attempt <= AUTH_LIMITS.failuresPerAccount.max; attempt++) {
      await app.inject(signInRequest(email, `guess ${attempt}`, `192.0.2.${round}${attempt}`))
    }
    return await app.inject(signInRequest(email, 'the real password 1', `198.18.0.${round}`))
  }
  const locked = await lockAccount('1')
  t.equal(locked.statusCode, 429, 'the account is locked to a new address, even with the right password')
  t.match(locked.json().message, /^Too many attempts; try again in \d+ seconds$/)
  const retryAfter = Number(locked.headers['retry-after'])
  t.ok(retryAfter > 0 && retryAfter <= AUTH_LIMITS.failuresPerAccount.windowMs / 1000, `Retry-After ${retryAfter} s`)
  t.notOk(locked.headers['sx-access-token'], 'no session')
  t.notMatch(log.text(), new RegExp(email.replace(/[.+]/g, '\\$&'), 'i'), 'the account is not named in the log')

  const owner = await app.inject(signInRequest(email, 'the real password 1', home))
  t.equal(owner.json().status, 'OK', 'the owner signs in where the account is known')
  t.equal((await app.inject(signInRequest(email, 'the real password 1', '198.18.0.2'))).json().status, 'OK', 'which lifts the lock')

  // A completed password reset lifts the lock too, wherever the person is.
  t.equal((await lockAccount('3')).statusCode, 429, 'locked again')
  const created = await EmailPassword.createResetPasswordToken('public', owner.json().user.id, email)
  if (created.status !== 'OK') throw new Error(created.status)
  const reset = await app.inject({
    ...signInRequest(email, '', '198.18.0.4'),
    url: '/api/auth/user/password/reset',
    payload: { token: created.token, formFields: [{ id: 'password', value: 'the new password 2' }] }
  })
  t.equal(reset.json().status, 'OK', reset.body)
  t.equal((await app.inject(signInRequest(email, 'the new password 2', '198.18.0.5'))).json().status, 'OK', 'the new password works from a new address')
})

test('password-reset mails for one account are limited, and the answer stays the same', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const email = uniqueEmail('mailed')
  const resetRequest = (address: string) => ({ ...signInRequest(email, '', address), url: '/api/auth/user/password/reset/token', payload: { formFields: [{ id: 'email', value: email }] } })
  for (let attempt = 1; attempt <= AUTH_LIMITS.resetRequestsPerAccount.max; attempt++) {
    t.same((await app.inject(resetRequest(`192.0.2.${50 + attempt}`))).json(), { status: 'OK' })
  }
  const limited = await app.inject(resetRequest('192.0.2.60'))
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) > 0)
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

const SPELLINGS = (route: string) => [
  `/api/auth/${route}/`, `/api/auth//${route}`, `/api//auth/${route}`, `/api/auth/./${route}`, `/api/auth/x/../${route}`,
  `/api/auth/${route}/.`, `/api/auth/${route.toUpperCase()}`, `/API/auth/${route}`,
  `/api/auth/${encodeURIComponent(route).replace(/^./, (first) => `%${first.charCodeAt(0).toString(16)}`)}`, `/api/auth/${route.replace(/\//g, '%2F')}`
]

test('no spelling of a credential route escapes its limit', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const address = '192.0.2.70'
  for (let attempt = 1; attempt <= AUTH_LIMITS.perAddress.credentials.max; attempt++) {
    await app.inject(signInRequest(uniqueEmail('spent'), 'password one 1', address))
  }
  t.equal((await app.inject(signInRequest(uniqueEmail('spent'), 'password one 1', address))).statusCode, 429, 'the address is over its limit')

  coreRequests.length = 0
  for (const route of ['signin', 'signup', 'user/password/reset/token']) {
    for (const url of SPELLINGS(route)) {
      const answer = await app.inject({ ...signInRequest(uniqueEmail('respelled'), 'password one 1', address), url })
      t.ok([404, 429].includes(answer.statusCode), `${url}: ${answer.statusCode}`)
      t.notOk(answer.headers['sx-access-token'], `${url}: no session`)
    }
  }
  t.same(coreRequests, [], 'the session core was asked nothing')

  // The service's own refresh route: the router decodes the path, and the limit follows the route it matched.
  const refreshFrom = (url: string) => app.inject({ method: 'POST', url, headers: { 'sx-auth-mode': 'header', 'x-forwarded-for': '192.0.2.71' } })
  for (let attempt = 1; attempt <= AUTH_LIMITS.perAddress.refresh.max; attempt++) await refreshFrom('/api/auth/refresh')
  t.equal((await refreshFrom('/api/auth/%72efresh')).statusCode, 429, 'an encoded spelling of the refresh route shares its limit')
})

test('no unauthenticated route tells whether an email has an account', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const known = uniqueEmail('exists')
  await signUp(app, { email: known, password: 'known password 3' })
  for (const path of ['/api/auth/emailpassword/email/exists', '/api/auth/signup/email/exists']) {
    const answers = await Promise.all([known, uniqueEmail('absent')].map(async (email) => await app.inject({ method: 'GET', url: `${path}?email=${encodeURIComponent(email)}` })))
    t.same(answers.map((answer) => answer.statusCode), [404, 404], path)
    t.same(answers[0]?.json(), answers[1]?.json(), `${path}: the same answer`)
  }
  for (const path of ['/api/auth/loginmethods', '/api/auth/jwt/jwks.json', '/api/auth/.well-known/openid-configuration', '/api/auth/callback/apple']) {
    t.equal((await app.inject({ method: path.endsWith('apple') ? 'POST' : 'GET', url: path })).statusCode, 404, `${path} is not served`)
  }
})

test('credential fields have length limits, refused with 400 before the core is asked', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const users = app.mongo.db.collection('users')
  const signUpWith = async (fields: Record<string, string>) => await app.inject({
    method: 'POST',
    url: '/api/auth/signup',
    headers: { 'content-type': 'application/json', 'sx-auth-mode': 'header', 'x-forwarded-for': '192.0.2.80' },
    payload: { formFields: Object.entries(fields).map(([id, value]) => ({ id, value })) }
  })
  const huge = 'a'.repeat(900_000)
  const nameTooLong = uniqueEmail('long-name')
  const cases: Array<[string, Record<string, string>, string]> = [
    ['a 900 KB email', { email: `${huge}@example.com`, password: 'password one 1' }, 'email'],
    ['a 900 KB name', { email: uniqueEmail('huge-name'), password: 'password one 1', name: huge }, 'name'],
    ['a name of 101 characters', { email: nameTooLong, password: 'password one 1', name: 'n'.repeat(101) }, 'name'],
    ['a local part of 65 characters', { email: `${'l'.repeat(65)}@example.com`, password: 'password one 1' }, 'email'],
    ['an email of 255 characters', { email: `${'l'.repeat(60)}@${'d'.repeat(182)}.example.com`, password: 'password one 1' }, 'email'],
    ['a password of 101 characters', { email: uniqueEmail('long-password'), password: 'p1'.repeat(50) + 'x' }, 'password']
  ]
  coreRequests.length = 0
  for (const [label, fields, field] of cases) {
    const answer = await signUpWith(fields)
    t.equal(answer.statusCode, 400, label)
    t.equal(answer.json().status, 'FIELD_ERROR', label)
    t.same(answer.json().formFields.map((refusal: { id: string }) => refusal.id), [field], label)
  }
  const signInTooLong = await app.inject(signInRequest(`${huge.slice(0, 300_000)}@example.com`, huge.slice(0, 300_000), '192.0.2.81'))
  t.equal(signInTooLong.statusCode, 400, 'sign-in too')
  t.same(coreRequests, [], 'the core was asked nothing')
  t.equal(await users.countDocuments({ email: nameTooLong }), 0, 'nothing stored')

  const longest = await signUpWith({ email: `${'l'.repeat(64)}@example.com`, password: 'password one 1', name: 'n'.repeat(100) })
  t.equal(longest.json().status, 'OK', 'values at the limits are accepted')
  t.equal((await users.findOne({ email: `${'l'.repeat(64)}@example.com` }))?.['name'], 'n'.repeat(100))
})

test('a failure of the session core answers a 500 that names no internals', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  coreFailsPasswordChecks = true
  t.teardown(() => { coreFailsPasswordChecks = false })
  const answer = await app.inject(signInRequest(uniqueEmail('core-down'), 'password one 1', '192.0.2.90'))
  t.equal(answer.statusCode, 500)
  t.same(answer.json(), { statusCode: 500, error: 'Internal Server Error', message: 'Something went wrong on our side; try again later' })
  t.match(log.text(), /internal\.jar/, 'the cause is in the log')
})
