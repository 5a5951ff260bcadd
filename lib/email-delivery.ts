// Delivery of account emails (specification, "Password reset delivery" 1-4): links are rewritten
// to the web app, and only the `test` environment skips delivery (the link is logged instead, so
// tests can follow it). Every other environment hands the mail to the session library's sender.
import type { Config } from '../schemas/config.js'
import { rewritePasswordResetLink } from './reset-link.js'

export type DeliveryDecision =
  | { deliver: true, link: string }
  | { deliver: false, link: string }

export type AccountEmailKind = 'passwordReset' | 'emailVerification'

export function accountEmailDelivery (kind: AccountEmailKind, link: string, config: Pick<Config, 'runtime' | 'web'>): DeliveryDecision {
  // Email-verification links keep the library's own form; reset links always point at /day.
  const rewritten = kind === 'passwordReset' ? rewritePasswordResetLink(link, config.web.url) : link
  return { deliver: config.runtime.nodeEnv !== 'test', link: rewritten }
}

/** The session library's SMTP settings, when the configuration names an SMTP server. */
export function smtpSettings (config: Pick<Config, 'sessions'>) {
  const smtp = config.sessions.smtp
  if (smtp === undefined) return undefined
  return {
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    authUsername: smtp.user,
    password: smtp.password,
    from: { name: smtp.fromName, email: smtp.fromEmail }
  }
}

export type SmtpSettings = NonNullable<ReturnType<typeof smtpSettings>>
