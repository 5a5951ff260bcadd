// The provider port: everything the Sync service asks of an external calendar provider. Adapters
// (Google, Microsoft, CalDAV) implement it; the service never calls a provider API any other way.
import type { EventOperation, Provider, ProviderEvent, ProviderWriteSubject } from '../../../schemas/sync/index.js'
import type { ProviderCredential } from '../credentials.js'
import type { Reminder } from '../../../lib/events/reminders.js'

/** The grant is dead (for example `invalid_grant`): the connection needs the user (`authorizationRevoked`). */
export class ProviderAuthorizationRevokedError extends Error {
  override name = 'ProviderAuthorizationRevokedError'
}

/** The provider no longer accepts a calendar's sync cursor (HTTP 410 on a sync token): re-import it. */
export class ProviderCursorExpiredError extends Error {
  override name = 'ProviderCursorExpiredError'
}

/**
 * The provider refused for now (rate limit, 5xx, network): nothing was applied. The job keeps its
 * attempt and waits for the connection's next try, which follows the provider's health and the
 * `Retry-After` it sent (`retryAfterMs`, null when it sent none).
 */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError'
  readonly status: number | null
  readonly retryAfterMs: number | null

  constructor (message: string, status: number | null, retryAfterMs: number | null = null) {
    super(message)
    this.status = status
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * The provider refused the request as it is (a 4xx that is not about the grant, a version or a
 * missing resource): asking again unchanged gets the same answer. `status` 403 on a write is most
 * often a calendar the account may only read.
 */
export class ProviderRejectedError extends Error {
  override name = 'ProviderRejectedError'
  readonly status: number | null

  constructor (message: string, status: number | null) {
    super(message)
    this.status = status
  }
}

/** The calendar (or the event a write names) no longer exists at the provider. */
export class ProviderNotFoundError extends Error {
  override name = 'ProviderNotFoundError'
}

/** The provider's version of an event differs from the one a conditional write named (HTTP 412). */
export class ProviderVersionConflictError extends Error {
  override name = 'ProviderVersionConflictError'
}

/** What a failed provider call means to the service; each adapter reads its provider's answers into one. */
export type ProviderFailureKind = 'revoked' | 'cursorExpired' | 'unavailable' | 'notFound' | 'conflict' | 'rejected'

export interface ProviderFailure {
  kind: ProviderFailureKind
  /** The provider as a sentence's subject: `Google`, `Microsoft`, `the CalDAV server`. */
  who: string
  /** What was asked and what came back, for the log (`insert: 403 requiredAccessLevel`): never a token. */
  detail: string
  status: number | null
  /** The wait the provider asked for (Retry-After), for `unavailable`. */
  retryAfterMs?: number | null
}

const MEANING: Record<ProviderFailureKind, string> = {
  revoked: 'refused the stored credential',
  cursorExpired: 'needs a full sync',
  unavailable: 'is unavailable for now',
  notFound: 'has no such resource',
  conflict: 'holds another version',
  rejected: 'refused'
}

/** The port's error for a failed provider call: the one translation every adapter uses. */
export function providerError (failure: ProviderFailure): Error {
  const retryAfterMs = failure.retryAfterMs ?? null
  const wait = failure.kind === 'unavailable' && retryAfterMs !== null ? `, retry after ${retryAfterMs / 1000} s` : ''
  const message = `${failure.who} ${MEANING[failure.kind]} (${failure.detail}${wait})`
  switch (failure.kind) {
    case 'revoked': return new ProviderAuthorizationRevokedError(message)
    case 'cursorExpired': return new ProviderCursorExpiredError(message)
    case 'unavailable': return new ProviderUnavailableError(message, failure.status, retryAfterMs)
    case 'notFound': return new ProviderNotFoundError(message)
    case 'conflict': return new ProviderVersionConflictError(message)
    case 'rejected': return new ProviderRejectedError(message, failure.status)
  }
}

export interface ProviderContext {
  connectionId: string
  userId: string
  credential: ProviderCredential
  /**
   * Stores a credential the provider replaced while acting (a refresh token that rotates on use);
   * the adapter calls it before it relies on the new one.
   */
  saveCredential?: (credential: ProviderCredential) => Promise<void>
}

export interface ProviderCalendar {
  calendarId: string
  name: string
  /** The account's own calendar: where the user's own events are written. */
  primary: boolean
  /** The provider's zone of the calendar; all-day events take it. */
  timeZone: string
  /** The calendar's colour at the provider as #rrggbb (lower case), when it names one. */
  color?: string
  /**
   * What an event keeping the calendar's default (reminders absent) reminds of, when the provider
   * keeps such a default per calendar (Google's calendarList `defaultReminders`).
   */
  defaultReminders?: Reminder[]
}

/**
 * A provider's colour value as the calendar's `color`: `#RRGGBB` (Google's backgroundColor,
 * Graph's hexColor) or Apple's `calendar-color` `#RRGGBBAA` (alpha dropped); nothing for any other value.
 */
export function colorOf (value: string | null | undefined): { color?: string } {
  const match = /^#([0-9a-fA-F]{6})(?:[0-9a-fA-F]{2})?$/.exec(value?.trim() ?? '')
  return match === null ? {} : { color: `#${(match[1] as string).toLowerCase()}` }
}

/** One page of a list, handed to the sink before the next page is read. */
export interface ProviderEventPage {
  events: ProviderEvent[]
  /** Reads the page after this one; null on the last page of the pass. */
  nextPageToken: string | null
}

/** Takes one page; the adapter reads the next page only once this resolves. */
export type ProviderEventSink = (page: ProviderEventPage) => Promise<void>

export interface ImportRequest {
  /** Only events overlapping [from, to): the first, bounded pass of an import. Absent: the whole calendar. */
  window?: { from: Date, to: Date }
  /** Resume a pass at this page (a checkpoint of an interrupted import). */
  pageToken?: string | null
}

export interface ImportResult {
  /** Cursor for the first incremental pull; null for a bounded pass. */
  cursor: string | null
}

export interface PullResult {
  cursor: string
}

/** An own-data change the provider must get, with what the backend told of the event. */
export interface ProviderWrite {
  eventId: string
  operation: EventOperation
  subject: ProviderWriteSubject
  /**
   * The provider's version (etag) our own last write of this event left there: found unchanged,
   * it is no newer change by anyone else, whatever its `updated` says.
   */
  ownVersion?: string
  /**
   * The time that version of ours is read at (`OwnWrite.updated`): a write over it is stamped
   * after it, so that its copy read back is the newer of the two.
   */
  ownUpdated?: string
  /**
   * The provider id our own last write of this event left there, for a report the backend made
   * before it learnt that id (an event created and then deleted while the provider was away).
   */
  ownProviderEventId?: string
  /** On an occurrence: the provider's version our own last write of its series left there. */
  seriesOwnVersion?: string
}

export interface WriteResult {
  /**
   * `written`: the provider holds the change; `inserted`: it holds it as a new event (its id goes
   * back to the backend); `providerNewer`: the provider's version is newer and was kept (it goes to
   * the backend instead); `merged`: the provider holds the change merged with one made there since
   * (sync/lib/merge.ts; the result goes to the backend); `nothingToDo`: the provider already had it
   * (a delete of a deleted event).
   */
  outcome: 'written' | 'inserted' | 'providerNewer' | 'merged' | 'nothingToDo'
  /**
   * The event as the provider holds it afterwards; null when it is gone. Its `updated` is the
   * version's time to the millisecond where the provider keeps less (CalDAV's whole seconds): our
   * copy read back is dated by it (sync/lib/own-writes.ts).
   */
  event: ProviderEvent | null
  /**
   * The provider's version the write was made over (its `If-Match`): older than the write, though a
   * page read before the write arrived can still hold it, and say a later time (another client's
   * clock).
   */
  replaced?: string
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

export interface AuthorizationRequest {
  state: string
  redirectUri: string
  /** PKCE S256 challenge of the verifier the Sync service keeps. */
  codeChallenge: string
  /** A reconnect asks for a new consent only when it must. */
  intent: 'connect' | 'reconnect'
}

export interface GrantedCredential {
  credential: ProviderCredential
  /** The provider issued no refresh token (a repeated consent): the stored one must be kept. */
  refreshTokenIssued: boolean
}

export interface ProviderPort {
  readonly provider: Provider
  /** Where the browser goes to grant access; `state` comes back to the callback unchanged. */
  authorizationUrl: (request: AuthorizationRequest) => string
  /** Exchanges an authorization code (with its PKCE verifier) for the credential to store. */
  exchangeCode: (request: { code: string, codeVerifier: string, redirectUri: string }) => Promise<GrantedCredential>
  listCalendars: (context: ProviderContext) => Promise<ProviderCalendar[]>
  /** Reads a calendar page by page into `sink` (initial import, repair, or its bounded first pass). */
  importCalendar: (context: ProviderContext, calendar: ProviderCalendar, request: ImportRequest, sink: ProviderEventSink) => Promise<ImportResult>
  /** Changes of a calendar after `cursor`, page by page; throws ProviderCursorExpiredError when the cursor is gone. */
  pullChanges: (context: ProviderContext, calendar: ProviderCalendar, cursor: string, sink: ProviderEventSink) => Promise<PullResult>
  writeEvent: (context: ProviderContext, calendar: ProviderCalendar, write: ProviderWrite) => Promise<WriteResult>
  watch: (context: ProviderContext, calendarId: string, request: WatchRequest) => Promise<Watch>
  unwatch: (context: ProviderContext, watch: { channelId: string, resourceId: string }) => Promise<void>
  /**
   * Set by a provider without change notifications (CalDAV): its calendars are never watched and
   * are pulled by the timer this long after their last pull.
   */
  readonly pollIntervalMs?: number
  /**
   * Extends a channel in place (Microsoft: PATCH of the subscription). Absent: a channel is renewed
   * by stopping it and watching anew. Throws ProviderNotFoundError when the channel is gone.
   * `reauthorize`: the provider asked for it (Microsoft's reauthorizationRequired), so the renewal
   * must prove the grant still holds with a freshly obtained access token, not a cached one.
   */
  renewWatch?: (context: ProviderContext, watch: { channelId: string, resourceId: string }, expiresAt: Date, options?: { reauthorize?: boolean }) => Promise<Watch>
}

export type ProviderRegistry = Partial<Record<Provider, ProviderPort>>
