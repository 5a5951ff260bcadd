import type { Config } from '../schemas/config.js'
import type { AppConfigResponse } from '../schemas/app-config.js'
import { isRealValue } from './config-rules.js'
import { signInProviders } from './identity-providers.js'
import { TRIAL_DAYS } from './billing.js'

// What GET /api/config tells the web client, from the configuration. Nothing secret: the billing
// block carries only the publishable key, and only when billing is configured in full.
export function appConfigFor (config: Pick<Config, 'extprovider' | 'extprovider2' | 'idsignin' | 'maps' | 'analytics' | 'billing'>): AppConfigResponse {
  const offered = new Set(signInProviders(config).map((provider) => provider.config.thirdPartyId))
  const billing = config.billing
  const billingComplete = billing !== undefined &&
    [billing.secretKey, billing.webhookSecret, billing.priceId, billing.publishableKey].every(isRealValue)
  return {
    providers: { google: offered.has('google'), microsoft: offered.has('microsoft'), apple: offered.has('apple') },
    placesLookup: isRealValue(config.maps?.placesApiKey),
    analytics: isRealValue(config.analytics?.host),
    ...(billingComplete && billing.publishableKey !== undefined ? { billing: { publishableKey: billing.publishableKey, trialDays: TRIAL_DAYS } } : {})
  }
}
