import EmailVerification from 'supertokens-node/recipe/emailverification'
import { SMTPService as EmailVerificationSMTPService } from 'supertokens-node/recipe/emailverification/emaildelivery'
import { accountEmailDelivery, type SmtpSettings } from '../../lib/email-delivery.js'
import { normalizeEmail } from '../../lib/identity.js'
import { appServing, contextFor, type AppContext } from './context.js'

/** Optional email verification; a followed link proves the address at once. */
export function emailVerificationRecipe (configured: AppContext, smtp: SmtpSettings | undefined): ReturnType<typeof EmailVerification.init> {
  return EmailVerification.init({
    mode: 'OPTIONAL',
    override: {
      functions: (original) => ({
        ...original,
        // A link followed proves the address at once (billing's one trial per verified email
        // among others), not only from the next sign-in on.
        verifyEmailUsingToken: async (input) => {
          const result = await original.verifyEmailUsingToken(input)
          const app = appServing(input.userContext)
          if (result.status === 'OK' && app !== undefined) {
            await app.users.proven({ userId: result.user.recipeUserId.getAsString(), verifiedEmail: normalizeEmail(result.user.email), providerAccounts: [] })
          }
          return result
        }
      })
    },
    emailDelivery: {
      ...(smtp === undefined ? {} : { service: new EmailVerificationSMTPService({ smtpSettings: smtp }) }),
      override: (original) => ({
        ...original,
        sendEmail: async (input) => {
          const { config, log } = contextFor(input.userContext, configured)
          const decision = accountEmailDelivery('emailVerification', input.emailVerifyLink, config)
          if (decision.deliver) {
            await original.sendEmail(input)
            return
          }
          log.info({ emailVerifyLink: decision.link, nodeEnv: config.runtime.nodeEnv }, 'email verification link (not delivered in test)')
        }
      })
    }
  })
}
