import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { revocationMessages } from '../lib/change-translation.js'
import { exchangeGoogleCode } from '../clients/google-oauth.js'
import type Session from 'supertokens-node/recipe/session'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import type { ConnectionSummary, GrantRevokedResult, Provider, ProviderAccountClaim, ProviderAccountClaimResult } from '../schemas/sync/index.js'
import type { CalendarEffect, ProviderConnectRequest, ProviderConnectResponse, ProviderSignInSummary } from '../schemas/provider-auth.js'
import type { Resolution } from '../lib/identity.js'
import { normalizeEmail } from '../lib/identity.js'
import { GOOGLE_SCOPES, grantIsRefreshToken, grantsMicrosoftScope, MICROSOFT_CALENDAR_SCOPE } from '../lib/identity-providers.js'
import {
  decideGoogleAuthMode, googleGrantRefusal, isAllowedRedirectUri, microsoftGrantRefusal, microsoftHandOverMode, missingGoogleScopes, MODE_EFFECT, providerLoginDetails, scopeList,
  syncAllowsIncremental, traceIdsFrom, type GoogleAuthFacts, type GoogleAuthMode, type LibraryProviderLogin
} from '../lib/provider-auth.js'
import { TypedHttpError } from '../lib/error-bodies.js'
import { connectOutcome } from '../lib/connect-outcome.js'
import { withDeadline } from '../lib/deadline.js'
import { isDuplicateKeyError } from '../stores/database.js'
import type { NewOutboxEntry } from '../lib/outbox.js'
import type { UserDocument } from '../stores/users.js'
import type { LibraryRequest } from './identity.js'

/** A connect the specification refuses with 409 and its own body (`{ result, code, message }`); the session is kept. */
export class ConnectConflictError extends Error {
  override name = 'ConnectConflictError'
  constructor (readonly code: 'EXTERNAL_ACCOUNT_ALREADY_CONNECTED' | 'EXTERNAL_CONNECT_EMAIL_MISMATCH', message: string) {
    super(message)
  }
}

/** A Google sign-in the identity decorator has adopted. */
interface GoogleSignIn {
  userId: string
  accountId: string
  email: string
  via: Resolution['via']
  accountOwnerBefore: UserDocument | null
  storedRefreshToken: string | undefined
  issuedRefreshToken: string | undefined
  scopes: string[]
}

export interface ProviderAuth {
  /** Why a provider's grant must be refused before anything is stored (a scope or offline access missing); undefined when it may go on. */
  grantRefusal: (thirdPartyId: string, accountId: string, oAuthTokens: Record<string, unknown>) => Promise<string | undefined>
  /**
   * Finishes a provider sign-in the session library completed: the canonical user (replacing the
   * library's session when it names another user) and, for Google, the mode and the credential
   * hand-over. Answers the session to keep and the summary for the client.
   */
  signedIn: (request: LibraryRequest, session: Session.SessionContainer, login: LibraryProviderLogin) => Promise<{ session: Session.SessionContainer, summary: ProviderSignInSummary }>
  /** Decides the mode of a Google sign-in, logs it and hands the credential to Sync; answers the summary. */
  googleSignedIn: (signIn: GoogleSignIn) => Promise<ProviderSignInSummary>
  /** Connects a Google account to the signed-in user (POST /api/auth/extprovider/connect). */
  connectGoogle: (userId: string, request: ProviderConnectRequest) => Promise<ProviderConnectResponse>
  /**
   * A provider account a connect through Sync brought: the direct connect's rules (an account
   * another user holds is a conflict; its email must be the user's), then it is the user's.
   */
  claimConnectedAccount: (claim: ProviderAccountClaim) => Promise<ProviderAccountClaimResult>
  /** The provider refused the user's stored refresh token for good: every session of the user ends. */
  grantRevoked: (notice: { userId: string, provider: Provider, connectionId?: string | undefined, source: 'changeFeed' | 'sync' }) => Promise<GrantRevokedResult>
}

/** The session flags a successful connect sets, read by clients from the user metadata. */
const RESTART_FLAGS = { sync: { importGCal: 'RESTART', incrementalGCalSync: 'RESTART' } } as const

// A sign-in asks Sync how the user's sync is doing; it does not wait longer than this for the answer.
const SYNC_VIEW_DEADLINE_MS = 3000

/** The spec's email rule of a connect: the provider's email is the user's (letter case aside). */
function sameEmail (providerEmail: string | undefined, userEmail: string): boolean {
  return providerEmail !== undefined && normalizeEmail(providerEmail) === normalizeEmail(userEmail)
}

