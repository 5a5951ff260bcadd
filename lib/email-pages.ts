// The pages a person sees after following a mail's unsubscribe link. The link opens a page with
// a button, never an unsubscribe by itself: mail scanners and link previews open links too.

const STYLE = 'body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;line-height:1.5}button{font:inherit;padding:.5rem 1rem}'

/** The pages' own policy: no scripts, their one inline style, and a form that may post only here. */
export const UNSUBSCRIBE_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

function page (title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><title>${title}</title><style>${STYLE}</style></head><body><h1>${title}</h1>${body}</body></html>`
}

/** The confirm form posts the RFC 8058 one-click body to the link itself (its query keeps the token). */
export function confirmPage (): string {
  return page('Unsubscribe from Calendar mails?', '<p>You will get no more of the welcome mails. Account mails, such as password resets, still arrive.</p><form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>')
}

export function unsubscribedPage (): string {
  return page('You are unsubscribed', '<p>You will get no more of the welcome mails.</p>')
}

export function invalidLinkPage (): string {
  return page('This link does not work', '<p>The unsubscribe link is not valid (it may be from an older mail). Use the link in the latest mail you got from us.</p>')
}
