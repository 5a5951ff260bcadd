import { isRealValue } from './config-rules.js'
import type { Config } from '../schemas/config.js'

// Sign-in providers of the session library, from the configuration: Google (extprovider),
// Microsoft (extprovider2, common tenant) and Apple (idsignin). A provider is offered only when
// every key it needs is set.

export interface SignInProvider {
  config: {
    thirdPartyId: string
    clients: Array<{ clientId: string, clientSecret?: string, scope?: string[], additionalConfig?: Record<string, string> }>
    authorizationEndpointQueryParams?: Record<string, string>
    oidcDiscoveryEndpoint?: string
  }
}

// Calendar access needs offline access (a refresh token) and the calendar scope, asked for at
// sign-in so one consent covers both.
export const GOOGLE_SCOPES = ['openid', 'email', 'profile', 'https://www.googleapis.com/auth/calendar']

export function signInProviders (config: Pick<Config, 'extprovider' | 'extprovider2' | 'idsignin'>): SignInProvider[] {
  const providers: SignInProvider[] = []
  const google = config.extprovider
  if (isRealValue(google?.clientId) && isRealValue(google?.clientSecret)) {
    providers.push({
      config: {
        thirdPartyId: 'google',
        clients: [{ clientId: google.clientId, clientSecret: google.clientSecret, scope: GOOGLE_SCOPES }],
        authorizationEndpointQueryParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' }
      }
    })
  }
  const microsoft = config.extprovider2
  if (isRealValue(microsoft?.clientId) && isRealValue(microsoft?.clientSecret)) {
    providers.push({
      config: {
        thirdPartyId: 'active-directory',
        clients: [{ clientId: microsoft.clientId, clientSecret: microsoft.clientSecret, scope: ['openid', 'email', 'profile', 'offline_access'] }],
        oidcDiscoveryEndpoint: 'https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration'
      }
    })
  }
  const apple = config.idsignin
  if (apple !== undefined && isRealValue(apple.servicesId) && isRealValue(apple.teamId) && isRealValue(apple.keyId) && isRealValue(apple.privateKey)) {
    providers.push({
      config: {
        thirdPartyId: 'apple',
        clients: [{
          clientId: apple.servicesId,
          scope: ['email', 'name'],
          additionalConfig: { keyId: apple.keyId, teamId: apple.teamId, privateKey: apple.privateKey }
        }]
      }
    })
  }
  return providers
}
