import type { FastifyBaseLogger } from 'fastify'
import type { Analytics, AnalyticsEvent } from '../lib/analytics.js'
import { isRealValue } from '../lib/config-rules.js'

/**
 * The analytics client the `analytics` block chooses: PostHog with both a key and a host (its SDK
 * loaded only then), else log lines.
 */
export async function createAnalytics (block: { key?: string | undefined, host?: string | undefined } | undefined, log: FastifyBaseLogger): Promise<Analytics> {
  const { key, host } = block ?? {}
  if (!isRealValue(key) || !isRealValue(host)) return new LogAnalytics(log)
  const { PostHogAnalytics } = await import('./posthog.js')
  return new PostHogAnalytics({ key, host }, log)
}

/** Writes each event as one info line named after the event. */
class LogAnalytics implements Analytics {
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