/** What the provider sign-in and connect use cases need of the app. */
export type ProviderAuthDeps = Pick<FastifyInstance, 'config' | 'users' | 'credentials' | 'outbox' | 'syncClient' | 'sessionRevocations' | 'sse' | 'mongo' | 'identity' | 'analytics'>

export function createProviderAuth (app: ProviderAuthDeps, log: FastifyBaseLogger): ProviderAuth {
  const { config, users, credentials, outbox, syncClient, sessionRevocations, sse, mongo, identity, analytics } = app
  const trace = traceIdsFrom(config.backend.serviceToken)

  /** The user's connections of a provider as Sync sees them; null when Sync did not answer in time. */
  async function connectionsOf (userId: string, provider: Provider): Promise<ConnectionSummary[] | null> {
    try {
      const metadata = await withDeadline(syncClient.metadata(userId), SYNC_VIEW_DEADLINE_MS)
      return metadata.connections.filter((connection) => connection.provider === provider)
    } catch (error) {
      log.warn({ provider, reason: (error as Error).message }, 'sync health unknown at a provider sign-in; the repair path is taken')
      return null
    }
  }

  function logDecision (flow: 'signIn' | 'connect', mode: GoogleAuthMode, facts: GoogleAuthFacts, ids: { userId: string, accountId: string, email: string }, refreshTokenIssued: boolean): void {
    // Only keyed hashes: the same person gets the same trace ids in every line, and a log reader
    // cannot turn them back into an address or an account.
    log.info({
      flow,
      mode,
      ...facts,
      refreshTokenIssued,
      trace: { user: trace(ids.userId), account: trace(ids.accountId), email: trace(ids.email) }
    }, 'google_auth_decision')
  }

  function handOverEntry (userId: string, accountId: string, refreshToken: string, scopes: string[], mode: GoogleAuthMode, provider: Provider = 'google'): NewOutboxEntry {
    return {
      kind: 'credentialHandOver',
      handOver: { provider, providerAccountId: accountId, sealedRefreshToken: credentials.sealForOutbox(userId, refreshToken), scopes, mode }
    }
  }

  /**
   * A Microsoft sign-in that brought a refresh token with calendar access hands it to the Sync
   * service, which imports, syncs or repairs the user's Microsoft calendar, as a Google sign-in does.
   */
  async function microsoftSignedIn (userId: string, accountId: string, refreshToken: string | undefined, scopes: string[]): Promise<CalendarEffect> {
    if (refreshToken === undefined || !grantsMicrosoftScope(scopes.join(' '), MICROSOFT_CALENDAR_SCOPE)) return 'none'
    const mode = microsoftHandOverMode(await connectionsOf(userId, 'microsoft'))
    await outbox.add(userId, [handOverEntry(userId, accountId, refreshToken, scopes, mode, 'microsoft')])
    outbox.kick(userId)
    log.info({ mode, trace: { user: trace(userId), account: trace(accountId) } }, 'Microsoft calendar handed to the Sync service at sign-in')
    return MODE_EFFECT[mode]
  }

  async function googleSignedIn (signIn: GoogleSignIn): Promise<ProviderSignInSummary> {
    const userExists = signIn.accountOwnerBefore !== null
    const refreshTokenStored = signIn.storedRefreshToken !== undefined
    // Sync is asked only when its answer can change the mode.
    const connections = userExists && refreshTokenStored ? await connectionsOf(signIn.userId, 'google') : null
    const facts: GoogleAuthFacts = { userExists, refreshTokenStored, syncAllowsIncremental: syncAllowsIncremental(connections) }
    const mode = decideGoogleAuthMode(facts)
    // RECONNECT_REPAIR reuses the stored refresh token when Google issued none.
    const refreshToken = signIn.issuedRefreshToken ?? signIn.storedRefreshToken
    let calendar: CalendarEffect = 'none'
    if (refreshToken !== undefined) {
      await outbox.add(signIn.userId, [handOverEntry(signIn.userId, signIn.accountId, refreshToken, signIn.scopes, mode)])
      outbox.kick(signIn.userId)
      calendar = MODE_EFFECT[mode]
    }
    logDecision('signIn', mode, facts, signIn, signIn.issuedRefreshToken !== undefined)
    return { provider: 'google', newUser: signIn.via === 'new', linkedBy: signIn.via, mode, calendar }
  }

  async function signedIn (request: LibraryRequest, session: Session.SessionContainer, login: LibraryProviderLogin): Promise<{ session: Session.SessionContainer, summary: ProviderSignInSummary }> {
    const details = providerLoginDetails(login)
    if (details === undefined) throw new Error(`sign-in through an unknown provider: ${login.thirdPartyId}`)
    const adopted = await identity.adoptProviderLogin(request, session, {
      provider: details.provider,
      accountId: details.accountId,
      email: details.email,
      emailVerified: details.emailVerified,
      privateRelay: details.privateRelay,
      name: details.name,
      // Only Google's token is kept on the user record (specification); Microsoft's goes to Sync alone.
      refreshToken: details.provider === 'google' ? details.refreshToken : undefined
    })
    if (details.provider !== 'google') {
      const calendar = details.provider === 'microsoft'
        ? await microsoftSignedIn(adopted.userId, details.accountId, details.refreshToken, scopeList(details.grantedScope))
        : 'none'
      return { session: adopted.session, summary: { provider: details.provider, newUser: adopted.via === 'new', linkedBy: adopted.via, calendar } }
    }
    const summary = await googleSignedIn({
      userId: adopted.userId,
      accountId: details.accountId,
      email: details.email,
      via: adopted.via,
      accountOwnerBefore: adopted.accountOwnerBefore,
      storedRefreshToken: adopted.storedRefreshToken,
      issuedRefreshToken: details.refreshToken,
      scopes: scopeList(details.grantedScope)
    })
    return { session: adopted.session, summary }
  }

  async function refusalOf (thirdPartyId: string, accountId: string, oAuthTokens: Record<string, unknown>): Promise<string | undefined> {
    const grantedScope = typeof oAuthTokens['scope'] === 'string' ? oAuthTokens['scope'] : undefined
    const refreshTokenIssued = typeof oAuthTokens['refresh_token'] === 'string' && oAuthTokens['refresh_token'] !== ''
    if (thirdPartyId === 'microsoft') return microsoftGrantRefusal({ grantedScope, refreshTokenIssued })
    if (thirdPartyId !== 'google') return undefined
    const owner = await users.findByProviderAccount('google', accountId)
    return googleGrantRefusal({ requiredScopes: GOOGLE_SCOPES, grantedScope, refreshTokenIssued, refreshTokenStored: owner?.google?.gRefreshToken !== undefined })
  }

  /**
   * Each connect round trip ends in one oauth_callback event, whatever its outcome (specification,
   * "Outbound analytics events"), under the client's correlation id when it sent one.
   */
  async function connectGoogle (userId: string, request: ProviderConnectRequest): Promise<ProviderConnectResponse> {
    const correlationId = request.correlationId ?? randomBytes(6).toString('base64url')
    let refusal: unknown = null
    try {
      return await connectGoogleAccount(userId, request)
    } catch (error) {
      refusal = error
      throw error
    } finally {
      const outcome = connectOutcome(refusal === null ? null : (refusal as { code?: unknown }).code as string | undefined)
      analytics.capture({
        name: 'oauth_callback',
        distinctId: userId,
        properties: {
          provider: 'google',
          outcome,
          intent: 'connect',
          correlationId,
          ...(outcome === 'error' ? { errorClass: refusal instanceof Error ? refusal.name : 'Error' } : {})
        }
      })
    }
  }

  async function connectGoogleAccount (userId: string, request: ProviderConnectRequest): Promise<ProviderConnectResponse> {
    // The specification's order: maintenance, the one redirect URI, the exchange, then the two conflicts.
    if (config.sync.cloudMutationMode === 'maintenance') {
      throw new TypedHttpError(503, 'MAINTENANCE', 'Calendar connections are paused for maintenance; try again later', {}, 60)
    }
    if (!isAllowedRedirectUri(request.redirectUri, config.web.url)) {
      throw new TypedHttpError(400, 'REDIRECT_URI_NOT_ALLOWED', 'The redirect URI is not this service\'s provider callback')
    }
    const { tokens, accountId, email } = await exchangeGoogleCode(config.extprovider, request, log)
    const owner = await users.findByProviderAccount('google', accountId)
    if (owner !== null && owner._id.toHexString() !== userId) {
      throw new ConnectConflictError('EXTERNAL_ACCOUNT_ALREADY_CONNECTED', 'This Google account is connected to another user; sign in with that user to use it')
    }
    const user = await users.findById(userId)
    if (user === null) throw new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this session')
    if (!sameEmail(email, user.email)) {
      throw new ConnectConflictError('EXTERNAL_CONNECT_EMAIL_MISMATCH', 'The Google account\'s email differs from this user\'s; sign in with the matching account')
    }
    const missing = missingGoogleScopes(GOOGLE_SCOPES, tokens.scope ?? undefined)
    if (missing.length > 0) {
      throw new TypedHttpError(400, 'SCOPES_INCOMPLETE', `Google did not grant every permission the calendar needs (missing: ${missing.join(', ')})`)
    }
    const sameAccount = user.google?.googleId === accountId
    const stored = sameAccount ? credentials.openForUser(userId, user.google?.gRefreshToken) : undefined
    const issued = typeof tokens.refresh_token === 'string' ? tokens.refresh_token : undefined
    const refreshToken = issued ?? stored
    if (refreshToken === undefined) {
      throw new TypedHttpError(400, 'OFFLINE_ACCESS_MISSING', 'Google issued no refresh token; connect again with offline access and consent')
    }
    const connections = sameAccount && stored !== undefined ? await connectionsOf(userId, 'google') : null
    const facts: GoogleAuthFacts = { userExists: sameAccount, refreshTokenStored: stored !== undefined, syncAllowsIncremental: syncAllowsIncremental(connections) }
    const mode = decideGoogleAuthMode(facts)
    const scopes = scopeList(tokens.scope ?? undefined)
    try {
      await mongo.withTransaction(async (session) => {
        await users.linkProviderAccount(userId, {
          provider: 'google',
          accountId,
          ...(issued !== undefined && credentials.differs(issued, stored) ? { sealedRefreshToken: credentials.sealForUser(userId, issued) } : {})
        }, session === undefined ? {} : { session })
        await outbox.add(userId, [handOverEntry(userId, accountId, refreshToken, scopes, mode), { kind: 'restartSync' }], session === undefined ? {} : { session })
      })
    } catch (error) {
      // Another user took the account between the check and the write.
      if (isDuplicateKeyError(error)) throw new ConnectConflictError('EXTERNAL_ACCOUNT_ALREADY_CONNECTED', 'This Google account is connected to another user; sign in with that user to use it')
      throw error
    }
    await users.proven({ userId, providerAccounts: [{ provider: 'google', accountId }] })
    await UserMetadata.updateUserMetadata(userId, RESTART_FLAGS)
    outbox.kick(userId)
    logDecision('connect', mode, facts, { userId, accountId, email: user.email }, issued !== undefined)
    // Open tabs learn the flags at once; a new stream replays them anyway.
    const { metadata } = await UserMetadata.getUserMetadata(userId)
    sse.publishUserMetadataChanged(userId, { session: { userId, metadata }, sync: null })
    return { result: 'User connected', mode, calendar: MODE_EFFECT[mode] }
  }

  async function claimConnectedAccount (claim: ProviderAccountClaim): Promise<ProviderAccountClaimResult> {
    const owner = await users.findByProviderAccount(claim.provider, claim.accountId)
    if (owner !== null && owner._id.toHexString() !== claim.userId) return { outcome: 'conflict' }
    const user = await users.findById(claim.userId)
    if (user === null) throw new TypedHttpError(404, 'USER_NOT_FOUND', 'No user record for this user id')
    if (!sameEmail(claim.email, user.email)) return { outcome: 'mismatch' }
    if (owner !== null) return { outcome: 'claimed' }
    try {
      await users.linkProviderAccount(claim.userId, { provider: claim.provider, accountId: claim.accountId })
    } catch (error) {
      // Another user took the account between the check and the write.
      if (isDuplicateKeyError(error)) return { outcome: 'conflict' }
      throw error
    }
    log.info({ userId: claim.userId, provider: claim.provider, accountId: claim.accountId }, 'provider account connected through Sync is the user\'s')
    return { outcome: 'claimed' }
  }

  async function grantRevoked (notice: { userId: string, provider: Provider, connectionId?: string | undefined, source: 'changeFeed' | 'sync' }): Promise<GrantRevokedResult> {
    // Sync's own notice can overtake the feed: the open streams hear why before they close.
    if (notice.source === 'sync' && notice.connectionId !== undefined) {
      for (const message of revocationMessages(notice.connectionId, notice.provider)) sse.publish(notice.userId, message)
    }
    if (!grantIsRefreshToken(notice.provider)) return { sessionsRevoked: 0, streamsClosed: 0 }
    const result = await sessionRevocations.revokeUser(notice.userId, 'providerRevoked')
    log.warn({
      user: trace(notice.userId),
      provider: notice.provider,
      connectionId: notice.connectionId,
      source: notice.source,
      ...result
    }, 'provider grant revoked (invalid_grant): the user\'s sessions are revoked; they sign in again')
    return result
  }

  return { grantRefusal: refusalOf, signedIn, googleSignedIn, connectGoogle, claimConnectedAccount, grantRevoked }
}
