// The frame of the few HTML pages a stand-in shows; each provider gives its own look and words.

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char)

/** A whole page; `style` is the provider's stylesheet, `body` already escaped. */
export function page (title: string, style: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
${style}</style>
</head>
<body>
${body}
</body>
</html>
`
}

export interface ConsentFormInput {
  action: string
  requestId: string
  accounts: Array<{ email: string, name: string }>
  /** The address to offer first: a listed account is checked, another one is typed in. */
  preselected: string | undefined
  /** Already escaped, after each listed account (e.g. its kind). */
  accountNote?: (index: number) => string
  /** Already escaped list items: what the application asks for, in the provider's words. */
  scopeItems: string[]
  /** The provider's wording, e.g. "This application would like to:". */
  scopeIntro: string
  decline: { value: string, label: string }
  accept: { value: string, label: string, className: string }
}

/** The consent form: pick a listed account or type another address, then decline or accept. */
export function consentForm (input: ConsentFormInput): string {
  const choices = input.accounts.map((account, index) => {
    const checked = account.email === input.preselected || (input.preselected === undefined && index === 0)
    return `<label><input type="radio" name="account" value="${escapeHtml(account.email)}"${checked ? ' checked' : ''}> ${escapeHtml(account.name)} &lt;${escapeHtml(account.email)}&gt;${input.accountNote?.(index) ?? ''}</label>`
  }).join('\n')
  const typed = input.preselected !== undefined && !input.accounts.some((account) => account.email === input.preselected)
    ? escapeHtml(input.preselected)
    : ''
  return `<form method="post" action="${escapeHtml(input.action)}">
<input type="hidden" name="request_id" value="${escapeHtml(input.requestId)}">
<fieldset>
<legend>Account</legend>
${choices}
<label>Another account: <input type="email" name="new_account" value="${typed}" placeholder="name@example.com"></label>
</fieldset>
<p>${escapeHtml(input.scopeIntro)}</p>
<ul class="scopes">${input.scopeItems.map((item) => `<li>${item}</li>`).join('')}</ul>
<div class="actions">
<button type="submit" name="decision" value="${escapeHtml(input.decline.value)}">${escapeHtml(input.decline.label)}</button>
<button type="submit" name="decision" value="${escapeHtml(input.accept.value)}" class="${escapeHtml(input.accept.className)}">${escapeHtml(input.accept.label)}</button>
</div>
</form>
`
}

export interface OverviewSection {
  heading: string
  columns: string[]
  /** Already escaped rows, `<tr>` and all. */
  rows: string[]
}

/** The control surface's overview: where the stand-in runs, links to its JSON, and a table per section. */
export function overviewBody (title: string, origin: string, jsonPaths: string[], sections: OverviewSection[]): string {
  const links = jsonPaths.map((path) => `<a href="${escapeHtml(path)}">${escapeHtml(path)}</a>`)
  return `
<h1>${escapeHtml(title)} at ${escapeHtml(origin)}</h1>
<p class="note">State is kept in memory: a restart forgets it. JSON: ${links.slice(0, 1).join('')}${links.length > 1 ? ',\n' : ''}${links.slice(1).join(', ')}.</p>
${sections.map((section) => `<h2>${escapeHtml(section.heading)}</h2>
<table><tr>${section.columns.map((column) => `<th>${escapeHtml(column)}</th>`).join('')}</tr>
${section.rows.join('\n')}
</table>
`).join('')}`
}
