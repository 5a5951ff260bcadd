// What the provider sign-in and connect tests share: the Google stand-in and the Microsoft and
// Apple OpenID stand-ins registered for the web callback, a Sync service stand-in that records
// credential hand-overs and answers the user metadata and change feed the tests script, and the
// browser's part of a provider round trip (authorization URL, consent, redirect back).
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { startGoogle, type GoogleStandIn } from '../../dev/google/index.js'
import { startOidcProvider, type OidcStandIn } from '../../dev/oidc/index.js'
import { SYNC_PATHS, type ConnectionSummary, type CredentialHandOver, type CursorRequest, type Invalidation } from '../../schemas/sync/index.js'
import { WEB_URL, type SignedIn } from '../helper.js'
import { decodeJwt } from 'jose'

export const CALLBACK = `${WEB_URL}/auth/extprovider/callback`
export const GOOGLE_CLIENT = { clientId: '123456789012-web.apps.googleusercontent.com', clientSecret: 'GOCSPX-web-test-secret' }
const MICROSOFT_CLIENT = { clientId: '0f3c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b', clientSecret: 'microsoft-test-secret-0123456789' }
const APPLE = { servicesId: 'com.example.calendar.web', teamId: 'TEAM123456', keyId: 'KEY1234567' }

export interface Providers {
  google: GoogleStandIn
  microsoft: OidcStandIn
  apple: OidcStandIn
  /** The configuration blocks naming the three stand-ins. */
  config: Record<string, unknown>
}

export async function startProviders (t: Test): Promise<Providers> {
  const google = await startGoogle({ clients: [{ ...GOOGLE_CLIENT, redirectUris: [CALLBACK] }], notificationRetries: 0 })
  t.teardown(() => google.close())
  const microsoft = await startOidcProvider({ preset: 'microsoft', clients: [{ ...MICROSOFT_CLIENT, redirectUris: [CALLBACK] }] })
  t.teardown(() => microsoft.close())
  // Apple authenticates the client with a JWT signed by the team's key; the stand-in holds the public half.
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const apple = await startOidcProvider({
    preset: 'apple',
    clients: [{
      clientId: APPLE.servicesId,
      teamId: APPLE.teamId,
      keyId: APPLE.keyId,
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      redirectUris: [CALLBACK]
    }]
  })
  t.teardown(() => apple.close())
  return {
    google,
    microsoft,
    apple,
    config: {
      extprovider: { ...GOOGLE_CLIENT, endpointBase: google.url },
      extprovider2: { ...MICROSOFT_CLIENT, endpointBase: microsoft.url },
      idsignin: {
        servicesId: APPLE.servicesId,
        teamId: APPLE.teamId,
        keyId: APPLE.keyId,
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        endpointBase: apple.url
      }
    }
  }
}

/** A Sync service stand-in for what provider sign-in and connect ask of Sync. */
export interface ProviderSync {
  url: string
  server: FastifyInstance
  handOvers: Array<{ userId: string, handOver: CredentialHandOver }>
  restarts: string[]
  /** Google connections Sync reports per user (user metadata); none by default. */
  connections: Map<string, ConnectionSummary[]>
  /** Invalidations the change feed hands out next, per user. */
  feed: Map<string, Invalidation[]>
  /** When false, the credentials route does not exist (a Sync older than the backend). */
  credentialsRoute: boolean
}

export async function startProviderSync (t: Test): Promise<ProviderSync> {
  const server = Fastify()
  const state: ProviderSync = { url: '', server, handOvers: [], restarts: [], connections: new Map(), feed: new Map(), credentialsRoute: true }
  const notFound = { statusCode: 404, code: 'NOT_FOUND', error: 'Not Found', message: 'Route not found' }
  server.post<{ Params: { userId: string }, Body: CredentialHandOver }>(SYNC_PATHS.credentials(':userId'), async (request, reply) => {
    if (!state.credentialsRoute) return await reply.code(404).send(notFound)
    state.handOvers.push({ userId: request.params.userId, handOver: request.body })
    return { connectionId: 'c'.repeat(24), created: true, queued: 'import' }
  })
  server.post<{ Params: { userId: string } }>(SYNC_PATHS.restartSync(':userId'), async (request) => {
    state.restarts.push(request.params.userId)
    return { queued: 1 }
  })
  server.post(SYNC_PATHS.stopWatches(':userId'), async () => ({ stopped: 0 }))
  server.get<{ Params: { userId: string } }>(SYNC_PATHS.metadata(':userId'), async (request) => ({
    userId: request.params.userId,
    cloudMutationMode: 'enabled',
    execution: 'active',
    connections: state.connections.get(request.params.userId) ?? []
  }))
  let position = 0
  server.post<{ Body: { users: CursorRequest[] } }>(SYNC_PATHS.changesBatch, async (request) => ({
    pages: request.body.users.map(({ userId, cursor }) => {
      const invalidations = cursor === null ? [] : state.feed.get(userId) ?? []
      if (cursor !== null) state.feed.delete(userId)
      position += 1
      return { userId, cursor: `cursor-${position}`, invalidations, hasMore: false, resyncRequired: false }
    })
  }))
  await server.listen({ port: 0, host: '127.0.0.1' })
  const address = server.server.address()
  if (address === null || typeof address === 'string') throw new Error('no address')
  state.url = `http://127.0.0.1:${address.port}`
  t.teardown(() => server.close())
  return state
}

export function googleConnection (state: ConnectionSummary['state'], reason: ConnectionSummary['reason'] = null): ConnectionSummary {
  const now = new Date().toISOString()
  return {
    connectionId: randomBytes(12).toString('hex'),
    provider: 'google',
    state,
    reason,
    lastReadFailureAt: null,
    lastSyncedAt: now,
    lastHealthyAt: now,
    importProgress: null,
    createdAt: now
  }
}

