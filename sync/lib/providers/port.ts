// The provider port: everything the Sync service asks of an external calendar provider. Adapters
// (Google, Microsoft, CalDAV) implement it; the service never calls a provider API any other way.
import type { EventOperation, Provider } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../credentials.js'

/** The grant is dead (for example `invalid_grant`): the connection needs the user (`authorizationRevoked`). */
export class ProviderAuthorizationRevokedError extends Error {
  override name = 'ProviderAuthorizationRevokedError'
}

/** The provider no longer accepts a calendar's sync cursor (HTTP 410 on a sync token): re-import it. */
export class ProviderCursorExpiredError extends Error {
  override name = 'ProviderCursorExpiredError'
}

export interface ProviderContext {
  connectionId: string
  userId: string
  credential: ProviderCredential
}

export interface ProviderCalendar {
  calendarId: string
  name: string
}

export interface ImportResult {
  /** Events imported into this calendar's new generation. */
  eventCount: number
  /** Cursor for the first incremental pull after the import. */
  cursor: string
}

export interface PullResult {
  changed: number
  deleted: number
  cursor: string
}

export interface WatchRequest {
  channelId: string
  /** Secret the provider echoes with every notification. */
  token: string
  /** Where notifications are delivered (under sync.callbackBaseUrl). */
  address: string
  expiresAt: Date
}

export interface Watch {
  channelId: string
  resourceId: string
  expiresAt: Date
}

export interface ProviderPort {
  readonly provider: Provider
  /** Where the browser goes to grant access; `state` comes back to the callback unchanged. */
  authorizationUrl: (request: { state: string, redirectUri: string }) => string
  listCalendars: (context: ProviderContext) => Promise<ProviderCalendar[]>
  /** Reads a whole calendar (initial import or repair). */
  importCalendar: (context: ProviderContext, calendarId: string) => Promise<ImportResult>
  /** Changes of a calendar after `cursor`; throws ProviderCursorExpiredError when the cursor is gone. */
  pullChanges: (context: ProviderContext, calendarId: string, cursor: string) => Promise<PullResult>
  writeEvent: (context: ProviderContext, change: { eventId: string, operation: EventOperation, calendarId: string | null }) => Promise<void>
  watch: (context: ProviderContext, calendarId: string, request: WatchRequest) => Promise<Watch>
  unwatch: (context: ProviderContext, watch: { channelId: string, resourceId: string }) => Promise<void>
  /** Whether a notification's headers prove it came from the provider for this channel. */
  verifyNotification: (headers: Record<string, string | string[] | undefined>, expected: { channelId: string, token: string }) => boolean
}

export type ProviderRegistry = Partial<Record<Provider, ProviderPort>>
