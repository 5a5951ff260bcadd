import { randomBytes } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import supertokens from 'supertokens-node'
import EmailPassword from 'supertokens-node/recipe/emailpassword'
import { SMTPService as EmailPasswordSMTPService } from 'supertokens-node/recipe/emailpassword/emaildelivery'
import { accountEmailDelivery, type SmtpSettings } from '../../lib/email-delivery.js'
import { TypedHttpError } from '../../lib/error-bodies.js'
import { normalizeEmail } from '../../lib/identity.js'
import { appOf, contextFor, formValue, libraryRequest, type AppContext } from './context.js'

// The requests (by their user context) during which the library checked a password.
const passwordChecked = new WeakSet<object>()

/**
 * An account nobody can sign in to, whose only use is to have a password checked: a sign-in for
 * an unknown email checks its password against this account, which costs the session core what a
 * wrong password for a real account costs.
 */
const signInDecoy = {
  email: 'sign-in-decoy@calendar.invalid',
  ready: undefined as Promise<void> | undefined,
  async check (tenantId: string, password: string, userContext: Record<string, unknown>): Promise<void> {
    this.ready ??= EmailPassword.signUp(tenantId, this.email, randomBytes(32).toString('base64url'))
      .then(() => {}, (error: unknown) => { this.ready = undefined; throw error })
    await this.ready
    await EmailPassword.verifyCredentials(tenantId, this.email, password, userContext)
  }
}

/**
 * Password accounts: canonical user ids from the first token, normalized emails, the sign-in guard
 * and a timing that tells nobody which emails have accounts, every session ended by a new password.
 */
export function emailPasswordRecipe (configured: AppContext, smtp: SmtpSettings | undefined): ReturnType<typeof EmailPassword.init> {
  return EmailPassword.init({
    // Sign-up's fields are name, email and password (specification, "Endpoints"): a name that
    // is missing or blank is refused as a field error, like a malformed email.
    signUpFeature: { formFields: [{ id: 'name', validate: async (value: unknown) => typeof value === 'string' && value.trim() !== '' ? undefined : 'Enter your name' }] },
    emailDelivery: {
      ...(smtp === undefined ? {} : { service: new EmailPasswordSMTPService({ smtpSettings: smtp }) }),
      override: (original) => ({
        ...original,
        sendEmail: async (input) => {
          const { config, log } = contextFor(input.userContext, configured)
          const decision = accountEmailDelivery('passwordReset', input.passwordResetLink, config)
          if (decision.deliver) {
            await original.sendEmail({ ...input, passwordResetLink: decision.link })
            return
          }
          // Tests read the link from the log.
          log.info({ passwordResetLink: decision.link, nodeEnv: config.runtime.nodeEnv }, 'password reset link (not delivered in test)')
        }
      })
    },
    override: {
      functions: (original) => ({
        ...original,
        // Password sign-up gets an external user id mapping to a new ObjectId, so sessions
        // carry the canonical id from their first token.
        signUp: async (input) => {
          const email = normalizeEmail(input.email)
          const result = await original.signUp({ ...input, email })
          const request = supertokens.getRequestFromUserContext(input.userContext)
          // Without a request this is the service's own sign-up (the sign-in decoy): no user record.
          if (result.status !== 'OK' || request === undefined) return result
          const { identity } = appOf(request)
          // A user record that already owns this email keeps its id; otherwise a new one.
          return await identity.withCanonicalMapping(result, async () => await identity.idForNewPasswordLogin(email))
        },
        signIn: async (input) => {
          passwordChecked.add(input.userContext)
          return await original.signIn({ ...input, email: normalizeEmail(input.email) })
        },
        verifyCredentials: async (input) => {
          passwordChecked.add(input.userContext)
          return await original.verifyCredentials({ ...input, email: normalizeEmail(input.email) })
        }
      }),
      apis: (original) => ({
        ...original,
        signUpPOST: original.signUpPOST && (async (input) => {
          const result = await original.signUpPOST!(input)
          if (result.status !== 'OK') return result
          // The address an account was made at is one it is known at (a lock does not shut it out).
          const request = input.options.req.original as FastifyRequest
          request.server.signInGuard.succeeded(normalizeEmail(formValue(input.formFields, 'email') ?? ''), request.ip)
          const session = await appOf(input.options.req).identity.adopt(libraryRequest(input), result.session, {
            email: formValue(input.formFields, 'email') ?? '',
            name: formValue(input.formFields, 'name')
          })
          return { ...result, session }
        }),
        // The session library's email-exists check would tell anyone which emails have accounts.
        emailExistsGET: undefined,
        signInPOST: original.signInPOST && (async (input) => {
          const request = input.options.req.original as FastifyRequest
          const account = normalizeEmail(formValue(input.formFields, 'email') ?? '')
          const wait = request.server.signInGuard.refusal(account, request.ip)
          if (wait !== undefined) {
            request.log.warn('sign-in refused: too many failed attempts')
            throw new TypedHttpError(429, 'RATE_LIMITED', `Too many attempts; try again in ${wait} seconds`, {}, wait)
          }
          const result = await original.signInPOST!(input)
          if (result.status === 'OK') request.server.signInGuard.succeeded(account, request.ip)
          else if (result.status === 'WRONG_CREDENTIALS_ERROR') request.server.signInGuard.failed(account, request.ip)
          if (result.status === 'WRONG_CREDENTIALS_ERROR' && !passwordChecked.has(input.userContext)) {
            // The library answers at once for an email without an account, but only after a
            // password check for one with an account: check the password against the decoy
            // account, so the answer's timing does not tell which emails have accounts.
            await signInDecoy.check(input.tenantId, formValue(input.formFields, 'password') ?? '', input.userContext)
          }
          if (result.status !== 'OK') return result
          const session = await appOf(input.options.req).identity.adopt(libraryRequest(input), result.session, {
            email: formValue(input.formFields, 'email') ?? '',
            name: undefined
          })
          return { ...result, session }
        }),
        // A new password ends every session of the account, on every device (the library
        // changes the password only), and lifts the account's sign-in lock.
        passwordResetPOST: original.passwordResetPOST && (async (input) => {
          const result = await original.passwordResetPOST!(input)
          if (result.status !== 'OK') return result
          const { log: requestLog, sessionRevocations, signInGuard } = appOf(input.options.req)
          signInGuard.passwordReset(normalizeEmail(result.email))
          try {
            const ended = await sessionRevocations.revokeUser(result.user.id, 'passwordReset')
            requestLog.info(ended, 'password reset: ended every session of the account')
          } catch (error) {
            // The password has changed and its reset token is spent: the answer stays OK.
            requestLog.error({ err: error }, 'password reset: the account\'s sessions could not be ended')
          }
          return result
        }),
        generatePasswordResetTokenPOST: original.generatePasswordResetTokenPOST && (async (input) => {
          const formFields = input.formFields.map((field) => field.id === 'email' && typeof field.value === 'string'
            ? { ...field, value: normalizeEmail(field.value) }
            : field)
          // The answer is the same whether or not the account exists, and so is its timing:
          // for an account the work (a reset token at the core, the mail) takes longer, so it
          // goes on after the answer. A failure there is the service's to log, not the asker's.
          const requestLog = appOf(input.options.req).log
          original.generatePasswordResetTokenPOST!({ ...input, formFields }).then((result) => {
            if (result.status === 'GENERAL_ERROR') requestLog.warn({ reason: result.message }, 'password reset request not carried out')
          }, (error: unknown) => {
            requestLog.error({ err: error }, 'password reset request failed')
          })
          return { status: 'OK' }
        })
      })
    }
  })
}
