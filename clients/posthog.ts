// The analytics port's one client, on PostHog's SDK. Imported only when analytics are configured.
import type { FastifyBaseLogger } from 'fastify'
import { PostHog } from 'posthog-node'
import type { Analytics, AnalyticsEvent } from '../lib/analytics.js'

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
