// The mail catcher's HTML page. Everything in a mail is chosen by whoever sent it, so every piece
// of it is escaped, and an HTML body is shown only inside a sandboxed iframe (no scripts, no
// forms, no same-origin access), where a person can still follow its links in a new tab.

export interface CaughtMail {
  /** Unique within one mail catcher, in arrival order. */
  id: string
  /** ISO 8601, UTC. */
  receivedAt: string
  /** The SMTP envelope: who the mail was really handed over for. */
  envelope: { from: string | null, to: string[] }
  /** The From and To headers as written in the mail. */
  from: string
  to: string
  subject: string
  /** The plain-text body, or the text made from the HTML body when there is none. */
  text: string
  html: string | null
  /** Every http(s) link of the mail, in order, without duplicates. */
  links: string[]
  /**
   * How it came: over SMTP (the session library's mails), Resend's API (the email block's `mailer`),
   * or as a webhook notice (the maintenance scheduler's report of a failed run, hooks.ts).
   */
  source?: 'smtp' | 'api' | 'webhook'
  /** A webhook notice's JSON body as it came. */
  notice?: Record<string, unknown>
  /** Headers the API request asked for (List-Unsubscribe, say). */
  headers?: Record<string, string>
  /** The API request's tags. */
  tags?: Record<string, string>
  /** Webhooks sent to the backend for this mail, and the backend's answer. */
  webhooks?: Array<{ type: string, status: number, at: string }>
}

export function escapeHtml (value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

const URL_IN_TEXT = /https?:\/\/[^\s<>"'`]+/g
// A URL in running text often ends the sentence; these are not part of it.
const TRAILING_PUNCTUATION = /[.,;:!?)\]}]+$/

function link (url: string): string {
  const escaped = escapeHtml(url)
  return `<a href="${escaped}" target="_blank" rel="noopener noreferrer">${escaped}</a>`
}

/** Plain text as HTML, with its http(s) URLs made clickable. */
export function textWithLinks (text: string): string {
  let html = ''
  let last = 0
  for (const match of text.matchAll(URL_IN_TEXT)) {
    const url = match[0].replace(TRAILING_PUNCTUATION, '')
    html += escapeHtml(text.slice(last, match.index)) + link(url)
    last = match.index + url.length
  }
  return html + escapeHtml(text.slice(last))
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }

function decodeEntities (value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (entity: string, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity
    }
    return ENTITIES[name.toLowerCase()] ?? entity
  })
}

function isWebUrl (value: string): boolean {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}

/** The http(s) links of a mail: the HTML body's hrefs first, then URLs written in the text. */
export function extractLinks (html: string | null, text: string): string[] {
  const found: string[] = []
  for (const match of (html ?? '').matchAll(/\shref\s*=\s*(?:"([^"]*)"|'([^']*)')/gi)) {
    found.push(decodeEntities((match[1] ?? match[2] ?? '').trim()))
  }
  for (const match of text.matchAll(URL_IN_TEXT)) found.push(match[0].replace(TRAILING_PUNCTUATION, ''))
  return [...new Set(found.filter(isWebUrl))]
}

/** For the page's Content-Security-Policy header; an iframe's srcdoc document inherits it too. */
export const PAGE_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  // Remote images in a mail stay unloaded: a local tool should not report to anyone.
  'img-src data:',
  // The only forms are the page's own webhook buttons.
  "form-action 'self'",
  "frame-ancestors 'none'"
].join('; ')

// Links in the mail open in a new tab: the sandbox allows popups, and nothing else.
const SANDBOX = 'allow-popups allow-popups-to-escape-sandbox'

function formatTime (iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')
}

// Links of the HTML body open in a new tab rather than inside the small frame. The <base> goes
// into the document's own head when it has one: before a doctype it would switch off standards mode.
function withLinksInNewTab (html: string): string {
  const base = '<base target="_blank">'
  const head = /<head(?:\s[^>]*)?>/i.exec(html)
  return head === null ? base + html : html.slice(0, head.index + head[0].length) + base + html.slice(head.index + head[0].length)
}

