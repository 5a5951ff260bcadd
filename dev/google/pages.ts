// The few HTML pages a person sees: the consent page of the authorization endpoint, the error page
// Google shows instead of redirecting, and the control surface's list of accounts.
import { consentForm, escapeHtml, overviewBody, page as framedPage } from '../stand-in/pages.js'
import type { AccountView, ChannelView } from './state.js'

const STYLE = `  body { font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem; color: #202124; }
  h1 { font-size: 1.4rem; font-weight: 500; }
  .note { color: #5f6368; font-size: .9rem; }
  fieldset { border: 1px solid #dadce0; border-radius: 8px; padding: 1rem; margin: 1rem 0; }
  label { display: block; margin: .4rem 0; }
  input[type=email] { width: 100%; padding: .4rem; box-sizing: border-box; }
  ul.scopes { padding-left: 1.2rem; }
  .actions { display: flex; gap: .8rem; justify-content: flex-end; }
  button { padding: .5rem 1.4rem; border-radius: 4px; border: 1px solid #dadce0; background: #fff; font-size: 1rem; cursor: pointer; }
  button.allow { background: #1a73e8; color: #fff; border-color: #1a73e8; }
  table { border-collapse: collapse; width: 100%; font-size: .9rem; }
  td, th { border-bottom: 1px solid #dadce0; padding: .3rem; text-align: left; }
`

const page = (title: string, body: string): string => framedPage(title, STYLE, body)

export interface ConsentPageInput {
  requestId: string
  clientId: string
  scopes: string[]
  accounts: Array<{ email: string, name: string }>
  preselected: string | undefined
}

export function consentPage (input: ConsentPageInput): string {
  return page('Sign in - Google Accounts (stand-in)', `
<h1>Choose an account to continue to <strong>${escapeHtml(input.clientId)}</strong></h1>
<p class="note">Local Google stand-in: no password is asked. An address not listed here becomes a new account.</p>
${consentForm({
  action: '/o/oauth2/v2/auth',
  requestId: input.requestId,
  accounts: input.accounts,
  preselected: input.preselected,
  scopeIntro: 'This application would like to:',
  scopeItems: input.scopes.map((scope) => `<code>${escapeHtml(scope)}</code>`),
  decline: { value: 'deny', label: 'Deny' },
  accept: { value: 'allow', label: 'Allow', className: 'allow' }
})}`)
}

/** Google's own page for a request it will not send back to the application. */
export function authorizationErrorPage (error: string, description: string): string {
  return page(`Error 400: ${error}`, `
<h1>Access blocked: this request is invalid</h1>
<p><strong>Error: ${escapeHtml(error)}</strong></p>
<p>${escapeHtml(description)}</p>
`)
}

export function accountsPage (accounts: AccountView[], channels: ChannelView[], origin: string): string {
  const rows = accounts.map((account) => `<tr><td>${escapeHtml(account.email)}</td><td>${escapeHtml(account.name)}</td>
<td>${account.calendars.map((calendar) => `${escapeHtml(calendar.summary)}${calendar.hidden ? ' (hidden)' : ''}${calendar.accessRole === 'owner' ? '' : ` (${calendar.accessRole})`}: ${calendar.events}`).join('<br>')}</td>
<td>${account.grants.map((grant) => escapeHtml(grant.clientId)).join('<br>')}</td></tr>`)
  const channelRows = channels.map((channel) => `<tr><td>${escapeHtml(channel.id)}</td><td>${escapeHtml(channel.calendarId)}</td>
<td>${escapeHtml(channel.state)}</td><td>${channel.delivered}</td><td>${channel.failed}</td></tr>`)
  return page('Google stand-in', overviewBody('Google stand-in', origin, ['/_control/accounts', '/_control/channels', '/_control/counters'], [
    { heading: 'Accounts', columns: ['Email', 'Name', 'Calendars: events', 'Granted to'], rows },
    { heading: 'Channels', columns: ['Id', 'Calendar', 'State', 'Delivered', 'Failed'], rows: channelRows }
  ]))
}
