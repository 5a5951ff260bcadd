// Shared pieces of the Google stand-in's tests: a started stand-in, Google's own OAuth client
// pointed at it, the authorization step without a browser, and a receiver for push notifications.
import { OAuth2Client, CodeChallengeMethod } from 'google-auth-library'
import type { Credentials } from 'google-auth-library'
import { startGoogle } from '../../../dev/google/index.js'
import type { GoogleOptions, GoogleStandIn } from '../../../dev/google/index.js'
import { startWebhookServer, visit, waitForCount } from '../stand-in-harness.js'
import type { Teardown, Visit } from '../stand-in-harness.js'

export { control, testClock, visit } from '../stand-in-harness.js'

export const CLIENT = {
  clientId: '123456789012-standin.apps.googleusercontent.com',
  clientSecret: 'GOCSPX-stand-in-test-secret',
  redirectUris: ['http://127.0.0.1:3000/auth/extprovider/callback']
}
export const REDIRECT_URI = CLIENT.redirectUris[0] ?? ''
export const CALENDAR_SCOPE = 'https://www.googleapis.com/auth/calendar'
export const CALENDAR_READONLY_SCOPE = 'https://www.googleapis.com/auth/calendar.readonly'
export const EMAIL_SCOPE = 'https://www.googleapis.com/auth/userinfo.email'
export const PROFILE_SCOPE = 'https://www.googleapis.com/auth/userinfo.profile'

export async function startStandIn (t: Teardown, options: GoogleOptions = {}): Promise<GoogleStandIn> {
  const google = await startGoogle({ clients: [CLIENT], ...options })
  t.teardown(() => google.close())
  return google
}

/** Google's own OAuth client, with every endpoint on the stand-in's origin. */
export function oauthClient (google: GoogleStandIn, options: { basic?: boolean, secret?: string } = {}): OAuth2Client {
  return new OAuth2Client({
    clientId: CLIENT.clientId,
    clientSecret: options.secret ?? CLIENT.clientSecret,
    redirectUri: REDIRECT_URI,
    ...(options.basic === true ? { clientAuthentication: 'ClientSecretBasic' as never } : {}),
    endpoints: {
      oauth2AuthBaseUrl: `${google.url}/o/oauth2/v2/auth`,
      oauth2TokenUrl: `${google.url}/token`,
      oauth2RevokeUrl: `${google.url}/revoke`,
      tokenInfoUrl: `${google.url}/tokeninfo`,
      oauth2FederatedSignonPemCertsUrl: `${google.url}/oauth2/v1/certs`,
      oauth2FederatedSignonJwkCertsUrl: `${google.url}/oauth2/v3/certs`
    },
    issuers: [google.url]
  })
}

/** Where the authorization endpoint sent the browser. */
type Redirect = Visit

export interface Connection {
  client: OAuth2Client
  tokens: Credentials
  redirect: Redirect
}

/**
 * The whole code flow as an application runs it with google-auth-library: PKCE (S256) and state,
 * the stand-in's non-interactive consent (`login_hint` + `approve=1`), the code exchange.
 */
export async function connect (google: GoogleStandIn, email: string, scopes: string[], extra: Record<string, string | boolean> = {}): Promise<Connection> {
  const client = oauthClient(google)
  const { codeVerifier, codeChallenge } = await client.generateCodeVerifierAsync()
  const url = client.generateAuthUrl({
    access_type: 'offline',
    scope: scopes,
    state: 'state-value',
    login_hint: email,
    code_challenge: codeChallenge ?? '',
    code_challenge_method: CodeChallengeMethod.S256,
    ...extra,
    // The stand-in's own parameter: consent given without a page.
    approve: '1'
  } as Parameters<OAuth2Client['generateAuthUrl']>[0])
  const redirect = await visit(url)
  const code = redirect.location.searchParams.get('code')
  if (code === null) throw new Error(`no code in ${redirect.location.toString()}`)
  const { tokens } = await client.getToken({ code, codeVerifier })
  client.setCredentials(tokens)
  return { client, tokens, redirect }
}

interface ReceivedMessage {
  headers: Record<string, string>
  body: string
  at: number
}

export interface Receiver {
  url: string
  messages: ReceivedMessage[]
  /** The status the receiver answers with from now on. */
  respondWith: (status: number) => void
  waitForMessages: (count: number, timeoutMs?: number) => Promise<ReceivedMessage[]>
}

/** A webhook receiver on 127.0.0.1 that records every notification. */
export async function startReceiver (t: Teardown): Promise<Receiver> {
  const messages: ReceivedMessage[] = []
  let status = 200
  const url = await startWebhookServer(t, ({ headers, body }, response) => {
    messages.push({ headers, body, at: Date.now() })
    response.statusCode = status
    response.end()
  })
  return {
    url,
    messages,
    respondWith: (next) => { status = next },
    waitForMessages: async (count, timeoutMs = 5000) => await waitForCount(() => messages, count, timeoutMs)
  }
}
