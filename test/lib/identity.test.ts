import { test } from 'tap'
import { chooseCanonicalUserId, isCanonicalUserId, normalizeEmail, userUpsertFor } from '../../lib/identity.js'
import { rewritePasswordResetLink } from '../../lib/reset-link.js'

test('emails are compared trimmed and in lower case', async (t) => {
  t.equal(normalizeEmail('  Ada.Lovelace@Example.COM \n'), 'ada.lovelace@example.com')
})

test('the canonical id: an existing user by email, then a mapped session id, then a new id', async (t) => {
  const existing = '65a1b2c3d4e5f60718293a4b'
  const mapped = '75a1b2c3d4e5f60718293a4b'
  t.equal(chooseCanonicalUserId({ existingUserIdForEmail: existing, sessionUserId: mapped }), existing)
  t.equal(chooseCanonicalUserId({ existingUserIdForEmail: undefined, sessionUserId: mapped }), mapped)
  const minted = chooseCanonicalUserId({ existingUserIdForEmail: undefined, sessionUserId: '3c1b1f38-3e5c-4d5e-9f0a-1d2e3f4a5b6c' })
  t.ok(isCanonicalUserId(minted), 'a library uuid is never the canonical id')
  t.not(minted, chooseCanonicalUserId({ existingUserIdForEmail: undefined, sessionUserId: 'temporary' }), 'each new id is new')
})

test('the user upsert: signedUpAt once, lastLoggedInAt always, provider data kept unless new', async (t) => {
  const now = new Date('2026-01-02T03:04:05Z')
  const signIn = userUpsertFor({ email: ' Ada@Example.com', now })
  t.same(signIn, { $set: { email: 'ada@example.com', lastLoggedInAt: now }, $setOnInsert: { signedUpAt: now } })
  t.notOk('google.googleId' in signIn.$set, 'no provider payload: the stored one is not touched')
  t.notOk('name' in signIn.$set, 'no name: the stored one is not touched')

  const withName = userUpsertFor({ email: 'ada@example.com', name: '  Ada  ', now })
  t.equal(withName.$set.name, 'Ada')
  t.notOk('name' in userUpsertFor({ email: 'ada@example.com', name: '   ', now }).$set, 'a blank name erases nothing')

  const withProvider = userUpsertFor({ email: 'ada@example.com', now, provider: { googleId: 'g-1', gRefreshToken: 'rt-1' } })
  t.equal(withProvider.$set['google.googleId'], 'g-1')
  t.equal(withProvider.$set['google.gRefreshToken'], 'rt-1')
  const withoutNewToken = userUpsertFor({ email: 'ada@example.com', now, provider: { googleId: 'g-1' } })
  t.notOk('google.gRefreshToken' in withoutNewToken.$set, 'a provider login without a new refresh token keeps the stored one')
})

test('reset links point at the web app\'s /day with the token; others are left alone', async (t) => {
  const rewritten = new URL(rewritePasswordResetLink('http://localhost:3000/auth/reset-password?token=abc%2B123&tenantId=public', 'https://calendar.example.com/some/path'))
  t.equal(rewritten.origin, 'https://calendar.example.com', 'host from web.url')
  t.equal(rewritten.pathname, '/day', 'route always /day')
  t.equal(rewritten.searchParams.get('auth'), 'reset')
  t.equal(rewritten.searchParams.get('token'), 'abc+123', 'the token survives encoding')
  t.notOk(rewritten.searchParams.has('tenantId'))
  const noToken = 'http://localhost:3000/auth/reset-password?tenantId=public'
  t.equal(rewritePasswordResetLink(noToken, 'https://calendar.example.com'), noToken)
  t.equal(rewritePasswordResetLink('not a url', 'https://calendar.example.com'), 'not a url')
})
