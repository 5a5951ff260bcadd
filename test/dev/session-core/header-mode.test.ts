import { test } from 'tap'
import Session from 'supertokens-node/recipe/session'
import { formFields, HeaderClient, jwtHeader, jwtPayload, startHarness, uniqueEmail } from './harness.js'
import { startTarget } from './target.js'

const PASSWORD = 'correct-horse-9'

test('header mode: accounts and sessions through supertokens-node', async (t) => {
  const target = await startTarget(t)
  const { baseUrl } = await startHarness(t, target)

  async function signUp (email: string) {
    const client = new HeaderClient(baseUrl)
    const result = await client.request('POST', '/auth/signup', formFields({ email, password: PASSWORD, name: 'Ada' }))
    return { client, result }
  }

  await t.test('sign-up with a name field creates the user and a session', async (t) => {
    const email = uniqueEmail('signup')
    const { client, result } = await signUp(email)
    t.equal(result.status, 200)
    t.equal(result.body['status'], 'OK')
    const user = result.body['user'] as { id: string, emails: string[], loginMethods: Array<{ recipeId: string, verified: boolean }> }
    t.same(user.emails, [email.toLowerCase()], 'email stored normalised')
    t.equal(user.loginMethods[0]?.recipeId, 'emailpassword')
    t.equal(user.loginMethods[0]?.verified, false)
    t.ok(client.accessToken, 'access token in st-access-token')
    t.ok(client.refreshToken, 'refresh token in st-refresh-token')
    t.ok(result.headers.get('front-token'), 'front-token header')

    const header = jwtHeader(client.accessToken ?? '')
    t.equal(header['alg'], 'RS256')
    t.equal(header['version'], '5')
    t.match(String(header['kid']), /^d-/, 'dynamic signing key by default')
    const claims = jwtPayload(client.accessToken ?? '')
    t.equal(claims['sub'], user.id)
    t.equal(claims['rsub'], user.id)
    t.equal(claims['tId'], 'public')
    t.type(claims['sessionHandle'], 'string')
    t.type(claims['refreshTokenHash1'], 'string')
    t.type(claims['exp'], 'number')
    t.type(claims['iat'], 'number')
    t.equal(claims['parentRefreshTokenHash1'], null, 'a new session has no parent refresh token')
    t.equal(claims['antiCsrfToken'], null, 'header mode needs no anti-CSRF token')

    const me = await client.request('GET', '/me')
    t.equal(me.status, 200)
    t.equal(me.body['userId'], user.id)
  })

  await t.test('duplicate email is refused, whatever its case', async (t) => {
    const email = uniqueEmail('dup')
    t.equal((await signUp(email)).result.body['status'], 'OK')
    const again = await signUp(email.toUpperCase())
    t.equal(again.result.status, 200)
    t.equal(again.result.body['status'], 'FIELD_ERROR')
    t.match(JSON.stringify(again.result.body), /already exists/)
    t.equal(again.client.accessToken, undefined, 'no session for a refused sign-up')
  })

  await t.test('sign-in, and a wrong password or unknown email is refused', async (t) => {
    const email = uniqueEmail('signin')
    const { result: signUpResult } = await signUp(email)
    const userId = (signUpResult.body['user'] as { id: string }).id

    const client = new HeaderClient(baseUrl)
    const ok = await client.request('POST', '/auth/signin', formFields({ email, password: PASSWORD }))
    t.equal(ok.body['status'], 'OK')
    t.equal((ok.body['user'] as { id: string }).id, userId)
    t.ok(client.accessToken)

    const wrong = new HeaderClient(baseUrl)
    const wrongResult = await wrong.request('POST', '/auth/signin', formFields({ email, password: 'wrong-password-1' }))
    t.equal(wrongResult.body['status'], 'WRONG_CREDENTIALS_ERROR')
    t.equal(wrong.accessToken, undefined)

    const unknown = await new HeaderClient(baseUrl).request('POST', '/auth/signin', formFields({ email: uniqueEmail('nobody'), password: PASSWORD }))
    t.equal(unknown.body['status'], 'WRONG_CREDENTIALS_ERROR')
  })

  await t.test('a protected route refuses a missing or tampered token', async (t) => {
    const { client } = await signUp(uniqueEmail('protected'))
    t.equal((await new HeaderClient(baseUrl).request('GET', '/me')).status, 401, 'no token')
    const token = client.accessToken ?? ''
    const [header, payload, signature] = token.split('.')
    const claims = jwtPayload(token)
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${signature}`
    const result = await client.request('GET', '/me', undefined, forged)
    t.equal(result.status, 401)
    t.equal(result.body['message'], 'try refresh token')
    t.not(payload, undefined)
  })

  await t.test('refresh rotates tokens; the first use of the new access token promotes it', async (t) => {
    const { client, result } = await signUp(uniqueEmail('refresh'))
    const userId = (result.body['user'] as { id: string }).id
    const firstAccess = client.accessToken ?? ''
    const firstRefresh = client.refreshToken ?? ''

    const refreshed = await client.refresh()
    t.equal(refreshed.status, 200)
    t.not(client.refreshToken, firstRefresh, 'refresh token rotated')
    t.not(client.accessToken, firstAccess, 'new access token')
    const refreshedClaims = jwtPayload(client.accessToken ?? '')
    t.equal(refreshedClaims['sessionHandle'], jwtPayload(firstAccess)['sessionHandle'], 'same session')
    t.type(refreshedClaims['parentRefreshTokenHash1'], 'string', 'new access token names its parent refresh token')

    const beforeUse = client.accessToken
    const me = await client.request('GET', '/me')
    t.equal(me.status, 200)
    t.equal(me.body['userId'], userId)
    t.not(client.accessToken, beforeUse, 'first use answers with a replacement access token')
    t.equal(jwtPayload(client.accessToken ?? '')['parentRefreshTokenHash1'], null, 'replacement has no parent')
    t.ok(Number(jwtPayload(client.accessToken ?? '')['exp']) >= Number(refreshedClaims['exp']), 'replacement gets a full lifetime')
    t.equal(jwtPayload(client.accessToken ?? '')['refreshTokenHash1'], refreshedClaims['refreshTokenHash1'], 'same refresh token')

    const again = await client.request('GET', '/me')
    t.equal(again.status, 200)
    t.equal(again.headers.get('st-access-token'), null, 'no further replacement')
  })

  await t.test('refreshing twice with the same token before using it is not theft', async (t) => {
    const { client } = await signUp(uniqueEmail('race'))
    const original = client.refreshToken
    const first = await client.refresh(original)
    const second = await client.refresh(original)
    t.equal(first.status, 200)
    t.equal(second.status, 200)
    t.equal((await client.request('GET', '/me/checked')).status, 200)
  })

  await t.test('replaying a rotated refresh token is theft and revokes the session', async (t) => {
    const { client } = await signUp(uniqueEmail('theft'))
    const stolen = client.refreshToken ?? ''
    const handle = String(jwtPayload(client.accessToken ?? '')['sessionHandle'])

    t.equal((await client.refresh()).status, 200)
    t.equal((await client.request('GET', '/me')).status, 200, 'new tokens used: rotation complete')
    const legitimateRefresh = client.refreshToken

    const attacker = new HeaderClient(baseUrl)
    const replay = await attacker.refresh(stolen)
    t.equal(replay.status, 401)
    t.equal(replay.body['message'], 'token theft detected')
    t.equal(attacker.accessToken, undefined, 'the replay gets no tokens')

    t.equal(await Session.getSessionInformation(handle), undefined, 'session is gone from the core')
    const legitimate = await client.refresh(legitimateRefresh)
    t.equal(legitimate.status, 401, 'the rotated refresh token no longer works either')
    t.equal((await client.request('GET', '/me/checked')).status, 401, 'checkDatabase sees the revoked session')
  })

  await t.test('replaying a refresh token whose child was used to refresh is theft too', async (t) => {
    const { client } = await signUp(uniqueEmail('theft2'))
    const stolen = client.refreshToken
    t.equal((await client.refresh()).status, 200)
    t.equal((await client.refresh()).status, 200, 'the child refresh token is promoted and rotated')
    const replay = await new HeaderClient(baseUrl).refresh(stolen)
    t.equal(replay.status, 401)
    t.equal(replay.body['message'], 'token theft detected')
    t.equal((await client.refresh()).status, 401, 'session revoked')
  })

  await t.test('sign-out revokes the session; checkDatabase notices, a plain verify cannot', async (t) => {
    const { client } = await signUp(uniqueEmail('signout'))
    const access = client.accessToken
    const refresh = client.refreshToken
    t.equal((await client.request('GET', '/me/checked')).status, 200)

    const out = await client.request('POST', '/auth/signout')
    t.equal(out.status, 200)
    t.equal(out.body['status'], 'OK')
    t.equal(client.accessToken, undefined, 'tokens cleared')

    t.equal((await client.request('GET', '/me/checked', undefined, access)).status, 401, 'checkDatabase after sign-out')
    t.equal((await client.request('GET', '/me', undefined, access)).status, 200, 'the signed JWT alone stays valid until it expires')
    t.equal((await client.refresh(refresh)).status, 401, 'refresh after sign-out')
  })

  await t.test('session data, access token payload updates and session listing', async (t) => {
    const { client, result } = await signUp(uniqueEmail('data'))
    const userId = (result.body['user'] as { id: string }).id
    const handle = String(jwtPayload(client.accessToken ?? '')['sessionHandle'])

    const merged = await client.request('POST', '/me/claims', { plan: 'pro', nested: { a: 1 } })
    t.equal(merged.status, 200)
    t.equal(jwtPayload(client.accessToken ?? '')['plan'], 'pro', 'regenerated access token carries the claim')
    t.equal((await client.request('GET', '/me')).body['payload'] !== undefined, true)

    t.ok(await Session.updateSessionDataInDatabase(handle, { theme: 'dark' }))
    const info = await Session.getSessionInformation(handle)
    t.same(info?.sessionDataInDatabase, { theme: 'dark' })
    t.equal(info?.customClaimsInAccessTokenPayload['plan'], 'pro')
    t.equal(info?.userId, userId)

    t.equal((await client.refresh()).status, 200)
    t.equal(jwtPayload(client.accessToken ?? '')['plan'], 'pro', 'claims survive a refresh')

    t.equal((await client.request('GET', '/me')).status, 200, 'refreshed token used once: promoted')
    // A payload changed outside the request reaches the client at its next database-checked call.
    t.ok(await Session.mergeIntoAccessTokenPayload(handle, { plan: 'team' }))
    const beforeCheck = client.accessToken
    t.equal((await client.request('GET', '/me')).body['payload'] !== undefined, true)
    t.equal(jwtPayload(client.accessToken ?? '')['plan'], 'pro', 'a plain verify keeps the signed payload')
    t.equal((await client.request('GET', '/me/checked')).status, 200)
    t.not(client.accessToken, beforeCheck, 'checkDatabase answered with a new access token')
    t.equal(jwtPayload(client.accessToken ?? '')['plan'], 'team', 'carrying the stored payload')

    const other = await new HeaderClient(baseUrl).request('POST', '/auth/signin', formFields({ email: String((result.body['user'] as { emails: string[] }).emails[0]), password: PASSWORD }))
    t.equal(other.body['status'], 'OK')
    const handles = await Session.getAllSessionHandlesForUser(userId)
    t.equal(handles.length, 2)
    t.ok(handles.includes(handle))
    const revoked = await Session.revokeAllSessionsForUser(userId)
    t.same([...revoked].sort(), [...handles].sort())
    t.same(await Session.getAllSessionHandlesForUser(userId), [])
  })
})
