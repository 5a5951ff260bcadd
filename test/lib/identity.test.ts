import { test } from 'tap'
import { ObjectId } from 'bson'
import {
  idForNewPasswordLogin, isCanonicalUserId, mayJoinByEmail, mintUserId, normalizeEmail, resolvePasswordUser, resolveProviderUser, userUpsertFor,
  type KnownUser, type ProviderLogin
} from '../../lib/identity.js'
import { rewritePasswordResetLink } from '../../lib/reset-link.js'

test('emails are compared trimmed and in lower case', async (t) => {
  t.equal(normalizeEmail('  Ada.Lovelace@Example.COM \n'), 'ada.lovelace@example.com')
})

const known = (userId: string, overrides: Partial<KnownUser> = {}): KnownUser => ({ userId, email: 'ada@example.com', emailVerified: false, providers: [], ...overrides })
const googleLogin = (overrides: Partial<ProviderLogin> = {}): ProviderLogin => ({
  provider: 'google', accountId: 'g-1', email: 'ada@example.com', emailVerified: true, privateRelay: false, ...overrides
})

test('provider sign-in: the account owner first, then a verified owner of the verified email, else a user of its own', async (t) => {
  const owner = '65a1b2c3d4e5f60718293a4b'
  const other = '75a1b2c3d4e5f60718293a4b'
  const session = '85a1b2c3d4e5f60718293a4b'
  const resolve = (input: Partial<Parameters<typeof resolveProviderUser>[0]>) =>
    resolveProviderUser({ login: googleLogin(), accountOwner: undefined, emailOwner: undefined, sessionUserId: session, sessionUserHasRecord: false, ...input })

  t.match(resolve({ accountOwner: known(owner, { providers: ['google'] }), emailOwner: known(other, { emailVerified: true }) }), { via: 'account', userId: owner },
    'the provider account decides, whoever owns the email')
  t.match(resolve({ emailOwner: known(other, { emailVerified: true, providers: ['microsoft'] }) }), { via: 'email', userId: other, claimVerifiedEmail: true },
    'a verified login joins the verified user of the same email (Google and Microsoft join)')
  t.match(resolve({ emailOwner: known(other) }), { via: 'new', userId: session, claimVerifiedEmail: true },
    'an unverified owner (a password account not verified yet) is not joined; this login proves the address')
  t.match(resolve({ login: googleLogin({ emailVerified: false }), emailOwner: known(other, { emailVerified: true }) }), { via: 'new', claimVerifiedEmail: false },
    'an unverified provider email joins nobody')
  t.match(resolve({ emailOwner: known(other, { emailVerified: true, providers: ['google'] }) }), { via: 'new', claimVerifiedEmail: false },
    'a user with another Google account is not joined, and keeps the verified address')
  const relay = googleLogin({ provider: 'apple', email: 'x1y2@privaterelay.appleid.com', privateRelay: true })
  t.match(resolve({ login: relay, emailOwner: known(other, { email: relay.email, emailVerified: true }) }), { via: 'new', claimVerifiedEmail: false },
    'an Apple private-relay address never links')
  t.match(resolve({ login: { ...relay, privateRelay: false }, emailOwner: known(other, { email: relay.email, emailVerified: true }) }), { via: 'new' },
    'a relay address is recognised by its domain too')
  const minted = resolve({ sessionUserId: 'not-canonical' })
  t.ok(isCanonicalUserId(minted.userId), 'a library id that is not canonical is replaced by a new id')
  t.not(resolve({ sessionUserHasRecord: true }).userId, session, 'a session id that already names a record is not reused')
  t.match(resolve({ accountOwner: known(owner, { email: 'old@example.com', providers: ['google'] }) }), { via: 'account', claimVerifiedEmail: false },
    'a provider vouching for another address proves nothing about the record\'s')
  t.ok(mayJoinByEmail(googleLogin(), known(other, { emailVerified: true })))
})

