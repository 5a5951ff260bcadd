// Outbound product analytics of the backend and the Sync service (specification, "Outbound analytics
// events"). One small interface, so the analytics client is one class behind it
// (clients/analytics.ts chooses it); without a client the events are log lines with the same fields.

interface OAuthCallbackEvent {
  name: 'oauth_callback'
  /** The user when the state named one, else the correlation id. */
  distinctId: string
  properties: {
    provider: string
    /** The redirect status: connected, denied, expired, mismatch, conflict or error. */
    outcome: string
    intent: 'connect' | 'reconnect'
    correlationId: string
    /** The error's class name only, and only when the outcome is `error`. */
    errorClass?: string
  }
}

/** The email block's events (plugins/app/email.ts); the distinct id is the user's. */
interface EmailEvent {
  name: 'email_sent' | 'email_skipped' | 'email_failed' | 'email_bounced' | 'email_complained' | 'email_unsubscribed' | 'email_delivered'
  distinctId: string
  properties: {
    /** The step of the sequence the mail belongs to (unsubscribing names none). */
    step?: string
    /** Why a step was skipped, canceled or went stale, why a send failed, or how a user unsubscribed. */
    reason?: string
    attempts?: number
  }
}

/** Once per poller tick: how many sends are still queued. */
interface EmailHeartbeatEvent {
  name: 'email_heartbeat'
  distinctId: 'email-poller'
  properties: { queueDepth: number }
}

export type AnalyticsEvent = OAuthCallbackEvent | EmailEvent | EmailHeartbeatEvent

export interface Analytics {
  /** Never throws and never waits on the network: analytics must not hold up a redirect. */
  capture: (event: AnalyticsEvent) => void
  /** Sends what is queued now (tests, and a process about to stop). */
  flush: () => Promise<void>
  /** Sends what is still queued; called when the service closes. */
  close: () => Promise<void>
}
