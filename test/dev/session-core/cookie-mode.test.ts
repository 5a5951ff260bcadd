import { test } from 'tap'
import { CookieClient, formFields, jwtPayload, startHarness, uniqueEmail } from './harness.js'
import { startTarget } from './target.js'

const PASSWORD = 'correct-horse-9'

test('cookie mode with anti-CSRF through supertokens-node', async (t) => {
  const target = await startTarget(t)
  const { baseUrl } = await startHarness(t, target)

  async function signedUpBrowser () {
    const browser = new CookieClient(baseUrl)
    const result = await browser.request('POST', '/auth/signup', formFields({ email: uniqueEmail('cookie'), password: PASSWORD, name: 'Grace' }))
    if (result.body['status'] !== 'OK') throw new Error(`sign-up failed: ${JSON.stringify(result.body)}`)
    return { browser, userId: (result.body['user'] as { id: string }).id }
  }

  await t.test('sign-up sets session cookies and an anti-CSRF token bound to the access token', async (t) => {
    const { browser, userId } = await signedUpBrowser()
    const access = browser.cookies.get('sAccessToken')
    const refresh = browser.cookies.get('sRefreshToken')
    t.ok(access, 'sAccessToken cookie')
    t.ok(refresh, 'sRefreshToken cookie')
    t.equal(refresh?.path, '/auth/session/refresh', 'refresh cookie only goes to the refresh route')
    t.type(browser.antiCsrf, 'string', 'anti-csrf response header')
    t.equal(jwtPayload(access?.value ?? '')['antiCsrfToken'], browser.antiCsrf, 'the access token carries the same anti-CSRF token')

    const me = await browser.request('GET', '/me')
    t.equal(me.status, 200)
    t.equal(me.body['userId'], userId)
  })

  await t.test('a state-changing request without the anti-CSRF header is refused', async (t) => {
    const { browser } = await signedUpBrowser()
    const refused = await browser.request('POST', '/me/claims', { theme: 'dark' }, { antiCsrf: false })
    t.equal(refused.status, 401)
    t.equal(refused.body['message'], 'try refresh token')
    const allowed = await browser.request('POST', '/me/claims', { theme: 'dark' })
    t.equal(allowed.status, 200)
    t.equal(jwtPayload(browser.cookies.get('sAccessToken')?.value ?? '')['theme'], 'dark', 'regenerated access token cookie carries the claim')
  })

  await t.test('refresh needs the anti-CSRF token and rotates both cookies and the token', async (t) => {
    const { browser } = await signedUpBrowser()
    const oldRefresh = browser.cookies.get('sRefreshToken')?.value
    const oldAntiCsrf = browser.antiCsrf

    const saved = new Map(browser.cookies)
    const refused = await browser.request('POST', '/auth/session/refresh', undefined, { antiCsrf: false })
    t.equal(refused.status, 401, 'refresh without anti-CSRF')
    t.equal(refused.body['message'], 'unauthorised')
    t.equal(browser.cookies.has('sRefreshToken'), false, 'the SDK clears the cookies of a refused refresh')
    // The core changed nothing: the same refresh token with its anti-CSRF token still works.
    for (const [name, cookie] of saved) browser.cookies.set(name, cookie)

    const refreshed = await browser.request('POST', '/auth/session/refresh')
    t.equal(refreshed.status, 200)
    t.not(browser.cookies.get('sRefreshToken')?.value, oldRefresh, 'refresh cookie rotated')
    t.not(browser.antiCsrf, oldAntiCsrf, 'anti-CSRF token rotated')
    const claims = jwtPayload(browser.cookies.get('sAccessToken')?.value ?? '')
    t.equal(claims['antiCsrfToken'], browser.antiCsrf)
    t.type(claims['parentRefreshTokenHash1'], 'string')

    const me = await browser.request('GET', '/me/checked')
    t.equal(me.status, 200, 'first use of the refreshed access token')
    t.equal(jwtPayload(browser.cookies.get('sAccessToken')?.value ?? '')['parentRefreshTokenHash1'], null, 'replacement cookie set')
  })

  await t.test('theft detection in cookie mode revokes the session', async (t) => {
    const { browser } = await signedUpBrowser()
    const stolen = new CookieClient(baseUrl)
    for (const [name, cookie] of browser.cookies) stolen.cookies.set(name, { ...cookie })
    stolen.antiCsrf = browser.antiCsrf

    t.equal((await browser.request('POST', '/auth/session/refresh')).status, 200)
    t.equal((await browser.request('GET', '/me')).status, 200)

    const replay = await stolen.request('POST', '/auth/session/refresh')
    t.equal(replay.status, 401)
    t.equal(replay.body['message'], 'token theft detected')
    t.equal((await browser.request('GET', '/me/checked')).status, 401, 'the victim session is revoked')
    t.equal((await browser.request('POST', '/auth/session/refresh')).status, 401)
  })

  await t.test('sign-out clears cookies and revokes the session', async (t) => {
    const { browser } = await signedUpBrowser()
    const access = browser.cookies.get('sAccessToken')?.value
    const out = await browser.request('POST', '/auth/signout')
    t.equal(out.status, 200)
    t.equal(browser.cookies.has('sAccessToken'), false, 'access cookie cleared')
    t.equal(browser.cookies.has('sRefreshToken'), false, 'refresh cookie cleared')
    const replayed = new CookieClient(baseUrl)
    replayed.cookies.set('sAccessToken', { value: access ?? '', path: '/' })
    t.equal((await replayed.request('GET', '/me/checked')).status, 401, 'checkDatabase after sign-out')
  })
})