/** What the provider sent the browser back with. */
export interface Redirect {
  code: string
  state: string | undefined
  scope: string | undefined
  /** Apple's one-time `user` field (the person's name) on a first authorization. */
  user: string | undefined
}

/** Follows an authorization URL as a person who picks `email` and allows (the stand-ins' login_hint + approve=1). */
export async function authorize (authorizationUrl: string, email: string): Promise<Redirect> {
  const url = new URL(authorizationUrl)
  url.searchParams.set('login_hint', email)
  url.searchParams.set('approve', '1')
  const response = await fetch(url, { redirect: 'manual' })
  let parameters: URLSearchParams
  if (response.status === 302) {
    parameters = new URL(response.headers.get('location') ?? '').searchParams
  } else {
    // form_post (Apple): the page posts hidden fields to the callback.
    const html = await response.text()
    if (response.status !== 200) throw new Error(`authorization failed: ${response.status} ${html}`)
    parameters = new URLSearchParams()
    const unescape = (value: string) => value.replace(/&#(\d+);/g, (_match, code: string) => String.fromCharCode(Number(code)))
    for (const match of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) parameters.set(unescape(match[1] ?? ''), unescape(match[2] ?? ''))
  }
  const code = parameters.get('code')
  if (code === null) throw new Error(`no code in the redirect: ${parameters.toString()}`)
  return { code, state: parameters.get('state') ?? undefined, scope: parameters.get('scope') ?? undefined, user: parameters.get('user') ?? undefined }
}

/** A Google authorization URL as the web client builds one for connect (offline, consent, the calendar). */
export function googleConnectUrl (google: GoogleStandIn, options: { scope?: string, prompt?: string | null, codeChallenge?: string, nonce?: string } = {}): string {
  const url = new URL(`${google.url}/o/oauth2/v2/auth`)
  url.searchParams.set('client_id', GOOGLE_CLIENT.clientId)
  url.searchParams.set('redirect_uri', CALLBACK)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('scope', options.scope ?? 'openid email profile https://www.googleapis.com/auth/calendar')
  url.searchParams.set('access_type', 'offline')
  if (options.prompt !== null) url.searchParams.set('prompt', options.prompt ?? 'consent')
  url.searchParams.set('state', randomBytes(8).toString('hex'))
  if (options.codeChallenge !== undefined) {
    url.searchParams.set('code_challenge', options.codeChallenge)
    url.searchParams.set('code_challenge_method', 'S256')
  }
  if (options.nonce !== undefined) url.searchParams.set('nonce', options.nonce)
  return url.toString()
}

export type ThirdPartyId = 'google' | 'microsoft' | 'apple'

export interface SignInAnswer {
  statusCode: number
  body: Record<string, unknown>
  session: SignedIn | undefined
}

export function sessionOf (headers: Record<string, unknown>): SignedIn | undefined {
  const accessToken = headers['sx-access-token']
  if (typeof accessToken !== 'string') return undefined
  const payload = decodeJwt(accessToken) as { sub: string }
  return { userId: payload.sub, accessToken, refreshToken: String(headers['sx-refresh-token']), headers: { authorization: `Bearer ${accessToken}` } }
}

/** The web client's side of a provider sign-in against an app. */
export function signInThrough (app: FastifyInstance) {
  /** The web client's first step: the library's authorization URL (and PKCE verifier) for the one callback. */
  async function authorisationUrl (thirdPartyId: ThirdPartyId): Promise<{ url: URL, pkceCodeVerifier: string | undefined }> {
    const response = await app.inject({
      method: 'GET',
      url: `/api/auth/authorisationurl?thirdPartyId=${thirdPartyId}&redirectURIOnProviderDashboard=${encodeURIComponent(CALLBACK)}`
    })
    const body = response.json() as { status: string, urlWithQueryParams: string, pkceCodeVerifier?: string }
    if (body.status !== 'OK') throw new Error(`no authorization URL: ${response.body}`)
    return { url: new URL(body.urlWithQueryParams), pkceCodeVerifier: body.pkceCodeVerifier }
  }

  async function postSignInUp (thirdPartyId: ThirdPartyId, redirect: Redirect, pkceCodeVerifier: string | undefined, redirectUri = CALLBACK): Promise<SignInAnswer> {
    const redirectURIQueryParams: Record<string, string> = { code: redirect.code }
    if (redirect.state !== undefined) redirectURIQueryParams['state'] = redirect.state
    if (redirect.scope !== undefined) redirectURIQueryParams['scope'] = redirect.scope
    if (redirect.user !== undefined) redirectURIQueryParams['user'] = redirect.user
    const response = await app.inject({
      method: 'POST',
      url: '/api/auth/signinup',
      headers: { 'sx-auth-mode': 'header', rid: 'thirdparty' },
      payload: {
        thirdPartyId,
        redirectURIInfo: { redirectURIOnProviderDashboard: redirectUri, redirectURIQueryParams, ...(pkceCodeVerifier === undefined ? {} : { pkceCodeVerifier }) }
      }
    })
    return { statusCode: response.statusCode, body: response.json(), session: sessionOf(response.headers) }
  }

  /** A whole provider sign-in as a browser and the web client make it. */
  async function providerSignIn (thirdPartyId: ThirdPartyId, email: string, adjust?: (url: URL) => void): Promise<SignInAnswer> {
    const { url, pkceCodeVerifier } = await authorisationUrl(thirdPartyId)
    adjust?.(url)
    return await postSignInUp(thirdPartyId, await authorize(url.toString(), email), pkceCodeVerifier)
  }

  return { authorisationUrl, postSignInUp, providerSignIn }
}
