import type { FastifyInstance } from 'fastify'
import supertokens from 'supertokens-node'
import UserMetadata from 'supertokens-node/recipe/usermetadata'
import { coreProbe, installSessionCoreDeadlines } from '../../clients/session-core.js'
import { smtpSettings } from '../../lib/email-delivery.js'
import { signInProviders } from '../../lib/identity-providers.js'
import type { Config } from '../../schemas/config.js'
import { emailPasswordRecipe } from './email-password.js'
import { emailVerificationRecipe } from './email-verification.js'
import { sessionRecipe } from './sessions.js'
import { thirdPartyRecipe } from './third-party.js'

export { sessionCoreUnavailable } from './sessions.js'
export { signInSummaries } from './third-party.js'

export const AUTH_BASE_PATH = '/api/auth'

/**
 * Configures the session library (supertokens-node) with this service's recipes. The library
 * keeps one configuration per process; the overrides read the app serving each request
 * (./context.ts), and fall back to `config` and `log` only where the library acts on its own.
 */
export function initSessionLibrary (config: Config, log: FastifyInstance['log']): void {
  installSessionCoreDeadlines(config.sessions.uri)
  const apiUrl = new URL(config.backend.apiUrl)
  const webUrl = new URL(config.web.url)
  const providers = signInProviders(config)
  const smtp = smtpSettings(config)
  const configured = { config, log }

  supertokens.init({
    framework: 'fastify',
    supertokens: { connectionURI: config.sessions.uri, apiKey: config.sessions.key },
    appInfo: {
      appName: 'Calendar',
      apiDomain: apiUrl.origin,
      apiBasePath: AUTH_BASE_PATH,
      websiteDomain: webUrl.origin,
      websiteBasePath: '/'
    },
    recipeList: [
      emailPasswordRecipe(configured, smtp),
      emailVerificationRecipe(configured, smtp),
      UserMetadata.init(),
      // Provider sign-in is offered only when a provider is configured.
      ...(providers.length > 0 ? [thirdPartyRecipe(providers)] : []),
      sessionRecipe(coreProbe(config.sessions.uri))
    ]
  })
}

export function isSessionLibraryError (error: unknown): boolean {
  return supertokens.Error.isErrorFromSuperTokens(error)
}
