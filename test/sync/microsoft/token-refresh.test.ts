// Microsoft rotates the refresh token on every use. Requests of one connection that run side by
// side (the series of a delta page are read three at a time) must share one refresh, store the
// rotated token once, and all go on with the same access token.
import { test } from 'tap'
import type { ProviderCredential } from '../../../sync/lib/credentials.js'
import { MicrosoftCalendarAdapter } from '../../../sync/providers/microsoft/adapter.js'
import { CLIENT_ID, CLIENT_SECRET, connectAndSync, startStack } from './harness.js'

test('side-by-side requests of one connection share one token refresh and store the rotated token once', async (t) => {
  const stack = await startStack(t)
  const { userId, connectionId } = await connectAndSync(stack)
  const credential = await stack.sync.syncCredentials.load(connectionId)
  if (credential === null) throw new Error('no stored credential')

  // A new adapter holds no access token yet, as after a restart of the Sync service.
  const adapter = new MicrosoftCalendarAdapter({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: stack.microsoft.url, now: () => stack.clock.now() })
  const saved: ProviderCredential[] = []
  const context = { connectionId, userId, credential, saveCredential: async (renewed: ProviderCredential) => { saved.push(renewed) } }
  const tokenCalls = () => stack.microsoft.control.counts().operations['oauth2.token']?.statuses['200'] ?? 0
  const before = tokenCalls()

  const answers = await Promise.all(Array.from({ length: 4 }, async () => await adapter.listCalendars(context)))
  t.equal(tokenCalls() - before, 1, 'one refresh for four requests')
  t.ok(answers.every((calendars) => calendars.length > 0 && JSON.stringify(calendars) === JSON.stringify(answers[0])), 'every request was answered alike')
  t.equal(saved.length, 1, 'the rotated refresh token is stored once')
  t.not(saved[0]?.refreshToken, credential.refreshToken, 'and it is the new one')

  // With the access token in hand, the next requests need no refresh at all.
  await Promise.all([adapter.listCalendars(context), adapter.listCalendars(context)])
  t.equal(tokenCalls() - before, 1, 'no refresh while the access token lives')
})
