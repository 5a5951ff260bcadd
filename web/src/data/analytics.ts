// Product analytics, only when both analytics.key and analytics.host were fixed into the bundle.
// Events go to the host's capture endpoint as JSON; nothing is sent otherwise.
import { buildConfig } from '../config.js'
import type { AnalyticsEvent } from '../lib/oauth.js'

function distinctId (): string {
  try {
    let id = localStorage.getItem('analyticsId')
    if (id === null) {
      id = crypto.randomUUID()
      localStorage.setItem('analyticsId', id)
    }
    return id
  } catch {
    return 'anonymous'
  }
}

const analyticsEnabled = buildConfig.analyticsKey !== null && buildConfig.analyticsHost !== null

export function track (event: AnalyticsEvent): void {
  if (!analyticsEnabled) return
  const body = JSON.stringify({
    api_key: buildConfig.analyticsKey,
    event: event.event,
    properties: { ...event.properties, distinct_id: distinctId() },
    timestamp: new Date().toISOString()
  })
  const url = `${(buildConfig.analyticsHost as string).replace(/\/+$/, '')}/capture/`
  // A beacon survives the page being left, which is when connect funnels end. It goes with the
  // browser's credentials, so a JSON content type would need a preflight that the capture host must
  // answer with Allow-Credentials; text/plain needs none, and the capture API reads the body as
  // JSON whatever its type.
  if (!navigator.sendBeacon?.(url, new Blob([body], { type: 'text/plain' }))) {
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'text/plain' }, keepalive: true, credentials: 'omit' }).catch(() => {})
  }
}
