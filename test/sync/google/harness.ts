// The Sync service against the Google stand-in (see ../provider-harness.ts for what every
// provider's harness shares): Google's client, its configuration key, and Google's event bodies.
import type { Test } from 'tap'
import { startGoogle } from '../../../dev/google/index.js'
import type { AccountSetup, GoogleStandIn } from '../../../dev/google/index.js'
import type { SyncBeginConnectionResponse } from '../../../schemas/sync/index.js'
import type { SyncAppOptions } from '../../../sync/app.js'
import type { SyncConfig } from '../../../schemas/config.js'
import { beginConnection, connectProviderAndSync, startSyncAgainst } from '../provider-harness.js'
import type { SyncUnderTest } from '../provider-harness.js'

export { consent, followCallback } from '../provider-harness.js'
export const CLIENT_ID = '123456789012-sync.apps.googleusercontent.com'
const CLIENT_SECRET = 'GOCSPX-sync-test-secret'

export const WEB_CALLBACK = 'https://web.example.test/auth/extprovider/callback'
export const ALICE = 'alice@example.com'

export interface Stack extends SyncUnderTest {
  google: GoogleStandIn
}

export interface StackOptions {
  accounts?: AccountSetup[]
  pageSize?: number
  /** Events an import gathers before handing them over (1: each page on its own). */
  importBatchEvents?: number
  sync?: Partial<SyncConfig['sync']>
  appOptions?: Partial<SyncAppOptions>
  analytics?: { key: string, host: string }
}

export async function startStack (t: Test, options: StackOptions = {}): Promise<Stack> {
  const { standIn, ...stack } = await startSyncAgainst<GoogleStandIn>(t, {
    startStandIn: async (syncUrl, clock) => await startGoogle({
      clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${syncUrl}/oauth/google/callback`] }],
      accounts: options.accounts ?? [{ email: ALICE, name: 'Alice', timeZone: 'Europe/Berlin', calendars: [{ summary: 'Work' }] }],
      clock: () => clock.now().getTime(),
      notificationRetries: 0
    }),
    webCallback: WEB_CALLBACK,
    providerConfig: (google) => ({
      extprovider: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, endpointBase: google.url },
      ...(options.analytics === undefined ? {} : { analytics: options.analytics })
    }),
    appOptions: () => ({
      ...(options.pageSize === undefined ? {} : { google: { pageSize: options.pageSize } }),
      ...(options.importBatchEvents === undefined ? {} : { importBatchEvents: options.importBatchEvents }),
      ...options.appOptions
    }),
    ...(options.sync === undefined ? {} : { sync: options.sync }),
    captureLogs: true
  })
  return { google: standIn, ...stack }
}

/** Asks Sync to begin a connect as the backend would (a signed internal call). */
export async function begin (stack: Stack, userId: string, body: Record<string, unknown> = { provider: 'google', intent: 'connect' }): Promise<SyncBeginConnectionResponse> {
  return await beginConnection(stack, userId, body)
}

/** begin -> consent -> callback -> import and catch-up: a healthy connection. */
export async function connectAndSync (stack: Stack, email = ALICE): Promise<{ userId: string, connectionId: string, cid: string }> {
  return await connectProviderAndSync(stack, 'google', email)
}

/** Google event bodies for the control surface, around the manual clock's 2026-11-21. */
export const SAMPLE_EVENTS = {
  timed: { summary: 'Dentist', start: { dateTime: '2026-11-23T15:00:00+01:00', timeZone: 'Europe/Berlin' }, end: { dateTime: '2026-11-23T16:00:00+01:00', timeZone: 'Europe/Berlin' } },
  allDay: { summary: 'Holiday', start: { date: '2026-12-24' }, end: { date: '2026-12-27' } },
  series: {
    summary: 'Weekly review',
    start: { dateTime: '2026-11-02T09:00:00+01:00', timeZone: 'Europe/Berlin' },
    end: { dateTime: '2026-11-02T10:00:00+01:00', timeZone: 'Europe/Berlin' },
    recurrence: ['RRULE:FREQ=WEEKLY;COUNT=10']
  },
  // Far from today: only the full pass reads it.
  old: { summary: 'Last year', start: { date: '2025-03-01' }, end: { date: '2025-03-02' } }
}
