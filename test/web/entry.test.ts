// The web entry points (`?auth=`, `verify`, canonical routes) and the local auth state, as plain
// functions: no browser needed.
import { test } from 'tap'
import { readAuthEntry, routeOf, withResetToken, withoutResetToken } from '../../web/src/lib/auth-params.js'
import { AUTH_STATE_KEY, LEGACY_AUTH_KEY, loadAuthState, markAuthenticated, needsEmailBackfill } from '../../web/src/lib/auth-state.js'
import { memoryStore } from '../../web/src/lib/storage.js'
import { tooManyAttemptsMessage, waitFromRetryAfter } from '../../web/src/lib/retry-after.js'

const origin = 'https://cal.example.com'

test('each auth value opens its dialog and leaves the URL; the rest of the query stays', async (t) => {
  for (const dialog of ['login', 'signup', 'forgot'] as const) {
    const entry = readAuthEntry(`${origin}/day?date=2026-03-02&auth=${dialog}#top`)
    t.equal(entry.dialog, dialog)
    t.equal(entry.resetToken, null)
    t.equal(entry.cleaned, '/day?date=2026-03-02#top', `${dialog}: only auth is removed`)
  }
})

test('reset: the token is captured first, then both parameters leave the URL', async (t) => {
  const entry = readAuthEntry(`${origin}/day?auth=reset&token=abc.DEF-123`)
  t.equal(entry.dialog, 'reset')
  t.equal(entry.resetToken, 'abc.DEF-123')
  t.equal(entry.cleaned, '/day')
  t.equal(withResetToken(`${origin}${entry.cleaned}`, 'abc.DEF-123'), '/day?token=abc.DEF-123', 'put back for the submission')
  t.equal(withoutResetToken(`${origin}/day?token=abc.DEF-123&date=2026-03-02`), '/day?date=2026-03-02', 'and removed after it')
  t.equal(readAuthEntry(`${origin}/day?auth=reset`).resetToken, null, 'a reset link without a token opens the dialog with none')
})

test('verify opens nothing and stays; unknown values are left alone', async (t) => {
  t.same(readAuthEntry(`${origin}/day?auth=verify&token=x`), { dialog: null, resetToken: null, cleaned: '/day?auth=verify&token=x' })
  t.same(readAuthEntry(`${origin}/day?auth=admin`), { dialog: null, resetToken: null, cleaned: '/day?auth=admin' })
  t.same(readAuthEntry(`${origin}/day`), { dialog: null, resetToken: null, cleaned: '/day' })
})

test('routes: /day is the default and every redirect keeps the query (verify survives)', async (t) => {
  t.same(routeOf(`${origin}/`), { route: 'day', redirect: '/day' })
  t.same(routeOf(`${origin}/?auth=verify&token=t1`), { route: 'day', redirect: '/day?auth=verify&token=t1' })
  t.same(routeOf(`${origin}/somewhere/else?auth=login#x`), { route: 'day', redirect: '/day?auth=login#x' })
  t.same(routeOf(`${origin}/day`), { route: 'day', redirect: null })
  t.same(routeOf(`${origin}/week/`), { route: 'week', redirect: null })
  t.same(routeOf(`${origin}/month?date=2027-02-30`), { route: 'month', redirect: null }, 'the month view is a route of its own, its date kept for the page to correct')
  t.same(routeOf(`${origin}/auth/extprovider/callback?code=c&state=s`), { route: 'callback', redirect: null })
})

test('local auth state: the legacy flag is migrated into hasAuthenticated, once', async (t) => {
  const legacyKey = memoryStore({ [LEGACY_AUTH_KEY]: 'true' })
  t.same(loadAuthState(legacyKey), { hasAuthenticated: true })
  t.same(legacyKey.entries(), { [AUTH_STATE_KEY]: JSON.stringify({ hasAuthenticated: true }) }, 'written in the new form, legacy key gone')

  const legacyField = memoryStore({ [AUTH_STATE_KEY]: JSON.stringify({ isGoogleAuthenticated: true, lastKnownEmail: 'a@example.com' }) })
  t.same(loadAuthState(legacyField), { hasAuthenticated: true, lastKnownEmail: 'a@example.com' })
  t.same(JSON.parse(legacyField.getItem(AUTH_STATE_KEY) as string), { hasAuthenticated: true, lastKnownEmail: 'a@example.com' })

  const legacyFalse = memoryStore({ [LEGACY_AUTH_KEY]: 'false' })
  t.same(loadAuthState(legacyFalse), { hasAuthenticated: false })
  t.equal(legacyFalse.getItem(LEGACY_AUTH_KEY), null)

  const fresh = memoryStore()
  t.same(loadAuthState(fresh), { hasAuthenticated: false })
  const broken = memoryStore({ [AUTH_STATE_KEY]: '{not json' })
  t.same(loadAuthState(broken), { hasAuthenticated: false }, 'unreadable state counts as none')
})

test('local auth state: sign-in sets the flag and the email; a returning user without one is backfilled', async (t) => {
  const store = memoryStore({ [LEGACY_AUTH_KEY]: 'true' })
  const returning = loadAuthState(store)
  t.equal(needsEmailBackfill(returning), true, 'authenticated before, no email known: ask the profile')
  t.same(markAuthenticated(store, 'ada@example.com'), { hasAuthenticated: true, lastKnownEmail: 'ada@example.com' })
  t.equal(needsEmailBackfill(loadAuthState(store)), false)
  t.same(markAuthenticated(store), { hasAuthenticated: true, lastKnownEmail: 'ada@example.com' }, 'a sign-in without an email keeps the known one')
  t.equal(needsEmailBackfill({ hasAuthenticated: false }), false, 'never signed in: nothing to backfill')
})

test('a refusal for now: the wait from Retry-After, in words', async (t) => {
  const now = Date.parse('2026-03-02T10:00:00Z')
  t.equal(waitFromRetryAfter('900', now), 900)
  t.equal(waitFromRetryAfter('Mon, 02 Mar 2026 10:01:30 GMT', now), 90, 'an HTTP date')
  t.equal(waitFromRetryAfter('Mon, 02 Mar 2026 09:00:00 GMT', now), 1, 'a date gone by: at least a second')
  t.equal(waitFromRetryAfter(null, now), undefined)
  t.equal(waitFromRetryAfter('soon', now), undefined)
  t.equal(tooManyAttemptsMessage(900), 'Too many attempts. Try again in 15 minutes.')
  t.equal(tooManyAttemptsMessage(61), 'Too many attempts. Try again in 2 minutes.')
  t.equal(tooManyAttemptsMessage(60), 'Too many attempts. Try again in 1 minute.')
  t.equal(tooManyAttemptsMessage(1), 'Too many attempts. Try again in 1 second.')
  t.equal(tooManyAttemptsMessage(42), 'Too many attempts. Try again in 42 seconds.')
  t.equal(tooManyAttemptsMessage(undefined), 'Too many attempts. Please try again later.')
})
