// A small app running the real supertokens-node against the core under test, called over real
// HTTP. supertokens.init is process-global, so each test file builds exactly one of these.
import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify'
import formbody from '@fastify/formbody'
import supertokens from 'supertokens-node'
import { errorHandler, plugin } from 'supertokens-node/framework/fastify'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import Session from 'supertokens-node/recipe/session'
import { verifySession } from 'supertokens-node/recipe/session/framework/fastify'
import type { SessionRequest } from 'supertokens-node/framework/fastify'
import type { JSONObject } from 'supertokens-node/lib/build/types'
import ThirdParty from 'supertokens-node/recipe/thirdparty'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import type { Target } from './target.js'
import { decodeJwt, decodeProtectedHeader } from 'jose'

interface CapturedEmail {
  type: string
  email: string
  link: string
}

interface ProviderAccount {
  thirdPartyUserId: string
  email: string
  isVerified: boolean
}

export interface Harness {
  baseUrl: string
  emails: CapturedEmail[]
  /** Provider accounts by authorization code: what the overridden provider answers. */
  providerAccounts: Map<string, ProviderAccount>
  app: FastifyInstance
}

interface Teardown { teardown (fn: () => unknown): void }

export interface HarnessOptions {
  /** Overrides the api key the SDK sends (to prove a wrong one is refused). */
  apiKey?: string | undefined
}

export const PROVIDER_ID = 'extprovider'

export async function startHarness (t: Teardown, target: Target, options: HarnessOptions = {}): Promise<Harness> {
  const emails: CapturedEmail[] = []
  const providerAccounts = new Map<string, ProviderAccount>()
  const apiKey = 'apiKey' in options ? options.apiKey : target.apiKey

  supertokens.init({
    framework: 'fastify',
    supertokens: apiKey === undefined ? { connectionURI: target.uri } : { connectionURI: target.uri, apiKey },
    appInfo: { appName: 'conformance', apiDomain: 'http://127.0.0.1', websiteDomain: 'http://127.0.0.1:3000', apiBasePath: '/auth' },
    recipeList: [
      EmailPassword.init({
        signUpFeature: { formFields: [{ id: 'name' }] },
        emailDelivery: {
          override: (original) => ({
            ...original,
            sendEmail: async (input) => {
              emails.push({ type: input.type, email: input.user.email, link: input.passwordResetLink })
            }
          })
        }
      }),
      EmailVerification.init({
        mode: 'OPTIONAL',
        emailDelivery: {
          override: (original) => ({
            ...original,
            sendEmail: async (input) => {
              emails.push({ type: input.type, email: input.user.email, link: input.emailVerifyLink })
            }
          })
        }
      }),
      ThirdParty.init({
        signInAndUpFeature: {
          providers: [{
            config: {
              thirdPartyId: PROVIDER_ID,
              name: 'External provider',
              authorizationEndpoint: 'http://127.0.0.1:9/authorize',
              tokenEndpoint: 'http://127.0.0.1:9/token',
              clients: [{ clientId: 'client-id', clientSecret: 'client-secret', scope: ['openid', 'email'] }]
            },
            // The provider's network calls are answered here: the test never leaves the machine.
            override: (original) => {
              if (original.type !== 'oauth2') return original
              return {
                ...original,
                exchangeAuthCodeForOAuthTokens: async ({ redirectURIInfo }) => {
                  const code = redirectURIInfo.redirectURIQueryParams['code']
                  if (typeof code !== 'string' || !providerAccounts.has(code)) throw new Error('unknown authorization code')
                  return { access_token: `token-for-${code}` }
                },
                getUserInfo: async ({ oAuthTokens }: { oAuthTokens: Record<string, unknown> }) => {
                  const code = String(oAuthTokens['access_token']).replace(/^token-for-/, '')
                  const account = providerAccounts.get(code)
                  if (account === undefined) throw new Error('unknown provider token')
                  return {
                    thirdPartyUserId: account.thirdPartyUserId,
                    email: { id: account.email, isVerified: account.isVerified },
                    rawUserInfoFromProvider: {}
                  }
                }
              }
            }
          }]
        }
      }),
      Session.init({ antiCsrf: 'VIA_TOKEN' }),
      UserMetadata.init()
    ]
  })

  const app = Fastify()
  await app.register(formbody)
  await app.register(plugin)
  app.setErrorHandler(errorHandler())

  // The SDK types its preHandler for an older Fastify request type; at runtime it is a plain
  // async preHandler.
  const requireSession = (options?: { checkDatabase: boolean }) =>
    verifySession(options) as unknown as preHandlerAsyncHookHandler

  app.get('/me', { preHandler: requireSession() }, async (request) => {
    const session = (request as SessionRequest).session
    if (session === undefined) throw new Error('verifySession let a request through without a session')
    return { userId: session.getUserId(), handle: session.getHandle(), payload: session.getAccessTokenPayload() }
  })
  app.get('/me/checked', { preHandler: requireSession({ checkDatabase: true }) }, async (request) => {
    const session = (request as SessionRequest).session
    if (session === undefined) throw new Error('verifySession let a request through without a session')
    return { userId: session.getUserId(), handle: session.getHandle() }
  })
  app.post('/me/claims', { preHandler: requireSession() }, async (request) => {
    const session = (request as SessionRequest).session
    if (session === undefined) throw new Error('verifySession let a request through without a session')
    await session.mergeIntoAccessTokenPayload(request.body as JSONObject)
    return { payload: session.getAccessTokenPayload() }
  })

  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('harness did not bind a TCP port')
  return { baseUrl: `http://127.0.0.1:${address.port}`, emails, providerAccounts, app }
}

