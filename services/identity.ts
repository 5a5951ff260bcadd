import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import supertokens from 'supertokens-node'
import Session from 'supertokens-node/recipe/session'
import EmailVerification from 'supertokens-node/recipe/emailverification'
import {
  idForNewPasswordLogin, isCanonicalUserId, mintUserId, normalizeEmail, resolvePasswordUser, resolveProviderUser,
  type ProviderLogin, type Resolution
} from '../lib/identity.js'
import { isDuplicateKeyError } from '../stores/database.js'
import { knownUser, type UserDocument } from '../stores/users.js'

type RecipeUserId = ReturnType<typeof supertokens.convertToRecipeUserId>
type CreateNewSession = Parameters<typeof Session.createNewSession>

/** The part of the session library's answer for a new login that the mapping rewrites. */
interface NewLoginResult {
  user: { id: string, loginMethods: Array<{ recipeUserId: RecipeUserId }> }
  recipeUserId: RecipeUserId
}

/** What adopting an identity needs of the request the session library is answering. */
export interface LibraryRequest {
  req: CreateNewSession[0]
  res: CreateNewSession[1]
  tenantId: string
  userContext: CreateNewSession[6]
}

/** A provider login as the identity decorator records it. */
interface ProviderLoginFacts extends ProviderLogin {
  name: string | undefined
  /** A refresh token the provider issued at this login (Google), in the clear; stored sealed. */
  refreshToken: string | undefined
}

/** What a provider login found and did. */
interface AdoptedProviderLogin {
  session: Session.SessionContainer
  userId: string
  via: Resolution['via']
  /** The record that held the provider account before this login, as it was. */
  accountOwnerBefore: UserDocument | null
  /** The refresh token stored for the account before this login, opened; undefined when none. */
  storedRefreshToken: string | undefined
}

export interface Identity {
  /** The canonical id a new password login gets: the unclaimed user who owns the email, else a new id. */
  idForNewPasswordLogin: (email: string) => Promise<string>
  /**
   * Maps a login that is new to the session library onto a canonical ObjectId user id, so its
   * sessions carry that id from their first token. An existing mapping is kept.
   */
  withCanonicalMapping: <T extends NewLoginResult>(result: T, chooseExternalUserId: () => Promise<string>) => Promise<T>
  /**
   * Records a password authentication on the user record and makes sure the session names the
   * canonical user (specification, Identity model 3 and 4): the user that owns the email wins over
   * the id the library issued, unless this login has not verified the address and that user holds
   * a verified email or a provider account. The session is replaced when the user differs.
   */
  adopt: (request: LibraryRequest, session: Session.SessionContainer, facts: { email: string, name: string | undefined }) => Promise<Session.SessionContainer>
  /**
   * The same for a provider login (Identity model 4 to 6): the owner of the provider account, else
   * a verified user of the same verified email, else a user of its own; one owner per provider
   * account, race-safe through the unique indexes.
   */
  adoptProviderLogin: (request: LibraryRequest, session: Session.SessionContainer, login: ProviderLoginFacts) => Promise<AdoptedProviderLogin>
}

// Two first logins of one person at once (two tabs, or two providers sharing an email) race for
// the same unique index entry; the loser reads again and joins the winner. One retry suffices per
// competitor; a few cover a burst.
const ADOPTION_ATTEMPTS = 4

