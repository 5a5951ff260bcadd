// Outbound product analytics of the backend and the Sync service (specification, "Outbound analytics
// events"). One small interface, so the analytics client is one class behind it; without a client
// the events are log lines with the same fields.
import type { FastifyBaseLogger } from 'fastify'
import { PostHog } from 'posthog-node'

export interface OAuthCallbackEvent {
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
export interface EmailEvent {
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
export interface EmailHeartbeatEvent {
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

/** Writes each event as one info line named after the event. */
export class LogAnalytics implements Analytics {
  readonly #log: FastifyBaseLogger

  constructor (log: FastifyBaseLogger) {
    this.#log = log
  }

  capture (event: AnalyticsEvent): void {
    this.#log.info({ analyticsEvent: event.name, ...event.properties }, event.name)
  }

  async flush (): Promise<void> {}

  async close (): Promise<void> {}
}

/** Sends each event to the configured PostHog host (`analytics.key`, `analytics.host`), in the background. */
export class PostHogAnalytics implements Analytics {
  readonly #client: PostHog
  readonly #log: FastifyBaseLogger

  constructor (settings: { key: string, host: string }, log: FastifyBaseLogger) {
    this.#client = new PostHog(settings.key, { host: settings.host, flushAt: 20, flushInterval: 10_000, disableGeoip: true })
    this.#log = log
  }

  capture (event: AnalyticsEvent): void {
    try {
      this.#client.capture({ distinctId: event.distinctId, event: event.name, properties: event.properties })
    } catch (error) {
      this.#log.warn({ err: error, analyticsEvent: event.name }, 'analytics event dropped')
    }
  }

  async flush (): Promise<void> {
    await this.#client.flush()
  }

  async close (): Promise<void> {
    await this.#client.shutdown(5000)
  }
}
