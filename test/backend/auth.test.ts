import { test } from 'tap'
import { waitFor } from '../processes.js'
import { ObjectId } from 'mongodb'
import supertokens from 'supertokens-node'
import Session from 'supertokens-node/recipe/session'
import { authFields, buildApp, signIn, signUp, startDependencies, uniqueEmail, WEB_URL } from '../helper.js'
import { decodeJwt } from 'jose'

// One app for the whole file: the session library keeps one configuration per process.
test('accounts and sessions', async (t) => {
  const deps = await startDependencies(t)
  const { app, log } = await buildApp(t, deps)
  const users = app.mongo.db.collection('users')

  await t.test('sign-up in header mode returns the specification\'s headers and a canonical id', async (t) => {
    const email = uniqueEmail('ada')
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/signup',
      headers: { 'sx-auth-mode': 'header' },
      payload: authFields({ name: 'Ada Lovelace', email, password: 'correct horse 1' })
    })
    t.equal(response.statusCode, 200)
    t.equal(response.json().status, 'OK')
    t.type(response.headers['sx-access-token'], 'string')
    t.type(response.headers['sx-refresh-token'], 'string')
    t.type(response.headers['front-token'], 'string')
    t.notOk(response.headers['set-cookie'], 'no cookies in header mode')

    const payload = decodeJwt(String(response.headers['sx-access-token'])) as { sub: string }
    t.match(payload.sub, /^[0-9a-f]{24}$/, 'the session carries the 24-hex user id')
    const stored = await users.findOne({ _id: new ObjectId(payload.sub) })
    t.ok(stored, 'the user record exists under the canonical id')
    t.equal(stored?.email, email)
    t.equal(stored?.name, 'Ada Lovelace')
    t.ok(stored?.signedUpAt instanceof Date)
    t.ok(stored?.lastLoggedInAt instanceof Date)

    const mapping = await supertokens.getUserIdMapping({ userId: payload.sub, userIdType: 'EXTERNAL' })
    t.equal(mapping.status, 'OK', 'an external user id mapping to the ObjectId exists')
  })

  await t.test('bearer calls reach protected routes; profile answers the record', async (t) => {
    const email = uniqueEmail('grace')
    const session = await signUp(app, { email, password: 'pw-for-grace-1', name: 'Grace' })
    const response = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
    t.equal(response.statusCode, 200)
    const profile = response.json()
    t.equal(profile.id, session.userId)
    t.equal(profile.email, email)
    t.equal(profile.name, 'Grace')
    t.equal(profile.providerConnected, false)
    t.match(profile.signedUpAt, /Z$/)
  })

  await t.test('sign-in with a differently cased email reaches the same user; signedUpAt is kept', async (t) => {
    const email = uniqueEmail('linus')
    const first = await signUp(app, { email, password: 'pw-for-linus-1', name: 'Linus' })
    const before = await users.findOne({ _id: new ObjectId(first.userId) })
    await new Promise((resolve) => setTimeout(resolve, 15))
    const second = await signIn(app, { email: `  ${email.toUpperCase()} `, password: 'pw-for-linus-1' })
    t.equal(second.userId, first.userId)
    const after = await users.findOne({ _id: new ObjectId(first.userId) })
    t.equal(after?.signedUpAt.getTime(), before?.signedUpAt.getTime(), 'signedUpAt unchanged')
    t.ok((after?.lastLoggedInAt.getTime() ?? 0) > (before?.lastLoggedInAt.getTime() ?? 0), 'lastLoggedInAt moves')
    t.equal(after?.name, 'Linus', 'sign-in does not erase the name')
    t.equal(await users.countDocuments({ email }), 1)
  })

  await t.test('wrong password and duplicate email are refused', async (t) => {
    const email = uniqueEmail('dup')
    await signUp(app, { email, password: 'pw-for-dup-1' })
    const wrong = await app.inject({ method: 'POST', url: '/api/auth/signin', payload: authFields({ email, password: 'nope-nope-1' }) })
    t.equal(wrong.json().status, 'WRONG_CREDENTIALS_ERROR')
    const duplicate = await app.inject({ method: 'POST', url: '/api/auth/signup', payload: authFields({ name: 'Dup', email: email.toUpperCase(), password: 'pw-for-dup-2' }) })
    t.equal(duplicate.json().status, 'FIELD_ERROR')
  })

  await t.test('sign-up needs a name (the form\'s fields are name, email and password); nothing is stored without one', async (t) => {
    for (const [label, fields] of [
      ['no name', { email: uniqueEmail('nameless'), password: 'pw-for-nameless-1' }],
      ['a blank name', { name: '   ', email: uniqueEmail('blank'), password: 'pw-for-blank-1' }]
    ] as const) {
      const answer = await app.inject({ method: 'POST', url: '/api/auth/signup', payload: authFields(fields) })
      t.equal(answer.json().status, 'FIELD_ERROR', label)
      t.same(answer.json().formFields.map((field: { id: string }) => field.id), ['name'], label)
      t.equal(await app.mongo.db.collection('users').countDocuments({ email: fields.email }), 0, `${label}: no user`)
    }
  })

  await t.test('sign-up reuses the user record that already owns the email', async (t) => {
    const email = uniqueEmail('existing')
    // A user record that predates this password account (for example created by a provider sign-in).
    const canonical = new ObjectId()
    await users.insertOne({ _id: canonical, email, signedUpAt: new Date('2024-01-01T00:00:00Z'), lastLoggedInAt: new Date('2024-01-01T00:00:00Z') })
    const session = await signUp(app, { email: email.toUpperCase(), password: 'pw-for-existing-1', name: 'Existing' })
    t.equal(session.userId, canonical.toHexString(), 'the session names the existing user')
    const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: session.headers })
    t.equal(profile.json().id, canonical.toHexString())
    t.equal(profile.json().signedUpAt, '2024-01-01T00:00:00.000Z', 'signedUpAt kept')
    t.equal(await users.countDocuments({ email }), 1, 'no second record')
  })

  await t.test('a session whose library id differs from the canonical id is remapped to it', async (t) => {
    const email = uniqueEmail('remap')
    const first = await signUp(app, { email, password: 'pw-for-remap-1', name: 'Remapped' })
    // The email's record now lives under another id (as after an earlier provider sign-in).
    const canonical = new ObjectId()
    const record = await users.findOneAndDelete({ _id: new ObjectId(first.userId) })
    await users.insertOne({ ...record, _id: canonical })

    const second = await signIn(app, { email, password: 'pw-for-remap-1' })
    t.equal(second.userId, canonical.toHexString(), 'the new session names the canonical user')
    const profile = await app.inject({ method: 'GET', url: '/api/user/profile', headers: second.headers })
    t.equal(profile.statusCode, 200)
    t.equal(profile.json().id, canonical.toHexString())
    t.ok(log.lines().some((line) => line.msg === 'session remapped to the canonical user id'), 'the remap is logged')

    const temporaryRefresh = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${second.refreshToken}` }
    })
    t.equal(temporaryRefresh.statusCode, 200, 'the refresh token handed out is the canonical session\'s')

    const third = await signIn(app, { email, password: 'pw-for-remap-1' })
    t.equal(third.userId, canonical.toHexString(), 'later sign-ins land on the canonical id directly')
  })

  await t.test('refresh through /api/auth/refresh in header mode rotates tokens; a replay revokes the session', async (t) => {
    const session = await signUp(app, { email: uniqueEmail('refresh'), password: 'pw-for-refresh-1' })
    const refreshed = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` }
    })
    t.equal(refreshed.statusCode, 200)
    const newAccess = String(refreshed.headers['sx-access-token'])
    const newRefresh = String(refreshed.headers['sx-refresh-token'])
    t.not(newAccess, session.accessToken)
    t.not(newRefresh, session.refreshToken)
    t.type(refreshed.headers['front-token'], 'string')

    // The first use of the new access token promotes the rotated refresh token.
    const withNew = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { authorization: `Bearer ${newAccess}` } })
    t.equal(withNew.statusCode, 200)

    const replay = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` }
    })
    t.equal(replay.statusCode, 401, 'the replayed refresh token is refused')
    const afterTheft = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${newRefresh}` }
    })
    t.equal(afterTheft.statusCode, 401, 'the whole session was revoked, so its newest refresh token fails too')
  })

  await t.test('cookie mode: cookies, and anti-CSRF on state-changing calls', async (t) => {
    const email = uniqueEmail('browser')
    const signedUp = await app.inject({
      method: 'POST',
      url: '/api/auth/signup',
      headers: { origin: WEB_URL, rid: 'emailpassword' },
      payload: authFields({ name: 'Browser', email, password: 'pw-for-browser-1' })
    })
    t.equal(signedUp.statusCode, 200)
    t.notOk(signedUp.headers['sx-access-token'], 'no header tokens for a browser')
    const cookies = signedUp.cookies
    const access = cookies.find((cookie) => cookie.name === 'sAccessToken')
    const refresh = cookies.find((cookie) => cookie.name === 'sRefreshToken')
    t.ok(access?.httpOnly, 'access cookie is httpOnly')
    t.ok(refresh?.httpOnly, 'refresh cookie is httpOnly')
    const cookieHeader = `sAccessToken=${access?.value}`

    const read = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { cookie: cookieHeader } })
    t.equal(read.statusCode, 200, 'a GET needs no anti-CSRF header')

    const forged = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { cookie: cookieHeader } })
    t.equal(forged.statusCode, 401, 'a cross-site style POST without the custom header is refused')
    const stillSignedIn = await app.inject({ method: 'GET', url: '/api/user/profile', headers: { cookie: cookieHeader } })
    t.equal(stillSignedIn.statusCode, 200, 'and the refused call changed nothing')

    const signedOut = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { cookie: cookieHeader, rid: 'session' } })
    t.equal(signedOut.statusCode, 200)
    t.equal(signedOut.json().status, 'OK')
    const cleared = signedOut.cookies.filter((cookie) => cookie.name === 'sAccessToken' || cookie.name === 'sRefreshToken')
    t.equal(cleared.length, 2, 'both session cookies are cleared')
    for (const cookie of cleared) t.equal(cookie.value, '')
    const refreshAfter = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { cookie: `sRefreshToken=${refresh?.value}`, rid: 'session' }
    })
    t.equal(refreshAfter.statusCode, 401, 'the revoked session cannot be refreshed')
  })

  await t.test('sign-out in header mode succeeds with no provider linked and revokes the session', async (t) => {
    const session = await signUp(app, { email: uniqueEmail('bye'), password: 'pw-for-bye-1' })
    const response = await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...session.headers, 'sx-auth-mode': 'header' } })
    t.equal(response.statusCode, 200)
    t.equal(response.json().status, 'OK')
    const refresh = await app.inject({
      method: 'POST',
      url: '/api/auth/refresh',
      headers: { 'sx-auth-mode': 'header', authorization: `Bearer ${session.refreshToken}` }
    })
    t.equal(refresh.statusCode, 401, 'the refresh token is dead')
    const handles = await Session.getAllSessionHandlesForUser(session.userId)
    t.same(handles, [], 'no session is left for the user')
    // No Sync service runs in this file: sign-out still succeeded, and the watch stop is retried.
    t.ok(await waitFor(() => log.lines().some((line) => line.msg === 'sign-out: Sync did not stop the user\'s watches; will retry'), 5000))
    t.equal(await app.outbox.pending(session.userId, 'watchStop'), 1, 'the stop waits in the outbox')
  })

  await t.test('forgot password answers the same whether or not the account exists; the reset link is rewritten', async (t) => {
    const email = uniqueEmail('forgot')
    await signUp(app, { email, password: 'pw-for-forgot-1' })
    const known = await app.inject({ method: 'POST', url: '/api/auth/user/password/reset/token', payload: authFields({ email }) })
    const unknown = await app.inject({ method: 'POST', url: '/api/auth/user/password/reset/token', payload: authFields({ email: uniqueEmail('nobody') }) })
    t.equal(known.statusCode, 200)
    t.equal(unknown.statusCode, 200)
    t.same(known.json(), unknown.json(), 'same answer for both')
    t.same(known.json(), { status: 'OK' })

    // The token and the mail are made after the answer (the same timing for every email).
    const linkLogged = () => log.lines().filter((line) => line.msg === 'password reset link (not delivered in test)')
    t.ok(await waitFor(() => linkLogged().length > 0, 5000), 'the link follows the answer')
    const logged = linkLogged()
    t.equal(logged.length, 1, 'one link, for the existing account only')
    const link = new URL(String(logged[0]?.passwordResetLink))
    t.equal(link.origin, WEB_URL)
    t.equal(link.pathname, '/day')
    t.equal(link.searchParams.get('auth'), 'reset')
    const token = link.searchParams.get('token') ?? ''
    t.ok(token.length > 10)

    const reset = await app.inject({
      method: 'POST',
      url: '/api/auth/user/password/reset',
      payload: { token, ...authFields({ password: 'a-brand-new-pw-2' }) }
    })
    t.equal(reset.json().status, 'OK')
    const old = await app.inject({ method: 'POST', url: '/api/auth/signin', payload: authFields({ email, password: 'pw-for-forgot-1' }) })
    t.equal(old.json().status, 'WRONG_CREDENTIALS_ERROR')
    const fresh = await signIn(app, { email, password: 'a-brand-new-pw-2' })
    t.match(fresh.userId, /^[0-9a-f]{24}$/)
  })

  await t.test('email-verification links are not rewritten', async (t) => {
    const session = await signUp(app, { email: uniqueEmail('verify'), password: 'pw-for-verify-1' })
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/user/email/verify/token',
      headers: { ...session.headers, 'sx-auth-mode': 'header', rid: 'emailverification' }
    })
    t.equal(response.statusCode, 200)
    t.equal(response.json().status, 'OK')
    const logged = log.lines().filter((line) => line.msg === 'email verification link (not delivered in test)')
    t.equal(logged.length, 1)
    const link = new URL(String(logged[0]?.emailVerifyLink))
    t.not(link.pathname, '/day', 'not sent to the reset route')
    t.equal(link.searchParams.get('auth'), null, 'no auth modal parameter added')
    t.ok((link.searchParams.get('token') ?? '').length > 10, 'the library\'s own link, with its token')
  })

  await t.test('protected routes answer 401 without a session, and to a forged token', async (t) => {
    for (const url of ['/api/user/profile']) {
      const none = await app.inject({ method: 'GET', url })
      t.equal(none.statusCode, 401, `${url} without a session`)
      const forged = await app.inject({ method: 'GET', url, headers: { authorization: 'Bearer not.a.token' } })
      t.equal(forged.statusCode, 401, `${url} with a forged token`)
    }
  })

  await t.test('credentials never reach the log', async (t) => {
    const session = await signUp(app, { email: uniqueEmail('quiet'), password: 'pw-that-must-not-leak-7' })
    await app.inject({ method: 'GET', url: '/api/user/profile', headers: { ...session.headers, cookie: 'sAccessToken=cookie-secret-value' } })
    const text = log.text()
    t.notOk(text.includes(session.accessToken), 'no access token')
    t.notOk(text.includes(session.refreshToken), 'no refresh token')
    t.notOk(text.includes('cookie-secret-value'), 'no cookie')
    t.notOk(text.includes('pw-that-must-not-leak-7'), 'no password')
  })
})