export const uniqueEmail = (label: string): string => `${label}-${randomUUID().slice(0, 8)}@Example.com`

export interface CallResult {
  status: number
  body: Record<string, unknown>
  headers: Headers
}

export async function call (baseUrl: string, method: string, path: string, init: { body?: unknown, headers?: Record<string, string> } = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...init.headers }
  let body: string | undefined
  if (init.body !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(init.body)
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body })
  const text = await response.text()
  let parsed: Record<string, unknown> = {}
  if (text !== '') {
    try {
      parsed = JSON.parse(text) as Record<string, unknown>
    } catch {
      parsed = { text }
    }
  }
  return { status: response.status, body: parsed, headers: response.headers }
}

export const formFields = (fields: Record<string, string>) =>
  ({ formFields: Object.entries(fields).map(([id, value]) => ({ id, value })) })

/** Decodes a JWT's payload without verifying it: tests look at what the core put in. */
export function jwtPayload (token: string): Record<string, unknown> {
  return decodeJwt(token)
}

export function jwtHeader (token: string): Record<string, unknown> {
  return decodeProtectedHeader(token)
}

/** Header-mode tokens as a native client keeps them. */
export class HeaderClient {
  accessToken: string | undefined
  refreshToken: string | undefined

  constructor (readonly baseUrl: string) {}

  private keep (result: CallResult): CallResult {
    const access = result.headers.get('st-access-token')
    const refresh = result.headers.get('st-refresh-token')
    // The SDK clears tokens by sending them empty.
    if (access !== null) this.accessToken = access === '' ? undefined : access
    if (refresh !== null) this.refreshToken = refresh === '' ? undefined : refresh
    return result
  }

  async request (method: string, path: string, body?: unknown, token = this.accessToken): Promise<CallResult> {
    const headers: Record<string, string> = { 'st-auth-mode': 'header' }
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`
    return this.keep(await call(this.baseUrl, method, path, { body, headers }))
  }

  async refresh (token = this.refreshToken): Promise<CallResult> {
    return this.request('POST', '/auth/session/refresh', undefined, token)
  }
}

interface StoredCookie { value: string, path: string }

/** Cookie-mode tokens as a browser keeps them, plus the anti-CSRF header it must echo. */
export class CookieClient {
  readonly cookies = new Map<string, StoredCookie>()
  antiCsrf: string | undefined

  constructor (readonly baseUrl: string) {}

  private keep (result: CallResult): CallResult {
    for (const line of result.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim())
      const separator = pair.indexOf('=')
      const name = pair.slice(0, separator)
      const value = pair.slice(separator + 1)
      const pathAttribute = attributes.find((a) => a.toLowerCase().startsWith('path='))
      const expires = attributes.find((a) => a.toLowerCase().startsWith('expires='))
      const expired = expires !== undefined && Date.parse(expires.slice('expires='.length)) <= Date.now()
      if (value === '' || expired) this.cookies.delete(name)
      else this.cookies.set(name, { value, path: pathAttribute?.slice('path='.length) ?? '/' })
    }
    const antiCsrf = result.headers.get('anti-csrf')
    if (antiCsrf !== null) this.antiCsrf = antiCsrf
    return result
  }

  cookieHeader (path: string): string {
    return [...this.cookies]
      .filter(([, cookie]) => path.startsWith(cookie.path))
      .map(([name, cookie]) => `${name}=${cookie.value}`)
      .join('; ')
  }

  async request (method: string, path: string, body?: unknown, options: { antiCsrf?: boolean } = {}): Promise<CallResult> {
    const headers: Record<string, string> = { 'st-auth-mode': 'cookie' }
    const cookie = this.cookieHeader(path)
    if (cookie !== '') headers['cookie'] = cookie
    if ((options.antiCsrf ?? true) && this.antiCsrf !== undefined) headers['anti-csrf'] = this.antiCsrf
    return this.keep(await call(this.baseUrl, method, path, { body, headers }))
  }
}

/** A raw CDI call, as the SDK makes it, for checks below the SDK (api key, restarts, bad input). */
export async function cdi (target: { uri: string, apiKey: string | undefined }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<CallResult> {
  const allHeaders: Record<string, string> = { 'cdi-version': '5.4', ...headers }
  if (target.apiKey !== undefined && !('api-key' in headers)) allHeaders['api-key'] = target.apiKey
  return call(target.uri, method, path, { body, headers: allHeaders })
}
