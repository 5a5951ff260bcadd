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
 * What the session library fixes for the whole process at its init: the core it calls, the
 * origins it serves and mails links to, the sign-in providers and the mail server. The overrides
 * read everything else from the app serving each request (./context.ts).
 */
function librarySettings (config: Config): string {
  return JSON.stringify({
    core: [config.sessions.uri, config.sessions.key],
    apiOrigin: new URL(config.backend.apiUrl).origin,
    webOrigin: new URL(config.web.url).origin,
    providers: signInProviders(config),
    smtp: smtpSettings(config) ?? null
  })
}

/** The settings the process's session library was configured with; undefined before. */
let configuredWith: string | undefined

/**
 * Configures the process's session library (supertokens-node) with this service's recipes, and
 * the deadlines of its calls to the core (which go through the process's global fetch). The
 * library keeps one configuration per process and would silently keep the first for every later
 * app: a second call with the same settings changes nothing, one with other settings throws.
 * The process's entry (server.ts) calls it before building the app; so does any other program
 * that builds apps (tests, benchmarks).
 */
export function initSessionLibrary (config: Config, log: FastifyInstance['log']): void {
  const settings = librarySettings(config)
  if (configuredWith !== undefined) {
    if (configuredWith === settings) return
    throw new Error('The session library is already configured in this process with another session core, origins, sign-in providers or mail server; it keeps one configuration per process')
  }
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
  configuredWith = settings
}

/** Throws unless the process's session library serves `config` (initSessionLibrary). */
export function assertSessionLibraryServes (config: Config): void {
  if (configuredWith === undefined) throw new Error('The session library is not configured: the program calls initSessionLibrary(config) before it builds the app')
  if (configuredWith !== librarySettings(config)) throw new Error('The session library of this process is configured with another session core, origins, sign-in providers or mail server than this app\'s')
}

/**
 * Forgets the configuration, for a program that runs several others one after another in one
 * process and resets the library between them (the test runner's batches).
 */
export function forgetSessionLibraryConfiguration (): void {
  configuredWith = undefined
}

export function isSessionLibraryError (error: unknown): boolean {
  return supertokens.Error.isErrorFromSuperTokens(error)
}
