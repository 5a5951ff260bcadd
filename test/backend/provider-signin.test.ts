// Provider sign-in through the session library's sign-in-up route, against the Google stand-in and
// the Microsoft and Apple OpenID stand-ins: the one redirect URI, the grant checks, the identity
// rules, the Google modes and their log line, and the refresh token at rest.
import { randomBytes } from 'node:crypto'
import tap, { test, type Test } from 'tap'
import { ObjectId } from 'mongodb'
import { buildApp, signIn, signUp, startDependencies, uniqueEmail, verifyEmail, type SignedIn } from '../helper.js'
import { createCredentialCipher, userRefreshTokenBinding } from '../../lib/credential-cipher.js'
import type { UserDocument } from '../../stores/users.js'
import { oidcNonceFor, pkceChallenge } from '../../lib/pkce.js'
import { authorize, CALLBACK, googleConnection, signInThrough, startProviderSync, startProviders, type ProviderSync, type SignInAnswer } from './provider-fixtures.js'

const deps = await startDependencies(tap)
const providers = await startProviders(tap)
const sync = await startProviderSync(tap)
const { app, config, log } = await buildApp(tap, deps, { syncUrl: sync.url, extra: providers.config })
const users = app.mongo.db.collection<UserDocument>('users')
const cipher = createCredentialCipher(config.sync.credentialEncryptionKey ?? '')

const { authorisationUrl, postSignInUp, providerSignIn } = signInThrough(app)

function signedIn (t: Test, answer: SignInAnswer): SignedIn {
  t.equal(answer.statusCode, 200)
  t.equal(answer.body['status'], 'OK', JSON.stringify(answer.body))
  if (answer.session === undefined) throw new Error('no session in the answer')
  return answer.session
}

function googleAccount (label: string, options: { emailVerified?: boolean } = {}): string {
  const email = uniqueEmail(label)
  providers.google.control.createAccount({ email, name: `${label} Example`, ...options })
  return email
}

function oidcAccount (provider: 'microsoft' | 'apple', label: string, options: { emailVerified?: boolean, privateRelay?: boolean, email?: string } = {}): string {
  const email = options.email ?? uniqueEmail(label)
  providers[provider].control.createAccount({ email, name: `${label} Example`, ...options })
  return email
}

function googleSub (email: string): string {
  const account = providers.google.control.listAccounts().find((candidate) => candidate.email === email)
  if (account === undefined) throw new Error(`no Google account ${email}`)
  return account.sub
}

async function record (userId: string): Promise<UserDocument | null> {
  return await users.findOne({ _id: new ObjectId(userId) })
}

async function verifiedPasswordUser (label: string): Promise<{ email: string, password: string, session: SignedIn }> {
  const email = uniqueEmail(label)
  const password = `pw-${randomBytes(6).toString('hex')}`
  const created = await signUp(app, { email, password, name: label })
  await verifyEmail(created.userId, email)
  // The next sign-in records that the address is proven.
  return { email, password, session: await signIn(app, { email, password }) }
}

test('the one redirect URI is enforced before any exchange; tokens instead of a code are refused', async (t) => {
  const email = googleAccount('redirect')
  const { url, pkceCodeVerifier } = await authorisationUrl('google')
  const redirect = await authorize(url.toString(), email)
  const before = providers.google.control.counts().operations['oauth2.token']?.total ?? 0
  for (const other of ['http://localhost:9080/auth/extprovider/callback/', 'https://evil.example/auth/extprovider/callback', `${CALLBACK}?next=/day`]) {
    const refused = await postSignInUp('google', redirect, pkceCodeVerifier, other)
    t.equal(refused.statusCode, 400, other)
    t.match(refused.body, { code: 'REDIRECT_URI_NOT_ALLOWED' })
  }
  t.equal(providers.google.control.counts().operations['oauth2.token']?.total ?? 0, before, 'Google was never asked to exchange the code')
  t.notOk(await users.findOne({ email }), 'nobody was created')

  const tokens = await app.inject({
    method: 'POST', url: '/api/auth/signinup', headers: { rid: 'thirdparty' }, payload: { thirdPartyId: 'google', oAuthTokens: { access_token: 'ya29.x' } }
  })
  t.equal(tokens.statusCode, 400)
  t.equal(tokens.json().code, 'AUTHORIZATION_CODE_REQUIRED')

  // The same code, still unused, works with the right address; used once, it is refused.
  signedIn(t, await postSignInUp('google', redirect, pkceCodeVerifier))
  const reused = await postSignInUp('google', redirect, pkceCodeVerifier)
  t.equal(reused.statusCode, 400)
  t.equal(reused.body['code'], 'AUTHORIZATION_CODE_REJECTED')
})