test('password logins: the email owner unless an unverified login would take a claimed user', async (t) => {
  const owner = '65a1b2c3d4e5f60718293a4b'
  const session = '85a1b2c3d4e5f60718293a4b'
  t.match(resolvePasswordUser({ emailOwner: known(owner), sessionUserId: session, loginEmailVerified: false }), { userId: owner },
    'an unclaimed record that owns the email is reused')
  t.match(resolvePasswordUser({ emailOwner: known(owner, { emailVerified: true, providers: ['google'] }), sessionUserId: session, loginEmailVerified: false }), { userId: session },
    'an unverified password login does not join a Google user')
  t.match(resolvePasswordUser({ emailOwner: known(owner, { emailVerified: true, providers: ['google'] }), sessionUserId: session, loginEmailVerified: true }), { userId: owner },
    'once verified, it joins')
  t.match(resolvePasswordUser({ emailOwner: undefined, sessionUserId: session, loginEmailVerified: true }), { userId: session, claimVerifiedEmail: true })
  t.ok(isCanonicalUserId(resolvePasswordUser({ emailOwner: undefined, sessionUserId: 'temporary', loginEmailVerified: false }).userId))
  t.equal(idForNewPasswordLogin(known(owner)), owner)
  t.not(idForNewPasswordLogin(known(owner, { providers: ['microsoft'] })), owner, 'a new password login never maps onto a provider user')
})

test('the user upsert: signedUpAt once, lastLoggedInAt always, provider data kept unless new', async (t) => {
  const now = new Date('2026-01-02T03:04:05Z')
  const signIn = userUpsertFor({ email: ' Ada@Example.com', now })
  t.same(signIn, { $set: { email: 'ada@example.com', lastLoggedInAt: now }, $setOnInsert: { signedUpAt: now, emailVerified: false } })
  t.notOk('google.googleId' in signIn.$set, 'no provider payload: the stored one is not touched')
  t.notOk('name' in signIn.$set, 'no name: the stored one is not touched')

  const withName = userUpsertFor({ email: 'ada@example.com', name: '  Ada  ', now })
  t.equal(withName.$set.name, 'Ada')
  t.notOk('name' in userUpsertFor({ email: 'ada@example.com', name: '   ', now }).$set, 'a blank name erases nothing')

  const withProvider = userUpsertFor({ email: 'ada@example.com', now, provider: { provider: 'google', accountId: 'g-1', sealedRefreshToken: 'sealed-1' } })
  t.equal(withProvider.$set['google.googleId'], 'g-1')
  t.equal(withProvider.$set['google.gRefreshToken'], 'sealed-1')
  t.equal(withProvider.$setOnInsert.email, 'ada@example.com', 'a provider\'s address only names a new record')
  const withoutNewToken = userUpsertFor({ email: 'ada@example.com', now, provider: { provider: 'google', accountId: 'g-1' } })
  t.notOk('google.gRefreshToken' in withoutNewToken.$set, 'a provider login without a new refresh token keeps the stored one')
  t.equal(userUpsertFor({ email: 'a@example.com', now, provider: { provider: 'apple', accountId: 'a-1' } }).$set['apple.appleId'], 'a-1')
  t.equal(userUpsertFor({ email: 'a@example.com', now, emailVerified: true }).$set.emailVerified, true, 'a proven email is recorded')
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

test('minted ids: 24 hex of the ObjectId layout, in the order they were made, and none names its neighbour', async (t) => {
  const minted = Array.from({ length: 20_000 }, () => mintUserId())
  const [first, second] = minted as [string, string]
  t.match(first, /^[0-9a-f]{24}$/)
  t.ok(ObjectId.isValid(first), 'a valid ObjectId for the driver')
  t.ok(Math.abs(ObjectId.createFromHexString(first).getTimestamp().getTime() - Date.now()) < 5_000, 'its time is now')
  t.same([...minted].sort(), minted, 'sorted as made, also past 16,384 in one millisecond')
  t.equal(new Set(minted).size, minted.length, 'no repeats')
  t.not(BigInt(`0x${second.slice(8)}`) - BigInt(`0x${first.slice(8)}`), 1n, 'not the next of a counter')
  t.equal(new Set(minted.slice(0, 1000).map((id) => id.slice(14))).size, 1000, 'each ends in random bytes of its own')
})
