import tap, { test } from 'tap'
import { AUTH_LIMITS } from '../../lib/auth-limits.js'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { waitFor } from '../processes.js'
import { signInRequest, startCountingCore } from './counting-core.js'

const core = await startCountingCore(tap)

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
    payload: { formFields: [{ id: 'name', value: 'Spray' }, { id: 'email', value: uniqueEmail('spray') }, { id: 'password', value: 'password one 1' }] }
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

  core.passwordChecks.length = 0
  const knownAnswer = await app.inject(signInRequest(known, 'wrong password 1', '192.0.2.31'))
  const checksForKnown = core.passwordChecks.length
  core.passwordChecks.length = 0
  const unknownAnswer = await app.inject(signInRequest(uniqueEmail('unknown'), 'wrong password 1', '192.0.2.32'))
  const checksForUnknown = core.passwordChecks.length

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
  core.resetTokenDelayMs = 2000
  t.teardown(() => { core.resetTokenDelayMs = 0 })

  const timed = async (email: string, address: string) => {
    const started = performance.now()
    const answer = await app.inject({ ...signInRequest(email, '', address), url: '/api/auth/user/password/reset/token', payload: { formFields: [{ id: 'email', value: email }] } })
    return { answer, millis: performance.now() - started }
  }
  const forKnown = await timed(known, '192.0.2.40')
  const forUnknown = await timed(uniqueEmail('reset-unknown'), '192.0.2.41')
  t.same(forKnown.answer.json(), { status: 'OK' })
  t.same(forUnknown.answer.json(), forKnown.answer.json(), 'the same answer')
  t.ok(forKnown.millis < core.resetTokenDelayMs, `an account's answer does not wait for its reset token (${Math.round(forKnown.millis)} ms)`)
  t.notOk(log.lines().some((line) => line.msg === 'password reset link (not delivered in test)'), 'the link is not made yet when the answer leaves')
  t.ok(await waitFor(() => log.lines().some((line) => line.msg === 'password reset link (not delivered in test)'), 5000), 'then it is', { lines: log.lines().slice(-5) })
})