test('the authorization URL asks Google for offline calendar access at the stand-in', async (t) => {
  const { url, pkceCodeVerifier } = await authorisationUrl('google')
  t.equal(url.origin, providers.google.url)
  t.equal(url.searchParams.get('access_type'), 'offline')
  t.equal(url.searchParams.get('prompt'), 'consent')
  t.equal(url.searchParams.get('redirect_uri'), CALLBACK)
  t.match(url.searchParams.get('scope'), /https:\/\/www\.googleapis\.com\/auth\/calendar/)
  t.type(pkceCodeVerifier, 'string', 'PKCE: the stand-in advertises S256 like Google')
})

test('Google and Microsoft sign-ins carry PKCE S256 and a nonce of the verifier; without the verifier, or with an ID token of another nonce, nobody is signed in', async (t) => {
  for (const provider of ['google', 'microsoft'] as const) {
    const { url, pkceCodeVerifier } = await authorisationUrl(provider)
    if (pkceCodeVerifier === undefined) throw new Error('no verifier')
    t.equal(url.searchParams.get('code_challenge_method'), 'S256', `${provider}: S256`)
    t.equal(url.searchParams.get('code_challenge'), await pkceChallenge(pkceCodeVerifier))
    t.equal(url.searchParams.get('nonce'), await oidcNonceFor(pkceCodeVerifier), `${provider}: the nonce is the verifier's`)

    const email = provider === 'google' ? googleAccount(`pkce-${provider}`) : oidcAccount('microsoft', `pkce-${provider}`)
    const count = await users.countDocuments({})
    const withoutVerifier = await postSignInUp(provider, await authorize(url.toString(), email), undefined)
    t.equal(withoutVerifier.statusCode, 400)
    t.match(withoutVerifier.body, { code: 'PKCE_VERIFIER_REQUIRED' })
    t.equal(withoutVerifier.session, undefined, 'no session')

    // An authorization whose nonce is not this verifier's (the ID token of someone else's sign-in).
    const other = await authorisationUrl(provider)
    other.url.searchParams.set('nonce', 'a-nonce-of-another-authorization')
    const foreign = await postSignInUp(provider, await authorize(other.url.toString(), email), other.pkceCodeVerifier)
    t.equal(foreign.statusCode, 400)
    t.match(foreign.body, { code: 'NONCE_MISMATCH' })
    t.equal(foreign.session, undefined, 'no session')
    t.equal(await users.countDocuments({}), count, 'no user was created')

    t.equal((await providerSignIn(provider, email)).body['status'], 'OK', `${provider}: the whole round trip signs in`)
  }
})

test('a grant without the calendar, or without offline access, signs nobody in and stores nothing', async (t) => {
  const email = googleAccount('scopes')
  const noCalendar = await providerSignIn('google', email, (url) => { url.searchParams.set('scope', 'openid email profile') })
  t.equal(noCalendar.statusCode, 200)
  t.equal(noCalendar.body['status'], 'SIGN_IN_UP_NOT_ALLOWED')
  t.match(noCalendar.body['reason'], /calendar/)
  t.equal(noCalendar.session, undefined, 'no session')
  t.notOk(await users.findOne({ email }), 'no user record')

  const online = await providerSignIn('google', email, (url) => {
    url.searchParams.set('access_type', 'online')
    url.searchParams.delete('prompt')
  })
  t.equal(online.body['status'], 'SIGN_IN_UP_NOT_ALLOWED')
  t.match(online.body['reason'], /offline/)
  t.notOk(await users.findOne({ email }))
  t.equal(sync.handOvers.filter((entry) => entry.handOver.providerAccountId === googleSub(email)).length, 0, 'nothing handed to Sync')
})

