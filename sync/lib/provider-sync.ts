// Rules of reading from and writing to a provider, over plain data (docs/design.md, "Provider data"):
// which weeks an import reads first, when a notification channel is renewed or stopped, and which
// of two versions of an event is the newer.

const DAY_MS = 24 * 60 * 60_000

/** An import reads the weeks around today first, so they show within seconds, then the rest. */
const IMPORT_WINDOW = { beforeMs: 14 * DAY_MS, afterMs: 42 * DAY_MS }

export function importWindow (now: Date): { from: Date, to: Date } {
  return { from: new Date(now.getTime() - IMPORT_WINDOW.beforeMs), to: new Date(now.getTime() + IMPORT_WINDOW.afterMs) }
}

/** What the service asks of a channel's lifetime (Google's default and longest for events: 7 days). */
export const WATCH_LIFETIME_MS = 7 * DAY_MS
/** Channels expiring within this are renewed by watch maintenance. */
const WATCH_RENEW_BEFORE_MS = DAY_MS
/** Users not seen for this many days lose their channels (sync.inactiveUserDays overrides it). */
export const DEFAULT_INACTIVE_USER_DAYS = 30

export type WatchAction = 'renew' | 'stop' | 'keep'

/**
 * A calendar not pulled for this long is pulled anyway: push notifications are best effort (a
 * provider may drop one, a channel may lapse), so a timer catches what they missed.
 */
export const FALLBACK_PULL_AFTER_MS = 15 * 60_000

/**
 * How long a pull asked for by a notification waits before it runs: providers send one
 * notification per change, so a burst of changes (an import elsewhere, a bulk edit) arrives as a
 * burst of notifications, and all that arrive meanwhile join the one waiting pull. Notifications
 * that arrive while it runs make it run once more (the job queue's rerun), not once each.
 */
export const NOTIFICATION_PULL_DELAY_MS = 500
/** However long a burst lasts, its pull waits at most this long after the burst's first notification. */
export const NOTIFICATION_PULL_MAX_WAIT_MS = 5000

/** Whether a calendar of a live connection is due for a pull no notification asked for. */
export function fallbackPullDue (calendar: { cursor: string | null, lastUpdatedAt: Date }, lastSeenAt: Date | null, now: Date, inactiveDays: number, afterMs = FALLBACK_PULL_AFTER_MS): boolean {
  if (calendar.cursor === null) return false
  if (now.getTime() - calendar.lastUpdatedAt.getTime() < afterMs) return false
  // Nobody looks at an inactive user's calendar; its channels are stopped too.
  return lastSeenAt !== null && now.getTime() - lastSeenAt.getTime() <= inactiveDays * DAY_MS
}

/**
 * Watch maintenance (specification, "States and transitions": notification channel expiring soon):
 * renewed while its user is active, stopped once the user has been away `inactiveDays`.
 */
export function watchAction (watch: { expiresAt: Date }, lastSeenAt: Date | null, now: Date, inactiveDays: number): WatchAction {
  if (watch.expiresAt.getTime() - now.getTime() > WATCH_RENEW_BEFORE_MS) return 'keep'
  return channelUserInactive(watch, lastSeenAt, now, inactiveDays) ? 'stop' : 'renew'
}

/**
 * Whether a channel's user has been away longer than `inactiveDays` (specification, "Inbound provider
 * change notifications": such a user's sync is cancelled). A user the service never saw counts from
 * the channel's creation, which is about its expiry minus its lifetime.
 */
export function channelUserInactive (watch: { expiresAt: Date }, lastSeenAt: Date | null, now: Date, inactiveDays: number): boolean {
  const seen = lastSeenAt?.getTime() ?? watch.expiresAt.getTime() - WATCH_LIFETIME_MS
  return now.getTime() - seen > inactiveDays * DAY_MS
}

/**
 * Whether the provider's version of an event is newer than the backend's change being written: then
 * the write stops and the provider's version goes to the backend instead (it keeps the newer one).
 */
export function providerVersionWins (providerUpdated: string, backendLastUpdated: string): boolean {
  return Date.parse(providerUpdated) > Date.parse(backendLastUpdated)
}
