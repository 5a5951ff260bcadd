// Google's token endpoint for the direct connect (POST /api/auth/extprovider/connect): the code
// exchanged with google-auth-library, the ID token verified against Google's keys, and the nonce a
// PKCE connect carries checked, so an ID token of another authorization is refused.
import type { FastifyBaseLogger } from 'fastify'
import { OAuth2Client, type Credentials as GoogleTokens } from 'google-auth-library'
import type { Config } from '../schemas/config.js'
import type { ProviderConnectRequest } from '../schemas/provider-auth.js'
import { isRealValue } from '../lib/config-rules.js'
import { TypedHttpError } from '../lib/error-bodies.js'
import { googleLibraryEndpointsAt } from '../lib/google-endpoints.js'
import { normalizeEmail } from '../lib/identity.js'
import { oidcNonceFor } from '../lib/pkce.js'

export type { GoogleTokens }

/** Whether google-auth-library failed because Google answered (a refusal) rather than because it could not be reached. */
function googleAnswered (error: unknown): boolean {
  const status = (error as { response?: { status?: unknown } } | null)?.response?.status
  return typeof status === 'number' && status >= 400 && status < 500
}

function googleClient (google: Config['extprovider'], redirectUri: string): { client: OAuth2Client, clientId: string } {
  if (!isRealValue(google?.clientId) || !isRealValue(google?.clientSecret)) {
    throw new TypedHttpError(400, 'PROVIDER_NOT_CONFIGURED', 'Google is not configured on this server')
  }
  const origin = google.endpointBase === undefined ? undefined : new URL(google.endpointBase).origin
  const client = new OAuth2Client({
    clientId: google.clientId,
    clientSecret: google.clientSecret,
    redirectUri,
    ...(origin === undefined ? {} : { endpoints: googleLibraryEndpointsAt(origin), issuers: [origin] })
  })
  return { client, clientId: google.clientId }
}

/**
 * Exchanges a connect's authorization code: Google's tokens, the account it names, and the email
 * only when Google vouches for it. Refusals are 400s the client can act on; Google out of reach is
 * a 503 with Retry-After.
 */
export async function exchangeGoogleCode (google: Config['extprovider'], request: ProviderConnectRequest, log: FastifyBaseLogger): Promise<{ tokens: GoogleTokens, accountId: string, email: string | undefined }> {
  const { client, clientId } = googleClient(google, request.redirectUri)
  let tokens: GoogleTokens
  try {
    tokens = (await client.getToken({ code: request.code, ...(request.codeVerifier === undefined ? {} : { codeVerifier: request.codeVerifier }) })).tokens
  } catch (error) {
    if (googleAnswered(error)) throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'Google did not accept the authorization code; start connecting again')
    // The error's name only: library messages may quote what was sent or received.
    log.warn({ errorClass: (error as Error).name }, 'Google could not be reached to exchange an authorization code')
    throw new TypedHttpError(503, 'PROVIDER_UNAVAILABLE', 'Google could not be reached; try again shortly', {}, 5)
  }
  if (typeof tokens.id_token !== 'string') throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'Google issued no ID token: the openid scope is required')
  let payload
  try {
    payload = (await client.verifyIdToken({ idToken: tokens.id_token, audience: clientId })).getPayload()
  } catch (error) {
    log.warn({ errorClass: (error as Error).name }, 'Google\'s ID token could not be verified')
    throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'Google\'s answer could not be verified; start connecting again')
  }
  if (payload === undefined) throw new TypedHttpError(400, 'AUTHORIZATION_CODE_REJECTED', 'Google\'s ID token names nobody')
  // A connect begun with PKCE carries the verifier's nonce (lib/pkce.ts): an ID token of another authorization is refused.
  if (request.codeVerifier !== undefined && payload.nonce !== await oidcNonceFor(request.codeVerifier)) {
    throw new TypedHttpError(400, 'NONCE_MISMATCH', 'Google\'s ID token was not issued for this connect; start connecting again')
  }
  // An address Google does not vouch for cannot match the signed-in user's.
  const email = payload.email !== undefined && payload.email_verified === true ? normalizeEmail(payload.email) : undefined
  return { tokens, accountId: payload.sub, email }
}