test('a Microsoft grant without the calendar, the mailbox settings or offline access signs nobody in and stores nothing', async (t) => {
  const email = oidcAccount('microsoft', 'ms-scopes')
  const without = (dropped: string) => (url: URL) => {
    url.searchParams.set('scope', (url.searchParams.get('scope') ?? '').split(' ').filter((scope) => !scope.endsWith(dropped)).join(' '))
  }
  for (const [dropped, reason] of [['Calendars.ReadWrite', /Calendars\.ReadWrite/], ['MailboxSettings.Read', /MailboxSettings\.Read/], ['offline_access', /offline/]] as const) {
    const answer = await providerSignIn('microsoft', email, without(dropped))
    t.equal(answer.statusCode, 200)
    t.equal(answer.body['status'], 'SIGN_IN_UP_NOT_ALLOWED', `without ${dropped}`)
    t.match(answer.body['reason'], reason)
    t.equal(answer.session, undefined, 'no session')
  }
  t.notOk(await users.findOne({ email }), 'no user record')
  const subject = providers.microsoft.control.subjectFor(email, config.extprovider2?.clientId ?? '') ?? ''
  t.equal(sync.handOvers.filter((entry) => entry.handOver.providerAccountId === subject).length, 0, 'nothing handed to Sync')

  const granted = await providerSignIn('microsoft', email)
  t.equal(granted.body['status'], 'OK', 'the whole grant signs in')
  t.match(granted.body['summary'], { provider: 'microsoft', calendar: 'import' })
})

/** The google_auth_decision lines logged so far. */
function decisions (): Array<Record<string, unknown>> {
  return log.lines().filter((line) => line['msg'] === 'google_auth_decision')
}

