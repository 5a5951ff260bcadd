import fp from 'fastify-plugin'
import supertokens from 'supertokens-node'
import Session from 'supertokens-node/recipe/session'
import { chooseCanonicalUserId, isCanonicalUserId, mintUserId, normalizeEmail } from '../../lib/identity.js'

type RecipeUserId = ReturnType<typeof supertokens.convertToRecipeUserId>
type CreateNewSession = Parameters<typeof Session.createNewSession>

/** The part of the session library's answer for a new login that the mapping rewrites. */
export interface NewLoginResult {
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

export interface Identity {
  /** The canonical id a new password login gets: the user who owns the email, else a new id. */
  idForNewPasswordLogin: (email: string) => Promise<string>
  /**
   * Maps a login that is new to the session library onto a canonical ObjectId user id, so its
   * sessions carry that id from their first token. An existing mapping is kept.
   */
  withCanonicalMapping: <T extends NewLoginResult>(result: T, chooseExternalUserId: () => Promise<string>) => Promise<T>
  /**
   * Records the authentication on the user record and makes sure the session names the canonical
   * user (specification, Identity model 3): an existing user with the same normalized email wins
   * over the id the library issued, and the session is then replaced by one for that user.
   */
  adopt: (request: LibraryRequest, session: Session.SessionContainer, facts: { email: string, name: string | undefined }) => Promise<Session.SessionContainer>
}

declare module 'fastify' {
  interface FastifyInstance {
    identity: Identity
  }
}

export default fp(async function identity (fastify) {
  const users = fastify.users

  async function withCanonicalMapping<T extends NewLoginResult> (result: T, chooseExternalUserId: () => Promise<string>): Promise<T> {
    if (result.user.loginMethods.length !== 1) return result
    const existing = await supertokens.getUserIdMapping({ userId: result.user.id, userIdType: 'SUPERTOKENS' })
    let externalUserId: string
    if (existing.status === 'OK') {
      externalUserId = existing.externalUserId
    } else if (isCanonicalUserId(result.user.id)) {
      return result
    } else {
      externalUserId = await chooseExternalUserId()
      await supertokens.createUserIdMapping({ superTokensUserId: result.user.id, externalUserId })
    }
    const recipeUserId = supertokens.convertToRecipeUserId(externalUserId)
    const loginMethod = result.user.loginMethods[0]
    if (loginMethod) loginMethod.recipeUserId = recipeUserId
    result.user.id = externalUserId
    return { ...result, recipeUserId }
  }

  async function adopt (request: LibraryRequest, session: Session.SessionContainer, facts: { email: string, name: string | undefined }): Promise<Session.SessionContainer> {
    const email = normalizeEmail(facts.email)
    const sessionUserId = session.getUserId()
    const canonicalUserId = chooseCanonicalUserId({ existingUserIdForEmail: await users.findIdByEmail(email), sessionUserId })
    await users.recordAuthentication(canonicalUserId, { email, name: facts.name, now: new Date() })
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
    fastify.log.info({ sessionHandle: session.getHandle() }, 'session remapped to the canonical user id')
    return await Session.createNewSession(
      request.req, request.res, request.tenantId, supertokens.convertToRecipeUserId(canonicalUserId), {}, {}, request.userContext
    )
  }

  fastify.decorate('identity', {
    idForNewPasswordLogin: async (email: string) => (await users.findIdByEmail(email)) ?? mintUserId(),
    withCanonicalMapping,
    adopt
  })
}, { name: 'identity', dependencies: ['users'] })
