// A credential the backend obtained at a provider sign-in (or a connect from a signed-in session)
// handed to the Sync service: the mode decides whether the connection is created and imported,
// repaired, or kept and pulled; a repeated hand-over changes nothing.
import { randomUUID } from 'node:crypto'
import { test } from 'tap'
import { SYNC_PATHS } from '../../../schemas/sync/index.js'
import type { CredentialHandOver } from '../../../schemas/sync/index.js'
import { newUserId } from '../helper.js'
import { internalPostAs, revokeAtProviderAndPull } from '../provider-harness.js'
import { ALICE, CLIENT_ID, SAMPLE_EVENTS, startStack } from './harness.js'
import type { Stack } from './harness.js'
import { decodeJwt } from 'jose'

/** A refresh token of ALICE's, obtained the way the backend does it (consent and code exchange). */
async function refreshTokenOf (stack: Stack, email: string): Promise<{ refreshToken: string, subject: string }> {
  const authorize = new URL(`${stack.google.url}/o/oauth2/v2/auth`)
  for (const [key, value] of Object.entries({ client_id: CLIENT_ID, redirect_uri: `${stack.syncUrl}/oauth/google/callback`, response_type: 'code', scope: 'openid email https://www.googleapis.com/auth/calendar', access_type: 'offline', prompt: 'consent', login_hint: email, approve: '1' })) authorize.searchParams.set(key, value)
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? ''
  const token = await fetch(`${stack.google.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: CLIENT_ID, client_secret: 'GOCSPX-sync-test-secret', redirect_uri: `${stack.syncUrl}/oauth/google/callback` })
  })
  const body = await token.json() as { refresh_token: string, id_token: string }
  const subject = decodeJwt(body.id_token) as { sub: string }
  return { refreshToken: body.refresh_token, subject: subject.sub }
}

async function handOver (stack: Stack, userId: string, body: CredentialHandOver) {
  return await internalPostAs(stack, userId, SYNC_PATHS.credentials(userId), body)
}

test('a sign-in\'s credential: SIGNUP imports, SIGNIN_INCREMENTAL pulls, RECONNECT_REPAIR repairs; repeats change nothing', async (t) => {
  const stack = await startStack(t, { accounts: [{ email: ALICE, timeZone: 'Europe/Berlin' }] })
  stack.google.control.insertEvent(ALICE, SAMPLE_EVENTS.timed)
  const { refreshToken, subject } = await refreshTokenOf(stack, ALICE)
  const userId = newUserId()
  const base = { provider: 'google' as const, providerAccountId: subject, refreshToken, scopes: ['openid', 'email', 'https://www.googleapis.com/auth/calendar'] }

  const signUp = { ...base, mode: 'SIGNUP' as const, idempotencyKey: randomUUID() }
  const first = await handOver(stack, userId, signUp)
  t.equal(first.statusCode, 200)
  t.match(first.json(), { created: true, queued: 'import' })
  const again = await handOver(stack, userId, signUp)
  t.same(again.json(), first.json(), 'a repeated hand-over is answered as the first one')
  t.equal((await stack.sync.syncConnections.listByUser(userId)).length, 1, 'and made no second connection')
  await stack.drain()
  const [connection] = await stack.sync.syncConnections.listByUser(userId)
  t.equal(connection?.state, 'healthy', 'imported and caught up')
  t.ok([...stack.backend.events(ALICE).values()].some((event) => event.content?.title === 'Dentist'), 'the calendar reached the backend')
  t.ok((await stack.sync.syncWatches.listByUser(userId)).length > 0, 'a channel watches the calendar')

  // The next sign-in: the channel is gone (it lapsed); it is started again and the calendar pulled.
  for (const watch of await stack.sync.syncWatches.listByUser(userId)) await stack.sync.syncWatches.remove(watch._id)
  const incremental = await handOver(stack, userId, { ...base, mode: 'SIGNIN_INCREMENTAL', idempotencyKey: randomUUID() })
  t.match(incremental.json(), { connectionId: connection?._id.toHexString(), created: false, queued: 'incremental' })
  t.ok((await stack.sync.syncWatches.listByUser(userId)).length > 0, 'the missing channel was started')
  t.match(await stack.sync.syncJobQueue.list({ type: 'pull' }), [{ connectionId: connection?._id.toHexString() }])
  await stack.drain()

  // The next sign-in: the channel's record is there but it expired; a new channel replaces it.
  const [expired] = await stack.sync.syncWatches.listByUser(userId)
  await stack.sync.syncWatches.renew(expired?._id ?? '', new Date(stack.clock.now().getTime() - 60_000))
  await handOver(stack, userId, { ...base, mode: 'SIGNIN_INCREMENTAL', idempotencyKey: randomUUID() })
  const replaced = await stack.sync.syncWatches.listByUser(userId)
  t.equal(replaced.length, 1, 'one channel watches the calendar')
  t.not(replaced[0]?._id, expired?._id, 'a new channel, not the expired one')
  t.ok((replaced[0]?.expiresAt.getTime() ?? 0) > stack.clock.now().getTime(), 'that expires in the future')
  t.equal(stack.google.control.listChannels().find((channel) => channel.id === expired?._id)?.state, 'stopped', 'the expired channel is stopped at Google')
  t.equal(stack.google.control.listChannels().find((channel) => channel.id === replaced[0]?._id)?.state, 'active', 'the new one runs')
  await stack.drain()

  // Revoked at Google: the connection needs the user; the backend is told; a new sign-in repairs it.
  await revokeAtProviderAndPull(stack, stack.google.control, ALICE, userId)
  t.match(await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''), { state: 'actionRequired', reason: 'authorizationRevoked' })
  t.same(stack.backend.revocations, [{ userId, provider: 'google', connectionId: connection?._id.toHexString() }], 'the backend was told, to revoke the user\'s sessions')
  const fresh = await refreshTokenOf(stack, ALICE)
  const repair = await handOver(stack, userId, { ...base, refreshToken: fresh.refreshToken, mode: 'RECONNECT_REPAIR', idempotencyKey: randomUUID() })
  t.match(repair.json(), { connectionId: connection?._id.toHexString(), created: false, queued: 'repair' })
  await stack.drain()
  t.equal((await stack.sync.syncConnections.get(connection?._id.toHexString() ?? ''))?.state, 'healthy', 'repaired with the new credential')
})

test('without a configured provider the hand-over is refused and nothing is stored', async (t) => {
  const stack = await startStack(t)
  const userId = newUserId()
  const answer = await handOver(stack, userId, { provider: 'microsoft', providerAccountId: 'x', refreshToken: 'r', scopes: [], mode: 'SIGNUP', idempotencyKey: randomUUID() })
  t.equal(answer.statusCode, 400)
  t.equal(answer.json().code, 'PROVIDER_NOT_CONFIGURED')
  t.same(await stack.sync.syncConnections.listByUser(userId), [])
})
