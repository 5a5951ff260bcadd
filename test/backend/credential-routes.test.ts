// The credential routes cannot be side-stepped: no other spelling of a route, no email-exists
// check, no foreign redirect URI, no oversized field, no lock that keeps an owner out.
import tap, { test } from 'tap'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import { readFile } from 'node:fs/promises'
import { AUTH_LIMITS, AUTH_ROUTES } from '../../lib/auth-limits.js'
import { documentedBlocks } from '../../dev/openapi-blocks.js'
import { buildApp, signUp, startDependencies, uniqueEmail } from '../helper.js'
import { CORE_INTERNAL_FAILURE, signInRequest, signUpRequest, startCountingCore } from './counting-core.js'

const core = await startCountingCore(tap)

test('failed guesses lock an account, successes do not count, and its owner is never kept out', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const email = uniqueEmail('guessed')
  const home = '198.51.100.1'
  await app.inject(signUpRequest(email, 'the real password 1', home))

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

const SPELLINGS = (route: string) => [
  `/api/auth/${route}/`, `/api/auth//${route}`, `/api//auth/${route}`, `/api/auth/./${route}`, `/api/auth/x/../${route}`,
  `/api/auth/${route}/.`, `/api/auth/${route.toUpperCase()}`, `/API/auth/${route}`,
  `/api/auth/${encodeURIComponent(route).replace(/^./, (first) => `%${first.charCodeAt(0).toString(16)}`)}`, `/api/auth/${route.replace(/\//g, '%2F')}`
]

test('no spelling of a credential route escapes its limit', async (t) => {
  const deps = await startDependencies(t)
  const { app } = await buildApp(t, deps)
  const address = '192.0.2.70'
  // Reset attempts with a made-up token: the cheapest requests that count against the same limit.
  for (let attempt = 1; attempt <= AUTH_LIMITS.perAddress.credentials.max; attempt++) {
    await app.inject({ ...signInRequest('', '', address), url: '/api/auth/user/password/reset', payload: { token: `made-up-${attempt}`, formFields: [{ id: 'password', value: 'password one 1' }] } })
  }
  t.equal((await app.inject(signInRequest(uniqueEmail('spent'), 'password one 1', address))).statusCode, 429, 'the address is over its limit')

  core.requests.length = 0
  for (const route of ['signin', 'signup', 'user/password/reset/token']) {
    for (const url of SPELLINGS(route)) {
      const answer = await app.inject({ ...signInRequest(uniqueEmail('respelled'), 'password one 1', address), url })
      t.ok([404, 429].includes(answer.statusCode), `${url}: ${answer.statusCode}`)
      t.notOk(answer.headers['sx-access-token'], `${url}: no session`)
    }
  }
  t.same(core.requests, [], 'the session core was asked nothing')

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
  core.requests.length = 0
  for (const [label, fields, field] of cases) {
    const answer = await signUpWith(fields)
    t.equal(answer.statusCode, 400, label)
    t.equal(answer.json().status, 'FIELD_ERROR', label)
    t.same(answer.json().formFields.map((refusal: { id: string }) => refusal.id), [field], label)
  }
  const signInTooLong = await app.inject(signInRequest(`${huge.slice(0, 300_000)}@example.com`, huge.slice(0, 300_000), '192.0.2.81'))
  t.equal(signInTooLong.statusCode, 400, 'sign-in too')
  t.same(core.requests, [], 'the core was asked nothing')
  t.equal(await users.countDocuments({ email: nameTooLong }), 0, 'nothing stored')

  const longest = await signUpWith({ email: `${'l'.repeat(64)}@example.com`, password: 'password one 1', name: 'n'.repeat(100) })
  t.equal(longest.json().status, 'OK', 'values at the limits are accepted')
  t.equal((await users.findOne({ email: `${'l'.repeat(64)}@example.com` }))?.['name'], 'n'.repeat(100))
})

test('a failure of the session core (its 5xx) answers a 503 with Retry-After that names no internals', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  core.failPasswordChecks = true
  t.teardown(() => { core.failPasswordChecks = false })
  const answer = await app.inject(signInRequest(uniqueEmail('core-down'), 'password one 1', '192.0.2.90'))
  t.equal(answer.statusCode, 503)
  t.match(answer.headers['retry-after'], /^\d+$/)
  t.same(answer.json(), { statusCode: 503, code: 'SESSION_SERVICE_UNAVAILABLE', error: 'Service Unavailable', message: 'Sessions cannot be checked right now; try again shortly' })
  t.notOk(answer.body.includes('supertokens'), 'no internal path')
  t.match(log.text(), new RegExp(CORE_INTERNAL_FAILURE.replace(/[.]/g, '\\.')), 'the cause is in the log')
})

// The table of the routes that need no session (docs/limits-and-faults.md): `METHOD path` for every method and path of a row.
async function routesListedWithoutSession (): Promise<Set<string>> {
  const readme = await readFile(new URL('../../docs/limits-and-faults.md', import.meta.url), 'utf8')
  const section = readme.slice(readme.indexOf('**Routes that need no session.**'))
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('|')))
  const listed = new Set<string>()
  for (const row of table.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| method'))) {
    const [methods = '', paths = ''] = row.split('|').slice(1).map((cell) => cell.trim())
    for (const method of methods.split(', ')) for (const [, path] of paths.matchAll(/`([^`]+)`/g)) listed.add(`${method} ${path}`)
  }
  return listed
}

test('the documentation lists every route that answers without a session, and each one it lists exists', async (t) => {
  const deps = await startDependencies(t)
  // With every optional block on, so that their routes are served and checked too.
  const { app, routes } = await buildApp(t, deps, { extra: documentedBlocks() })
  const listed = await routesListedWithoutSession()
  t.ok(listed.size > 5, `the table is read (${[...listed].join(', ')})`)
  const served = [
    ...routes.filter((route) => !['HEAD', 'OPTIONS'].includes(route.method) && route.url !== '*'),
    ...AUTH_ROUTES.filter((route) => route.library).map((route) => ({ method: route.method, url: route.path })),
    // What the session library would answer besides: none of it may be reachable unlisted.
    ...['/api/auth/emailpassword/email/exists', '/api/auth/signup/email/exists', '/api/auth/loginmethods', '/api/auth/jwt/jwks.json', '/api/auth/.well-known/openid-configuration']
      .map((url) => ({ method: 'GET', url })),
    { method: 'POST', url: '/api/auth/callback/apple' }
  ]
  for (const { method, url } of served) {
    if (url.startsWith('/sync/')) {
      // The Sync service's public parts, proxied whole: listed by their prefix.
      t.ok([...listed].some((key) => key.endsWith(` ${url}`) || key.endsWith(` ${url}/*`) || key.endsWith(` ${url.replace(/\/\*$/, '')}`)), `${url} is listed`)
      continue
    }
    const answer = await app.inject({ method: method as 'GET', url: url.replace(/:\w+/g, '0').replace(/\*$/, 'x'), headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.99' }, ...(method === 'GET' ? {} : { payload: {} }) })
    // 404: not served here (a provider route when no provider is configured, or a route kept from the library).
    const answersWithoutSession = ![401, 403, 404].includes(answer.statusCode)
    if (answersWithoutSession) t.ok(listed.has(`${method} ${url}`), `${method} ${url} answers ${answer.statusCode} without a session: listed`)
  }
  const known = new Set(served.map((route) => `${route.method} ${route.url}`))
  for (const key of listed) {
    const [, path = ''] = key.split(' ')
    t.ok(known.has(key) || path.startsWith('/sync/'), `${key} exists`)
  }
})