/** Who a login is: the canonical user of every password and provider sign-in (specification, Identity model). */
export function createIdentity ({ users, credentials }: Pick<FastifyInstance, 'users' | 'credentials'>, log: FastifyBaseLogger): Identity {
  async function withCanonicalMapping<T extends NewLoginResult> (result: T, chooseExternalUserId: () => Promise<string>): Promise<T> {
    if (result.user.loginMethods.length !== 1) return result
    let externalUserId: string
    const existing = await supertokens.getUserIdMapping({ userId: result.user.id, userIdType: 'SUPERTOKENS' })
    if (existing.status === 'OK') {
      externalUserId = existing.externalUserId
    } else if (isCanonicalUserId(result.user.id)) {
      return result
    } else {
      externalUserId = await chooseExternalUserId()
      const created = await supertokens.createUserIdMapping({ superTokensUserId: result.user.id, externalUserId })
      if (created.status !== 'OK') {
        // A concurrent first login of the same account mapped it first: both use that mapping.
        const winner = await supertokens.getUserIdMapping({ userId: result.user.id, userIdType: 'SUPERTOKENS' })
        if (winner.status !== 'OK') throw new Error(`user id mapping failed: ${created.status}`)
        externalUserId = winner.externalUserId
      }
    }
    const recipeUserId = supertokens.convertToRecipeUserId(externalUserId)
    const loginMethod = result.user.loginMethods[0]
    if (loginMethod) loginMethod.recipeUserId = recipeUserId
    result.user.id = externalUserId
    return { ...result, recipeUserId }
  }

  /** The session for the canonical user: this one when it names that user, else a new one in its place. */
  async function sessionFor (request: LibraryRequest, session: Session.SessionContainer, canonicalUserId: string): Promise<Session.SessionContainer> {
    const sessionUserId = session.getUserId()
    if (canonicalUserId === sessionUserId) return session

    // The session library must know the canonical id before it can issue a session for it: when no
    // login is mapped to it yet, this login's mapping moves to it.
    const canonicalMapping = await supertokens.getUserIdMapping({ userId: canonicalUserId, userIdType: 'EXTERNAL' })
    if (canonicalMapping.status !== 'OK') {
      const ownMapping = await supertokens.getUserIdMapping({ userId: sessionUserId, userIdType: 'ANY' })
      const superTokensUserId = ownMapping.status === 'OK' ? ownMapping.superTokensUserId : sessionUserId
      if (ownMapping.status === 'OK') await supertokens.deleteUserIdMapping({ userId: superTokensUserId, userIdType: 'SUPERTOKENS', force: true })
      await supertokens.createUserIdMapping({ superTokensUserId, externalUserId: canonicalUserId, force: true })
    }

    // Revoke first: creating the new session then writes its tokens over the old ones.
    await Session.revokeSession(session.getHandle())
    log.info({ sessionHandle: session.getHandle() }, 'session remapped to the canonical user id')
    return await Session.createNewSession(
      request.req, request.res, request.tenantId, supertokens.convertToRecipeUserId(canonicalUserId), {}, {}, request.userContext
    )
  }

  async function adopt (request: LibraryRequest, session: Session.SessionContainer, facts: { email: string, name: string | undefined }): Promise<Session.SessionContainer> {
    const email = normalizeEmail(facts.email)
    const sessionUserId = session.getUserId()
    const loginEmailVerified = await EmailVerification.isEmailVerified(session.getRecipeUserId(), email, request.userContext)
    for (let attempt = 1; ; attempt++) {
      const owner = await users.findEmailOwner(email)
      const chosen = resolvePasswordUser({ emailOwner: owner === null ? undefined : knownUser(owner), sessionUserId, loginEmailVerified })
      try {
        await users.recordAuthentication(chosen.userId, { email, name: facts.name, now: new Date(), emailVerified: chosen.claimVerifiedEmail })
        return await sessionFor(request, session, chosen.userId)
      } catch (error) {
        if (!isDuplicateKeyError(error) || attempt >= ADOPTION_ATTEMPTS) throw error
      }
    }
  }

  async function adoptProviderLogin (request: LibraryRequest, session: Session.SessionContainer, login: ProviderLoginFacts): Promise<AdoptedProviderLogin> {
    const email = normalizeEmail(login.email)
    const sessionUserId = session.getUserId()
    for (let attempt = 1; ; attempt++) {
      const accountOwner = await users.findByProviderAccount(login.provider, login.accountId)
      const emailOwner = await users.findEmailOwner(email)
      const sessionUserHasRecord = isCanonicalUserId(sessionUserId) && await users.findById(sessionUserId) !== null
      const resolution = resolveProviderUser({
        login: { ...login, email },
        accountOwner: accountOwner === null ? undefined : knownUser(accountOwner),
        emailOwner: emailOwner === null ? undefined : knownUser(emailOwner),
        sessionUserId,
        sessionUserHasRecord
      })
      const { userId } = resolution
      const storedRefreshToken = resolution.via === 'account' ? credentials.openForUser(userId, accountOwner?.google?.gRefreshToken) : undefined
      // Replaced only when the provider issued a different one; the stored payload stays otherwise.
      const sealedRefreshToken = login.refreshToken !== undefined && credentials.differs(login.refreshToken, storedRefreshToken)
        ? credentials.sealForUser(userId, login.refreshToken)
        : undefined
      try {
        await users.recordAuthentication(userId, {
          email,
          name: login.name,
          now: new Date(),
          emailVerified: resolution.claimVerifiedEmail,
          provider: { provider: login.provider, accountId: login.accountId, ...(sealedRefreshToken === undefined ? {} : { sealedRefreshToken }) }
        })
      } catch (error) {
        if (!isDuplicateKeyError(error) || attempt >= ADOPTION_ATTEMPTS) throw error
        continue
      }
      return {
        session: await sessionFor(request, session, userId),
        userId,
        via: resolution.via,
        accountOwnerBefore: accountOwner,
        storedRefreshToken
      }
    }
  }

  return {
    idForNewPasswordLogin: async (email: string) => {
      const owner = await users.findEmailOwner(email)
      return owner === null ? mintUserId() : idForNewPasswordLogin(knownUser(owner))
    },
    withCanonicalMapping,
    adopt,
    adoptProviderLogin
  }
}