function mailSection (mail: CaughtMail): string {
  const body = mail.html === null
    ? ''
    : `<h3>HTML</h3><iframe sandbox="${SANDBOX}" referrerpolicy="no-referrer" title="HTML body" srcdoc="${escapeHtml(withLinksInNewTab(mail.html))}"></iframe>`
  const links = mail.links.length === 0
    ? ''
    : `<h3>Links</h3><ul>${mail.links.map((url) => `<li>${link(url)}</li>`).join('')}</ul>`
  const headers = Object.entries(mail.headers ?? {})
  const headerList = headers.length === 0
    ? ''
    : `<h3>Headers</h3><dl>${headers.map(([name, value]) => `<dt>${escapeHtml(name)}</dt><dd>${escapeHtml(value)}</dd>`).join('')}</dl>`
  const webhookButtons = mail.source !== 'api'
    ? ''
    : `<h3>Webhooks to the backend</h3>${['email.delivered', 'email.bounced', 'email.complained'].map((type) => `<form method="post" action="/control/webhooks" style="display:inline"><input type="hidden" name="mailId" value="${escapeHtml(mail.id)}"><input type="hidden" name="type" value="${type}"><button type="submit">Send ${type}</button></form>`).join(' ')}${(mail.webhooks ?? []).length === 0 ? '' : `<ul>${(mail.webhooks ?? []).map((sent) => `<li>${escapeHtml(sent.type)}: backend answered ${sent.status} (${escapeHtml(formatTime(sent.at))})</li>`).join('')}</ul>`}`
  const kind = mail.source === 'webhook' ? '<p><strong>Webhook notice</strong>, not a mail: its JSON body is below.</p>\n' : ''
  return `<section id="mail-${escapeHtml(mail.id)}">
<h2>${escapeHtml(mail.subject === '' ? '(no subject)' : mail.subject)}</h2>
${kind}<dl><dt>To</dt><dd>${escapeHtml(mail.to || mail.envelope.to.join(', '))}</dd><dt>From</dt><dd>${escapeHtml(mail.from || (mail.envelope.from ?? ''))}</dd><dt>Received</dt><dd>${escapeHtml(formatTime(mail.receivedAt))}</dd></dl>
${headerList}${webhookButtons}${links}${body}
<h3>Text</h3><pre>${textWithLinks(mail.text)}</pre>
</section>`
}

export function renderPage (mails: readonly CaughtMail[], info: { smtpPort: number, limit: number }): string {
  const rows = mails.map((mail) => `<tr><td>${escapeHtml(mail.to || mail.envelope.to.join(', '))}</td><td><a href="#mail-${escapeHtml(mail.id)}">${escapeHtml(mail.subject === '' ? '(no subject)' : mail.subject)}</a></td><td>${escapeHtml(formatTime(mail.receivedAt))}</td></tr>`)
  const list = mails.length === 0
    ? '<p>No mail yet. Reload this page after sending one.</p>'
    : `<table><thead><tr><th>To</th><th>Subject</th><th>Received</th></tr></thead><tbody>${rows.join('')}</tbody></table>`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Mail catcher (${mails.length})</title>
<style>
body { font: 15px/1.4 system-ui, sans-serif; margin: 1.5rem; max-width: 60rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd; }
section { border-top: 2px solid #888; margin-top: 2rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dt { font-weight: bold; }
dd { margin: 0; }
iframe { width: 100%; height: 28rem; border: 1px solid #ccc; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: .6rem; }
</style>
</head>
<body>
<h1>Mail catcher</h1>
<p>Mail sent over SMTP to 127.0.0.1:${info.smtpPort}, or through the Resend API subset at POST /emails, and webhook notices (a failed maintenance run, POSTed as JSON to /hooks/maintenance) are kept here in memory, newest first (at most ${info.limit}). <a href="/messages.json">JSON</a></p>
${list}
${mails.map(mailSection).join('\n')}
</body>
</html>
`
}
