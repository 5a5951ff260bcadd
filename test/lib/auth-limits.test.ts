// The credential routes' rules as plain functions: which spellings reach the session library,
// which limit a route has, field sizes, and the sign-in guard with a clock of its own.
import { test } from 'tap'
import { AUTH_LIMITS, SignInGuard, accountOf, formField, isServedLibraryRoute, limitedAuthRoute, oversizedFields } from '../../lib/auth-limits.js'

const MINUTE = 60_000

test('only the exact spelling of a library route is served; limits follow the route', async (t) => {
  t.ok(isServedLibraryRoute('POST', '/api/auth/signin?x=1'))
  for (const url of ['/api/auth/signin/', '/api/auth/./signin', '/api/auth/SIGNIN', '/api/auth/emailpassword/email/exists', '/api/auth/loginmethods']) {
    t.notOk(isServedLibraryRoute(url.includes('exists') || url.includes('loginmethods') ? 'GET' : 'POST', url), url)
  }
  t.notOk(isServedLibraryRoute('GET', '/api/auth/signin'), 'another method')
  t.notOk(isServedLibraryRoute('POST', '/api/auth/refresh'), 'the service\'s own route is the router\'s')
  t.equal(limitedAuthRoute('POST', '/api/auth/refresh')?.limit, 'refresh')
  t.equal(limitedAuthRoute('POST', '/api/auth/user/password/reset/token')?.perAccount, 'resetRequests')
  t.equal(limitedAuthRoute('POST', '/api/auth/signout'), undefined, 'sign-out needs a session and is not limited')
  t.equal(limitedAuthRoute('GET', '/api/health'), undefined)
})

test('form fields: the account named, and values longer than any valid one', async (t) => {
  t.equal(accountOf({ formFields: [{ id: 'email', value: ' Ada@Example.COM ' }] }), 'ada@example.com')
  for (const body of [null, 'text', {}, { formFields: 'x' }, { formFields: [null, { id: 'email', value: 3 }] }, { formFields: [{ id: 'email', value: '  ' }] }]) {
    t.equal(accountOf(body), undefined, JSON.stringify(body))
  }
  t.equal(formField({ formFields: [{ id: 'name', value: 'Ada' }] }, 'name'), 'Ada')
  const fields = (values: Record<string, string>) => ({ formFields: Object.entries(values).map(([id, value]) => ({ id, value })) })
  t.same(oversizedFields(fields({ name: 'n'.repeat(100), email: `${'l'.repeat(64)}@example.com`, password: 'p'.repeat(100) })), [], 'at the limits')
  t.same(oversizedFields(fields({ name: 'n'.repeat(101), email: `${'l'.repeat(65)}@example.com`, password: 'p'.repeat(101) })).map((refusal) => refusal.id), ['name', 'email', 'password'])
  t.same(oversizedFields(fields({ email: `a@${'d'.repeat(253)}` })).map((refusal) => refusal.id), ['email'], '255 in all')
  t.same(oversizedFields(fields({ email: 'l'.repeat(254) })), [], 'no @: left to the format check')
  t.same(oversizedFields(undefined), [])
})

test('the sign-in guard: failures lock, successes do not count, known addresses and a reset lift the lock', async (t) => {
  const guard = new SignInGuard()
  let now = 1_000_000
  const fail = (address: string, times = 1) => { for (let i = 0; i < times; i++) guard.failed('ada', address, now) }

  guard.succeeded('ada', 'home', now)
  for (let i = 0; i < 20; i++) guard.succeeded('ada', 'home', now)
  t.equal(guard.refusal('ada', 'anywhere', now), undefined, 'successes do not count')

  fail('guesser', AUTH_LIMITS.failuresPerAccountAndAddress.max - 1)
  t.equal(guard.refusal('ada', 'guesser', now), undefined, 'a few mistakes are fine')
  fail('guesser')
  t.equal(guard.refusal('ada', 'guesser', now), AUTH_LIMITS.failuresPerAccountAndAddress.windowMs / 1000, 'then the address waits the window')
  t.equal(guard.refusal('grace', 'guesser', now), undefined, 'for that account only')
  t.equal(guard.refusal('ada', 'elsewhere', now), undefined, 'other addresses may still try')

  now += MINUTE
  fail('botnet', AUTH_LIMITS.failuresPerAccount.max - AUTH_LIMITS.failuresPerAccountAndAddress.max)
  t.equal(guard.refusal('ada', 'elsewhere', now), (AUTH_LIMITS.failuresPerAccount.windowMs - MINUTE) / 1000, 'the account is locked to strangers until the first failure\'s window ends')
  t.equal(guard.refusal('ada', 'home', now), undefined, 'not to where it is known')
  guard.succeeded('ada', 'home', now)
  t.equal(guard.refusal('ada', 'elsewhere', now), undefined, 'and a sign-in there lifts the lock')
  t.equal(guard.refusal('ada', 'guesser', now), AUTH_LIMITS.failuresPerAccountAndAddress.windowMs / 1000 - 60, 'the guessing address still waits')

  fail('botnet2', AUTH_LIMITS.failuresPerAccount.max)
  t.ok(guard.refusal('ada', 'elsewhere', now) !== undefined, 'locked again')
  guard.passwordReset('ada')
  guard.passwordReset('nobody')
  t.equal(guard.refusal('ada', 'elsewhere', now), undefined, 'a completed reset lifts it')
  t.equal(guard.refusal('ada', 'guesser', now), undefined, 'for every address')

  now += AUTH_LIMITS.knownAddressMs + 1
  fail('botnet3', AUTH_LIMITS.failuresPerAccount.max)
  t.ok(guard.refusal('ada', 'home', now) !== undefined, 'an address is known for a while, not for ever')
  now += AUTH_LIMITS.failuresPerAccount.windowMs
  t.equal(guard.refusal('ada', 'home', now), undefined, 'every lock ends with its window')
})

test('the sign-in guard keeps at most its number of accounts, and only the addresses it may need', async (t) => {
  const limits = { ...AUTH_LIMITS, trackedAccounts: 3, knownAddressesPerAccount: 2 }
  const guard = new SignInGuard(limits)
  let now = 0
  guard.failed('expired', 'a', now)
  guard.succeeded('known', 'a', now)
  now += limits.failuresPerAccount.windowMs
  for (let i = 0; i < limits.failuresPerAccount.max; i++) guard.failed('locked', `bot${i}`, now)
  t.equal(guard.size, 3)
  guard.failed('new', 'a', now)
  t.equal(guard.size, 3, 'what has expired goes first')
  t.ok(guard.refusal('locked', 'stranger', now) !== undefined, 'a live lock is kept')
  t.equal(guard.refusal('known', 'stranger', now), undefined)
  guard.failed('newer', 'a', now)
  guard.failed('newest', 'a', now)
  t.equal(guard.size, 3, 'then the oldest')

  for (const address of ['one', 'two', 'three']) guard.succeeded('travel', address, now)
  for (let i = 0; i < limits.failuresPerAccount.max; i++) guard.failed('travel', `bot${i}`, now)
  t.ok(guard.refusal('travel', 'one', now) !== undefined, 'the oldest known address is forgotten')
  t.equal(guard.refusal('travel', 'three', now), undefined, 'the latest are kept')
})
