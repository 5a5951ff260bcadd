// A provider connect finishes only in the browser that began it: the begin sets a cookie holding
// the attempt's binder, the backend's /sync proxy passes it to Sync, and a callback reached
// anywhere else (a link sent to someone who approves the genuine consent) stores nothing. The
// proxy vouches only for a live session and passes no header of the caller's that names a user.
import { test } from 'tap'
import { signUp, uniqueEmail } from '../helper.js'
import { beginAndConsent, startFullStack, userWithGoogleAccount, userWithMicrosoftAccount } from './stack.js'

test('connect binder', async (t) => {
  // One stack for the file: a process's session library serves one backend's origins and providers.
  const stack = await startFullStack(t, { microsoft: true })

  await t.test('the cookie, a victim\'s browser, forged headers, a signed-out session, then the browser that began', async (t) => {
    const app = stack.backend.app
    const attacker = await userWithGoogleAccount(stack, 'mallory')
    const calendars = async () => (await app.inject({ method: 'GET', url: '/api/calendars', headers: attacker.headers })).json<{ calendars: Array<{ provider: string }> }>().calendars

    const begun = await app.inject({ method: 'POST', url: '/api/auth/connections/begin', headers: attacker.headers, payload: { provider: 'google', intent: 'connect' } })
    t.equal(begun.statusCode, 200)
    t.notOk('browserBinder' in begun.json(), 'the binder is not in the body a script could read')
    t.match(begun.cookies, [{ name: 'calendar_connect_google', value: /^[A-Za-z0-9_-]{43}$/, path: '/sync/oauth/', httpOnly: true, sameSite: 'Lax', maxAge: 600 }])

    // The victim approves with their own Google account, in a browser without the cookie.
    const victimEmail = uniqueEmail('victim')
    stack.google.control.createAccount({ email: victimEmail, name: 'victim', timeZone: 'Europe/Berlin' })
    const victims = await beginAndConsent(stack, { ...attacker, email: victimEmail }, { provider: 'google', intent: 'connect' })
    const landed = await fetch(victims.callback, { redirect: 'manual' })
    const location = new URL(landed.headers.get('location') ?? 'about:blank')
    t.equal(location.searchParams.get('status'), 'wrong_browser', 'a callback without the cookie ends as wrong_browser')
    t.match(String(landed.headers.get('set-cookie')), /^calendar_connect_google=; Max-Age=0; Path=\/sync\/oauth\/; HttpOnly; SameSite=Lax/, 'and the browser is told to forget any binder')
    t.same(await stack.sync.syncConnections.listByUser(attacker.userId), [], 'nothing is stored')
    t.same((await calendars()).filter((calendar) => calendar.provider === 'google'), [], 'the victim\'s calendars are not listed')

    // A binder sent as a header of the caller's own is not passed on: only the cookie's counts.
    const forged = await beginAndConsent(stack, attacker, { provider: 'google', intent: 'connect' })
    const binder = forged.cookie.split('=')[1] ?? ''
    const headerOnly = await fetch(forged.callback, { redirect: 'manual', headers: { 'x-calendar-connect-binder': binder } })
    t.equal(new URL(headerOnly.headers.get('location') ?? '').searchParams.get('status'), 'wrong_browser', 'a binder header from outside is stripped')

    // Another user signed in and out again in the browser that began: a signed-out session vouches
    // for no one (with a live one, Sync would refuse the browser as another user's: mismatch).
    const other = await signUp(app, { email: uniqueEmail('other'), password: 'pw-for-other-1' })
    const signedOut = await beginAndConsent(stack, attacker, { provider: 'google', intent: 'connect' })
    t.equal((await app.inject({ method: 'POST', url: '/api/auth/signout', headers: { ...other.headers, 'sx-auth-mode': 'header' } })).statusCode, 200)
    const afterSignOut = await fetch(signedOut.callback, { redirect: 'manual', headers: { cookie: signedOut.cookie, authorization: `Bearer ${other.accessToken}`, 'x-calendar-session-user': other.userId } })
    t.equal(new URL(afterSignOut.headers.get('location') ?? '').searchParams.get('status'), 'connected',
      'the signed-out session and the caller\'s own x-calendar-session-user name no one; the cookie finishes it')
    t.equal((await stack.sync.syncConnections.listByUser(attacker.userId)).length, 1, 'one connection, the attacker\'s own Google account')

    const live = await signUp(app, { email: uniqueEmail('live'), password: 'pw-for-live-1' })
    const withLive = await beginAndConsent(stack, attacker, { provider: 'google', intent: 'reconnect' })
    const mismatch = await fetch(withLive.callback, { redirect: 'manual', headers: { cookie: withLive.cookie, authorization: `Bearer ${live.accessToken}` } })
    t.equal(new URL(mismatch.headers.get('location') ?? '').searchParams.get('status'), 'mismatch', 'a live session of another user is a mismatch')
  })

  await t.test('a Google and a Microsoft connect begun side by side each finish', async (t) => {
    const user = await userWithMicrosoftAccount(stack, 'both')
    stack.google.control.createAccount({ email: user.email, name: 'both', timeZone: 'Europe/Berlin' })
    const google = await beginAndConsent(stack, user, { provider: 'google', intent: 'connect' })
    const microsoft = await beginAndConsent(stack, user, { provider: 'microsoft', intent: 'connect' })
    const cookie = `${google.cookie}; ${microsoft.cookie}`
    for (const [provider, begun] of [['google', google], ['microsoft', microsoft]] as const) {
      const landed = await fetch(begun.callback, { redirect: 'manual', headers: { cookie } })
      t.equal(new URL(landed.headers.get('location') ?? '').searchParams.get('status'), 'connected', `${provider} connected`)
    }
  })

  await t.test('the identity rules of the direct connect hold through Sync: an account of another email is a mismatch, one another user holds a conflict', async (t) => {
    const app = stack.backend.app
    const owner = await userWithGoogleAccount(stack, 'owner')
    const landed = async (user: Parameters<typeof beginAndConsent>[1]) => {
      const begun = await beginAndConsent(stack, user, { provider: 'google', intent: 'connect' })
      return new URL((await fetch(begun.callback, { redirect: 'manual', headers: { cookie: begun.cookie } })).headers.get('location') ?? '').searchParams.get('status')
    }

    t.equal(await landed(owner), 'connected')
    const linked = await app.users.findById(owner.userId)
    t.ok(linked?.google?.googleId, 'the Google account is the owner\'s now, as after a direct connect')

    const someoneElse = await signUp(app, { email: uniqueEmail('else'), password: 'pw-for-else-1' })
    t.equal(await landed({ ...someoneElse, email: owner.email }), 'conflict', 'another user connecting the owner\'s Google account')
    t.same(await stack.sync.syncConnections.listByUser(someoneElse.userId), [], 'and nothing is stored for them')

    const otherEmail = uniqueEmail('other-address')
    stack.google.control.createAccount({ email: otherEmail, name: 'other', timeZone: 'Europe/Berlin' })
    t.equal(await landed({ ...someoneElse, email: otherEmail }), 'mismatch', 'a Google account whose email is not the user\'s')
    t.same(await stack.sync.syncConnections.listByUser(someoneElse.userId), [], 'nothing stored')
    t.notOk((await app.users.findById(someoneElse.userId))?.google?.googleId, 'and the account is not linked')
  })
})
