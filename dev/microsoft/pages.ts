// The few HTML pages a person sees: the consent page of the authorization endpoint, the error page
// shown instead of redirecting, the page that posts an answer back (response_mode=form_post), and
// the control surface's overview.
import { consentForm, escapeHtml, overviewBody, page as framedPage } from '../stand-in/pages.js'
import { graphPermissions } from './identity.js'

const STYLE = `  body { font-family: "Segoe UI", system-ui, sans-serif; max-width: 34rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
  h1 { font-size: 1.4rem; font-weight: 600; }
  .note { color: #605e5c; font-size: .9rem; }
  fieldset { border: 1px solid #c8c6c4; padding: 1rem; margin: 1rem 0; }
  label { display: block; margin: .4rem 0; }
  input[type=email] { width: 100%; padding: .4rem; box-sizing: border-box; }
  ul.scopes { padding-left: 1.2rem; }
  .actions { display: flex; gap: .8rem; justify-content: flex-end; }
  button { padding: .5rem 1.6rem; border: 1px solid #8a8886; background: #fff; font-size: 1rem; cursor: pointer; }
  button.accept { background: #0067b8; color: #fff; border-color: #0067b8; }
  table { border-collapse: collapse; width: 100%; font-size: .9rem; }
  td, th { border-bottom: 1px solid #edebe9; padding: .3rem; text-align: left; vertical-align: top; }
`

const page = (title: string, body: string): string => framedPage(title, STYLE, body)

export interface ConsentPageInput {
  action: string
  requestId: string
  clientId: string
  scopes: string[]
  accounts: Array<{ email: string, name: string, kind: string }>
  preselected: string | undefined
}

const SCOPE_LABELS: Record<string, string> = {
  openid: 'Sign you in',
  profile: 'View your basic profile',
  email: 'View your email address',
  offline_access: 'Maintain access to data you have given it access to'
}

export function consentPage (input: ConsentPageInput): string {
  const labels = [
    ...input.scopes.filter((scope) => SCOPE_LABELS[scope] !== undefined).map((scope) => SCOPE_LABELS[scope] ?? scope),
    ...graphPermissions(input.scopes)
  ]
  return page('Permissions requested - Microsoft (stand-in)', `
<h1>Let <strong>${escapeHtml(input.clientId)}</strong> access your info?</h1>
<p class="note">Local Microsoft stand-in: no password is asked. An address not listed here becomes a new personal account.</p>
${consentForm({
  action: input.action,
  requestId: input.requestId,
  accounts: input.accounts,
  preselected: input.preselected,
  accountNote: (index) => ` <span class="note">(${escapeHtml(input.accounts[index]?.kind ?? '')} account)</span>`,
  scopeIntro: 'This app would like to:',
  scopeItems: labels.map((label) => escapeHtml(label)),
  decline: { value: 'cancel', label: 'Cancel' },
  accept: { value: 'accept', label: 'Accept', className: 'accept' }
})}`)
}

/** The identity platform's own page for a request it will not send back to the application. */
export function errorPage (aadsts: number, description: string): string {
  return page('Sign in to your account', `
<h1>Sorry, but we're having trouble signing you in.</h1>
<p><strong>AADSTS${aadsts}</strong>: ${escapeHtml(description)}</p>
`)
}

export function signedOutPage (): string {
  return page('Signed out', '<h1>You signed out of your account.</h1>')
}

/** response_mode=form_post: a page that posts the answer to the redirect URI at once. */
export function formPostPage (action: string, params: Record<string, string>): string {
  const fields = Object.entries(params).map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`).join('\n')
  return page('Working...', `
<form method="post" name="hiddenform" action="${escapeHtml(action)}">
${fields}
<noscript><p>Script is disabled. Click Submit to continue.</p><input type="submit" value="Submit"></noscript>
</form>
<script>document.forms[0].submit()</script>
`)
}

export interface OverviewInput {
  origin: string
  accounts: Array<{ email: string, name: string, kind: string, calendars: Array<{ name: string, events: number }>, grants: Array<{ clientId: string }> }>
  subscriptions: Array<{ id: string, resource: string, state: string, delivered: number, failed: number }>
}

export function overviewPage (input: OverviewInput): string {
  const rows = input.accounts.map((account) => `<tr><td>${escapeHtml(account.email)}</td><td>${escapeHtml(account.name)} (${escapeHtml(account.kind)})</td>
<td>${account.calendars.map((calendar) => `${escapeHtml(calendar.name)}: ${calendar.events}`).join('<br>')}</td>
<td>${account.grants.map((grant) => escapeHtml(grant.clientId)).join('<br>')}</td></tr>`)
  const subscriptionRows = input.subscriptions.map((subscription) => `<tr><td>${escapeHtml(subscription.id)}</td><td>${escapeHtml(subscription.resource)}</td>
<td>${escapeHtml(subscription.state)}</td><td>${subscription.delivered}</td><td>${subscription.failed}</td></tr>`)
  return page('Microsoft stand-in', overviewBody('Microsoft stand-in', input.origin, ['/_control/accounts', '/_control/subscriptions', '/_control/counters'], [
    { heading: 'Accounts', columns: ['Email', 'Name', 'Calendars: items', 'Consented to'], rows },
    { heading: 'Subscriptions', columns: ['Id', 'Resource', 'State', 'Delivered', 'Failed'], rows: subscriptionRows }
  ]))
}
