import { isRealValue } from './config-rules.js'
import type { Config } from '../schemas/config.js'
import type { Provider } from '../schemas/sync/common.js'

// Sign-in providers of the session library, from the configuration: Google (extprovider),
// Microsoft (extprovider2, common tenant) and Apple (idsignin). A provider is offered only when
// every key it needs is set. A development configuration may point a provider at a stand-in that
// serves the provider's own paths (`endpointBase`, refused in production); then every endpoint the
// library calls is named here, so nothing reaches the real provider.

export interface SignInProvider {
  config: {
    thirdPartyId: string
    /** Which of the library's built-in providers serves this id. */
    thirdPartyImplementation?: string
    clients: Array<{ clientId: string, clientSecret?: string, scope?: string[], additionalConfig?: Record<string, string> }>
    authorizationEndpointQueryParams?: Record<string, string>
    oidcDiscoveryEndpoint?: string
    authorizationEndpoint?: string
    tokenEndpoint?: string
    userInfoEndpoint?: string
    jwksURI?: string
    userInfoMap?: { fromIdTokenPayload?: { emailVerified?: string } }
    /** PKCE S256 on every authorization, though the client is confidential (RFC 9700, section 2.1.1). */
    forcePKCE?: boolean
  }
}

// Calendar access needs offline access (a refresh token) and the calendar scope, asked for at
// sign-in so one consent covers both.
export const GOOGLE_SCOPES = ['openid', 'email', 'profile', 'https://www.googleapis.com/auth/calendar']
/**
 * Whether the provider's credential is an OAuth refresh token. Only such a grant answering
 * invalid_grant ends the user's sessions (specification, States and transitions: session); a
 * CalDAV account refusing its app password needs the user's attention, not a new sign-in.
 */
export function grantIsRefreshToken (provider: Provider): boolean {
  return provider !== 'caldav'
}

/** Microsoft Graph's delegated permission to the signed-in user's calendars. */
export const MICROSOFT_CALENDAR_SCOPE = 'Calendars.ReadWrite'
/** Reads the mailbox's time zone (Get user mailbox settings), which the calendars are shown in. */
export const MICROSOFT_MAILBOX_SETTINGS_SCOPE = 'MailboxSettings.Read'
/** Whether a granted scope list holds `wanted`; Microsoft names Graph permissions with their resource (https://graph.microsoft.com/Calendars.ReadWrite). */
export function grantsMicrosoftScope (granted: string, wanted: string): boolean {
  return granted.split(' ').some((entry) => entry === wanted || entry.endsWith(`/${wanted}`))
}
// offline_access brings the refresh token; openid/email/profile the ID token that names the account.
export const MICROSOFT_SCOPES = ['openid', 'email', 'profile', 'offline_access', MICROSOFT_CALENDAR_SCOPE, MICROSOFT_MAILBOX_SETTINGS_SCOPE]

/** Google's OAuth 2.0 and OpenID Connect endpoints on an origin that serves Google's paths. */
function googleEndpointsAt (origin: string) {
  return {
    oidcDiscoveryEndpoint: `${origin}/.well-known/openid-configuration`,
    authorizationEndpoint: `${origin}/o/oauth2/v2/auth`,
    tokenEndpoint: `${origin}/token`,
    userInfoEndpoint: `${origin}/v1/userinfo`,
    jwksURI: `${origin}/oauth2/v3/certs`
  }
}

/** The Microsoft identity platform v2.0 endpoints of the common tenant on an origin that serves its paths. */
function microsoftEndpointsAt (origin: string) {
  return {
    oidcDiscoveryEndpoint: `${origin}/common/v2.0/.well-known/openid-configuration`,
    authorizationEndpoint: `${origin}/common/oauth2/v2.0/authorize`,
    tokenEndpoint: `${origin}/common/oauth2/v2.0/token`,
    userInfoEndpoint: `${origin}/oidc/userinfo`,
    jwksURI: `${origin}/common/discovery/v2.0/keys`
  }
}

/** Sign in with Apple's endpoints on an origin that serves its paths (Apple has no userinfo endpoint). */
function appleEndpointsAt (origin: string) {
  return {
    oidcDiscoveryEndpoint: `${origin}/.well-known/openid-configuration`,
    authorizationEndpoint: `${origin}/auth/authorize`,
    tokenEndpoint: `${origin}/auth/token`,
    jwksURI: `${origin}/auth/keys`
  }
}

const originOf = (url: string): string => new URL(url).origin

export function signInProviders (config: Pick<Config, 'extprovider' | 'extprovider2' | 'idsignin'>): SignInProvider[] {
  const providers: SignInProvider[] = []
  const google = config.extprovider
  if (isRealValue(google?.clientId) && isRealValue(google?.clientSecret)) {
    providers.push({
      config: {
        thirdPartyId: 'google',
        clients: [{ clientId: google.clientId, clientSecret: google.clientSecret, scope: GOOGLE_SCOPES }],
        authorizationEndpointQueryParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
        forcePKCE: true,
        ...(google.endpointBase === undefined ? {} : googleEndpointsAt(originOf(google.endpointBase)))
      }
    })
  }
  const microsoft = config.extprovider2
  if (isRealValue(microsoft?.clientId) && isRealValue(microsoft?.clientSecret)) {
    providers.push({
      config: {
        thirdPartyId: 'microsoft',
        thirdPartyImplementation: 'active-directory',
        forcePKCE: true,
        clients: [{ clientId: microsoft.clientId, clientSecret: microsoft.clientSecret, scope: MICROSOFT_SCOPES }],
        // Microsoft vouches for an address through the optional claim `xms_edov` (email domain
        // owner verified); it never sends OpenID's `email_verified`.
        userInfoMap: { fromIdTokenPayload: { emailVerified: 'xms_edov' } },
        ...(microsoft.endpointBase === undefined
          ? { oidcDiscoveryEndpoint: 'https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration' }
          : microsoftEndpointsAt(originOf(microsoft.endpointBase)))
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
        }],
        ...(apple.endpointBase === undefined ? {} : appleEndpointsAt(originOf(apple.endpointBase)))
      }
    })
  }
  return providers
}