async function handedOver (accountId: string, count: number): Promise<Array<ProviderSync['handOvers'][number]>> {
  const deadline = Date.now() + 5000
  for (;;) {
    const found = sync.handOvers.filter((entry) => entry.handOver.providerAccountId === accountId)
    if (found.length >= count || Date.now() > deadline) return found
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('Google sign-up, then sign-ins: modes, summaries, the decision log, the refresh token sealed and replaced', async (t) => {
  const email = googleAccount('modes')
  const sub = googleSub(email)

  // A new account: SIGNUP, an import for Sync.
  const first = await providerSignIn('google', email)
  const session = signedIn(t, first)
  t.match(first.body['summary'], { provider: 'google', newUser: true, linkedBy: 'new', mode: 'SIGNUP', calendar: 'import' })
  const created = await record(session.userId)
  t.equal(created?.email, email)
  t.equal(created?.google?.googleId, sub, 'the provider account id is on the record')
  t.equal(created?.emailVerified, true, 'Google vouched for the address')
  t.ok(created?.signedUpAt instanceof Date)
  const [signUpHandOver] = await handedOver(sub, 1)
  t.match(signUpHandOver, { userId: session.userId, handOver: { provider: 'google', providerAccountId: sub, mode: 'SIGNUP' } })
  const issued = signUpHandOver?.handOver.refreshToken ?? ''
  t.match(issued, /^1\/\//, 'Sync received the refresh token Google issued')
  t.ok(signUpHandOver?.handOver.scopes.includes('https://www.googleapis.com/auth/calendar'))

  // At rest the token is sealed: not the plain token, and it opens only under the key and for this user.
  const sealed = created?.google?.gRefreshToken ?? ''
  t.not(sealed, issued)
  t.notOk(JSON.stringify(created).includes(issued), 'the plain token is nowhere on the record')
  t.equal(cipher.open(sealed, userRefreshTokenBinding(session.userId)), issued)
  t.throws(() => cipher.open(sealed, userRefreshTokenBinding(new ObjectId().toHexString())), 'bound to its user')

  const decision = decisions().at(-1)
  t.match(decision, { mode: 'SIGNUP', flow: 'signIn', userExists: false, refreshTokenStored: false, syncAllowsIncremental: false, refreshTokenIssued: true })
  t.match(decision?.['trace'], { user: /^[\w-]{16}$/, account: /^[\w-]{16}$/, email: /^[\w-]{16}$/ })
  const line = JSON.stringify(decision)
  for (const raw of [email, sub, session.userId, issued]) t.notOk(line.includes(raw), 'no raw email, id or token in the decision line')
  t.notOk(log.text().includes(issued), 'the refresh token reaches no log line')
  t.notOk(log.text().includes(email), 'the email reaches no log line')

  // Signed in again while Sync reports a healthy connection: SIGNIN_INCREMENTAL. Google re-issues
  // a refresh token at every forced consent; the stored one is replaced.
  sync.connections.set(session.userId, [googleConnection('healthy')])
  const second = await providerSignIn('google', email)
  const again = signedIn(t, second)
  t.equal(again.userId, session.userId, 'the provider account finds its user')
  t.match(second.body['summary'], { newUser: false, linkedBy: 'account', mode: 'SIGNIN_INCREMENTAL', calendar: 'incremental' })
  const [, incremental] = await handedOver(sub, 2)
  t.equal(incremental?.handOver.mode, 'SIGNIN_INCREMENTAL')
  t.not(incremental?.handOver.refreshToken, issued, 'a new token was issued')
  const replaced = await record(session.userId)
  t.equal(cipher.open(replaced?.google?.gRefreshToken ?? '', userRefreshTokenBinding(session.userId)), incremental?.handOver.refreshToken, 'and replaced the stored one')
  t.equal(replaced?.signedUpAt.getTime(), created?.signedUpAt.getTime(), 'signedUpAt kept')
  t.match(decisions().at(-1), { mode: 'SIGNIN_INCREMENTAL', userExists: true, refreshTokenStored: true, syncAllowsIncremental: true })

  // Without a forced consent Google issues no new token: the stored one is kept and reused; a
  // broken connection makes it a repair.
  sync.connections.set(session.userId, [googleConnection('actionRequired', 'readFailure')])
  const third = await providerSignIn('google', email, (url) => { url.searchParams.delete('prompt') })
  signedIn(t, third)
  t.match(third.body['summary'], { mode: 'RECONNECT_REPAIR', calendar: 'repair' })
  const [, , repair] = await handedOver(sub, 3)
  t.equal(repair?.handOver.mode, 'RECONNECT_REPAIR')
  t.equal(repair?.handOver.refreshToken, incremental?.handOver.refreshToken, 'the stored refresh token is reused')
  t.equal((await record(session.userId))?.google?.gRefreshToken, replaced?.google?.gRefreshToken, 'and stays exactly as stored')
  t.match(decisions().at(-1), { mode: 'RECONNECT_REPAIR', refreshTokenIssued: false, syncAllowsIncremental: false })

  // Sync unreachable or silent about the user: the repair path, never an incremental on a guess.
  sync.connections.delete(session.userId)
  const fourth = await providerSignIn('google', email)
  t.match(fourth.body['summary'], { mode: 'RECONNECT_REPAIR' })
})

test('identity: a verified password user is joined by a verified Google login of the same email, and by Microsoft', async (t) => {
  const { email, session: password } = await verifiedPasswordUser('joined')
  t.equal((await record(password.userId))?.emailVerified, true, 'the verified address is recorded at the next sign-in')
  providers.google.control.createAccount({ email, name: 'Joined Google' })
  const google = await providerSignIn('google', email)
  t.equal(signedIn(t, google).userId, password.userId, 'the session names the password user')
  t.match(google.body['summary'], { linkedBy: 'email', newUser: false, mode: 'SIGNUP' }, 'new to us as a Google account, so SIGNUP')
  const joined = await record(password.userId)
  t.equal(joined?.google?.googleId, googleSub(email))
  t.equal(await users.countDocuments({ email }), 1, 'one user')

  oidcAccount('microsoft', 'joined', { email })
  const microsoft = await providerSignIn('microsoft', email)
  t.equal(signedIn(t, microsoft).userId, password.userId, 'verified Google and Microsoft logins of one email are one user')
  t.match(microsoft.body['summary'], { provider: 'microsoft', linkedBy: 'email', calendar: 'import' }, 'the sign-in brought calendar access: Sync imports the Microsoft calendar')
  const microsoftSubject = providers.microsoft.control.subjectFor(email, config.extprovider2?.clientId ?? '') ?? ''
  t.equal((await record(password.userId))?.microsoft?.microsoftId, microsoftSubject)
  const [microsoftHandOver] = await handedOver(microsoftSubject, 1)
  t.match(microsoftHandOver, { userId: password.userId, handOver: { provider: 'microsoft', providerAccountId: microsoftSubject, mode: 'SIGNUP' } })
  t.ok(microsoftHandOver?.handOver.scopes.includes('Calendars.ReadWrite'), 'with the calendar scope the sign-in asked for')
  t.ok((microsoftHandOver?.handOver.refreshToken ?? '').length > 10, 'and the refresh token Microsoft issued')
  t.notOk(log.text().includes(microsoftHandOver?.handOver.refreshToken ?? 'no token'), 'which no log line holds')
  t.same((await record(password.userId))?.microsoft, { microsoftId: microsoftSubject }, 'nor the user record')

  // Again, the Microsoft subject now belongs to that user: the library's temporary session for the
  // Microsoft login is replaced by one for the user.
  const remaps = log.lines().filter((line) => line['msg'] === 'session remapped to the canonical user id').length
  const again = await providerSignIn('microsoft', email)
  const replaced = signedIn(t, again)
  t.equal(replaced.userId, password.userId)
  t.match(again.body['summary'], { linkedBy: 'account' })
  t.ok(log.lines().filter((line) => line['msg'] === 'session remapped to the canonical user id').length > remaps, 'the temporary session was replaced')
  const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: replaced.headers })
  t.equal(profile.json().id, password.userId)
  t.equal(profile.json().providerConnected, true)
})

test('identity: an unverified password account is not linked until its email is verified', async (t) => {
  const email = uniqueEmail('unverified')
  const password = `pw-${randomBytes(6).toString('hex')}`
  const squatter = await signUp(app, { email, password })
  providers.google.control.createAccount({ email, name: 'Real Owner' })
  const google = await providerSignIn('google', email)
  const owner = signedIn(t, google)
  t.not(owner.userId, squatter.userId, 'the Google login gets a user of its own')
  t.match(google.body['summary'], { linkedBy: 'new', newUser: true })
  t.equal((await record(owner.userId))?.emailVerified, true, 'the Google user holds the proven address')
  t.notOk((await record(squatter.userId))?.google, 'nothing of Google reaches the unverified account')

  // A password sign-up for an address a Google user holds gets a user of its own as well.
  const otherEmail = googleAccount('google-first')
  const googleFirst = signedIn(t, await providerSignIn('google', otherEmail))
  const late = await signUp(app, { email: otherEmail, password })
  t.not(late.userId, googleFirst.userId, 'an unverified password login never takes over a Google user')

  // Once the password account proves the address, its next sign-in joins the Google user.
  await verifyEmail(squatter.userId, email)
  const verified = await signIn(app, { email, password })
  t.equal(verified.userId, owner.userId, 'verified: linked')
})

test('identity: an unverified Microsoft email and an Apple private-relay address never link; the subject is the identity', async (t) => {
  const { email, session: existing } = await verifiedPasswordUser('links')
  oidcAccount('microsoft', 'links', { email, emailVerified: false })
  const microsoft = await providerSignIn('microsoft', email)
  t.not(signedIn(t, microsoft).userId, existing.userId, 'Microsoft did not vouch for the address')
  t.match(microsoft.body['summary'], { linkedBy: 'new' })

  const relayOwner = uniqueEmail('relay')
  oidcAccount('apple', 'relay', { email: relayOwner, privateRelay: true })
  const relay = providers.apple.control.visibleEmail(relayOwner) ?? ''
  t.match(relay, /@privaterelay\.appleid\.com$/)
  // Even a verified user holding that very address is not joined.
  const holder = new ObjectId()
  await users.insertOne({ _id: holder, email: relay, emailVerified: true, signedUpAt: new Date(), lastLoggedInAt: new Date() })
  const apple = await providerSignIn('apple', relayOwner)
  const appleUser = signedIn(t, apple)
  t.not(appleUser.userId, holder.toHexString())
  t.match(apple.body['summary'], { provider: 'apple', linkedBy: 'new', calendar: 'none' })
  t.equal((await record(appleUser.userId))?.name, 'relay Example', 'Apple\'s one-time name is kept')
  const appleAgain = await providerSignIn('apple', relayOwner)
  t.equal(signedIn(t, appleAgain).userId, appleUser.userId, 'the subject finds the user again')
  t.match(appleAgain.body['summary'], { linkedBy: 'account' })

  // An Apple login that shares the real, verified address does join.
  const shared = await verifiedPasswordUser('apple-shared')
  oidcAccount('apple', 'shared', { email: shared.email })
  t.equal(signedIn(t, await providerSignIn('apple', shared.email)).userId, shared.session.userId)
})

test('identity: a user with another Google account keeps it; the new Google account gets a user of its own', async (t) => {
  const email = googleAccount('two-accounts')
  const first = signedIn(t, await providerSignIn('google', email))
  // The record holds a Google account; another Google account with the same address (the address
  // moved to a new account at Google) does not take it over.
  await users.updateOne({ _id: new ObjectId(first.userId) }, { $set: { 'google.googleId': 'another-google-subject' } })
  const second = await providerSignIn('google', email)
  t.not(signedIn(t, second).userId, first.userId)
  t.equal(await users.countDocuments({ email, emailVerified: true }), 1, 'one record keeps the proven address')
})

test('identity: the provider account decides before the email; a verified owner of that email is not taken', async (t) => {
  // The verified password user owns the address the Google account now reports; the Google account
  // itself already belongs to another user (who signed up with it under an older address).
  const { email, session: emailOwner } = await verifiedPasswordUser('precedence')
  providers.google.control.createAccount({ email, name: 'Precedence Google' })
  const accountOwner = new ObjectId()
  const olderAddress = uniqueEmail('older-address')
  await users.insertOne({ _id: accountOwner, email: olderAddress, emailVerified: true, signedUpAt: new Date(), lastLoggedInAt: new Date(), google: { googleId: googleSub(email) } })
  const google = await providerSignIn('google', email)
  t.equal(signedIn(t, google).userId, accountOwner.toHexString(), 'the user holding the Google account')
  t.match(google.body['summary'], { linkedBy: 'account', newUser: false })
  t.notOk((await record(emailOwner.userId))?.google, 'the email\'s owner gets nothing of Google')
  t.equal((await record(accountOwner.toHexString()))?.email, olderAddress, 'the account owner keeps its address')
  t.equal(await users.countDocuments({ email, emailVerified: true }), 1, 'one record keeps the proven address')
})

test('identity: two concurrent first logins end with one user', async (t) => {
  const email = googleAccount('concurrent')
  const starts = await Promise.all([authorisationUrl('google'), authorisationUrl('google')])
  const redirects = await Promise.all(starts.map(async (start) => await authorize(start.url.toString(), email)))
  const answers = await Promise.all(redirects.map(async (redirect, index) => await postSignInUp('google', redirect, starts[index]?.pkceCodeVerifier)))
  const ids = answers.map((answer) => signedIn(t, answer).userId)
  t.equal(ids[0], ids[1], 'both sessions name one user')
  t.equal(await users.countDocuments({ 'google.googleId': googleSub(email) }), 1)

  // Google and Microsoft at once, for a person we have never seen.
  const both = uniqueEmail('both')
  providers.google.control.createAccount({ email: both, name: 'Both' })
  oidcAccount('microsoft', 'both', { email: both })
  const [google, microsoft] = await Promise.all([providerSignIn('google', both), providerSignIn('microsoft', both)])
  t.equal(signedIn(t, google).userId, signedIn(t, microsoft).userId, 'one user')
  t.equal(await users.countDocuments({ email: both }), 1)
})
